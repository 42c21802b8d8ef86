"""The timed loop of the Parallel Benchmark: Algorithm 1 of Garg & De in one kernel.

:func:`pb_loop` is a numba kernel that calls ``MPI_Barrier`` and ``MPI_Bcast`` of the MPI
library directly (:mod:`jitterlab.measure._mpi`): nothing is allocated, printed or
interpreted between the timestamp reads. :func:`jitterlab.measure.pb.parallel_benchmark`
runs it chunk by chunk.
"""

from __future__ import annotations

import numba
import numpy as np

from ._mpi import call_barrier, call_bcast
from ._tsc import read_tsc
from .fwq import lcg_steps

__all__ = ["pb_loop"]


@numba.njit(cache=True)
def pb_loop(barrier, bcast, comm, double, lcg_iterations, x, waits, count, broadcast,
             root, elapsed, stop_at, frequency, out):
    """Run up to ``count`` iterations of Algorithm 1; no allocation, no Python.

    ``waits[i]`` is the busy-wait before iteration ``i`` [cycles]; ``out`` (3, capacity)
    receives compute, barrier and iteration time [cycles]. With ``broadcast``, rank 0
    (``root``) sets ``elapsed[0] += (t_e − start of this call) / frequency`` after each
    iteration and broadcasts it; every rank stops once it reaches ``stop_at`` [s].
    Returns ``(iterations done, LCG state, MPI error code, cycles spent in the call)``.
    """
    n = 0
    status = np.int32(0)
    start = read_tsc()
    origin = elapsed[0]
    while n < count:
        wait = waits[n]
        if wait > 0:
            begin = read_tsc()
            while read_tsc() - begin < wait:
                pass
        status = call_barrier(barrier, comm)
        if status != 0:
            break
        t_s = read_tsc()
        x = lcg_steps(lcg_iterations, x)
        t_f = read_tsc()
        status = call_barrier(barrier, comm)
        t_e = read_tsc()
        if status != 0:
            break
        out[0, n] = t_f - t_s
        out[1, n] = t_e - t_f
        out[2, n] = t_e - t_s
        n += 1
        if broadcast:
            if root:
                elapsed[0] = origin + (t_e - start) / frequency
            status = call_bcast(bcast, elapsed, double, comm)
            if status != 0:
                break
            if elapsed[0] >= stop_at:
                break
    return n, x, status, read_tsc() - start
