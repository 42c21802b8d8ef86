"""numba kernels of the trace-driven simulation (arrays in, arrays out).

The packed trace and the walk through it are in :mod:`jitterlab.sim.trace_walk`, the tree
barrier's kernels in :mod:`jitterlab.sim.tree_kernels`; this module holds the barrier-free
kernel and the per-rank state of message-passing replay, and gives every kernel's public
name at its old place.
"""

from __future__ import annotations

import numba
import numpy as np

from .trace_walk import (
    COMPUTED,
    JITTER,
    START,
    advance,
    advance_at,
    last_before,
    one_thread_copy,
    precedes,
    table_address,
    tie_bound,
    trace_table,
)
from .tree_kernels import (
    hop_latency,
    noiseless_tree,
    noiseless_tree_one_thread,
    run_tree_barrier,
    run_tree_barrier_one_thread,
)

__all__ = ["advance", "run_without_barrier", "run_tree_barrier", "noiseless_tree", "trace_table",
           "run_without_barrier_one_thread", "run_tree_barrier_one_thread",
           "noiseless_tree_one_thread", "START", "COMPUTED", "JITTER", "tie_bound",
           "PARALLEL_MIN_TASKS", "new_state", "quick", "busy"]

# the old private names, kept for the tests that call them here
_last_before, _precedes, _hop_latency = last_before, precedes, hop_latency

#: a simulation of fewer tasks runs on one thread: its parallel regions (one per phase or tree
#: level) cost more in waking and joining threads than a second thread saves (issue #20)
PARALLEL_MIN_TASKS = 256


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
    address = table_address(table)
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
                finish, hint, finish_hint = advance_at(address, n_rows, x, work, hint,
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


run_without_barrier_one_thread = one_thread_copy(run_without_barrier,
                                                 "run_without_barrier_one_thread")


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
