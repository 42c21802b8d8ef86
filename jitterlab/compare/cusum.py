"""The CUSUM test of window totals: its null laws, p-values and change points.

The statistic ``D = max_k |Σ_{j≤k}(X_j − X̄)| / (σ √K)`` of K window totals (Page 1954),
``σ²`` from the variation inside the windows (a Bartlett long-run variance, Newey & West
1987: :func:`long_run_variance`), the p-value from the simulated null law of ``D`` for
Gaussian totals (:func:`cusum_p_value`), and change points by binary segmentation (Scott
& Knott 1974); :func:`window_test` runs them on one series of window totals for
:func:`~jitterlab.compare.stationarity.stationarity`.
"""

from __future__ import annotations

import functools
import math

import numpy as np

__all__ = ["cusum_p_value", "window_test", "long_run_variance", "NULL_DRAWS", "NULL_SEED"]

#: draws of the Gaussian random-walk bridge that give the CUSUM p-values (seeded)
NULL_DRAWS = 50_000
NULL_SEED = 20261125


@functools.lru_cache(maxsize=64)
def _bridge_maxima(steps: int) -> np.ndarray:
    """Sorted draws of max_k |Σ_{j≤k}(Z_j − Z̄)| / √steps for iid standard normal Z."""
    rng = np.random.default_rng([NULL_SEED, steps])
    maxima = np.empty(NULL_DRAWS)
    chunk = max(1, 2_000_000 // steps)
    for first in range(0, NULL_DRAWS, chunk):
        count = min(chunk, NULL_DRAWS - first)
        z = rng.standard_normal((count, steps))
        walk = np.cumsum(z - z.mean(axis=1, keepdims=True), axis=1)
        maxima[first:first + count] = np.abs(walk).max(axis=1) / math.sqrt(steps)
    maxima.sort()
    return maxima


@functools.lru_cache(maxsize=64)
def _studentized_maxima(windows: int, subwindows: int, lags: int) -> np.ndarray:
    """Sorted draws of the CUSUM statistic D with σ estimated as :func:`stationarity`
    does, for iid standard normal sub-window totals (K = ``windows``, m = ``subwindows``):
    the null law of D including the estimation error of σ."""
    rng = np.random.default_rng([NULL_SEED, windows, subwindows, lags])
    maxima = np.empty(NULL_DRAWS)
    chunk = max(1, 4_000_000 // (windows * subwindows))
    for first in range(0, NULL_DRAWS, chunk):
        count = min(chunk, NULL_DRAWS - first)
        z = rng.standard_normal((count, windows, subwindows))
        totals = z.sum(axis=2)
        residuals = (z - totals[:, :, None] / subwindows).reshape(count, -1)
        variance = subwindows * long_run_variance(residuals, windows, lags)
        walk = np.cumsum(totals - totals.mean(axis=1, keepdims=True), axis=1)[:, :-1]
        maxima[first:first + count] = np.abs(walk).max(axis=1) / np.sqrt(variance * windows)
    maxima.sort()
    return maxima


def _upper_tail(maxima: np.ndarray, statistic: float) -> float:
    """P(D >= statistic) from sorted draws of D (at least 1 / (draws + 1))."""
    exceed = maxima.size - np.searchsorted(maxima, statistic, side="left")
    return float((exceed + 1) / (maxima.size + 1))


def cusum_p_value(statistic: float, steps: int, subwindows: int | None = None,
                  lags: int | None = None) -> float:
    """P(D ≥ statistic) for the CUSUM statistic ``D`` of ``steps`` iid Gaussian totals.

    With ``subwindows`` and ``lags``: σ estimated from the sub-windows as
    :func:`stationarity` does (the estimation error of σ included); without: σ known.
    Simulated (:data:`NULL_DRAWS` draws, fixed seed); the smallest p-value it can give is
    ``1 / (NULL_DRAWS + 1)``.
    """
    if subwindows is None:
        return _upper_tail(_bridge_maxima(int(steps)), statistic)
    return _upper_tail(_studentized_maxima(int(steps), int(subwindows), int(lags)),
                       statistic)


def _bartlett_weights(lags: int) -> np.ndarray:
    """Bartlett weights 1 − l / (lags + 1) for l = 0 … lags."""
    return 1.0 - np.arange(lags + 1) / (lags + 1)


def long_run_variance(residuals: np.ndarray, groups: int, lags: int):
    """Bartlett long-run variance of one sub-window, from residuals (last axis) centred
    inside each of ``groups`` equal blocks, corrected for that centring.

    The estimator is the quadratic form ``rᵀWr / n`` (W: Bartlett weights up to ``lags``);
    for iid sub-window values of variance s², the centring inside blocks makes its mean
    ``s² tr(W M) / n`` (M: the centring projection), so it is divided by ``tr(W M) / n``.
    """
    n = residuals.shape[-1]
    weights = _bartlett_weights(lags)
    value = np.sum(residuals * residuals, axis=-1) / n
    for lag in range(1, lags + 1):
        value = value + 2 * weights[lag] * np.sum(residuals[..., lag:] * residuals[..., :-lag],
                                                  axis=-1) / n
    per_block = n // groups
    # tr(W M) / n, M = I − block means: diagonal 1 − 1/b; lag l: −1/b for each of the
    # (b − l) pairs per block, counted twice
    within_pairs = groups * np.maximum(per_block - np.arange(1, lags + 1), 0)
    correction = (1 - 1 / per_block) - 2 * np.sum(weights[1:] * within_pairs) / (
        per_block * n)
    if correction <= 0:
        raise ValueError(f"too few sub-windows per window ({per_block}) for {lags} lags")
    return np.maximum(value / correction, 0.0)


def _cusum(totals: np.ndarray, variance: float) -> tuple[float, int, np.ndarray]:
    """CUSUM path S_k / (σ √K) after windows 1..K−1, its maximum and the window after
    which it is reached (the split: windows [0, k] and [k+1, K))."""
    steps = totals.size
    path = np.cumsum(totals - totals.mean())[:-1]
    scale = math.sqrt(variance * steps) if variance > 0 else math.inf
    standardized = path / scale if math.isfinite(scale) else np.zeros_like(path)
    where = int(np.argmax(np.abs(standardized)))
    return float(abs(standardized[where])), where, standardized


def _segment(totals: np.ndarray, variance: float, level: float, max_points: int,
             min_windows: int, overall_p_value: float) -> list[tuple[int, float]]:
    """Binary segmentation: split a segment at its CUSUM maximum while the split's p-value
    is below ``level`` (most significant split first); returns (split index, p). The
    whole series' split carries the overall test's p-value, so there are change points
    exactly when that test rejects; shorter segments use the null law with σ known."""
    segments = [(0, totals.size)]
    points: list[tuple[int, float]] = []
    while len(points) < max_points:
        best = None
        for first, stop in segments:
            if stop - first < 2 * min_windows:
                continue
            path = np.abs(np.cumsum(totals[first:stop] - totals[first:stop].mean()))
            admissible = np.arange(min_windows, stop - first - min_windows + 1)
            split = first + int(admissible[np.argmax(path[admissible - 1])])
            statistic = float(path[split - first - 1] / math.sqrt(variance * (stop - first)))
            if (first, stop) == (0, totals.size):
                p_value = overall_p_value
            else:
                p_value = cusum_p_value(statistic, stop - first)
            if best is None or p_value < best[2]:
                best = (first, stop, p_value, split)
        if best is None or best[2] >= level:
            break
        first, stop, p_value, split = best
        segments.remove((first, stop))
        segments += [(first, split), (split, stop)]
        points.append((split, p_value))
    return sorted(points)


def window_test(sub_totals: np.ndarray, residuals: np.ndarray, lags: int, level: float,
                 max_points: int, min_windows: int) -> dict:
    """CUSUM test and change points of window totals, from (K, m) sub-window totals and
    their residuals inside each window."""
    windows, per_window = sub_totals.shape
    variance = per_window * float(long_run_variance(residuals.ravel(), windows, lags))
    totals = sub_totals.sum(axis=1)
    statistic, _, path = _cusum(totals, variance)
    p_value = cusum_p_value(statistic, windows, per_window, lags) if variance > 0 else (
        1.0 if np.ptp(totals) == 0 else 0.0)
    points = _segment(totals, variance, level, max_points, min_windows, p_value) \
        if variance > 0 else []
    return {"statistic": statistic, "p_value": p_value, "path": path,
            "variance": variance, "points": points}
