"""Parametric noise laws of Agarwal, Garg & Vishnoi (2005): exponential, heavy-tailed, uniform.

References
----------
.. [1] S. Agarwal, R. Garg, N. K. Vishnoi, "The Impact of Noise on the Scaling of
   Collectives", HiPC 2005 (summarised in Garg & De 2006, seed 001, §2).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

from ._base import NoiseModel, check_positive, check_probability

__all__ = ["Exponential", "Pareto", "Uniform"]


class _ScipyModel(NoiseModel):
    """A noise model drawn by a frozen :mod:`scipy.stats` distribution.

    Each law evaluates its distribution functions with scipy's own formulas in numpy:
    the same values without the cost of a frozen-distribution call (about 0.1 ms),
    which the convolution of a :class:`~jitterlab.noise.Sum` makes tens of thousands
    of times.
    """

    _frozen: stats.rv_continuous

    def mean(self) -> float:
        return float(self._frozen.mean())

    def _draw(self, size, gen):
        return self._frozen.rvs(size=size, random_state=gen)


def _as_times(x) -> np.ndarray:
    return np.asarray(x, dtype=float)


class Exponential(_ScipyModel):
    """Exponentially distributed noise: light tail, E[max of N] = mean·H_N ~ mean·ln N.

    Parameters
    ----------
    mean : float
        Mean noise per phase. [s]

    Examples
    --------
    >>> Exponential(mean=10e-6).mean()
    1e-05
    """

    def __init__(self, mean: float):
        self._mean = check_positive("mean", mean)
        self._frozen = stats.expon(scale=self._mean)

    def mean(self) -> float:
        return self._mean

    def cdf(self, x):
        return -special.expm1(-np.maximum(_as_times(x), 0.0) / self._mean)

    def sf(self, x):
        return np.exp(-np.maximum(_as_times(x), 0.0) / self._mean)

    def ppf(self, q):
        with np.errstate(divide="ignore"):
            return -special.log1p(-check_probability("q", q)) * self._mean + 0.0

    def isf(self, q):
        with np.errstate(divide="ignore"):
            return -np.log(check_probability("q", q)) * self._mean + 0.0

    @property
    def params(self) -> dict:
        return {"mean": self._mean}

    def _exact_max_mean(self, n: int) -> float:
        # mean·H_N with the harmonic number H_N = ψ(N + 1) + γ
        return self._mean * float(special.digamma(n + 1.0) + np.euler_gamma)



class Pareto(_ScipyModel):
    """Heavy-tailed (Pareto) noise, P(δ > x) = (scale/x)^alpha for x >= scale.

    Parameters
    ----------
    alpha : float
        Tail index; the mean is finite for alpha > 1. [-]
    scale : float
        Smallest value of the support. [s]

    Notes
    -----
    E[max of N] = scale·Γ(N+1)·Γ(1 − 1/α) / Γ(N + 1 − 1/α), which grows as N^{1/α}.
    """

    def __init__(self, alpha: float, scale: float):
        self.alpha = check_positive("alpha", alpha)
        self.scale = check_positive("scale", scale)
        self._frozen = stats.pareto(b=self.alpha, scale=self.scale)
        self.lower = self.scale

    def cdf(self, x):
        return 1.0 - self.sf(x)

    def sf(self, x):
        return np.power(np.maximum(_as_times(x) / self.scale, 1.0), -self.alpha)

    def ppf(self, q):
        with np.errstate(divide="ignore"):
            return np.power(1.0 - check_probability("q", q), -1.0 / self.alpha) * self.scale

    def isf(self, q):
        with np.errstate(divide="ignore"):
            return np.power(check_probability("q", q), -1.0 / self.alpha) * self.scale

    @property
    def params(self) -> dict:
        return {"alpha": self.alpha, "scale": self.scale}

    def mean(self) -> float:
        return self.alpha * self.scale / (self.alpha - 1) if self.alpha > 1 else math.inf

    def _exact_max_mean(self, n: int) -> float:
        if self.alpha <= 1:
            return math.inf
        a = 1.0 / self.alpha
        # Γ(N+1)/Γ(N+1−a) as a Pochhammer symbol: no cancellation of two huge log-gammas
        return self.scale * float(special.poch(n + 1.0 - a, a) * special.gamma(1.0 - a))



class Uniform(_ScipyModel):
    """Noise uniform on [low, high]; E[max of N] = low + (high − low)·N/(N + 1).

    Parameters
    ----------
    high : float
        Upper end of the support. [s]
    low : float, default 0
        Lower end of the support. [s]
    """

    def __init__(self, high: float, low: float = 0.0):
        self.low = check_positive("low", low, allow_zero=True)
        self.high = check_positive("high", high)
        if self.high <= self.low:
            raise ValueError(f"high must exceed low, got low={self.low}, high={self.high}")
        self._frozen = stats.uniform(loc=self.low, scale=self.high - self.low)
        self.lower, self.upper = self.low, self.high

    def mean(self) -> float:
        return 0.5 * (self.high - self.low) + self.low

    def cdf(self, x):
        return np.clip((_as_times(x) - self.low) / (self.high - self.low), 0.0, 1.0)

    def sf(self, x):
        return 1.0 - self.cdf(x)

    def ppf(self, q):
        return check_probability("q", q) * (self.high - self.low) + self.low

    def isf(self, q):
        return (1.0 - check_probability("q", q)) * (self.high - self.low) + self.low

    @property
    def params(self) -> dict:
        return {"low": self.low, "high": self.high}

    def _exact_max_mean(self, n: int) -> float:
        return self.low + (self.high - self.low) * n / (n + 1.0)

