"""Are the ranks' noises independent? Joint exceedances and rank correlations of paired samples.

Max-of-N and the lower bound of Theorem 1 take the N processes' noise as independent.
:func:`check_independence` tests that on samples measured by every rank in the same
iterations (joint exceedances of high quantiles against their product under
independence, Spearman correlations of pairs of ranks), with standard errors widened by
:func:`batch_means_factor` for serial correlation. Also ``jl.validate.*``.
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr
from scipy import stats

from ..analytic.correlated import normalised_ranks, paired_samples, spearman_pairs
from ..base.checks import check_confidence, check_integer
from ..base.provenance import provenance_attrs
from ..base.rng import RngLike, as_generator

__all__ = ["check_independence", "batch_means_factor", "DEFAULT_EXCEEDANCE_LEVELS"]


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
    confidence = check_confidence(confidence)
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
