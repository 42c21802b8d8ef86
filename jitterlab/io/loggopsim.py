"""LogGOPSim / netgauge noise traces: ``<start ns><TAB><duration ns>`` per line.

LogGOPSim (Hoefler et al., SC10) replays noise recorded by netgauge's noise benchmark:
``#`` comment lines, then one event per line, its start on an absolute timeline and its
duration, both in integer nanoseconds.

Writing converts the trace to absolute times (:meth:`Trace.to_absolute`) and rounds them
to the nearest nanosecond: sub-nanosecond detail is lost, so a round trip is lossless
only for a trace on a 1 ns grid (times k/10⁹ s, or cycles of a 1 GHz clock). The start
and the end of each event are rounded (not the durations), so rounding errors do not
accumulate. jitterlab records the cycle length as ``# duration_ns: <integer>`` and the
unit, frequency and metadata as ``# key: <json>`` comments, which LogGOPSim skips.

Reading takes the cycle length from ``# duration_ns`` when present, else the default of
:meth:`Trace.from_absolute` (the end of the last event, so the idle time before the first
event repeats after the last). The trace is in seconds unless the file records
``# unit: "cycles"``. ``attrs["offset"]`` is the start of the first event [s] (left out
when it is 0 and the file does not record it). Free-text comments go to
``attrs["comment"]``.

Notes
-----
LogGOPSim itself reads lines of at most 1023 characters and wraps the trace at the start
of its last event (it ignores ``# duration_ns``); the writer refuses metadata lines that
LogGOPSim could not read.

References
----------
.. [1] T. Hoefler, T. Schneider, A. Lumsdaine, "Characterizing the Influence of System
   Noise on Large-Scale Applications by Simulation", SC10.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..trace import OVERLAP_RULES, OverlapError, Trace, absolute_to_rows, snap_to_integers
from . import _common

__all__ = ["read", "write"]

_EXPECTED = "<start ns>\t<duration ns>"
#: LogGOPSim reads each line into a 1024-byte buffer
_MAX_LINE = 1023


def _nanoseconds(trace: Trace, values: np.ndarray) -> np.ndarray:
    scale = 1e9 if trace.unit == "s" else 1e9 / trace.frequency_hz
    return snap_to_integers(np.asarray(values) * scale)


def write(trace: Trace, path) -> Path:
    """Write ``trace`` as a LogGOPSim noise trace (atomic; gzip if ``path`` ends in .gz)."""
    fields = _common.header_fields(trace, ("duration_ns",), "LogGOPSim")
    jitter = _nanoseconds(trace, trace.jitter)
    cycle = jitter + _nanoseconds(trace, trace.gap)
    offset = float(snap_to_integers(trace.offset_seconds() * 1e9))
    start = offset + np.concatenate(([0.0], np.cumsum(cycle)))
    first, last = np.rint(start[0]), np.rint(start[-1])  # start of this and the next cycle
    begin = np.rint(start[:-1])
    end = np.rint(start[:-1] + jitter)
    if begin[0] < 0:
        raise ValueError(f"attrs['offset'] must be non-negative to write LogGOPSim, got "
                         f"{trace.offset_seconds()!r} s")
    if last >= 2.0**63:
        raise ValueError("the trace is too long for integer nanoseconds")
    comments = [f"{_common.MARKER} (LogGOPSim noise format: <start ns>, <duration ns>)",
                f"# duration_ns: {int(last - first)}", *_common.metadata_lines(fields)]
    for line in comments:
        if len(line.encode("utf-8")) > _MAX_LINE:
            raise ValueError(f"cannot write LogGOPSim: the metadata line {line[:40]!r}... "
                             f"is longer than the {_MAX_LINE} bytes LogGOPSim reads")
    rows = map("{}\t{}".format, begin.astype(np.int64).tolist(),
               (end - begin).astype(np.int64).tolist())
    return _common.write_text(path, [*comments, *rows])


def read(path, overlap: str = "serialize") -> Trace:
    """Read a LogGOPSim noise trace (gzip-compressed or not).

    Parameters
    ----------
    path : str or path-like
        The file.
    overlap : {"serialize", "merge", "raise"}, default "serialize"
        Events that start before the previous one ends (measured and generated traces
        have them): by default each keeps its full duration and is delayed until the
        previous one ends, as LogGOPSim charges both in full; see
        :meth:`Trace.from_absolute`.
    """
    _common.check_choice("overlap", overlap, OVERLAP_RULES)
    name = Path(path).name
    metadata, comments, rows = _common.split_comments(_common.read_lines(path))
    if not rows:
        raise ValueError(f"{name}: expected lines {_EXPECTED!r}, found none")
    values = _common.parse_table(name, rows, None, _EXPECTED)
    total = metadata.pop("duration_ns", None)
    if total is not None:
        total = _common.check_number(name, "duration_ns", total)
    try:
        jitter, gap, start_0 = absolute_to_rows(values[:, 0], values[:, 1], total,
                                                overlap=overlap, unit_label=" ns")
    except OverlapError as err:
        first, second = rows[err.first][0], rows[err.second][0]
        raise ValueError(f"{name} line {second}: the event overlaps the one on line {first} "
                         f"({err})") from None
    except ValueError as err:
        raise ValueError(f"{name}: {err}") from None
    unit = metadata.pop("unit", "s")
    frequency_hz = metadata.pop("frequency_hz", None)
    # keep a recorded offset that rounds to the first start; else record the first start
    recorded = metadata.get("offset")
    if recorded is None:
        recorded_ns = 0.0
    elif isinstance(recorded, int | float) and not isinstance(recorded, bool):
        recorded_ns = float(np.rint(recorded * 1e9))
    else:
        recorded_ns = None
    if recorded_ns != start_0:
        metadata["offset"] = start_0 / 1e9
    metadata = _common.add_comments(metadata, comments)
    trace = _common.make_trace(name, jitter / 1e9, gap / 1e9, "s", frequency_hz, metadata)
    if unit == "cycles":
        if frequency_hz is None:
            raise ValueError(f"{name}: unit 'cycles' needs frequency_hz in the metadata")
        trace = trace.to_cycles()
    elif unit != "s":
        raise ValueError(f"{name}: unit must be 's' or 'cycles', got {unit!r}")
    return trace
