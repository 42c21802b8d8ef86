"""numba kernels of the tree barrier (jitSim §3.6): a reduce up and a broadcast down a
complete tree, on the trace walk of :mod:`jitterlab.sim.trace_walk`, and its noiseless twin
(:class:`jitterlab.sim.barriers.TreeBarrier` calls them).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .trace_walk import (
    CACHED_TABLE,
    PREFETCH_AHEAD,
    START,
    advance_across_gaps,
    advance_called,
    advance_short,
    one_thread_copy,
    prefetch_row,
    row_value,
    search_rows,
    table_address,
    tie_bound,
)

__all__ = ["run_tree_barrier", "noiseless_tree", "run_tree_barrier_one_thread",
           "noiseless_tree_one_thread", "hop_latency", "WORKSPACE_PER_TASK"]


@numba.njit(cache=True, inline="always")
def hop_latency(child, parent, latency, intra_latency, node_size):
    if node_size > 0 and child // node_size == parent // node_size:
        return intra_latency
    return latency


_CHUNK = 1024  # tasks per parallel chunk of the start-row search
_SPANS_PER_ROW = 8  # most spans of the trace per row in the start-row search
_BLOCK = 256  # tasks whose operations the tree kernel interleaves
_PIECE = 8192  # most tasks of a subtree that the tree kernel walks as one piece
_WORKERS = 64  # most threads that share the subtrees of a phase
WORKSPACE_PER_TASK = 5  # float64 values of state per task of the tree kernel


@numba.njit(cache=True, parallel=True)
def _start_rows(address, n_rows, origin, hint):
    """Row of every task's start time (``origin``) into ``hint``.

    The trace is cut into ``n_rows`` equal spans of time; one walk down the rows finds
    the row at which each span begins, and a task's search gallops from its span's row,
    a step or two away on average (issue #20).
    """
    period = row_value(address, n_rows, START)
    n_chunks = (origin.size + _CHUNK - 1) // _CHUNK
    if origin.size * math.log2(n_rows + 1) < n_rows:  # few tasks on a long trace: the walk
        no_spans = np.empty(0, dtype=np.int32)     # would cost more than a search each
        for c in numba.prange(n_chunks):
            _search_starts(address, n_rows, origin, hint, c * _CHUNK,
                           min(origin.size, (c + 1) * _CHUNK), period, no_spans, 0.0)
        return
    # up to _SPANS_PER_ROW spans per row, at most one per task: the answer is then mostly
    # the span's first row itself, a branch the CPU predicts
    n_spans = min(_SPANS_PER_ROW * n_rows, max(n_rows, origin.size))
    per_time = n_spans / period  # spans per unit of trace time
    length = period / n_spans  # of a span
    first_row = np.empty(n_spans, dtype=np.int32)  # the row at the start of each span
    row = 0
    for span in range(n_spans):
        begin = span * length
        while row + 1 < n_rows and row_value(address, row + 1, START) <= begin:
            row += 1
        first_row[span] = row
    for c in numba.prange(n_chunks):
        _search_starts(address, n_rows, origin, hint, c * _CHUNK,
                       min(origin.size, (c + 1) * _CHUNK), period, first_row, per_time)


@numba.njit(cache=True, nogil=True)
def _search_starts(address, n_rows, origin, hint, lo, hi, period, first_row, per_time):
    """:func:`_start_rows` for tasks ``lo`` to ``hi``: each search gallops from its span's
    first row (``first_row``, ``per_time`` spans per unit of trace time), or from row 0
    when ``first_row`` is empty. One function for both cases, so that the search is compiled
    once (issue #20)."""
    n_spans = first_row.size
    for task in range(lo, hi):
        x = origin[task]
        x -= math.floor(x / period) * period
        start = 0
        if n_spans > 0:
            start = first_row[min(max(int(x * per_time), 0), n_spans - 1)]
        hint[task] = search_rows(address, START, x, start, n_rows - 1, False)


@intrinsic
def take_next(typingctx, counter):
    """``counter[0] += 1`` as one atomic operation; returns the value before: the next piece
    of a work queue that several threads share."""
    signature = types.int64(counter)

    def codegen(context, builder, sig, args):
        array = context.make_array(sig.args[0])(context, builder, args[0])
        pointer = cgutils.get_item_pointer(context, builder, sig.args[0], array,
                                           [context.get_constant(types.intp, 0)])
        return builder.atomic_rmw("add", pointer, ir.Constant(ir.IntType(64), 1), "seq_cst")

    return signature, codegen


@numba.njit(cache=True, nogil=True)
def _down_level(address, n_rows, table, lo, hi, state, costs, shape, phase, phases,
                compute_out, end_out, ops_out):
    """Tasks ``lo`` to ``hi`` of one level: the broadcast of phase ``phase - 1`` (if any: the
    receive from the parent, the sends to the children, the phase's end), then the compute of
    phase ``phase`` (if any), and on the tree's last level (tasks without children) their
    whole reduce, the send to the parent. Returns the largest end [trace unit] (-inf in the
    first phase)."""
    origin, end, now, message, hint, span = state
    work, send, recv, latency, intra_latency, work_tie, send_tie, recv_tie, period = costs
    fanout, node_size, n_tasks = shape[0], shape[1], origin.size
    keep, keep_ops = compute_out.shape[0] > 0, ops_out.shape[0] > 0
    receive, leaves = phase > 0, fanout * lo + 1 >= n_tasks
    far = table.nbytes > CACHED_TABLE  # prefetch only what the caches do not hold
    largest = -np.inf
    for first in range(lo, hi, _BLOCK):
        last = min(hi, first + _BLOCK)
        # one operation of every task of the block before the next, so that the CPU
        # overlaps the tasks' chains of dependent arithmetic: the receive, ...
        if receive:
            for task in range(first, last):
                if task > 0:
                    ahead = task + PREFETCH_AHEAD
                    if far and ahead < hi:
                        prefetch_row(table, hint[ahead])
                    start = origin[task]
                    hop = latency
                    if node_size > 0:
                        hop = hop_latency(task, (task - 1) // fanout, latency, intra_latency,
                                          node_size)
                    arrival = message[task] + hop
                    begin = now[task] if now[task] > arrival else arrival
                    finish, hint[task] = advance_short(address, n_rows, start + begin, recv,
                                                       hint[task], period, recv_tie)
                    now[task] = finish - start
                    if keep_ops:
                        ops_out[phase - 1, task, 2 + fanout] = now[task]
            if not leaves:  # ... each send to a child, in index order, ...
                for q in range(fanout):
                    for task in range(first, last):
                        child = fanout * task + 1 + q
                        if child < n_tasks:
                            start = origin[task]
                            finish, hint[task] = advance_short(address, n_rows,
                                                               start + now[task], send,
                                                               hint[task], period, send_tie)
                            now[task] = finish - start
                            message[child] = now[task]  # when the parent's send ends
                            if keep_ops:
                                ops_out[phase - 1, task, 3 + fanout + q] = now[task]
            for task in range(first, last):  # ... the phase's end, ...
                end[task] = now[task]
                largest = max(largest, now[task])
                if keep:
                    end_out[phase - 1, task] = now[task]
        if phase < phases:  # ... the next compute ...
            for task in range(first, last):
                ahead = task + PREFETCH_AHEAD
                if far and ahead < hi:
                    prefetch_row(table, hint[ahead])
                    prefetch_row(table, min(hint[ahead] + span[ahead], n_rows))
                start = origin[task]
                finish, h, ok = advance_across_gaps(address, n_rows, start + end[task], work,
                                                     hint[task], period, work_tie)
                if ok:
                    span[task] = h - hint[task]
                    hint[task] = h
                else:
                    finish, row, h = advance_called(address, n_rows, start + end[task], work,
                                                    hint[task], hint[task] + span[task])
                    span[task] = max(h - row, 0)
                    hint[task] = h
                now[task] = finish - start
                if keep:
                    compute_out[phase, task] = now[task] - end[task]
                if keep_ops:
                    ops_out[phase, task, 0] = now[task]
            if leaves:  # ... and a leaf's send to its parent
                _send_up(address, n_rows, first, last, state, costs, shape, phase, ops_out)
    return largest


@numba.njit(cache=True, nogil=True)
def _send_up(address, n_rows, first, last, state, costs, shape, phase, ops_out):
    """The reduce's send to the parent of tasks ``first`` to ``last`` (but the root)."""
    origin, _, now, message, hint, _ = state
    _, send, _, latency, intra_latency, _, send_tie, _, period = costs
    fanout, node_size = shape
    for task in range(max(first, 1), last):
        start = origin[task]
        finish, hint[task] = advance_short(address, n_rows, start + now[task], send, hint[task],
                                           period, send_tie)
        now[task] = finish - start
        hop = latency  # one wire latency unless the nodes count
        if node_size > 0:
            hop = hop_latency(task, (task - 1) // fanout, latency, intra_latency, node_size)
        message[task] = now[task] + hop  # when the message arrives at the parent
        if ops_out.shape[0] > 0:
            ops_out[phase, task, 1 + fanout] = now[task]


@numba.njit(cache=True, nogil=True)
def _up_level(address, n_rows, lo, hi, state, costs, shape, phase, arrived, sender, ops_out):
    """Tasks ``lo`` to ``hi`` of one level: the reduce of phase ``phase``, each task's
    receives from its children in order of arrival (ties: the lower index first), then its
    send to the parent. ``arrived`` and ``sender`` hold ``_BLOCK * fanout`` values."""
    origin, _, now, message, hint, _ = state
    recv, recv_tie, period = costs[2], costs[7], costs[8]
    fanout, n_tasks = shape[0], origin.size
    for first in range(lo, hi, _BLOCK):
        last = min(hi, first + _BLOCK)
        most_children = min(fanout, max(n_tasks - fanout * first - 1, 0))
        # the children's messages in order of arrival, without branches: a message's place
        # is the number of messages that come before it ...
        for task in range(first, last):
            base, own = fanout * task + 1, (task - first) * fanout
            count = min(fanout, max(n_tasks - base, 0))
            for q in range(count):
                arrival = message[base + q]
                place = 0
                for p in range(count):
                    other = message[base + p]
                    place += (other < arrival) | ((other == arrival) & (p < q))
                arrived[own + place] = arrival
                sender[own + place] = q
        for k in range(most_children):  # ... each receive, in order of arrival, ...
            for task in range(first, last):
                if fanout * task + 1 + k < n_tasks:
                    best = arrived[(task - first) * fanout + k]
                    start = origin[task]
                    begin = now[task] if now[task] > best else best
                    finish, hint[task] = advance_short(address, n_rows, start + begin, recv,
                                                       hint[task], period, recv_tie)
                    now[task] = finish - start
                    if ops_out.shape[0] > 0:
                        ops_out[phase, task, 1 + sender[(task - first) * fanout + k]] = now[task]
        _send_up(address, n_rows, first, last, state, costs, shape, phase, ops_out)  # ... the send


@numba.njit(cache=True, nogil=True)
def _subtree(address, n_rows, table, root, state, costs, shape, phase, phases,
             compute_out, end_out, ops_out):
    """The subtree of task ``root`` in one step of the kernel: the
    broadcast of phase ``phase - 1`` from the root down, then the compute and the reduce of
    phase ``phase`` up to the root. Returns the subtree's largest end of phase ``phase - 1``
    [trace unit]."""
    fanout, n_tasks = shape[0], state[0].size
    bounds = []  # the subtree's tasks at each level: breadth-first, a range per level
    lo, hi = root, root + 1
    while lo < n_tasks:
        bounds.append((lo, min(hi, n_tasks)))
        lo, hi = fanout * lo + 1, fanout * hi + 1
    largest = -np.inf
    for lo, hi in bounds:
        largest = max(largest, _down_level(address, n_rows, table, lo, hi, state, costs, shape,
                                           phase, phases, compute_out, end_out, ops_out))
    if phase < phases:  # the last level's reduce is done: its tasks have no children
        arrived = np.empty(_BLOCK * fanout)
        sender = np.empty(_BLOCK * fanout, dtype=np.int8)
        for level in range(len(bounds) - 2, -1, -1):
            _up_level(address, n_rows, bounds[level][0], bounds[level][1], state, costs,
                      shape, phase, arrived, sender, ops_out)
    return largest


@numba.njit(cache=True, parallel=True)
def run_tree_barrier(table, offsets, work, phases, fanout, send, recv,
                     latency, intra_latency, node_size, level_bounds, compute_out, end_out,
                     ops_out, workspace):
    """Phases of ``work``, each closed by a reduce and a broadcast on a complete tree.

    Tasks are numbered breadth-first (children of i: fanout·i + 1 ... fanout·i +
    fanout). Reduce: after its compute a task receives from each child, in order of
    arrival, then sends to its parent. Broadcast: it receives from its parent, then
    sends to each child in index order. Every send and receive consumes CPU time on
    the task's trace (jitter can strike it); a message arrives one hop latency after
    its send completes. A task starts its next compute when its broadcast part is
    done.

    The tree is cut at the level whose subtrees hold at most ``_PIECE`` tasks (their state
    stays in the CPU's caches). A phase is one parallel step over the subtrees, each walked
    whole by one thread: the broadcast of the phase before from its root down, then the
    compute and the reduce up to its root; the threads take the subtrees from a shared queue,
    so that a thread that lost its CPU holds up at most the subtree it is in. The few tasks
    above the cut run on one thread between the steps. Within a block of ``_BLOCK`` tasks of
    a level the kernel takes one operation of every task before the next (compute, each
    receive, send), so that the CPU overlaps the tasks' chains of dependent arithmetic.
    Every task performs the same operations on the same numbers as in index order, so
    the results do not depend on this order, nor on the number of threads.

    Returns the time at which the last task ends each phase [trace unit]; fills
    ``compute_out[phase, task]`` and ``end_out[phase, task]`` when they are not empty,
    and ``ops_out[phase, task, op]`` (when not empty) with the end of each operation:
    op 0 the compute, 1 + q the receive from child q, 1 + fanout the send to the parent,
    2 + fanout the receive from the parent, 3 + fanout + q the send to child q.

    ``workspace`` (float64, at least ``WORKSPACE_PER_TASK`` values per task, else it is not
    used) holds the kernel's state: a caller that keeps it for the next call saves the
    kernel from asking the system for fresh memory each time (a page fault per 4 kB).
    """
    n_tasks = offsets.size
    n_levels = level_bounds.size - 1
    address = table_address(table)
    n_rows = table.shape[0] - 1
    # per task: its start in the trace, its end of the phase before, its clock within the
    # phase, the time of its last message (its reduce message's arrival at the parent, then
    # the parent's broadcast send to it), the trace row it is at and how many rows its last
    # compute spanned (to start the finish search), the last two as int64 in float64 rows
    if workspace.size >= WORKSPACE_PER_TASK * n_tasks:
        space = workspace[:WORKSPACE_PER_TASK * n_tasks].reshape((WORKSPACE_PER_TASK, n_tasks))
    else:
        space = np.empty((WORKSPACE_PER_TASK, n_tasks))
    hint, span = space[3].view(np.int64), space[4].view(np.int64)
    _start_rows(address, n_rows, offsets, hint)
    space[0] = 0.0
    span[:] = 0
    state = (offsets, space[0], space[1], space[2], hint, span)
    period = row_value(address, n_rows, START)
    costs = (float(work), float(send), float(recv), float(latency), float(intra_latency),
             tie_bound(work, period), tie_bound(send, period), tie_bound(recv, period), period)
    shape = (np.int64(fanout), np.int64(node_size))
    depth = 0  # the cut: the first level whose subtrees hold at most _PIECE tasks
    while (depth + 1 < n_levels and (n_tasks - level_bounds[depth])
           > _PIECE * (level_bounds[depth + 1] - level_bounds[depth])):
        depth += 1
    first_root, n_subtrees = level_bounds[depth], level_bounds[depth + 1] - level_bounds[depth]
    subtree_end = np.empty(n_subtrees)
    top_end = np.full(phases + 1, -np.inf)  # the largest end above the cut, per phase
    phase_end = np.empty(phases)
    for phase in range(phases + 1):
        for level in range(depth if phase == 0 else 0):  # the first compute above the cut
            _down_level(address, n_rows, table, level_bounds[level], level_bounds[level + 1],
                        state, costs, shape, phase, phases, compute_out, end_out, ops_out)
        queue = np.zeros(1, dtype=np.int64)
        for _ in numba.prange(_WORKERS):  # each thread takes subtrees until none is left
            while True:
                piece = take_next(queue)
                if piece >= n_subtrees:
                    break
                subtree_end[piece] = _subtree(address, n_rows, table, first_root + piece,
                                              state, costs, shape, phase, phases,
                                              compute_out, end_out, ops_out)
        if phase > 0:
            phase_end[phase - 1] = max(subtree_end.max(), top_end[phase - 1])
        if phase < phases and depth > 0:  # above the cut: the reduce, then the broadcast
            arrived = np.empty(_BLOCK * fanout)
            sender = np.empty(_BLOCK * fanout, dtype=np.int8)
            for level in range(depth - 1, -1, -1):
                _up_level(address, n_rows, level_bounds[level], level_bounds[level + 1],
                          state, costs, shape, phase, arrived, sender, ops_out)
            for level in range(depth):
                top_end[phase] = max(top_end[phase], _down_level(
                    address, n_rows, table, level_bounds[level], level_bounds[level + 1],
                    state, costs, shape, phase + 1, phases, compute_out, end_out, ops_out))
    return phase_end


@numba.njit(cache=True, parallel=True)
def noiseless_tree(n_tasks, work, phases, fanout, send, recv, latency, intra_latency,
                   node_size, level_bounds, end_out):
    """:func:`run_tree_barrier` on a trace without jitter: every operation takes exactly
    its cost, so no trace is read and the tasks need no reordering.

    The same operations in the same order as the full kernel (receives from the children
    in order of arrival, ties to the lower index; sends to the children in index order),
    level by level, the tasks of a level in parallel. Returns the time at which the
    last task ends each phase [s] and the largest change of a task's phase time from the
    phase before to the last [s] (0 with fewer than three phases); fills
    ``end_out[phase, task]`` when it is not empty.
    """
    n_levels = level_bounds.size - 1
    keep = end_out.shape[0] > 0
    end = np.zeros(n_tasks)  # each task's end of the phase before
    now = np.empty(n_tasks)
    # per task, its reduce message at the parent, then the parent's broadcast send to it
    message = np.empty(n_tasks)
    # each task's phase time in the phase before; after the last phase (of three or
    # more), how much it changed from the phase before
    took = np.zeros(n_tasks)
    phase_end = np.empty(phases)
    for phase in range(phases):
        for level in range(n_levels - 1, -1, -1):  # reduce: children before parents
            for task in numba.prange(level_bounds[level], level_bounds[level + 1]):
                t = end[task] + work
                first = fanout * task + 1
                n_children = min(fanout, max(n_tasks - first, 0))
                taken = 0
                for _ in range(n_children):
                    best, pick = np.inf, 0
                    for q in range(n_children):
                        if not (taken >> q) & 1 and message[first + q] < best:
                            best, pick = message[first + q], q
                    taken |= 1 << pick
                    t = (t if t > best else best) + recv
                if task > 0:
                    t += send
                    parent = (task - 1) // fanout
                    message[task] = t + hop_latency(task, parent, latency, intra_latency,
                                                     node_size)
                now[task] = t
        for level in range(n_levels):  # broadcast: parents before children
            for task in numba.prange(level_bounds[level], level_bounds[level + 1]):
                t = now[task]
                if task > 0:
                    parent = (task - 1) // fanout
                    come = message[task] + hop_latency(task, parent, latency,
                                                        intra_latency, node_size)
                    t = (t if t > come else come) + recv
                first = fanout * task + 1
                for q in range(min(fanout, max(n_tasks - first, 0))):
                    t += send
                    message[first + q] = t  # the children's reduce messages are taken
                duration = t - end[task]
                if phase == phases - 1 and phase >= 2:
                    took[task] = abs(duration - took[task])
                else:
                    took[task] = duration
                end[task] = t
                if keep:
                    end_out[phase, task] = t
        phase_end[phase] = end.max()
    return phase_end, (took.max() if phases >= 3 else 0.0)


run_tree_barrier_one_thread = one_thread_copy(run_tree_barrier, "run_tree_barrier_one_thread")
noiseless_tree_one_thread = one_thread_copy(noiseless_tree, "noiseless_tree_one_thread")
