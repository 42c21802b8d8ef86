"""The files of the Parallel Benchmark (``jitterlab measure pb``): format, writer, readers.

A run of :func:`jitterlab.measure.parallel_benchmark` is stored chunk by chunk while it
runs (``<output>.pb/``, :mod:`jitterlab.io.chunks`) and finished as one netCDF file: per
rank the raw compute, barrier and iteration times of the first iterations and the
histograms of all of them. :func:`read_pb` reads either, :func:`write_pb` writes the
Dataset, :func:`histogram_law` gives one rank's law from its histogram.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .mpi_runs import counter_variables, rank_coordinates
from .runfiles import RunFiles, run_attrs, write_dataset

__all__ = ["read_pb", "write_pb", "histogram_law", "default_hist_bins", "is_pb_file",
           "store_path", "target_problem", "dataset_from_store", "QUANTITIES",
           "HIST_BINS_PER_DECADE", "HIST_RANGE", "SOURCE", "KIND"]

SOURCE = "jitterlab.bench.pb"  # the files' format marker (kept)
KIND = "pb"
#: suffix of the chunk directory next to the output file
STORE_SUFFIX = ".pb"
#: the three times stored per iteration, in the order of the kernel's output rows
QUANTITIES = ("compute", "barrier", "iteration")
LONG_NAMES = {
    "compute": "compute time t_f - t_s of one iteration (w + δ)",
    "barrier": "barrier time t_e - t_f of one iteration",
    "iteration": "iteration time t_e - t_s (θ)",
}
#: default histogram: log-spaced bins, this many per decade ...
HIST_BINS_PER_DECADE = 200
#: ... from the first to the second edge [s], plus [0, 10 ns) below and [10 s, ∞) above
HIST_RANGE = (1e-8, 10.0)
#: Dataset attributes stored as 0/1 in netCDF and read back as bool
BOOL_ATTRS = ("random_wait", "broadcast", "oversubscribed", "pinned", "complete",
              "interrupted", "calibration_extrapolated", "tsc_invariant")
#: chunk-store metadata that become per-rank variables or coordinates, not attributes
PER_RANK = ("host", "node", "cpu", "frequency_hz", "lcg_iterations", "calibrated_work",
            "tsc_calibration_spread", "calibration_extrapolated")
STORE_KEYS = ("format", "version", "kind", "unit", "bin_edges")


def default_hist_bins() -> np.ndarray:
    """The default histogram edges [s]: 0, then log-spaced from 10 ns to 10 s.

    :data:`HIST_BINS_PER_DECADE` (200) bins per decade, each 1.16 % wide, over
    :data:`HIST_RANGE`; with the bin ``[10 s, ∞)`` that every histogram adds at the top,
    every non-negative time falls in a bin.
    """
    low, high = HIST_RANGE
    decades = round(math.log10(high / low))
    edges = np.logspace(math.log10(low), math.log10(high), decades * HIST_BINS_PER_DECADE + 1)
    return np.concatenate(([0.0], edges))


def dataset_from_store(metadata: dict, chunks: list[dict], name: str):
    import xarray as xr

    n_ranks = int(metadata["n_ranks"])
    frequency = np.asarray(metadata["frequency_hz"], dtype=np.float64)
    edges = np.asarray(metadata["bin_edges"], dtype=np.float64)
    n_bins = edges.size
    counts = np.zeros((n_ranks, len(QUANTITIES) * n_bins), dtype=np.int64)
    for chunk in chunks:
        np.add.at(counts, (np.asarray(chunk["hist_rank"], dtype=np.intp),
                           np.asarray(chunk["hist_index"], dtype=np.intp)),
                  np.asarray(chunk["hist_count"], dtype=np.int64))
    counts = counts.reshape(n_ranks, len(QUANTITIES), n_bins)
    data_vars = {}
    for q, quantity in enumerate(QUANTITIES):
        cycles = np.concatenate([np.asarray(chunk[quantity], dtype=np.int64)
                                 for chunk in chunks], axis=1)
        data_vars[quantity] = (("rank", "sample"), cycles / frequency[:, None],
                               {"units": "s", "long_name": LONG_NAMES[quantity]})
        data_vars[f"{quantity}_hist"] = (
            ("rank", "bin"), counts[:, q, :],
            {"units": "1", "long_name": f"number of iterations per bin of the {quantity} "
             "time: bin k holds bin_edges[k] <= t < bin_edges[k+1]"})
    data_vars["lcg_iterations"] = ("rank", np.asarray(metadata["lcg_iterations"],
                                                      dtype=np.int64),
                                   {"units": "1", "long_name": "LCG steps of one quantum "
                                    "of work (calibrated by the rank)"})
    data_vars["calibrated_work"] = ("rank", np.asarray(metadata["calibrated_work"],
                                                       dtype=np.float64),
                                    {"units": "s", "long_name": "minimum time of the "
                                     "calibrated work quantum"})
    data_vars.update(counter_variables(metadata))
    coords = {
        **rank_coordinates(metadata),
        "bin_edges": ("bin_edge", np.append(edges, np.inf),
                      {"units": "s", "long_name": "histogram bin edges"}),
    }
    attrs = run_attrs(
        metadata, STORE_KEYS + PER_RANK,
        calibration_extrapolated=any(metadata.get("calibration_extrapolated", [])),
        measured_duration=float(sum(float(chunk["seconds"]) for chunk in chunks)),
        iterations=int(sum(int(chunk["iterations"]) for chunk in chunks)),
        samples=int(data_vars["compute"][1].shape[1]), chunks=len(chunks))
    return xr.Dataset(data_vars, coords=coords, attrs=attrs)


FILES = RunFiles(KIND, SOURCE, "Parallel Benchmark", "the Parallel Benchmark", BOOL_ATTRS,
                 dataset_from_store)
#: the chunk directory of a run writing ``output``: ``<output>.pb``
store_path = FILES.store_path
#: why a run may not write ``output`` and its chunk directory (or None)
target_problem = FILES.target_problem


def histogram_law(dataset, quantity: str, rank: int):
    """The law of one rank's ``quantity`` over every iteration of a run, from its histogram.

    Parameters
    ----------
    dataset : xarray.Dataset
        A Parallel Benchmark result (:func:`read_pb`, :func:`jitterlab.datasets.load_pb`).
    quantity : {"compute", "barrier", "iteration"}
        Which time: w + δ, b or θ.
    rank : int
        The rank. [-]

    Returns
    -------
    jitterlab.noise.Histogram
        Uniform inside each bin [s]. The raw ``sample`` values hold only the first
        iterations of a long run; the histograms count all of them.

    Raises
    ------
    ValueError
        For an unknown ``quantity``, or when iterations fell into the last bin, which
        reaches to infinity (longer than the histogram's range).
    """
    from ..noise import Histogram

    if quantity not in QUANTITIES:
        raise ValueError(f"quantity must be one of {QUANTITIES}, got {quantity!r}")
    counts = dataset[f"{quantity}_hist"].sel(rank=rank).values
    if counts[-1]:
        raise ValueError(f"rank {rank}: {int(counts[-1])} {quantity} times beyond the "
                         "histogram's last finite edge")
    return Histogram(dataset["bin_edges"].values[:-1], counts[:-1])


def write_pb(dataset, path, *, overwrite: bool = False) -> Path:
    """Write a Parallel Benchmark Dataset to netCDF, atomically (as the benchmark does).

    Boolean attributes are stored as 0/1 (netCDF has no boolean attributes) and read back
    as bool by :func:`read_pb`. Used to save the Dataset of an interrupted run read from
    its chunk directory. An existing file only with ``overwrite=True``.
    """
    return write_dataset(dataset, path, overwrite=overwrite, compressed=[
        name for quantity in QUANTITIES for name in (quantity, f"{quantity}_hist")],
        what="Parallel Benchmark Dataset")


def read_pb(path):
    """Read a Parallel Benchmark run: its netCDF file or its chunk directory.

    Parameters
    ----------
    path : path-like
        The ``output`` file of :func:`parallel_benchmark` (``jitterlab measure pb``), or
        its chunk directory ``<output>.pb`` — also of a run that was killed or
        interrupted, which gives every completed chunk.

    Returns
    -------
    xarray.Dataset
        As described in :func:`parallel_benchmark` (loaded into memory);
        ``attrs["complete"]`` is False for a run that did not finish.

    Raises
    ------
    FileNotFoundError, ValueError
        As :meth:`jitterlab.measure.runfiles.RunFiles.read`: no such ``path``, neither
        file nor chunk directory, no complete chunk, or a damaged chunk before the last.
    """
    return FILES.read(path)


#: True if ``path`` is a netCDF file written by the Parallel Benchmark
is_pb_file = FILES.is_file
