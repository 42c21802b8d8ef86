"""sysjitter output: raw per-core interruption files, and the printed summary.

sysjitter (David Riddoch; Solarflare/Xilinx ``cns-sysjitter``) spins on the CPU
timestamp counter (TSC) and records every gap between two consecutive reads that is at
least ``threshold`` long: an *interruption* of the busy loop.

**Raw file** (``--raw PREFIX`` writes ``PREFIX.<core>``; ``read_trace`` recognises it
from its header whatever its name): ``#`` header lines
``cpu_mhz``, ``threshold`` (``300ns``), ``n_interruptions``, ``interruption``
(percentage of the run), ``total_interruption`` and ``total_runtime`` (once in cycles,
once in seconds), then one row per interruption::

    <timestamp [ns]> <delta [µs]> <duration [cycles]> <duration [ns]>

The timestamp is the TSC read that *ends* the interruption, in nanoseconds since the
start of the run; delta is the time since the previous row's timestamp. With
``--sort`` the rows are sorted by duration and the delta column is absent.

**Page-first rows.** sysjitter keeps the interruptions in one array of 16-byte records
(256 to a 4 KiB page) that its source clears before the timed loop; when the compiler turns
the ``malloc`` + ``memset`` into one ``calloc`` (GCC 12 at ``-O2``), pages that are fresh
from the kernel stay unmapped, and the loop itself faults each one in when it stores the
page's first record: that row then carries the fault's time, not noise. Which rows those
are follows from where the buffer starts in its page and which of its pages were resident
when the loop started; neither is in the raw file. ``data/sysjitter_mincore_shim.c`` (an
``LD_PRELOAD`` helper) prints both, and ``read(path, buffer=<its output>)`` flags the
rows (:func:`page_first_rows`, :func:`read_buffer_layout`).

**Summary** (what sysjitter prints): ``key: value`` lines (``core_i``,
``threshold(ns)``, ``cpu_mhz``, ``runtime(ns)``, ``int_n``, ``int_median(ns)``, ...),
one value per measured core. It holds statistics, not events, so it is not a trace:
read it with :func:`read_summary` (``jitterlab.io.read_sysjitter_summary``).

References
----------
.. [1] D. Riddoch, sysjitter 1.4, https://github.com/Xilinx-CNS/cns-sysjitter
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..traces.trace import OVERLAP_RULES, UNITS, OverlapError, Trace, absolute_to_rows
from . import common as _common
from .sysjitter_summary import SUMMARY_KEYS, looks_like_summary, read_summary

__all__ = ["read", "read_summary", "read_buffer_layout", "page_first_rows", "SUMMARY_KEYS",
           "RECORD_BYTES", "looks_like_raw", "looks_like_summary"]

#: size of one sysjitter interruption record (TSC stamp and cycle count, two uint64) [bytes]
RECORD_BYTES = 16

_EXPECTED_RAW = "<timestamp ns> <delta us> <duration cycles> <duration ns>"
_EXPECTED_SORTED = "<timestamp ns> <duration cycles> <duration ns>"
_HEADER_LINE = re.compile(r"#\s*([A-Za-z_]\w*)\s*:\s*(.*?)\s*\Z")
_NUMBER_UNIT = re.compile(r"([-+0-9.eE]+)\s*(\S*)\Z")
_SHIM_LINE = re.compile(
    r"mincore_shim: bytes (\d+) address (\S+) offset_in_page (\d+) page_size (\d+) "
    r"pages (\d+) absent((?: \d+-\d+)*) n_absent (\d+)\s*\Z")



# --------------------------------------------------------------------------------------
# raw files
# --------------------------------------------------------------------------------------
#: header keys that every raw file starts with
_RAW_KEYS = {"cpu_mhz", "threshold", "n_interruptions"}


def looks_like_raw(lines: list[str]) -> bool:
    """Whether the first lines of a file hold a sysjitter raw header (``# cpu_mhz:``,
    ``# threshold:``, ``# n_interruptions:``)."""
    keys = {match.group(1) for match in map(_HEADER_LINE.match, map(str.strip, lines[:40]))
            if match}
    return _RAW_KEYS <= keys


def _not_a_trace(name: str) -> _common.NotATraceError:
    return _common.NotATraceError(
        f"{name} is a sysjitter summary ('key: value' statistics printed by sysjitter), "
        "not a raw trace: it has no individual interruptions to build a Trace from. Read "
        "it with jitterlab.io.read_sysjitter_summary(path); for a trace, run sysjitter "
        "with --raw PREFIX and read the file PREFIX.<core> with "
        "read_trace(path, format='sysjitter').")


def _parse_header(name: str, lines: list[str]) -> tuple[dict, list[tuple[int, str]], int]:
    """Header items, data lines and the number of columns announced by the header."""
    header: dict = {}
    columns = 0
    comment_lines, data = _common.comment_and_data_lines(lines)
    for number, stripped in comment_lines:
        line = stripped
        if "Timestamp" in stripped:
            columns = 4 if "delta" in stripped else 3
            continue
        match = _HEADER_LINE.match(stripped)
        if match is None:
            continue
        key, raw = match.groups()
        value = _NUMBER_UNIT.match(raw)
        if value is None:
            raise ValueError(f"{name} line {number}: expected '# {key}: <number>[unit]', "
                             f"got {line!r}")
        try:
            number_value = float(value.group(1))
        except ValueError:
            raise ValueError(f"{name} line {number}: expected '# {key}: <number>[unit]', "
                             f"got {line!r}") from None
        unit = value.group(2)
        if key in ("total_interruption", "total_runtime"):
            if unit not in ("cycles", "seconds"):
                raise ValueError(f"{name} line {number}: expected '# {key}: <number> "
                                 f"cycles' or '... seconds', got {line!r}")
            key = f"{key}_{unit}"
        header[key] = (number, number_value, unit)
    return header, data, columns


def _header_value(name: str, header: dict, key: str, unit: str | None = None,
                  integer: bool = False):
    if key not in header:
        raise ValueError(f"{name}: the sysjitter header has no '# {key}:' line "
                         "(expected cpu_mhz, threshold, n_interruptions, total_interruption "
                         "and total_runtime)")
    number, value, found = header[key]
    if unit is not None and found != unit:
        raise ValueError(f"{name} line {number}: expected {key} in {unit!r}, got {found!r}")
    if integer:
        if value != np.floor(value) or value < 0:
            raise ValueError(f"{name} line {number}: expected a whole number for {key}, "
                             f"got {value!r}")
        return int(value)
    return value


def _end_cycles(timestamp_ns, duration_cycles, mhz: int, runtime: int) -> np.ndarray:
    """TSC counts (since the start) at the end of each interruption.

    sysjitter prints floor(cycles·1000/mhz) nanoseconds, so the end lies in
    [ceil(ns·mhz/1000), ceil((ns + 1)·mhz/1000) − 1]. The busy loop never runs two
    interruptions at once: an interruption starts at or after the end of the previous
    one. Each end is the earliest value in its interval that keeps that order (and a
    start at or after 0), which removes the overlaps of one or two cycles that plain
    rounding would create.
    """
    low = -((-timestamp_ns * mhz) // 1000)
    high = -((-(timestamp_ns + 1) * mhz) // 1000) - 1
    low[0] = max(low[0], duration_cycles[0])
    # E_i = max(low_i, E_{i-1} + d_i) = C_i + max_{j<=i}(low_j − C_j), C = cumsum(d)
    cumulative = np.cumsum(duration_cycles)
    end = cumulative + np.maximum.accumulate(low - cumulative)
    end = np.minimum(np.minimum(end, high), runtime)
    return np.maximum(end, low)


def page_first_rows(n_rows: int, offset_in_page: int, absent_pages,
                    page_size: int = 4096, record_bytes: int = RECORD_BYTES) -> np.ndarray:
    """Rows of a sysjitter raw file whose record is the first one stored in a page of the
    buffer that was not resident when the timed loop started.

    Parameters
    ----------
    n_rows : int
        Number of rows (interruptions) in the file, in the order the loop stored them.
    offset_in_page : int
        Where the buffer starts in its page [bytes]; a multiple of ``record_bytes``.
    absent_pages : iterable of (int, int)
        Inclusive ranges of page numbers that were not resident; page 0 is the page that
        holds the buffer's first byte.
    page_size : int, default 4096
        [bytes]
    record_bytes : int, default 16
        Size of one record [bytes].

    Returns
    -------
    numpy.ndarray
        Sorted row indices (int64) below ``n_rows``: row ``(p·page_size −
        offset_in_page) / record_bytes`` for each absent page p ≥ 1, and row 0 if page 0
        was absent.

    Notes
    -----
    The loop stores the TSC into the current record on every iteration, so the first
    store into a new page comes right after the previous row was recorded; the fault's
    time is the next gap the loop measures, which is normally this row. When the faulting
    iteration itself already exceeded the threshold (the page walk before the fault), it
    becomes this row and the fault's time lands on the next row: to exclude the faults,
    exclude both (``rows`` and ``rows + 1``).

    Examples
    --------
    A buffer 2928 bytes into its page, pages 34 to 36 absent, 9000 rows:

    >>> page_first_rows(9000, 2928, [(34, 36)]).tolist()
    [8521, 8777]
    """
    for name, value in (("n_rows", n_rows), ("offset_in_page", offset_in_page),
                        ("page_size", page_size), ("record_bytes", record_bytes)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
            raise ValueError(f"page_first_rows: {name} must be a whole number >= 0, got "
                             f"{value!r}")
    if record_bytes == 0 or page_size % record_bytes:
        raise ValueError(f"page_first_rows: page_size ({page_size}) must be a positive "
                         f"multiple of record_bytes ({record_bytes})")
    if offset_in_page >= page_size or offset_in_page % record_bytes:
        raise ValueError(f"page_first_rows: offset_in_page must be a multiple of "
                         f"record_bytes ({record_bytes}) below page_size ({page_size}), got "
                         f"{offset_in_page} (records would straddle pages)")
    rows = []
    for pair in absent_pages:
        first, last = (int(v) for v in pair)
        if first < 0 or last < first:
            raise ValueError(f"page_first_rows: an absent page range must be (first, last) "
                             f"with 0 <= first <= last, got {tuple(pair)!r}")
        pages = np.arange(first, last + 1, dtype=np.int64)
        rows.append(np.where(pages == 0, 0,
                             (pages * page_size - offset_in_page) // record_bytes))
    if not rows:
        return np.zeros(0, dtype=np.int64)
    rows = np.unique(np.concatenate(rows))
    return rows[rows < n_rows]


def read_buffer_layout(path) -> dict:
    """Read what ``data/sysjitter_mincore_shim.c`` printed for the measuring buffer.

    The helper (loaded with ``LD_PRELOAD`` into sysjitter, its stderr saved to a file)
    prints one ``mincore_shim:`` line per ``calloc`` of 64 KiB or more; sysjitter first
    sizes its buffer with a 1 s run, so the *last* line describes the buffer of the
    measurement.

    Parameters
    ----------
    path : str or path-like
        The saved stderr of sysjitter run with the helper.

    Returns
    -------
    dict
        ``bytes`` (buffer size), ``offset_in_page`` [bytes], ``page_size`` [bytes],
        ``pages`` and ``absent_pages`` (inclusive ranges ``[first, last]`` of the pages
        not resident after ``calloc``; page 0 holds the first byte).

    Raises
    ------
    ValueError
        When the file holds no ``mincore_shim:`` line, or a malformed one.
    """
    name = Path(path).name
    layout = None
    for number, line in enumerate(_common.read_lines(path), start=1):
        if not line.startswith("mincore_shim:"):
            continue
        match = _SHIM_LINE.match(line.strip())
        if match is None:
            raise ValueError(f"{name} line {number}: expected 'mincore_shim: bytes <n> address "
                             f"<p> offset_in_page <n> page_size <n> pages <n> absent "
                             f"[<a>-<b> ...] n_absent <n>', got {line.strip()!r}")
        size, _, offset, page, pages, ranges, n_absent = match.groups()
        absent = [[int(a), int(b)] for a, b in
                  (item.split("-") for item in ranges.split())]
        if sum(b - a + 1 for a, b in absent) != int(n_absent):
            raise ValueError(f"{name} line {number}: the absent page ranges add up to "
                             f"{sum(b - a + 1 for a, b in absent)} pages, the line says "
                             f"n_absent {n_absent}")
        layout = {"bytes": int(size), "offset_in_page": int(offset), "page_size": int(page),
                  "pages": int(pages), "absent_pages": absent}
    if layout is None:
        raise ValueError(f"{name}: no 'mincore_shim:' line; expected the stderr of sysjitter "
                         "run with LD_PRELOAD=<data/sysjitter_mincore_shim.c built as .so>")
    return layout


def read(path, unit: str = "s", overlap: str = "raise", buffer=None) -> Trace:
    """Read a sysjitter raw file (``PREFIX.<core>`` of ``sysjitter --raw PREFIX``).

    Parameters
    ----------
    path : str or path-like
        The raw file (gzip-compressed or not).
    unit : {"s", "cycles"}, default "s"
        Unit of the returned trace. Either way ``frequency_hz`` is ``cpu_mhz·1e6``, the
        integer TSC rate sysjitter measured and used for its own conversions (the true
        rate lies within 1 MHz above it), so ``to_cycles``/``to_seconds`` convert
        losslessly between the two.
    overlap : {"raise", "serialize", "merge"}, default "raise"
        What to do with interruptions that overlap after the reconstruction described
        in the Notes (none in files written by sysjitter); see
        :meth:`Trace.from_absolute`.
    buffer : str, path-like or dict, optional
        Where sysjitter's buffer lay in memory: the saved output of
        ``data/sysjitter_mincore_shim.c`` (see :func:`read_buffer_layout`) or that dict.
        With it, ``attrs["page_first_rows"]`` lists the rows that first stored into a page
        that was not resident (:func:`page_first_rows`) and ``attrs["buffer"]`` holds the
        layout. Not for files written with ``--sort`` (their rows are no longer in the
        order the loop stored them).

    Returns
    -------
    Trace
        One event per interruption, duration the recorded cycle count; the replay cycle
        is the ``total_runtime`` of the header (so the last gap runs to the end of the
        measurement and wraps to the first interruption). ``attrs``: ``source``
        ("sysjitter"), ``cpu_mhz`` [MHz], ``threshold`` [s], ``n_interruptions``,
        ``interruption_percent`` [%], ``total_interruption_cycles``,
        ``total_runtime_cycles``, ``total_interruption_seconds`` and
        ``total_runtime_seconds`` [s] (as printed; sysjitter prints these in single
        precision, the cycle counts are exact), ``sorted`` (written with ``--sort``),
        ``offset`` (start of the first interruption since the start of the run) [s]
        and ``file``.

    Raises
    ------
    NotATraceError
        For a sysjitter summary (use :func:`read_summary`).
    ValueError
        For a malformed file, naming the line and what was expected; when the number of
        rows or the sum of their cycles disagrees with the header (a truncated file);
        when a row's nanoseconds do not match its cycles at ``cpu_mhz``.

    Notes
    -----
    A row's timestamp is the TSC read that ends the interruption, so the interruption
    started ``duration`` earlier. The start times are rebuilt in TSC cycles: the end
    of each interruption is known to one nanosecond from the timestamp; within that
    rounding interval the reader takes the earliest end that keeps the interruptions
    in order without overlap (the busy loop cannot be interrupted twice at once). The
    durations are the exact cycle counts.

    Examples
    --------
    Two interruptions of 500 and 1000 cycles in a 1 ms run at 1000 MHz:

    >>> import tempfile, pathlib
    >>> from jitterlab.io import read_trace
    >>> raw = ["# cpu_mhz: 1000", "# threshold: 300ns", "# n_interruptions: 2",
    ...        "# interruption: 0.150000%", "# total_interruption: 1500 cycles",
    ...        "# total_runtime: 1000000 cycles", "1000 0 500 500", "600000 599 1000 1000"]
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = pathlib.Path(tmp) / "sj.1"
    ...     _ = path.write_text("\\n".join(raw) + "\\n")
    ...     trace = read_trace(path, format="sysjitter")
    >>> trace.jitter_seconds.tolist(), trace.attrs["offset"], trace.duration
    ([5e-07, 1e-06], 5e-07, 0.001)
    """
    _common.check_choice("unit", unit, UNITS)
    _common.check_choice("overlap", overlap, OVERLAP_RULES)
    name = Path(path).name
    lines = _common.read_lines(path)
    header, data, columns = _parse_header(name, lines)
    if not header and looks_like_summary(lines):
        raise _not_a_trace(name)
    mhz = _header_value(name, header, "cpu_mhz", integer=True)
    if mhz < 1:
        raise ValueError(f"{name}: cpu_mhz must be positive, got {mhz}")
    threshold_ns = _header_value(name, header, "threshold", unit="ns")
    n_expected = _header_value(name, header, "n_interruptions", integer=True)
    if n_expected == 0 and not data:
        raise ValueError(f"{name}: sysjitter recorded no interruption above the threshold "
                         f"({threshold_ns:g} ns); a trace needs at least one event")
    total_cycles = _header_value(name, header, "total_interruption_cycles", integer=True)
    runtime = _header_value(name, header, "total_runtime_cycles", integer=True)
    if columns == 0:  # no column header: tell the layouts apart by the first row
        columns = len(data[0][1].split()) if data else 4
    if columns not in (3, 4):
        raise ValueError(f"{name} line {data[0][0]}: expected {_EXPECTED_RAW!r} "
                         f"or, sorted, {_EXPECTED_SORTED!r}, got {data[0][1]!r}")
    expected = _EXPECTED_RAW if columns == 4 else _EXPECTED_SORTED
    values = _common.parse_table(name, data, None, expected, columns=columns)
    if values.shape[0] != n_expected:
        raise ValueError(f"{name}: the header announces {n_expected} interruptions "
                         f"(n_interruptions), the file has {values.shape[0]} rows; "
                         "is it truncated?")
    if not np.all(values == np.floor(values)) or values.max() >= 2.0**53:
        k = int(np.argmax(np.any(values != np.floor(values), axis=1)))
        raise ValueError(f"{name} line {data[k][0]}: expected whole numbers "
                         f"{expected!r}, got {data[k][1]!r}")
    table = values.astype(np.int64)
    timestamp, cycles, nanoseconds = table[:, 0], table[:, -2], table[:, -1]
    mismatch = nanoseconds != cycles * 1000 // mhz
    if mismatch.any():
        k = int(np.argmax(mismatch))
        raise ValueError(f"{name} line {data[k][0]}: the duration {int(nanoseconds[k])} ns "
                         f"does not match {int(cycles[k])} cycles at {mhz} MHz (expected "
                         f"{int(cycles[k] * 1000 // mhz)} ns; columns {expected!r})")
    if int(cycles.sum()) != total_cycles:
        raise ValueError(f"{name}: the durations add up to {int(cycles.sum())} cycles, the "
                         f"header says total_interruption: {total_cycles} cycles")
    order = np.argsort(timestamp, kind="stable")
    if columns == 4 and np.any(order != np.arange(order.size)):
        k = int(np.argmax(np.diff(timestamp) < 0)) + 1
        raise ValueError(f"{name} line {data[k][0]}: timestamps must not decrease "
                         f"(got {int(timestamp[k])} ns after {int(timestamp[k - 1])} ns)")
    end = _end_cycles(timestamp[order], cycles[order], mhz, runtime)
    start = end - cycles[order]
    try:
        jitter, gap, start_0 = absolute_to_rows(start.astype(np.float64),
                                                cycles[order].astype(np.float64),
                                                float(runtime), overlap=overlap,
                                                unit_label=" cycles")
    except OverlapError as err:
        first, second = data[order[err.first]][0], data[order[err.second]][0]
        raise ValueError(f"{name} line {second}: the interruption overlaps the one on line "
                         f"{first} ({err}); pass overlap='serialize' or 'merge'") from None
    except ValueError as err:
        raise ValueError(f"{name}: {err}") from None
    frequency_hz = mhz * 1e6
    attrs = {
        "source": "sysjitter",
        "cpu_mhz": mhz,
        "threshold": threshold_ns / 1e9,
        "n_interruptions": n_expected,
        "interruption_percent": header.get("interruption", (0, None, ""))[1],
        "total_interruption_cycles": total_cycles,
        "total_runtime_cycles": runtime,
        "total_interruption_seconds": header.get("total_interruption_seconds",
                                                 (0, None, ""))[1],
        "total_runtime_seconds": header.get("total_runtime_seconds", (0, None, ""))[1],
        "sorted": columns == 3,
        "file": name,
        "offset": start_0 / frequency_hz,
    }
    if buffer is not None:
        attrs.update(_page_attrs(name, buffer, n_expected, columns))
    trace = _common.make_trace(name, jitter, gap, "cycles", frequency_hz, attrs)
    return trace if unit == "cycles" else trace.to_seconds()


def _page_attrs(name: str, buffer, n_rows: int, columns: int) -> dict:
    if columns == 3:
        raise ValueError(f"{name} was written with --sort: its rows are sorted by duration, "
                         "not in the order the loop stored them, so page-first rows cannot be "
                         "told; record without --sort")
    layout = dict(buffer) if isinstance(buffer, dict) else read_buffer_layout(buffer)
    missing = {"bytes", "offset_in_page", "page_size", "absent_pages"} - set(layout)
    if missing:
        raise ValueError(f"buffer: missing {', '.join(sorted(missing))} (expected the dict "
                         "of read_buffer_layout)")
    if n_rows * RECORD_BYTES > layout["bytes"]:
        raise ValueError(f"{name}: {n_rows} rows of {RECORD_BYTES} bytes do not fit the "
                         f"buffer of {layout['bytes']} bytes; is the buffer layout from "
                         "another run?")
    rows = page_first_rows(n_rows, layout["offset_in_page"], layout["absent_pages"],
                           layout["page_size"])
    return {"page_first_rows": rows.tolist(), "buffer": layout}
