"""The timed loops of the latency benchmark: ping-pong of a rank pair, back-to-back barriers.

Both are numba kernels that call ``MPI_Send``, ``MPI_Recv`` and ``MPI_Barrier`` of the MPI
library directly (:mod:`jitterlab.measure._mpi`): nothing is allocated or interpreted
between the timestamp reads. :func:`jitterlab.measure.latency.latency_benchmark` runs them.
"""

from __future__ import annotations

import numba
import numpy as np

from ._mpi import call_barrier, call_recv, call_send
from ._tsc import read_tsc

__all__ = ["ping_pong_loop", "barrier_loop", "TAG"]

#: message tag of the ping-pong
TAG = 77


@numba.njit(cache=True)
def ping_pong_loop(send, recv, comm, buffer, datatype, status, peer, initiator, count,
                    out):
    """``count`` round trips with ``peer``; the initiator stores each in ``out`` [cycles].

    Returns ``(round trips done, MPI error code)``.
    """
    tag = np.int32(TAG)
    for k in range(count):
        if initiator:
            start = read_tsc()
            code = call_send(send, buffer, datatype, peer, tag, comm)
            if code != 0:
                return k, code
            code = call_recv(recv, buffer, datatype, peer, tag, comm, status)
            stop = read_tsc()
            if code != 0:
                return k, code
            out[k] = stop - start
        else:
            code = call_recv(recv, buffer, datatype, peer, tag, comm, status)
            if code != 0:
                return k, code
            code = call_send(send, buffer, datatype, peer, tag, comm)
            if code != 0:
                return k, code
    return count, np.int32(0)


@numba.njit(cache=True)
def barrier_loop(barrier, comm, count, out):
    """``count`` back-to-back barriers, each timed into ``out`` [cycles]."""
    for k in range(count):
        start = read_tsc()
        code = call_barrier(barrier, comm)
        stop = read_tsc()
        if code != 0:
            return k, code
        out[k] = stop - start
    return count, np.int32(0)
