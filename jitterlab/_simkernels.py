"""numba kernels of the trace-driven simulation (arrays in, arrays out).

A trace of E rows is given by its cumulative arrays (see
:func:`jitterlab.noise.trace_law.trace_positions`), packed by :func:`pack_trace`:
``starts[i]`` is when row i's jitter begins and ``computed[i]`` the gap time before
it; ``starts[E]`` = T and ``computed[E]`` = G. A task's place in the trace is an
unrolled time x; the trace repeats every T. The plain-Python twin is
:func:`jitterlab.testing.simulate_reference`.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["advance", "run_without_barrier", "run_tree_barrier", "pack_trace"]

# columns of the packed trace table, one row per trace row (plus a closing row):
# when row i's jitter starts, the compute before it, and its jitter duration
_START, _COMPUTED, _JITTER = 0, 1, 2
_TIE = 16 * np.finfo(np.float64).eps  # relative rounding allowed in "ends exactly at"


def pack_trace(starts, computed, jitter) -> np.ndarray:
    """One (E + 1, 3) array, so that one trace row is one cache line, not three."""
    table = np.zeros((jitter.size + 1, 3))
    table[:, _START], table[:, _COMPUTED], table[:-1, _JITTER] = starts, computed, jitter
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
                                           [args[1], zero], wraparound=False)
        byte_pointer = ir.IntType(8).as_pointer()
        int32 = ir.IntType(32)
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte_pointer, int32, int32, int32]),
            "llvm.prefetch.p0i8")
        builder.call(function, [builder.bitcast(pointer, byte_pointer), ir.Constant(int32, 0),
                                ir.Constant(int32, 3), ir.Constant(int32, 1)])
        return context.get_dummy_value()

    return signature, codegen


_PREFETCH_AHEAD = 8  # tasks ahead whose trace rows are requested early


@numba.njit(cache=True, inline="always")
def _precedes(a, b, strict):
    return a < b if strict else a <= b


@numba.njit(cache=True, inline="always")
def _last_before(table, col, value, hint, top, strict):
    """Largest i in [0, top] with table[i, col] <= value (< value if ``strict``).

    Needs the condition to hold at i = 0. Gallops from ``hint``: cheap when the
    answer is near it.
    """
    i = hint if 0 <= hint <= top else 0
    if _precedes(table[i, col], value, strict):
        lo, step, hi = i, 1, i + 1
        while hi <= top and _precedes(table[hi, col], value, strict):
            lo = hi
            step *= 2
            hi = lo + step
        if hi > top:
            hi = top + 1
    else:
        hi, step, lo = i, 1, i - 1
        while lo > 0 and not _precedes(table[lo, col], value, strict):
            hi = lo
            step *= 2
            lo = hi - step
        if lo < 0:
            lo = 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _precedes(table[mid, col], value, strict):
            lo = mid
        else:
            hi = mid
    return lo


@numba.njit(cache=True)
def advance(table, x, cpu, hint, finish_hint):
    """Consume ``cpu`` of compute from trace time x; jitter met on the way adds its length.

    ``hint`` and ``finish_hint`` are rows near x and near the finish: the searches
    gallop from them. Returns (finish time, row of x, row of the finish). The finish
    is the earliest time at which the compute is done, so a jitter starting at that instant is not
    counted; a start inside a jitter first waits out its remainder.
    """
    n_rows = table.shape[0] - 1
    period = table[n_rows, _START]
    total_gap = table[n_rows, _COMPUTED]
    cycle = math.floor(x / period)
    offset = x - cycle * period
    if offset >= period:
        offset -= period
        cycle += 1
    elif offset < 0.0:
        offset += period
        cycle -= 1
    row = _last_before(table, _START, offset, hint, n_rows - 1, False)
    if cpu <= 0.0:
        return x, row, row
    done_here = offset - table[row, _START] - table[row, _JITTER]
    coordinate = table[row, _COMPUTED] + (done_here if done_here > 0.0 else 0.0)
    target = coordinate + cpu
    # a finish within rounding of a gap's end counts as at its end (the jitter that
    # follows is not met), whatever the unit the trace was converted from; the rounding
    # is that of the wall time x (and of the work), not of the remainder in the cycle
    tie = _TIE * (abs(x) + cpu + period)
    extra = math.ceil(target / total_gap) - 1.0
    rest = target - extra * total_gap
    if rest <= tie:
        rest += total_gap
        extra -= 1.0
    elif rest > total_gap + tie:
        rest -= total_gap
        extra += 1.0
    finish_row = _last_before(table, _COMPUTED, rest - tie, finish_hint, n_rows - 1, True)
    finish = ((cycle + extra) * period + table[finish_row, _START]
              + table[finish_row, _JITTER] + (rest - table[finish_row, _COMPUTED]))
    return finish, row, finish_row


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
    elapsed = 0.0
    for phase in range(phases):
        for c in numba.prange(n_chunks):
            lo = c * chunk
            hi = min(n_tasks, lo + chunk)
            hint, finish_hint = 0, 0
            best = 0.0
            for task in range(lo, hi):
                x = offsets[task] + elapsed
                finish, hint, finish_hint = advance(table, x, work, hint,
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


@numba.njit(cache=True, parallel=True)
def run_tree_barrier(table, offsets, work, phases, fanout, send, recv,
                     latency, intra_latency, node_size, level_bounds, compute_out, end_out):
    """Phases of ``work``, each closed by a reduce and a broadcast on a complete tree.

    Tasks are numbered breadth-first (children of i: fanout·i + 1 ... fanout·i +
    fanout). Reduce: after its compute a task receives from each child, in order of
    arrival, then sends to its parent. Broadcast: it receives from its parent, then
    sends to each child in index order. Every send and receive consumes CPU time on
    the task's trace (jitter can strike it); a message arrives one hop latency after
    its send completes. A task starts its next compute when its broadcast part is
    done.

    Returns the time at which the last task ends each phase [trace unit]; fills
    ``compute_out[phase, task]`` and ``end_out[phase, task]`` when they are not empty.
    """
    n_tasks = offsets.size
    n_levels = level_bounds.size - 1
    # per task: when it ends the phase (the broadcast reuses it for the time its
    # parent's message was sent), when its reduce part is done, the trace row it is
    # at, and how many rows its last compute spanned (to start the finish search)
    end = np.zeros(n_tasks)
    up = np.empty(n_tasks)
    hint = np.zeros(n_tasks, dtype=np.int64)
    span = np.zeros(n_tasks, dtype=np.int64)
    phase_end = np.empty(phases)
    keep = compute_out.shape[0] > 0
    for phase in range(phases):
        for level in range(n_levels - 1, -1, -1):
            for task in numba.prange(level_bounds[level], level_bounds[level + 1]):
                ahead = task + _PREFETCH_AHEAD
                if ahead < level_bounds[level + 1]:
                    _prefetch_row(table, hint[ahead])
                    _prefetch_row(table, min(hint[ahead] + span[ahead], table.shape[0] - 1))
                origin = offsets[task]
                finish, row, h = advance(table, origin + end[task], work, hint[task],
                                         hint[task] + span[task])
                span[task] = max(h - row, 0)
                now = finish - origin
                if keep:
                    compute_out[phase, task] = now - end[task]
                first = fanout * task + 1
                n_children = min(fanout, max(n_tasks - first, 0))
                taken = 0
                for _ in range(n_children):  # receive in order of arrival
                    best, pick = np.inf, 0
                    for q in range(n_children):
                        if not (taken >> q) & 1:
                            child = first + q
                            arrival = up[child] + _hop_latency(child, task, latency,
                                                               intra_latency, node_size)
                            if arrival < best:
                                best, pick = arrival, q
                    taken |= 1 << pick
                    begin = now if now > best else best
                    finish, _, h = advance(table, origin + begin, recv, h, h)
                    now = finish - origin
                if task > 0:
                    finish, _, h = advance(table, origin + now, send, h, h)
                    now = finish - origin
                up[task] = now
                hint[task] = h
        for level in range(n_levels):
            for task in numba.prange(level_bounds[level], level_bounds[level + 1]):
                ahead = task + _PREFETCH_AHEAD
                if ahead < level_bounds[level + 1]:
                    _prefetch_row(table, hint[ahead])
                origin = offsets[task]
                h = hint[task]
                now = up[task]
                if task > 0:
                    parent = (task - 1) // fanout
                    arrival = end[task] + _hop_latency(task, parent, latency, intra_latency,
                                                       node_size)
                    begin = now if now > arrival else arrival
                    finish, _, h = advance(table, origin + begin, recv, h, h)
                    now = finish - origin
                first = fanout * task + 1
                for child in range(first, min(first + fanout, n_tasks)):
                    finish, _, h = advance(table, origin + now, send, h, h)
                    now = finish - origin
                    end[child] = now  # the child reads it as its parent's send time
                end[task] = now
                hint[task] = h
                if keep:
                    end_out[phase, task] = now
        phase_end[phase] = end.max()
    return phase_end
