"""Shipped data: values transcribed from the source papers and measurements of a machine.

The files live in the ``data/`` folder next to the package (a source checkout):

* ``data/NAME.csv`` — numbers transcribed from a paper, with the provenance record
  ``data/NAME.md`` (paper, section or figure, what each number is, units, checksum):
  single numbers stated in the text, :func:`load_paper_values`; a paper's printed tables,
  one row per table row, :func:`load_paper_table`.
* ``data/measured/`` — measurements of one machine made with jitterlab's own benchmarks
  (detour traces, FWQ samples, Parallel Benchmark runs), recorded by
  ``python -m jitterlab.recipes.record_measurements`` (until 2026-11-26 the script
  ``data/record_measurements.py``, the command the shipped manifest records), among them
  a *jitSim session* (detour traces of every CPU and, right after them, compute-barrier
  loops at 1-8 ranks, variant ``"session"``). ``data/measured/manifest.json`` lists every
  file with what it is, the machine, the date, the exact command, the units and its
  SHA-256; ``data/measured/PROVENANCE.md`` says the same for people.
  :func:`list_measurements`, :func:`load_detour`, :func:`load_fwq`, :func:`load_pb`,
  :func:`load_latency`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path

import pandas as pd

from .base.checks import check_document, check_positive

__all__ = ["DATA_DIR", "PAPER_VALUE_COLUMNS", "MEASUREMENT_COLUMNS", "RECORD_COMMAND",
           "RECORD_COMMANDS",
           "MEASUREMENT_KINDS", "DETOUR_VARIANTS", "PB_VARIANTS",
           "load_paper_values", "load_paper_table", "list_measurements", "measurement_path",
           "load_detour", "load_fwq", "load_pb", "load_latency", "load_ross_phold"]

#: the ``data/`` folder of a source checkout: the package's parent directory + ``data``
DATA_DIR = Path(__file__).resolve().parent.parent / "data"

#: columns of every table of transcribed paper values
PAPER_VALUE_COLUMNS = ("quantity", "value", "unit", "source", "note")

#: how to (re-)record the measurements of ``data/measured/``
RECORD_COMMAND = "python -m jitterlab.recipes.record_measurements"
#: the commands a recording of ``data/measured/`` starts with: :data:`RECORD_COMMAND`, and
#: the script it was until 2026-11-26 (same options), which the shipped manifest records
RECORD_COMMANDS = (RECORD_COMMAND, "python data/record_measurements.py")

#: folder of the measurements, inside ``DATA_DIR``, and its machine-readable index
MEASURED = "measured"
MANIFEST = "manifest.json"
MANIFEST_FORMAT = "jitterlab measurements manifest"
MANIFEST_VERSION = 1

#: columns of :func:`list_measurements`, in order
MEASUREMENT_COLUMNS = ("file", "kind", "variant", "cpu", "ranks", "work", "threshold",
                       "duration", "quick", "oversubscribed", "collected_at", "host",
                       "cpu_model", "n_cpus", "kernel", "load_before", "load_after", "bytes",
                       "sha256", "command", "description")

#: kinds of the shipped measurements: jitterlab's own benchmarks, ROSS's PHOLD model
#: run on the same machine (issue #12, a table of parsed runs) and the BSP runs with their
#: event traces (issue #10, read with jitterlab.measure.read_bsp)
MEASUREMENT_KINDS = ("detour", "fwq", "pb", "latency", "ross_phold", "bsp")

#: variants of the shipped detour traces and Parallel Benchmark runs
DETOUR_VARIANTS = ("fixed_threshold", "default_threshold", "session")
PB_VARIANTS = ("default", "no_wait_no_bcast", "no_bcast", "no_wait", "session")

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def load_paper_values(name: str = "garg_de_2006") -> pd.DataFrame:
    """Load the numbers transcribed from a paper, one row per quantity.

    Parameters
    ----------
    name : str
        Table name: the file ``data/NAME.csv`` (its provenance is ``data/NAME.md``).

    Returns
    -------
    pandas.DataFrame
        Columns ``quantity`` (unique identifier), ``value`` (float, in ``unit``; times in
        seconds [s]), ``unit``, ``source`` (paper, section and figure) and ``note``.
        ``df.attrs["path"]`` records the file read.

    Raises
    ------
    ValueError
        If ``name`` is not a plain file name, or the table lacks a column or repeats a
        quantity.
    FileNotFoundError
        If ``data/NAME.csv`` does not exist (the message names the path looked at).

    Examples
    --------
    >>> from jitterlab.datasets import load_paper_values
    >>> values = load_paper_values().set_index("quantity")["value"]
    >>> round(float(values["one_way_latency"]) * 1e6, 3)  # τ, Garg & De 2006 §4.1 [µs]
    5.0
    """
    path = _paper_path(name, "paper values", "garg_de_2006")
    table = pd.read_csv(path, dtype={"quantity": str, "value": float, "unit": str,
                                     "source": str, "note": str}, keep_default_na=False)
    missing = [c for c in PAPER_VALUE_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"{path} lacks the column(s) {missing}")
    repeated = table["quantity"][table["quantity"].duplicated()].tolist()
    if repeated:
        raise ValueError(f"{path} lists these quantities more than once: {repeated}")
    table = table[list(PAPER_VALUE_COLUMNS)]
    table.attrs["path"] = str(path)
    return table


def load_paper_table(name: str = "hammond_2010_tables") -> pd.DataFrame:
    """Load a table printed in a paper, one row per row of the printed table.

    Parameters
    ----------
    name : str
        Table name: the file ``data/NAME.csv``, whose provenance record is
        ``data/NAME.md`` (the paper, which of its tables, how they were transcribed, the
        meaning and unit of every column, the file's checksum).

    Returns
    -------
    pandas.DataFrame
        The columns of the file, numbers as printed; a column's unit is the suffix of
        its name (``_s`` seconds [s], ``_percent`` percent [%]) or is given in the
        record. The column ``source`` names the paper, section and table of each row.
        ``df.attrs["path"]`` records the file read and ``df.attrs["provenance"]`` its
        record.

    Raises
    ------
    ValueError
        If ``name`` is not a plain file name, or the table lacks the ``source`` column
        or has an empty cell.
    FileNotFoundError
        If ``data/NAME.csv`` or its record ``data/NAME.md`` does not exist (the message
        names the path looked at).

    Examples
    --------
    >>> from jitterlab.datasets import load_paper_table
    >>> tables = load_paper_table("hammond_2010_tables")
    >>> catamount = tables[tables["table"] == 1]  # Hammond et al. 2010, Table 1
    >>> round(float(catamount["error_percent"].abs().mean()), 1)  # mean |error| [%]
    5.2
    """
    path = _paper_path(name, "paper tables", "hammond_2010_tables")
    record = path.with_suffix(".md")
    if not record.is_file():
        raise FileNotFoundError(f"{path} has no provenance record: {record} does not exist")
    table = pd.read_csv(path, keep_default_na=False, na_values=[""])
    if "source" not in table.columns:
        raise ValueError(f"{path} lacks the column 'source' (paper, section and table of "
                         "each row)")
    empty = table.columns[table.isna().any()].tolist()
    if empty:
        raise ValueError(f"{path} has empty cells in the column(s) {empty}")
    table.attrs["path"] = str(path)
    table.attrs["provenance"] = str(record)
    return table


def _paper_path(name: str, what: str, example: str) -> Path:
    """``data/NAME.csv`` of a table transcribed from a paper; ValueError for a name that
    is not a plain file name, FileNotFoundError naming the path and the tables shipped."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"name must be a plain table name such as {example!r}, "
                         f"got {name!r}")
    path = DATA_DIR / f"{name}.csv"
    if not path.is_file():
        available = sorted(p.stem for p in DATA_DIR.glob("*.csv")) if DATA_DIR.is_dir() else []
        raise FileNotFoundError(
            f"no table of {what} named {name!r}: {path} does not exist (the data/ "
            "folder ships with a source checkout of jitterlab); available: "
            f"{', '.join(available) or 'none'}")
    return path


# --------------------------------------------------------------------------------------
# measurements of this machine: data/measured/
# --------------------------------------------------------------------------------------
def _measured_dir() -> Path:
    return DATA_DIR / MEASURED


def _how_to_record() -> str:
    return (f"record the measurements of this machine with `{RECORD_COMMAND}` (from the "
            "source checkout; add --quick for a few seconds per benchmark)")


def _read_manifest() -> dict:
    path = _measured_dir() / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist, so no measurements are shipped "
                                f"here: {_how_to_record()}")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as err:
        raise ValueError(f"{path}: not valid JSON ({err}); {_how_to_record()}") from None
    return check_document(manifest, format=MANIFEST_FORMAT, version=MANIFEST_VERSION,
                          what="measurements manifest", where=str(path))


def list_measurements() -> pd.DataFrame:
    """The measurements shipped in ``data/measured/``, one row per file.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``file`` (the name inside ``data/measured/``), with the columns of
        :data:`MEASUREMENT_COLUMNS`: ``kind`` (one of :data:`MEASUREMENT_KINDS`:
        ``"detour"``, ``"fwq"``, ``"pb"``, ``"latency"``, ``"ross_phold"``, ``"bsp"``),
        ``variant``
        (one of :data:`DETOUR_VARIANTS` for detour traces, of :data:`PB_VARIANTS` for PB
        runs, ``"default"`` for latency runs and the ROSS PHOLD table), ``cpu``
        (detour and FWQ), ``ranks`` (PB and latency), ``work`` [s] (FWQ and PB),
        ``threshold`` [s] (detour), ``duration`` (requested) [s], ``quick`` (recorded
        with ``--quick``: a few seconds, for development only), ``oversubscribed``
        (PB and latency runs with more ranks than CPUs: the noise of the ranks is not
        independent), ``collected_at`` (ISO UTC), ``host``, ``cpu_model``,
        ``n_cpus``, ``kernel``, ``load_before`` and ``load_after`` (the machine's
        1-minute load average right before and after the recording: above about 1 on
        this machine, something else was running) [-], ``bytes``, ``sha256``,
        ``command`` (exactly as run) and ``description``. ``df.attrs`` holds the
        manifest's top-level entries (the recording command, the machine, the
        jitterlab version and commit) and ``path``.

    Raises
    ------
    FileNotFoundError
        If ``data/measured/manifest.json`` does not exist; the message says how to
        record the measurements.
    """
    manifest = _read_manifest()
    rows = []
    for entry in manifest.get("files", []):
        machine = entry.get("machine", {})
        row = {column: entry.get(column) for column in MEASUREMENT_COLUMNS}
        for key in ("host", "cpu_model", "n_cpus", "kernel"):
            row[key] = machine.get(key)
        for key in ("before", "after"):
            load = entry.get(f"load_average_{key}")
            row[f"load_{key}"] = float(load[0]) if load else math.nan
        rows.append(row)
    table = pd.DataFrame(rows, columns=list(MEASUREMENT_COLUMNS)).set_index("file")
    for column in ("work", "threshold", "duration", "load_before", "load_after"):
        table[column] = pd.to_numeric(table[column], errors="coerce").astype("float64")
    for column in ("cpu", "ranks", "n_cpus", "bytes"):
        table[column] = pd.array(table[column].tolist(), dtype="Int64")
    for column in ("quick", "oversubscribed"):
        table[column] = pd.array(table[column].tolist(), dtype="boolean")
    table.attrs = {key: value for key, value in manifest.items() if key != "files"}
    table.attrs["path"] = str(_measured_dir() / MANIFEST)
    return table


def sha256(path: Path) -> str:
    """Hex SHA-256 of a file (the checksums of the measurements manifest)."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _describe(entry: dict) -> str:
    parts = [entry.get("kind", "?")]
    for key in ("variant", "cpu", "ranks", "work"):
        if entry.get(key) is not None:
            parts.append(f"{key}={entry[key]!r}")
    return " ".join(parts)


def _select(kind: str, what: str, **wanted) -> dict:
    """The one manifest entry of ``kind`` whose fields equal ``wanted`` (floats within
    a relative 1e-9); ValueError listing what is available otherwise."""
    entries = [e for e in _read_manifest().get("files", []) if e.get("kind") == kind]

    def matches(entry):
        for key, value in wanted.items():
            have = entry.get(key)
            if value is None:
                continue
            if isinstance(value, float):
                if have is None or not math.isclose(float(have), value, rel_tol=1e-9):
                    return False
            elif have != value:
                return False
        return True

    found = [e for e in entries if matches(e)]
    if len(found) == 1:
        return found[0]
    available = "; ".join(_describe(e) for e in entries) or "none"
    if not found:
        raise ValueError(f"no shipped {what} with "
                         f"{', '.join(f'{k}={v!r}' for k, v in wanted.items())}; "
                         f"available {kind} measurements: {available}")
    raise ValueError(f"{len(found)} shipped {what}s match "
                     f"{', '.join(f'{k}={v!r}' for k, v in wanted.items())}; narrow the "
                     f"choice ({available})")


def measurement_path(entry_or_file, verify: bool = True) -> Path:
    """The path of a shipped measurement, checked against its manifest entry.

    Parameters
    ----------
    entry_or_file : str or dict
        A file name of :func:`list_measurements` (its index) or a manifest entry.
    verify : bool, default True
        Check the file's SHA-256 against the manifest.

    Raises
    ------
    FileNotFoundError
        If the file is missing (the message names the path and how to record it).
    ValueError
        If the file is not in the manifest, or its checksum differs from the manifest's
        (the file was changed after it was recorded).
    """
    if isinstance(entry_or_file, dict):
        entry = entry_or_file
    else:
        entries = {e.get("file"): e for e in _read_manifest().get("files", [])}
        if entry_or_file not in entries:
            raise ValueError(f"{entry_or_file!r} is not listed in "
                             f"{_measured_dir() / MANIFEST}; listed: {sorted(entries)}")
        entry = entries[entry_or_file]
    name = entry.get("file")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"manifest entry with a bad file name {name!r}")
    path = _measured_dir() / name
    if not path.exists():
        raise FileNotFoundError(f"{path} is listed in the manifest but does not exist: "
                                f"{_how_to_record()}")
    if verify and sha256(path) != entry.get("sha256"):
        raise ValueError(f"{path}: its SHA-256 differs from the manifest's, so it changed "
                         f"after it was recorded; {_how_to_record()}")
    return path


def load_detour(cpu: int = 0, variant: str = "fixed_threshold"):
    """The shipped detour trace of one CPU of the measured machine.

    Parameters
    ----------
    cpu : int, default 0
        The CPU the busy loop was pinned to.
    variant : {"fixed_threshold", "default_threshold", "session"}
        ``"fixed_threshold"``: the main trace, at the fixed threshold of the recording
        (300 ns, as the sysjitter reference run); ``"default_threshold"``: a shorter run
        at jitterlab's default threshold, max(10·t_min, 4·median loop time);
        ``"session"``: the trace of the jitSim session, recorded right before the
        session's compute-barrier loops (``load_pb(ranks, "session")``), at the fixed
        threshold.

    Returns
    -------
    jitterlab.Trace
        In CPU cycles with ``frequency_hz``, as :func:`jitterlab.measure.detour` returns
        it; ``attrs`` record the CPU, threshold, t_min, machine, date and command.

    Raises
    ------
    FileNotFoundError
        If the measurements have not been recorded (``python -m
        jitterlab.recipes.record_measurements``).
    ValueError
        If no trace of that CPU and variant is shipped (the message lists those that
        are), or the file's checksum differs from the manifest's.
    """
    from .io import read_trace

    if variant not in DETOUR_VARIANTS:
        raise ValueError(f"variant must be one of {DETOUR_VARIANTS}, got {variant!r}")
    entry = _select("detour", "detour trace", cpu=int(cpu), variant=variant)
    return read_trace(measurement_path(entry))


def load_fwq(work: float, cpu: int | None = None):
    """The shipped FWQ samples of one work quantum: the law of w + δ.

    Parameters
    ----------
    work : float
        The quantum w of the recording (Garg & De used 300e-6, 13e-3 and 83e-3). [s]
    cpu : int, optional
        The CPU, when quanta were recorded on several.

    Returns
    -------
    jitterlab.noise.Empirical
        The measured times w + δ [s], with ``sequence`` (in measured order) and
        ``attrs`` (work, LCG iterations, calibration, CPU, machine, date, command), as
        :func:`jitterlab.measure.read_fwq_samples` returns them.

    Raises
    ------
    FileNotFoundError
        If the measurements have not been recorded.
    ValueError
        If no samples of that quantum (and CPU) are shipped, or the checksum differs.
    """
    from .measure import read_fwq_samples

    work = check_positive("work", work)
    entry = _select("fwq", "FWQ sample", work=work, cpu=None if cpu is None else int(cpu))
    return read_fwq_samples(measurement_path(entry))


def load_pb(ranks: int = 2, variant: str = "default", work: float = 300e-6):
    """A shipped run of the Parallel Benchmark (Garg & De 2006, Algorithm 1).

    Parameters
    ----------
    ranks : int, default 2
        Number of MPI processes. Runs with more ranks than the machine has CPUs are
        marked ``oversubscribed`` (their noise is not independent across ranks).
    variant : {"default", "no_wait_no_bcast", "no_bcast", "no_wait", "session"}
        ``"default"``: with the random wait and the broadcast of Algorithm 1 (Garg &
        De's Fig. 3); ``"no_bcast"``: with the random wait, without the broadcast
        (their Fig. 4); ``"no_wait"``: with the broadcast, without the random wait (the
        two-process effect of their Fig. 5); ``"no_wait_no_bcast"``: without either;
        ``"session"``: the compute-barrier loop (no wait, no broadcast) of the jitSim
        session, at 1, 2, 4 or 8 ranks, recorded right after the session's detour traces
        (``load_detour(cpu, "session")``).
    work : float, default 300e-6
        The work quantum w of the run: 300 µs for every set-up, and 13 ms and 83 ms
        (Garg & De's Fig. 11(b) and 6(b)) for 2 ranks with the default set-up. [s]

    Returns
    -------
    xarray.Dataset
        As :func:`jitterlab.measure.read_pb` returns it: ``compute`` (w + δ),
        ``barrier`` (b) and ``iteration`` (θ = t_e − t_s) with dims (``rank``,
        ``sample``) [s], their histograms, per-rank ``host``, ``node``, ``cpu`` and
        the run's attributes.

    Raises
    ------
    FileNotFoundError
        If the measurements have not been recorded.
    ValueError
        If no run of that size and variant is shipped, or the checksum differs.
    """
    from .measure import read_pb

    if variant not in PB_VARIANTS:
        raise ValueError(f"variant must be one of {PB_VARIANTS}, got {variant!r}")
    entry = _select("pb", "Parallel Benchmark run", ranks=int(ranks), variant=variant,
                    work=float(work))
    return read_pb(measurement_path(entry))


def load_latency(ranks: int = 2):
    """A shipped latency run: ping-pong between rank pairs and empty barriers under MPI.

    Parameters
    ----------
    ranks : int, default 2
        Number of MPI processes. Runs with more ranks than the machine has CPUs are
        marked ``oversubscribed``: messages and barriers then wait for descheduled ranks.

    Returns
    -------
    xarray.Dataset
        As :func:`jitterlab.measure.latency.read_latency` returns it: ``ping_pong``
        (round-trip times, dims ``pair``, ``exchange``) [s] and ``barrier`` (times of
        empty barriers, dims ``rank``, ``sample``) [s], per-rank ``host``, ``node``,
        ``cpu`` and the run's attributes. The one-way latency τ of Theorem 1, with its
        standard error: :func:`jitterlab.measure.latency.summarize_latency`.

    Raises
    ------
    FileNotFoundError
        If the measurements have not been recorded.
    ValueError
        If no run of that size is shipped, or the checksum differs.

    Examples
    --------
    >>> from jitterlab.measure.latency import summarize_latency
    >>> from jitterlab.datasets import load_latency
    >>> tau = float(summarize_latency(load_latency(2))["tau"])  # doctest: +SKIP
    """
    from .measure.latency import read_latency

    entry = _select("latency", "latency run", ranks=int(ranks))
    return read_latency(measurement_path(entry))


def load_ross_phold() -> pd.DataFrame:
    """The shipped ROSS PHOLD runs of this machine (issue #12; seed 004's benchmark).

    Returns
    -------
    pandas.DataFrame
        One row per run: configuration (``pes``, ``synch``, ``remote_percent``,
        ``gvt_interval``, ``batch``, ``nlp``, ``noise``, ``oversubscribed``, ...), ROSS's
        statistics (``committed_events``, ``event_rate_per_s``, ``efficiency_percent``,
        ``rollbacks``, ``gvt_computations``, ``running_time_s``, ...), the CPU time of
        ROSS, of the injected noise and of other processes during the run [s], and the
        exact ``command``. ``attrs["provenance"]`` is its manifest entry.

    Raises
    ------
    FileNotFoundError
        If the runs are not shipped.
    ValueError
        If the checksum differs.
    """
    entry = _select("ross_phold", "ROSS PHOLD table")
    table = pd.read_csv(measurement_path(entry))
    table.attrs["provenance"] = entry
    return table
