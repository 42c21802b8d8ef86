"""The timed loop of the BSP benchmark: phases of compute and a collective, in one kernel.

:func:`bsp_loop` is a numba kernel that calls the MPI library's C functions directly
(:mod:`jitterlab.measure._mpi`): nothing is allocated or interpreted between the counter
reads. :func:`jitterlab.measure.bsp.bsp_benchmark` runs it chunk by chunk.
"""

from __future__ import annotations

import numba
import numpy as np

from ._mpi import call_allreduce, call_barrier, call_iallreduce, call_ibarrier, call_test
from ._tsc import read_tsc

__all__ = ["bsp_loop", "counter_now"]


@numba.njit(cache=True, inline="always")
def _record(events, m, lost, phase, start, length, kind):
    """Append one interruption to ``events`` (or count it as lost if it is full)."""
    if m < events.shape[1]:
        events[0, m] = phase
        events[1, m] = start
        events[2, m] = length
        events[3, m] = kind
        return m + 1, lost
    return m, lost + 1


@numba.njit(cache=True)
def bsp_loop(collective, poll, functions, comm, double, op, send, receive, request, flag,
              mpi_status, work, threshold, wait_threshold, count, period, duration,
              next_detour, out, events):
    """Run ``count`` phases of compute + collective; no allocation, no Python.

    ``work``, ``threshold``, ``wait_threshold``, ``period``, ``duration`` and
    ``next_detour`` (the counter value at which the next injected detour is due) are in
    counter cycles; ``period`` 0 injects nothing. ``collective`` 0 is the barrier, 1 the
    allreduce (sum of one double); ``functions`` holds the addresses of ``MPI_Barrier``,
    ``MPI_Allreduce``, ``MPI_Ibarrier``, ``MPI_Iallreduce`` and ``MPI_Test``. With
    ``poll`` the collective is started non-blocking and completed by a loop of
    ``MPI_Test`` that reads the counter: its steps longer than ``wait_threshold`` are the
    collective's noise. ``out`` (len(RECORDS), capacity) receives the records of each
    phase (:data:`jitterlab.measure.bsp_files.RECORDS`), ``events``
    (len(INTERRUPTION_FIELDS) - 1, events capacity) every interruption: the phase
    (counted from 0 in this call), the counter read before the long step (for a detour:
    the read at which it began), its length [cycles] and its kind
    (:data:`jitterlab.measure.bsp_files.INTERRUPTION_KINDS`: 0 a long step of the busy
    loop, 1 an injected detour, 2 a long step of the ``MPI_Test`` loop). Records that do
    not fit are counted as lost (the caller sizes ``count`` so that they fit; the call
    cannot end early on its own, as every rank must run the same phases).

    A detour begins at the first counter read at or after it falls due; one that has fallen
    due while the previous one spun (or the rank was descheduled) follows right after it.

    Returns ``(phases done, MPI error code, next_detour, detours dropped, loop steps,
    interruptions recorded, interruptions lost)``: a detour falls due either inside a
    compute interval (it is injected) or while the rank is in the collective or at the
    read that ends the work (it is dropped).
    """
    n = 0
    status = np.int32(0)
    dropped = 0
    steps = 0
    m = 0
    lost = 0
    now = read_tsc()
    while n < count:
        start = now
        if period > 0:
            while next_detour < start:
                next_detour += period
                dropped += 1
        done = 0
        injected = 0
        other = 0
        n_injected = 0
        n_other = 0
        previous = start
        while True:
            now = read_tsc()
            steps += 1
            delta = now - previous
            if delta > threshold:
                other += delta
                n_other += 1
                m, lost = _record(events, m, lost, n, previous, delta, 0)
            else:
                done += delta
            if done >= work:
                break
            if period > 0 and now >= next_detour:
                begin = now
                while now - begin < duration:
                    now = read_tsc()
                injected += now - begin
                n_injected += 1
                m, lost = _record(events, m, lost, n, begin, now - begin, 1)
                next_detour += period
            previous = now
        end = now
        waited = 0
        n_waited = 0
        if collective == 1:
            send[0] = (end - start) * 1.0
        if not poll:
            if collective == 0:
                status = call_barrier(functions[0], comm)
            else:
                status = call_allreduce(functions[1], send, receive, double, op, comm)
            now = read_tsc()
        else:
            if collective == 0:
                status = call_ibarrier(functions[2], comm, request)
            else:
                status = call_iallreduce(functions[3], send, receive, double, op, comm,
                                         request)
            previous = end
            flag[0] = 0
            while status == 0:
                status = call_test(functions[4], request, flag, mpi_status)
                now = read_tsc()
                delta = now - previous
                if delta > wait_threshold:
                    waited += delta
                    n_waited += 1
                    m, lost = _record(events, m, lost, n, previous, delta, 2)
                if flag[0] != 0:
                    break
                previous = now
        if status != 0:
            break
        out[0, n] = start
        out[1, n] = end
        out[2, n] = now
        out[3, n] = injected
        out[4, n] = other
        out[5, n] = n_injected
        out[6, n] = n_other
        out[7, n] = waited
        out[8, n] = n_waited
        n += 1
    return n, status, next_detour, dropped, steps, m, lost


@numba.njit(cache=True)
def counter_now():
    """The timestamp counter now [cycles], from Python."""
    return read_tsc()
