"""Max-of-N when the processes' noise is correlated: a Gaussian copula on measured laws.

Max-of-N (:func:`jitterlab.max_of_n`, :class:`jitterlab.compare.validate.MaxOfN`) and the
lower bound of Theorem 1 take the noise δ_i of the N processes in one iteration as
independent. Noise shared by the processes of an iteration (a slow phase of the whole
machine, a hypervisor, a daemon that hits every CPU of a node) breaks that:
:func:`jitterlab.compare.validate.check_independence` tests it on paired per-rank samples.
:class:`GaussianCopulaMax` is the law of max_i(w_i + δ_i) when each process keeps its
own measured law but the processes are tied by a Gaussian copula with one correlation
ρ between every pair: ρ = 0 gives max-of-N, ρ = 1 the single law (every process the
same quantile).

References
----------
.. [1] R. Garg, P. De, "Impact of Noise on Scaling of Collectives: An Empirical
   Evaluation", HiPC 2006 (seed 001), §2.3 (independence across processes), Theorem 1.
.. [2] R. B. Nelsen, "An Introduction to Copulas", 2nd ed., Springer 2006, §5.1
   (Spearman's ρ of the normal copula).
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr
from scipy import optimize, special, stats

from ..base.checks import check_probability, check_size
from ..base.integrate import quad, quantile_tail_integral
from ..base.rng import RngLike, as_generator
from .maxofn import MaxOfN, exact_max_mean, log_cdf_of_max

__all__ = ["GaussianCopulaMax", "gaussian_rho"]

#: correlations this close to one are the comonotone limit (every process one quantile)
_COMONOTONE = 1.0 - 1e-12
#: the shared normal V is integrated over [−_V_RANGE, _V_RANGE] (P(|V| > 9) ≈ 2·10⁻¹⁹)
_V_RANGE = 9.0
#: draws handled at once when sampling (memory: this many × n normals)
_CHUNK = 2 ** 20
#: points x from which the copula's integrand is tabulated once per distinct level of a law
_DISTINCT_FROM = 64
#: values of log G(x, v) handled at once (2 MiB: faster than 32 MiB blocks, 27 against 60 ms)
_CHUNK_VALUES = 2 ** 18


def gaussian_rho(spearman):
    """The Gaussian-copula correlation with a given Spearman rank correlation.

    Parameters
    ----------
    spearman : float or array_like
        Spearman's ρ_s, in [−1, 1]. [1]

    Returns
    -------
    float or numpy.ndarray
        ρ = 2·sin(π·ρ_s/6). [1]

    Notes
    -----
    For the normal copula ρ_s = (6/π)·asin(ρ/2) (Nelsen 2006, §5.1); the inverse holds
    for any margins, so ρ_s measured on the ranks of any data gives ρ.

    Examples
    --------
    >>> from jitterlab.analytic.correlated import gaussian_rho
    >>> round(float(gaussian_rho(0.5)), 4), round(float(gaussian_rho(1.0)), 12)
    (0.5176, 1.0)
    """
    value = np.asarray(spearman, dtype=np.float64)
    if not np.isfinite(value).all() or np.any(np.abs(value) > 1):
        raise ValueError(f"spearman must lie in [-1, 1], got {spearman!r}")
    result = 2.0 * np.sin(np.pi * value / 6.0)
    return float(result) if result.ndim == 0 else result


def _check_rho(rho) -> float:
    if isinstance(rho, bool | np.bool_) or not isinstance(rho, int | float | np.number):
        raise TypeError(f"rho must be a number in [0, 1], got {type(rho).__name__} {rho!r}")
    rho = float(rho)
    if not 0.0 <= rho <= 1.0:
        raise ValueError(f"rho must lie in [0, 1] (a correlation shared by every pair of "
                         f"processes), got {rho!r}")
    return rho


class GaussianCopulaMax(MaxOfN):
    """The law of max over N processes of w + δ_i tied by a Gaussian copula.

    Process i keeps its own law F_i (as in :func:`jitterlab.max_of_n`: law i mod K of
    a list of K), and draws X_i = F_i⁻¹(Φ(Z_i)) where (Z_1, …, Z_N) are standard
    normals with correlation ρ between every pair.

    Parameters
    ----------
    dist_or_list : NoiseModel or list of NoiseModel
        One law of w + δ for every process, or one per process. [s]
    n : int
        Number of processes N. [-]
    rho : float
        Correlation of the Gaussian copula between every pair of processes, in [0, 1];
        from a measured Spearman ρ_s use :func:`gaussian_rho`. [1]

    Notes
    -----
    Write Z_i = √ρ·V + √(1 − ρ)·E_i with V, E_i independent standard normals: given
    the shared V the processes are independent, so with z_k(x) = Φ⁻¹(F_k(x)) and c_k
    processes on law k

        P(max ≤ x) = ∫ φ(v) Π_k Φ((z_k(x) − √ρ·v)/√(1 − ρ))^{c_k} dv,

    a one-dimensional integral for any N, evaluated by the trapezoid rule on a grid of
    v finer than the width of its integrand. ρ = 0 gives the independent max-of-N,
    Π_k F_k(x)^{c_k}; ρ = 1 the comonotone law min_k F_k(x) (one law: the law itself).
    The class extends :class:`jitterlab.compare.validate.MaxOfN` (its law at ρ = 0). The
    representation holds for discrete laws too (F⁻¹ the generalised inverse), so
    measured ``Empirical`` laws can be used. The copula is a model of the dependence,
    not a measurement of it: it ties the processes by one number, the same for every
    pair, through the whole range of the laws, and cannot represent dependence that
    lives only in the tail or in slow phases (compare its joint exceedances with the
    measured ones, :func:`jitterlab.compare.validate.check_independence`).

    Examples
    --------
    >>> import jitterlab as jl
    >>> from jitterlab.analytic.correlated import GaussianCopulaMax
    >>> noise = jl.noise.Exponential(mean=1e-5) + 3e-4
    >>> independent = GaussianCopulaMax(noise, n=64, rho=0.0)
    >>> round(independent.mean() * 1e6, 3)  # 300 µs + 10 µs·H_64, as max_of_n
    347.439
    >>> round(GaussianCopulaMax(noise, n=64, rho=0.5).mean() * 1e6, 1)
    332.8
    >>> round(GaussianCopulaMax(noise, n=64, rho=1.0).mean() * 1e6, 3)  # one process
    310.0
    """

    def __init__(self, dist_or_list, n: int, rho: float):
        rho = _check_rho(rho)
        super().__init__(dist_or_list, n)  # the laws, N and the processes on each law
        self.rho = rho
        #: the Spearman correlation ρ was fitted to (``from_samples``), else NaN [1]
        self.spearman = math.nan
        #: whether a negative fitted correlation was set to ρ = 0 (``from_samples``)
        self.rho_clipped = False
        if 0 < self.rho < _COMONOTONE:
            # width in v of the step of the integrand: the step sharpens as ρ → 1 and,
            # slowly, as N grows; keep several grid points across it
            width = (math.sqrt((1 - self.rho) / self.rho)
                     / (1 + math.sqrt(2 * math.log(max(self.n, 2)))))
            step = min(0.05, width / 6)
            points = min(int(math.ceil(2 * _V_RANGE / step)) + 1, 400_001)
            self._v = np.linspace(-_V_RANGE, _V_RANGE, points)
            weights = np.exp(-0.5 * self._v ** 2)
            weights[[0, -1]] *= 0.5
            self._weights = weights / weights.sum()

    @classmethod
    def from_samples(cls, samples, n: int | None = None, *, variable: str = "compute",
                     sample_dim: str = "sample", rank_dim: str = "rank"
                     ) -> GaussianCopulaMax:
        """The copula fitted to per-rank samples paired by iteration.

        Parameters
        ----------
        samples : xarray.Dataset, xarray.DataArray or array_like
            Per-rank samples of w + δ, dims (``rank``, ``sample``), paired by iteration
            (for example ``jitterlab.datasets.load_pb(ranks=2)``); iterations with a NaN
            on any rank are left out. [s]
        n : int, optional
            Number of processes N; default the number of ranks. [-]
        variable, sample_dim, rank_dim : str
            The variable of a Dataset and the dimension names.

        Returns
        -------
        GaussianCopulaMax
            One ``Empirical`` law per rank; ρ = :func:`gaussian_rho` of the mean Spearman
            correlation over pairs of ranks (``spearman`` attribute), set to 0 when that
            is negative (the model has no negative dependence; ``rho_clipped``).
        """
        from ..noise import Empirical

        paired = paired_samples(samples, variable, sample_dim, rank_dim).values
        n_ranks = paired.shape[0]
        pairs = [(a, b) for a in range(n_ranks) for b in range(a + 1, n_ranks)]
        spearman = float(np.mean(spearman_pairs(normalised_ranks(paired), pairs)))
        rho = gaussian_rho(min(max(spearman, -1.0), 1.0))
        law = cls([Empirical(row) for row in paired], n=n_ranks if n is None else n,
                  rho=max(rho, 0.0))
        law.spearman = spearman
        law.rho_clipped = rho < 0
        return law

    # -- the distribution ----------------------------------------------------------------
    def _both(self, x) -> tuple[np.ndarray, np.ndarray]:
        """(P(max ≤ x), P(max > x)), each without cancellation."""
        x = np.asarray(x, dtype=np.float64)
        models, counts = self._active()
        if self.rho == 0.0:
            log_cdf = log_cdf_of_max(models, counts, x)
            with np.errstate(over="ignore"):
                return np.exp(log_cdf), -np.expm1(log_cdf)
        sf = np.stack([np.minimum(np.asarray(m.sf(x), dtype=np.float64), 1.0)
                       for m in models])
        if self.rho >= _COMONOTONE:
            survival = sf.max(axis=0)
            return 1.0 - survival, survival
        with np.errstate(divide="ignore"):
            z = -special.ndtri(sf)  # Φ⁻¹(F(x)), precise where F is close to one
        flat = z.reshape(len(models), -1)
        scale = math.sqrt(1 - self.rho)
        shift = math.sqrt(self.rho) * self._v
        # c_k·log Φ((z − √ρ·v)/√(1 − ρ)) once per distinct z of each law: at the support
        # points of measured laws a law takes far fewer distinct levels than there are
        # points (notebook 08: 2 069 points, 1 261 and 809 levels), and log Φ is the cost
        tables, rows = [], []
        for k, count in enumerate(counts):
            levels, row = (np.unique(flat[k], return_inverse=True)
                           if flat.shape[1] >= _DISTINCT_FROM else (flat[k], None))
            tables.append(count * special.log_ndtr((levels[:, None] - shift) / scale))
            rows.append(row)
        cdf, survival = np.empty(flat.shape[1]), np.empty(flat.shape[1])
        chunk = max(1, _CHUNK_VALUES // self._v.size)  # a block of log G stays in cache
        for start in range(0, flat.shape[1], chunk):
            stop = min(start + chunk, flat.shape[1])
            log_g = np.zeros((stop - start, self._v.size))
            for table, row in zip(tables, rows, strict=True):
                log_g += table[start:stop] if row is None else table[row[start:stop]]
            cdf[start:stop] = np.exp(log_g) @ self._weights
            survival[start:stop] = -np.expm1(log_g) @ self._weights
        return cdf.reshape(x.shape), survival.reshape(x.shape)

    def cdf(self, x):
        return self._both(x)[0]

    def sf(self, x):
        return self._both(x)[1]

    def isf(self, q):
        """Smallest x with P(max > x) <= q. [s]

        On the support points of discrete laws exactly; otherwise Brent's method on
        log P(max > x) − log q between two bounds, max_k F_k⁻¹(1 − q) <= x <=
        max_k F_k⁻¹(1 − q/N): the maximum exceeds each process, and P(max > x) <=
        Σ_i P(X_i > x) (the union bound).
        """
        q = check_probability("q", q)
        flat = q.ravel()
        atoms = self.atoms
        if atoms is not None:
            survival = self.sf(atoms)  # non-increasing along the atoms
            index = np.searchsorted(-survival, -flat, side="left")
            return atoms[np.minimum(index, atoms.size - 1)].reshape(q.shape)
        models, _ = self._active()
        lo = np.max([m.isf(flat) for m in models], axis=0)
        hi = np.max([m.isf(flat / self.n) for m in models], axis=0)
        out = hi.copy()
        for i, level in enumerate(flat.tolist()):
            if not 0 < level < 1 or not hi[i] > lo[i]:
                continue

            target = math.log(level)

            def excess(x, target=target):
                return math.log(max(float(self.sf(x)), 1e-320)) - target

            if excess(lo[i]) <= 0:
                out[i] = lo[i]
            elif excess(hi[i]) < 0:
                out[i] = optimize.brentq(excess, lo[i], hi[i],
                                         xtol=1e-15 * max(abs(hi[i]), 1e-300),
                                         rtol=4 * np.finfo(float).eps)
        return out.reshape(q.shape)

    def mean(self) -> float:
        """E[max_i(w_i + δ_i)]: exact on the support points of discrete laws. [s]"""
        models, counts = self._active()
        if self.rho == 0.0:
            return exact_max_mean(models, counts)
        if self.rho >= _COMONOTONE and len(models) == 1:
            return models[0].mean()
        if any(not math.isfinite(m.mean()) for m in models):
            return math.inf
        atoms = self.atoms
        if atoms is not None:
            return float(atoms[0] + np.dot(np.diff(atoms), self.sf(atoms[:-1])))
        levels = np.array([1 - 1e-9, 1 - 1e-6, 1 - 1e-3, 0.9, 0.5, 0.1, 1e-3, 1e-6])
        cut = self.isf(levels)
        edges = [self.lower, *sorted(set(c for c in cut.tolist() if c > self.lower))]
        scale = max(abs(edges[-1]), abs(self.lower), 1e-300)
        body = sum(quad(lambda x: float(self.sf(x)), lo, hi, scale=scale)
                   for lo, hi in zip(edges[:-1], edges[1:], strict=True))
        tail = quantile_tail_integral(lambda s: float(self.isf(s)), edges[-1],
                                      float(self.sf(edges[-1])), scale=scale)
        return float(self.lower + body + tail)

    def _draw(self, size, gen: np.random.Generator) -> np.ndarray:
        """Monte Carlo: draw the correlated vector of N processes, take its maximum."""
        total = int(np.prod(size))
        out = np.empty(total)
        law_of = np.arange(self.n) % len(self.models)
        root, rest = math.sqrt(self.rho), math.sqrt(1 - self.rho)
        per_chunk = max(1, _CHUNK // self.n)
        for start in range(0, total, per_chunk):
            m = min(per_chunk, total - start)
            z = root * gen.standard_normal((m, 1)) + rest * gen.standard_normal((m, self.n))
            upper_tail = special.ndtr(-z)  # P(Z > z): precise far in the tail
            best = np.full(m, -np.inf)
            for k, model in enumerate(self.models):
                columns = law_of == k
                if columns.any():
                    best = np.maximum(best, model.isf(upper_tail[:, columns]).max(axis=1))
            out[start:start + m] = best
        return out.reshape(size)

    def sample(self, size, rng: RngLike = None) -> np.ndarray:
        """Maxima of independent draws of the correlated vector (Monte Carlo). [s]

        Parameters
        ----------
        size : int or tuple of int
            Shape of the result (each entry the maximum over N processes). [-]
        rng : int or numpy.random.Generator, optional
            Seed or generator.
        """
        return self._draw(check_size(size), as_generator(rng))

    # -- metadata ----------------------------------------------------------------------
    @property
    def params(self) -> dict:
        return {**super().params, "rho": self.rho}


# --------------------------------------------------------------------------------------
# paired per-rank samples and their rank correlation (also used by check_independence)
# --------------------------------------------------------------------------------------
def paired_samples(samples, variable, sample_dim, rank_dim) -> xr.DataArray:
    """(rank, sample) samples of the iterations that every rank measured."""
    array = rank_sample_array(samples, "samples", variable, sample_dim, rank_dim)
    if array.sizes[rank_dim] < 2:
        raise ValueError(f"samples must hold at least 2 ranks to test independence, got "
                         f"{array.sizes[rank_dim]}")
    if np.isinf(array.values).any():
        raise ValueError("samples must be finite (NaN marks an iteration not measured)")
    complete = ~np.isnan(array.values).any(axis=0)
    if complete.sum() < 4:
        raise ValueError(f"samples: {int(complete.sum())} iterations measured on every rank; "
                         "at least 4 are needed")
    return array.isel({sample_dim: np.flatnonzero(complete)})


def spearman_pairs(ranks: np.ndarray, pairs) -> np.ndarray:
    """Spearman correlation of every pair from centred, normalised ranks (rank, sample)."""
    return np.array([float(ranks[a] @ ranks[b]) for a, b in pairs])


def normalised_ranks(values: np.ndarray) -> np.ndarray:
    ranks = stats.rankdata(values, axis=-1)
    ranks -= ranks.mean(axis=-1, keepdims=True)
    norm = np.sqrt((ranks ** 2).sum(axis=-1, keepdims=True))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norm > 0, ranks / norm, 0.0)


def rank_sample_array(data, name, variable, sample_dim, rank_dim) -> xr.DataArray:
    """The (rank, sample) DataArray of a Dataset's variable, a DataArray or a 2-D array."""
    if isinstance(data, xr.Dataset):
        if variable not in data:
            raise ValueError(f"{name}: the Dataset has no variable {variable!r}; it has "
                             f"{list(data.data_vars)}")
        data = data[variable]
    if isinstance(data, xr.DataArray):
        if set(data.dims) != {rank_dim, sample_dim}:
            raise ValueError(f"{name}: {data.name or variable!r} must have dims "
                             f"({rank_dim!r}, {sample_dim!r}), got {data.dims}")
        return data.astype(np.float64).transpose(rank_dim, sample_dim)
    try:
        values = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an xarray Dataset or DataArray with dims "
                        f"({rank_dim!r}, {sample_dim!r}) or a 2-D array (rank, sample), got "
                        f"{type(data).__name__}") from None
    if values.ndim != 2:
        raise ValueError(f"{name} must be 2-D (rank, sample), got shape {values.shape}")
    return xr.DataArray(values, dims=(rank_dim, sample_dim),
                        coords={rank_dim: np.arange(values.shape[0])})
