"""Retried events of the schedule kernel parked per host instead of queued.

In LogGOPSim an event that finds its CPU (or NIC) busy goes back into the event queue
at the time the resource frees, with its creation stamp. When many events wait for one
CPU (an all-to-all with compute: 41.6 M events for 196 K operations on 256 ranks), every
CPU grant sends all the others around the queue once more.

The event loop (:mod:`.event_loop`) keeps such events out of the queue instead: each
host has a list of parked events, each with the time it would have in the queue
(``park_time``) and its stamp, and the queue holds one *token* per host, keyed by the
least (time, stamp) of the list, so the parked events are taken in exactly the queue's
order. When a grant moves the CPU's next free time past a parked event's time, that
event would pop, find the CPU busy and go back at max(CPU, its NIC) free: :func:`rescan`
does that retry at once, counting it as an event, so the number of events is unchanged.

This is exact when nothing can change a host's resources while its CPU is busy: one CPU
per host (every grant needs it) and no grant that moves a next-free time backwards (all
costs, calc durations and noise non-negative; :func:`parking_allowed`). Else the loop
queues retries as LogGOPSim does.
"""

from __future__ import annotations

import numba
import numpy as np

from .costs import DELTA, TRACE, per_byte, receive_bytes

__all__ = ["parking_allowed", "rescan"]

_SEND, _CALC = 1, 3


@numba.njit(cache=True)
def parking_allowed(kind, size, calc, n_cpus, overhead, gap, gap_per_byte,
                    overhead_per_byte, mode, trc_dur, delta):
    """Whether retries may be parked: one CPU per host, and no cost that moves a CPU's
    or NIC's next free time before the time it is granted at (see the module)."""
    if n_cpus != 1 or overhead < 0 or gap < 0 or gap_per_byte < 0 or overhead_per_byte < 0:
        return False
    for i in range(kind.size):
        if kind[i] == _CALC:
            if calc[i] < 0:
                return False
        elif kind[i] == _SEND:
            s = size[i]
            if (overhead + per_byte(s, overhead_per_byte) < 0
                    or gap + per_byte(s, gap_per_byte) < 0
                    or overhead + receive_bytes(s, overhead_per_byte, gap_per_byte) < 0):
                return False
    if mode == TRACE:
        for k in range(trc_dur.size):
            if trc_dur[k] < 0:
                return False
    if mode == DELTA:
        for k in range(delta.size):
            if delta[k] < 0:
                return False
    return True


@numba.njit(cache=True)
def rescan(head, link, park_time, park_stamp, listed, kind, nic, n, n_nics, host,
           cpu_free, next_send, next_receive):
    """Walk the parked list of ``host`` (first entry ``head``, links ``link``; codes as
    in the event loop: operation i, or n + i for send i's message): drop the entries
    taken (``park_time`` −1), retry those whose time the CPU's next free time
    ``cpu_free`` has passed (their new time: that, or their NIC's later free time), and
    find the least (time, stamp).

    Returns (new head, entries left, least time, its stamp, its code, retries).
    """
    left = 0
    retries = 0
    best_time = np.iinfo(np.int64).max
    best_stamp = np.iinfo(np.int64).max
    best = -1
    before = -1
    j = head
    while j >= 0:
        following = link[j]
        when = park_time[j]
        if when < 0:  # taken from the list by its token
            listed[j] = False
            if before >= 0:
                link[before] = following
            else:
                head = following
        else:
            if cpu_free > when:  # it would pop, find the CPU busy and go back
                when = cpu_free
                if j >= n:
                    when = max(when, next_receive[host * n_nics + nic[j - n]])
                elif kind[j] == _SEND:
                    when = max(when, next_send[host * n_nics + nic[j]])
                park_time[j] = when
                retries += 1
            left += 1
            stamp = park_stamp[j]
            if when < best_time or (when == best_time and stamp < best_stamp):
                best_time, best_stamp, best = when, stamp, j
            before = j
        j = following
    return head, left, best_time, best_stamp, best, retries
