"""Periodic detours in an event train: its spectrum, and locking a source's phase.

The tools of :func:`jitterlab.characterize.find_periodic_sources`: the power spectrum of
the detour starts against a local background (:class:`Spectrum`), the coherence of the
starts at a frequency (:func:`coherence`, :func:`refine_frequency`), and the lock of a
periodic source (:func:`lock`: its period, phase and the starts that belong to it, tracked
through slow drift by :func:`track`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy import fft, optimize, stats

__all__ = ["Spectrum", "Lock", "lock_source", "coherence", "refine_frequency", "track"]

# spectrum of the event train: time bins per shortest period, zero padding, largest FFT
# spectrum of the event train: time bins per shortest period, zero padding, largest FFT
BINS_PER_PERIOD = 16


PAD = 2


MAX_FFT_BINS = 2**22


#: smallest number of frequency bins over which the background power is a median
BAND_MIN_BINS = 64


#: relative width of the background bands in frequency
BAND_RATIO = 1.15


#: the automatic tolerance is at most period / this (a lattice is sharp or it is none)
MAX_WIDTH_DIVISOR = 50


# --------------------------------------------------------------------------------------
# the spectrum of the event train
# --------------------------------------------------------------------------------------
class Spectrum:
    """Power of the train of event starts on a frequency grid, with a robust background.

    The starts are counted in bins of ``dt`` (each event weighs 1, or its ``weight``);
    the power is |FFT|² of the binned train (zero-padded ``PAD`` times), summed over
    ``segments`` consecutive segments when the trace is too long for one FFT. ``z`` is
    the power over its median in bands of ~15 % of the frequency (scaled to the median
    of Gamma(K, 1)): for events without periodicity it is Gamma(K, 1) distributed, K the
    number of segments.
    """

    def __init__(self, starts: np.ndarray, weights: np.ndarray | None, span: float,
                 f_low: float, f_high: float):
        dt = 1.0 / (BINS_PER_PERIOD * f_high)
        n_bins = max(int(math.ceil(span / dt)), 1)
        segment = min(n_bins, MAX_FFT_BINS // PAD)
        self.segments = int(math.ceil(n_bins / segment))
        self.segment_length = segment * dt
        counts = np.bincount(np.minimum((starts / dt).astype(np.int64), n_bins - 1),
                             weights=weights,
                             minlength=self.segments * segment).astype(np.float64)
        size = fft.next_fast_len(PAD * segment, real=True)
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
        self.n_independent = max((high - low) / PAD, 1.0)

    def _background(self, power: np.ndarray, low: int, high: int) -> np.ndarray:
        scale = stats.gamma.median(self.segments)
        out = np.empty(high - low)
        start = low
        while start < high:
            stop = max(start + BAND_MIN_BINS, int(math.ceil(start * BAND_RATIO)))
            if high - stop < BAND_MIN_BINS:
                stop = high
            out[start - low:stop - low] = np.median(power[start:stop]) / scale
            start = stop
        return out

    def threshold(self, false_alarm: float) -> float:
        """z above which a peak is significant at ``false_alarm`` over the whole grid."""
        return float(stats.gamma.isf(false_alarm / self.n_independent, self.segments))

    def peak_near(self, index: float, reach: int = PAD) -> int:
        lo = max(int(math.floor(index)) - reach, self.low)
        hi = min(int(math.ceil(index)) + reach + 1, self.high)
        if hi <= lo:
            return -1
        return lo + int(np.argmax(self.z[lo:hi]))


def mean_phasor(starts: np.ndarray, frequency: float, weights: np.ndarray | None) -> complex:
    """Σ w·exp(2πi f s) (w = 1 without weights)."""
    phase = 2.0 * np.pi * np.mod(frequency * starts, 1.0)
    if weights is None:
        return complex(float(np.cos(phase).sum()), float(np.sin(phase).sum()))
    return complex(float(np.dot(weights, np.cos(phase))), float(np.dot(weights, np.sin(phase))))


def coherence(starts: np.ndarray, frequency, weights: np.ndarray | None = None) -> np.ndarray:
    """|Σ w·exp(2πi f s)| for each frequency f."""
    frequency = np.atleast_1d(np.asarray(frequency, dtype=np.float64))
    return np.array([abs(mean_phasor(starts, f, weights)) for f in frequency.tolist()])


def refine_frequency(starts: np.ndarray, weights: np.ndarray | None, span: float,
                      frequency: float, grid_step: float) -> float:
    """The frequency near ``frequency`` that maximises the coherence of all starts."""
    step = 1.0 / (8.0 * span)
    candidates = frequency + np.arange(-grid_step, grid_step + step / 2, step)
    candidates = candidates[candidates > 0]
    values = coherence(starts, candidates, weights)
    best = float(candidates[int(np.argmax(values))])
    result = optimize.minimize_scalar(lambda f: -abs(mean_phasor(starts, f, weights)),
                                      bounds=(max(best - step, best / 2), best + step),
                                      method="bounded",
                                      options={"xatol": 1e-4 / span})
    return float(result.x) if -result.fun >= values.max() else best


def residuals(starts: np.ndarray, origin: float, period: float):
    """Cycle index of the nearest lattice point origin + k·period, and the offset to it."""
    cycle = np.rint((starts - origin) / period)
    return cycle, starts - (origin + cycle * period)


def cluster_width(residuals: np.ndarray, period: float, floor: float) -> tuple[float, float]:
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
    top_width = period / MAX_WIDTH_DIVISOR
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


def common_multiple(cycle: np.ndarray, share: float = 0.9) -> tuple[int, int]:
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


def track(starts: np.ndarray, weights: np.ndarray | None, span: float, period: float,
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
    _, residual = residuals(starts, origin, period)
    drifts = np.arange(-n_bins // 2, n_bins // 2 + 1) * (width / span)
    best, best_drift, best_bin = -1, 0.0, 0
    # the loop runs up to 401 times over every start: in place, and where no offset can
    # leave (−period, period) (|r| <= period/2, |drift·time| <= period/4) np.mod is one
    # period added to the negative ones (the same numbers, at half the cost)
    shifted, negative = np.empty(starts.size), np.empty(starts.size, dtype=bool)
    index = np.empty(starts.size, dtype=np.int64)
    one_wrap = (np.abs(residual).max(initial=0.0)
                + np.abs(drifts).max() * np.abs(time).max(initial=0.0)) < 0.99 * period
    for drift in drifts.tolist():
        np.multiply(drift, time, out=shifted)
        np.subtract(residual, shifted, out=shifted)
        if one_wrap:
            np.less(shifted, 0.0, out=negative)
            np.add(shifted, period, out=shifted, where=negative)
        else:
            np.mod(shifted, period, out=shifted)
        np.divide(shifted, width, out=shifted)
        index[...] = shifted  # truncation, as astype
        np.minimum(index, n_bins - 1, out=index)
        counts = np.bincount(index, weights=weights, minlength=n_bins)
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


class Lock(NamedTuple):
    period: float
    origin: float
    width: float
    selected: np.ndarray
    cycle: np.ndarray
    residual: np.ndarray
    excess: float
    background: float


def lock_source(starts: np.ndarray, weights: np.ndarray | None, span: float, frequency: float,
          tolerance: float | None, floor: float, iterations: int = 4) -> Lock:
    """Events on a lattice origin + k·period near ``frequency``.

    Returns the lattice, the half-width, which events lie on it, every event's cycle
    number and offset, the excess of events within the half-width over the chance
    coincidences of the other events, and that chance count.
    """
    period = 1.0 / frequency
    phasor = mean_phasor(starts, frequency, weights)
    origin = (math.atan2(phasor.imag, phasor.real) / (2.0 * np.pi)) % 1.0 * period
    period, origin = track(starts, weights, span, period, origin, floor)
    width = tolerance or period / MAX_WIDTH_DIVISOR
    selected = np.zeros(starts.size, dtype=bool)
    for _ in range(iterations):
        cycle, residual = residuals(starts, origin, period)
        if tolerance is None:
            width, _ = cluster_width(residual, period, floor)
        selected = np.abs(residual) <= width
        if np.count_nonzero(selected) < 2 or np.unique(cycle[selected]).size < 2:
            break
        slope, intercept = np.polyfit(cycle[selected], starts[selected], 1)
        period, origin = float(slope), float(intercept)
    cycle, residual = residuals(starts, origin, period)
    selected = np.abs(residual) <= width
    density = np.count_nonzero(np.abs(residual) > period / 4) / (period / 2)
    background = density * 2 * width
    excess = np.count_nonzero(selected) - background
    return Lock(period, origin, width, selected, cycle, residual, float(excess),
                 float(background))
