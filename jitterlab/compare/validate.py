"""Predicted against measured: distances, quantile gaps, Theorem 1 check, anomalous ranks.

:func:`compare` sets a predicted law of the iteration time θ (a max-of-N law, or the
Dataset :func:`jitterlab.max_of_n` returns) against measured samples of θ, for one
process or for every rank, and checks the measured mean against the Theorem 1
interval of Garg & De. :func:`find_anomalies` looks for ranks whose tail quantile stands
out from the rest, the way Garg & De spotted one slow node of 8 processes in the
per-process 99th percentiles (their Fig. 7 and 10).

References
----------
.. [1] R. Garg, P. De, "Impact of Noise on Scaling of Collectives: An Empirical
   Evaluation", HiPC 2006 (seed 001): predicted vs measured distributions (Fig. 6, 9,
   11), Theorem 1, per-process 99th percentiles and the anomalous node (§4, Fig. 7,
   10).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats

from ..analytic.bounds import tree_depth_term
from ..analytic.correlated import (
    normalised_ranks,
    paired_samples,
    rank_sample_array,
    spearman_pairs,
)
from ..analytic.maxofn import (
    DEFAULT_QUANTILES,
    MaxOfN,  # noqa: F401  (jl.validate.MaxOfN, its old home)
)
from ..base.checks import check_integer, check_positive, check_probability
from ..base.provenance import provenance_attrs
from ..base.rng import RngLike, as_generator
from ..noise import Discrete, Empirical, NoiseModel
from .stationarity import stationarity as stationarity  # issue #18 §4, also jl.characterize
from .verdict import (
    CalibrationOverlapError,
    Consistent,
    InInterval,
    Prediction,
    Reference,
    RelativeDifference,
    SameSignAndOrder,
    Verdict,
    VerdictTable,
    WithinBound,
    verdict,
)

__all__ = ["CalibrationOverlapError", "Consistent", "InInterval", "MaxOfN", "Prediction",
           "Reference", "RelativeDifference", "SameSignAndOrder", "Verdict", "VerdictTable",
           "WithinBound", "anomaly_detection_power", "batch_means_factor", "check_independence",
           "compare", "find_anomalies", "robust_z_scores", "verdict"]

#: 1/Φ⁻¹(3/4): makes the median absolute deviation estimate a normal standard deviation
MAD_TO_SD = 1.482602218505602
#: √(π/2): makes the mean absolute deviation estimate a normal standard deviation
MEAN_AD_TO_SD = 1.2533141373155003




# --------------------------------------------------------------------------------------
# measured samples
# --------------------------------------------------------------------------------------
def _measured_array(measured, variable, sample_dim, rank_dim) -> xr.DataArray:
    """The measured samples as a DataArray with dims (sample) or (rank, sample)."""
    if isinstance(measured, xr.Dataset):
        if variable is None:
            names = list(measured.data_vars)
            if len(names) != 1:
                raise ValueError(f"measured is a Dataset with variables {names}; choose one "
                                 "with variable=")
            variable = names[0]
        if variable not in measured:
            raise ValueError(f"measured has no variable {variable!r}; it has "
                             f"{list(measured.data_vars)}")
        measured = measured[variable]
    if isinstance(measured, Discrete):
        if not isinstance(measured, Empirical):
            raise ValueError("measured must be samples (array, Empirical or xarray), not a "
                             f"{type(measured).__name__} law")
        measured = measured.values
    if isinstance(measured, xr.DataArray):
        array = measured.astype(np.float64)
        if array.ndim == 1:
            return array.rename({array.dims[0]: sample_dim})
        if array.ndim == 2 and rank_dim in array.dims:
            other = next(d for d in array.dims if d != rank_dim)
            return array.rename({other: sample_dim}).transpose(rank_dim, sample_dim)
        raise ValueError(f"measured must have one dimension (samples) or two with "
                         f"{rank_dim!r} among them, got dims {array.dims}")
    try:
        values = np.asarray(measured, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("measured must be an array of times, an Empirical law or an "
                         f"xarray object, got {type(measured).__name__}") from None
    if values.ndim == 1:
        return xr.DataArray(values, dims=sample_dim)
    if values.ndim == 2:
        return xr.DataArray(values, dims=(rank_dim, sample_dim),
                            coords={rank_dim: np.arange(values.shape[0])})
    raise ValueError(f"measured must be 1-D (samples) or 2-D (rank, sample), got shape "
                     f"{values.shape}")


def _clean(samples: np.ndarray, where: str, padded: bool) -> np.ndarray:
    """The sorted samples; with ``padded`` a rank may end in NaN padding (ragged ranks)."""
    missing = np.isnan(samples)
    if padded and missing.any():
        first = int(np.argmax(missing))
        if not missing[first:].all():
            raise ValueError(f"{where}: NaN at sample {first} before measured samples; "
                             "NaN is accepted only as padding at the end of a rank")
        samples, missing = samples[:first], missing[:first]
    if samples.size == 0 or missing.all():
        raise ValueError(f"{where}: no measured samples (all NaN or empty)")
    if missing.any():
        raise ValueError(f"{where}: contains NaN at sample {int(np.argmax(missing))}; "
                         "remove missing iterations before comparing")
    if not np.isfinite(samples).all():
        raise ValueError(f"{where}: measured samples must be finite")
    return np.sort(samples)


# --------------------------------------------------------------------------------------
# the predicted side
# --------------------------------------------------------------------------------------
def _from_dataset(ds: xr.Dataset, n, quantiles):
    if not {"mean", "quantiles"} <= set(ds.data_vars):
        raise ValueError("a predicted Dataset needs the variables 'mean' and 'quantiles' "
                         "(the output of jitterlab.max_of_n)")
    if "n" in ds.dims:
        if n is None:
            if ds.sizes["n"] != 1:
                raise ValueError(f"the predicted Dataset has n = {ds['n'].values.tolist()}; "
                                 "choose one with n=")
            ds = ds.isel(n=0)
        else:
            if int(n) not in ds["n"].values.tolist():
                raise ValueError(f"the predicted Dataset has no n = {n}; it has "
                                 f"{ds['n'].values.tolist()}")
            ds = ds.sel(n=int(n))
    mean = float(ds["mean"])
    available = ds["quantile"].values
    if quantiles is None:
        levels = available.astype(np.float64)
    else:
        levels = check_probability("quantiles", quantiles).ravel()
        missing = [q for q in levels.tolist() if not np.isclose(available, q).any()]
        if missing:
            raise ValueError(f"the predicted Dataset has no quantile levels {missing}; it "
                             f"has {available.tolist()}")
    values = np.array([float(ds["quantiles"].values[np.argmin(np.abs(available - q))])
                       for q in levels.tolist()])
    n_value = int(ds["n"]) if "n" in ds.coords else None
    description = ds.attrs.get("model", "max_of_n Dataset")
    return mean, levels, values, None, n_value, description


def _from_model(model: NoiseModel, quantiles):
    levels = check_probability("quantiles", DEFAULT_QUANTILES if quantiles is None
                               else quantiles).ravel()
    return model.mean(), levels, model.ppf(levels), model.cdf, None, model.describe()


# --------------------------------------------------------------------------------------
# compare
# --------------------------------------------------------------------------------------
def compare(predicted, measured, tau: float | None = None, n: int | None = None, *,
            quantiles: Sequence[float] | None = None, fanout: int = 2,
            depth: str = "tree", confidence: float = 0.95, variable: str | None = None,
            sample_dim: str = "sample", rank_dim: str = "rank") -> xr.Dataset:
    """Compare a predicted law of θ with measured samples of θ (per rank if given).

    Parameters
    ----------
    predicted : NoiseModel or xarray.Dataset
        The predicted law of the iteration time θ, for example
        ``MaxOfN(noise + w, n=N)`` (the lower bound of Theorem 1), or the Dataset of
        :func:`jitterlab.max_of_n` (``mean`` and ``quantiles``; a KS test then is not
        possible and reports NaN).
    measured : array_like, Empirical, xarray.DataArray or xarray.Dataset
        Measured θ samples: 1-D, or 2-D with a ``rank`` dimension (a numpy 2-D array
        is read as (rank, sample)). NaN is refused, except as padding at the end of a
        rank (ranks may have different numbers of samples). [s]
    tau : float, optional
        One-way latency of a barrier-tree edge; with ``n``, the measured mean is
        checked against the Theorem 1 interval. [s]
    n : int, optional
        Number of processes N: selects N in a predicted Dataset, and sets the tree
        depth of the Theorem 1 interval. [-]
    quantiles : sequence of float, optional
        Quantile levels to compare; default (0.5, 0.9, 0.99) for a model, the levels of
        the Dataset otherwise. [-]
    fanout : int, default 2
        Children per node of the barrier tree. [-]
    depth : {"tree", "paper"}
        Depth D of the Theorem 1 interval, as in :func:`jitterlab.theorem1_bounds`:
        "tree" (default) the complete tree's, "paper" Garg & De's log2((N + 1)/2).
    confidence : float, default 0.95
        Confidence level of the two-sided interval of the measured mean, on which the
        Theorem 1 verdict rests; strictly between 0 and 1. [-]
    variable : str, optional
        The variable of a measured Dataset.
    sample_dim, rank_dim : str
        Names of the sample and rank dimensions of measured xarray data.

    Returns
    -------
    xarray.Dataset
        ``n_samples``; ``ks_statistic`` and ``ks_pvalue`` (two-sided
        Kolmogorov-Smirnov test of the samples against the predicted CDF);
        ``mean_measured`` and ``mean_measured_se`` [s], ``mean_measured_ci`` (dim
        ``ci_bound`` = "lower", "upper"; its ``confidence`` attribute is the level): the
        confidence interval of the measured mean [s]; ``mean_predicted`` [s],
        ``mean_gap`` = measured − predicted [s]; ``quantile_measured``,
        ``quantile_predicted`` and ``quantile_gap`` (dim ``quantile``) [s]. With tau
        and n also ``theorem1_lower`` = E[max], ``theorem1_upper`` = E[max] + 2τ·D [s],
        ``theorem1_verdict`` ("inside", "below", "above" or "undetermined", see Notes)
        and ``inside_theorem1`` (bool: the verdict is "inside"). Measured variables
        carry the ``rank`` dimension when the measurement has one. Attributes: the
        predicted law, tau, n, fanout, depth, confidence, provenance.

    Notes
    -----
    Theorem 1 (Garg & De): E[max_i(w_i + δ_i)] <= E[θ] <= E[max_i(w_i + δ_i)] + 2τ·D,
    with D the depth of the barrier tree (:func:`jitterlab.tree_depth`, or the paper's
    log2((N + 1)/2) with ``depth="paper"``). The lower end
    is the mean of ``predicted``, which should therefore be the law of the maximum.

    The check is a test of that interval hypothesis against the sampling error of the
    mean x̄ of m samples: the confidence interval x̄ ± t·s/√m (Student t with m − 1
    degrees of freedom, t its (1 + confidence)/2 quantile, s the sample standard
    deviation) is compared with [lower, upper]. The verdict is "below" if the whole
    interval lies below the lower bound, "above" if it lies above the upper bound,
    "inside" if it meets [lower, upper] (the mean is consistent with Theorem 1 at that
    confidence), and "undetermined" with fewer than two samples. The false-alarm rate
    (a verdict other than "inside" although E[θ] obeys Theorem 1) is at most
    1 − confidence: when E[θ] sits on one bound and the other bound is many standard
    errors away, only one tail of the two-sided interval can miss, and the rate is
    (1 − confidence)/2 (2.5 % at 95 %); when the two bounds coincide (τ = 0) both tails
    count, 1 − confidence. For strongly skewed θ and few samples the t interval is only
    approximate. Samples are taken as independent; for autocorrelated iteration times
    the standard error, and so the interval, is too small.

    Measured quantiles interpolate linearly between order statistics. For a discrete
    predicted law (an empirical max-of-N) the KS p-value is conservative.

    References
    ----------
    .. [1] R. Garg, P. De, HiPC 2006 (seed 001), Theorem 1 and Fig. 6, 9, 11.

    Examples
    --------
    >>> import numpy as np, jitterlab as jl
    >>> from jitterlab.compare.validate import MaxOfN, compare
    >>> law = MaxOfN(jl.noise.Exponential(mean=1e-5) + 1e-3, n=31)
    >>> theta = law.sample(2000, rng=1) + 20e-6  # measured: the maximum plus latency
    >>> result = compare(law, theta, tau=5e-6, n=31)
    >>> str(result["theorem1_verdict"].values), round(float(result["mean_gap"]) * 1e6)
    ('inside', 20)
    >>> np.round(result["mean_measured_ci"].values * 1e6, 1)  # 95 % interval of the mean [µs]
    array([1059.6, 1060.7])
    """
    if isinstance(predicted, xr.Dataset):
        mean_p, levels, quant_p, cdf, n_ds, description = _from_dataset(predicted, n,
                                                                         quantiles)
        if n is None:
            n = n_ds
    elif isinstance(predicted, NoiseModel):
        mean_p, levels, quant_p, cdf, _, description = _from_model(predicted, quantiles)
    else:
        raise TypeError("predicted must be a noise model (e.g. validate.MaxOfN) or the "
                        f"Dataset of jitterlab.max_of_n, got {type(predicted).__name__}")
    check_probability("quantiles", levels)
    confidence = _check_confidence(confidence)
    if depth not in ("tree", "paper"):
        raise ValueError(f"depth must be 'tree' or 'paper', got {depth!r}")
    if tau is not None:
        tau = check_positive("tau", tau, allow_zero=True)
        if n is None:
            raise ValueError("the Theorem 1 check needs n (the number of processes) with tau")
    samples = _measured_array(measured, variable, sample_dim, rank_dim)
    per_rank = rank_dim in samples.dims
    blocks = samples.values if per_rank else samples.values[None, :]
    labels = samples[rank_dim].values if per_rank else [None]
    n_rows = blocks.shape[0]
    counts = np.empty(n_rows)
    means, ses = np.empty(n_rows), np.empty(n_rows)
    ks, pvalues = np.full(n_rows, math.nan), np.full(n_rows, math.nan)
    quant_m = np.empty((n_rows, levels.size))
    for i in range(n_rows):
        where = "measured" if labels[i] is None else f"measured rank {_plain(labels[i])!r}"
        values = _clean(blocks[i], where, padded=per_rank)
        counts[i] = values.size
        means[i] = values.mean()
        ses[i] = values.std(ddof=1) / math.sqrt(values.size) if values.size > 1 else math.nan
        quant_m[i] = np.quantile(values, levels)
        if cdf is not None:
            result = stats.kstest(values, cdf)
            ks[i], pvalues[i] = float(result.statistic), float(result.pvalue)

    def measured_var(data, units, long_name, extra=()):
        data = data if per_rank else data[0]
        dims = ((rank_dim,) if per_rank else ()) + tuple(extra)
        return (dims, data, {"units": units, "long_name": long_name})

    interval = _mean_interval(means, ses, counts, confidence)  # (rank, ci_bound)
    data_vars = {
        "n_samples": measured_var(counts, "1", "number of measured samples"),
        "ks_statistic": measured_var(ks, "1", "Kolmogorov-Smirnov distance between the "
                                              "measured and the predicted CDF"),
        "ks_pvalue": measured_var(pvalues, "1", "p-value of the two-sided KS test"),
        "mean_measured": measured_var(means, "s", "mean of the measured θ"),
        "mean_measured_se": measured_var(ses, "s", "standard error of the measured mean"),
        "mean_measured_ci": measured_var(
            interval, "s",
            "confidence interval of the measured mean (Student t)", ("ci_bound",)),
        "mean_predicted": ((), mean_p, {"units": "s", "long_name": "predicted mean of θ"}),
        "mean_gap": measured_var(means - mean_p, "s", "measured minus predicted mean"),
        "quantile_measured": measured_var(quant_m, "s", "quantiles of the measured θ",
                                          ("quantile",)),
        "quantile_predicted": (("quantile",), np.asarray(quant_p, dtype=np.float64),
                               {"units": "s", "long_name": "predicted quantiles of θ"}),
        "quantile_gap": measured_var(quant_m - np.asarray(quant_p)[None, :], "s",
                                     "measured minus predicted quantile", ("quantile",)),
    }
    data_vars["mean_measured_ci"][2]["confidence"] = confidence
    attrs = {"predicted": description, "fanout": int(fanout),
             "tau": math.nan if tau is None else tau,
             "n": -1 if n is None else int(n), "confidence": confidence}
    if tau is not None:
        d = float(tree_depth_term(np.array([int(n)]), int(fanout), depth)[0])
        depth = int(d) if depth == "tree" else d
        upper = mean_p + 2.0 * tau * depth
        verdict = _theorem1_verdict(interval, mean_p, upper)
        data_vars.update(
            theorem1_lower=((), mean_p, {"units": "s", "long_name": "E[max_i(w_i + δ_i)]"}),
            theorem1_upper=((), upper, {"units": "s", "long_name": "E[max] + 2τ·depth"}),
            theorem1_verdict=measured_var(verdict, "", "where the confidence interval of "
                                          "the measured mean lies: inside (meets the "
                                          "Theorem 1 interval), below, above, or "
                                          "undetermined"),
            inside_theorem1=measured_var(verdict == "inside", "1",
                                         "measured mean consistent with the Theorem 1 "
                                         "interval at the stated confidence"))
        del data_vars["theorem1_verdict"][2]["units"]
        attrs["depth"] = depth
    coords = {"quantile": ("quantile", levels, {"long_name": "quantile level"}),
              "ci_bound": ("ci_bound", ["lower", "upper"],
                           {"long_name": "end of the confidence interval"})}
    if per_rank:
        coords[rank_dim] = (rank_dim, samples[rank_dim].values)
        for name, coord in samples.coords.items():
            if name != rank_dim and coord.dims == (rank_dim,):
                coords[name] = coord.variable
    return xr.Dataset(data_vars, coords=coords, attrs={**attrs, **provenance_attrs()})


def _check_confidence(confidence) -> float:
    if isinstance(confidence, bool | np.bool_) or not isinstance(confidence,
                                                                  int | float | np.number):
        raise TypeError(f"confidence must be a number strictly between 0 and 1, got "
                        f"{type(confidence).__name__} {confidence!r}")
    confidence = float(confidence)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    return confidence


def _mean_interval(means, ses, counts, confidence) -> np.ndarray:
    """(lower, upper) of the Student-t interval of each mean; NaN below two samples."""
    with np.errstate(invalid="ignore"):
        factor = stats.t.ppf(0.5 + 0.5 * confidence, df=np.maximum(counts - 1, 1))
    half = np.where(counts > 1, factor * ses, math.nan)
    return np.stack([means - half, means + half], axis=-1)


def _theorem1_verdict(interval, lower, upper) -> np.ndarray:
    """'below', 'above', 'inside' or 'undetermined' for each (lower, upper) row."""
    verdict = np.full(interval.shape[:-1], "inside", dtype="<U12")
    verdict[interval[..., 1] < lower] = "below"
    verdict[interval[..., 0] > upper] = "above"
    verdict[np.isnan(interval).any(axis=-1)] = "undetermined"
    return verdict


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
        anomalous_nodes = [_plain(k) for k in sizes.index
                           if hits[k] >= 1 and hits[k] >= node_share * sizes[k]]
        table = table.drop(columns="flagged")
        result = table[flagged].sort_values(["node", rank_dim], kind="stable")
    else:
        result = table[flagged]
    result.attrs = {"median": centre, "scale": scale, "threshold": threshold,
                    "quantile": float(quantile), "variable": variable, "side": side,
                    "n_ranks": int(ranks.size), "anomalous_nodes": anomalous_nodes,
                    "z_scores": dict(zip([_plain(r) for r in ranks], scores.tolist(),
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
    confidence = _check_confidence(confidence)
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
               "slow_ranks": [_plain(r) for r in labels[slow]],
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


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


# --------------------------------------------------------------------------------------
# independence across ranks
# --------------------------------------------------------------------------------------
#: levels of the pooled samples used as default thresholds of the joint-exceedance test
DEFAULT_EXCEEDANCE_LEVELS = (0.5, 0.75, 0.9, 0.95, 0.99)








def _exceedance(over: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(P(all ranks over), Π_i P(rank i over)) for boolean (rank, sample, threshold)."""
    return over.all(axis=0).mean(axis=0), over.mean(axis=1).prod(axis=0)


def _exceedance_se(over: np.ndarray, joint, marginals) -> tuple[np.ndarray, np.ndarray,
                                                                  np.ndarray]:
    """Delta-method standard errors of p̂_all, Π p̂_i and their difference (per threshold).

    The estimators are smooth functions of the means of Z_t = (1{all over}, 1{rank 1
    over}, …, 1{rank N over}) over iterations t; with Σ the covariance of Z_t and g the
    gradient, Var ≈ gᵀΣg / m.
    """
    n_ranks, m, k = over.shape
    se_joint, se_product, se_excess = (np.empty(k) for _ in range(3))
    for j in range(k):
        z = np.vstack([over[:, :, j].all(axis=0), over[:, :, j]]).astype(np.float64)
        cov = np.atleast_2d(np.cov(z, ddof=1))
        p = marginals[:, j]
        grad_product = np.array([np.prod(np.delete(p, i)) for i in range(n_ranks)])
        g_joint = np.r_[1.0, np.zeros(n_ranks)]
        g_product = np.r_[0.0, grad_product]
        se_joint[j] = math.sqrt(max(g_joint @ cov @ g_joint, 0.0) / m)
        se_product[j] = math.sqrt(max(g_product @ cov @ g_product, 0.0) / m)
        g = g_joint - g_product
        se_excess[j] = math.sqrt(max(g @ cov @ g, 0.0) / m)
    return se_joint, se_product, se_excess


def batch_means_factor(samples, batches: int = 20) -> float:
    """How much correlation between consecutive samples widens the error of their mean.

    The standard error of the mean from the means of ``batches`` consecutive batches,
    divided by the one that independent samples would have (sd / √n), and at least 1:
    multiply ``sd / √n`` by it to get an error that holds for serially correlated
    samples, such as the iteration times of one run (batch means, e.g. Law & Kelton,
    "Simulation Modeling and Analysis", §9.5.3). The samples that do not fill the last
    batch are left out.

    Parameters
    ----------
    samples : array_like of float
        Samples in the order they were taken (1-D).
    batches : int, default 20
        Number of batches (at least 2; each must hold at least 2 samples). [-]

    Returns
    -------
    float
        The factor, >= 1; 1 for constant samples. [-]

    Raises
    ------
    ValueError
        If ``samples`` is not 1-D, holds non-finite values or fewer than 2 per batch.

    Examples
    --------
    >>> import numpy as np
    >>> from jitterlab.compare.validate import batch_means_factor
    >>> batch_means_factor(np.repeat(np.arange(100.0), 50), batches=20) > 5  # long runs
    True
    """
    batches = check_integer("batches", batches, 2)
    x = np.asarray(samples, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"samples must be 1-D (in the order taken), got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("samples must be finite")
    size = x.size // batches
    if size < 2:
        raise ValueError(f"{x.size} samples are too few for {batches} batches of at least 2")
    x = x[: size * batches]
    if x.std() == 0:
        return 1.0
    means = x.reshape(batches, size).mean(axis=1)
    return max(1.0, float(means.std(ddof=1) / np.sqrt(batches)
                          / (x.std(ddof=1) / np.sqrt(x.size))))


def check_independence(samples, thresholds=None, *, variable: str = "compute",
                       confidence: float = 0.95, null: str = "shift",
                       resamples: int = 999, rng: RngLike = None,
                       sample_dim: str = "sample", rank_dim: str = "rank") -> xr.Dataset:
    """Test whether the ranks' samples of one iteration are independent of each other.

    Theorem 1's lower bound and max-of-N take the noise δ_i of the N processes in one
    iteration as independent. With per-rank samples paired by iteration (sample j of
    every rank is the same iteration), two checks of that hypothesis: the Spearman rank
    correlation of every pair of ranks, and the joint exceedance P(every rank > x)
    against the product of the marginal exceedances Π_i P(rank i > x), which is what
    independence predicts and what sets the law of the maximum.

    Parameters
    ----------
    samples : xarray.Dataset, xarray.DataArray or array_like
        Per-rank samples with dims (``rank``, ``sample``), paired by iteration along
        ``sample``, for example ``jitterlab.datasets.load_pb(ranks=2)`` (its
        ``compute`` times w + δ). Iterations with a NaN on any rank are left out. [s]
    thresholds : array_like, optional
        Thresholds x of the joint-exceedance test; default the 0.5, 0.75, 0.9, 0.95
        and 0.99 quantiles of all samples pooled. [s]
    variable : str, default "compute"
        The variable of a Dataset.
    confidence : float, default 0.95
        Level of the confidence intervals, and 1 − the size of the test in the
        ``independent`` verdict; strictly between 0 and 1. [-]
    null : {"shift", "permutation"}, default "shift"
        How the p-values sample the null hypothesis: "shift" moves every rank but the
        first by its own random circular shift of the iterations, which keeps each
        rank's serial structure (bursts, slow phases) and breaks only the alignment
        across ranks; "permutation" shuffles the iterations of every rank but the
        first, which is exact only for iterations independent in time.
    resamples : int, default 999
        Number of shifted or permuted data sets; enough that the smallest adjusted
        p-value, (number of tests)/(1 + resamples), can fall below 1 − confidence. [-]
    rng : int or numpy.random.Generator, optional
        Seed or generator of the resampling.
    sample_dim, rank_dim : str
        Dimension names.

    Returns
    -------
    xarray.Dataset
        Per pair of ranks (dim ``pair``, coordinates ``rank_a``, ``rank_b``):
        ``spearman`` [1], its confidence interval ``spearman_ci`` (dim ``ci_bound``)
        [1] and ``spearman_pvalue`` [1]. Per threshold (dim ``threshold``) [s]:
        ``joint_exceedance`` P(every rank > x) and ``joint_exceedance_se``,
        ``independent_exceedance`` Π_i P(rank i > x) and
        ``independent_exceedance_se``, ``exceedance_excess`` (their difference) with
        ``exceedance_excess_se`` and ``exceedance_excess_ci``, ``exceedance_ratio``
        and ``exceedance_pvalue`` [1]. Per rank: ``exceedance`` P(rank > x) (dims
        ``rank``, ``threshold``) and ``lag1_autocorrelation``, the Spearman correlation
        of consecutive iterations [1] (large values mean the analytic standard errors
        are too small). Scalars: ``n_iterations``,
        ``smallest_pvalue`` (Bonferroni-adjusted over every test) and ``independent``
        (True unless that adjusted p-value is below 1 − confidence). Attributes: null,
        resamples, confidence, provenance.

    Notes
    -----
    Spearman's ρ_s is Pearson's correlation of the ranks. Its interval is Fisher's
    z = atanh(ρ_s) ± z_{(1+c)/2}·σ, with Bonett & Wright's σ² = (1 + ρ_s²/2)/(m − 3)
    for m iterations. The joint exceedance p̂_all and the product Π_i p̂_i are smooth
    functions of the means of the indicators 1{all > x}, 1{rank i > x}; their standard
    errors and that of the excess p̂_all − Π_i p̂_i come from the delta method with the
    indicators' sample covariance. Both intervals take iterations as independent in
    time; ``lag1_autocorrelation`` says whether they are. The p-values do not: they
    compare the observed |ρ_s| and |excess| with their values in ``resamples`` data
    sets in which the ranks were made independent (``null``), p = (1 + #{resampled ≥
    observed})/(1 + resamples).

    A positive excess makes the maximum over ranks smaller than max-of-N of the
    marginals predicts: P(max ≤ x) = P(all ≤ x), which positive dependence raises
    above Π_i P(rank i ≤ x). Measured θ can then fall below Theorem 1's "lower bound".

    References
    ----------
    .. [1] R. Garg, P. De, HiPC 2006 (seed 001), §2.3 (independence across
       processes), Theorem 1.
    .. [2] D. G. Bonett, T. A. Wright, "Sample size requirements for estimating
       Pearson, Kendall and Spearman correlations", Psychometrika 65, 2000.

    Examples
    --------
    >>> import numpy as np
    >>> from jitterlab.compare.validate import check_independence
    >>> rng = np.random.default_rng(0)
    >>> common = rng.exponential(1e-5, 2000)  # noise shared by both ranks
    >>> compute = 3e-4 + common + rng.exponential(1e-5, (2, 2000))
    >>> result = check_independence(compute, rng=1)
    >>> bool(result["independent"]), round(float(result["spearman"][0]), 2)
    (False, 0.46)
    """
    if null not in ("shift", "permutation"):
        raise ValueError(f"null must be 'shift' or 'permutation', got {null!r}")
    confidence = _check_confidence(confidence)
    resamples = check_integer("resamples", resamples, minimum=1)
    gen = as_generator(rng)
    paired = paired_samples(samples, variable, sample_dim, rank_dim)
    values = paired.values
    n_ranks, m = values.shape
    if thresholds is None:
        thresholds = np.quantile(values, DEFAULT_EXCEEDANCE_LEVELS)
    else:
        try:
            thresholds = np.asarray(thresholds, dtype=np.float64).ravel()
        except (TypeError, ValueError):
            raise TypeError(f"thresholds must be numbers [s], got {thresholds!r}") from None
        if thresholds.size == 0 or not np.isfinite(thresholds).all():
            raise ValueError(f"thresholds must be finite numbers [s], got {thresholds}")
    pairs = [(a, b) for a in range(n_ranks) for b in range(a + 1, n_ranks)]
    n_tests = len(pairs) + thresholds.size
    size = round(1.0 - confidence, 12)  # the test's size, without 1 − 0.95 = 0.05000000000000004
    if n_tests / (1 + resamples) >= size:
        needed = math.floor(n_tests / size)
        while n_tests / (1 + needed) >= size:
            needed += 1
        raise ValueError(f"resamples={resamples} cannot give a p-value below "
                         f"{size:g} over {n_tests} tests (Bonferroni): the smallest "
                         f"is {n_tests}/(1 + resamples); use resamples >= {needed}")
    ranks = normalised_ranks(values)
    rho = spearman_pairs(ranks, pairs)
    over = values[:, :, None] > thresholds[None, None, :]
    joint, product = _exceedance(over)
    marginals = over.mean(axis=1)
    se_joint, se_product, se_excess = _exceedance_se(over, joint, marginals)
    excess = joint - product

    # the null: every rank but the first moved independently of the others
    rho_null = np.empty((resamples, len(pairs)))
    excess_null = np.empty((resamples, thresholds.size))
    index = np.arange(m)
    for r in range(resamples):
        if null == "shift":
            orders = [index] + [np.roll(index, int(gen.integers(1, m)))
                                for _ in range(n_ranks - 1)]
        else:
            orders = [index] + [gen.permutation(m) for _ in range(n_ranks - 1)]
        order = np.stack(orders)
        rho_null[r] = spearman_pairs(np.take_along_axis(ranks, order, axis=1), pairs)
        moved = np.take_along_axis(over, order[:, :, None], axis=1)
        excess_null[r] = np.subtract(*_exceedance(moved))
    tolerance = 1e-12
    p_rho = (1 + (np.abs(rho_null) >= np.abs(rho) - tolerance).sum(axis=0)) / (1 + resamples)
    p_excess = ((1 + (np.abs(excess_null) >= np.abs(excess) - tolerance).sum(axis=0))
                / (1 + resamples))

    z = stats.norm.ppf(0.5 + 0.5 * confidence)
    with np.errstate(divide="ignore"):
        centre = np.arctanh(np.clip(rho, -1.0, 1.0))
    sigma = np.sqrt((1 + rho ** 2 / 2) / max(m - 3, 1))
    rho_ci = np.tanh(np.stack([centre - z * sigma, centre + z * sigma], axis=-1))
    excess_ci = np.stack([excess - z * se_excess, excess + z * se_excess], axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(product > 0, joint / product, math.nan)
    lag1 = np.array([_lag1(row) for row in values])
    smallest = min(1.0, float(min(p_rho.min(), p_excess.min())) * n_tests)

    def var(dims, data, units, long_name, **extra):
        return (dims, data, {"units": units, "long_name": long_name, **extra})

    ci = {"confidence": confidence}
    data_vars = {
        "n_iterations": var((), m, "1", "iterations measured on every rank"),
        "spearman": var(("pair",), rho, "1", "Spearman rank correlation"),
        "spearman_ci": var(("pair", "ci_bound"), rho_ci, "1",
                           "confidence interval of the Spearman correlation (Fisher z, "
                           "Bonett-Wright variance)", **ci),
        "spearman_pvalue": var(("pair",), p_rho, "1",
                               f"p-value of ρ_s = 0 against {null}-resampled ranks"),
        "exceedance": var(("rank", "threshold"), marginals, "1", "P(rank > x)"),
        "joint_exceedance": var(("threshold",), joint, "1", "P(every rank > x)"),
        "joint_exceedance_se": var(("threshold",), se_joint, "1",
                                   "standard error of P(every rank > x)"),
        "independent_exceedance": var(("threshold",), product, "1",
                                      "Π_i P(rank i > x): P(every rank > x) if the ranks "
                                      "are independent"),
        "independent_exceedance_se": var(("threshold",), se_product, "1",
                                         "standard error of Π_i P(rank i > x)"),
        "exceedance_excess": var(("threshold",), excess, "1",
                                 "P(every rank > x) − Π_i P(rank i > x)"),
        "exceedance_excess_se": var(("threshold",), se_excess, "1",
                                    "standard error of the excess (delta method)"),
        "exceedance_excess_ci": var(("threshold", "ci_bound"), excess_ci, "1",
                                    "confidence interval of the excess (normal)", **ci),
        "exceedance_ratio": var(("threshold",), ratio, "1",
                                "P(every rank > x) / Π_i P(rank i > x)"),
        "exceedance_pvalue": var(("threshold",), p_excess, "1",
                                 f"p-value of excess = 0 against {null}-resampled ranks"),
        "lag1_autocorrelation": var(("rank",), lag1, "1",
                                    "rank correlation of consecutive iterations of a rank"),
        "smallest_pvalue": var((), smallest, "1",
                               "smallest p-value × number of tests (Bonferroni), at most 1"),
        "independent": var((), smallest >= size, "1",
                           "independence not rejected at the stated confidence", **ci),
    }
    coords = {
        "rank": (rank_dim, paired[rank_dim].values),
        "threshold": ("threshold", thresholds, {"units": "s", "long_name": "threshold x"}),
        "pair": ("pair", np.arange(len(pairs))),
        "rank_a": ("pair", paired[rank_dim].values[[a for a, _ in pairs]]),
        "rank_b": ("pair", paired[rank_dim].values[[b for _, b in pairs]]),
        "ci_bound": ("ci_bound", ["lower", "upper"],
                     {"long_name": "end of the confidence interval"}),
    }
    if rank_dim != "rank":
        for name, item in list(data_vars.items()):
            data_vars[name] = (tuple(rank_dim if d == "rank" else d for d in item[0]),
                               *item[1:])
        coords[rank_dim] = coords.pop("rank")
    attrs = {"null": null, "resamples": resamples, "confidence": confidence,
             "variable": variable if isinstance(samples, xr.Dataset) else ""}
    return xr.Dataset(data_vars, coords=coords, attrs={**attrs, **provenance_attrs()})


def _lag1(row: np.ndarray) -> float:
    """Spearman correlation of consecutive samples (one long outlier cannot hide it)."""
    ranks = normalised_ranks(np.stack([row[:-1], row[1:]]))
    return float(ranks[0] @ ranks[1]) if np.any(ranks[0]) and np.any(ranks[1]) else math.nan
