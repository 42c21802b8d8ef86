"""jitterlab's own trace formats: CSV, Parquet and netCDF, all lossless.

* **CSV** — ``# key: <json>`` lines for ``unit``, ``frequency_hz`` and every metadata
  item, then a header ``jitter,gap`` and one row per event. Numbers are written as the
  shortest text that reads back as the same float (integers without decimals).
* **Parquet** — float64 columns ``jitter`` and ``gap`` (zstd-compressed); unit, frequency
  and metadata as one JSON document under the key ``jitterlab`` of the schema metadata.
* **netCDF** (via xarray) — dimension ``event``, variables ``jitter`` and ``gap`` with a
  ``units`` attribute; ``unit`` and ``frequency_hz`` as global attributes, metadata items
  as global attributes too: strings and numbers as they are, everything else (None,
  booleans, lists, dicts) as JSON text, listed in ``jitterlab_trace_json_keys``; keys
  that are not valid attribute names go into ``jitterlab_trace_other_attrs`` (JSON).

All three are read back by :func:`jitterlab.io.read_trace` (format ``"jitterlab"``), the
kind being recognised from the content; any of them may be gzip-compressed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from ..traces.trace import Trace, plain_metadata
from . import common as _common

__all__ = ["read", "write_csv", "write_parquet", "write_netcdf", "binary_kind"]

FORMAT_VERSION = 1
_HEADER = "jitter,gap"
_PARQUET_KEY = b"jitterlab"
_NC_JSON_KEYS = "jitterlab_trace_json_keys"
_NC_OTHER = "jitterlab_trace_other_attrs"
_NC_FORMAT = "jitterlab_trace_format"
_NC_RESERVED = (_NC_JSON_KEYS, _NC_OTHER, _NC_FORMAT)
_NC_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.@+\-]*\Z")
_INT64 = np.iinfo(np.int64)
#: first line or netCDF attribute of other files jitterlab writes -> the reader to name
_OTHER_FILES = {
    "# jitterlab fwq samples": ("FWQ samples", "jitterlab.measure.read_fwq_samples"),
    "jitterlab_fwq": ("FWQ samples", "jitterlab.measure.read_fwq_samples"),
    "jitterlab.measure.fwq": ("FWQ samples", "jitterlab.measure.read_fwq_samples"),
    "jitterlab.measure.pb": ("a Parallel Benchmark result", "jitterlab.measure.read_pb"),
}
PARQUET_MAGIC = b"PAR1"
NETCDF3_MAGIC = b"CDF"
HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"


def _not_a_trace(name: str, marker: str) -> _common.NotATraceError:
    what, reader = _OTHER_FILES[marker]
    return _common.NotATraceError(f"{name} holds {what}, not a jitter trace; read it with "
                                  f"{reader}(path)")


# --------------------------------------------------------------------------------------
# CSV
# --------------------------------------------------------------------------------------
def write_csv(trace: Trace, path, *, overwrite: bool = False) -> Path:
    """Write ``trace`` as jitterlab CSV (atomic; gzip if ``path`` ends in ``.gz``); an
    existing ``path`` is refused unless ``overwrite``."""
    return _common.write_two_columns(trace, path, "jitterlab CSV",
                                     f"jitterlab CSV, version {FORMAT_VERSION}", _HEADER, ",",
                                     overwrite=overwrite)


def _read_csv(path, data: bytes) -> Trace:
    name = Path(path).name
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{name}: not a UTF-8 text file ({err})") from None
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    metadata, comments, rows = _common.split_comments(lines)
    if not rows:
        raise ValueError(f"{name}: expected a header {_HEADER!r} and rows of numbers, "
                         "found none")
    number, header = rows[0]
    first = lines[0].strip()
    for marker in _OTHER_FILES:
        if first.startswith(marker):
            raise _not_a_trace(name, marker)
    if header.replace(" ", "") != _HEADER:
        raise ValueError(f"{name} line {number}: expected the header {_HEADER!r}, "
                         f"got {header!r}")
    values = _common.parse_table(name, rows[1:], ",",
                                 "<jitter>,<gap>")
    if values.shape[0] == 0:
        raise ValueError(f"{name}: the table has no rows; a trace needs at least one event")
    unit = metadata.pop("unit", "s")
    frequency_hz = metadata.pop("frequency_hz", None)
    metadata = _common.add_comments(metadata, comments)
    return _common.make_trace(name, values[:, 0], values[:, 1], unit, frequency_hz, metadata)


# --------------------------------------------------------------------------------------
# Parquet
# --------------------------------------------------------------------------------------
def write_parquet(trace: Trace, path, *, overwrite: bool = False) -> Path:
    """Write ``trace`` as Parquet (atomic; zstd-compressed columns); an existing ``path``
    is refused unless ``overwrite``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    fields = _common.header_fields(trace, (), "jitterlab Parquet")
    document = {"format_version": FORMAT_VERSION, "unit": fields.pop("unit"),
                "frequency_hz": fields.pop("frequency_hz"), "attrs": fields}
    table = pa.table({"jitter": pa.array(np.asarray(trace.jitter), pa.float64()),
                      "gap": pa.array(np.asarray(trace.gap), pa.float64())})
    table = table.replace_schema_metadata({_PARQUET_KEY: _common.to_json(document)})
    return _common.atomic_write(
        path, lambda temp: pq.write_table(table, temp, compression="zstd"), overwrite=overwrite)


def _read_parquet(path, data: bytes) -> Trace:
    import pyarrow as pa
    import pyarrow.parquet as pq

    name = Path(path).name
    try:
        table = pq.read_table(pa.BufferReader(data))
    except (OSError, pa.ArrowException) as err:
        raise ValueError(f"{name}: not a readable Parquet file ({err})") from None
    if not {"jitter", "gap"} <= set(table.column_names):
        raise ValueError(f"{name}: expected columns 'jitter' and 'gap', found "
                         f"{table.column_names}")
    raw = (table.schema.metadata or {}).get(_PARQUET_KEY)
    document = json.loads(raw) if raw is not None else {}
    columns = []
    for column in ("jitter", "gap"):
        try:
            columns.append(table.column(column).to_numpy().astype(np.float64))
        except (pa.ArrowException, TypeError, ValueError) as err:
            raise ValueError(f"{name}: column {column!r} is not numeric ({err})") from None
    return _common.make_trace(name, columns[0], columns[1], document.get("unit", "s"),
                              document.get("frequency_hz"), document.get("attrs", {}))


# --------------------------------------------------------------------------------------
# netCDF
# --------------------------------------------------------------------------------------
def _netcdf_attrs(fields: dict) -> dict:
    attrs = {_NC_FORMAT: FORMAT_VERSION, "unit": fields.pop("unit")}
    frequency_hz = fields.pop("frequency_hz")
    if frequency_hz is not None:
        attrs["frequency_hz"] = frequency_hz
    json_keys, other = [], {}
    for key, value in fields.items():
        if not _NC_NAME.match(key):
            other[key] = value
        elif isinstance(value, str) and "\x00" not in value:
            attrs[key] = value
        elif (isinstance(value, float)
              or (isinstance(value, int) and not isinstance(value, bool)
                  and _INT64.min <= value <= _INT64.max)):
            attrs[key] = value
        else:
            attrs[key] = _common.to_json(value)
            json_keys.append(key)
    if json_keys:
        attrs[_NC_JSON_KEYS] = _common.to_json(json_keys)
    if other:
        attrs[_NC_OTHER] = _common.to_json(other)
    return attrs


def write_netcdf(trace: Trace, path, *, overwrite: bool = False) -> Path:
    """Write ``trace`` as netCDF through xarray (atomic); an existing ``path`` is refused
    unless ``overwrite``."""
    import xarray as xr

    fields = _common.header_fields(trace, _NC_RESERVED, "jitterlab netCDF")
    variables = {
        "jitter": ("event", np.asarray(trace.jitter),
                   {"units": trace.unit, "long_name": "duration of the jitter event"}),
        "gap": ("event", np.asarray(trace.gap),
                {"units": trace.unit, "long_name": "undisturbed compute until the next event"}),
    }
    dataset = xr.Dataset(variables, attrs=_netcdf_attrs(fields))
    encoding = {name: {"_FillValue": None} for name in variables}
    return _common.atomic_write(path, lambda temp: dataset.to_netcdf(temp, encoding=encoding),
                                overwrite=overwrite)


def _python_value(value):
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.reshape(())[()]
    return value.item() if isinstance(value, np.generic) else value


def _read_netcdf(path, data: bytes) -> Trace:
    import netCDF4
    import xarray as xr

    name = Path(path).name
    try:
        handle = netCDF4.Dataset("in-memory.nc", mode="r", memory=data)
    except OSError as err:
        raise ValueError(f"{name}: not a readable netCDF file ({err})") from None
    store = xr.backends.NetCDF4DataStore(handle)
    with xr.open_dataset(store, decode_cf=False) as dataset:
        dataset.load()
    if not {"jitter", "gap"} <= set(dataset.data_vars):
        for marker in (dataset.attrs.get("source"), *dataset.attrs):
            if isinstance(marker, str) and marker in _OTHER_FILES:
                raise _not_a_trace(name, marker)
        raise ValueError(f"{name}: expected variables 'jitter' and 'gap', found "
                         f"{sorted(dataset.data_vars)}")
    attrs = {key: _python_value(value) for key, value in dataset.attrs.items()}
    attrs.pop(_NC_FORMAT, None)
    json_keys = json.loads(attrs.pop(_NC_JSON_KEYS, "[]"))
    other = json.loads(attrs.pop(_NC_OTHER, "{}"))
    for key in json_keys:
        attrs[key] = json.loads(attrs[key])
    attrs.update(other)
    unit = attrs.pop("unit", dataset["jitter"].attrs.get("units", "s"))
    frequency_hz = attrs.pop("frequency_hz", None)
    return _common.make_trace(name, dataset["jitter"].values, dataset["gap"].values, unit,
                              frequency_hz, plain_metadata(attrs))


# --------------------------------------------------------------------------------------
# reading any of the three
# --------------------------------------------------------------------------------------
def binary_kind(data: bytes) -> str | None:
    """"parquet" or "netcdf" from the file signature, else None."""
    if data[:4] == PARQUET_MAGIC:
        return "parquet"
    if data[:3] == NETCDF3_MAGIC or data[:8] == HDF5_MAGIC:
        return "netcdf"
    return None


#: extension -> (name of the kind, what such a file starts with)
_BINARY_EXTENSIONS = {
    ".parquet": ("Parquet", "the signature 'PAR1'"),
    ".nc": ("netCDF", "a netCDF-3 ('CDF') or netCDF-4/HDF5 signature"),
}


def read(path) -> Trace:
    """Read a trace written by :meth:`Trace.to_csv`, ``to_parquet`` or ``to_netcdf``.

    The kind is recognised from the content (Parquet and netCDF/HDF5 signatures, else
    CSV); gzip-compressed files are read transparently. A ``.parquet`` or ``.nc`` file
    without the signature of its kind is refused as such (not read as CSV).
    """
    data = _common.read_bytes(path)
    kind = binary_kind(data)
    declared = _BINARY_EXTENSIONS.get(Path(_common.strip_gz(path)).suffix.lower())
    if kind is None and declared is not None:
        label, signature = declared
        raise ValueError(f"{Path(path).name}: not a {label} file (it does not start with "
                         f"{signature}; {len(data)} bytes)")
    if kind == "parquet":
        return _read_parquet(path, data)
    if kind == "netcdf":
        return _read_netcdf(path, data)
    return _read_csv(path, data)

