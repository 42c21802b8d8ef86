"""The files of the BSP benchmark (``jitterlab measure bsp``): their format, writer and readers.

A run of :func:`jitterlab.measure.bsp_benchmark` is stored chunk by chunk while it runs
(:mod:`jitterlab.io.chunks`) and finished as one netCDF file: per rank and phase the
counter reads of the compute interval and the collective, the injected and other detour
time, and every interruption. :func:`read_bsp` gives the run as an event trace,
:func:`read_bsp_interruptions` every interruption.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .mpi_runs import rank_coordinates
from .runfiles import RunFiles, run_attrs, write_dataset

__all__ = ["read_bsp", "read_bsp_interruptions", "write_bsp", "is_bsp_file", "read_dataset",
           "store_path", "target_problem", "SOURCE", "KIND", "RECORDS", "INTERRUPTION_KINDS",
           "INTERRUPTION_FIELDS"]

SOURCE = "jitterlab.bench.bsp"  # the files' format marker (kept)


KIND = "bsp"


#: suffix of the chunk directory next to the output file
STORE_SUFFIX = ".bsp"


#: what the kernel records per rank and phase, in the order of its output rows
RECORDS = ("compute_start", "compute_end", "collective_end", "injected", "other",
           "injected_detours", "interruptions", "collective_noise",
           "collective_interruptions")


#: the records that count events (the others are counter cycles)
COUNTS = ("injected_detours", "interruptions", "collective_interruptions")


TIMES = RECORDS[:3]


LONG_NAMES = {
    "compute_start": "counter read at which the compute interval starts",
    "compute_end": "counter read at which the work is done and the collective starts",
    "collective_end": "counter read after the collective returns (the next compute "
                      "interval starts here)",
    "injected": "time spent in injected detours inside the compute interval",
    "other": "interruptions of the busy loop above the threshold inside the compute "
             "interval, other than the injected detours",
    "injected_detours": "number of injected detours inside the compute interval",
    "interruptions": "number of interruptions above the threshold inside the compute "
                     "interval (other than the injected detours)",
    "collective_noise": "steps of the MPI_Test loop longer than the wait threshold inside "
                        "the collective (polled collectives only; else 0)",
    "collective_interruptions": "number of steps of the MPI_Test loop longer than the wait "
                                "threshold (polled collectives only)",
}


#: kinds of the recorded interruptions, in the order of the kernel's codes: a long step
#: of the busy loop in a compute interval, an injected detour, a long step of the
#: MPI_Test loop of a polled collective
INTERRUPTION_KINDS = ("other", "injected", "collective")


#: what is stored of each interruption (the kernel's rows are the last four, with the
#: phase counted from the start of its call)
INTERRUPTION_FIELDS = ("rank", "phase", "start", "duration", "kind")


#: Dataset attributes stored as 0/1 in netCDF and read back as bool
BOOL_ATTRS = ("oversubscribed", "pinned", "complete", "interrupted", "tsc_invariant",
               "injector", "poll")


#: chunk-store metadata that become per-rank variables or coordinates, not attributes
PER_RANK = ("host", "node", "cpu", "frequency_hz", "tsc_calibration_spread",
             "injector_phase", "mean_loop_time")


STORE_KEYS = ("format", "version", "kind", "unit")


# --------------------------------------------------------------------------------------
# files
# --------------------------------------------------------------------------------------
def dataset_from_store(metadata: dict, chunks: list[dict], name: str):
    import xarray as xr

    expected = 0
    for chunk in chunks:
        if int(chunk["first_phase"]) != expected:
            raise ValueError(f"{name}: a chunk starts at phase {int(chunk['first_phase'])}, "
                             f"expected {expected}")
        expected += chunk["compute_start"].shape[1]
    data_vars = {}
    for record in RECORDS:
        values = np.concatenate([np.asarray(chunk[record], dtype=np.int64) for chunk in chunks],
                                axis=1)
        unit = "1" if record in COUNTS else "cycles"
        if record in COUNTS:
            values = values.astype(np.int32)
        data_vars[record] = (("rank", "phase"), values,
                             {"units": unit, "long_name": LONG_NAMES[record]})
    data_vars["injector_dropped"] = (
        "rank", np.asarray(chunks[-1]["injector_dropped"], dtype=np.int64),
        {"units": "1", "long_name": "injected detours that fell due while the rank was in "
         "the collective (or at the read that ended the work) and were dropped"})
    for key, unit, long_name in (
            ("frequency_hz", "Hz", "the rank's own calibration of the counter"),
            ("tsc_calibration_spread", "1", "relative spread of the rank's counter "
             "calibrations"),
            ("injector_phase", "s", "time from the start to the rank's first injected "
             "detour falling due"),
            ("mean_loop_time", "s", "mean undisturbed step of the busy loop (warm-up)")):
        data_vars[key] = ("rank", np.asarray(metadata[key], dtype=np.float64),
                          {"units": unit, "long_name": long_name})
    n_phases = data_vars["compute_start"][1].shape[1]
    data_vars.update(interruptions_of_store(chunks, name))
    coords = {**rank_coordinates(metadata),
              "phase": ("phase", np.arange(n_phases), {"units": "1", "long_name": "phase"})}
    attrs = run_attrs(metadata, STORE_KEYS + PER_RANK, phases_done=n_phases, chunks=len(chunks))
    if "interruptions_lost" in chunks[-1]:
        attrs["interruptions_lost"] = np.asarray(chunks[-1]["interruptions_lost"],
                                                 dtype=np.int64).tolist()
    return xr.Dataset(data_vars, coords=coords, attrs=attrs)


FILES = RunFiles(KIND, SOURCE, "BSP benchmark", "the BSP benchmark", BOOL_ATTRS,
                 dataset_from_store)
#: the chunk directory of a run writing ``output``: ``<output>.bsp``
store_path = FILES.store_path
#: why a run may not write ``output`` and its chunk directory (or None)
target_problem = FILES.target_problem


_INTERRUPTION_ATTRS = {
    "rank": ("1", "rank that recorded the interruption"),
    "phase": ("1", "phase in which it happened"),
    "start": ("cycles", "counter read before the long step (of an injected detour: the "
              "read at which it began), from the start of the run"),
    "duration": ("cycles", "length of the interruption"),
    "kind": ("1", "0 a long step of the busy loop in the compute interval (other), 1 an "
             "injected detour, 2 a long step of the MPI_Test loop of a polled collective"),
}


def _interruption_variables(columns: dict) -> dict:
    """Dataset variables (dim ``interruption``) of interruption records by field, sorted
    by rank and start."""
    order = np.lexsort((columns["start"], columns["rank"]))
    return {f"interruption_{field}": (
        "interruption",
        np.asarray(columns[field], dtype=np.int8 if field == "kind" else np.int64)[order],
        {"units": _INTERRUPTION_ATTRS[field][0], "long_name": _INTERRUPTION_ATTRS[field][1]})
        for field in INTERRUPTION_FIELDS}


def interruptions_of_store(chunks: list[dict], name: str) -> dict:
    """The interruption records of a chunk store (none for a store written before the
    benchmark recorded them)."""
    have = ["interruption_start" in chunk for chunk in chunks]
    if not any(have):
        return {}
    if not all(have):
        raise ValueError(f"{name}: chunk {have.index(False)} has no interruption records "
                         "but others have")
    return _interruption_variables({field: np.concatenate(
        [np.asarray(chunk[f"interruption_{field}"], dtype=np.int64) for chunk in chunks])
        for field in INTERRUPTION_FIELDS})


def write_bsp(run, path, *, overwrite: bool = False) -> Path:
    """Write a BSP run to netCDF, atomically (as the benchmark does); an existing file only
    with ``overwrite=True``.

    ``run`` is the recorded Dataset of a run, or an event trace returned by
    :func:`read_bsp`, whose run is read again from the file or chunk directory it came
    from (the file stores counter reads and per-interval counts, which the event trace
    does not hold). Used to save an interrupted run read from its chunk directory.
    """
    from ..traces.events import EventTrace

    if isinstance(run, EventTrace):
        if run.attrs.get("source") != SOURCE or run.file is None:
            raise ValueError("write_bsp writes the event trace of a BSP run read by read_bsp")
        run = read_dataset(run.file)
    # one int64 variable for all records: an HDF5 variable costs several kB of its own,
    # more than a record of a few thousand phases takes compressed
    packed = run.drop_vars([*RECORDS, "phase"], errors="ignore").assign(records=(
        ("record", "rank", "phase"),
        np.stack([run[name].values.astype(np.int64) for name in RECORDS]),
        {"units": "cycles (a count for injected_detours and interruptions)",
         "long_name": "what the benchmark recorded per rank and phase, one record each"}))
    packed = packed.assign_coords(record=("record", np.array(RECORDS),
                                          {"long_name": "name of the record"}))
    compressed = ["records"]
    names = [f"interruption_{field}" for field in INTERRUPTION_FIELDS]
    if names[0] in run:
        # one int64 variable again; phase and start as differences from the record before
        # (sorted by rank and start, they are small numbers that compress well)
        matrix = np.stack([run[name].values.astype(np.int64) for name in names])
        matrix[1:3] = np.diff(matrix[1:3], axis=1, prepend=0)
        packed = packed.drop_vars(names).assign(interruption_records=(
            ("interruption_field", "interruption"), matrix,
            {"fields": " ".join(INTERRUPTION_FIELDS), "differences": "phase start",
             "units": "cycles for start and duration, else 1",
             "long_name": "every interruption the ranks recorded: rank, phase, start "
                          "(counter cycles from the start of the run), duration [cycles], "
                          "kind (0 other, 1 injected, 2 collective); phase and start "
                          "stored as differences from the previous record"}))
        compressed.append("interruption_records")
    return write_dataset(packed, path, compressed=compressed, what="BSP benchmark run",
                         overwrite=overwrite)


def read_dataset(path):
    """The run as recorded: counter reads per rank and phase (dims rank, phase)."""
    dataset = FILES.read(path)
    if "interruptions_lost" in dataset.attrs:
        dataset.attrs["interruptions_lost"] = np.atleast_1d(
            dataset.attrs["interruptions_lost"]).astype(np.int64).tolist()
    if "records" not in dataset:
        return dataset
    if "interruption_records" in dataset:
        dataset = _unpack_interruptions(dataset, Path(path).name)
    names = [str(name) for name in dataset["record"].values]
    if sorted(names) != sorted(RECORDS):
        raise ValueError(f"{Path(path).name}: records {names}, expected {list(RECORDS)}")
    records = dataset["records"].values
    unpacked = {}
    for name in RECORDS:
        values = records[names.index(name)]
        count = name in COUNTS
        unpacked[name] = (("rank", "phase"), values.astype(np.int32) if count else values,
                          {"units": "1" if count else "cycles",
                           "long_name": LONG_NAMES[name]})
    return dataset.drop_vars(["records", "record"]).assign(unpacked).assign_coords(
        phase=("phase", np.arange(records.shape[2]), {"units": "1", "long_name": "phase"}))


def _unpack_interruptions(dataset, name: str):
    packed = dataset["interruption_records"]
    if (packed.attrs.get("fields") != " ".join(INTERRUPTION_FIELDS)
            or packed.attrs.get("differences") != "phase start"):
        raise ValueError(f"{name}: interruption_records has fields "
                         f"{packed.attrs.get('fields')!r}, expected "
                         f"{' '.join(INTERRUPTION_FIELDS)!r} (phase and start as differences)")
    matrix = packed.values.astype(np.int64)
    matrix[1:3] = np.cumsum(matrix[1:3], axis=1)
    variables = _interruption_variables(dict(zip(INTERRUPTION_FIELDS, matrix, strict=True)))
    return dataset.drop_vars("interruption_records").assign(variables)


#: True if ``path`` is a netCDF file written by the BSP benchmark
is_bsp_file = FILES.is_file


def _events(dataset, path: Path):
    """The event trace of a BSP Dataset: per rank and phase a compute and a collective."""
    from ..traces.events import EventTrace

    frequency = float(dataset.attrs["clock_frequency_hz"])
    n_ranks, n_phases = dataset.sizes["rank"], dataset.sizes["phase"]
    start = dataset["compute_start"].values
    middle = dataset["compute_end"].values
    end = dataset["collective_end"].values
    injected = dataset["injected"].values
    other = dataset["other"].values
    waited = dataset["collective_noise"].values
    # per rank: compute, collective, compute, ... (seq 2k and 2k + 1 for phase k)
    shape = (n_ranks, 2 * n_phases)

    def interleave(first, second):
        values = np.empty(shape, dtype=np.result_type(first, second))
        values[:, 0::2] = first
        values[:, 1::2] = second
        return values.ravel()

    zero = np.zeros_like(start)
    # a polled collective whose wait was one long step carries noise = its length in
    # cycles; in seconds, the difference of the converted ends may round 1 ulp below it
    waited_seconds = np.minimum(waited / frequency, end / frequency - middle / frequency)
    kinds = np.tile(np.array([0, 3], dtype=np.int8), n_ranks * n_phases)
    frame = pd.DataFrame({
        "rank": np.repeat(np.arange(n_ranks, dtype=np.int64), 2 * n_phases),
        "seq": np.tile(np.arange(2 * n_phases, dtype=np.int64), n_ranks),
        "kind": pd.Categorical.from_codes(kinds, categories=("compute", "send", "recv",
                                                              "collective")),
        "start": interleave(start, middle) / frequency,
        "end": interleave(middle, end) / frequency,
        "peer": np.full(2 * n_ranks * n_phases, -1, dtype=np.int64),
        "tag": np.tile(np.repeat(dataset["phase"].values.astype(np.int64), 2), n_ranks),
        "noise_combined": interleave((injected + other) / frequency, waited_seconds),
        "noise_injected": interleave(injected, zero) / frequency,
        "noise_other": interleave(other / frequency, waited_seconds),
    })
    attrs = {key: value for key, value in dataset.attrs.items() if value is not None}
    for key in ("host", "cpu", "frequency_hz", "injector_phase", "injector_dropped"):
        if key in dataset.variables:
            attrs[f"{key}_per_rank" if key in ("frequency_hz",) else key] = \
                dataset[key].values.tolist()
    attrs["injected_detours"] = dataset["injected_detours"].values.sum(axis=1).tolist()
    attrs["interruptions"] = dataset["interruptions"].values.sum(axis=1).tolist()
    attrs["measured_duration"] = float(_phase_time(dataset) / frequency)
    return EventTrace(frame, latency=0.0, file=path, **attrs)


def _phase_time(dataset) -> float:
    """Time in phases [cycles]: per chunk, last collective end − first compute start over
    all ranks, summed (the untimed gaps between chunks left out)."""
    start = dataset["compute_start"].values
    end = dataset["collective_end"].values
    # a chunk starts where a compute interval does not begin at the previous collective end
    new = np.ones(start.shape[1], dtype=bool)
    new[1:] = np.any(start[:, 1:] != end[:, :-1], axis=0)
    first = np.flatnonzero(new)
    last = np.append(first[1:], start.shape[1]) - 1
    return float(np.sum(end[:, last].max(axis=0) - start[:, first].min(axis=0)))


def read_bsp(path):
    """Read a BSP run as an event trace: its netCDF file or its chunk directory.

    Parameters
    ----------
    path : path-like
        The ``output`` file of :func:`bsp_benchmark` (``jitterlab measure bsp``), or its
        chunk directory ``<output>.bsp`` — also of a killed or interrupted run, which
        gives every completed chunk.

    Returns
    -------
    jitterlab.EventTrace
        Per rank and phase ``k`` a ``compute`` interval (``seq`` 2k) and a ``collective``
        one (``seq`` 2k + 1, ``tag`` k); times in seconds from the start of the run (rank
        0's counter read after the first barrier), one clock for all ranks. Noise
        columns: ``noise_injected`` (the injected detours), ``noise_other`` (every other
        interruption of the busy loop above the threshold) and their sum
        ``noise_combined``; in collective intervals 0 (not measurable inside a blocking
        collective), or with ``poll`` the long steps of the ``MPI_Test`` loop. ``attrs``:
        the run's settings (``phases``, ``work``, ``collective``, ``inject_period``,
        ``inject_duration``, ``inject_seed``, ``threshold``), the machine, the MPI
        library, ``clock_frequency_hz``, per rank ``injected_detours``,
        ``injector_dropped``, ``interruptions``, ``injector_phase``,
        ``frequency_hz_per_rank``, ``interruptions_lost`` (interruption records that did
        not fit the kernel's buffer; see :func:`read_bsp_interruptions`), and
        ``measured_duration`` (time in phases, without the gaps between chunks) [s];
        ``complete`` is False for a run that did not finish.

    Raises
    ------
    FileNotFoundError, ValueError
        As :meth:`jitterlab.measure.runfiles.RunFiles.read`: no such ``path``, neither
        file nor chunk directory, no complete chunk, or a damaged chunk before the last.
    """
    path = Path(path)
    return _events(read_dataset(path), path)


def read_bsp_interruptions(path) -> pd.DataFrame:
    """Every interruption a BSP run recorded, one row each.

    Parameters
    ----------
    path : path-like
        As for :func:`read_bsp`: the run's netCDF file or its chunk directory.

    Returns
    -------
    pandas.DataFrame
        Sorted by rank and start, with columns ``rank``; ``phase``; ``seq``, the interval
        of :func:`read_bsp`'s event trace it lies in (2·phase for the compute interval,
        2·phase + 1 for the collective); ``start``, the counter read before the long step
        (of an injected detour, the read at which it began) on the clock of
        :func:`read_bsp` [s]; ``duration`` [s]; ``kind``, categorical: ``"other"`` (a long
        step of the busy loop), ``"injected"`` (a detour of the injector) or
        ``"collective"`` (a long step of the ``MPI_Test`` loop of a polled collective).
        Per interval, the durations of each kind add up to the event trace's
        ``noise_other`` (compute), ``noise_injected`` and ``noise_other`` (collective)
        — exactly, in counter cycles — unless records were lost: ``attrs`` holds
        ``interruptions_lost`` per rank (records that did not fit the kernel's buffer;
        normally 0), ``clock_frequency_hz`` and ``file``.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If ``path`` is not a BSP run, or a run recorded before the benchmark kept each
        interruption (its files hold only the sums per interval).
    """
    path = Path(path)
    dataset = read_dataset(path)
    if "interruption_start" not in dataset:
        raise ValueError(f"{path.name}: this BSP run holds only the noise per interval, not "
                         "each interruption (recorded by an older jitterlab); run it again")
    frequency = float(dataset.attrs["clock_frequency_hz"])
    phase = dataset["interruption_phase"].values
    kind = dataset["interruption_kind"].values
    frame = pd.DataFrame({
        "rank": dataset["interruption_rank"].values,
        "phase": phase,
        "seq": 2 * phase + (kind == INTERRUPTION_KINDS.index("collective")),
        "start": dataset["interruption_start"].values / frequency,
        "duration": dataset["interruption_duration"].values / frequency,
        "kind": pd.Categorical.from_codes(kind, categories=INTERRUPTION_KINDS),
    })
    frame.attrs.update(interruptions_lost=list(dataset.attrs["interruptions_lost"]),
                       clock_frequency_hz=frequency, file=str(path))
    return frame
