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
from scipy import stats

from .._integrate import max_isf_single, quantile_tail_integral
from .._kernels import step_sum_one_minus_power
from .._random import RngLike, as_generator
from ._base import NoiseModel, check_positive, check_probability

__all__ = ["Discrete", "Bernoulli", "Empirical", "Histogram", "TailedEmpirical", "TailWarning"]

#: F(x)^N below exp(-_NEGLIGIBLE_LOG) counts as zero in the exact max-of-N sums
_NEGLIGIBLE_LOG = 40.0
#: up to this N, F^N by repeated squaring (relative error ~ N·ε) in a numba kernel
_POWER_BY_SQUARING_MAX_N = 16_384


class TailWarning(UserWarning):
    """N is so large that the maximum of a measured sample just repeats its largest value."""


def _as_times(name: str, values) -> np.ndarray:
    """Validate a 1-D array of finite non-negative times."""
    arr = np.asarray(values, dtype=float)
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
        values = _as_times("values", values)
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

    def sample(self, size, rng: RngLike = None):
        return self.isf(as_generator(rng).random(size))

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
        super().__init__(_as_times("samples", samples))

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
        """
        return TailedEmpirical(self, threshold=threshold, min_exceedances=min_exceedances)

    def sample_limited(self, n: int) -> bool:
        """True when more than 10% of maxima of ``n`` draws equal the largest sample."""
        m = self.values.size
        return -math.expm1(n * math.log1p(-1.0 / m)) > 0.1 if m > 1 else n > 1


class Histogram(NoiseModel):
    """A piecewise-uniform law: the probability of bin b is spread evenly over it.

    Parameters
    ----------
    edges : array_like
        Increasing bin edges, length B + 1. [s]
    counts : array_like
        Non-negative counts per bin, length B. [-]
    """

    def __init__(self, edges, counts):
        edges = _as_times("edges", edges)
        counts = np.asarray(counts, dtype=float).ravel()
        if edges.size < 2 or np.any(np.diff(edges) <= 0):
            raise ValueError("edges must be strictly increasing with at least two values")
        if counts.size != edges.size - 1:
            raise ValueError(f"counts must have len(edges) - 1 = {edges.size - 1} values, "
                             f"got {counts.size}")
        if np.any(~np.isfinite(counts)) or np.any(counts < 0) or counts.sum() <= 0:
            raise ValueError("counts must be finite, non-negative and not all zero")
        self.edges, self.counts = edges, counts
        probs = counts / counts.sum()
        self._head = np.concatenate([[0.0], np.cumsum(probs)])
        self._tail = np.concatenate([np.cumsum(probs[::-1])[::-1], [0.0]])
        self._head[-1], self._tail[0] = 1.0, 1.0
        self.lower, self.upper = float(edges[0]), float(edges[-1])

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

    def _exact_max_mean(self, n: int) -> float:
        """∫(1 − F^n) with F linear in each bin: ∫ F^n = Δ·(b^{n+1} − a^{n+1}) / ((n+1)(b − a))."""
        a, b = self._head[:-1], self._head[1:]
        width = np.diff(self.edges)
        log_a = (n + 1) * np.log1p(-np.minimum(self._tail[:-1], 1.0))
        log_b = (n + 1) * np.log1p(-self._tail[1:])
        flat = b - a <= 0
        with np.errstate(divide="ignore", invalid="ignore"):
            power_integral = np.where(
                flat, np.power(b, n), (np.exp(log_b) - np.exp(log_a)) / ((n + 1) * (b - a)))
        return float(self.lower + np.dot(width, 1.0 - power_integral))


class TailedEmpirical(NoiseModel):
    """An empirical body with a generalized Pareto tail fitted above a threshold.

    Below the threshold u the law is the empirical one; above it
    P(X > x) = P_emp(X > u)·H(x − u), with H the survival function of the fitted
    generalized Pareto distribution (:func:`scipy.stats.genpareto`, location 0).
    """

    def __init__(self, body: Empirical, threshold: float | None = None,
                 min_exceedances: int = 50):
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
        self.body, self.threshold = body, threshold
        self.shape, self.scale = float(shape), float(scale)
        self._gpd = stats.genpareto(c=self.shape, loc=0.0, scale=self.scale)
        self._p_tail = float(body.sf(threshold))
        self.lower = body.lower
        self.upper = threshold + float(self._gpd.support()[1])

    @property
    def params(self) -> dict:
        return {"samples": int(self.body.values.size), "threshold": self.threshold,
                "shape": self.shape, "scale": self.scale}

    def describe(self) -> str:
        return (f"Empirical(samples={self.body.values.size}) with generalized Pareto tail "
                f"(threshold={self.threshold:.6g}, shape={self.shape:.4g}, "
                f"scale={self.scale:.4g})")

    def sf(self, x):
        x = np.asarray(x, dtype=float)
        tail = self._p_tail * self._gpd.sf(np.maximum(x - self.threshold, 0.0))
        return np.where(x > self.threshold, tail, self.body.sf(x))

    def cdf(self, x):
        return 1.0 - self.sf(x)

    def isf(self, q):
        q = check_probability("q", q)
        in_tail = q < self._p_tail
        with np.errstate(divide="ignore", invalid="ignore"):
            tail = self.threshold + self._gpd.isf(np.where(in_tail, q / self._p_tail, 0.5))
        return np.where(in_tail, tail, self.body.isf(np.maximum(q, self._p_tail)))

    def mean(self) -> float:
        kept = self.body.values[self.body.values <= self.threshold]
        body_part = kept.sum() / self.body.values.size
        return float(body_part + self._p_tail * (self.threshold + self._gpd.mean()))

    def sample(self, size, rng: RngLike = None):
        return self.isf(as_generator(rng).random(size))

    def _exact_max_mean(self, n: int) -> float:
        # the body: exact sum over the steps of the empirical CDF up to the threshold u
        values = self.body.values
        k_u = int(np.searchsorted(values, self.threshold, "right"))  # samples <= u
        steps = np.diff(np.append(values[:k_u], self.threshold))
        one_minus = -np.expm1(n * np.log1p(-self.body._tail[1:k_u + 1]))
        body = values[0] + np.dot(steps, one_minus)
        # the tail: quadrature in quantile space from s_u = 1 − G(u)
        s_u = -math.expm1(n * math.log1p(-self._p_tail))
        return float(body + quantile_tail_integral(max_isf_single(self, n), self.threshold,
                                                   s_u))
