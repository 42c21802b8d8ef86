"""numba kernels of the tree barrier (jitSim §3.6): a reduce up and a broadcast down a
complete tree, on the trace walk of :mod:`jitterlab.sim.trace_walk`, and its noiseless twin
(:class:`jitterlab.sim.barriers.TreeBarrier` calls them).
"""

from __future__ import annotations

import math

import numba
import numpy as np

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
           "noiseless_tree_one_thread", "hop_latency"]


@numba.njit(cache=True, inline="always")
def hop_latency(child, parent, latency, intra_latency, node_size):
    if node_size > 0 and child // node_size == parent // node_size:
        return intra_latency
    return latency


_CHUNK = 1024  # slots per parallel chunk of the start-row search and the trace order
_BUCKET = 8  # tasks per bucket of the trace-order sort (they share a few cache lines)


@numba.njit(cache=True, parallel=True)
def _trace_order(offsets, level_bounds, period, n_rows):
    """Tasks of each level in (nearly) the order of their start in the trace.

    A counting sort into about ``size / _BUCKET`` buckets of the trace per level;
    order inside a bucket is by task. The buckets are found in parallel, the counting
    is serial. Returns slot -> task.
    """
    n_tasks = offsets.size
    task_of = np.empty(n_tasks, dtype=np.int32)
    keys = np.empty(n_tasks, dtype=np.int32)
    n_levels = level_bounds.size - 1
    buckets = np.empty(n_levels, dtype=np.int64)
    for level in range(n_levels):
        size = level_bounds[level + 1] - level_bounds[level]
        buckets[level] = max(1, min(size, n_rows) // _BUCKET)
    for chunk in numba.prange((n_tasks + _CHUNK - 1) // _CHUNK):
        level = 0
        for task in range(chunk * _CHUNK, min(n_tasks, (chunk + 1) * _CHUNK)):
            while task >= level_bounds[level + 1]:
                level += 1
            n_buckets = buckets[level]
            x = offsets[task]
            key = int((x - math.floor(x / period) * period) * (n_buckets / period))
            keys[task] = min(max(key, 0), n_buckets - 1)
    for level in range(n_levels):
        lo, hi = level_bounds[level], level_bounds[level + 1]
        n_buckets = buckets[level]
        counts = np.zeros(n_buckets + 1, dtype=np.int64)
        for task in range(lo, hi):
            counts[keys[task] + 1] += 1
        for k in range(n_buckets):
            counts[k + 1] += counts[k]
        for task in range(lo, hi):
            key = keys[task]
            task_of[lo + counts[key]] = task
            counts[key] += 1
    return task_of


_SPANS_PER_ROW = 8  # most spans of the trace per row in the start-row search
_BLOCK = 256  # slots whose operations the tree kernel interleaves


@numba.njit(cache=True, parallel=True)
def _start_rows(address, n_rows, origin, hint):
    """Row of every slot's start time.

    The trace is cut into ``n_rows`` equal spans of time; one walk down the rows finds
    the row at which each span begins, and a slot's search gallops from its span's row,
    a step or two away on average (the search from the slot before, a bucket of the
    trace order away, cost more than the rest of the setup; issue #20).
    """
    period = row_value(address, n_rows, START)
    n_chunks = (origin.size + _CHUNK - 1) // _CHUNK
    if origin.size * math.log2(n_rows + 1) < n_rows:  # few tasks on a long trace: the walk
        no_spans = np.empty(0, dtype=np.int32)     # would cost more than a search each
        for c in numba.prange(n_chunks):
            _search_starts(address, n_rows, origin, hint, c * _CHUNK,
                           min(origin.size, (c + 1) * _CHUNK), period, no_spans, 0.0)
        return
    # up to _SPANS_PER_ROW spans per row, at most one per slot: the answer is then mostly
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
    """:func:`_start_rows` for slots ``lo`` to ``hi``: each search gallops from its span's
    first row (``first_row``, ``per_time`` spans per unit of trace time), or from row 0
    when ``first_row`` is empty. One function for both cases, so that the search is compiled
    once (issue #20)."""
    n_spans = first_row.size
    for slot in range(lo, hi):
        x = origin[slot]
        x -= math.floor(x / period) * period
        start = 0
        if n_spans > 0:
            start = first_row[min(max(int(x * per_time), 0), n_spans - 1)]
        hint[slot] = search_rows(address, START, x, start, n_rows - 1, False)


@numba.njit(cache=True, parallel=True)
def run_tree_barrier(table, offsets, work, phases, fanout, send, recv,
                     latency, intra_latency, node_size, level_bounds, compute_out, end_out,
                     ops_out):
    """Phases of ``work``, each closed by a reduce and a broadcast on a complete tree.

    Tasks are numbered breadth-first (children of i: fanout·i + 1 ... fanout·i +
    fanout). Reduce: after its compute a task receives from each child, in order of
    arrival, then sends to its parent. Broadcast: it receives from its parent, then
    sends to each child in index order. Every send and receive consumes CPU time on
    the task's trace (jitter can strike it); a message arrives one hop latency after
    its send completes. A task starts its next compute when its broadcast part is
    done.

    Each level is walked in the order of its tasks' start in the trace (all tasks
    advance by about the same time per phase, so that order holds): the trace is read
    nearly sequentially, and the per-task state is stored in that order (a "slot" per
    task); messages are written into the receiver's slot. Within a block of ``_BLOCK``
    slots the kernel takes one operation of every task before the next (compute, each
    receive, send), so that the CPU overlaps the tasks' chains of dependent arithmetic.
    Every task performs the same operations on the same numbers as in index order, so
    the results do not depend on this order, nor on the number of threads.

    Returns the time at which the last task ends each phase [trace unit]; fills
    ``compute_out[phase, task]`` and ``end_out[phase, task]`` when they are not empty,
    and ``ops_out[phase, task, op]`` (when not empty) with the end of each operation:
    op 0 the compute, 1 + q the receive from child q, 1 + fanout the send to the parent,
    2 + fanout the receive from the parent, 3 + fanout + q the send to child q.
    """
    n_tasks = offsets.size
    n_levels = level_bounds.size - 1
    address = table_address(table)
    n_rows = table.shape[0] - 1
    if max(n_tasks * fanout, n_rows) >= 2**31:
        raise ValueError("the tree kernel indexes tasks and trace rows with 32-bit integers")
    task_of = _trace_order(offsets, level_bounds, table[n_rows, START], n_rows)
    slot_of = np.empty(n_tasks, dtype=np.int32)
    origin = np.empty(n_tasks)
    for slot in numba.prange(n_tasks):
        slot_of[task_of[slot]] = slot
        origin[slot] = offsets[task_of[slot]]
    # slots of the levels that can have children, and where each child's message lands
    n_parent_slots = level_bounds[n_levels - 1] if n_levels > 1 else 0
    child_slot = np.empty(n_parent_slots * fanout, dtype=np.int32)
    inbox = np.empty(n_tasks, dtype=np.int32)  # a child's place in its parent's arrivals
    children = np.zeros(n_tasks, dtype=np.int8)  # per slot, how many children it has
    for parent in numba.prange(n_parent_slots):  # (no integer division per task)
        for q in range(min(fanout, max(n_tasks - fanout * parent - 1, 0))):
            task = fanout * parent + 1 + q
            place = slot_of[parent] * fanout + q
            child_slot[place] = slot_of[task]
            inbox[slot_of[task]] = place
            children[slot_of[parent]] = q + 1
    arrivals = np.empty(n_parent_slots * fanout)
    # per slot: when it ends the phase (the broadcast reuses it for the time its
    # parent's message was sent), the trace row it is at, how many rows its last
    # compute spanned (to start the finish search) and its clock within the phase
    end = np.zeros(n_tasks)
    hint = np.empty(n_tasks, dtype=np.int32)
    _start_rows(address, n_rows, origin, hint)
    span = np.zeros(n_tasks, dtype=np.int32)
    now = np.empty(n_tasks)
    phase_end = np.empty(phases)
    keep = compute_out.shape[0] > 0
    keep_ops = ops_out.shape[0] > 0
    far = table.nbytes > CACHED_TABLE  # prefetch only what the caches do not hold
    period = row_value(address, n_rows, START)
    work_tie, send_tie, recv_tie = (tie_bound(work, period), tie_bound(send, period),
                                    tie_bound(recv, period))
    for phase in range(phases):
        for level in range(n_levels - 1, -1, -1):
            lo, hi = level_bounds[level], level_bounds[level + 1]
            most_children = min(fanout, max(n_tasks - fanout * lo - 1, 0))
            for block in numba.prange((hi - lo + _BLOCK - 1) // _BLOCK):
                first = lo + block * _BLOCK
                last = min(hi, first + _BLOCK)
                arrived = np.empty(_BLOCK * fanout)  # the children's messages, sorted ...
                sender = np.empty(_BLOCK * fanout, dtype=np.int8)  # ... and who sent them
                # one operation of every task of the block per loop, so that the CPU
                # overlaps the tasks' chains of dependent arithmetic: compute, ...
                for slot in range(first, last):
                    ahead = slot + PREFETCH_AHEAD
                    if far and ahead < hi:
                        prefetch_row(table, hint[ahead])
                        prefetch_row(table, min(hint[ahead] + span[ahead], n_rows))
                    start = origin[slot]
                    finish, h, ok = advance_across_gaps(address, n_rows, start + end[slot],
                                                         work, hint[slot], period, work_tie)
                    if ok:
                        span[slot] = h - hint[slot]
                        hint[slot] = h
                    else:
                        finish, row, h = advance_called(address, n_rows, start + end[slot],
                                                        work, np.int64(hint[slot]),
                                                        np.int64(hint[slot] + span[slot]))
                        span[slot] = max(h - row, 0)
                        hint[slot] = h
                    now[slot] = finish - start
                    if keep:
                        compute_out[phase, task_of[slot]] = now[slot] - end[slot]
                    if keep_ops:
                        ops_out[phase, task_of[slot], 0] = now[slot]
                if most_children > 0:  # ... the children's messages in order of arrival
                    # (ties: the lower index first), without branches: a message's place is
                    # the number of messages that come before it ...
                    for slot in range(first, last):
                        base, own = slot * fanout, (slot - first) * fanout
                        for q in range(children[slot]):
                            message = arrivals[base + q]
                            place = 0
                            for p in range(children[slot]):
                                other = arrivals[base + p]
                                place += (other < message) | ((other == message) & (p < q))
                            arrived[own + place] = message
                            sender[own + place] = q
                for k in range(most_children):  # ... each receive, in order of arrival ...
                    for slot in range(first, last):
                        if k < children[slot]:
                            best = arrived[(slot - first) * fanout + k]
                            pick = sender[(slot - first) * fanout + k]
                            start = origin[slot]
                            begin = now[slot] if now[slot] > best else best
                            finish, hint[slot] = advance_short(address, n_rows, start + begin, recv,
                                                               hint[slot], period, recv_tie)
                            now[slot] = finish - start
                            if keep_ops:
                                ops_out[phase, task_of[slot], 1 + pick] = now[slot]
                for slot in range(first, last):  # ... and the send to the parent
                    task = task_of[slot]
                    if task > 0:
                        start = origin[slot]
                        finish, hint[slot] = advance_short(address, n_rows, start + now[slot], send,
                                                           hint[slot], period, send_tie)
                        now[slot] = finish - start
                        hop = latency  # one wire latency unless the nodes count
                        if node_size > 0:
                            hop = hop_latency(task, (task - 1) // fanout, latency,
                                               intra_latency, node_size)
                        arrivals[inbox[slot]] = now[slot] + hop
                        if keep_ops:
                            ops_out[phase, task, 1 + fanout] = now[slot]
        for level in range(n_levels):
            lo, hi = level_bounds[level], level_bounds[level + 1]
            most_children = min(fanout, max(n_tasks - fanout * lo - 1, 0))
            for block in numba.prange((hi - lo + _BLOCK - 1) // _BLOCK):
                first = lo + block * _BLOCK
                last = min(hi, first + _BLOCK)
                for slot in range(first, last):  # the receive from the parent, ...
                    task = task_of[slot]
                    if task > 0:
                        ahead = slot + PREFETCH_AHEAD
                        if far and ahead < hi:
                            prefetch_row(table, hint[ahead])
                        start = origin[slot]
                        hop = latency
                        if node_size > 0:
                            hop = hop_latency(task, (task - 1) // fanout, latency,
                                               intra_latency, node_size)
                        arrival = end[slot] + hop
                        begin = now[slot] if now[slot] > arrival else arrival
                        finish, hint[slot] = advance_short(address, n_rows, start + begin, recv,
                                                           hint[slot], period, recv_tie)
                        now[slot] = finish - start
                        if keep_ops:
                            ops_out[phase, task, 2 + fanout] = now[slot]
                for q in range(most_children):  # ... each send to a child, in index order
                    for slot in range(first, last):
                        if q < children[slot]:
                            start = origin[slot]
                            finish, hint[slot] = advance_short(address, n_rows,
                                                               start + now[slot], send,
                                                               hint[slot], period, send_tie)
                            now[slot] = finish - start
                            end[child_slot[slot * fanout + q]] = now[slot]  # parent's send
                            if keep_ops:
                                ops_out[phase, task_of[slot], 3 + fanout + q] = now[slot]
                for slot in range(first, last):  # the phase ends for the block's tasks
                    end[slot] = now[slot]
                    if keep:
                        end_out[phase, task_of[slot]] = now[slot]
        phase_end[phase] = end.max()
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
