"""Helpers shared by the runs of the MPI benchmarks: failing together, where the ranks
run, the metadata, and closing a run.

Used by :mod:`jitterlab.measure.pb`, :mod:`jitterlab.measure.latency` and
:mod:`jitterlab.measure.bsp` (and by their files' modules for the per-rank variables).
"""

from __future__ import annotations

import os
import platform

import numpy as np

from ..io import chunks as _chunks
from ._machine import cpu_model, utc_now
from ._mpi import mpi_description
from ._tsc import CycleCounterError

__all__ = ["collectively", "finish_run", "ranks_and_cpus", "check_status", "run_metadata",
           "rank_coordinates", "counter_variables", "SHARED_ERRORS"]

#: errors re-raised with their own type on every rank when one rank fails in the set-up
SHARED_ERRORS = {cls.__name__: cls for cls in (ValueError, FileExistsError,
                                               CycleCounterError)}


def collectively(comm, function, *args):
    """``function(*args)`` on every rank; if it fails on any rank, raise on all of them.

    The failing rank re-raises its own exception; the others raise one of the same type
    (ValueError, FileExistsError, CycleCounterError, else RuntimeError) naming the rank,
    so that no rank is left waiting in a collective call.
    """
    try:
        result, error = function(*args), None
    except Exception as exc:  # every failure must reach the other ranks
        result, error = None, exc
    reports = comm.allgather(None if error is None else (type(error).__name__, str(error)))
    if error is not None:
        raise error
    for rank, report in enumerate(reports):
        if report is not None:
            name, message = report
            raise SHARED_ERRORS.get(name, RuntimeError)(f"rank {rank}: {message}")
    return result


def refuse_taken_output(comm, problem_of, output, overwrite: bool) -> None:
    """The root asks ``problem_of(output, overwrite)`` whether the output may be written (a
    sentence saying why not, or None); if not, every rank raises FileExistsError with it."""
    root = comm.Get_rank() == 0
    problem = comm.bcast(problem_of(output, overwrite) if root else None, root=0)
    if problem is not None:
        raise FileExistsError(problem)


def finish_run(comm, root, writer, summary, interrupted, store, output, read_store, write,
               read_output, keep_chunks, overwrite=False):
    """Close a benchmark run on every rank.

    Rank 0 (``root``) marks the chunk store of an interrupted run as such (the store is
    kept, readable), or finishes it with the run's ``summary``, writes the run's file
    ``output`` from it (``write(read_store(store), output, overwrite=overwrite)``, atomic:
    a file that appeared at ``output`` during the run is kept unless ``overwrite``), removes
    the store unless ``keep_chunks`` and returns ``read_output(output)``; the other ranks, and
    rank 0 after an interruption, return None. A failure on rank 0 is raised on every
    rank.
    """
    def finish():
        if not root:
            return None
        if interrupted:
            writer.update(interrupted=True, **summary)
            return None
        writer.finish(**summary)
        write(read_store(store), output, overwrite=overwrite)
        if not keep_chunks:
            _chunks.remove_store(store)
        return read_output(output)

    return collectively(comm, finish)


def ranks_and_cpus(comm, pin: bool) -> dict:
    """Host, node index, CPU to pin to and oversubscription, agreed by all ranks."""
    from mpi4py import MPI

    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    allowed = affinity if affinity is not None else list(range(os.cpu_count() or 1))
    everyone = comm.allgather((MPI.Get_processor_name(), allowed))
    hosts = [host for host, _ in everyone]
    node_of: dict[str, int] = {}
    cpus_of_host: dict[str, set] = {}
    for host, cpus in everyone:
        node_of.setdefault(host, len(node_of))
        cpus_of_host.setdefault(host, set()).update(cpus)
    oversubscribed = any(hosts.count(host) > len(cpus) for host, cpus in cpus_of_host.items())
    rank = comm.Get_rank()
    local_rank = hosts[:rank].count(hosts[rank])
    cpu = affinity[local_rank % len(affinity)] if pin and affinity else None
    cpus = comm.allgather(-1 if cpu is None else cpu)
    return {"host": hosts, "node": [node_of[host] for host in hosts], "cpu": cpus,
            "this_cpu": cpu, "oversubscribed": oversubscribed,
            "pinned": all(value >= 0 for value in cpus), "n_nodes": len(node_of)}


def check_status(MPI, status) -> None:
    """Raise ``MPI.Exception`` for an MPI error code other than 0 (``MPI_SUCCESS``)."""
    if status != 0:
        raise MPI.Exception(int(status))


def run_metadata(MPI, source: str, size: int, placement: dict, per_rank: list[dict],
                 command: str) -> dict:
    """The chunk-store metadata every MPI benchmark records: where the ranks ran, their
    counters (``per_rank``: one dict per rank, gathered on rank 0), MPI, machine, time."""
    from .. import __version__

    return {
        "source": source, "unit": "cycles", "n_ranks": size, "n_nodes": placement["n_nodes"],
        "oversubscribed": placement["oversubscribed"], "pinned": placement["pinned"],
        "host": placement["host"], "node": placement["node"], "cpu": placement["cpu"],
        **{key: [item[key] for item in per_rank] for key in per_rank[0]
           if key != "tsc_invariant"},
        "tsc_invariant": per_rank[0]["tsc_invariant"],
        **mpi_description(MPI),
        "kernel": platform.release(), "os": platform.system(), "cpu_model": cpu_model(),
        "n_cpus": os.cpu_count(), "clock": "rdtsc (llvm.readcyclecounter)",
        "jitterlab_version": __version__, "collected_at": utc_now(), "command": command,
    }


def rank_coordinates(metadata: dict) -> dict:
    """The ``rank``, ``host``, ``node`` and ``cpu`` coordinates of a benchmark Dataset."""
    n_ranks = int(metadata["n_ranks"])
    return {
        "rank": ("rank", np.arange(n_ranks), {"units": "1", "long_name": "MPI rank"}),
        "host": ("rank", np.asarray(metadata["host"], dtype=str),
                 {"long_name": "host of the rank (MPI processor name)"}),
        "node": ("rank", np.asarray(metadata["node"], dtype=np.int64),
                 {"units": "1", "long_name": "index of the host, in order of its first "
                  "rank"}),
        "cpu": ("rank", np.asarray(metadata["cpu"], dtype=np.int64),
                {"units": "1", "long_name": "CPU the rank was pinned to (-1: not pinned)"}),
    }


def counter_variables(metadata: dict) -> dict:
    """The per-rank ``frequency_hz`` and ``tsc_calibration_spread`` variables."""
    return {
        "frequency_hz": ("rank", np.asarray(metadata["frequency_hz"], dtype=np.float64), {
            "units": "Hz", "long_name": "calibrated rate of the rank's timestamp counter"}),
        "tsc_calibration_spread": (
            "rank", np.asarray(metadata["tsc_calibration_spread"], dtype=np.float64),
            {"units": "1", "long_name": "relative spread of the timestamp-counter "
             "calibrations"}),
    }
