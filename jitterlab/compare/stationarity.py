"""Is a recording stationary? Detour rate and size per time window, tests and change points.

A noise recording is summarised by one law (a rate of detours, a distribution of their
lengths) only if that law did not change while it was recorded, and two recordings can be
compared only if the machine did not change between them. :func:`stationarity` cuts a
recording into equal time windows, reports the detour rate, noise fraction and detour-size
quantiles of each window, tests whether the rate and the size distribution are the same in
every window (p-values that allow for short-range dependence between detours), and locates
change points by binary segmentation.
:func:`jitterlab.recording_checks.check_recordings` runs it on every recording shipped in
``data/measured/`` (``python -m jitterlab.recording_checks``).

The method (details in :func:`stationarity`, Notes): per window ``k`` a total ``X_k``
(the number of detours, or the sum of the centred ranks of the detour sizes); the CUSUM
statistic ``D = max_k |Σ_{j≤k}(X_j − X̄)| / (σ √K)`` [2]_; ``σ²``, the variance of one
window's total, from the variation *inside* the windows (sub-windows, a Bartlett long-run
variance [3]_), so that a change of level between windows does not inflate it; the p-value
from the exact null law of ``D`` for Gaussian window totals (simulated). Binary
segmentation [4]_ splits at the CUSUM maximum while the split is significant.

The CUSUM test is :mod:`~jitterlab.compare.cusum`'s, the reading of the input
:mod:`~jitterlab.compare.stationarity_input`'s.

References
----------
.. [1] R. Garg, P. De, "Impact of Noise on Scaling of Collectives: An Empirical
   Evaluation", HiPC 2006 (seed 001), §4: noise distributions measured once and used for
   every prediction, which presumes a stationary machine.
.. [2] E. S. Page, "Continuous inspection schemes", Biometrika 41 (1954) 100–115: the
   CUSUM statistic.
.. [3] W. K. Newey, K. D. West, "A simple, positive semi-definite, heteroskedasticity and
   autocorrelation consistent covariance matrix", Econometrica 55 (1987) 703–708.
.. [4] A. J. Scott, M. Knott, "A cluster analysis method for grouping means in the
   analysis of variance", Biometrics 30 (1974) 507–512: binary segmentation.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import xarray as xr
from scipy import stats

from ..base.checks import check_integer, check_positive
from .cusum import NULL_DRAWS as NULL_DRAWS
from .cusum import NULL_SEED as NULL_SEED
from .cusum import cusum_p_value, window_test
from .stationarity_input import recording_detours

__all__ = ["stationarity", "cusum_p_value", "windows_for"]

#: default number of windows when ``window`` is not given
DEFAULT_WINDOWS = 20
#: fewest windows a test is run on
MIN_WINDOWS = 4
#: quantile levels of the detour sizes reported per window
SIZE_QUANTILES = (0.5, 0.9, 0.99)


# --------------------------------------------------------------------------------------
# the check
# --------------------------------------------------------------------------------------
def stationarity(data, window: float | None = None, *, windows: int | None = None,
                 times=None, variable: str | None = None, duration: float | None = None,
                 threshold: float | None = None,
                 exceed_quantile: float = 0.9, subwindows: int = 10, alpha: float = 0.05,
                 max_change_points: int = 5, min_segment: int = 2) -> xr.Dataset:
    """Detour rate and size per time window, homogeneity tests and change points.

    Parameters
    ----------
    data : Trace, array-like, jitterlab.noise.Empirical, xarray.DataArray or Dataset
        A detour trace (:class:`jitterlab.Trace`: each event is a detour, its length the
        size), a table of detours (pandas.DataFrame with columns ``start``, from the
        recording's start, and ``duration``, e.g. the interruptions of
        :func:`jitterlab.measure.read_bsp_interruptions`; several CPUs may overlap), or
        measured times (FWQ quanta w + δ, iteration times θ; 1-D, or 2-D
        ``(series, sample)`` such as ``(rank, sample)``), or a Dataset with ``variable``.
        For measured times the size of a sample is its excess ``δ = t − min t`` and a
        detour is a sample whose excess is above ``threshold``. [s]
    window : float, optional
        Window length. Default: the recording cut into ``windows`` windows. A remainder
        shorter than a window at the end is left out. [s]
    windows : int, optional
        Number of windows when ``window`` is not given (default 20, at least 4). [-]
    times : array-like, optional
        Start time of each sample, same shape as the samples. Default: the samples were
        taken back to back, each starting when the one before ended (per series). [s]
    variable : str, optional
        The variable of a Dataset holding the measured times.
    duration : float, optional
        Length of the recording, from its start (a table of detours: from 0; measured
        times: from the first time stamp). Default: the end of the last detour or
        sample. [s]
    threshold : float, optional
        Measured times only: the excess above which a sample counts as a detour.
        Default: the pooled ``exceed_quantile`` of the excess. [s]
    exceed_quantile : float, default 0.9
        See ``threshold``. [-]
    subwindows : int, default 10
        Sub-windows per window, from which the variance of a window's total is estimated
        (at least 4). [-]
    alpha : float, default 0.05
        Family-wise level of the verdict over the rate and size tests (Bonferroni: each
        test, and each change-point split, at ``alpha / 2``). [-]
    max_change_points : int, default 5
        At most this many change points per series. [-]
    min_segment : int, default 2
        Fewest windows between two change points. [-]

    Returns
    -------
    xarray.Dataset
        Dimension ``window`` with coordinates ``window_start``, ``window_end`` [s] (from
        the recording's start); per window ``events`` (detours) [-], ``event_rate``
        [1/s], ``noise_fraction`` (sum of the sizes / window length) [1],
        ``mean_size`` [s], ``size_quantile`` (dims ``window``, ``quantile``) [s],
        ``mean_size_rank`` (mean of the sizes' pooled ranks scaled to (0, 1); 0.5 when
        the sizes are like those of the whole recording) [1], ``samples`` (measured
        times only) [-], and ``rate_cusum``, ``size_cusum`` (the standardized CUSUM path
        after each window; |value| is the test statistic at its maximum) [1]. Every
        variable's unit is in its ``attrs["units"]``. ``attrs``: ``rate_p_value``,
        ``size_p_value`` (the tests below), ``rate_independent_p_value`` (Poisson
        dispersion test of the counts; for measured times a chi-square test of the
        detour fraction), ``size_independent_p_value`` (k-sample Anderson–Darling,
        scipy's p-value, clipped to [0.001, 0.25]), ``rate_change_points``,
        ``size_change_points`` (times from the start [s]) with their
        ``*_change_point_p_values``, ``verdict`` ("stationary at 5 %" or "not stationary
        at 5 %"), ``stationary`` (1 or 0), ``alpha``, ``window`` [s], ``duration`` [s],
        ``dropped`` (time left out at the end) [s], ``assumptions``.

    Raises
    ------
    TypeError
        If ``data`` is not a trace or numbers.
    ValueError
        If the recording holds no detours, fewer than 4 windows fit, a window has fewer
        sub-windows than 4, or an argument is out of range (the message names it).

    Notes
    -----
    *Stationary* here means: the detours form a stationary process over the recording —
    the same rate and the same size distribution in every window — with dependence
    shorter than a sub-window (``window / subwindows``). Both tests use the window totals
    ``X_k`` (rate: the number of detours; size: ``Σ (u_i − ū)`` over the detours of the
    window, ``u_i`` the pooled rank of detour ``i``'s size scaled to (0, 1), which has mean
    0 in every window when the size law does not change, whatever the rate) and the CUSUM
    statistic ``D = max_k |Σ_{j≤k}(X_j − X̄)| / (σ √K)``. ``σ²`` = ``m`` times the Bartlett
    long-run variance (Newey & West 1987) of the sub-window totals centred on their
    window's mean, with lags up to ``min(m // 2, ⌊4 (Km/100)^{2/9}⌋)``, corrected for the
    centring — so a change of level between windows does not inflate ``σ`` and clustered
    detours (bursts) do not pass for a change. The p-value is the exact law of ``D`` for
    ``K`` iid Gaussian totals with ``σ`` estimated the same way, simulated
    (:data:`NULL_DRAWS` draws); with tens of detours per window the totals are close to
    Gaussian. Dependence longer than a window cannot be told from
    drift by any test on one recording.

    The ``*_independent_p_value`` tests assume independent detours (a Poisson process;
    independent sizes): they are exact for such data, and reject stationary but bursty
    noise. Change points: binary segmentation on the window totals with the same ``σ``;
    a split at the CUSUM maximum of a segment (at least ``min_segment`` windows from its
    ends) is kept while its p-value is below ``alpha / 2``, at most ``max_change_points``.
    The first split carries the overall test's p-value, so a series has change points
    exactly when its test rejects; a shorter segment's p-value takes ``σ`` as known (it
    comes from the whole recording). The splits are not corrected for their number: read
    the second and later change points as indications.

    Examples
    --------
    >>> import numpy as np
    >>> import jitterlab as jl
    >>> rng = np.random.default_rng(1)
    >>> starts = np.sort(rng.uniform(0, 100, 5000))
    >>> trace = jl.Trace.from_absolute(starts, np.full(5000, 1e-6), 100.0, overlap="serialize")
    >>> check = jl.characterize.stationarity(trace, windows=20)
    >>> check.attrs["verdict"]
    'stationary at 5 %'
    """
    subwindows = check_integer("subwindows", subwindows, minimum=4)
    max_change_points = check_integer("max_change_points", max_change_points, minimum=0)
    min_segment = check_integer("min_segment", min_segment, minimum=1)
    alpha = check_positive("alpha", alpha)
    if alpha >= 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    exceed_quantile = check_positive("exceed_quantile", exceed_quantile)
    if exceed_quantile >= 1:
        raise ValueError(f"exceed_quantile must be in (0, 1), got {exceed_quantile!r}")

    event_times, sizes, size_times, start, span, threshold = recording_detours(
        data, times, variable, duration, threshold, exceed_quantile)
    samples_kind = threshold is not None

    if window is None:
        count = DEFAULT_WINDOWS if windows is None else check_integer("windows", windows,
                                                                      minimum=MIN_WINDOWS)
        window = span / count
    else:
        if windows is not None:
            raise ValueError("give window= (a length [s]) or windows= (a number), not both")
        window = check_positive("window", window)
        count = int(math.floor(span / window * (1 + 1e-12)))
    if count < MIN_WINDOWS:
        raise ValueError(f"only {count} window(s) of {window:g} s fit in the recording of "
                         f"{span:g} s; at least {MIN_WINDOWS} are needed: shorten window=")
    edges = start + window * np.arange(count + 1)
    sub_edges = start + (window / subwindows) * np.arange(count * subwindows + 1)
    kept = event_times < edges[-1]
    event_times = event_times[kept]
    in_range = size_times < edges[-1]
    size_times, sizes_kept = size_times[in_range], sizes[in_range]
    if event_times.size == 0:
        raise ValueError("no detour falls in the windows: nothing to test")

    # --- rate: counts per sub-window ---------------------------------------------
    sub_counts = np.histogram(event_times, bins=sub_edges)[0].reshape(count, subwindows)
    counts = sub_counts.sum(axis=1)
    rate_residuals = sub_counts - counts[:, None] / subwindows
    lags = min(subwindows // 2, int(4 * (count * subwindows / 100) ** (2 / 9)))
    lags = max(lags, 1)
    rate = window_test(sub_counts.astype(float), rate_residuals, lags, alpha / 2,
                        max_change_points, min_segment)

    # --- size: centred pooled ranks ------------------------------------------------
    ranks = (stats.rankdata(sizes_kept) - 0.5) / sizes_kept.size
    centred = ranks - ranks.mean()
    sub_index = np.minimum(((size_times - start) / (window / subwindows)).astype(int),
                           count * subwindows - 1)
    sub_sums = np.bincount(sub_index, weights=centred, minlength=count * subwindows)
    sub_n = np.bincount(sub_index, minlength=count * subwindows)
    window_index = sub_index // subwindows
    window_n = np.bincount(window_index, minlength=count)
    window_sum = np.bincount(window_index, weights=centred, minlength=count)
    window_mean = np.divide(window_sum, window_n, out=np.zeros(count), where=window_n > 0)
    size_residuals = (sub_sums - sub_n * np.repeat(window_mean, subwindows)).reshape(
        count, subwindows)
    size = window_test(sub_sums.reshape(count, subwindows), size_residuals, lags,
                        alpha / 2, max_change_points, min_segment)

    # --- tests that assume independent detours -----------------------------------
    if samples_kind:
        samples_per_window = np.bincount(window_index, minlength=count)
        table = np.vstack([counts, samples_per_window - counts])
        rate_independent = float(stats.chi2_contingency(table, correction=False).pvalue) \
            if np.all(table.sum(axis=1) > 0) else math.nan
    else:
        mean_count = counts.mean()
        dispersion = float(np.sum((counts - mean_count) ** 2) / mean_count)
        rate_independent = float(stats.chi2.sf(dispersion, count - 1))
    groups = [g for k in range(count) if (g := sizes_kept[window_index == k]).size >= 2]
    size_independent = math.nan
    if len(groups) >= 2 and np.ptp(sizes_kept) > 0:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # p-value clipped to [0.001, 0.25]
            size_independent = float(stats.anderson_ksamp(groups, variant="midrank").pvalue)

    # --- per-window description --------------------------------------------------
    sizes_by_window = [sizes_kept[window_index == k] for k in range(count)]
    noise = np.array([g.sum() for g in sizes_by_window]) / window
    quantiles = np.full((count, len(SIZE_QUANTILES)), math.nan)
    mean_size = np.full(count, math.nan)
    mean_rank = np.full(count, math.nan)
    for k, group in enumerate(sizes_by_window):
        if group.size:
            quantiles[k] = np.quantile(group, SIZE_QUANTILES)
            mean_size[k] = group.mean()
    mean_rank[window_n > 0] = 0.5 + window_mean[window_n > 0]

    stationary = rate["p_value"] >= alpha / 2 and size["p_value"] >= alpha / 2
    level = f"{100 * alpha:g} %"
    coords = {"window": np.arange(count), "window_start": ("window", edges[:-1] - start),
              "window_end": ("window", edges[1:] - start),
              "quantile": np.asarray(SIZE_QUANTILES)}
    variables = {
        "events": ("window", counts, {"units": "1", "long_name": "detours in the window"}),
        "event_rate": ("window", counts / window, {"units": "1/s"}),
        "noise_fraction": ("window", noise, {"units": "1",
                                             "long_name": "sum of sizes / window length"}),
        "mean_size": ("window", mean_size, {"units": "s"}),
        "size_quantile": (("window", "quantile"), quantiles, {"units": "s"}),
        "mean_size_rank": ("window", mean_rank, {"units": "1"}),
        "rate_cusum": ("window", np.append(rate["path"], 0.0), {"units": "1"}),
        "size_cusum": ("window", np.append(size["path"], 0.0), {"units": "1"}),
    }
    if samples_kind:
        variables["samples"] = ("window", window_n, {"units": "1"})
    result = xr.Dataset({name: xr.Variable(dims, value, attrs)
                         for name, (dims, value, attrs) in variables.items()}, coords=coords)
    result["window_start"].attrs["units"] = "s"
    result["window_end"].attrs["units"] = "s"
    result["quantile"].attrs["units"] = "1"

    def times_of(points):
        return [float(edges[index] - start) for index, _ in points]

    result.attrs = {
        "verdict": f"stationary at {level}" if stationary else f"not stationary at {level}",
        "stationary": int(stationary),
        "rate_p_value": rate["p_value"], "size_p_value": size["p_value"],
        "rate_statistic": rate["statistic"], "size_statistic": size["statistic"],
        "rate_independent_p_value": rate_independent,
        "size_independent_p_value": size_independent,
        "rate_change_points": times_of(rate["points"]),
        "rate_change_point_p_values": [p for _, p in rate["points"]],
        "size_change_points": times_of(size["points"]),
        "size_change_point_p_values": [p for _, p in size["points"]],
        "alpha": alpha, "window": float(window), "windows": count,
        "subwindows": subwindows, "lags": lags, "duration": span,
        "dropped": float(span - count * window),
        "input": "measured times" if samples_kind else "detour trace",
        "threshold": float(threshold) if samples_kind else math.nan,
        "assumptions": ("stationary means the same detour rate and size law in every "
                        "window; the tests allow dependence shorter than a sub-window "
                        f"({window / subwindows:g} s); verdict: both CUSUM p-values >= "
                        f"alpha/2 (Bonferroni); the independent_p_values assume "
                        "independent detours"),
    }
    return result


# --------------------------------------------------------------------------------------
# the shipped recordings
# --------------------------------------------------------------------------------------
#: fewest detours per window the runner aims for (a window total close to Gaussian)
EVENTS_PER_WINDOW = 25


def windows_for(events: int) -> int:
    """Windows for a recording of ``events`` detours: :data:`DEFAULT_WINDOWS`, fewer when
    that would leave fewer than :data:`EVENTS_PER_WINDOW` detours per window."""
    return int(min(DEFAULT_WINDOWS, max(MIN_WINDOWS, events // EVENTS_PER_WINDOW)))
