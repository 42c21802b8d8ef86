"""Plain reference implementations, slow and simple, that the fast kernels are tested against."""

from __future__ import annotations

import numpy as np
import xarray as xr

from .simulate import TreeBarrier, draw_offsets

__all__ = ["simulate_reference", "walk", "walk_from_row"]

_TIE = 16 * np.finfo(np.float64).eps  # relative rounding allowed in "ends exactly at"


def walk(jitter, gap, x: float, cpu: float) -> float:
    """Walk the trace event by event from time x until ``cpu`` of compute is done.

    Returns the finish time. A start inside a jitter waits out its remainder; a
    jitter that begins exactly when the compute is done is not counted (jitSim §3.4).
    """
    if cpu <= 0:
        return x
    period = float(np.sum(jitter) + np.sum(gap))
    row_start = np.floor(x / period) * period
    row = 0
    while row_start + jitter[row] + gap[row] <= x:  # find the row holding x
        row_start += jitter[row] + gap[row]
        row += 1
    return walk_from_row(jitter, gap, row, row_start, x, cpu)


def walk_from_row(jitter, gap, row: int, row_start: float, x: float, cpu: float) -> float:
    """The event walk of :func:`walk` from time x in ``row``, which starts at ``row_start``.

    Plain loops over arrays only, so ``numba.njit(walk_from_row)`` compiles it (the
    benchmark does, as its event-walking baseline).
    """
    now, needed = x, cpu
    while True:
        jitter_end = row_start + jitter[row]
        gap_end = jitter_end + gap[row]
        if now < jitter_end:
            now = jitter_end
        available = gap_end - now
        # within rounding of the gap's end counts as at its end (as in the kernel)
        if available >= needed - _TIE * max(abs(gap_end), needed):
            return now + needed
        needed -= available
        now = gap_end
        row_start = gap_end
        row += 1
        if row == len(jitter):
            row = 0


def _latency(barrier: TreeBarrier, child: int, parent: int) -> float:
    size = barrier.cores_per_node
    if size and child // size == parent // size:
        return barrier.latency if barrier.intra_node_latency is None \
            else barrier.intra_node_latency
    return barrier.latency


def _phase_with_tree(jitter, gap, offsets, begin, work, barrier):
    """One phase with a tree barrier; returns (compute time, end time) per task."""
    n, k = len(offsets), barrier.fanout

    def run(task, t, cpu):  # wall time after using cpu from wall time t
        return walk(jitter, gap, offsets[task] + t, cpu) - offsets[task]

    compute, ready, sent_up = np.zeros(n), np.zeros(n), np.zeros(n)
    for task in reversed(range(n)):  # children have larger numbers than their parent
        now = run(task, begin[task], work)
        compute[task] = now - begin[task]
        children = [c for c in range(k * task + 1, k * task + k + 1) if c < n]
        arrivals = sorted((sent_up[c] + _latency(barrier, c, task), c) for c in children)
        for arrival, _ in arrivals:
            now = run(task, max(now, arrival), barrier.recv)
        if task > 0:
            now = run(task, now, barrier.send)
            sent_up[task] = now
        ready[task] = now
    end, sent_down = np.zeros(n), np.zeros(n)
    for task in range(n):
        now = ready[task]
        if task > 0:
            arrival = sent_down[task] + _latency(barrier, task, (task - 1) // k)
            now = run(task, max(now, arrival), barrier.recv)
        for child in range(k * task + 1, k * task + k + 1):
            if child < n:
                now = run(task, now, barrier.send)
                sent_down[child] = now
        end[task] = now
    return compute, end


def simulate_reference(trace, n: int, work: float, phases: int = 1, start="random",
                       barrier: TreeBarrier | None = None, rng=None, detail: bool = False
                       ) -> xr.Dataset:
    """Event-walking twin of :func:`jitterlab.simulate` (one N; slow, for tests).

    Start points are drawn exactly as :func:`jitterlab.simulate` draws them for the
    same ``rng``; everything else is walked row by row.
    """
    from ._random import seed_from

    jitter = np.asarray(trace.jitter_seconds, dtype=float)
    gap = np.asarray(trace.gap_seconds, dtype=float)
    seed = seed_from(rng) if isinstance(start, str) else None
    offsets = draw_offsets(trace, int(n), start, rng=seed)
    period = float(jitter.sum() + gap.sum())
    n = len(offsets)

    def run_phases(jit, gp):
        compute = np.zeros((phases, n))
        ends = np.zeros((phases, n))
        begin = np.zeros(n)
        for phase in range(phases):
            if barrier is None:
                took = np.array([walk(jit, gp, o + begin[0], work) - (o + begin[0])
                                 for o in offsets])
                compute[phase] = took
                ends[phase] = begin + took.max()
            else:
                compute[phase], ends[phase] = _phase_with_tree(jit, gp, offsets, begin, work,
                                                               barrier)
            begin = ends[phase].copy()
        return compute, ends

    compute, ends = run_phases(jitter, gap)
    theta = np.diff(ends.max(axis=1), prepend=0.0)
    _, quiet_ends = run_phases(np.zeros(1), np.array([period]))
    quiet = np.diff(quiet_ends.max(axis=1), prepend=0.0)
    data = {"phase_time": ("phase", theta, {"units": "s"}),
            "slowdown": ((), theta.mean() / quiet.mean() - 1.0, {"units": "1"}),
            "coverage": ((), theta.sum() / period, {"units": "1"})}
    if detail:
        previous = np.vstack([np.zeros((1, n)), ends[:-1]])
        data["compute_time"] = (("phase", "task"), compute, {"units": "s"})
        data["wait_time"] = (("phase", "task"), ends - previous - compute, {"units": "s"})
    return xr.Dataset(data, coords={"phase": np.arange(phases), "n": int(n)})
