"""A co-scheduler's windows: deferred daemon work and where the high-priority windows start.

jitSim's co-scheduled jitter (seed 000, §3.5, Fig. 4): daemon work runs, first come first
served, only inside the low-priority windows (:func:`defer_to_low_windows`); the trace
records where its high-priority windows start (:func:`assemble_coscheduled`). Used by
:func:`~jitterlab.traces.synthetic.coscheduled_trace` and
:func:`~jitterlab.traces.jitsim_node.jitsim_coscheduled_trace`.
"""

from __future__ import annotations

import math

import numpy as np

from .noise_sources import assemble_trace, check_bounded_below
from .trace import Trace


def defer_to_low_windows(release, work, window, high, total):
    """Run the daemon activations, first come first served, only inside low windows.

    A low window of cycle k is [k·window + high, (k + 1)·window); work left at its end
    continues in the next one. Returns the pieces (start, duration).
    """
    starts, lengths = [], []
    clock = -math.inf
    for r, w in sorted(zip(release.tolist(), work.tolist(), strict=True)):
        clock = max(clock, r)
        done = 1e-12 * max(w, window)  # what is left after rounding in ``w -= run``
        while w > done:
            cycle = math.floor(clock / window)
            position = clock - cycle * window
            if window - position <= 1e-9 * window:  # at the end of a window (rounding)
                cycle, position = cycle + 1, 0.0
            if position < high:  # wait for the next low window
                position = high
            clock = cycle * window + position
            run = min(w, window - position)
            starts.append(clock)
            lengths.append(run)
            clock += run
            w -= run
    start = np.asarray(starts, dtype=np.float64)
    length = np.asarray(lengths, dtype=np.float64)
    # work pushed past the end of the timeline wraps to its beginning (whole windows)
    start = np.mod(start, total)
    return start, length


def check_windows(duration, window, low_fraction):
    """(duration, window, low_fraction) checked: a whole number of windows, 0 < f < 1."""
    duration = check_bounded_below("duration", duration, allow_low=False)
    window = check_bounded_below("window", window, allow_low=False)
    low_fraction = float(low_fraction)
    if not 0 < low_fraction < 1:
        raise ValueError(f"low_fraction must lie in (0, 1), got {low_fraction!r}")
    n_windows = round(duration / window)
    if n_windows < 1 or abs(n_windows * window - duration) > 1e-9 * duration:
        raise ValueError(f"duration ({duration!r} s) must be a whole number of windows "
                         f"({window!r} s)")
    return duration, window, low_fraction


def assemble_coscheduled(pieces, released, window, low_fraction, duration, attrs) -> Trace:
    """The trace of the events ``pieces`` and of the work ``released``, deferred to the
    low-priority windows; records where the high-priority windows start."""
    pieces = list(pieces)
    if released:
        release = np.concatenate([r for r, _ in released])
        work = np.concatenate([w for _, w in released])
        pieces.append(defer_to_low_windows(release, work, window,
                                            (1.0 - low_fraction) * window, duration))
    trace = assemble_trace(pieces, duration, attrs)
    window_offset = -trace.attrs["offset"] % window
    trace.attrs["window_offset"] = 0.0 if window_offset >= window else window_offset
    return trace
