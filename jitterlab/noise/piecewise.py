"""A law made of point masses and uniform pieces: its CDF is piecewise linear with jumps.

It is the exact law of the time to finish a fixed amount of work from a uniformly
random start in a jitter trace (:func:`jitterlab.noise.from_trace`), and the exact
max-of-N of such a law has a closed form on every linear piece.
"""

from __future__ import annotations

import numpy as np

from ._base import NoiseModel, check_probability
from .discrete import as_times, mean_power_on_linear_pieces

__all__ = ["Piecewise"]


class Piecewise(NoiseModel):
    """Point masses plus uniform pieces.

    Parameters
    ----------
    atom_values, atom_weights : array_like
        Locations [s] and probabilities of the point masses.
    segment_low, segment_high, segment_weights : array_like
        Uniform pieces on (low, high] [s] with their probabilities.

    The weights are normalised to sum to one.
    """

    def __init__(self, atom_values=(), atom_weights=(), segment_low=(), segment_high=(),
                 segment_weights=()):
        atoms = np.asarray(atom_values, dtype=float).ravel()
        atom_w = np.asarray(atom_weights, dtype=float).ravel()
        low = np.asarray(segment_low, dtype=float).ravel()
        high = np.asarray(segment_high, dtype=float).ravel()
        seg_w = np.asarray(segment_weights, dtype=float).ravel()
        if atoms.shape != atom_w.shape:
            raise ValueError("atom_values and atom_weights must have the same length")
        if not low.shape == high.shape == seg_w.shape:
            raise ValueError("segment_low, segment_high and segment_weights must have the same "
                             "length")
        for name, arr in (("atom_values", atoms), ("segment_low", low), ("segment_high", high)):
            if arr.size:
                as_times(name, arr)
        for name, arr in (("atom_weights", atom_w), ("segment_weights", seg_w)):
            if np.any(~np.isfinite(arr)) or np.any(arr < 0):
                raise ValueError(f"{name} must be finite and non-negative")
        if np.any(high <= low):
            raise ValueError("every segment needs segment_high > segment_low")
        atoms, atom_w = atoms[atom_w > 0], atom_w[atom_w > 0]  # empty parts add no knots
        low, high, seg_w = low[seg_w > 0], high[seg_w > 0], seg_w[seg_w > 0]
        total = atom_w.sum() + seg_w.sum()
        if not total > 0:
            raise ValueError("the weights must not all be zero")
        atom_w, seg_w = atom_w / total, seg_w / total

        # knots: every atom and segment end; the continuous CDF is linear between knots.
        # One sort gives the knots and the knot of each value (what np.unique and three
        # searchsorted calls gave: the law of a 60 000-detour trace 67 -> 40 ms of CPU);
        # bincount adds in the order np.add.at did: the lows, then the highs
        values = np.concatenate([atoms, low, high])
        order = np.argsort(values)
        ordered = values[order]
        first = np.empty(ordered.size, dtype=bool)
        first[:1] = True
        np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
        knots = ordered[first]
        knot_of = np.empty(values.size, dtype=np.intp)
        knot_of[order] = np.cumsum(first) - 1
        at_atom, at_low, at_high = np.split(knot_of, [atoms.size, atoms.size + low.size])
        density = seg_w / (high - low)
        density_change = np.bincount(np.concatenate([at_low, at_high]),
                                     np.concatenate([density, -density]), knots.size)
        density = np.cumsum(density_change)[:-1]  # on (knots[k], knots[k+1])
        piece_mass = np.clip(density, 0.0, None) * np.diff(knots)
        mass_at = np.bincount(at_atom, atom_w, knots.size)
        # tails from the top keep small probabilities precise
        # above_plus[k] = P(X > x_k); above_minus[k] = P(X >= x_k)
        above_plus = np.concatenate([np.cumsum((piece_mass + mass_at[1:])[::-1])[::-1], [0.0]])
        above_minus = above_plus + mass_at
        scale = above_minus[0]
        self.knots = knots
        self._piece_mass = piece_mass / scale
        self._above_plus = above_plus / scale
        self._above_minus = np.minimum(above_minus / scale, 1.0)
        self._rising = -self._above_plus
        self.lower, self.upper = float(knots[0]), float(knots[-1])
        # sums of products, not np.dot: OpenBLAS hands a dot product of over 10 000 values
        # to its threads, which then spin for tens of ms of CPU (notebook 07's 202 laws of
        # a 60 000-detour trace: 6 CPU-s)
        self._mean = float(np.sum(mass_at * knots) / scale
                           + np.sum(self._piece_mass * (0.5 * (knots[1:] + knots[:-1]))))

    @property
    def params(self) -> dict:
        return {"knots": int(self.knots.size), "low": self.lower, "high": self.upper}

    def sf(self, x):
        x = np.asarray(x, dtype=float)
        k = np.searchsorted(self.knots, x, "right") - 1  # knots[k] <= x < knots[k+1]
        inside = (k >= 0) & (k < self.knots.size - 1)
        kk = np.clip(k, 0, self.knots.size - 2)
        frac = (x - self.knots[kk]) / (self.knots[kk + 1] - self.knots[kk])
        linear = self._above_plus[kk] - frac * self._piece_mass[kk]
        at_top = k >= self.knots.size - 1
        return np.where(k < 0, 1.0, np.where(at_top, 0.0, np.where(inside, linear, 0.0)))

    def cdf(self, x):
        return 1.0 - self.sf(x)

    def isf(self, q):
        q = check_probability("q", q)
        # first knot whose upper tail is <= q
        k = np.minimum(np.searchsorted(self._rising, -q, "left"), self.knots.size - 1)
        on_knot = (q < self._above_minus[k]) | (k == 0)  # inside the jump at knots[k]
        prev = np.maximum(k - 1, 0)
        mass = self._piece_mass[np.minimum(prev, self._piece_mass.size - 1)] \
            if self._piece_mass.size else np.zeros_like(q)
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.where(mass > 0, (self._above_plus[prev] - q) / mass, 1.0)
        inner = self.knots[prev] + np.clip(frac, 0, 1) * (self.knots[k] - self.knots[prev])
        return np.where(on_knot, self.knots[k], inner)

    def mean(self) -> float:
        return self._mean

    def _exact_max_mean(self, n: int) -> float:
        """∫(1 − F^n) in closed form on every linear piece (F jumps at the atoms).

        On a piece where F rises linearly from a to b, ∫F^n = Δx·(b^{n+1} − a^{n+1}) /
        ((n + 1)(b − a)), evaluated as b^{n+1}·(1 − (a/b)^{n+1}) with log(a/b) =
        log1p(−p/b), p = b − a the piece's mass, to stay precise for huge n.
        """
        # F rises from a (after the jump at the left knot) to b (before the right one)
        mean_power = mean_power_on_linear_pieces(self._above_plus[:-1],
                                                  self._above_minus[1:], self._piece_mass, n)
        return float(self.lower + np.dot(np.diff(self.knots), 1.0 - mean_power))
