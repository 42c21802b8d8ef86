"""Distribution-based max-of-N: the phase time of N processes meeting at a barrier.

A phase of work w followed by a barrier lasts max_i (w_i + δ_i) when each process
draws its noise independently (Agarwal, Garg & Vishnoi 2005; Garg & De 2006, seed 001
§2.3 and §3.3). The maximum of independent variables has the product of their CDFs
as its CDF, which gives exact quantiles and means; Monte Carlo sampling checks them.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numba
import numpy as np
import xarray as xr
from scipy import optimize

from ..base.checks import as_process_counts, check_integer, check_probability
from ..base.integrate import piecewise_quad, quantile_tail_integral
from ..base.limits import (
    ALLOW_LARGE_VARIABLE,
    ResourceLimitError,
    check_allow_large,
    check_memory,
    large_allowed,
)
from ..base.provenance import provenance_attrs
from ..base.rng import RngLike, seed_from
from ..base.threads import kernel_threads, map_on_threads
from ..noise import Discrete, Empirical, Histogram, NoiseModel, TailWarning
from ..noise import kernels as _kernels

__all__ = ["max_of_n", "process_counts", "exact_max_quantile", "exact_max_mean"]

DEFAULT_QUANTILES = (0.5, 0.9, 0.99)
#: complement level 1 − q beyond which E[max] is integrated in quantile space
_TAIL_LEVEL = 1e-6


# --------------------------------------------------------------------------------------
# the law of the maximum: G(x) = prod_k F_k(x)^{c_k}
# --------------------------------------------------------------------------------------
def process_counts(n_models: int, n: int) -> np.ndarray:
    """How many of ``n`` processes draw from each of ``n_models`` laws (round-robin).

    Process i uses law i mod K, so a list of K per-process measurements extends to
    any N by repeating it.
    """
    base, extra = divmod(int(n), n_models)
    return np.array([base + (k < extra) for k in range(n_models)], dtype=np.int64)


def log_cdf_of_max(models, counts, x):
    """log G(x) = Σ_k c_k·log F_k(x), precise where F_k is close to one."""
    x = np.asarray(x, dtype=float)
    total = np.zeros(x.shape)
    with np.errstate(divide="ignore"):
        for model, count in zip(models, counts, strict=True):
            if count:
                total = total + count * np.log1p(-np.minimum(model.sf(x), 1.0))
    return total


def one_minus_cdf_of_max(models, counts, x):
    return -np.expm1(log_cdf_of_max(models, counts, x))


def max_isf_of(models, counts, s) -> np.ndarray:
    """x with P(max > x) = s, from the complement level s = 1 − q (precise as s → 0). [s]"""
    s = np.atleast_1d(np.asarray(s, dtype=float))
    active = [(m, c) for m, c in zip(models, counts, strict=True) if c > 0]
    with np.errstate(divide="ignore"):
        log_q = np.log1p(-s)  # log of the quantile level q = 1 - s

        def per_law(model, count):  # the law's own level when `count` processes set it
            return model.isf(-np.expm1(log_q / count))

        if len(active) == 1:
            return per_law(*active[0])
        total = sum(c for _, c in active)
        # G <= F_k^{c_k} for every k, and G >= min_k F_k^N: a bracket for the root
        lo = np.max([per_law(m, c) for m, c in active], axis=0)
        hi = np.max([per_law(m, total) for m, _ in active], axis=0)
    models_, counts_ = zip(*active, strict=True)
    out = lo.copy()
    for i in range(s.size):
        if not (0 < s[i] < 1) or hi[i] <= lo[i]:
            out[i] = hi[i] if s[i] <= 0 else lo[i]
            continue

        def excess(x, target=log_q[i]):
            return float(log_cdf_of_max(models_, counts_, x)) - target

        if excess(lo[i]) < 0:
            upper = hi[i]
            for _ in range(64):  # the bracket holds exactly; widen for rounding only
                if excess(upper) >= 0:
                    break
                upper += max(upper - lo[i], 1e-12 * abs(upper), 1e-300)
            out[i] = optimize.brentq(excess, lo[i], upper, xtol=1e-15 * max(abs(upper), 1e-300),
                                     rtol=4 * np.finfo(float).eps)
    return out


def exact_max_quantile(models: Sequence[NoiseModel], counts, q) -> np.ndarray:
    """Quantiles of max over processes; ``counts[k]`` processes draw from ``models[k]``.

    For one law the q-quantile is F⁻¹(q^{1/N}), evaluated as isf(1 − q^{1/N}) so that
    it stays precise for N up to 10^9 and beyond; for several laws it is the root of
    Σ_k c_k·log F_k(x) = log q. [s]
    """
    return max_isf_of(models, counts, 1.0 - np.asarray(q, dtype=float))


def exact_max_mean(models: Sequence[NoiseModel], counts, closed_form: bool = True) -> float:
    """E[max over processes] = L + ∫_L^∞ (1 − G(x)) dx, L the largest lower end. [s]

    With ``closed_form`` (default) a single law uses its mean for one process and its
    own formula when it has one (exponential, Pareto, uniform, empirical, histogram,
    piecewise); otherwise, and for several laws, the integral is evaluated numerically.
    """
    active = [(m, int(c)) for m, c in zip(models, counts, strict=True) if c > 0]
    if len(active) == 1 and closed_form:
        model, count = active[0]
        if count == 1:  # the maximum of one draw is the draw
            return float(model.mean())
        closed = model._exact_max_mean(count)
        if closed is not None:
            return closed
    models_, counts_ = zip(*active, strict=True)
    if any(not math.isfinite(m.mean()) for m in models_):
        return math.inf
    lower = max(m.lower for m in models_)
    atoms = [m.atoms for m in models_]
    if all(a is not None for a in atoms):
        # a step function: exact sum over the merged support points
        points = np.unique(np.concatenate(atoms))
        points = points[points >= lower]
        one_minus = one_minus_cdf_of_max(models_, counts_, points[:-1])
        return float(points[0] + np.dot(np.diff(points), one_minus))

    # the body, split where 1 - G changes fastest: at quantiles of the maximum and atoms
    levels = np.array([1 - 1e-12, 1 - 1e-6, 1 - 1e-3, 0.9, 0.5, 0.1, 1e-3, _TAIL_LEVEL])
    cut = max_isf_of(models_, counts_, levels)
    breaks = set(cut.tolist())
    for a in atoms:
        if a is not None:
            breaks.update(a[a < cut[-1]].tolist())
    edges = [lower, *sorted(b for b in breaks if lower < b <= cut[-1])]
    scale = max(abs(cut[-1]), abs(lower), 1e-300)
    body = piecewise_quad(lambda x: one_minus_cdf_of_max(models_, counts_, x), edges,
                          scale=scale)
    # the tail in quantile space, where even a heavy tail is integrable
    tail = quantile_tail_integral(lambda levels: max_isf_of(models_, counts_, levels),
                                  edges[-1], _TAIL_LEVEL, scale=scale, vectorised=True)
    return float(lower + body + tail)


# --------------------------------------------------------------------------------------
# the public function
# --------------------------------------------------------------------------------------
def as_models(dist_or_list) -> list[NoiseModel]:
    models = list(dist_or_list) if isinstance(dist_or_list, list | tuple) else [dist_or_list]
    if not models:
        raise ValueError("dist_or_list is an empty list; give at least one noise model")
    for i, m in enumerate(models):
        if not isinstance(m, NoiseModel):
            where = f"dist_or_list[{i}]" if isinstance(dist_or_list, list | tuple) \
                else "dist_or_list"
            raise TypeError(f"{where} is a {type(m).__name__}, not a noise model "
                            "(see jitterlab.noise)")
    return models




def _as_quantiles(quantiles) -> np.ndarray:
    """Quantile levels as a 1-D float array, each strictly between 0 and 1."""
    if isinstance(quantiles, str | bytes):
        raise TypeError(f"quantiles must be numbers strictly between 0 and 1, got {quantiles!r}")
    try:
        q = np.asarray(quantiles, dtype=float).ravel()
    except (TypeError, ValueError):
        raise TypeError(f"quantiles must be numbers strictly between 0 and 1, got "
                        f"{quantiles!r}") from None
    if np.any(~np.isfinite(q)) or np.any((q <= 0) | (q >= 1)):
        raise ValueError(f"quantiles must lie strictly between 0 and 1, got {q}")
    return q


#: laws that end where the measured data end: the tail rule applies to them
_MEASURED = (Empirical, Histogram)


def _underlying_measured(model):
    """The Empirical or Histogram inside ``model`` (possibly shifted by work w), or None."""
    while not isinstance(model, _MEASURED) and hasattr(model, "base"):
        model = model.base
    return model if isinstance(model, _MEASURED) else None


def _with_fitted_tail(model, tail):
    if tail is None:
        return model
    measured = _underlying_measured(model)
    if measured is None:
        return model
    shift = model.lower - measured.lower
    fitted = measured.with_tail()
    return fitted + shift if shift else fitted


def _warn_if_sample_limited(models, n_values, quantiles) -> None:
    """TailWarning when N reaches the top cell of a measured law (its largest sample or
    its top occupied bin) in more than 10% of maxima, or the top quantile lies there."""
    top = float(np.max(quantiles)) if len(quantiles) else 0.5
    for model in models:
        measured = _underlying_measured(model)
        if measured is None:
            continue
        for n in n_values:
            count = int(process_counts(len(models), int(n)).max())
            beyond_top = -math.expm1(math.log(top) / count) < measured.top_mass
            if measured.sample_limited(count) or beyond_top:
                warnings.warn(
                    f"N = {int(n)} is beyond what {measured.data_description} supports: "
                    "the maximum mostly falls on the largest measured values and stops "
                    "there, so the result underestimates the tail. Pass tail='gpd' to "
                    "extrapolate with a fitted generalized Pareto tail (or use "
                    f"{type(measured).__name__}.with_tail()).",
                    TailWarning, stacklevel=3)
                return


def _quantile_standard_error(sorted_values: np.ndarray, q: float) -> float:
    """Standard error of a sample quantile from the spread of neighbouring order statistics.

    The rank of the q-quantile has binomial standard deviation sqrt(R·q(1−q)); half the
    distance between the order statistics one such deviation either side estimates the
    quantile's standard error without a density estimate.
    """
    r = sorted_values.size
    spread = math.sqrt(r * q * (1.0 - q))
    lo = int(np.clip(math.floor(r * q - spread), 0, r - 1))
    hi = int(np.clip(math.ceil(r * q + spread), 0, r - 1))
    return 0.5 * float(sorted_values[hi] - sorted_values[lo])


#: Monte Carlo draws one call may make without allow_large (about 10² s at 10⁸ per second)
MAX_DRAWS = 10**10
#: uniforms per second of the Monte Carlo kernel, for the message (10 ns each measured on
#: two loaded cores; a quiet many-core machine is several times faster)
_DRAWS_PER_SECOND = 1e8


def _check_draws(n_values, replicates: int, n_models: int, n_quantiles: int,
                 allow_large: bool) -> None:
    """Refuse a Monte Carlo run whose draws or arrays are beyond the limits (O(len(n)))."""
    check_allow_large(allow_large)
    draws = sum(int(k) for k in n_values) * replicates  # Python ints: no overflow
    if draws > MAX_DRAWS and not large_allowed(allow_large):
        raise ResourceLimitError(
            f"method='montecarlo' would draw {draws:.3g} uniforms (the sum of n, "
            f"{sum(int(k) for k in n_values):.3g}, times replicates={replicates}), about "
            f"{draws / _DRAWS_PER_SECOND:.3g} s at {_DRAWS_PER_SECOND:.0e} per second; its "
            f"cost grows with N. Use method='exact' (the same law, computed without draws, "
            f"at any N), fewer replicates or smaller n, or pass allow_large=True (or set "
            f"{ALLOW_LARGE_VARIABLE}=1) to draw them anyway")
    # per N: the (replicates, laws) complements, the maxima and their sorted copy, the
    # law's inverse CDF of each column; standard errors per quantile
    estimate = 8.0 * replicates * (2 * n_models + 3) + 16.0 * n_quantiles * len(n_values)
    check_memory(estimate, lambda: f"max_of_n(method='montecarlo', replicates={replicates})",
                 "fewer replicates", allow_large)


def max_of_n(dist_or_list, n=None, method: str = "exact",
             quantiles: Sequence[float] = DEFAULT_QUANTILES, replicates: int = 10_000,
             rng: RngLike = None, tail: str | None = None, *,
             allow_large: bool = False) -> xr.Dataset:
    """Distribution of the maximum over N processes of independent noise (or w + δ).

    Parameters
    ----------
    dist_or_list : NoiseModel or list of NoiseModel
        One law shared by all processes, or one per process (Garg & De measured one
        per process); with K laws, process i draws from law i mod K (so for N < K
        only the first N laws take part).
    n : int or sequence of int, optional
        Numbers of processes N; default the length of the list (1 for one law). [-]
    method : {"exact", "montecarlo"}
        "exact" uses G(x) = Π F_i(x); "montecarlo" draws every process's noise.
    quantiles : sequence of float
        Quantile levels of the maximum to report. [-]
    replicates : int
        Monte Carlo repetitions R. [-]
    rng : int or numpy.random.Generator, optional
        Seed for "montecarlo". The draws for each N come from streams derived from
        (seed, N): the value for one N does not depend on the other values of ``n``
        nor on the number of threads.
    tail : {None, "gpd"}
        For measured laws (``Empirical`` samples and ``Histogram`` counts, also
        shifted by w): None keeps the measured law, which ends at the largest sample
        or the top edge of the highest occupied bin, and warns with
        :class:`~jitterlab.noise.TailWarning` when more than 10% of the maxima of N
        draws land on that largest sample or in that top bin (or the highest
        requested quantile does); "gpd" first fits a generalized Pareto tail above
        about the 95th percentile (to the samples, or by binned maximum likelihood to
        the bins), and raises ValueError when the data are too few for a fit.
    allow_large : bool
        Run a Monte Carlo estimate that draws more than 10¹⁰ uniforms (the sum of ``n``
        times ``replicates``: minutes at about 10⁸ draws per second), or whose arrays need
        more than half of the available memory; without it such a call raises
        :class:`jitterlab.base.limits.ResourceLimitError` with the figures. The environment
        variable ``JITTERLAB_ALLOW_LARGE=1`` does the same for every call.

    Returns
    -------
    xarray.Dataset
        ``mean`` (dim ``n``) and ``quantiles`` (dims ``n``, ``quantile``) [s]; for
        Monte Carlo also ``mean_se`` and ``quantiles_se`` [s]. Attributes name the
        method, the model, the tail used and the seed.

    Raises
    ------
    TypeError
        ``dist_or_list`` holds something other than noise models, or ``n``,
        ``quantiles``, ``replicates`` or ``rng`` is not a number of the right kind (a
        string, a boolean).
    ValueError
        ``n`` (each value) or ``replicates`` is not a whole number >= 1 (>= 2) within
        64 bits, a quantile level is not strictly between 0 and 1, ``method`` or
        ``tail`` is unknown, or ``tail="gpd"`` meets too few data for a fit.
    ResourceLimitError
        (a ValueError) "montecarlo" would draw more than 10¹⁰ numbers or allocate more
        than half of the available memory, without ``allow_large``. Its cost grows with
        N; "exact" does not.

    Warns
    -----
    TailWarning
        A measured law is asked for an N beyond what its data support (``tail=None``).

    Notes
    -----
    With c_k processes on law F_k, the maximum M has CDF G(x) = Π_k F_k(x)^{c_k}; for a
    single law the q-quantile is F⁻¹(q^{1/N}) and E[M] = ∫(1 − F(x)^N) dx. For an
    empirical law the sum over the sorted sample is exact. Monte Carlo draws
    1 − max(u) per process group with a counter-based generator and maps it through
    the inverse CDF (which is monotone, so max F⁻¹(u_i) = F⁻¹(max u_i)).

    References
    ----------
    .. [1] R. Garg, P. De, "Impact of Noise on Scaling of Collectives: An Empirical
       Evaluation", HiPC 2006, §2.3 and §3.3 (seed 001).

    Examples
    --------
    >>> import jitterlab as jl
    >>> ds = jl.max_of_n(jl.noise.Exponential(mean=1e-5), n=[1, 1000])
    >>> [round(float(v) * 1e6, 3) for v in ds["mean"].values]  # 10 µs · H_N
    [10.0, 74.855]
    """
    models = as_models(dist_or_list)
    n_values = as_process_counts(n, len(models))
    q = _as_quantiles(quantiles)
    if method not in ("exact", "montecarlo"):
        raise ValueError(f"method must be 'exact' or 'montecarlo', got {method!r}")
    if tail not in (None, "gpd"):
        raise ValueError(f"tail must be None or 'gpd', got {tail!r}")
    replicates = check_integer("replicates", replicates, 2)
    if method == "montecarlo":
        _check_draws(n_values, replicates, len(models), q.size, allow_large)
    models = [_with_fitted_tail(m, tail) for m in models]
    if tail is None:
        _warn_if_sample_limited(models, n_values, q)

    seconds = {"units": "s"}
    coords = {"n": ("n", n_values, {"long_name": "number of processes N"}),
              "quantile": ("quantile", q, {"long_name": "quantile level of the maximum"})}
    attrs = {"method": method,
             "model": "; ".join(m.describe() for m in models),
             "tail": tail or "none (empirical laws end at their largest sample)"}
    if method == "exact":
        means = _exact_means(models, n_values)
        quants = np.array([exact_max_quantile(models, process_counts(len(models), k), q)
                           for k in n_values])
        data = {"mean": ("n", means, {**seconds, "long_name": "E[max of N]"}),
                "quantiles": (("n", "quantile"), quants,
                              {**seconds, "long_name": "quantiles of max of N"})}
    else:
        seed = seed_from(rng)
        attrs.update(seed=seed, replicates=replicates, generator="SplitMix64 counter streams")
        means, means_se = np.empty(n_values.size), np.empty(n_values.size)
        quants = np.empty((n_values.size, q.size))
        quants_se = np.empty_like(quants)
        for i, k in enumerate(n_values):
            counts = process_counts(len(models), int(k))
            with kernel_threads():
                complement = _kernels.max_uniform_complement(
                    _kernels.seed_for_n(seed, int(k)), counts, replicates)
            # a law that gets no process (N < K) must not enter the maximum
            maxima = np.max([m.isf(complement[:, g]) for g, m in enumerate(models)
                             if counts[g] > 0], axis=0)
            means[i] = maxima.mean()
            means_se[i] = maxima.std(ddof=1) / math.sqrt(replicates)
            ordered = np.sort(maxima)
            quants[i] = np.quantile(ordered, q)
            quants_se[i] = [_quantile_standard_error(ordered, level) for level in q]
        data = {"mean": ("n", means, {**seconds, "long_name": "E[max of N]"}),
                "mean_se": ("n", means_se, {**seconds, "long_name": "standard error of mean"}),
                "quantiles": (("n", "quantile"), quants,
                              {**seconds, "long_name": "quantiles of max of N"}),
                "quantiles_se": (("n", "quantile"), quants_se,
                                 {**seconds, "long_name": "standard error of quantiles"})}
    return xr.Dataset(data, coords=coords, attrs={**attrs, **provenance_attrs()})


def _exact_means(models, n_values) -> np.ndarray:
    """E[max of N] for each N [s]. For one discrete law (a numba kernel over its sorted
    values per N, the costliest at the smallest N) the N are spread over numba's threads,
    each N on one thread: no thread waits for another between the N, so beside busy
    processes every thread keeps working (issue #20); the results are the same."""
    def mean(k):
        return exact_max_mean(models, process_counts(len(models), k))

    threads = min(numba.get_num_threads(), n_values.size)
    if len(models) == 1 and isinstance(models[0], Discrete) and threads > 1:
        smallest_first = np.argsort(n_values, kind="stable")
        out = np.empty(n_values.size)
        out[smallest_first] = map_on_threads(mean, n_values[smallest_first].tolist(), threads)
        return out
    with kernel_threads():  # one decision for the whole call, not one per N
        return np.array([mean(k) for k in n_values])


# --------------------------------------------------------------------------------------
# the law of the maximum as a noise model
# --------------------------------------------------------------------------------------
class MaxOfN(NoiseModel):
    """The law of max over N processes of independent w + δ: what θ is at least.

    Parameters
    ----------
    dist_or_list : NoiseModel or list of NoiseModel
        One law for every process, or one per process (process i draws from law
        i mod K), as for :func:`jitterlab.max_of_n`.
    n : int
        Number of processes N. [-]

    Notes
    -----
    G(x) = Π_k F_k(x)^{c_k} with c_k processes on law k; the quantiles and the mean are
    those of :func:`jitterlab.max_of_n` (method "exact").

    Examples
    --------
    >>> import jitterlab as jl
    >>> from jitterlab.analytic.maxofn import MaxOfN
    >>> law = MaxOfN(jl.noise.Exponential(mean=1e-5), n=1000)
    >>> round(law.mean() * 1e6, 3)  # 10 µs · H_1000
    74.855
    """

    def __init__(self, dist_or_list, n: int):
        self.models = as_models(dist_or_list)
        self.n = int(as_process_counts(n, len(self.models))[0])
        self.counts = process_counts(len(self.models), self.n)
        active = [m for m, c in zip(self.models, self.counts, strict=True) if c > 0]
        self.lower = max(m.lower for m in active)
        self.upper = max(m.upper for m in active)

    def _active(self):
        pairs = [(m, c) for m, c in zip(self.models, self.counts, strict=True) if c > 0]
        return [m for m, _ in pairs], [c for _, c in pairs]

    def cdf(self, x):
        models, counts = self._active()
        with np.errstate(over="ignore"):
            return np.exp(log_cdf_of_max(models, counts, x))

    def sf(self, x):
        models, counts = self._active()
        return one_minus_cdf_of_max(models, counts, x)

    def isf(self, q):
        q = check_probability("q", q)
        models, counts = self._active()
        return max_isf_of(models, counts, q.ravel()).reshape(q.shape)

    def mean(self) -> float:
        models, counts = self._active()
        return exact_max_mean(models, counts)

    @property
    def atoms(self):
        atoms = [m.atoms for m in self._active()[0]]
        if any(a is None for a in atoms):
            return None
        merged = np.unique(np.concatenate(atoms))
        return merged[merged >= self.lower]

    @property
    def params(self) -> dict:
        return {"n": self.n, "laws": "; ".join(m.describe() for m in self.models)}
