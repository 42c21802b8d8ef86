"""Noise laws given by points: fixed detours (Bernoulli), measured samples, histograms.

References
----------
.. [1] R. Garg, P. De, "Impact of Noise on Scaling of Collectives: An Empirical
   Evaluation", HiPC 2006 (seed 001): per-process samples of w + δ stored as
   fixed-bin histograms over hour-long runs (§3-4).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special, stats

from ..base.checks import check_integer
from ..base.integrate import max_isf_single, quantile_tail_integral
from ..base.threads import kernel_threads
from ._base import NoiseModel, check_positive, check_probability
from .kernels import step_sum_one_minus_power

_PARALLEL_MIN_STEPS = 16384  # fewer steps of the CDF: one thread (jitterlab.base.threads)
__all__ = ["Discrete", "Bernoulli", "Empirical", "Histogram", "TailedEmpirical",
           "TailedHistogram", "TailWarning", "fit_binned_gpd"]

#: F(x)^N below exp(-_NEGLIGIBLE_LOG) counts as zero in the exact max-of-N sums
_NEGLIGIBLE_LOG = 40.0
#: up to this N, F^N by repeated squaring (relative error ~ N·ε) in a numba kernel
_POWER_BY_SQUARING_MAX_N = 16_384


class TailWarning(UserWarning):
    """N is so large that the maximum of a measured sample just repeats its largest value."""


def as_times(name: str, values) -> np.ndarray:
    """Validate a 1-D array of finite non-negative times."""
    raw = np.asarray(values)
    if raw.dtype.kind in "USb":
        raise TypeError(f"{name} must be numbers (times in seconds), got {values!r:.60}")
    try:
        arr = raw.astype(float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be numbers (times in seconds), got "
                        f"{values!r:.60}") from None
    if arr.ndim != 1:
        arr = arr.ravel()
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN ({int(np.isnan(arr).sum())} values)")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains infinite values")
    if (arr < 0).any():
        raise ValueError(f"{name} contains negative times (smallest {arr.min():g})")
    return arr


def _top_cell_reached(top_mass: float, n: int) -> bool:
    """True when more than 10% of maxima of ``n`` draws fall in the top cell of a
    measured law (its largest sample, or its top occupied bin), of probability
    ``top_mass``: beyond that N the data say nothing about the tail."""
    if top_mass >= 1.0:
        return n > 1
    return -math.expm1(n * math.log1p(-top_mass)) > 0.1


def mean_power_on_linear_pieces(a_tail, b_tail, mass, n: int) -> np.ndarray:
    """Mean of F^n over each piece on which the CDF rises linearly from a to b.

    ``a_tail`` = 1 − a and ``b_tail`` = 1 − b are upper tails (precise near F = 1),
    ``mass`` = b − a. The mean is (b^{n+1} − a^{n+1}) / ((n + 1)·mass), evaluated as
    b^{n+1}·(1 − (a/b)^{n+1}) / ((n + 1)·mass) with log(a/b) = log1p(−mass/b) to stay
    precise for huge n; a^n on pieces without mass.
    """
    a_tail, b_tail, mass = (np.asarray(v, dtype=float) for v in (a_tail, b_tail, mass))
    b = 1.0 - b_tail
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        b_power = np.exp((n + 1) * np.log1p(-b_tail))
        ratio = np.log1p(-np.minimum(np.where(b > 0, mass / b, 1.0), 1.0))  # log(a/b)
        rising = b_power * -np.expm1((n + 1) * ratio) / ((n + 1) * mass)
        flat = np.exp(n * np.log1p(-a_tail))
    mean_power = np.where(mass > 1e-300, rising, flat)
    return np.where(b > 0, mean_power, 0.0)


class Discrete(NoiseModel):
    """A law on finitely many points: P(δ = values[k]) = weights[k].

    Parameters
    ----------
    values : array_like
        Support points. [s]
    weights : array_like, optional
        Non-negative weights, normalised to one; equal weights when omitted.
    """

    def __init__(self, values, weights=None):
        values = as_times("values", values)
        if weights is not None:
            weights = np.asarray(weights, dtype=float).ravel()
            if weights.shape != values.shape:
                raise ValueError(f"weights must have one value per point ({values.size}), "
                                 f"got {weights.size}")
            if np.any(~np.isfinite(weights)) or np.any(weights < 0) or weights.sum() <= 0:
                raise ValueError("weights must be finite, non-negative and not all zero")
            values, weights = values[weights > 0], weights[weights > 0]  # no empty points
        order = np.argsort(values, kind="stable")
        self.values = values[order]
        n = self.values.size
        if weights is None:
            # equal weights: exact fractions k/n, no rounding from a cumulative sum
            self._head = np.arange(n + 1, dtype=float) / n
            self._tail = np.arange(n, -1, -1, dtype=float) / n
        else:
            probs = weights[order] / weights.sum()
            self._head = np.concatenate([[0.0], np.cumsum(probs)])
            self._tail = np.concatenate([np.cumsum(probs[::-1])[::-1], [0.0]])
            self._head[-1], self._tail[0] = 1.0, 1.0
        self.lower, self.upper = float(self.values[0]), float(self.values[-1])
        self._rising_tail = -self._tail[1:]  # increasing, for searchsorted in isf
        self._mean = float(np.dot(np.diff(self._head), self.values))

    # P(X <= values[k]) = head[k + 1] and P(X > values[k]) = tail[k + 1]
    def cdf(self, x):
        return self._head[np.searchsorted(self.values, np.asarray(x, dtype=float), "right")]

    def sf(self, x):
        return self._tail[np.searchsorted(self.values, np.asarray(x, dtype=float), "right")]

    def isf(self, q):
        q = check_probability("q", q)
        k = np.searchsorted(self._rising_tail, -q, "left")
        return self.values[np.minimum(k, self.values.size - 1)]

    def mean(self) -> float:
        return self._mean

    @property
    def atoms(self):
        return np.unique(self.values)

    @property
    def params(self) -> dict:
        return {"points": int(self.values.size)}

    def _exact_max_mean(self, n: int) -> float:
        """E[max] = ∫(1 − F^n) summed exactly over the steps of the CDF."""
        if n == 1:
            return self.mean()
        # below k0, F^n < exp(-40): those steps count in full
        k0 = int(np.searchsorted(self._head[1:-1], math.exp(-_NEGLIGIBLE_LOG / n), "right"))
        if n <= _POWER_BY_SQUARING_MAX_N:
            with kernel_threads(self.values.size - k0, _PARALLEL_MIN_STEPS):
                rest = step_sum_one_minus_power(self.values, self._head, n, k0)
        else:  # precise for F close to one; few points remain above k0
            one_minus = -np.expm1(n * np.log1p(-self._tail[k0 + 1:-1]))
            rest = np.dot(np.diff(self.values[k0:]), one_minus)
        return float(self.values[k0] + rest)


class Bernoulli(Discrete):
    """A detour of fixed length with probability p per phase, no noise otherwise.

    Parameters
    ----------
    p : float
        Probability of a detour in one phase. [-]
    duration : float
        Length of the detour. [s]

    Notes
    -----
    E[max of N] = duration·(1 − (1 − p)^N): the slowdown saturates at ``duration``.
    """

    def __init__(self, p: float, duration: float):
        p = float(p)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p must lie in [0, 1], got {p!r}")
        self.p, self.duration = p, check_positive("duration", duration)
        super().__init__([0.0, self.duration], [1.0 - p, p])

    @property
    def params(self) -> dict:
        return {"p": self.p, "duration": self.duration}


class Empirical(Discrete):
    """The empirical law of measured samples (each sample has weight 1/n).

    Parameters
    ----------
    samples : array_like
        Measured times, for example FWQ iteration times w + δ. [s]

    Notes
    -----
    The exact max-of-N of an empirical law never exceeds the largest sample; for N
    near or above the sample size use :meth:`with_tail` to extrapolate with a
    generalized Pareto tail.
    """

    def __init__(self, samples):
        super().__init__(as_times("samples", samples))
        self._fitted_tails = {}  # (threshold, min_exceedances) -> TailedEmpirical

    @property
    def params(self) -> dict:
        return {"samples": int(self.values.size)}

    @classmethod
    def from_histogram(cls, edges, counts) -> Histogram:
        """A piecewise-uniform law from fixed-bin counts (see :class:`Histogram`)."""
        return Histogram(edges, counts)

    def with_tail(self, threshold: float | None = None, min_exceedances: int = 50
                  ) -> TailedEmpirical:
        """The same body with a generalized Pareto tail fitted above ``threshold``.

        Parameters
        ----------
        threshold : float, optional
            Tail threshold; default the 95th percentile of the samples (or lower, so
            that at least ``min_exceedances`` samples lie above it). [s]
        min_exceedances : int
            Fewest samples above the threshold needed for a fit. [-]

        The fit is kept: asking again with the same arguments (as ``max_of_n(...,
        tail="gpd")`` does after an explicit call) returns the same tailed law.
        """
        try:
            key = (None if threshold is None else float(threshold), min_exceedances)
            hash(key)
        except (TypeError, ValueError):  # let the fit name the problem
            return TailedEmpirical(self, threshold=threshold, min_exceedances=min_exceedances)
        if key not in self._fitted_tails:
            self._fitted_tails[key] = TailedEmpirical(self, threshold=threshold,
                                                      min_exceedances=min_exceedances)
        return self._fitted_tails[key]

    @property
    def top_mass(self) -> float:
        """Probability of the largest sample's cell: 1/m for m samples. [-]"""
        return 1.0 / self.values.size

    @property
    def data_description(self) -> str:
        return f"a sample of {self.values.size} values"

    def sample_limited(self, n: int) -> bool:
        """True when more than 10% of maxima of ``n`` draws equal the largest sample."""
        return _top_cell_reached(self.top_mass, n)


class Histogram(NoiseModel):
    """A piecewise-uniform law: the probability of bin b is spread evenly over it.

    Parameters
    ----------
    edges : array_like
        Increasing bin edges, length B + 1. [s]
    counts : array_like
        Non-negative counts per bin (numbers of samples), length B. [-]

    Notes
    -----
    The law ends at the top edge of its highest occupied bin, as an empirical law ends
    at its largest sample: the same tail rule applies (:meth:`sample_limited`,
    :meth:`with_tail`, ``max_of_n(..., tail="gpd")``).
    """

    def __init__(self, edges, counts):
        edges = as_times("edges", edges)
        counts = np.asarray(counts, dtype=float).ravel()
        if edges.size < 2 or np.any(np.diff(edges) <= 0):
            raise ValueError("edges must be strictly increasing with at least two values")
        if counts.size != edges.size - 1:
            raise ValueError(f"counts must have len(edges) - 1 = {edges.size - 1} values, "
                             f"got {counts.size}")
        if np.any(~np.isfinite(counts)) or np.any(counts < 0) or counts.sum() <= 0:
            raise ValueError("counts must be finite, non-negative and not all zero")
        self.edges, self.counts = edges, counts
        self._probs = counts / counts.sum()
        self._head = np.concatenate([[0.0], np.cumsum(self._probs)])
        self._tail = np.concatenate([np.cumsum(self._probs[::-1])[::-1], [0.0]])
        self._head[-1], self._tail[0] = 1.0, 1.0
        self.lower, self.upper = float(edges[0]), float(edges[-1])
        self._top_bin = int(np.flatnonzero(counts > 0)[-1])

    def cdf(self, x):
        return np.interp(np.asarray(x, dtype=float), self.edges, self._head)

    def sf(self, x):
        return np.interp(np.asarray(x, dtype=float), self.edges, self._tail)

    def isf(self, q):
        q = check_probability("q", q)
        # sf decreases along the edges: interpolate on the reversed arrays
        return np.interp(q, self._tail[::-1], self.edges[::-1])

    def mean(self) -> float:
        return float(np.dot(np.diff(self._head), 0.5 * (self.edges[1:] + self.edges[:-1])))

    @property
    def params(self) -> dict:
        return {"bins": int(self.counts.size), "low": self.lower, "high": self.upper}

    @property
    def top_mass(self) -> float:
        """Probability of the highest occupied bin. [-]"""
        return float(self._probs[self._top_bin])

    @property
    def data_description(self) -> str:
        return (f"a histogram of {self.counts.sum():.6g} counts whose top bin "
                f"(up to {self.edges[self._top_bin + 1]:.6g} s) holds "
                f"{self.counts[self._top_bin]:.6g}")

    def sample_limited(self, n: int) -> bool:
        """True when more than 10% of maxima of ``n`` draws fall in the top occupied bin.

        The criterion of :meth:`Empirical.sample_limited`, the top bin taking the
        place of the largest sample: there the law is flat up to the top edge and the
        data say nothing about the tail.
        """
        return _top_cell_reached(self.top_mass, n)

    def with_tail(self, threshold: float | None = None, min_exceedances: int = 50,
                  min_bins: int = 5) -> TailedHistogram:
        """The same body with a generalized Pareto tail fitted to the bins above
        ``threshold`` (see :class:`TailedHistogram`)."""
        return TailedHistogram(self, threshold=threshold, min_exceedances=min_exceedances,
                               min_bins=min_bins)

    def _bin_max_integrals(self, n: int) -> np.ndarray:
        """∫(1 − F^n) over each bin, F linear in the bin. [s]"""
        mean_power = mean_power_on_linear_pieces(self._tail[:-1], self._tail[1:],
                                                  self._probs, n)
        return np.diff(self.edges) * (1.0 - mean_power)

    def _exact_max_mean(self, n: int) -> float:
        """E[max] = lower + Σ_bins ∫(1 − F^n), in closed form on every bin."""
        return float(self.lower + self._bin_max_integrals(n).sum())


class _ParetoTailed(NoiseModel):
    """A measured body below a threshold u, a generalized Pareto tail above it:
    P(X > x) = P_body(X > u)·H(x − u), H the survival function of
    :func:`scipy.stats.genpareto` (location 0) with the fitted shape ξ and scale σ."""

    def _attach_tail(self, body, threshold: float, shape: float, scale: float) -> None:
        self.body, self.threshold = body, float(threshold)
        self.shape, self.scale = float(shape), float(scale)
        self._gpd = stats.genpareto(c=self.shape, loc=0.0, scale=self.scale)
        self._p_tail = float(body.sf(threshold))
        self.lower = body.lower
        self._gpd_end = -1.0 / self.shape if self.shape < 0 else math.inf  # in units of σ
        self.upper = self.threshold + float(self._gpd.support()[1])

    def _body_params(self) -> dict:
        """What defines the body (its size)."""
        raise NotImplementedError

    @property
    def params(self) -> dict:
        return {**self._body_params(), "threshold": self.threshold, "shape": self.shape,
                "scale": self.scale}

    def describe(self) -> str:
        body = ", ".join(f"{k}={v:.6g}" for k, v in self._body_params().items())
        return (f"{type(self.body).__name__}({body}) with generalized Pareto tail "
                f"(threshold={self.threshold:.6g}, shape={self.shape:.4g}, "
                f"scale={self.scale:.4g})")

    def _gpd_sf(self, excess):
        """H(y) for y >= 0: scipy's genpareto formula in numpy (the same values without
        the frozen distribution's checks, which cost more than the formula). [-]"""
        y = excess / self.scale
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            inside = special.inv_boxcox(-y, -self.shape)
        return np.where(y <= 0, 1.0, np.where(y < self._gpd_end, inside, 0.0))

    def _gpd_isf(self, level):
        """H⁻¹(level) for level in [0, 1], as :meth:`_gpd_sf`. [s]"""
        with np.errstate(divide="ignore", invalid="ignore"):
            inside = -special.boxcox(level, -self.shape) * self.scale
        return np.where(level >= 1, 0.0,
                        np.where(level <= 0, self._gpd_end * self.scale, inside))

    def sf(self, x):
        x = np.asarray(x, dtype=float)
        tail = self._p_tail * self._gpd_sf(np.maximum(x - self.threshold, 0.0))
        return np.where(x > self.threshold, tail, self.body.sf(x))

    def cdf(self, x):
        return 1.0 - self.sf(x)

    def isf(self, q):
        q = check_probability("q", q)
        in_tail = q < self._p_tail
        with np.errstate(divide="ignore", invalid="ignore"):
            tail = self.threshold + self._gpd_isf(np.where(in_tail, q / self._p_tail, 0.5))
        return np.where(in_tail, tail, self.body.isf(np.maximum(q, self._p_tail)))

    def mean(self) -> float:
        return float(self._body_mean_below() + self._p_tail * (self.threshold
                                                               + self._gpd.mean()))

    def _body_mean_below(self) -> float:
        """E[X; X <= u] of the body. [s]"""
        raise NotImplementedError

    def _body_max_integral(self, n: int) -> float:
        """lower + ∫_lower^u (1 − F^n) dx over the body. [s]"""
        raise NotImplementedError

    def _exact_max_mean(self, n: int) -> float:
        body = self._body_max_integral(n)
        # the tail: quadrature in quantile space from s_u = 1 − G(u), isf on arrays
        s_u = -math.expm1(n * math.log1p(-self._p_tail))
        return float(body + quantile_tail_integral(max_isf_single(self, n), self.threshold,
                                                   s_u, scale=max(body, self.threshold),
                                                   vectorised=True))


class TailedEmpirical(_ParetoTailed):
    """An empirical body with a generalized Pareto tail fitted above a threshold.

    Below the threshold u the law is the empirical one; above it
    P(X > x) = P_emp(X > u)·H(x − u), with H the survival function of the fitted
    generalized Pareto distribution (:func:`scipy.stats.genpareto`, location 0).
    """

    def __init__(self, body: Empirical, threshold: float | None = None,
                 min_exceedances: int = 50):
        min_exceedances = check_integer("min_exceedances", min_exceedances, 2)
        values = body.values
        if threshold is None:
            k = min(int(0.95 * values.size), values.size - min_exceedances - 1)
            if k < 0:
                raise ValueError(f"a tail fit needs more than {min_exceedances} samples, "
                                 f"got {values.size}")
            threshold = float(values[k])
        threshold = check_positive("threshold", threshold, allow_zero=True)
        above = values[values > threshold] - threshold
        if above.size < min_exceedances:
            raise ValueError(f"threshold {threshold:g} leaves {above.size} samples above it; "
                             f"a tail fit needs at least {min_exceedances}")
        shape, _, scale = stats.genpareto.fit(above, floc=0.0)
        self._attach_tail(body, threshold, shape, scale)

    def _body_params(self) -> dict:
        return {"samples": int(self.body.values.size)}

    def _body_mean_below(self) -> float:
        kept = self.body.values[self.body.values <= self.threshold]
        return kept.sum() / self.body.values.size

    def _body_max_integral(self, n: int) -> float:
        # exact sum over the steps of the empirical CDF up to the threshold u
        values = self.body.values
        k_u = int(np.searchsorted(values, self.threshold, "right"))  # samples <= u
        steps = np.diff(np.append(values[:k_u], self.threshold))
        one_minus = -np.expm1(n * np.log1p(-self.body._tail[1:k_u + 1]))
        return float(values[0] + np.dot(steps, one_minus))


def _gpd_log_sf(x, shape: float, scale: float) -> np.ndarray:
    """log H(x) of the generalized Pareto law (location 0); −inf beyond its end."""
    x = np.asarray(x, dtype=float)
    if abs(shape) < 1e-12:
        return -x / scale
    z = shape * x / scale
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(z > -1.0, -np.log1p(z) / shape, -np.inf)


def fit_binned_gpd(lower, upper, counts) -> tuple[float, float]:
    """Maximum-likelihood generalized Pareto fit (location 0) to binned exceedances.

    Parameters
    ----------
    lower, upper : array_like
        Bin edges measured from the threshold, 0 <= lower < upper. [s]
    counts : array_like
        Exceedances counted in each bin. [-]

    Returns
    -------
    shape, scale : float
        ξ [-] and σ [s] maximising Σ_b c_b·log(H(lower_b) − H(upper_b)), the
        likelihood of the counts (it tends to the continuous likelihood as the bins
        narrow).
    """
    keep = np.asarray(counts, dtype=float) > 0
    lower = np.asarray(lower, dtype=float)[keep]
    upper = np.asarray(upper, dtype=float)[keep]
    counts = np.asarray(counts, dtype=float)[keep]
    # work in units of the mean exceedance; moments of the bin midpoints start the search
    weights = counts / counts.sum()
    middle = 0.5 * (lower + upper)
    unit = float(np.dot(weights, middle))
    lower, upper, middle = lower / unit, upper / unit, middle / unit
    variance = float(np.dot(weights, (middle - 1.0) ** 2 + (upper - lower) ** 2 / 12))
    shape0 = float(np.clip(0.5 * (1.0 - 1.0 / variance), -0.45, 0.9))

    def negative_log_likelihood(theta):
        shape, scale = theta[0], math.exp(theta[1])
        log_lo = _gpd_log_sf(lower, shape, scale)
        log_hi = _gpd_log_sf(upper, shape, scale)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_mass = log_lo + np.log(-np.expm1(log_hi - log_lo))
        value = -float(np.dot(counts, log_mass))
        return value if math.isfinite(value) else math.inf

    start = np.array([shape0, math.log(max(1.0 - shape0, 1e-3))])
    result = optimize.minimize(negative_log_likelihood, start, method="Nelder-Mead",
                               options={"xatol": 1e-9, "fatol": 1e-12, "maxiter": 5000})
    if not (result.success and math.isfinite(result.fun)):
        raise ValueError(f"the generalized Pareto fit to the binned tail did not converge: "
                         f"{result.message}")
    return float(result.x[0]), float(math.exp(result.x[1]) * unit)


class TailedHistogram(_ParetoTailed):
    """A histogram body with a generalized Pareto tail fitted to the bins above a threshold.

    Below the threshold u (a bin edge) the law is the histogram's; above it
    P(X > x) = P_hist(X > u)·H(x − u), the generalized Pareto H fitted by maximum
    likelihood to the counts of the bins above u (:func:`fit_binned_gpd`), the binned
    counterpart of :class:`TailedEmpirical`.

    Parameters
    ----------
    body : Histogram
    threshold : float, optional
        A bin edge; default the highest edge with at least 5% of the counts above it,
        lowered until ``min_exceedances`` counts in ``min_bins`` occupied bins lie above. [s]
    min_exceedances : int
        Fewest counts above the threshold. [-]
    min_bins : int
        Fewest occupied bins above the threshold (two parameters are fitted). [-]
    """

    def __init__(self, body: Histogram, threshold: float | None = None,
                 min_exceedances: int = 50, min_bins: int = 5):
        min_exceedances = check_integer("min_exceedances", min_exceedances, 2)
        min_bins = check_integer("min_bins", min_bins, 3)
        counts, edges = body.counts, body.edges
        counts_above = np.cumsum(counts[::-1])[::-1]  # counts above edges[k], k < B
        bins_above = np.cumsum((counts > 0)[::-1])[::-1]
        enough = (counts_above >= min_exceedances) & (bins_above >= min_bins)
        need = (f"a generalized Pareto tail needs at least {min_exceedances} counts in at "
                f"least {min_bins} occupied bins above the threshold")
        if threshold is None:
            k = int(np.searchsorted(-body._tail[:-1], -0.05, "right")) - 1
            candidates = np.flatnonzero(enough[:max(k, 0) + 1])
            if candidates.size == 0:
                raise ValueError(f"{need}; this histogram has {counts.sum():.6g} counts in "
                                 f"{int(bins_above[0])} occupied bins (use finer bins)")
            k = int(candidates[-1])
        else:
            threshold = check_positive("threshold", threshold, allow_zero=True)
            matches = np.flatnonzero(np.isclose(edges[:-1], threshold, rtol=1e-12, atol=0))
            if matches.size == 0:
                raise ValueError(f"threshold must be one of the bin edges below the top, "
                                 f"got {threshold:g}")
            k = int(matches[0])
            if not enough[k]:
                raise ValueError(f"{need}; threshold {threshold:g} leaves "
                                 f"{counts_above[k]:.6g} counts in {int(bins_above[k])} bins")
        self._k_u = k
        u = float(edges[k])
        shape, scale = fit_binned_gpd(edges[k:-1] - u, edges[k + 1:] - u, counts[k:])
        self._attach_tail(body, u, shape, scale)

    def _body_params(self) -> dict:
        return {"bins": int(self.body.counts.size), "counts": float(self.body.counts.sum())}

    def _body_mean_below(self) -> float:
        edges, k = self.body.edges, self._k_u
        return float(np.dot(self.body._probs[:k], 0.5 * (edges[1:k + 1] + edges[:k])))

    def _body_max_integral(self, n: int) -> float:
        return float(self.lower + self.body._bin_max_integrals(n)[:self._k_u].sum())
