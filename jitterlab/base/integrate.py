"""Quadrature helpers for the exact max-of-N means."""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy import integrate

__all__ = ["quad", "piecewise_quad", "quantile_tail_integral", "max_isf_single"]

#: Gauss-Legendre nodes and weights on [0, 1], a rule and one of twice its order
_RULES = [((x + 1.0) / 2.0, w / 2.0) for x, w in (np.polynomial.legendre.leggauss(k)
                                                   for k in (10, 20))]
#: breakpoints in s of the tail integral; with fixed rules in log s also those near s = 1/2
#: (log(1 − s) is singular at s = 1: pieces shorter there than their distance from it)
_S_POINTS = (1e-15, 1e-12, 1e-9, 1e-6, 1e-3)
_S_POINTS_NEAR_HALF = (1e-2, 0.1, 0.3)
#: breakpoints in v = −log(1 − s) above s = 1/2, and where the tail integral stops
_V_POINTS = (2.0, 4.0, 7.0, 11.0, 16.0, 23.0, 31.0, 40.0)
_LAST_V = 45.0


def quad(f, a: float, b: float, *, scale: float, rtol: float = 1e-10) -> float:
    """∫_a^b f with an absolute target of ``rtol·scale``; warns only if that is missed.

    QUADPACK reports round-off whenever the integrand is flat to machine precision
    (1 − G(x) ≈ 1 far below the quantiles of the maximum); what matters is whether
    the error estimate is small against the size of the answer, ``scale``.
    """
    value, error, *_ = integrate.quad(f, a, b, limit=400, epsabs=rtol * scale, epsrel=rtol,
                                      full_output=1)
    if not error <= 1e3 * rtol * max(abs(value), scale):
        warnings.warn(f"numerical integration over [{a:g}, {b:g}] reached an error estimate "
                      f"of {error:g} for a value of {value:g}", RuntimeWarning, stacklevel=3)
    return float(value)


def piecewise_quad(f, edges, *, scale: float, rtol: float = 1e-10) -> float:
    """Σ_k ∫_{edges[k]}^{edges[k+1]} f, for f smooth inside each piece. [s]

    ``f`` takes and returns arrays. Every piece is first integrated at once by
    Gauss-Legendre rules of 10 and 20 points (one call of ``f`` each: many pieces are
    the support points of a measured law mixed with continuous laws; a few are the
    stretches between quantiles of a maximum, each a scalar call of a costly ``f`` under
    QUADPACK); a piece whose two results differ by more than its share of
    ``rtol·scale`` goes to :func:`quad`.
    """
    edges = np.asarray(edges, dtype=float)
    lo, hi = edges[:-1], edges[1:]
    width = hi - lo
    coarse, fine = (width * (f(lo[:, None] + width[:, None] * x) @ w) for x, w in _RULES)
    share = rtol * scale * width / max(edges[-1] - edges[0], 1e-300)
    redo = np.flatnonzero(~(np.abs(fine - coarse) <= share))
    for k in redo:
        fine[k] = quad(lambda x: float(f(x)), lo[k], hi[k], scale=scale, rtol=rtol)
    return float(fine.sum())


def quantile_tail_integral(max_isf, x0: float, s0: float, *, scale: float,
                           vectorised: bool = False, rtol: float = 1e-10) -> float:
    """∫_{x0}^∞ (1 − G(x)) dx = ∫_0^{s0} (G⁻¹(1 − s) − x0) ds, with s0 = 1 − G(x0).

    In quantile space even a heavy tail becomes an integrable endpoint singularity
    at s = 0, which QUADPACK's extrapolation handles. ``max_isf(s)`` returns the
    point x with P(max > x) = s. ``scale`` is the size of the whole answer this tail
    is part of (E[max], at least ``x0`` in magnitude): every piece is integrated to
    an absolute error of ``rtol·scale``, or ``rtol`` of its own value if larger. A
    target relative to the tail piece alone would ask for digits the inverse CDF of
    a law computed by quadrature (a :class:`~jitterlab.noise.Sum`) cannot give far
    out in its tail, and QUADPACK would report round-off for nothing.

    With ``vectorised``, ``max_isf`` takes and returns arrays. The pieces beyond the
    first then span decades of s, over which the integrand in t = log s,
    (G⁻¹(1 − e^t) − x0)·e^t, is smooth; above s = 1/2 (N far beyond the body, s0 → 1)
    the variable is v = −log(1 − s) instead, in which the slow approach of G⁻¹(1 − s)
    to x0 is smooth, up to v = 45 at most (the rest is below e^−45 of the excess at
    s = 1/2, which bounds the decreasing integrand). Gauss-Legendre rules of 10 and 20
    points take all their nodes in one call of ``max_isf``, and only a piece where the
    two differ by more than the target goes to QUADPACK. The first piece, with the
    singularity, always does.
    """
    if s0 <= 0:
        return 0.0

    def excess(s):
        level = np.array([s]) if vectorised else s
        return float(np.ravel(max_isf(level))[0]) - x0

    low_end = min(s0, 0.5)
    points = [p for p in (*_S_POINTS, *_S_POINTS_NEAR_HALF) if p < low_end]
    edges = [0.0, *points, low_end]
    scale = max(abs(scale), abs(x0) * s0, 1e-300)
    if not vectorised or (len(edges) < 3 and s0 <= 0.5):
        edges = [0.0, *(p for p in _S_POINTS if p < s0), s0]
        return sum(quad(excess, lo, hi, scale=scale, rtol=rtol)
                   for lo, hi in zip(edges[:-1], edges[1:], strict=True))
    # pieces in t = log s, then in v = −log(1 − s); s(u) and ds/du at the nodes
    log_edges = np.log(edges[1:])
    v_end = min(-math.log1p(-s0), _LAST_V) if s0 < 1 else _LAST_V
    v_edges = np.array([math.log(2.0), *(v for v in _V_POINTS if v < v_end), v_end]
                       if s0 > 0.5 else [])
    lo = np.concatenate([log_edges[:-1], v_edges[:-1]])
    width = np.concatenate([np.diff(log_edges), np.diff(v_edges)])
    upper = np.arange(lo.size) >= log_edges.size - 1
    nodes = [lo[:, None] + width[:, None] * x for x, _ in _RULES]
    u = np.concatenate([t.ravel() for t in nodes])
    in_v = np.concatenate([np.broadcast_to(upper[:, None], t.shape).ravel() for t in nodes])
    jacobian = np.exp(np.where(in_v, -u, u))
    levels = np.where(in_v, -np.expm1(-u), jacobian)
    values = (np.asarray(max_isf(levels), dtype=float) - x0) * jacobian
    coarse_values, fine_values = np.split(values, [nodes[0].size])
    coarse, fine = (width * (v.reshape(t.shape) @ w)
                    for v, t, (_, w) in zip((coarse_values, fine_values), nodes, _RULES,
                                            strict=True))
    redo = np.flatnonzero(~(np.abs(fine - coarse) <= rtol * np.maximum(scale, np.abs(fine))))
    for k in redo:
        a, b = ((-math.expm1(-lo[k]), -math.expm1(-lo[k] - width[k])) if upper[k]
                else (edges[k + 1], edges[k + 2]))
        fine[k] = quad(excess, a, b, scale=scale, rtol=rtol)
    return quad(excess, 0.0, edges[1], scale=scale, rtol=rtol) + float(fine.sum())


def max_isf_single(model, count: int):
    """s ↦ isf of the maximum of ``count`` draws of ``model`` (precise as s → 0).

    The returned function takes a level or an array of levels.
    """
    def max_isf(s):
        s = np.asarray(s, dtype=float)
        with np.errstate(divide="ignore"):
            level = -np.expm1(np.log1p(-np.minimum(s, 1.0)) / count)
        return model.isf(np.where(s < 1, level, 1.0))
    return max_isf

