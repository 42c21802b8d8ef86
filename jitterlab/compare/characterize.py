"""Characterising a measured jitter trace: summary statistics and periodic noise sources.

:func:`summarize` condenses a trace into one labelled Series (event rate, noise
fraction, quantiles of the detours, the largest detours and when they happened).
:func:`find_periodic_sources` splits the noise of a trace into periodic sources (a
timer tick, periodic daemons) and an aperiodic remainder, and reports each one's share
of the total noise: the user-space counterpart of KTAU's attribution of noise to kernel
sources (Nataraj et al., seed 003), which needs a kernel instrumented with KTAU, while
this works on the detours a user-level benchmark (sysjitter, FWQ, a LogGOPSim trace)
sees.

References
----------
.. [1] A. Nataraj, A. Morris, A. Malony, M. Sottile, P. Beckman, "The Ghost in the
   Machine: Observing the Effects of Kernel Operation on Parallel Application
   Performance", SC07 (seed 003): noise sources (global and local timer interrupts,
   preemption) measured separately, and the delay attributed to each.
.. [2] P. De, V. Mann, "jitSim", Euro-Par 2010 workshops (seed 000), §1: timer ticks and
   periodic daemons as the main sources of OS jitter.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import fft, optimize, stats

from ..traces.trace import Trace
from .stationarity import stationarity

__all__ = ["summarize", "find_periodic_sources", "label_events", "stationarity"]

#: quantile levels of the detours reported by :func:`summarize`
SUMMARY_QUANTILES = {"p50_jitter": 0.5, "p90_jitter": 0.9, "p99_jitter": 0.99,
                     "p999_jitter": 0.999}

# spectrum of the event train: time bins per shortest period, zero padding, largest FFT
_BINS_PER_PERIOD = 16
_PAD = 2
_MAX_FFT_BINS = 2**22
#: smallest number of frequency bins over which the background power is a median
_BAND_MIN_BINS = 64
#: relative width of the background bands in frequency
_BAND_RATIO = 1.15
#: a subharmonic f/k replaces the peak f when its power reaches this share of the peak's
#: (the random part of the spectrum moves the power of equal harmonics by a factor ~2)
_SUBHARMONIC_SHARE = 0.3
#: the automatic tolerance is at most period / this (a lattice is sharp or it is none)
_MAX_WIDTH_DIVISOR = 50
#: rejected peaks tolerated before the search stops
_MAX_REJECTED = 8


def _check_trace(trace) -> Trace:
    if not isinstance(trace, Trace):
        raise TypeError(f"expected a jitterlab Trace, got {type(trace).__name__}")
    return trace


def _absolute(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Starts on the trace's absolute timeline (``attrs['offset']`` + starts) and
    durations, both in seconds."""
    return trace.offset_seconds() + trace.starts, np.asarray(trace.jitter_seconds)


# --------------------------------------------------------------------------------------
# summary
# --------------------------------------------------------------------------------------
def summarize(trace: Trace, top: int = 5) -> pd.Series:
    """Summary statistics of a jitter trace, with its largest detours.

    Parameters
    ----------
    trace : Trace
        The trace (any unit; results are in seconds).
    top : int, default 5
        How many of the largest detours to list. [-]

    Returns
    -------
    pandas.Series
        float64: ``n_events``, ``duration`` (one replay cycle) [s], ``event_rate``
        [1/s], ``noise_fraction`` (Σ jitter / duration) [1], ``total_jitter``,
        ``mean_jitter``, ``p50_jitter``, ``p90_jitter``, ``p99_jitter``,
        ``p999_jitter``, ``max_jitter`` [s], ``mean_gap`` [s], ``longest_gap`` [s];
        then for k = 1..top ``largest_k`` (the k-th longest detour) [s] and
        ``largest_k_start`` (when it began on the trace's absolute timeline,
        ``attrs["offset"]`` included) [s] (NaN when the trace has fewer events). Units
        in ``series.attrs["units"]``.

    Notes
    -----
    Quantiles interpolate linearly between order statistics of the event durations.
    Ties among the largest detours are listed in time order.

    Examples
    --------
    >>> import jitterlab as jl
    >>> from jitterlab.compare.characterize import summarize
    >>> trace = jl.Trace(jitter=[1e-6, 5e-6, 2e-6], gap=[1e-3, 1e-3, 1e-3])
    >>> s = summarize(trace, top=2)
    >>> float(s["largest_1"]), float(s["largest_1_start"])
    (5e-06, 0.001001)
    """
    trace = _check_trace(trace)
    top = int(top)
    if top < 0:
        raise ValueError(f"top must be >= 0, got {top}")
    stats_ = trace.stats()
    start, jitter = _absolute(trace)
    values = {key: float(stats_[key]) for key in
              ("n_events", "duration", "event_rate", "noise_fraction", "total_jitter",
               "mean_jitter")}
    units = {"n_events": "1", "duration": "s", "event_rate": "1/s", "noise_fraction": "1",
             "total_jitter": "s", "mean_jitter": "s"}
    quantiles = np.quantile(jitter, list(SUMMARY_QUANTILES.values()))
    for key, value in zip(SUMMARY_QUANTILES, quantiles.tolist(), strict=True):
        values[key], units[key] = value, "s"
    values.update(max_jitter=float(jitter.max()), mean_gap=float(stats_["mean_gap"]),
                  longest_gap=float(np.max(trace.gap_seconds)))
    units.update(max_jitter="s", mean_gap="s", longest_gap="s")
    order = np.lexsort((start, -jitter))[:top]
    for k in range(top):
        found = k < order.size
        values[f"largest_{k + 1}"] = float(jitter[order[k]]) if found else math.nan
        values[f"largest_{k + 1}_start"] = float(start[order[k]]) if found else math.nan
        units[f"largest_{k + 1}"] = units[f"largest_{k + 1}_start"] = "s"
    series = pd.Series(values, dtype=np.float64, name=trace.attrs.get("source"))
    series.attrs["units"] = units
    return series


# --------------------------------------------------------------------------------------
# the spectrum of the event train
# --------------------------------------------------------------------------------------
class _Spectrum:
    """Power of the train of event starts on a frequency grid, with a robust background.

    The starts are counted in bins of ``dt`` (each event weighs 1, or its ``weight``);
    the power is |FFT|² of the binned train (zero-padded ``_PAD`` times), summed over
    ``segments`` consecutive segments when the trace is too long for one FFT. ``z`` is
    the power over its median in bands of ~15 % of the frequency (scaled to the median
    of Gamma(K, 1)): for events without periodicity it is Gamma(K, 1) distributed, K the
    number of segments.
    """

    def __init__(self, starts: np.ndarray, weights: np.ndarray | None, span: float,
                 f_low: float, f_high: float):
        dt = 1.0 / (_BINS_PER_PERIOD * f_high)
        n_bins = max(int(math.ceil(span / dt)), 1)
        segment = min(n_bins, _MAX_FFT_BINS // _PAD)
        self.segments = int(math.ceil(n_bins / segment))
        self.segment_length = segment * dt
        counts = np.bincount(np.minimum((starts / dt).astype(np.int64), n_bins - 1),
                             weights=weights,
                             minlength=self.segments * segment).astype(np.float64)
        size = fft.next_fast_len(_PAD * segment, real=True)
        self.freq = np.fft.rfftfreq(size, dt)
        power = np.zeros(self.freq.size)
        for piece in counts.reshape(self.segments, segment):
            if piece.any():
                power += np.abs(fft.rfft(piece, n=size)) ** 2
        low = int(np.searchsorted(self.freq, f_low, "left"))
        high = int(np.searchsorted(self.freq, f_high, "right"))
        self.low, self.high = low, high
        self.z = np.zeros(self.freq.size)
        background = self._background(power, low, high)
        with np.errstate(divide="ignore", invalid="ignore"):
            self.z[low:high] = np.where(background > 0, power[low:high] / background, 0.0)
        # independent frequencies searched, for the false-alarm level
        self.n_independent = max((high - low) / _PAD, 1.0)

    def _background(self, power: np.ndarray, low: int, high: int) -> np.ndarray:
        scale = stats.gamma.median(self.segments)
        out = np.empty(high - low)
        start = low
        while start < high:
            stop = max(start + _BAND_MIN_BINS, int(math.ceil(start * _BAND_RATIO)))
            if high - stop < _BAND_MIN_BINS:
                stop = high
            out[start - low:stop - low] = np.median(power[start:stop]) / scale
            start = stop
        return out

    def threshold(self, false_alarm: float) -> float:
        """z above which a peak is significant at ``false_alarm`` over the whole grid."""
        return float(stats.gamma.isf(false_alarm / self.n_independent, self.segments))

    def peak_near(self, index: float, reach: int = _PAD) -> int:
        lo = max(int(math.floor(index)) - reach, self.low)
        hi = min(int(math.ceil(index)) + reach + 1, self.high)
        if hi <= lo:
            return -1
        return lo + int(np.argmax(self.z[lo:hi]))


def _phasor(starts: np.ndarray, frequency: float, weights: np.ndarray | None) -> complex:
    """Σ w·exp(2πi f s) (w = 1 without weights)."""
    phase = 2.0 * np.pi * np.mod(frequency * starts, 1.0)
    if weights is None:
        return complex(float(np.cos(phase).sum()), float(np.sin(phase).sum()))
    return complex(float(np.dot(weights, np.cos(phase))), float(np.dot(weights, np.sin(phase))))


def _coherence(starts: np.ndarray, frequency, weights: np.ndarray | None = None) -> np.ndarray:
    """|Σ w·exp(2πi f s)| for each frequency f."""
    frequency = np.atleast_1d(np.asarray(frequency, dtype=np.float64))
    return np.array([abs(_phasor(starts, f, weights)) for f in frequency.tolist()])


def _refine_frequency(starts: np.ndarray, weights: np.ndarray | None, span: float,
                      frequency: float, grid_step: float) -> float:
    """The frequency near ``frequency`` that maximises the coherence of all starts."""
    step = 1.0 / (8.0 * span)
    candidates = frequency + np.arange(-grid_step, grid_step + step / 2, step)
    candidates = candidates[candidates > 0]
    values = _coherence(starts, candidates, weights)
    best = float(candidates[int(np.argmax(values))])
    result = optimize.minimize_scalar(lambda f: -abs(_phasor(starts, f, weights)),
                                      bounds=(max(best - step, best / 2), best + step),
                                      method="bounded",
                                      options={"xatol": 1e-4 / span})
    return float(result.x) if -result.fun >= values.max() else best


def _residuals(starts: np.ndarray, origin: float, period: float):
    """Cycle index of the nearest lattice point origin + k·period, and the offset to it."""
    cycle = np.rint((starts - origin) / period)
    return cycle, starts - (origin + cycle * period)


def _cluster_width(residuals: np.ndarray, period: float, floor: float) -> tuple[float, float]:
    """Half-width of the cluster of residuals around zero, and its excess count.

    The residuals of events not tied to the lattice spread uniformly over one period;
    their density comes from the outer half (|r| > period/4). Counting the events within
    ±w for growing w (from ``floor`` to period/50), the excess e(w) over that background
    grows while the window takes in the cluster and then only fluctuates with the
    background count b. The first plateau is the smallest w with a clear excess that
    widening the window four times does not raise by more than max(3·√b, 5 %), so that
    a second cluster at another phase stays out; the half-width is then the narrowest
    window up to 4w holding all but max(3·√b, 1 %) of what the 4w window holds (about
    2.6 standard deviations for a normal spread of the starts). Without a plateau it is
    the smallest w within max(3·√b, 5 %) of the largest excess.
    """
    magnitude = np.sort(np.abs(residuals))
    outer = np.count_nonzero(magnitude > period / 4)
    density = outer / (period / 2)  # events per second of residual
    top_width = period / _MAX_WIDTH_DIVISOR
    widths = np.geomspace(min(floor, top_width), top_width, 64)
    inside = np.searchsorted(magnitude, widths, "right")
    background = density * 2 * widths
    excess = inside - background
    if float(excess.max()) <= 0:
        return float(widths[0]), 0.0
    ratio = widths[-1] / widths[0]
    reach = widths.size if ratio <= 1 else int(math.ceil(math.log(4.0) / math.log(ratio)
                                                           * (widths.size - 1)))
    margin = np.maximum(3.0 * np.sqrt(background), 0.05 * np.maximum(excess, 0.0))
    ahead = np.minimum(np.arange(widths.size) + reach, widths.size - 1)
    clear = excess >= 3.0 * np.sqrt(background) + 3.0
    plateau = clear & (excess[ahead] - excess <= margin[ahead])
    if plateau.any():
        # the first plateau; within it, the narrowest window that holds all but the
        # background noise (and 1 %) of what the window four times as wide holds
        k = int(np.argmax(plateau))
        end = int(ahead[k])
        slack = max(3.0 * math.sqrt(background[end]), 0.01 * excess[end])
        k += int(np.argmax(excess[k:end + 1] >= excess[end] - slack))
        return float(widths[k]), float(excess[k])
    top = int(np.argmax(excess))
    k = int(np.argmax(excess >= excess[top] - margin[top]))
    return float(widths[k]), float(excess[k])


def _common_multiple(cycle: np.ndarray, share: float = 0.9) -> tuple[int, int]:
    """(m, c) when at least ``share`` of the cycle indices are ≡ c (mod m), m largest.

    A lock on a harmonic h/P of a source of period P puts the source's events on every
    h-th lattice point: their cycle indices share one residue modulo h. Candidates are
    the divisors of the most common differences between consecutive cycle indices.
    """
    unique = np.unique(cycle)
    if unique.size < 3:
        return 1, 0
    steps, counts = np.unique(np.diff(unique), return_counts=True)
    candidates: set[int] = set()
    for step in steps[np.argsort(counts)[::-1][:3]].tolist():
        step = int(step)
        for d in range(2, math.isqrt(step) + 1):
            if step % d == 0:
                candidates.update((d, step // d))
        if step >= 2:
            candidates.add(step)
    best, residue = 1, 0
    for m in sorted(candidates):
        tally = np.bincount(np.mod(cycle.astype(np.int64), m), minlength=m)
        if tally.max() >= share * cycle.size and m > best:
            best, residue = m, int(np.argmax(tally))
    return best, residue


def _track(starts: np.ndarray, weights: np.ndarray | None, span: float, period: float,
           origin: float, floor: float) -> tuple[float, float]:
    """Follow the densest family of events that drifts linearly against the lattice.

    A frequency from the coherence of all starts is a compromise when two families of
    nearly the same period (closer than 1/span) share the train: each then drifts by up
    to half a period against the lattice over the trace. The offsets r of the starts
    are binned (bins of period/400, at least 2·``floor``) after removing a trial drift
    b·t, for drifts up to half a period over the trace; the drift and bin holding the
    most events (three neighbouring bins together) give the family, and a least-squares
    fit of its starts against their cycle numbers gives its own period and origin.
    With ``weights`` the bins hold the summed weights (durations) instead of counts.
    """
    n_bins = int(min(max(period / (2 * floor), 8), 400))
    width = period / n_bins
    time = starts - span / 2
    _, residual = _residuals(starts, origin, period)
    drifts = np.arange(-n_bins // 2, n_bins // 2 + 1) * (width / span)
    best, best_drift, best_bin = -1, 0.0, 0
    for drift in drifts.tolist():
        shifted = np.mod(residual - drift * time, period)
        counts = np.bincount(np.minimum((shifted / width).astype(np.int64), n_bins - 1),
                             weights=weights, minlength=n_bins)
        smooth = counts + np.roll(counts, 1) + np.roll(counts, -1)
        k = int(np.argmax(smooth))
        if smooth[k] > best:
            best, best_drift, best_bin = float(smooth[k]), drift, k
    centre = (best_bin + 0.5) * width
    offset = np.mod(residual - best_drift * time - centre + period / 2, period) - period / 2
    family = np.abs(offset) <= 1.5 * width
    if np.count_nonzero(family) < 3:
        return period, origin
    # cycle numbers on the drifting lattice, then its own period and origin
    expected = origin + centre + best_drift * time
    cycle = np.rint((starts[family] - expected[family]) / period)
    if np.unique(cycle).size < 2:
        return period, origin
    slope, intercept = np.polyfit(cycle, starts[family], 1)
    return float(slope), float(intercept)


class _Lock(NamedTuple):
    period: float
    origin: float
    width: float
    selected: np.ndarray
    cycle: np.ndarray
    residual: np.ndarray
    excess: float
    background: float


def _lock(starts: np.ndarray, weights: np.ndarray | None, span: float, frequency: float,
          tolerance: float | None, floor: float, iterations: int = 4) -> _Lock:
    """Events on a lattice origin + k·period near ``frequency``.

    Returns the lattice, the half-width, which events lie on it, every event's cycle
    number and offset, the excess of events within the half-width over the chance
    coincidences of the other events, and that chance count.
    """
    period = 1.0 / frequency
    phasor = _phasor(starts, frequency, weights)
    origin = (math.atan2(phasor.imag, phasor.real) / (2.0 * np.pi)) % 1.0 * period
    period, origin = _track(starts, weights, span, period, origin, floor)
    width = tolerance or period / _MAX_WIDTH_DIVISOR
    selected = np.zeros(starts.size, dtype=bool)
    for _ in range(iterations):
        cycle, residual = _residuals(starts, origin, period)
        if tolerance is None:
            width, _ = _cluster_width(residual, period, floor)
        selected = np.abs(residual) <= width
        if np.count_nonzero(selected) < 2 or np.unique(cycle[selected]).size < 2:
            break
        slope, intercept = np.polyfit(cycle[selected], starts[selected], 1)
        period, origin = float(slope), float(intercept)
    cycle, residual = _residuals(starts, origin, period)
    selected = np.abs(residual) <= width
    density = np.count_nonzero(np.abs(residual) > period / 4) / (period / 2)
    background = density * 2 * width
    excess = np.count_nonzero(selected) - background
    return _Lock(period, origin, width, selected, cycle, residual, float(excess),
                 float(background))


# --------------------------------------------------------------------------------------
# periodic sources
# --------------------------------------------------------------------------------------
_COLUMNS = {
    "period": ("s", "time between two events of the source"),
    "frequency": ("Hz", "1 / period"),
    "phase": ("s", "start of the first lattice point on the trace's timeline, in [0, period)"),
    "timing_spread": ("s", "robust standard deviation of the event starts about the lattice"),
    "tolerance": ("s", "largest offset from the lattice of an event assigned to the source"),
    "n_phases": ("1", "clusters of events at distinct phases of the same period (a tick "
                      "and its follow-up work)"),
    "regularity": ("1", "fraction of the periods spanned by the trace that hold an event "
                        "of the source"),
    "n_events": ("1", "events assigned to the source"),
    "events_per_second": ("1/s", "events per second of trace"),
    "typical_duration": ("s", "median duration of the source's events"),
    "mean_duration": ("s", "mean duration of the source's events"),
    "total_jitter": ("s", "sum of the durations of the source's events"),
    "share": ("1", "fraction of the total noise (Σ jitter) due to the source"),
    "significance": ("1", "peak power over background, in units of the detection "
                          "threshold (>= 1 for every detected source)"),
}


def find_periodic_sources(trace: Trace, min_period: float = 1e-3, max_period: float = 10.0,
                          **options) -> pd.DataFrame:
    """Periodic noise sources in a trace, and the share of the noise each one causes.

    Parameters
    ----------
    trace : Trace
        The measured (or generated) trace; any unit, results in seconds.
    min_period, max_period : float, default 1e-3 and 10
        Range of periods searched; the events of faster sources count as aperiodic.
        [s]
    max_sources : int, default 10
        At most this many periodic sources are reported. [-]
    false_alarm : float, default 1e-3
        Probability that events without any periodicity produce a detection, over the
        whole frequency range searched. [1]
    min_events : int, default 10
        Fewest events (in excess of chance coincidences) a source needs. [-]
    min_cycles : int, default 5
        The trace must span at least this many periods of a source. [-]
    min_regularity : float, default 0.2
        Fewest periods with an event of the source, as a fraction of the periods the
        trace spans; rarer lattice coincidences count as aperiodic. [1]
    tolerance : float, optional
        Largest offset of an event start from the source's lattice for the event to
        count as the source's; by default estimated for each source from the spread of
        the offsets (see Notes). [s]
    min_tolerance : float, default 1e-6
        Smallest automatic tolerance (the timing resolution that is trusted). [s]

    Returns
    -------
    pandas.DataFrame
        One row per periodic source (index ``source``: ``"periodic 1"``, ... by
        decreasing share) and a last row ``"aperiodic"`` with the events assigned to
        no source (period and the other lattice columns NaN). Columns: ``period`` [s],
        ``frequency`` [Hz], ``phase`` [s], ``timing_spread`` [s], ``tolerance`` [s],
        ``n_phases`` [-], ``regularity`` [1], ``n_events``, ``events_per_second``
        [1/s], ``typical_duration`` [s], ``mean_duration`` [s], ``total_jitter`` [s],
        ``share`` [1] (the shares add up to one; NaN for a trace without noise) and
        ``significance`` [1] (the detection peak over the threshold).
        ``df.attrs`` hold ``units``, ``descriptions`` and the search parameters.

    Notes
    -----
    1. *Detection.* The event starts are binned at min_period/16 and the power
       spectrum of this train is computed by FFT (Welch-averaged over segments for
       very long traces), once counting events and once weighting them by their
       durations (so that a rare but long daemon stands out as well as a frequent
       short tick). A source of period P puts power at 1/P and its harmonics; random
       arrivals give a noisy floor. The power is divided by its median in bands of
       about 15 % of the frequency, which makes it Gamma(K, 1) distributed (K
       segments) for events without periodicity, even when they come in bursts or
       their rate drifts. The strongest peak is significant when its probability,
       corrected for the number of independent frequencies searched and the two
       spectra, is below ``false_alarm``. A pulse train has the same power at all its
       harmonics, so the lowest subharmonic f/k with at least 30 % of the peak's power
       is taken as the fundamental.
    2. *Lattice.* The frequency is refined by maximising the phase coherence
       |Σ w_j exp(2πi f s_j)| of the starts, whose phase gives a lattice origin t₀.
       Two sources closer in frequency than 1/duration blur into one peak, so the
       densest family of starts is then followed as it drifts against that lattice
       (a search over linear drifts of the offsets) and the lattice t₀ + kP is fitted
       to that family by least squares. Each start gets its cycle k = round((s − t₀)/P)
       and offset r = s − t₀ − kP; events with |r| <= tolerance belong to the source,
       and t₀ and P are refitted on them (four rounds). The automatic tolerance is the
       first plateau of the excess of small offsets over the uniform background of the
       other events (see ``_cluster_width``), at least ``min_tolerance`` and at most
       P/50. If the events found sit on every m-th lattice point only, the lattice was
       a harmonic and P becomes m·P.
    3. *Acceptance.* A lattice becomes a source when its excess over chance
       coincidences is at least ``min_events`` and at least the chance count, and its
       regularity at least ``min_regularity``; otherwise the peak is set aside and
       the next one is tried.
    4. *Iteration.* The source's events are removed and the search repeats on the
       rest, so weaker sources hidden under a strong one (a daemon under the timer
       tick) are found in turn, until no significant peak remains or ``max_sources``
       are found. Sources whose lattices stay within their tolerances of each other
       over the whole trace run on one clock (a tick and its follow-up work) and are
       reported as one source with ``n_phases`` > 1. What remains is aperiodic.
    5. *Share.* A source's share is the sum of its event durations over the sum of
       all durations. An aperiodic detour that merged with a periodic one (one event
       in the trace) counts for the periodic source.

    KTAU attributes kernel time to its sources by instrumenting the kernel (Nataraj et
    al., seed 003); this is the user-space counterpart: it attributes the detours a
    user-level loop sees to periodic sources by their timing alone, so two sources of
    the same period and phase are one source here.

    References
    ----------
    .. [1] A. Nataraj et al., "The Ghost in the Machine", SC07 (seed 003).

    Examples
    --------
    >>> import jitterlab as jl
    >>> from jitterlab.compare.characterize import find_periodic_sources
    >>> trace = jl.synthetic_trace(duration=10.0, rng=1)
    >>> sources = find_periodic_sources(trace)
    >>> [round(p, 6) for p in sources["period"].dropna()]
    [0.004, 0.1]
    """
    return _find_sources(trace, min_period, max_period, **options)[0]


def label_events(trace: Trace, min_period: float = 1e-3, max_period: float = 10.0,
                 **options) -> tuple[pd.DataFrame, np.ndarray]:
    """The periodic sources of a trace and, for every event, the source it belongs to.

    Returns ``(sources, labels)``: ``sources`` as :func:`find_periodic_sources` returns
    it, and ``labels``, one per row of the trace, the index of ``sources`` the event was
    assigned to ("periodic 1", ..., or "aperiodic"). Used to split the noise of an event
    trace by source (:func:`jitterlab.compare.estimate.split_noise`). Parameters as for
    :func:`find_periodic_sources`.
    """
    return _find_sources(trace, min_period, max_period, **options)


def _find_sources(trace: Trace, min_period: float = 1e-3, max_period: float = 10.0,
                  *, max_sources: int = 10, false_alarm: float = 1e-3,
                  min_events: int = 10, min_cycles: int = 5,
                  min_regularity: float = 0.2,
                  tolerance: float | None = None,
                  min_tolerance: float = 1e-6) -> tuple[pd.DataFrame, np.ndarray]:
    """:func:`find_periodic_sources` and the label of every event."""
    trace = _check_trace(trace)
    min_period, max_period = float(min_period), float(max_period)
    if not (math.isfinite(min_period) and math.isfinite(max_period)
            and 0 < min_period < max_period):
        raise ValueError(f"need 0 < min_period < max_period, got {min_period!r} and "
                         f"{max_period!r}")
    if not 0 < false_alarm < 1:
        raise ValueError(f"false_alarm must lie in (0, 1), got {false_alarm!r}")
    if tolerance is not None and not tolerance > 0:
        raise ValueError(f"tolerance must be > 0 when given, got {tolerance!r}")
    start, jitter = _absolute(trace)
    span = trace.duration
    origin_time = float(start.min())
    relative = start - origin_time
    f_high = 1.0 / min_period
    f_low = max(1.0 / max_period, min_cycles / span)
    remaining = np.ones(start.size, dtype=bool)
    found: list[dict] = []
    rejected: list[tuple[float, float]] = []
    spectra = None
    while len(found) < max_sources and f_low < f_high:
        idx = np.flatnonzero(remaining)
        if idx.size < max(min_events, 3):
            break
        if spectra is None:  # the events changed: the spectra of counts and of durations
            spectra = [_Spectrum(relative[idx], None, span, f_low, f_high)]
            if np.ptp(jitter[idx]) > 0:
                spectra.append(_Spectrum(relative[idx], jitter[idx], span, f_low, f_high))
            threshold = spectra[0].threshold(false_alarm / len(spectra))
            for spectrum in spectra:
                for lo, hi in rejected:
                    spectrum.z[(spectrum.freq >= lo) & (spectrum.freq <= hi)] = 0.0
        peaks = [int(np.argmax(spectrum.z)) for spectrum in spectra]
        mode = int(np.argmax([spectrum.z[k] for spectrum, k in zip(spectra, peaks,
                                                                    strict=True)]))
        spectrum, peak = spectra[mode], peaks[mode]
        weights = None if mode == 0 else jitter[idx]
        z = spectrum.z
        if z[peak] < threshold:
            break
        # the fundamental: the lowest subharmonic that carries much of the power
        best = peak
        for k in range(2, int(spectrum.freq[peak] / f_low) + 1):
            candidate = spectrum.peak_near(peak / k)
            if candidate >= 0 and z[candidate] >= max(_SUBHARMONIC_SHARE * z[peak],
                                                      threshold):
                best = candidate
        grid_step = float(spectrum.freq[1])
        frequency = _refine_frequency(relative[idx], weights, span,
                                      float(spectrum.freq[best]), grid_step)
        lock = _lock(relative[idx], weights, span, frequency, tolerance, min_tolerance)
        multiple, _ = _common_multiple(lock.cycle[lock.selected])
        while multiple > 1 and span / (lock.period * multiple) >= min_cycles:
            # locked on a harmonic: the source's events sit on every m-th lattice point
            lock = _lock(relative[idx], weights, span, 1.0 / (lock.period * multiple),
                         tolerance, min_tolerance)
            multiple, _ = _common_multiple(lock.cycle[lock.selected])
        n_selected = int(np.count_nonzero(lock.selected))
        regularity = (np.unique(lock.cycle[lock.selected]).size
                      / max(round(span / lock.period), 1))
        if (lock.excess < min_events or n_selected < min_events
                or lock.excess < lock.background or span / lock.period < min_cycles
                or regularity < min_regularity
                or lock.period < min_period * (1 - 1e-6)):
            for index in {peak, best}:
                rejected.append((spectrum.freq[index] - 2 * grid_step,
                                 spectrum.freq[index] + 2 * grid_step))
                for other in spectra:
                    other.z[(other.freq >= rejected[-1][0])
                            & (other.freq <= rejected[-1][1])] = 0.0
            if len(rejected) > _MAX_REJECTED:
                break
            continue
        found.append({"period": lock.period, "origin": lock.origin, "tolerance": lock.width,
                      "members": idx[lock.selected], "offsets": lock.residual[lock.selected],
                      "significance": float(z[peak] / threshold)})
        remaining[idx[lock.selected]] = False
        spectra = None
    groups = _merge_same_clock(found, span)
    rows = [_source_row(group, relative, jitter, span, origin_time) for group in groups]
    order = sorted(range(len(rows)), key=lambda g: -rows[g]["total_jitter"])
    rows = [rows[g] for g in order]
    labels = np.full(start.size, "aperiodic", dtype=object)
    for place, g in enumerate(order):
        for detection in groups[g]:
            labels[detection["members"]] = f"periodic {place + 1}"
    rest = jitter[remaining]
    rows.append({
        "period": math.nan, "frequency": math.nan, "phase": math.nan,
        "timing_spread": math.nan, "tolerance": math.nan, "n_phases": math.nan,
        "regularity": math.nan, "n_events": float(rest.size),
        "events_per_second": rest.size / span,
        "typical_duration": float(np.median(rest)) if rest.size else math.nan,
        "mean_duration": float(rest.mean()) if rest.size else math.nan,
        "total_jitter": float(rest.sum()), "significance": math.nan,
    })
    total_jitter = float(jitter.sum())
    for row in rows:
        row["share"] = row["total_jitter"] / total_jitter if total_jitter > 0 else math.nan
    index = [f"periodic {i}" for i in range(1, len(rows))] + ["aperiodic"]
    frame = pd.DataFrame(rows, index=pd.Index(index, name="source"), columns=list(_COLUMNS))
    frame.attrs = {"units": {k: v[0] for k, v in _COLUMNS.items()},
                   "descriptions": {k: v[1] for k, v in _COLUMNS.items()},
                   "min_period": min_period, "max_period": max_period,
                   "false_alarm": false_alarm, "min_events": min_events,
                   "min_cycles": min_cycles, "min_regularity": min_regularity,
                   "tolerance": tolerance,
                   "min_tolerance": min_tolerance, "trace_source": trace.attrs.get("source")}
    return frame, labels


def _merge_same_clock(found: list[dict], span: float) -> list[list[dict]]:
    """Group detections whose lattices have the same period to within their tolerances
    over the whole trace (one clock, several phases: a tick and its follow-up work)."""
    groups: list[list[dict]] = []
    for item in sorted(found, key=lambda d: -d["members"].size):
        for group in groups:
            lead = group[0]
            drift = abs(item["period"] - lead["period"]) * span / lead["period"]
            if drift <= item["tolerance"] + lead["tolerance"]:
                group.append(item)
                break
        else:
            groups.append([item])
    return groups


def _source_row(group: list[dict], relative: np.ndarray, jitter: np.ndarray, span: float,
                origin_time: float) -> dict:
    """The columns of one source (a group of detections on one clock)."""
    lead = max(group, key=lambda d: float(jitter[d["members"]].sum()))
    period, origin = lead["period"], lead["origin"]
    members = np.concatenate([d["members"] for d in group])
    durations = jitter[members]
    offsets = lead["offsets"]
    spread = 1.4826 * float(np.median(np.abs(offsets - np.median(offsets))))
    cycle = np.floor((relative[members] - origin + lead["tolerance"]) / period)
    cycles_spanned = max(round(span / period), 1)
    return {
        "period": period, "frequency": 1.0 / period,
        "phase": float((origin + origin_time) % period),
        "timing_spread": spread, "tolerance": lead["tolerance"],
        "n_phases": float(len(group)),
        "regularity": min(np.unique(cycle).size / cycles_spanned, 1.0),
        "n_events": float(members.size), "events_per_second": members.size / span,
        "typical_duration": float(np.median(durations)),
        "mean_duration": float(durations.mean()),
        "total_jitter": float(durations.sum()),
        "significance": max(d["significance"] for d in group),
    }
