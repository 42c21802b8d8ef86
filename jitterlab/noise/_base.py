"""The common interface of noise models and the combinators (shift, sum, mixture)."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from ..base.checks import check_positive, check_probability, check_size  # noqa: F401
from ..base.rng import RngLike, as_generator

__all__ = ["NoiseModel", "Shifted", "Sum", "Mixture"]


class NoiseModel(ABC):
    """A frozen distribution of a non-negative time, in seconds.

    One convention for every law: a model is the law of the noise ``δ`` met by one
    process in one compute phase, never of the phase time. Laws whose noise depends on
    the work (:class:`Periodic`, :func:`from_trace`) take ``work`` as a parameter and
    still return ``δ``; ``model + w`` (a :class:`Shifted`) is the phase time ``w + δ``.
    All methods are vectorised over their argument.
    """

    #: smallest value of the support [s]
    lower: float = 0.0
    #: largest value of the support [s] (``inf`` when unbounded)
    upper: float = math.inf

    # -- the distribution -------------------------------------------------------------
    @abstractmethod
    def cdf(self, x):
        """P(X <= x)."""

    def sf(self, x):
        """P(X > x), computed without cancellation where the subclass can."""
        return 1.0 - self.cdf(x)

    def ppf(self, q):
        """Smallest x with P(X <= x) >= q (the generalised inverse of the CDF). [s]"""
        q = check_probability("q", q)
        return self.isf(1.0 - q)

    def isf(self, q):
        """Smallest x with P(X > x) <= q; precise for tiny ``q`` (extreme quantiles). [s]"""
        q = check_probability("q", q)
        return _isf_by_search(self, q)

    @abstractmethod
    def mean(self) -> float:
        """Expected value. [s]"""

    def sample(self, size, rng: RngLike = None) -> np.ndarray:
        """Independent draws. [s]

        Parameters
        ----------
        size : int or tuple of int
            Shape of the result. [-]
        rng : int or numpy.random.Generator, optional
            Seed or generator.
        """
        return self._draw(check_size(size), as_generator(rng))

    def _draw(self, size, gen: np.random.Generator) -> np.ndarray:
        """Draws for a checked ``size`` (inverse-CDF sampling unless a subclass knows better)."""
        return self.isf(gen.random(size))

    # -- metadata -----------------------------------------------------------------------
    @property
    def params(self) -> dict:
        """Parameters that define the model (recorded in result attributes)."""
        return {}

    @property
    def atoms(self) -> np.ndarray | None:
        """Sorted support points when the law is purely discrete, else None."""
        return None

    def describe(self) -> str:
        """A one-line description such as ``Exponential(mean=1e-05)``."""
        inner = ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}"
                          for k, v in self.params.items())
        return f"{type(self).__name__}({inner})"

    def __repr__(self) -> str:
        return self.describe()

    # -- arithmetic ---------------------------------------------------------------------
    def __add__(self, other):
        if isinstance(other, NoiseModel):
            return Sum([self, other])
        if isinstance(other, int | float | np.integer | np.floating):
            return Shifted(self, float(other))
        return NotImplemented

    __radd__ = __add__

    # -- hooks for the exact max-of-N ---------------------------------------------------
    def _exact_max_mean(self, n: int) -> float | None:
        """E[max of n independent draws] in closed form, or None to integrate numerically."""
        return None


def _isf_by_search(model: NoiseModel, q: np.ndarray, iterations: int = 200) -> np.ndarray:
    """Invert ``model.sf`` by a vectorised bracketing search (for models without a closed-form
    inverse).

    Each value keeps a bracket ``sf(lo) > q >= sf(hi)`` and ends at ``hi`` once the bracket
    spans a few units in the last place. The next point is the false-position point of
    ``log sf`` (Illinois variant), which is nearly linear in the tail of light-tailed laws
    and converges in about ten steps; where that point is useless (outside the bracket,
    not finite) or the bracket has not halved in two steps, the midpoint (bisection) is
    taken, so the search is never much slower than bisection.
    """
    q = np.asarray(q, dtype=float)
    flat = q.ravel()
    lo = np.full(flat.shape, model.lower, dtype=float)
    hi = np.full(flat.shape, model.upper if math.isfinite(model.upper) else 0.0)
    if not math.isfinite(model.upper):
        # grow the upper end until sf(hi) <= q
        hi[:] = max(model.lower, 0.0) + max(abs(model.mean()), 1e-12)
        for _ in range(2000):
            need = model.sf(hi) > flat
            if not need.any():
                break
            hi[need] = hi[need] * 2.0 + 1e-300
    with np.errstate(divide="ignore", invalid="ignore"):
        target = np.log(flat)
        g_lo = np.log(model.sf(lo)) - target  # > 0 inside the bracket
        g_hi = np.log(model.sf(hi)) - target  # <= 0
    active = np.flatnonzero(g_lo > 0)  # sf(lower) <= q: the answer is the lower end
    hi[g_lo <= 0] = lo[g_lo <= 0]
    width = hi - lo
    previous = np.full(flat.shape, np.inf)  # the width one step back
    before = np.full(flat.shape, np.inf)  # and two steps back
    kept = np.zeros(flat.shape, dtype=np.int8)  # +1: lo kept last step, -1: hi kept
    for _ in range(iterations):
        wide = width[active] > 4e-16 * np.maximum(np.abs(hi[active]), 1e-300)
        active = active[wide]
        if active.size == 0:
            break
        a, b = lo[active], hi[active]
        ga, gb = g_lo[active], g_hi[active]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            point = b - gb * (b - a) / (gb - ga)
        # sf(hi) = q to the last digit: the answer may lie a few units in the last place
        # below hi, where the false-position point cannot go
        point = np.where(gb == 0, b - 8e-16 * np.abs(b), point)
        useless = ~((point > a) & (point < b)) | (width[active] > 0.5 * before[active])
        point = np.where(useless, 0.5 * (a + b), point)
        with np.errstate(divide="ignore", invalid="ignore"):
            g = np.log(model.sf(point)) - target[active]
        above = g > 0  # sf(point) > q: the root lies above
        # Illinois: a side kept twice in a row has its value halved
        g_hi[active] = np.where(above & (kept[active] == -1), 0.5 * gb, gb)
        g_lo[active] = np.where(~above & (kept[active] == 1), 0.5 * ga, ga)
        lo[active] = np.where(above, point, a)
        g_lo[active] = np.where(above, g, g_lo[active])
        hi[active] = np.where(above, b, point)
        g_hi[active] = np.where(above, g_hi[active], g)
        kept[active] = np.where(above, -1, 1)
        before[active] = previous[active]
        previous[active] = width[active]
        width[active] = hi[active] - lo[active]
    out = hi
    out = np.where(flat >= 1.0, model.lower, out)
    return out.reshape(q.shape)


class Shifted(NoiseModel):
    """``base + shift``: the phase time ``w + δ`` for noise ``δ`` and work ``w`` [s].

    A negative shift is allowed only while every time stays >= 0 (it cannot move the
    law's lower end below zero).
    """

    def __init__(self, base: NoiseModel, shift: float):
        if not isinstance(base, NoiseModel):
            raise ValueError(f"base must be a NoiseModel, got {type(base).__name__}")
        shift = float(shift)
        if not math.isfinite(shift):
            raise ValueError(f"shift must be finite, got {shift!r}")
        if base.lower + shift < 0:
            raise ValueError(
                f"shift by {shift:g} s would make times negative: the law starts at "
                f"{base.lower:g} s, so the shift (the work w) must be >= {-base.lower:g} s")
        if isinstance(base, Shifted):  # flatten nested shifts
            base, shift = base.base, base.shift + shift
        self.base, self.shift = base, shift
        self.lower, self.upper = base.lower + shift, base.upper + shift

    def cdf(self, x):
        return self.base.cdf(np.asarray(x, dtype=float) - self.shift)

    def sf(self, x):
        return self.base.sf(np.asarray(x, dtype=float) - self.shift)

    def isf(self, q):
        return self.base.isf(q) + self.shift

    def mean(self) -> float:
        return self.base.mean() + self.shift

    def _draw(self, size, gen):
        return self.base._draw(size, gen) + self.shift

    @property
    def atoms(self):
        atoms = self.base.atoms
        return None if atoms is None else atoms + self.shift

    @property
    def params(self) -> dict:
        return {"base": self.base.describe(), "shift": self.shift}

    def describe(self) -> str:
        return f"{self.base.describe()} + {self.shift:.6g}"

    def _exact_max_mean(self, n: int):
        inner = self.base._exact_max_mean(n)
        return None if inner is None else inner + self.shift


class Mixture(NoiseModel):
    """With probability ``weights[k]`` the noise follows ``components[k]``.

    Parameters
    ----------
    components : sequence of NoiseModel
    weights : sequence of float
        Non-negative; normalised to sum to one.
    """

    def __init__(self, components: Sequence[NoiseModel], weights: Sequence[float]):
        components = list(components)
        if not components:
            raise ValueError("components must be a non-empty sequence of noise models")
        for i, c in enumerate(components):
            if not isinstance(c, NoiseModel):
                raise TypeError(f"components[{i}] is a {type(c).__name__}, not a noise model "
                                "(jl.noise)")
        try:
            weights = np.asarray(weights, dtype=float)
        except (TypeError, ValueError):
            raise TypeError(f"weights must be numbers, got {weights!r}") from None
        if weights.shape != (len(components),):
            raise ValueError(f"weights must have one value per component ({len(components)})")
        if np.any(~np.isfinite(weights)) or np.any(weights < 0) or weights.sum() <= 0:
            raise ValueError(f"weights must be finite, non-negative and not all zero: {weights}")
        keep = weights > 0
        self.components = [c for c, k in zip(components, keep, strict=True) if k]
        self.weights = weights[keep] / weights[keep].sum()
        self.lower = min(c.lower for c in self.components)
        self.upper = max(c.upper for c in self.components)

    def cdf(self, x):
        x = np.asarray(x, dtype=float)
        return sum(w * c.cdf(x) for w, c in zip(self.weights, self.components, strict=True))

    def sf(self, x):
        x = np.asarray(x, dtype=float)
        return sum(w * c.sf(x) for w, c in zip(self.weights, self.components, strict=True))

    def mean(self) -> float:
        return float(sum(w * c.mean() for w, c in zip(self.weights, self.components,
                                                       strict=True)))

    def _draw(self, size, gen):
        which = gen.choice(len(self.components), size=size, p=self.weights)
        out = np.empty(np.shape(which), dtype=float)
        for k, component in enumerate(self.components):
            mask = which == k
            out[mask] = component._draw(int(mask.sum()), gen)
        return out

    @property
    def atoms(self):
        parts = [c.atoms for c in self.components]
        if any(p is None for p in parts):
            return None
        return np.unique(np.concatenate(parts))

    @property
    def params(self) -> dict:
        return {"components": [c.describe() for c in self.components],
                "weights": self.weights.tolist()}

    def describe(self) -> str:
        inner = ", ".join(f"{w:.4g}*{c.describe()}"
                          for w, c in zip(self.weights, self.components, strict=True))
        return f"Mixture({inner})"


class Sum(NoiseModel):
    """The sum of independent noise sources (for example a timer tick plus a daemon).

    The CDF is the convolution: exact when all but one component are discrete
    (Bernoulli, Empirical, Periodic), otherwise computed by Gauss-Legendre quadrature
    over the quantiles of the continuous components.
    """

    # quantile levels u = (1 − cos πt)/2 with Gauss-Legendre in t: dense near 0 and 1,
    # where the quantile function of an unbounded law is singular
    _t, _w = np.polynomial.legendre.leggauss(400)
    _levels = 0.5 * (1.0 - np.cos(0.5 * np.pi * (_t + 1.0)))
    _level_weights = 0.5 * _w * 0.5 * np.pi * np.sin(0.5 * np.pi * (_t + 1.0))

    def __init__(self, components: Sequence[NoiseModel]):
        flat: list[NoiseModel] = []
        for c in components:
            if not isinstance(c, NoiseModel):
                raise TypeError(f"components must be noise models (jl.noise), got "
                                f"{type(c).__name__}")
            flat.extend(c.components if isinstance(c, Sum) else [c])
        if len(flat) < 2:
            raise ValueError("a Sum needs at least two components")
        self.components = flat
        self.lower = sum(c.lower for c in flat)
        self.upper = sum(c.upper for c in flat)

    def _split(self) -> tuple[NoiseModel, list[NoiseModel]]:
        """One component to evaluate by its CDF, the others to integrate over."""
        ordered = sorted(self.components, key=lambda c: c.atoms is not None)
        return ordered[0], ordered[1:]

    def _expectation(self, fn, x):
        """E[fn(x − S)] over the sum S of all components but the one evaluated by fn."""
        inner, others = self._split()
        x = np.asarray(x, dtype=float)
        discrete = [c for c in others if c.atoms is not None]
        continuous = [c for c in others if c.atoms is None]
        shifts, probs = np.zeros(1), np.ones(1)
        for c in discrete:
            atoms = c.atoms
            shifts = (shifts[:, None] + atoms[None, :]).ravel()
            probs = (probs[:, None] * np.diff(c.cdf(atoms), prepend=0.0)[None, :]).ravel()
        for c in continuous[1:]:  # rare: more than two continuous parts, plain quadrature
            shifts = (shifts[:, None] + c.ppf(self._levels)[None, :]).ravel()
            probs = (probs[:, None] * self._level_weights[None, :]).ravel()
        keep = probs > 0
        shifts, probs = shifts[keep], probs[keep]
        z = x.reshape(-1, 1) - shifts[None, :]
        if continuous:
            values = self._integrate_outer(fn, inner, continuous[0], z)
        else:
            values = fn(z)
        return np.clip((values * probs[None, :]).sum(axis=1), 0, 1).reshape(x.shape)

    def _integrate_outer(self, fn, inner, outer, z):
        """∫_0^1 fn(z − F_Y⁻¹(u)) du for the outer continuous part Y, precise in the tail.

        Below u_k = F_Y(z − inner.upper) the argument lies above the inner law's support
        and fn is constant; above u* = F_Y(z − inner.lower) it lies below it. Between the
        two kinks the body u <= 1/2 is integrated in u and the rest in log(1 − u), with
        F_Y⁻¹ taken from the survival level, so tail probabilities far below 1e-6 keep
        their relative precision.
        """
        above = fn(np.full(1, inner.upper + 1.0)) if math.isfinite(inner.upper) else 0.0
        below = fn(np.full(1, inner.lower - 1.0))
        # 1 − u_k and 1 − u* from the survival function: precise where they are tiny
        s_kink = (np.clip(outer.sf(z - inner.upper), 0.0, 1.0) if math.isfinite(inner.upper)
                  else np.ones(z.shape))
        u_kink = 1.0 - s_kink
        s_star = np.clip(outer.sf(z - inner.lower), 0.0, 1.0)
        nodes, weights = 0.5 * (self._t + 1.0), 0.5 * self._w
        # the body, u in [u_kink, min(u*, 1/2)]
        body_hi = np.minimum(1.0 - s_star, 0.5)
        body_lo = np.minimum(u_kink, body_hi)
        u = body_lo[..., None] + (body_hi - body_lo)[..., None] * nodes
        body = (fn(z[..., None] - outer.ppf(u)) * weights).sum(axis=-1) * (body_hi - body_lo)
        # the tail, s = 1 − u in [s*, min(1 − u_kink, 1/2)], on a logarithmic scale
        log_hi = np.log(np.clip(s_kink, 1e-300, 0.5))
        log_lo = np.minimum(np.log(np.maximum(s_star, 1e-300)), log_hi)
        level = np.exp(log_lo[..., None] + (log_hi - log_lo)[..., None] * nodes)
        tail = ((fn(z[..., None] - outer.isf(level)) * level * weights).sum(axis=-1)
                * (log_hi - log_lo))
        return body + tail + u_kink * above + s_star * below

    def cdf(self, x):
        inner, _ = self._split()
        return self._expectation(inner.cdf, x)

    def sf(self, x):
        inner, _ = self._split()
        return self._expectation(inner.sf, x)

    def mean(self) -> float:
        return float(sum(c.mean() for c in self.components))

    def _draw(self, size, gen):
        return sum(c._draw(size, gen) for c in self.components)

    @property
    def atoms(self):
        parts = [c.atoms for c in self.components]
        if any(p is None for p in parts):
            return None
        total = np.zeros(1)
        for p in parts:
            total = np.unique((total[:, None] + p[None, :]).ravel())
        return total

    @property
    def params(self) -> dict:
        return {"components": [c.describe() for c in self.components]}

    def describe(self) -> str:
        return " + ".join(c.describe() for c in self.components)
