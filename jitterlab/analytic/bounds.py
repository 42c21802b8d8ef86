"""Theorem 1 of Garg & De (2006): bounds on the iteration time θ with a tree barrier.

With N processes on a complete tree of one-hop latency τ, Lemma 1 gives
max_i(w_i + δ_i) <= θ <= max_i(w_i + δ_i) + 2τ·D, where D is the depth of the tree
(D = log2((N + 1)/2) for a complete binary tree of N = 2^k − 1 nodes).

References
----------
.. [1] R. Garg, P. De, "Impact of Noise on Scaling of Collectives: An Empirical
   Evaluation", HiPC 2006, §2.1-2.3, Lemma 1, Theorem 1, eq. (2) (seed 001).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr
from scipy import special

from ..base.checks import as_process_counts, check_positive
from ..noise import NoiseModel
from ..sim.barriers import TreeBarrier, check_fanout, tree_depth
from ..sim.collectives import RoundCollective
from .maxofn import DEFAULT_QUANTILES, as_models, exact_max_mean, max_of_n

__all__ = ["tree_depth", "arrival_offsets", "theorem1_bounds", "barrier_time", "BarrierTime"]






def arrival_offsets(n: int, tau: float, fanout: int = 2,
                    parent: Sequence[int] | None = None) -> np.ndarray:
    """Offsets a_i at which the start message from the root reaches each process. [s]

    Parameters
    ----------
    n : int
        Number of processes. [-]
    tau : float
        One-hop latency τ of one tree edge. [s]
    fanout : int
        Children per node of the breadth-first complete tree (ignored with ``parent``). [-]
    parent : sequence of int, optional
        An explicit tree: ``parent[i]`` is the 0-based index of process i's parent,
        −1 for the root (for example the numbering drawn in Garg & De's Fig. 2).

    Returns
    -------
    numpy.ndarray
        a_i = τ·(depth of process i): zero for the root, largest for the leaves. [s]
    """
    tau = check_positive("tau", tau, allow_zero=True)
    n = int(as_process_counts(n, 1)[0])
    if parent is None:
        fanout = check_fanout(fanout)
        # breadth-first: the parent of node i (0-based) is (i - 1) // fanout
        parent = [-1] + [(i - 1) // fanout for i in range(1, n)]
    parent = list(parent)
    if len(parent) != n:
        raise ValueError(f"parent must have one entry per process ({n}), got {len(parent)}")
    if sum(p == -1 for p in parent) != 1:
        raise ValueError("parent must name exactly one root (-1)")
    depth = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        chain, node = [], i
        while depth[node] < 0:
            if parent[node] == -1:
                depth[node] = 0
                break
            chain.append(node)
            if len(chain) > n or not 0 <= parent[node] < n:
                raise ValueError(f"parent does not describe a tree (at process {node})")
            node = parent[node]
        for step, member in enumerate(reversed(chain), start=1):
            depth[member] = depth[node] + step
    return depth * tau


def tree_depth_term(n_values: np.ndarray, fanout: int, depth: str) -> np.ndarray:
    """The depth D of Theorem 1: the complete tree's, or the paper's log2((N + 1)/2)."""
    if depth == "tree":
        return tree_depth(n_values, fanout).astype(float)
    if depth == "paper":
        if fanout != 2:
            raise ValueError(f"depth='paper' is log2((N + 1)/2), the depth of a binary tree; "
                             f"it does not apply to fanout={fanout}")
        return np.log2((n_values + 1.0) / 2.0)
    raise ValueError(f"depth must be 'tree' or 'paper', got {depth!r}")


def theorem1_bounds(dist, n=None, tau: float | None = None, fanout: int | None = None,
                    method: str = "exact",
                    quantiles: Sequence[float] = DEFAULT_QUANTILES, depth: str = "tree",
                    barrier=None, **max_of_n_kwargs) -> xr.Dataset:
    """Lower and upper bounds on the iteration time θ (Garg & De, Theorem 1).

    Parameters
    ----------
    dist : NoiseModel or list of NoiseModel
        Law of w + δ (for example ``noise + w``), or one per process.
    n : int or sequence of int
        Numbers of processes N. [-]
    tau : float, optional
        One-hop latency τ of a tree edge (for a simulated :class:`jitterlab.TreeBarrier`,
        its ``tau``); 0 when neither it nor ``barrier`` is given. [s]
    fanout : int, optional
        Children per node of the barrier tree; 2 when neither it nor ``barrier`` is
        given. [-]
    method, quantiles, **max_of_n_kwargs
        Passed to :func:`jitterlab.max_of_n`.
    depth : {"tree", "paper"}
        "tree" (default): the depth of the complete tree of N nodes numbered
        breadth-first, an integer, right for every N; "paper": log2((N + 1)/2) as
        printed in Garg & De, equal to it for N = 2^k − 1 and smaller otherwise.
    barrier : TreeBarrier, Dissemination or RecursiveDoubling, optional
        Take the latency term from a simulated collective instead of ``tau``: a
        :class:`jitterlab.TreeBarrier` gives its ``tau`` and ``fanout``; a round-based
        collective gives its critical path, rounds(N) × (send + wire + recv) — the same
        argument as Theorem 1's: once the last process has entered, every round takes
        at most one noiseless hop. Give either ``barrier`` or ``tau``/``fanout``, not
        both.

    Returns
    -------
    xarray.Dataset
        ``lower`` and ``upper`` bounds on E[θ] (dim ``n``), ``lower_quantiles`` and
        ``upper_quantiles`` (dims ``n``, ``quantile``) [s], the ``depth`` D [-] and the
        ``round_trip`` 2τ·D, the time a message needs up and down the tree [s].

    Notes
    -----
    max_i(w_i + δ_i) <= θ <= max_i(w_i + δ_i) + 2τ·D, with D from :func:`tree_depth`.
    The bounds hold in the stochastic order, so they bound every quantile of θ too.

    Examples
    --------
    >>> import jitterlab as jl
    >>> ds = jl.theorem1_bounds(jl.noise.Exponential(mean=1e-5) + 1e-3, n=31, tau=5e-6)
    >>> round(float(ds["round_trip"][0]) * 1e6, 3)  # 2·5 µs·log2(32/2), Garg & De §4.1
    40.0
    """
    rounds = None
    if barrier is not None and (tau is not None or fanout is not None):
        given = " and ".join(name for name, value in (("tau", tau), ("fanout", fanout))
                             if value is not None)
        raise ValueError(f"theorem1_bounds: give barrier or {given}, not both — the barrier "
                         "already fixes the latency term")
    if isinstance(barrier, TreeBarrier):
        tau, fanout = barrier.tau, barrier.fanout
    elif isinstance(barrier, RoundCollective):
        rounds = barrier
    elif barrier is not None:
        raise TypeError(f"barrier must be a jl.TreeBarrier, jl.Dissemination or "
                        f"jl.RecursiveDoubling, got {type(barrier).__name__}")
    tau = check_positive("tau", 0.0 if tau is None else tau, allow_zero=True)
    fanout = check_fanout(2 if fanout is None else fanout)
    ds = max_of_n(dist, n=n, method=method, quantiles=quantiles, **max_of_n_kwargs)
    depths = tree_depth_term(ds["n"].values, fanout, depth)
    if rounds is None:
        round_trip = xr.DataArray(
            2.0 * tau * depths, dims="n",
            attrs={"units": "s", "long_name": "round trip 2τ·D up and down the tree"})
    else:
        depths = np.array([rounds.rounds(count) for count in ds["n"].values])
        round_trip = xr.DataArray(
            depths * rounds.hop(), dims="n",
            attrs={"units": "s", "long_name": "critical path: rounds × one-way hop"})
    out = xr.Dataset(
        {"lower": ds["mean"].assign_attrs(long_name="lower bound on E[θ]"),
         "upper": (ds["mean"] + round_trip).assign_attrs(units="s",
                                                          long_name="upper bound on E[θ]"),
         "lower_quantiles": ds["quantiles"].assign_attrs(long_name="lower bound on θ quantiles"),
         "upper_quantiles": (ds["quantiles"] + round_trip).assign_attrs(
             units="s", long_name="upper bound on θ quantiles"),
         "depth": ("n", depths if depth == "paper" else depths.astype(np.int64),
                   {"units": "1", "long_name": f"tree depth D ({depth})" if rounds is None
                    else "rounds of the collective"}),
         "round_trip": round_trip},
        attrs={**ds.attrs, "bound": "Garg & De 2006, Theorem 1", "tau": tau, "fanout": fanout,
               "depth": depth if rounds is None else "rounds",
               **({} if barrier is None else {"barrier": barrier.describe()})})
    for extra in ("mean_se", "quantiles_se"):
        if extra in ds:
            out[f"lower_{extra}"] = ds[extra]
    return out


class BarrierTime(NoiseModel):
    """Time one process idles at the barrier, b = θ − (w + δ) (Garg & De, eq. 2).

    With the process's own phase time X and the maximum M' of the other N − 1,
    θ = max(X, M') + r, so b = max(0, M' − X) + r where the round trip r is 0 for the
    lower and 2τ·D for the upper bound of Theorem 1. P(b − ℓ <= t) = E[F(X + t)^{N−1}];
    the atom at zero, 1/N for a continuous law, is the chance that this process is
    the slowest.
    """

    # E[g(X)] = ∫_0^∞ g(isf(e^{−y})) e^{−y} dy by Gauss-Laguerre: the nodes reach
    # upper-tail levels e^{−y} far below 1/N, where the barrier time's law is decided
    _nodes, _weights = special.roots_laguerre(300)

    def __init__(self, dist: NoiseModel, n: int, round_trip: float = 0.0):
        self.dist = as_models(dist)[0]
        self.n = int(as_process_counts(n, 1)[0])
        self.round_trip = check_positive("round_trip", round_trip, allow_zero=True)
        self.lower = self.round_trip
        self.upper = self.dist.upper - self.dist.lower + self.round_trip

    @property
    def params(self) -> dict:
        return {"dist": self.dist.describe(), "n": self.n, "round_trip": self.round_trip}

    def _points(self):
        """Points and weights of the law of X (exact for discrete laws)."""
        atoms = self.dist.atoms
        if atoms is not None:
            return atoms, np.diff(self.dist.cdf(atoms), prepend=0.0)
        return self.dist.isf(np.exp(-self._nodes)), self._weights

    def cdf(self, t):
        t = np.asarray(t, dtype=float) - self.round_trip
        if self.n == 1:
            return np.where(t >= 0, 1.0, 0.0)
        x, w = self._points()
        flat = np.maximum(t.reshape(-1, 1), 0.0)
        with np.errstate(divide="ignore"):
            log_f = np.log1p(-np.minimum(self.dist.sf(x[None, :] + flat), 1.0))
        values = (np.exp((self.n - 1) * log_f) * w[None, :]).sum(axis=1)
        return np.where(t.reshape(-1) >= 0, np.clip(values, 0, 1), 0.0).reshape(t.shape)

    def mean(self) -> float:
        # E[b] = E[max of N] − E[X] + round_trip
        return exact_max_mean([self.dist], [self.n]) - self.dist.mean() + self.round_trip

    def _draw(self, size, gen):
        own = self.dist._draw(size, gen)
        if self.n == 1:
            return np.full(np.shape(own), self.round_trip)
        # the maximum of the other N − 1 by inversion: 1 − max(u) ~ 1 − U^{1/(N−1)}
        others = self.dist.isf(-np.expm1(np.log(gen.random(size)) / (self.n - 1)))
        return np.maximum(others - own, 0.0) + self.round_trip


def barrier_time(dist: NoiseModel, n: int, tau: float = 0.0, fanout: int = 2,
                 bound: str = "lower", depth: str = "tree") -> BarrierTime:
    """The law of one process's barrier time b = θ − (w + δ) at N processes.

    Parameters
    ----------
    dist : NoiseModel
        Law of w + δ of every process.
    n : int
        Number of processes N. [-]
    tau : float
        One-hop latency τ of a tree edge. [s]
    fanout : int
        Children per node of the barrier tree. [-]
    bound : {"lower", "upper"}
        Which side of Theorem 1: θ at its lower bound, or plus the round trip 2τ·D.
    depth : {"tree", "paper"}
        The depth D, as in :func:`theorem1_bounds`.
    """
    if bound not in ("lower", "upper"):
        raise ValueError(f"bound must be 'lower' or 'upper', got {bound!r}")
    tau = check_positive("tau", tau, allow_zero=True)
    depth_term = float(tree_depth_term(as_process_counts(n, 1), check_fanout(fanout), depth)[0])
    round_trip = 2.0 * tau * depth_term if bound == "upper" else 0.0
    return BarrierTime(dist, n, round_trip=round_trip)
