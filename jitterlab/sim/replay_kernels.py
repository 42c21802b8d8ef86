"""numba kernels of the trace-driven simulation (arrays in, arrays out).

A trace of E rows is given by its cumulative arrays (those of
:func:`jitterlab.noise.trace_law.trace_positions`), packed by :func:`trace_table`:
``starts[i]`` is when row i's jitter begins and ``computed[i]`` the gap time before
it; ``starts[E]`` = T and ``computed[E]`` = G. A task's place in the trace is an
unrolled time x; the trace repeats every T. The plain-Python twin is
:func:`jitterlab.testing.simulate_reference`.
"""

from __future__ import annotations

import math
from types import FunctionType

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["advance", "run_without_barrier", "run_tree_barrier", "noiseless_tree", "trace_table",
           "run_without_barrier_one_thread", "run_tree_barrier_one_thread",
           "noiseless_tree_one_thread"]

# columns of the packed trace table, one row per trace row (plus a closing row):
# when row i's jitter starts, the compute before it, and its jitter duration
START, COMPUTED, JITTER = 0, 1, 2
_TIE = 16 * np.finfo(np.float64).eps  # relative rounding allowed in "ends exactly at"


@numba.njit(cache=True)
def trace_table(jitter, gap):
    """The packed trace, one (E + 1, 3) array so that one trace row is one cache line:
    per row when its jitter starts, the compute before it and its jitter duration [s].

    The running sums are those of :func:`jitterlab.noise.trace_law.trace_positions`
    (``numpy.cumsum`` adds in the same order), bit for bit, in one pass.
    """
    n = jitter.size
    table = np.empty((n + 1, 3))
    start = 0.0
    computed = 0.0
    for row in range(n):
        table[row, START] = start
        table[row, COMPUTED] = computed
        table[row, JITTER] = jitter[row]
        start += jitter[row] + gap[row]
        computed += gap[row]
    table[n, START] = start
    table[n, COMPUTED] = computed
    table[n, JITTER] = 0.0
    return table


@intrinsic
def _prefetch_row(typingctx, table, row):
    """Ask the CPU to start loading trace row ``row`` into cache (llvm.prefetch)."""
    signature = types.void(table, row)

    def codegen(context, builder, sig, args):
        array_type = sig.args[0]
        array = context.make_array(array_type)(context, builder, args[0])
        zero = context.get_constant(types.intp, 0)
        pointer = cgutils.get_item_pointer(context, builder, array_type, array,
                                           [context.cast(builder, args[1], sig.args[1], types.intp),
                                            zero], wraparound=False)
        byte_pointer = ir.IntType(8).as_pointer()
        int32 = ir.IntType(32)
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte_pointer, int32, int32, int32]),
            "llvm.prefetch.p0i8")
        builder.call(function, [builder.bitcast(pointer, byte_pointer), ir.Constant(int32, 0),
                                ir.Constant(int32, 3), ir.Constant(int32, 1)])
        return context.get_dummy_value()

    return signature, codegen


_CACHED_TABLE = 2**20  # a packed trace of at most this many bytes stays in cache [B]
_PREFETCH_AHEAD = 8  # tasks ahead whose trace rows are requested early


@intrinsic
def _load(typingctx, address, index):
    """The float64 at byte ``address`` + 8·``index``.

    The kernels read the packed trace through its address: numba counts references to
    an array at every call that takes it and at every inlined use, atomic operations
    that cost more than the search itself (the caller keeps the table alive).
    """
    signature = types.float64(address, index)

    def codegen(context, builder, sig, args):
        base = builder.inttoptr(context.cast(builder, args[0], sig.args[0], types.uintp),
                                ir.DoubleType().as_pointer())
        index = context.cast(builder, args[1], sig.args[1], types.intp)
        return builder.load(builder.gep(base, [index]))

    return signature, codegen


@numba.njit(cache=True, inline="always")
def _at(address, row, col):
    """Column ``col`` of row ``row`` of the packed trace at ``address``."""
    return _load(address, 3 * row + col)


@numba.njit(cache=True)
def _address(table):
    """Address of a packed trace (C-contiguous, 3 columns); anything else raises."""
    if table.ndim != 2 or table.shape[1] != 3 or table.strides[1] != 8 or table.strides[0] != 24:
        raise ValueError("the trace table must be a C-contiguous (E + 1, 3) float array "
                         "(see trace_table)")
    return table.ctypes.data


@numba.njit(cache=True, inline="always")
def _precedes(a, b, strict):
    return a < b if strict else a <= b


@numba.njit(cache=True, inline="always")
def _search(address, col, value, hint, top, strict):
    """Largest i in [0, top] with column ``col`` <= value (< value if ``strict``).

    Needs the condition to hold at i = 0. Gallops from ``hint``: cheap when the
    answer is near it.
    """
    i = hint if 0 <= hint <= top else 0
    if _precedes(_at(address, i, col), value, strict):
        lo, step, hi = i, 1, i + 1
        while hi <= top and _precedes(_at(address, hi, col), value, strict):
            lo = hi
            step *= 2
            hi = lo + step
        if hi > top:
            hi = top + 1
    else:
        hi, step, lo = i, 1, i - 1
        while lo > 0 and not _precedes(_at(address, lo, col), value, strict):
            hi = lo
            step *= 2
            lo = hi - step
        if lo < 0:
            lo = 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _precedes(_at(address, mid, col), value, strict):
            lo = mid
        else:
            hi = mid
    return lo


@numba.njit(cache=True)
def _last_before(table, col, value, hint, top, strict):
    """:func:`_search` on a table (for tests and callers outside the hot loops)."""
    return _search(_address(table), col, value, hint, top, strict)


@numba.njit(cache=True, inline="always")
def _advance_at(address, n_rows, x, cpu, hint, finish_hint):
    """:func:`advance` on the packed trace of ``n_rows`` rows at ``address``."""
    period = _at(address, n_rows, START)
    total_gap = _at(address, n_rows, COMPUTED)
    # x in the first or second cycle (as in every run that starts in the trace): the
    # cycle and offset that the division below would give, bit for bit (x - period is
    # exact there), without dividing
    if 0.0 <= x < period:
        cycle = 0
        offset = x
    elif period <= x < 2.0 * period:
        cycle = 1
        offset = x - period
    else:
        cycle = math.floor(x / period)
        offset = x - cycle * period
        if offset >= period:
            offset -= period
            cycle += 1
        elif offset < 0.0:
            offset += period
            cycle -= 1
    row = _search(address, START, offset, hint, n_rows - 1, False)
    if cpu <= 0.0:
        return x, row, row
    done_here = offset - _at(address, row, START) - _at(address, row, JITTER)
    coordinate = _at(address, row, COMPUTED) + (done_here if done_here > 0.0 else 0.0)
    target = coordinate + cpu
    # a finish within rounding of a gap's end counts as at its end (the jitter that
    # follows is not met), whatever the unit the trace was converted from; the rounding
    # is that of the wall time x (and of the work), not of the remainder in the cycle
    tie = _TIE * (abs(x) + cpu + period)
    if 0.0 < target <= total_gap:  # within this cycle's gaps: ceil(target / total_gap) = 1
        extra = 0.0
        rest = target
    else:
        extra = math.ceil(target / total_gap) - 1.0
        rest = target - extra * total_gap
    if rest <= tie:
        rest += total_gap
        extra -= 1.0
    elif rest > total_gap + tie:
        rest -= total_gap
        extra += 1.0
    finish_row = _search(address, COMPUTED, rest - tie, finish_hint, n_rows - 1, True)
    finish = ((cycle + extra) * period + _at(address, finish_row, START)
              + _at(address, finish_row, JITTER)
              + (rest - _at(address, finish_row, COMPUTED)))
    return finish, row, finish_row


@numba.njit(cache=True)
def tie_bound(cpu, period):
    """The largest rounding allowance ("tie") of :func:`_advance_at` for ``cpu`` of work
    started in the first two cycles of a trace of ``period``, for :func:`_advance_in_gap`;
    infinite when ``cpu`` is not positive (that path then never applies) [trace unit]."""
    if not cpu > 0.0:
        return np.inf
    return _TIE * (2.0 * period + cpu + period)


@numba.njit(cache=True, inline="always")
def _advance_in_gap(address, x, cpu, row, period, tie_max):
    """:func:`_advance_at` when x and the finish both lie in row ``row`` (its jitter or the
    gap after it) and x in the first two cycles: the same arithmetic, bit for bit, without
    the searches and without branches. Returns (finish, whether that case holds); when it
    does not, the finish is meaningless and the caller takes :func:`_advance_at`.

    ``tie_max`` is :func:`tie_bound` of ``cpu``. The four comparisons imply those of
    :func:`_advance_at` because rounding is monotone and the table's columns never
    decrease: an offset before the next row's start puts x in the first two cycles and at
    or after the row's start makes x non-negative; work that ends beyond this row's
    compute coordinate by more than the largest tie, and not beyond the next row's, needs
    no tie correction and ends in this row. Operations of a few microseconds meet a jitter
    rarely (the gaps last milliseconds): most of the tree kernel's operations end here.
    """
    second = x >= period
    offset = x - period if second else x
    start = _at(address, row, START)
    jitter = _at(address, row, JITTER)
    computed = _at(address, row, COMPUTED)
    done_here = offset - start - jitter
    target = computed + (done_here if done_here > 0.0 else 0.0) + cpu
    ok = ((start <= offset) & (offset < _at(address, row + 1, START))
          & (computed < target - tie_max) & (target <= _at(address, row + 1, COMPUTED)))
    finish = (period if second else 0.0) + start + jitter + (target - computed)
    return finish, ok


@numba.njit(cache=True, inline="always")
def _advance_across_gaps(address, n_rows, x, cpu, row, period, tie_max):
    """:func:`_advance_in_gap` for work that may end some rows after x's row ``row``: the
    finish row is found by a walk forward (a compute of a millisecond crosses a jitter
    or two). Returns (finish, finish row, whether the case holds).
    """
    second = x >= period
    offset = x - period if second else x
    start = _at(address, row, START)
    jitter = _at(address, row, JITTER)
    computed = _at(address, row, COMPUTED)
    done_here = offset - start - jitter
    target = computed + (done_here if done_here > 0.0 else 0.0) + cpu
    low = target - tie_max
    ok = (start <= offset) & (offset < _at(address, row + 1, START)) & (computed < low)
    end = row
    while end + 1 < n_rows and _at(address, end + 1, COMPUTED) < low:
        end += 1
    ok = ok & (target <= _at(address, end + 1, COMPUTED))
    finish = ((period if second else 0.0) + _at(address, end, START) + _at(address, end, JITTER)
              + (target - _at(address, end, COMPUTED)))
    return finish, end, ok


@numba.njit(cache=True)
def advance(table, x, cpu, hint, finish_hint):
    """Consume ``cpu`` of compute from trace time x; jitter met on the way adds its length.

    ``hint`` and ``finish_hint`` are rows near x and near the finish: the searches
    gallop from them. Returns (finish time, row of x, row of the finish). The finish
    is the earliest time at which the compute is done, so a jitter starting at that instant is not
    counted; a start inside a jitter first waits out its remainder.
    """
    return _advance_at(_address(table), table.shape[0] - 1, x, cpu, hint, finish_hint)


@numba.njit(cache=True, parallel=True)
def run_without_barrier(table, offsets, work, phases, n_chunks, compute_out):
    """Phases of ``work`` with a wait for the slowest task after each (jitSim §3.4).

    ``offsets`` (sorted) are the tasks' start times in the trace. All tasks resume
    together, so each phase shifts every task by the same phase time θ and the
    sorted order survives: consecutive tasks search the trace from each other's rows.

    Returns θ per phase [trace unit]; fills ``compute_out[phase, task]`` when it is
    not empty.
    """
    n_tasks = offsets.size
    theta = np.empty(phases)
    chunk = (n_tasks + n_chunks - 1) // n_chunks
    maxima = np.zeros(n_chunks)
    keep = compute_out.shape[0] > 0
    address = _address(table)
    n_rows = table.shape[0] - 1
    elapsed = 0.0
    for phase in range(phases):
        for c in numba.prange(n_chunks):
            lo = c * chunk
            hi = min(n_tasks, lo + chunk)
            hint, finish_hint = 0, 0
            best = 0.0
            for task in range(lo, hi):
                x = offsets[task] + elapsed
                finish, hint, finish_hint = _advance_at(address, n_rows, x, work, hint,
                                                        finish_hint)
                took = finish - x
                if took > best:
                    best = took
                if keep:
                    compute_out[phase, task] = took
            maxima[c] = best
        theta[phase] = maxima.max()
        elapsed += theta[phase]
    return theta


@numba.njit(cache=True, inline="always")
def _hop_latency(child, parent, latency, intra_latency, node_size):
    if node_size > 0 and child // node_size == parent // node_size:
        return intra_latency
    return latency


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
    for task in numba.prange(n_tasks):
        level = 0
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


_CHUNK = 1024  # slots per parallel chunk of the start-row search
#: a simulation of fewer tasks runs on one thread: its parallel regions (one per phase or tree
#: level) cost more in waking and joining threads than a second thread saves (issue #20)
PARALLEL_MIN_TASKS = 256
_BLOCK = 256  # slots whose operations the tree kernel interleaves


@numba.njit(cache=True, parallel=True)
def _start_rows(address, n_rows, origin, hint):
    """Row of every slot's start time.

    The trace is cut into ``n_rows`` equal spans of time; one walk down the rows finds
    the row at which each span begins, and a slot's search gallops from its span's row,
    a step or two away on average (the search from the slot before, a bucket of the
    trace order away, cost more than the rest of the setup; issue #20).
    """
    period = _at(address, n_rows, START)
    n_chunks = (origin.size + _CHUNK - 1) // _CHUNK
    if origin.size * math.log2(n_rows + 1) < n_rows:  # few tasks on a long trace: the walk
        for c in numba.prange(n_chunks):              # would cost more than a search each
            for slot in range(c * _CHUNK, min(origin.size, (c + 1) * _CHUNK)):
                x = origin[slot]
                x -= math.floor(x / period) * period
                hint[slot] = _search(address, START, x, 0, n_rows - 1, False)
        return
    per_time = n_rows / period  # spans per unit of trace time
    length = period / n_rows  # of a span
    first_row = np.empty(n_rows, dtype=np.int32)  # the row at the start of each span
    row = 0
    for span in range(n_rows):
        begin = span * length
        while row + 1 < n_rows and _at(address, row + 1, START) <= begin:
            row += 1
        first_row[span] = row
    for c in numba.prange(n_chunks):
        for slot in range(c * _CHUNK, min(origin.size, (c + 1) * _CHUNK)):
            x = origin[slot]
            x -= math.floor(x / period) * period
            hint[slot] = _search(address, START, x,
                                 first_row[min(max(int(x * per_time), 0), n_rows - 1)],
                                 n_rows - 1, False)


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
    address = _address(table)
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
    far = table.nbytes > _CACHED_TABLE  # prefetch only what the caches do not hold
    period = _at(address, n_rows, START)
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
                    ahead = slot + _PREFETCH_AHEAD
                    if far and ahead < hi:
                        _prefetch_row(table, hint[ahead])
                        _prefetch_row(table, min(hint[ahead] + span[ahead], n_rows))
                    start = origin[slot]
                    finish, h, ok = _advance_across_gaps(address, n_rows, start + end[slot],
                                                         work, hint[slot], period, work_tie)
                    if ok:
                        span[slot] = h - hint[slot]
                        hint[slot] = h
                    else:
                        finish, row, h = _advance_at(address, n_rows, start + end[slot], work,
                                                     hint[slot], hint[slot] + span[slot])
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
                            finish, ok = _advance_in_gap(address, start + begin, recv,
                                                         hint[slot], period, recv_tie)
                            if not ok:
                                finish, _, h = _advance_at(address, n_rows, start + begin,
                                                           recv, hint[slot], hint[slot])
                                hint[slot] = h
                            now[slot] = finish - start
                            if keep_ops:
                                ops_out[phase, task_of[slot], 1 + pick] = now[slot]
                for slot in range(first, last):  # ... and the send to the parent
                    task = task_of[slot]
                    if task > 0:
                        start = origin[slot]
                        finish, ok = _advance_in_gap(address, start + now[slot], send,
                                                     hint[slot], period, send_tie)
                        if not ok:
                            finish, _, h = _advance_at(address, n_rows, start + now[slot],
                                                       send, hint[slot], hint[slot])
                            hint[slot] = h
                        now[slot] = finish - start
                        hop = latency  # one wire latency unless the nodes count
                        if node_size > 0:
                            hop = _hop_latency(task, (task - 1) // fanout, latency,
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
                        ahead = slot + _PREFETCH_AHEAD
                        if far and ahead < hi:
                            _prefetch_row(table, hint[ahead])
                        start = origin[slot]
                        hop = latency
                        if node_size > 0:
                            hop = _hop_latency(task, (task - 1) // fanout, latency,
                                               intra_latency, node_size)
                        arrival = end[slot] + hop
                        begin = now[slot] if now[slot] > arrival else arrival
                        finish, ok = _advance_in_gap(address, start + begin, recv,
                                                     hint[slot], period, recv_tie)
                        if not ok:
                            finish, _, h = _advance_at(address, n_rows, start + begin, recv,
                                                       hint[slot], hint[slot])
                            hint[slot] = h
                        now[slot] = finish - start
                        if keep_ops:
                            ops_out[phase, task, 2 + fanout] = now[slot]
                for q in range(most_children):  # ... each send to a child, in index order
                    for slot in range(first, last):
                        if q < children[slot]:
                            start = origin[slot]
                            finish, ok = _advance_in_gap(address, start + now[slot],
                                                         send, hint[slot], period, send_tie)
                            if not ok:
                                finish, _, h = _advance_at(address, n_rows, start + now[slot],
                                                           send, hint[slot], hint[slot])
                                hint[slot] = h
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
                    message[task] = t + _hop_latency(task, parent, latency, intra_latency,
                                                     node_size)
                now[task] = t
        for level in range(n_levels):  # broadcast: parents before children
            for task in numba.prange(level_bounds[level], level_bounds[level + 1]):
                t = now[task]
                if task > 0:
                    parent = (task - 1) // fanout
                    come = message[task] + _hop_latency(task, parent, latency,
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


def _one_thread(kernel, name):
    """``kernel`` compiled without numba's parallel layer: its ``prange`` loops run as plain
    loops, in the same order with the same arithmetic (so the same results, bit for bit).

    On one thread the parallel layer still opens a region per phase or tree level, and the
    loops inside a region are compiled as separate functions that the compiler cannot
    optimise together with the loop around them: the one-thread kernels are 5-10 % faster
    (issue #20). The copy gets its own name, so that numba's disk cache (keyed by name and
    code, not by the ``parallel`` option) keeps the two compilations apart.
    """
    source = kernel.py_func
    function = FunctionType(source.__code__, source.__globals__, name, source.__defaults__)
    function.__qualname__ = name
    function.__doc__ = f"{source.__name__} on one thread (same results); see _one_thread."
    return numba.njit(cache=True)(function)


run_without_barrier_one_thread = _one_thread(run_without_barrier, "run_without_barrier_one_thread")
run_tree_barrier_one_thread = _one_thread(run_tree_barrier, "run_tree_barrier_one_thread")
noiseless_tree_one_thread = _one_thread(noiseless_tree, "noiseless_tree_one_thread")


# --------------------------------------------------------------------------------------
# per-rank state of message-passing replay (wavefront, collectives): a rank's clock and
# where its trace walk stands, so that most operations skip the trace search
# --------------------------------------------------------------------------------------
# state rows: rank clock, arrival from x upstream, arrival from y upstream, and for a
# trace the next jitter start, the end of the last jitter met, the row hint
CLOCK, ARRIVE_X, ARRIVE_Y, NEXT, PREV_END, HINT = range(6)
MARGIN = 1e-12  # relative: ops ending this close to a jitter take the exact path


def new_state(n_ranks: int) -> np.ndarray:
    """Kernel state of ``n_ranks`` ranks that all start at time 0."""
    state = np.zeros((n_ranks, 8))  # one cache line per rank (rows a power of two
    state[:, NEXT] = -np.inf        # apart would collide in the cache)
    return state


@numba.njit(cache=True, inline="always")
def quick(t, cpu, previous_end, next_start):
    """End of ``cpu`` started at t when no jitter can meet it, else −1 (scalars only:
    the hot loop must not pass arrays through inlined calls, numba would count their
    references at every call)."""
    end = t + cpu
    if t >= previous_end and end < next_start:
        return end
    return -1.0


@numba.njit(cache=True)
def busy(state, rank, t, cpu, table, offsets):
    """Time at which ``cpu`` of CPU time started at ``t`` is done on ``rank``'s trace."""
    if cpu <= 0.0:
        return t
    end = quick(t, cpu, state[rank, PREV_END], state[rank, NEXT])
    if end >= 0.0:
        return end  # no jitter starts before the op is done: the common case
    hint = int(state[rank, HINT])
    x = offsets[rank] + t
    finish, _, row = advance(table, x, cpu, hint, hint)
    state[rank, HINT] = row
    period = table[table.shape[0] - 1, START]
    gap_start = table[row, START] + table[row, JITTER]
    gap_end = table[row + 1, START]
    cycle = np.round((finish - gap_start - 0.5 * (gap_end - gap_start)) / period)
    base = cycle * period - offsets[rank]
    state[rank, PREV_END] = base + gap_start
    state[rank, NEXT] = base + gap_end - MARGIN * (abs(x) + period)
    return finish - offsets[rank]
