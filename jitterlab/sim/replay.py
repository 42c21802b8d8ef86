"""The replay engine of trace-driven simulation (jitSim, De & Mann 2010, seed 000).

Every simulator of jitterlab replays a jitter trace the same way: the trace becomes a
packed table of jitter starts and accumulated compute time (:func:`trace_table`), each
task starts at an offset in it (:func:`draw_offsets`), and a task's clock advances
through the trace by an amount of work, skipping the jitter it meets
(:func:`jitterlab.sim.replay_kernels.advance` and, with the per-rank state of message
passing, :func:`jitterlab.sim.replay_kernels.busy`). The barrier-free run, the tree
barrier, the collectives, the wavefront and Time Warp's GVT all use this module.
"""

from __future__ import annotations

import math
import weakref

import numba
import numpy as np

from ..base.checks import check_integer
from ..base.rng import RngLike, as_generator
from . import replay_kernels

__all__ = ["trace_table", "draw_offsets", "start_offsets", "task_counts", "one_thread_or"]


#: the packed tables of the traces in use: a trace never changes, and runs over seeds or N
#: (a sweep, the explorer's eight runs) replay the same one; kept while the trace lives
_TABLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def trace_table(trace):
    """A trace's packed table (:func:`jitterlab.sim.replay_kernels.trace_table`) [s]; the
    kernels only read it (one table per trace object, computed at its first use)."""
    try:
        return _TABLES[trace]
    except (KeyError, TypeError):  # not seen yet, or an object that takes no weak reference
        pass
    table = replay_kernels.trace_table(np.ascontiguousarray(trace.jitter_seconds, dtype=float),
                                    np.ascontiguousarray(trace.gap_seconds, dtype=float))
    if not table[-1, replay_kernels.COMPUTED] > 0:
        raise ValueError("the trace has no gap time: no compute can ever finish")
    try:
        _TABLES[trace] = table
    except TypeError:
        pass
    return table


def draw_offsets(trace, n: int, start="random", rng: RngLike = None) -> np.ndarray:
    """Start times of ``n`` tasks in the trace [s] (see :func:`simulate`)."""
    return start_offsets(trace, trace_table(trace), n, start, rng)


def start_offsets(trace, table, n, start, rng) -> np.ndarray:
    """:func:`draw_offsets` for a trace whose table is at hand."""
    starts = table[:, replay_kernels.START]
    jitter = table[:-1, replay_kernels.JITTER]
    period = starts[-1]
    if isinstance(start, str):
        gen = as_generator(rng)
        if start == "random":
            return gen.uniform(0.0, period, n)
        if start == "random_row":  # jitSim: a random trace row, computing from its gap
            rows = gen.integers(0, jitter.size, n)
            return starts[rows] + jitter[rows]
        if start == "synchronized":
            return np.full(n, gen.uniform(0.0, period))
        if start == "coscheduled":
            window = trace.attrs.get("window")
            if window is None or not float(window) > 0:
                raise ValueError("start='coscheduled' needs the trace attribute 'window' "
                                 "(the co-scheduler period [s])")
            first = float(trace.attrs.get("window_offset", 0.0))
            count = int(math.floor((period - first) / float(window)))
            if count < 1:
                raise ValueError(f"the trace ({period:g} s) holds no whole co-scheduler "
                                 f"window of {float(window):g} s")
            return first + float(window) * gen.integers(0, count, n)
        raise ValueError(f"start must be 'random', 'random_row', 'synchronized', "
                         f"'coscheduled' or start rows, got {start!r}")
    rows = np.asarray(start)
    if rows.ndim != 1 or rows.size != n or not np.issubdtype(rows.dtype, np.integer):
        raise ValueError(f"start: explicit start rows must be {n} integers, one per "
                         f"task, got {rows.size} values of type {rows.dtype}")
    if rows.min() < 0 or rows.max() >= jitter.size:
        raise ValueError(f"start: start rows must lie in [0, {jitter.size - 1}]")
    # a task starting at row s begins computing at the start of gap s
    return starts[rows] + jitter[rows]


def task_counts(n) -> np.ndarray:
    """The numbers of tasks N as an int64 array (one N or a 1-D sequence)."""
    if isinstance(n, str) or np.ndim(n) > 1 or (np.ndim(n) == 1 and len(n) == 0):
        raise ValueError(f"n must be a positive integer or a 1-D sequence of them, got {n!r}")
    values = [check_integer("n", value, 1) for value in np.atleast_1d(np.asarray(n, dtype=object))]
    return np.array(values, dtype=np.int64)


def one_thread_or(parallel, one_thread):
    """The kernel to call now: its one-thread compilation when numba runs one thread (as
    :func:`jitterlab.threads.kernel_threads` decided), else the parallel one. Both give the
    same results; the one-thread one saves the parallel layer's cost (issue #20)."""
    return one_thread if numba.get_num_threads() == 1 else parallel
