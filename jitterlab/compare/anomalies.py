"""Anomalous ranks: which rank's tail stands out from the others, and how often one is found.

:func:`find_anomalies` looks for ranks whose tail quantile of a measured time stands out
from the rest by a robust z-score, the way Garg & De spotted one slow node of 8 processes
in the per-process 99th percentiles (their Fig. 7 and 10); :func:`anomaly_detection_power`
says how often that finds a slow rank of a given excess. Also ``jl.validate.*``.

References
----------
.. [1] R. Garg, P. De, "Impact of Noise on Scaling of Collectives: An Empirical
   Evaluation", HiPC 2006 (seed 001), §4, Fig. 7 and 10.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats

from ..analytic.correlated import rank_sample_array
from ..base.checks import check_confidence, check_integer, check_positive, plain_scalar
from ..base.provenance import provenance_attrs
from ..base.rng import RngLike, as_generator

__all__ = ["robust_z_scores", "find_anomalies", "anomaly_detection_power", "MAD_TO_SD",
           "MEAN_AD_TO_SD"]

#: 1/Φ⁻¹(3/4): makes the median absolute deviation estimate a normal standard deviation
MAD_TO_SD = 1.482602218505602
#: √(π/2): makes the mean absolute deviation estimate a normal standard deviation
MEAN_AD_TO_SD = 1.2533141373155003


# --------------------------------------------------------------------------------------
# anomalous ranks
# --------------------------------------------------------------------------------------
def robust_z_scores(values) -> tuple[np.ndarray, float, float]:
    """(v − median) / (1.4826·MAD) for each value, with the median and the scale.

    NaNs are ignored in the median and MAD and give NaN. When more than half of the
    values are equal (MAD = 0) the scale is the mean absolute deviation × √(π/2); when
    all are equal every score is 0.

    Raises
    ------
    ValueError
        If ``values`` is empty.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        raise ValueError("values is empty; robust z-scores need at least one value")
    finite = values[~np.isnan(values)]
    if finite.size == 0:
        return np.full(values.shape, math.nan), math.nan, math.nan
    centre = float(np.median(finite))
    deviation = np.abs(finite - centre)
    scale = MAD_TO_SD * float(np.median(deviation))
    if scale == 0:
        scale = MEAN_AD_TO_SD * float(deviation.mean())
    if scale == 0:
        return np.where(np.isnan(values), math.nan, 0.0), centre, 0.0
    return (values - centre) / scale, centre, scale


def find_anomalies(ds, quantile: float = 0.99, variable: str = "compute",
                   threshold: float = 5.0, *, side: str = "upper", node: str = "node",
                   node_share: float = 0.5, sample_dim: str = "sample",
                   rank_dim: str = "rank") -> pd.DataFrame:
    """Ranks whose q-quantile stands out from the others (robust z-score), by node.

    Parameters
    ----------
    ds : xarray.Dataset or xarray.DataArray
        Per-rank samples with dims (``rank``, ``sample``), for example the compute time
        w + δ of every iteration of every rank; an optional coordinate ``node`` along
        ``rank`` names each rank's node. [s]
    quantile : float, default 0.99
        The quantile of each rank's samples to compare (Garg & De used the 99th
        percentile). [-]
    variable : str, default "compute"
        The variable of a Dataset.
    threshold : float, default 5
        A rank stands out when its robust z-score exceeds this. [-]
    side : {"upper", "lower", "both"}, default "upper"
        Flag ranks slower than the rest (z > threshold), faster (z < −threshold), or
        either.
    node : str, default "node"
        Name of the node coordinate along ``rank``, if any.
    node_share : float, default 0.5
        A node is anomalous when at least this share of its ranks stand out. [1]
    sample_dim, rank_dim : str
        Dimension names.

    Returns
    -------
    pandas.DataFrame
        One row per rank that stands out, indexed by ``rank`` (sorted by node, then
        rank), with columns ``node`` (when known), ``value`` (the rank's q-quantile)
        [s], ``z_score`` [-], ``ratio`` (value / median over ranks) [-], and with nodes
        ``node_size``, ``node_flagged`` (ranks of the node that stand out) and
        ``node_anomalous``. ``attrs``: ``median`` and ``scale`` [s] of the quantiles
        over ranks, ``threshold``, ``quantile``, ``variable``, ``n_ranks``,
        ``anomalous_nodes`` (list) and ``z_scores`` (every rank's score, a dict).

    Notes
    -----
    For each rank r, v_r is the q-quantile of its samples; z_r = (v_r − median_r v) /
    (1.4826·MAD_r v), the robust z-score: the median and the median absolute deviation
    ignore up to half the ranks being outliers, so a whole slow node (8 of 64 ranks)
    does not hide itself. A threshold of 5 keeps false alarms rare: for normally
    distributed quantiles P(z > 5) ≈ 3·10⁻⁷ per rank, and the MAD estimated from a few
    dozen ranks is uncertain by some 20 %, which still leaves about one false alarm in
    thousands of 64-rank runs — in theory. Measured quantiles are not normal and runs
    have fewer ranks: on the shipped 8- and 16-rank data the rate was 2–3 in 100 runs
    (notebook 08); :func:`anomaly_detection_power` measures it for your data. When more
    than half the ranks have exactly the same quantile (MAD = 0), the scale is the mean
    absolute deviation instead.

    References
    ----------
    .. [1] R. Garg, P. De, HiPC 2006 (seed 001), §4.2 and Fig. 10: processes 89-96, all
       8 processes of one node, had a visibly larger 99th percentile.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from jitterlab.compare.validate import find_anomalies
    >>> rng = np.random.default_rng(0)
    >>> compute = 1e-3 + rng.exponential(1e-5, (16, 4000))
    >>> compute[12:16] += rng.exponential(3e-5, (4, 4000))  # node 3 is slower
    >>> ds = xr.Dataset({"compute": (("rank", "sample"), compute)},
    ...                 coords={"node": ("rank", np.repeat(np.arange(4), 4))})
    >>> find_anomalies(ds).index.tolist(), find_anomalies(ds).attrs["anomalous_nodes"]
    ([12, 13, 14, 15], [3])
    """
    array, threshold = _detector_input(ds, quantile, variable, threshold, side, sample_dim,
                                       rank_dim, name="ds")
    with warnings.catch_warnings():  # a rank without samples gives NaN, not a warning
        warnings.filterwarnings("ignore", "All-NaN slice", RuntimeWarning)
        values = array.astype(np.float64).quantile(quantile, dim=sample_dim, skipna=True)
    values = values.drop_vars("quantile").transpose(rank_dim)
    scores, centre, scale = robust_z_scores(values.values)
    flagged = _flags(scores, threshold, side)
    ranks = values[rank_dim].values
    table = pd.DataFrame({"value": values.values, "z_score": scores,
                          "ratio": values.values / centre if centre else math.nan},
                         index=pd.Index(ranks, name=rank_dim))
    anomalous_nodes: list = []
    if node in array.coords and array.coords[node].dims == (rank_dim,):
        nodes = array.coords[node].values
        table.insert(0, "node", nodes)
        table["flagged"] = flagged
        grouped = table.groupby("node", sort=True)["flagged"]
        sizes, hits = grouped.size(), grouped.sum()
        table["node_size"] = table["node"].map(sizes).astype(np.int64)
        table["node_flagged"] = table["node"].map(hits).astype(np.int64)
        table["node_anomalous"] = table["node_flagged"] >= node_share * table["node_size"]
        anomalous_nodes = [plain_scalar(k) for k in sizes.index
                           if hits[k] >= 1 and hits[k] >= node_share * sizes[k]]
        table = table.drop(columns="flagged")
        result = table[flagged].sort_values(["node", rank_dim], kind="stable")
    else:
        result = table[flagged]
    result.attrs = {"median": centre, "scale": scale, "threshold": threshold,
                    "quantile": float(quantile), "variable": variable, "side": side,
                    "n_ranks": int(ranks.size), "anomalous_nodes": anomalous_nodes,
                    "z_scores": dict(zip([plain_scalar(r) for r in ranks], scores.tolist(),
                                         strict=True))}
    return result


def anomaly_detection_power(clean, durations, probabilities, slow_ranks=None, *,
                            replicates: int = 200, quantile: float = 0.99,
                            threshold: float = 5.0, side: str = "upper",
                            variable: str = "compute", confidence: float = 0.95,
                            resample: str = "rank", rng: RngLike = None,
                            sample_dim: str = "sample", rank_dim: str = "rank"
                            ) -> xr.Dataset:
    """How often :func:`find_anomalies` finds an injected slowdown, and how often it cries wolf.

    Each replicate resamples every rank's clean samples (a bootstrap, so that runs
    differ as repeated measurements would), runs the detector on it (a false alarm if
    any rank is flagged), then lengthens each iteration of the ``slow_ranks`` by a
    detour of ``duration`` with probability ``probability`` (a
    ``jl.noise.Bernoulli(probability, duration)`` added to w + δ) and runs the detector
    again: detected if every slow rank is flagged.

    Parameters
    ----------
    clean : xarray.Dataset or xarray.DataArray
        Per-rank samples without the anomaly, dims (``rank``, ``sample``), for example
        the ``compute`` times of ``jitterlab.datasets.load_pb``; NaNs (ragged ranks)
        are left out. [s]
    durations : array_like
        Lengths of the injected detour, > 0. [s]
    probabilities : array_like
        Probabilities of the detour in one iteration, in (0, 1]. [-]
    slow_ranks : sequence, optional
        Labels (``rank`` coordinate) of the ranks to slow down, fewer than half the
        ranks; default the last rank.
    replicates : int, default 200
        Number of resampled runs. [-]
    quantile, threshold, side, variable
        As for :func:`find_anomalies`.
    confidence : float, default 0.95
        Level of the Clopper-Pearson intervals. [-]
    rng : int or numpy.random.Generator, optional
        Seed or generator.
    sample_dim, rank_dim : str
        Dimension names.

    Returns
    -------
    xarray.Dataset
        Dims ``duration`` [s] and ``probability`` [1]: ``detection_probability`` (share
        of runs in which every slow rank is flagged), its binomial standard error
        ``detection_probability_se`` and Clopper-Pearson interval
        ``detection_probability_ci`` (dim ``ci_bound``), ``other_ranks_flagged`` (share
        of injected runs in which a clean rank is flagged too). Scalars:
        ``false_alarm_rate`` (share of clean runs with any rank flagged),
        ``false_alarm_rate_se`` and ``false_alarm_rate_ci``, ``replicates``.
        Attributes: the detector's settings, slow ranks, provenance.

    Notes
    -----
    The same resampled runs and the same uniform numbers decide, for every cell of the
    grid, which iterations are hit (common random numbers), so the curves are smooth
    and monotone in both arguments up to the resampling of the clean data.
    Expect a threshold in the probability: the detector compares a q-quantile, and a
    detour that hits a share p < 1 − q of the iterations (1 % for the 99th
    percentile) only pushes that quantile up the clean law's own tail (from its
    q-quantile to about its q/(1 − p)-quantile), not by the detour's length, so
    beyond some length the power stops growing with it; for p > 1 − q the quantile
    moves by the whole length. Bootstrap runs keep each rank's law but not the serial order of its
    samples, which the detector does not use.

    References
    ----------
    .. [1] R. Garg, P. De, HiPC 2006 (seed 001), §4 and Fig. 7, 10.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from jitterlab.compare.validate import anomaly_detection_power
    >>> compute = 3e-4 + np.random.default_rng(0).exponential(1e-5, (16, 2000))
    >>> clean = xr.Dataset({"compute": (("rank", "sample"), compute)})
    >>> power = anomaly_detection_power(clean, [1e-4], [0.001, 0.05], replicates=50, rng=1)
    >>> power["detection_probability"].values.round(2).tolist(), float(power["false_alarm_rate"])
    ([[0.04, 1.0]], 0.0)
    """
    array, threshold = _detector_input(clean, quantile, variable, threshold, side,
                                       sample_dim, rank_dim, name="clean")
    replicates = check_integer("replicates", replicates, minimum=1)
    confidence = check_confidence(confidence)
    durations = _grid("durations", durations, low=0.0, high=math.inf)
    probabilities = _grid("probabilities", probabilities, low=0.0, high=1.0)
    array = array.astype(np.float64).transpose(rank_dim, sample_dim)
    labels = array[rank_dim].values if rank_dim in array.coords else \
        np.arange(array.sizes[rank_dim])
    if slow_ranks is None:
        slow_ranks = [labels[-1]]
    slow_ranks = list(np.atleast_1d(np.asarray(slow_ranks, dtype=object)))
    missing = [r for r in slow_ranks if not np.isin(labels, [r]).any()]
    if missing or not slow_ranks:
        raise ValueError(f"slow_ranks must be labels of {rank_dim!r}; {missing or 'none'} "
                         f"not among {labels.tolist()}")
    slow = np.flatnonzero(np.isin(labels, slow_ranks))
    if 2 * slow.size >= labels.size:
        raise ValueError(f"slow_ranks must be fewer than half of the {labels.size} ranks "
                         f"(the robust z-score takes the majority as normal), got "
                         f"{slow.size}")
    if resample not in ("rank", "pooled"):
        raise ValueError(f"resample must be 'rank' or 'pooled', got {resample!r}")
    rows = [row[~np.isnan(row)] for row in array.values]
    empty = [labels[i] for i, row in enumerate(rows) if row.size == 0]
    if empty:
        raise ValueError(f"clean has no samples for ranks {empty}")
    gen = as_generator(rng)
    detected = np.zeros((durations.size, probabilities.size), dtype=np.int64)
    others = np.zeros_like(detected)
    false_alarms = 0
    clean_ranks = np.setdiff1d(np.arange(labels.size), slow)
    sources = rows if resample == "rank" else [np.concatenate(rows)] * len(rows)
    for _ in range(replicates):
        runs = [source[gen.integers(0, source.size, row.size)]
                for source, row in zip(sources, rows, strict=True)]
        values = np.array([np.quantile(run, quantile) for run in runs])
        false_alarms += bool(_flags(robust_z_scores(values)[0], threshold, side).any())
        uniforms = [gen.random(runs[i].size) for i in slow]
        for j, probability in enumerate(probabilities):
            hits = [u < probability for u in uniforms]
            for i, duration in enumerate(durations):
                injected = values.copy()
                for k, rank in enumerate(slow):
                    injected[rank] = np.quantile(runs[rank] + duration * hits[k], quantile)
                flags = _flags(robust_z_scores(injected)[0], threshold, side)
                detected[i, j] += bool(flags[slow].all())
                others[i, j] += bool(flags[clean_ranks].any())
    p_detect = detected / replicates
    p_false = false_alarms / replicates
    return xr.Dataset(
        {"detection_probability": (("duration", "probability"), p_detect, {
            "units": "1", "long_name": "share of runs in which every slow rank is flagged"}),
         "detection_probability_se": (("duration", "probability"),
                                      np.sqrt(p_detect * (1 - p_detect) / replicates), {
             "units": "1", "long_name": "binomial standard error of the detection "
                                        "probability"}),
         "detection_probability_ci": (("duration", "probability", "ci_bound"),
                                      _binomial_interval(detected, replicates, confidence), {
             "units": "1", "long_name": "Clopper-Pearson interval of the detection "
                                        "probability", "confidence": confidence}),
         "other_ranks_flagged": (("duration", "probability"), others / replicates, {
             "units": "1", "long_name": "share of injected runs in which a clean rank is "
                                        "flagged"}),
         "false_alarm_rate": ((), p_false, {
             "units": "1", "long_name": "share of clean runs with any rank flagged"}),
         "false_alarm_rate_se": ((), math.sqrt(p_false * (1 - p_false) / replicates), {
             "units": "1", "long_name": "binomial standard error of the false-alarm rate"}),
         "false_alarm_rate_ci": (("ci_bound",),
                                 _binomial_interval(np.array(false_alarms), replicates,
                                                    confidence), {
             "units": "1", "long_name": "Clopper-Pearson interval of the false-alarm rate",
             "confidence": confidence}),
         "replicates": ((), replicates, {"units": "1",
                                         "long_name": "resampled runs per grid cell"})},
        coords={"duration": ("duration", durations,
                             {"units": "s", "long_name": "length of the injected detour"}),
                "probability": ("probability", probabilities,
                                {"units": "1", "long_name": "probability of the detour in "
                                                           "one iteration"}),
                "ci_bound": ("ci_bound", ["lower", "upper"],
                             {"long_name": "end of the confidence interval"})},
        attrs={"quantile": float(quantile), "threshold": threshold, "side": side,
               "variable": variable if isinstance(clean, xr.Dataset) else "",
               "slow_ranks": [plain_scalar(r) for r in labels[slow]],
               "n_ranks": int(labels.size), "detected_when": "every slow rank is flagged",
               "resample": resample,
               **provenance_attrs()})


def _grid(name: str, values, low: float, high: float) -> np.ndarray:
    """A 1-D grid of values in (low, high], or an error naming ``name``."""
    try:
        grid = np.atleast_1d(np.asarray(values, dtype=np.float64))
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be numbers, got {values!r}") from None
    if grid.ndim != 1 or grid.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence, got {values!r}")
    if not (np.isfinite(grid).all() and (grid > low).all() and (grid <= high).all()):
        raise ValueError(f"{name} must lie in ({low:g}, {high:g}], got {grid}")
    return grid


def _binomial_interval(successes, trials: int, confidence: float) -> np.ndarray:
    """Clopper-Pearson (exact) interval of a binomial proportion; last axis (lower, upper)."""
    k = np.asarray(successes, dtype=np.float64)
    alpha = 1.0 - confidence
    with np.errstate(invalid="ignore"):
        lower = np.where(k > 0, stats.beta.ppf(alpha / 2, k, trials - k + 1), 0.0)
        upper = np.where(k < trials, stats.beta.ppf(1 - alpha / 2, k + 1, trials - k), 1.0)
    return np.stack([lower, upper], axis=-1)


def _detector_input(ds, quantile, variable, threshold, side, sample_dim, rank_dim, name):
    """The checked (rank, sample) DataArray of the detector, and the threshold."""
    if side not in ("upper", "lower", "both"):
        raise ValueError(f"side must be 'upper', 'lower' or 'both', got {side!r}")
    if isinstance(quantile, bool) or not isinstance(quantile, int | float | np.number) \
            or not 0 < quantile < 1:
        raise ValueError(f"quantile must lie strictly between 0 and 1, got {quantile!r}")
    threshold = check_positive("threshold", threshold)
    if not isinstance(ds, xr.Dataset | xr.DataArray):
        raise TypeError(f"{name} must be an xarray Dataset or DataArray, got "
                        f"{type(ds).__name__}")
    return rank_sample_array(ds, name, variable, sample_dim, rank_dim), threshold


def _flags(scores: np.ndarray, threshold: float, side: str) -> np.ndarray:
    """Which robust z-scores stand out (NaN never does)."""
    with np.errstate(invalid="ignore"):
        if side == "upper":
            return scores > threshold
        if side == "lower":
            return scores < -threshold
        return np.abs(scores) > threshold


