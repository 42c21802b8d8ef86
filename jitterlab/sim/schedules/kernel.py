"""numba kernel of the schedule simulator: LogGOPSim's event loop on columnar arrays.

Arrays in, arrays out; times are integers in ticks (1 tick = ``resolution`` seconds,
chosen by the caller), so that simultaneous events are exactly simultaneous, as in
LogGOPSim's integer nanoseconds. The parts: :mod:`.arguments` prepares the inputs
(:func:`schedule_arguments`), :mod:`.event_loop` runs LogGOPSim's loop step by step (its
docstring lists the rules), :mod:`.costs` holds the noise and per-byte rules and
:mod:`.sorting` libstdc++'s ``std::sort``. This module is their public face.

Its reference implementation is LogGOPSim itself: tests/test_goal_exactness.py and
tests/test_schedules.py compare every rank's end with LogGOPSim's printed times.
"""

from __future__ import annotations

import numba
import numpy as np

from .arguments import KernelArguments, schedule_arguments
from .costs import DELTA, NO_NOISE, TRACE
from .event_loop import (
    COMPLETE,
    CPU_END,
    CPU_START,
    NOISE,
    START,
    TIME_FIELDS,
    simulate_with_matches,
)
from .sorting import std_sort

__all__ = ["simulate_arrays", "simulate_with_times", "simulate_with_matches",
           "new_operation_times", "TIME_FIELDS", "START", "CPU_START", "CPU_END", "NOISE",
           "COMPLETE", "schedule_arguments", "KernelArguments", "std_sort", "NO_NOISE",
           "TRACE", "DELTA"]


def new_operation_times(n_operations: int) -> np.ndarray:
    """An int64 array (len(TIME_FIELDS), n_operations) of −1 for :func:`simulate_with_times`
    to fill (−1 stays where an operation never got there)."""
    return np.full((len(TIME_FIELDS), n_operations), -1, dtype=np.int64)


@numba.njit(cache=True)
def simulate_arrays(kind, rank, peer, size, tag, calc, cpu, nic, rank_offsets, placement,
                    origin, succ_offsets, succ, isucc_offsets, isucc, waits, channel,
                    n_channels, exact, n_cpus, n_nics, latency, overhead, gap, gap_per_byte,
                    overhead_per_byte, eager_limit, mode, trc_start, trc_dur, rank_time,
                    delta, op_start, op_end, end_out):
    """Run the schedule once; fill ``end_out[host]`` (the latest CPU free time [ticks]).

    The arguments up to ``delta`` are those of :func:`simulate_with_times`.
    ``op_start``/``op_end`` (when of size n, else of size 0): the rows ``START`` and
    ``COMPLETE`` of its per-operation times [ticks] are written there.

    Returns (operations finished, events handled, entries left in the queues).
    """
    n = kind.size
    keep = op_start.size == n
    times = np.full((len(TIME_FIELDS), n if keep else 0), -1, dtype=np.int64)
    result = simulate_with_times(
        kind, rank, peer, size, tag, calc, cpu, nic, rank_offsets, placement, origin,
        succ_offsets, succ, isucc_offsets, isucc, waits, channel, n_channels, exact, n_cpus,
        n_nics, latency, overhead, gap, gap_per_byte, overhead_per_byte, eager_limit, mode,
        trc_start, trc_dur, rank_time, delta, times, end_out)
    if keep:
        op_start[:] = times[START]
        op_end[:] = times[COMPLETE]
    return result


@numba.njit(cache=True)
def simulate_with_times(kind, rank, peer, size, tag, calc, cpu, nic, rank_offsets,
                        placement, origin, succ_offsets, succ, isucc_offsets, isucc, waits,
                        channel, n_channels, exact, n_cpus, n_nics, latency, overhead, gap,
                        gap_per_byte, overhead_per_byte, eager_limit, mode, trc_start,
                        trc_dur, rank_time, delta, times, end_out):
    """Run the schedule once; fill ``end_out[host]`` (the latest CPU free time [ticks])
    and, when requested, every operation's times.

    Per-operation times: pass ``times = new_operation_times(n)`` (shape
    (len(TIME_FIELDS), n), int64, −1) to have them filled, or an array of shape
    (len(TIME_FIELDS), 0) for none (then nothing is recorded and nothing costs). Row
    ``times[F]`` is indexed like the schedule's operations, in ticks:

    * ``START``: a calc or send takes its CPU (= ``CPU_START``); a recv is posted;
    * ``CPU_START``, ``CPU_END``: the CPU time the operation charges, noise included:
      a calc's duration, a send's o + (s−1)·O, a recv's o + max((s−1)·O, (s−1)·G) when
      its message is taken off the network (progress on arrival: for a message that
      came before its recv was posted, this lies before ``START``);
    * ``NOISE``: the noise inside [``CPU_START``, ``CPU_END``);
    * ``COMPLETE``: when the operation releases its requires-successors: a calc at
      ``CPU_END``, an eager send at ``CPU_END``, a rendezvous send (s > S) when its
      receive matches, a recv at ``CPU_END`` when its message came after it was posted,
      at ``START`` when the message was waiting (LogGOPSim's times).

    −1 is left where an operation never got there (a deadlock).

    The arguments from ``kind`` to ``eager_limit`` come from :func:`schedule_arguments`:
    the operations are numbered step-major there (``placement[i]``: the index of the
    schedule's operation i; ``origin[j]``: the schedule's index of operation j), and
    the per-operation arrays follow that numbering; ``rank_offsets`` is the schedule's.
    ``times`` and ``delta`` are indexed like the schedule's operations.
    ``waits[j]``: number of requires + irequires of operation j (copied, not changed).
    ``channel``: one id per (receiver, sender, tag) when ``exact`` (no wildcard: the
    first queued entry of a channel always matches), else the receiving host
    (wildcards: the queue of the host is searched in posting order). ``delta`` (mode
    2): the noise [ticks] of operation i's own CPU use at ``delta[i]`` and of receiving
    send i's message at ``delta[n + i]``.

    Returns (operations finished, events handled, entries left in the queues).

    The loop is :func:`event_loop.simulate_with_matches`, which can also record the send
    each receive matched.
    """
    return simulate_with_matches(
        kind, rank, peer, size, tag, calc, cpu, nic, rank_offsets, placement, origin,
        succ_offsets, succ, isucc_offsets, isucc, waits, channel, n_channels, exact, n_cpus,
        n_nics, latency, overhead, gap, gap_per_byte, overhead_per_byte, eager_limit, mode,
        trc_start, trc_dur, rank_time, delta, times, np.empty(0, dtype=np.int64), end_out,
        True)  # park given, as every caller gives it: one compiled version
