"""Random-number plumbing shared by every function that takes ``rng``."""

from __future__ import annotations

import numpy as np

__all__ = ["as_generator", "seed_from"]

RngLike = int | np.random.Generator | None


def as_generator(rng: RngLike) -> np.random.Generator:
    """Return a :class:`numpy.random.Generator` for an int seed, a Generator or None."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        return np.random.default_rng()
    if isinstance(rng, int | np.integer) and not isinstance(rng, bool | np.bool_):
        if rng < 0:
            raise ValueError(f"rng seed must be non-negative, got {rng}")
        return np.random.default_rng(int(rng))
    raise TypeError(
        f"rng must be an int seed, a numpy Generator or None, not {type(rng).__name__} "
        f"{rng!r}")


def seed_from(rng: RngLike) -> int:
    """Derive one 63-bit integer seed from ``rng`` (an int is used as it is).

    The seed feeds the counter-based generators of the numba kernels, so that their
    output depends only on the seed and never on the number of threads.
    """
    if isinstance(rng, int | np.integer) and not isinstance(rng, bool):
        if rng < 0:
            raise ValueError(f"rng seed must be non-negative, got {rng}")
        return int(rng) & (2**63 - 1)
    return int(as_generator(rng).integers(0, 2**63 - 1))
