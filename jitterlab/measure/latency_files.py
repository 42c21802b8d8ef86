"""The files of the latency benchmark (``jitterlab measure latency``): format, writer, reader.

A run of :func:`jitterlab.measure.latency_benchmark` is stored chunk by chunk while it runs
(``<output>.latency/``: one chunk per pair of ranks and per block of barriers,
:mod:`jitterlab.io.chunks`) and finished as one netCDF file: the round-trip times of every
pair and the empty-barrier times of every rank. :func:`read_latency` reads either.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .mpi_runs import counter_variables, rank_coordinates
from .runfiles import RunFiles, run_attrs, write_dataset

__all__ = ["read_latency", "write_latency", "is_latency_file", "store_path", "target_problem",
           "dataset_from_store", "MESSAGE_BYTES", "SOURCE", "KIND"]

SOURCE = "jitterlab.bench.latency"  # the files' format marker (kept)
KIND = "latency"
#: suffix of the chunk directory next to the output file
STORE_SUFFIX = ".latency"
#: size of the ping-pong message (one double, as the small messages of a barrier tree)
MESSAGE_BYTES = 8
#: Dataset attributes stored as 0/1 in netCDF and read back as bool
BOOL_ATTRS = ("oversubscribed", "pinned", "complete", "interrupted", "tsc_invariant")
#: chunk-store metadata that become per-rank variables or coordinates, not attributes
PER_RANK = ("host", "node", "cpu", "frequency_hz", "tsc_calibration_spread")
STORE_KEYS = ("format", "version", "kind", "unit")


def dataset_from_store(metadata: dict, chunks: list[dict], name: str):
    import xarray as xr

    n_ranks = int(metadata["n_ranks"])
    frequency = np.asarray(metadata["frequency_hz"], dtype=np.float64)
    pings = [c for c in chunks if str(c["phase"]) == "ping_pong"]
    blocks = [np.asarray(c["cycles"], dtype=np.int64) for c in chunks
              if str(c["phase"]) == "barrier"]
    initiator = np.array([int(c["initiator"]) for c in pings], dtype=np.int64)
    responder = np.array([int(c["responder"]) for c in pings], dtype=np.int64)
    cycles = (np.stack([np.asarray(c["cycles"], dtype=np.int64) for c in pings]) if pings
              else np.zeros((0, 0), dtype=np.int64))
    barrier = (np.concatenate(blocks, axis=1) if blocks
               else np.zeros((n_ranks, 0), dtype=np.int64))
    data_vars = {
        "ping_pong": (("pair", "exchange"), cycles / frequency[initiator][:, None],
                      {"units": "s", "long_name": f"round-trip time of a {MESSAGE_BYTES}-byte "
                       "message from the initiator to the responder and back (τ = half of "
                       "it)"}),
        "barrier": (("rank", "sample"), barrier / frequency[:, None],
                    {"units": "s", "long_name": "time of one MPI_Barrier call in a loop of "
                     "empty barriers"}),
        **counter_variables(metadata),
    }
    coords = {
        **rank_coordinates(metadata),
        "pair": ("pair", np.arange(len(pings)), {"units": "1", "long_name": "pair of ranks"}),
        "initiator": ("pair", initiator, {"units": "1", "long_name": "rank that sends first "
                                          "and times the round trip"}),
        "responder": ("pair", responder, {"units": "1", "long_name": "rank that sends the "
                                          "message back"}),
    }
    attrs = run_attrs(metadata, STORE_KEYS + PER_RANK, chunks=len(chunks))
    return xr.Dataset(data_vars, coords=coords, attrs=attrs)


FILES = RunFiles(KIND, SOURCE, "latency", "the latency benchmark", BOOL_ATTRS,
                 dataset_from_store)
#: the chunk directory of a run writing ``output``: ``<output>.latency``
store_path = FILES.store_path
#: why a run may not write ``output`` and its chunk directory (or None)
target_problem = FILES.target_problem


def write_latency(dataset, path, *, overwrite: bool = False) -> Path:
    """Write a latency Dataset to netCDF, atomically (as the benchmark does); an existing
    file only with ``overwrite=True``."""
    return write_dataset(dataset, path, compressed=("ping_pong", "barrier"),
                         what="latency Dataset", overwrite=overwrite)


def read_latency(path):
    """Read a latency run: its netCDF file or its chunk directory.

    Parameters
    ----------
    path : path-like
        The ``output`` of :func:`latency_benchmark` (``jitterlab measure latency``), or
        its chunk directory ``<output>.latency`` — also of a killed or interrupted run.

    Returns
    -------
    xarray.Dataset
        As described in :func:`latency_benchmark`; ``attrs["complete"]`` is False for a
        run that did not finish.

    Raises
    ------
    FileNotFoundError, ValueError
        As :meth:`jitterlab.measure.runfiles.RunFiles.read`: no such ``path``, neither
        file nor chunk directory, or no complete chunk.
    """
    return FILES.read(path)


#: True if ``path`` is a netCDF file written by the latency benchmark
is_latency_file = FILES.is_file
