"""numba kernels (arrays in, arrays out) and their plain-Python references.

The Monte Carlo kernel uses a counter-based generator: draw ``i`` of stream
``(seed, replicate, group)`` is a SplitMix64 hash of a counter, so the result depends
only on the seed, never on how replicates are spread over threads.
"""

from __future__ import annotations

import numba
import numpy as np

from ..base.threads import one_thread_copy

__all__ = ["max_uniform_complement", "max_uniform_complement_reference", "stream_key",
           "stream_key_reference", "seed_for_n", "step_sum_one_minus_power",
           "step_sum_one_minus_power_reference", "step_sum_one_minus_power_parallel",
           "step_sum_one_minus_power_one_thread"]

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
_TWO53 = 2.0**53
_TWO_M53 = 2.0**-53


@numba.njit(cache=True, inline="always")
def _mix64(z):
    """SplitMix64 finaliser: a bijective hash of a 64-bit word."""
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


@numba.njit(cache=True)
def stream_key(seed, replicate, group, n_groups):
    """The base counter of stream (seed, replicate, group)."""
    index = np.uint64(replicate) * np.uint64(n_groups) + np.uint64(group)
    return _mix64(_mix64(np.uint64(seed) ^ _GAMMA) + _mix64(index + _GAMMA))


@numba.njit(cache=True, parallel=True)
def max_uniform_complement(seed, counts, replicates):
    """For each replicate and group, 1 − max of ``counts[group]`` standard uniforms.

    Parameters
    ----------
    seed : int
        Non-negative 63-bit seed.
    counts : int64 array, shape (K,)
        Draws per group (processes sharing one noise law).
    replicates : int
        Independent repetitions R.

    Returns
    -------
    float64 array, shape (R, K)
        ``v = 1 − max(u)`` in (0, 1]; the maximum of the group's noise is ``isf(v)``
        because the inverse CDF is monotone.
    """
    n_groups = counts.shape[0]
    out = np.empty((replicates, n_groups))
    for r in numba.prange(replicates):
        for g in range(n_groups):
            base = stream_key(seed, r, g, n_groups)
            best = np.uint64(0)
            for i in range(counts[g]):
                z = _mix64(base + np.uint64(i + 1) * _GAMMA)
                if z > best:
                    best = z
            # the top 53 bits make a uniform in [0, 1); the shift keeps the order
            out[r, g] = (_TWO53 - float(best >> _S11)) * _TWO_M53
    return out


def _mix64_reference(z: int) -> int:
    mask = (1 << 64) - 1
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    return z ^ (z >> 31)


def stream_key_reference(seed: int, replicate: int, group: int, n_groups: int) -> int:
    """Plain-Python twin of :func:`stream_key`."""
    mask, gamma = (1 << 64) - 1, 0x9E3779B97F4A7C15
    index = (replicate * n_groups + group) & mask
    return _mix64_reference((_mix64_reference(seed ^ gamma)
                             + _mix64_reference((index + gamma) & mask)) & mask)


def seed_for_n(seed: int, n: int) -> int:
    """The 63-bit seed of the Monte Carlo streams for N = ``n`` processes.

    A hash of (seed, N), so that the draws for one N do not depend on which other
    values of N are computed in the same call, nor on their order.
    """
    return stream_key_reference(int(seed), int(n), 0, 1) >> 1


def max_uniform_complement_reference(seed: int, counts, replicates: int) -> np.ndarray:
    """Plain-Python twin of :func:`max_uniform_complement` (slow; for tests)."""
    mask, gamma = (1 << 64) - 1, 0x9E3779B97F4A7C15
    counts = np.asarray(counts, dtype=np.int64)
    out = np.empty((replicates, counts.size))
    for r in range(replicates):
        for g, count in enumerate(counts):
            base = stream_key_reference(seed, r, g, counts.size)
            best = max((_mix64_reference((base + (i + 1) * gamma) & mask) >> 11
                        for i in range(int(count))), default=0)
            out[r, g] = (2.0**53 - float(best)) * 2.0**-53
    return out


_BLOCK = 4096


@numba.njit(cache=True, parallel=True)
def step_sum_one_minus_power_parallel(values, head, power, start):
    """Σ_{k >= start} (values[k+1] − values[k])·(1 − head[k+1]^power), integer ``power``.

    The exact E[max of N] of a discrete law, less its smallest counted value. The
    power is taken by repeated squaring in blocks, which vectorises; its relative
    error grows like power·ε, so callers use it for moderate N only.
    """
    m = values.size
    n_blocks = (m - 1 - start + _BLOCK - 1) // _BLOCK
    partial = np.zeros(max(n_blocks, 0))
    for j in numba.prange(n_blocks):
        lo = start + j * _BLOCK
        hi = min(lo + _BLOCK, m - 1)
        result = np.ones(hi - lo)
        base = head[lo + 1:hi + 1].copy()
        e = power
        while e:
            if e & 1:
                for i in range(hi - lo):
                    result[i] *= base[i]
            for i in range(hi - lo):
                base[i] *= base[i]
            e >>= 1
        acc = 0.0
        for i in range(hi - lo):
            acc += (values[lo + i + 1] - values[lo + i]) * (1.0 - result[i])
        partial[j] = acc
    total = 0.0  # in block order: numba would turn partial.sum() into a parallel
    for j in range(n_blocks):  # reduction whose order depends on the thread count
        total += partial[j]
    return total


step_sum_one_minus_power_one_thread = one_thread_copy(step_sum_one_minus_power_parallel,
                                                      "step_sum_one_minus_power_one_thread")


def step_sum_one_minus_power(values, head, power, start):
    """Σ_{k >= start} (values[k+1] − values[k])·(1 − head[k+1]^power) (see
    :func:`step_sum_one_minus_power_parallel`), on numba's threads, or without the parallel
    layer and the GIL when numba runs one thread (the same result, bit for bit)."""
    if numba.get_num_threads() == 1:
        return step_sum_one_minus_power_one_thread(values, head, power, start)
    return step_sum_one_minus_power_parallel(values, head, power, start)


def step_sum_one_minus_power_reference(values, head, power, start):
    """Plain numpy twin of :func:`step_sum_one_minus_power`."""
    steps = np.diff(values)[start:]
    return float(np.dot(steps, 1.0 - head[start + 1:values.size] ** power))
