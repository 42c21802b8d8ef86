"""Writing a :class:`~jitterlab.Trace` to the formats jitterlab reads back.

The jitterlab CSV, Parquet and netCDF formats (lossless), jitSim's two-column table and
LogGOPSim's noise trace. Reading them is :mod:`jitterlab.io`'s job; writing lives here,
next to the trace, so that :meth:`Trace.to_csv` and its siblings need nothing above
this package. Every writer is atomic and refuses an existing file unless
``overwrite=True``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..base.files import atomic_write, write_text
from .values import plain_metadata, snap_to_integers

if TYPE_CHECKING:
    from .trace import Trace

_INT64 = np.iinfo(np.int64)
MAX_LINE = 1023  # the longest line LogGOPSim reads [bytes]

#: a bare metadata key; other keys are written as JSON string literals
_BARE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*\Z")


#: first line of every file jitterlab writes (skipped when reading)
MARKER = "# jitterlab trace"


# --------------------------------------------------------------------------------------
# metadata
# --------------------------------------------------------------------------------------
def to_json(value) -> str:
    """Compact JSON of plain metadata (NaN and infinities as Python's json writes them)."""
    return json.dumps(plain_metadata(value), ensure_ascii=False, separators=(", ", ": "))


def header_fields(trace: Trace, reserved: Iterable[str], fmt: str) -> dict:
    """``unit``, ``frequency_hz`` and the metadata of ``trace``, checked for collisions."""
    attrs = plain_metadata(trace.attrs)
    clash = sorted({"unit", "frequency_hz", *reserved} & set(attrs))
    if clash:
        raise ValueError(f"cannot write the {fmt} format: metadata key(s) {clash} are "
                         "reserved by the format")
    return {"unit": trace.unit, "frequency_hz": trace.frequency_hz, **attrs}


def metadata_lines(fields: dict) -> list[str]:
    """One ``# key: <json>`` line per item (keys that are not bare names are quoted)."""
    lines = []
    for key, value in fields.items():
        label = key if _BARE_KEY.match(key) else json.dumps(key, ensure_ascii=False)
        lines.append(f"# {label}: {to_json(value)}")
    return lines


# --------------------------------------------------------------------------------------
# numbers
# --------------------------------------------------------------------------------------
def format_number(value: float) -> str:
    """Shortest text that reads back as the same float; integers without decimals."""
    if value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(value)


def format_column(values: np.ndarray) -> list[str]:
    return [format_number(v) for v in np.asarray(values, dtype=np.float64).tolist()]


def write_two_columns(trace, path, fmt: str, title: str, header: str, separator: str, *,
                      overwrite: bool = True) -> Path:
    """Write jitter and gap as a text table (atomic): a marker line ``(title)``, the
    ``# key: <json>`` metadata, ``header``, then one row per event; ``fmt`` names the
    format in errors (``overwrite`` as for :func:`atomic_write`)."""
    fields = header_fields(trace, (), fmt)
    rows = map(separator.join, zip(format_column(trace.jitter), format_column(trace.gap),
                                   strict=True))
    return write_text(path, [f"{MARKER} ({title})", *metadata_lines(fields), header, *rows],
                      overwrite=overwrite)


FORMAT_VERSION = 1


CSV_HEADER = "jitter,gap"


PARQUET_KEY = b"jitterlab"


NC_JSON_KEYS = "jitterlab_trace_json_keys"


NC_OTHER = "jitterlab_trace_other_attrs"


NC_FORMAT = "jitterlab_trace_format"


NC_RESERVED = (NC_JSON_KEYS, NC_OTHER, NC_FORMAT)


NC_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.@+\-]*\Z")


# --------------------------------------------------------------------------------------
# CSV
# --------------------------------------------------------------------------------------
def write_csv(trace: Trace, path, *, overwrite: bool = False) -> Path:
    """Write ``trace`` as jitterlab CSV (atomic; gzip if ``path`` ends in ``.gz``); an
    existing ``path`` is refused unless ``overwrite``."""
    return write_two_columns(trace, path, "jitterlab CSV",
                                     f"jitterlab CSV, version {FORMAT_VERSION}", CSV_HEADER, ",",
                                     overwrite=overwrite)


# --------------------------------------------------------------------------------------
# Parquet
# --------------------------------------------------------------------------------------
def write_parquet(trace: Trace, path, *, overwrite: bool = False) -> Path:
    """Write ``trace`` as Parquet (atomic; zstd-compressed columns); an existing ``path``
    is refused unless ``overwrite``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    fields = header_fields(trace, (), "jitterlab Parquet")
    document = {"format_version": FORMAT_VERSION, "unit": fields.pop("unit"),
                "frequency_hz": fields.pop("frequency_hz"), "attrs": fields}
    table = pa.table({"jitter": pa.array(np.asarray(trace.jitter), pa.float64()),
                      "gap": pa.array(np.asarray(trace.gap), pa.float64())})
    table = table.replace_schema_metadata({PARQUET_KEY: to_json(document)})
    return atomic_write(
        path, lambda temp: pq.write_table(table, temp, compression="zstd"), overwrite=overwrite)


# --------------------------------------------------------------------------------------
# netCDF
# --------------------------------------------------------------------------------------
def _netcdf_attrs(fields: dict) -> dict:
    attrs = {NC_FORMAT: FORMAT_VERSION, "unit": fields.pop("unit")}
    frequency_hz = fields.pop("frequency_hz")
    if frequency_hz is not None:
        attrs["frequency_hz"] = frequency_hz
    json_keys, other = [], {}
    for key, value in fields.items():
        if not NC_NAME.match(key):
            other[key] = value
        elif isinstance(value, str) and "\x00" not in value:
            attrs[key] = value
        elif (isinstance(value, float)
              or (isinstance(value, int) and not isinstance(value, bool)
                  and _INT64.min <= value <= _INT64.max)):
            attrs[key] = value
        else:
            attrs[key] = to_json(value)
            json_keys.append(key)
    if json_keys:
        attrs[NC_JSON_KEYS] = to_json(json_keys)
    if other:
        attrs[NC_OTHER] = to_json(other)
    return attrs


def write_netcdf(trace: Trace, path, *, overwrite: bool = False) -> Path:
    """Write ``trace`` as netCDF through xarray (atomic); an existing ``path`` is refused
    unless ``overwrite``."""
    import xarray as xr

    fields = header_fields(trace, NC_RESERVED, "jitterlab netCDF")
    variables = {
        "jitter": ("event", np.asarray(trace.jitter),
                   {"units": trace.unit, "long_name": "duration of the jitter event"}),
        "gap": ("event", np.asarray(trace.gap),
                {"units": trace.unit, "long_name": "undisturbed compute until the next event"}),
    }
    dataset = xr.Dataset(variables, attrs=_netcdf_attrs(fields))
    encoding = {name: {"_FillValue": None} for name in variables}
    return atomic_write(path, lambda temp: dataset.to_netcdf(temp, encoding=encoding),
                                overwrite=overwrite)


HEADER = "jitter_duration\tcycles_to_next_jitter"


def write_jitsim(trace: Trace, path, *, overwrite: bool = False) -> Path:
    """Write ``trace`` as a jitSim table (atomic; gzip if ``path`` ends in ``.gz``; an
    existing file only with ``overwrite=True``)."""
    return write_two_columns(
        trace, path, "jitSim", "jitSim format: jitter duration, time to the next jitter",
        HEADER, "\t", overwrite=overwrite)


def _nanoseconds(trace: Trace, values: np.ndarray) -> np.ndarray:
    scale = 1e9 if trace.unit == "s" else 1e9 / trace.frequency_hz
    return snap_to_integers(np.asarray(values) * scale)


def write_loggopsim(trace: Trace, path, *, overwrite: bool = False) -> Path:
    """Write ``trace`` as a LogGOPSim noise trace (atomic; gzip if ``path`` ends in .gz; an
    existing file only with ``overwrite=True``)."""
    fields = header_fields(trace, ("duration_ns",), "LogGOPSim")
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
    comments = [f"{MARKER} (LogGOPSim noise format: <start ns>, <duration ns>)",
                f"# duration_ns: {int(last - first)}", *metadata_lines(fields)]
    for line in comments:
        if len(line.encode("utf-8")) > MAX_LINE:
            raise ValueError(f"cannot write LogGOPSim: the metadata line {line[:40]!r}... "
                             f"is longer than the {MAX_LINE} bytes LogGOPSim reads")
    rows = map("{}\t{}".format, begin.astype(np.int64).tolist(),
               (end - begin).astype(np.int64).tolist())
    return write_text(path, [*comments, *rows], overwrite=overwrite)
