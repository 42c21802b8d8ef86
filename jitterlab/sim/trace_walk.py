"""The packed trace and the walk through it: the core of the trace-driven simulation.

A trace of E rows is given by its cumulative arrays (those of
:func:`jitterlab.noise.trace_law.trace_positions`), packed by :func:`trace_table`:
``starts[i]`` is when row i's jitter begins and ``computed[i]`` the gap time before
it; ``starts[E]`` = T and ``computed[E]`` = G. A task's place in the trace is an
unrolled time x; the trace repeats every T. :func:`advance` consumes work from x, adding
the jitter met on the way; the kernels (:mod:`jitterlab.sim.replay_kernels`,
:mod:`jitterlab.sim.tree_kernels`) inline :func:`advance_at` or its fast paths
:func:`advance_in_gap`, :func:`advance_short` and :func:`advance_across_gaps`, which call
:func:`advance_called` where they do not hold. The plain-Python twin is
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

from ..base.threads import one_thread_copy

__all__ = ["START", "COMPUTED", "JITTER", "TIE", "CACHED_TABLE", "PREFETCH_AHEAD", "trace_table",
           "prefetch_row", "row_value", "table_address", "precedes", "search_rows",
           "last_before", "advance_at", "tie_bound", "advance_in_gap", "advance_across_gaps",
           "advance_called", "advance_short", "advance", "one_thread_copy"]

# columns of the packed trace table, one row per trace row (plus a closing row):
# when row i's jitter starts, the compute before it, and its jitter duration
START, COMPUTED, JITTER = 0, 1, 2
TIE = 16 * np.finfo(np.float64).eps  # relative rounding allowed in "ends exactly at"


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
def prefetch_row(typingctx, table, row):
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


CACHED_TABLE = 2**20  # a packed trace of at most this many bytes stays in cache [B]
PREFETCH_AHEAD = 8  # tasks ahead whose trace rows are requested early


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
def row_value(address, row, col):
    """Column ``col`` of row ``row`` of the packed trace at ``address``."""
    return _load(address, 3 * row + col)


@numba.njit(cache=True)
def table_address(table):
    """Address of a packed trace (C-contiguous, 3 columns); anything else raises."""
    if table.ndim != 2 or table.shape[1] != 3 or table.strides[1] != 8 or table.strides[0] != 24:
        raise ValueError("the trace table must be a C-contiguous (E + 1, 3) float array "
                         "(see trace_table)")
    return table.ctypes.data


@numba.njit(cache=True, inline="always")
def precedes(a, b, strict):
    return a < b if strict else a <= b


@numba.njit(cache=True, inline="always")
def search_rows(address, col, value, hint, top, strict):
    """Largest i in [0, top] with column ``col`` <= value (< value if ``strict``).

    Needs the condition to hold at i = 0. Gallops from ``hint``: cheap when the
    answer is near it.
    """
    i = hint if 0 <= hint <= top else 0
    if precedes(row_value(address, i, col), value, strict):
        lo, step, hi = i, 1, i + 1
        while hi <= top and precedes(row_value(address, hi, col), value, strict):
            lo = hi
            step *= 2
            hi = lo + step
        if hi > top:
            hi = top + 1
    else:
        hi, step, lo = i, 1, i - 1
        while lo > 0 and not precedes(row_value(address, lo, col), value, strict):
            hi = lo
            step *= 2
            lo = hi - step
        if lo < 0:
            lo = 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if precedes(row_value(address, mid, col), value, strict):
            lo = mid
        else:
            hi = mid
    return lo


@numba.njit(cache=True)
def last_before(table, col, value, hint, top, strict):
    """:func:`search_rows` on a table (for tests and callers outside the hot loops)."""
    return search_rows(table_address(table), col, value, hint, top, strict)


@numba.njit(cache=True, inline="always")
def advance_at(address, n_rows, x, cpu, hint, finish_hint):
    """:func:`advance` on the packed trace of ``n_rows`` rows at ``address``."""
    period = row_value(address, n_rows, START)
    total_gap = row_value(address, n_rows, COMPUTED)
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
    row = search_rows(address, START, offset, hint, n_rows - 1, False)
    if cpu <= 0.0:
        return x, row, row
    done_here = offset - row_value(address, row, START) - row_value(address, row, JITTER)
    coordinate = row_value(address, row, COMPUTED) + (done_here if done_here > 0.0 else 0.0)
    target = coordinate + cpu
    # a finish within rounding of a gap's end counts as at its end (the jitter that
    # follows is not met), whatever the unit the trace was converted from; the rounding
    # is that of the wall time x (and of the work), not of the remainder in the cycle
    tie = TIE * (abs(x) + cpu + period)
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
    finish_row = search_rows(address, COMPUTED, rest - tie, finish_hint, n_rows - 1, True)
    finish = ((cycle + extra) * period + row_value(address, finish_row, START)
              + row_value(address, finish_row, JITTER)
              + (rest - row_value(address, finish_row, COMPUTED)))
    return finish, row, finish_row


@numba.njit(cache=True, inline="always")
def _in_row(address, x, cpu, row, period):
    """What :func:`advance_at` computes for x in row ``row`` and the first two cycles:
    whether x is in the second cycle, its offset in the cycle, the row's jitter start,
    jitter and compute coordinate, and the compute coordinate at which ``cpu`` is done."""
    second = x >= period
    offset = x - period if second else x
    start = row_value(address, row, START)
    jitter = row_value(address, row, JITTER)
    computed = row_value(address, row, COMPUTED)
    done_here = offset - start - jitter
    target = computed + (done_here if done_here > 0.0 else 0.0) + cpu
    return second, offset, start, jitter, computed, target


@numba.njit(cache=True)
def tie_bound(cpu, period):
    """The largest rounding allowance ("tie") of :func:`advance_at` for ``cpu`` of work
    started in the first two cycles of a trace of ``period``, for :func:`advance_in_gap`;
    infinite when ``cpu`` is not positive (that path then never applies) [trace unit]."""
    if not cpu > 0.0:
        return np.inf
    return TIE * (2.0 * period + cpu + period)


@numba.njit(cache=True, inline="always")
def advance_in_gap(address, x, cpu, row, period, tie_max):
    """:func:`advance_at` when x and the finish both lie in row ``row`` (its jitter or the
    gap after it) and x in the first two cycles: the same arithmetic, bit for bit, without
    the searches and without branches. Returns (finish, whether that case holds); when it
    does not, the finish is meaningless and the caller takes :func:`advance_at`.

    ``tie_max`` is :func:`tie_bound` of ``cpu``. The four comparisons imply those of
    :func:`advance_at` because rounding is monotone and the table's columns never
    decrease: an offset before the next row's start puts x in the first two cycles and at
    or after the row's start makes x non-negative; work that ends beyond this row's
    compute coordinate by more than the largest tie, and not beyond the next row's, needs
    no tie correction and ends in this row. Operations of a few microseconds meet a jitter
    rarely (the gaps last milliseconds): most of the tree kernel's operations end here.
    """
    second, offset, start, jitter, computed, target = _in_row(address, x, cpu, row, period)
    ok = ((start <= offset) & (offset < row_value(address, row + 1, START))
          & (computed < target - tie_max) & (target <= row_value(address, row + 1, COMPUTED)))
    finish = (period if second else 0.0) + start + jitter + (target - computed)
    return finish, ok


@numba.njit(cache=True, inline="always")
def advance_across_gaps(address, n_rows, x, cpu, row, period, tie_max):
    """:func:`advance_in_gap` for work that may end some rows after x's row ``row``: the
    finish row is found by a walk forward (a compute of a millisecond crosses a jitter
    or two; the walk reads four rows a step, without a branch that the CPU would mispredict
    about every third compute). Returns (finish, finish row, whether the case holds).
    """
    second, offset, start, jitter, computed, target = _in_row(address, x, cpu, row, period)
    low = target - tie_max
    ok = (start <= offset) & (offset < row_value(address, row + 1, START)) & (computed < low)
    end = row
    while True:  # the walk, four rows a step without branches: the rows passed form a
        # prefix (the column never decreases), so their count is the number that pass
        step = (((end + 1 < n_rows) & (row_value(address, min(end + 1, n_rows), COMPUTED) < low))
                + ((end + 2 < n_rows) & (row_value(address, min(end + 2, n_rows), COMPUTED) < low))
                + ((end + 3 < n_rows) & (row_value(address, min(end + 3, n_rows), COMPUTED) < low))
                + ((end + 4 < n_rows) & (row_value(address, min(end + 4, n_rows), COMPUTED) < low)))
        end += step
        if step < 4:
            break
    ok = ok & (target <= row_value(address, end + 1, COMPUTED))
    finish = ((period if second else 0.0) + row_value(address, end, START)
              + row_value(address, end, JITTER) + (target - row_value(address, end, COMPUTED)))
    return finish, end, ok


@numba.njit(cache=True)
def advance_called(address, n_rows, x, cpu, hint, finish_hint):
    """:func:`advance_at` as a function call, not inlined: the kernels take it where a fast
    path does not hold (rarely), so that its two searches are compiled once, not once per
    operation of every kernel (the tree kernels' compilation took 3.4x less CPU time,
    issue #20). Same arguments and results as :func:`advance_at`; the callers pass both
    rows as 64-bit integers, so that it is compiled for one signature only."""
    return advance_at(address, n_rows, x, cpu, hint, finish_hint)


@numba.njit(cache=True, inline="always")
def advance_short(address, n_rows, x, cpu, row, period, tie_max):
    """A short operation (a send or a receive) from x in row ``row``: :func:`advance_in_gap`
    when it holds, else :func:`advance_called`. Returns (finish, the row to start the next
    search from) [trace unit]."""
    finish, ok = advance_in_gap(address, x, cpu, row, period, tie_max)
    if ok:
        return finish, row
    finish, _, finish_row = advance_called(address, n_rows, x, cpu, np.int64(row),
                                           np.int64(row))
    return finish, finish_row


@numba.njit(cache=True)
def advance(table, x, cpu, hint, finish_hint):
    """Consume ``cpu`` of compute from trace time x; jitter met on the way adds its length.

    ``hint`` and ``finish_hint`` are rows near x and near the finish: the searches
    gallop from them. Returns (finish time, row of x, row of the finish). The finish
    is the earliest time at which the compute is done, so a jitter starting at that instant is not
    counted; a start inside a jitter first waits out its remainder.
    (:func:`advance_called` on the table: its searches are compiled once for both.)
    """
    return advance_called(table_address(table), table.shape[0] - 1, x, cpu, np.int64(hint),
                          np.int64(finish_hint))
