"""Large-N (extreme-value) approximations of E[max of N] for the parametric noise laws.

For the laws of Agarwal, Garg & Vishnoi (2005) the expected maximum of N independent
draws has a simple form once N is large: logarithmic growth for a light (exponential)
tail, power-law growth for a heavy (Pareto) tail and saturation for bounded noise.
These forms explain *why* the exact curves of :func:`jitterlab.max_of_n` look the way
they do; use the exact method for numbers.

References
----------
.. [1] S. Agarwal, R. Garg, N. K. Vishnoi, "The Impact of Noise on the Scaling of
   Collectives", HiPC 2005 (the three noise families, as summarised and cited in
   Garg & De 2006, seed 001, §1-2).
"""

from __future__ import annotations

import math

import numpy as np

from ..noise import Bernoulli, Exponential, NoiseModel, Pareto, Shifted, Uniform

__all__ = ["asymptotic_max_mean"]


def _as_process_counts(n) -> np.ndarray:
    """``n`` as a float array, or ValueError unless every value is finite and >= 1."""
    try:
        arr = np.asarray(n, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"n must be a number of processes >= 1 or an array of them, "
                         f"got {n!r}") from None
    if arr.size == 0 or np.any(~np.isfinite(arr)) or np.any(arr < 1):
        raise ValueError(f"n must be finite and >= 1, got {n!r}")
    return arr


def _gumbel(mean: float, n: np.ndarray) -> np.ndarray:
    return mean * (np.log(n) + np.euler_gamma)


def _frechet(alpha: float, scale: float, n: np.ndarray) -> np.ndarray:
    if alpha <= 1.0:  # the mean of a single draw, and of the maximum, is infinite
        return np.full(n.shape, math.inf)
    return scale * math.gamma(1.0 - 1.0 / alpha) * n ** (1.0 / alpha)


def asymptotic_max_mean(dist: NoiseModel, n) -> np.ndarray:
    """Large-N approximation of E[max of N independent draws of ``dist``].

    Parameters
    ----------
    dist : NoiseModel
        :class:`~jitterlab.noise.Exponential`, :class:`~jitterlab.noise.Pareto`,
        :class:`~jitterlab.noise.Bernoulli` or :class:`~jitterlab.noise.Uniform`, or one
        of them shifted by the work (``model + w``, a :class:`~jitterlab.noise.Shifted`).
    n : float or array_like
        Numbers of processes N, each >= 1; need not be whole (for smooth curves). [-]

    Returns
    -------
    numpy.ndarray
        The approximation, with the shape of ``n`` (0-d for a scalar); ``inf`` for a
        Pareto law with ``alpha <= 1``. [s]

    Raises
    ------
    ValueError
        If ``dist`` is of any other type (measured laws, sums, mixtures and
        :class:`~jitterlab.noise.Periodic` have no closed form here), or if ``n`` is
        not finite and >= 1.

    Notes
    -----
    With γ ≈ 0.5772 the Euler-Mascheroni constant and Γ the gamma function:

    * Exponential of mean m (Gumbel domain): E[max] ≈ m·(ln N + γ). The exact value is
      m·H_N, and 0 < H_N − ln N − γ < 1/(2N).
    * Pareto with P(δ > x) = (scale/x)^α (Fréchet domain): E[max] ≈ scale·Γ(1 − 1/α)·N^{1/α}
      for α > 1. The exact value is scale·Γ(N+1)·Γ(1 − 1/α)/Γ(N + 1 − 1/α); the relative
      error is about (1/α)(1 − 1/α)/(2N).
    * Bernoulli with a detour of length d taken with probability p: E[max] → d (the
      maximum saturates at the detour); the exact value is d·(1 − (1 − p)^N). For p = 0
      the noise is always zero and so is the limit.
    * Uniform on [low, high]: E[max] ≈ high − (high − low)/N; the exact value is
      high − (high − low)/(N + 1).
    * ``model + w``: the approximation of ``model`` plus w.

    References
    ----------
    .. [1] S. Agarwal, R. Garg, N. K. Vishnoi, "The Impact of Noise on the Scaling of
       Collectives", HiPC 2005, as cited in R. Garg, P. De, "Impact of Noise on Scaling
       of Collectives: An Empirical Evaluation", HiPC 2006, §1-2 (seed 001).

    Examples
    --------
    >>> import jitterlab as jl
    >>> from jitterlab.analytic.asymptotics import asymptotic_max_mean
    >>> noise = jl.noise.Exponential(mean=10e-6)
    >>> round(float(asymptotic_max_mean(noise, 1000)) * 1e6, 3)  # 10 µs·(ln 1000 + γ) [µs]
    74.85
    >>> round(float(asymptotic_max_mean(noise + 1e-3, 1000)) * 1e6, 3)  # plus w = 1 ms
    1074.85
    """
    n = _as_process_counts(n)
    if isinstance(dist, Shifted):
        return asymptotic_max_mean(dist.base, n) + dist.shift
    if isinstance(dist, Exponential):
        return _gumbel(dist.mean(), n)
    if isinstance(dist, Pareto):
        return _frechet(dist.alpha, dist.scale, n)
    if isinstance(dist, Bernoulli):
        return np.full(n.shape, dist.duration if dist.p > 0 else 0.0)
    if isinstance(dist, Uniform):
        return dist.high - (dist.high - dist.low) / n
    raise ValueError(
        f"no large-N approximation for a {type(dist).__name__}; supported: Exponential, "
        "Pareto, Bernoulli, Uniform and these shifted by the work (model + w). Use "
        "jitterlab.max_of_n(..., method='exact') instead")
