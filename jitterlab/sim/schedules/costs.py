"""LogGOPSim's CPU-time rules for the schedule kernel: noise and per-byte costs.

All times in integer ticks. Noise modes: :data:`NO_NOISE`, :data:`TRACE` (LogGOPSim's
``--noise-trace`` rule, ``Noise::get_noise``: the rest of a detour under way at the
start of the CPU time, plus every detour that begins inside it, with no detour counted
within a detour) and :data:`DELTA` (one δ per CPU use, given per operation).
"""

from __future__ import annotations

import numba

__all__ = ["NO_NOISE", "TRACE", "DELTA", "trace_noise", "per_byte",
           "receive_bytes"]

NO_NOISE, TRACE, DELTA = 0, 1, 2


@numba.njit(cache=True)
def trace_noise(trc_start, trc_dur, trctime, rank_time, start, length):
    """LogGOPSim's Noise::get_noise for CPU time [start, start + length) of one rank."""
    n = trc_start.size
    modulus = trc_start[n - 1] - length
    x = (start + rank_time) % modulus
    pos = 0
    end_last = 0
    if x > trc_start[0]:
        lo, hi = 0, n - 1  # last index with trc_start <= x (x < trc_start[n-1])
        while hi - lo > 1:
            mid = (lo + hi) >> 1
            if trc_start[mid] <= x:
                lo = mid
            else:
                hi = mid
        pos = lo
        end_last = trc_start[pos] + trc_dur[pos]
    noise = 0
    if end_last > x:
        noise = end_last - x
    end = x + length
    if pos == n - 1:
        end -= trctime
        pos = 0
    while end > trc_start[pos + 1]:
        pos += 1
        noise += trc_dur[pos]
        if pos == n - 1:
            end -= trctime
            pos = 0
    return noise


@numba.njit(cache=True, inline="always")
def per_byte(size, cost):
    """(size − 1)·cost in LogGOPSim's unsigned arithmetic: −cost for a 0-byte message."""
    return (size - 1) * cost


@numba.njit(cache=True, inline="always")
def receive_bytes(size, big_o, big_g):
    """LogGOPSim's max((s−1)·O, (s−1)·G), compared as unsigned 64-bit numbers."""
    a = (size - 1) * big_o
    b = (size - 1) * big_g
    if size >= 1:
        return max(a, b)
    # s = 0: the products are −O and −G wrapped to 2**64 − O and 2**64 − G; a zero
    # product is the smallest unsigned number
    if big_o == 0:
        return b
    if big_g == 0:
        return a
    return max(a, b)
