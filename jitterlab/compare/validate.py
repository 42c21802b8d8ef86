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
from collections.abc import Sequence

import numpy as np
import xarray as xr
from scipy import stats

from ..analytic.bounds import tree_depth_term
from ..analytic.maxofn import (
    DEFAULT_QUANTILES,
    MaxOfN,  # noqa: F401  (jl.validate.MaxOfN, its old home)
)
from ..base.checks import check_confidence, check_positive, check_probability, plain_scalar
from ..base.provenance import provenance_attrs
from ..noise import Discrete, Empirical, NoiseModel
from .anomalies import (  # noqa: F401  (jl.validate.*)
    MAD_TO_SD,
    MEAN_AD_TO_SD,
    anomaly_detection_power,
    find_anomalies,
    robust_z_scores,
)
from .independence import batch_means_factor, check_independence  # noqa: F401
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
    confidence = check_confidence(confidence)
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
        where = "measured" if labels[i] is None else f"measured rank {plain_scalar(labels[i])!r}"
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




































