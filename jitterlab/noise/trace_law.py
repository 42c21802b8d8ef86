"""The law of the noise δ met by work w from a uniformly random start in a jitter trace.

This is a fixed-work-quantum (FWQ) measurement emulated on a trace: the max-of-N of
this law is the distribution-based prediction for that trace (De & Mann, seed 000,
§3.4, for the work-conserving walk through the trace).
"""

from __future__ import annotations

import numpy as np

from ._base import check_positive
from .piecewise import Piecewise

__all__ = ["from_trace", "trace_positions"]


def trace_positions(jitter: np.ndarray, gap: np.ndarray):
    """Cumulative positions of a jitSim trace, in its unit.

    Returns
    -------
    starts : array, shape (E + 1,)
        Time at which row i's jitter begins; ``starts[E]`` is the cycle length T.
    computed : array, shape (E + 1,)
        Compute available before row i; ``computed[E]`` is the total gap G.
    """
    starts = np.concatenate([[0.0], np.cumsum(jitter + gap)])
    computed = np.concatenate([[0.0], np.cumsum(gap)])
    return starts, computed


def _time_at_compute(c, starts, computed, jitter):
    """Wall time (unrolled over cycles) at which the compute coordinate reaches c.

    ``c`` must not sit exactly on a gap boundary (callers use interval midpoints).
    """
    total_gap, period = computed[-1], starts[-1]
    cycles = np.floor(c / total_gap)
    rest = c - cycles * total_gap
    row = np.clip(np.searchsorted(computed, rest, "right") - 1, 0, jitter.size - 1)
    return cycles * period + starts[row] + jitter[row] + (rest - computed[row])


def _time_at_compute_left(c, starts, computed, jitter):
    """Earliest wall time at which the compute coordinate reaches c (unrolled).

    On a gap boundary this is the end of the gap, before the jitter that follows.
    """
    total_gap, period = computed[-1], starts[-1]
    cycles = np.ceil(c / total_gap) - 1
    rest = c - cycles * total_gap  # in (0, G]
    row = np.clip(np.searchsorted(computed, rest, "left") - 1, 0, jitter.size - 1)
    return cycles * period + starts[row] + jitter[row] + (rest - computed[row])


def from_trace(trace, work: float) -> Piecewise:
    """Exact law of the noise δ met by ``work`` from a uniformly random start in ``trace``.

    Parameters
    ----------
    trace : jitterlab.Trace
        A jitter trace (rows of jitter and the gap that follows); it wraps around.
    work : float
        Undisturbed compute time w; must be > 0 (a phase with no work meets no jitter
        by jitSim's rule, so there is no law to give). [s]

    Returns
    -------
    Piecewise
        The law of δ, the time to finish ``work`` minus ``work`` [s], like every law in
        :mod:`jitterlab.noise`; add ``work`` for the phase time w + δ. Point masses for
        starts inside gaps, uniform pieces for starts inside a jitter (which first
        wait out its remainder).

    Notes
    -----
    Measure a start by its compute coordinate c (gap time before it). For c inside a
    gap the finish lies at compute c + w, and the elapsed time is constant between the
    points where c or c + w crosses a gap boundary: those intervals become atoms of
    probability (length / T). A start inside jitter i waits out the remainder, so it
    adds a uniform piece of probability jitter_i / T. As in jitSim, a jitter that
    begins exactly when the work is done is not counted.

    Examples
    --------
    >>> import jitterlab as jl
    >>> trace = jl.Trace(jitter=[1e-6], gap=[99e-6])  # 1 µs detour every 100 µs
    >>> noise = jl.noise.from_trace(trace, work=50e-6)
    >>> round(noise.mean() * 1e6, 6)  # 1 µs half the time, plus the wait-out [µs]
    0.505
    >>> round((noise + 50e-6).mean() * 1e6, 6)  # the phase time w + δ [µs]
    50.505
    """
    from ..traces.trace import Trace  # the trace module imports this one

    if not isinstance(trace, Trace):
        raise TypeError(f"trace must be a jitterlab.Trace (see jl.Trace, jl.read_trace), "
                        f"got {type(trace).__name__}")
    work = check_positive("work", work)
    jitter = np.asarray(trace.jitter_seconds, dtype=float)
    gap = np.asarray(trace.gap_seconds, dtype=float)
    starts, computed = trace_positions(jitter, gap)
    period, total_gap = starts[-1], computed[-1]
    if not total_gap > 0:
        raise ValueError("the trace has no gap time: no compute can ever finish")

    # atoms: starts inside gaps, between consecutive breakpoints of c and of c + w
    breaks = np.unique(np.concatenate([computed[:-1], np.mod(computed[:-1] - work, total_gap),
                                       [total_gap]]))
    breaks = breaks[(breaks >= 0) & (breaks <= total_gap)]
    if breaks[0] > 0:
        breaks = np.concatenate([[0.0], breaks])
    widths = np.diff(breaks)
    keep = widths > 0
    middle = 0.5 * (breaks[:-1] + breaks[1:])[keep]
    elapsed = (_time_at_compute(middle + work, starts, computed, jitter)
               - _time_at_compute(middle, starts, computed, jitter))

    # uniform pieces: a start x inside jitter i finishes when the compute coordinate,
    # computed[i] at that jitter, has grown by w: D = finish − x, uniform over the jitter
    rows = np.flatnonzero(jitter > 0)
    finish = _time_at_compute_left(computed[rows] + work, starts, computed, jitter)
    low = finish - starts[rows] - jitter[rows]
    # the noise is elapsed − w; what is left of w by rounding of the cumulative
    # positions (a few ulps of the trace length) is no noise
    rounding = 64 * np.finfo(float).eps * (period + work)
    noise = elapsed - work
    noise[noise < rounding] = 0.0
    wait_out = np.maximum(low - work, 0.0)
    law = Piecewise(atom_values=noise, atom_weights=widths[keep] / period,
                    segment_low=wait_out, segment_high=wait_out + jitter[rows],
                    segment_weights=jitter[rows] / period)
    law.source = getattr(trace, "attrs", {}).get("source", "trace")
    law.work = work
    return law
