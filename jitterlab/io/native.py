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
from pathlib import Path

import numpy as np

from ..traces.trace import Trace, plain_metadata
from ..traces.writers import (  # noqa: F401  (write_* are this module's public writers)
    CSV_HEADER,
    FORMAT_VERSION,
    NC_FORMAT,
    NC_JSON_KEYS,
    NC_NAME,
    NC_OTHER,
    NC_RESERVED,
    PARQUET_KEY,
    write_csv,
    write_netcdf,
    write_parquet,
)
from . import common as _common

__all__ = ["read", "write_csv", "write_parquet", "write_netcdf", "binary_kind"]

#: first line or netCDF attribute of other files jitterlab writes -> the reader to name
_OTHER_FILES = {
    "# jitterlab fwq samples": ("FWQ samples", "jitterlab.measure.read_fwq_samples"),
    "jitterlab_fwq": ("FWQ samples", "jitterlab.measure.read_fwq_samples"),
    "jitterlab.bench.fwq": ("FWQ samples", "jitterlab.measure.read_fwq_samples"),
    "jitterlab.bench.pb": ("a Parallel Benchmark result", "jitterlab.measure.read_pb"),
}
PARQUET_MAGIC = b"PAR1"
NETCDF3_MAGIC = b"CDF"
HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"


def _not_a_trace(name: str, marker: str) -> _common.NotATraceError:
    what, reader = _OTHER_FILES[marker]
    return _common.NotATraceError(f"{name} holds {what}, not a jitter trace; read it with "
                                  f"{reader}(path)")




def _read_csv(path, data: bytes) -> Trace:
    name = Path(path).name
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{name}: not a UTF-8 text file ({err})") from None
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    metadata, comments, rows = _common.split_comments(lines)
    if not rows:
        raise ValueError(f"{name}: expected a header {CSV_HEADER!r} and rows of numbers, "
                         "found none")
    number, header = rows[0]
    first = lines[0].strip()
    for marker in _OTHER_FILES:
        if first.startswith(marker):
            raise _not_a_trace(name, marker)
    if header.replace(" ", "") != CSV_HEADER:
        raise ValueError(f"{name} line {number}: expected the header {CSV_HEADER!r}, "
                         f"got {header!r}")
    values = _common.parse_table(name, rows[1:], ",",
                                 "<jitter>,<gap>")
    if values.shape[0] == 0:
        raise ValueError(f"{name}: the table has no rows; a trace needs at least one event")
    unit = metadata.pop("unit", "s")
    frequency_hz = metadata.pop("frequency_hz", None)
    metadata = _common.add_comments(metadata, comments)
    return _common.make_trace(name, values[:, 0], values[:, 1], unit, frequency_hz, metadata)




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
    raw = (table.schema.metadata or {}).get(PARQUET_KEY)
    document = json.loads(raw) if raw is not None else {}
    columns = []
    for column in ("jitter", "gap"):
        try:
            columns.append(table.column(column).to_numpy().astype(np.float64))
        except (pa.ArrowException, TypeError, ValueError) as err:
            raise ValueError(f"{name}: column {column!r} is not numeric ({err})") from None
    return _common.make_trace(name, columns[0], columns[1], document.get("unit", "s"),
                              document.get("frequency_hz"), document.get("attrs", {}))






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
    attrs.pop(NC_FORMAT, None)
    json_keys = json.loads(attrs.pop(NC_JSON_KEYS, "[]"))
    other = json.loads(attrs.pop(NC_OTHER, "{}"))
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

