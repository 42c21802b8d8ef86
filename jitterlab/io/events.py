"""Event traces in files: :func:`write_events` and :func:`read_events`.

Parquet and netCDF hold an :class:`~jitterlab.EventTrace` without loss (its metadata as
JSON); OTF2 archives are read through :func:`jitterlab.io.read_otf2_events`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..base.checks import refuse_existing
from ..traces.events import KINDS, NOISE_PREFIX, EventTrace
from ..traces.values import plain_metadata

__all__ = ["read_events", "write_events"]

FORMAT_VERSION = 1


_PARQUET_KEY = b"jitterlab_events"


_PARQUET_SUFFIXES = (".parquet", ".pq")


_NETCDF_SUFFIXES = (".nc", ".nc4", ".netcdf")


# ---------------------------------------------------------------------- file I/O
def _kind_of(path) -> str:
    suffix = Path(path).suffix.lower()
    if suffix in _PARQUET_SUFFIXES:
        return "parquet"
    if suffix in _NETCDF_SUFFIXES:
        return "netcdf"
    if suffix == ".otf2":
        return "otf2"
    raise ValueError(f"{Path(path).name}: unknown event-trace format; use a name ending in "
                     f"{' or '.join(_PARQUET_SUFFIXES + _NETCDF_SUFFIXES)} (or an OTF2 "
                     f"archive, .otf2)")


def _document(trace: EventTrace) -> str:
    return json.dumps({"format_version": FORMAT_VERSION, "latency": trace.latency,
                       "attrs": plain_metadata(trace.attrs)})


def write_events(trace: EventTrace, path, *, overwrite: bool = False) -> Path:
    """Write an event trace as Parquet (``.parquet``, ``.pq``) or netCDF (``.nc``).

    The file is written to a temporary file in the same directory and then moved onto
    ``path`` (:func:`os.replace`), so a reader never sees a partial file.

    Parameters
    ----------
    trace : EventTrace
    path : str or path
        Its suffix chooses the format.
    overwrite : bool
        Replace an existing file; by default an existing one is an error (as for every
        jitterlab writer).

    Returns
    -------
    pathlib.Path

    Notes
    -----
    The metadata (``attrs``) is stored as JSON: numbers, strings, booleans, None, lists
    and dicts come back with their types (tuples and arrays as lists, datetimes as ISO
    strings); any other value is refused here rather than turned into a string.
    """
    from ..io.common import atomic_write

    if not isinstance(trace, EventTrace):
        raise TypeError(f"trace must be a jl.EventTrace, got {type(trace).__name__}")
    refuse_existing(path, overwrite)  # before the document is built; atomic_write again
    kind = _kind_of(path)
    document = _document(trace)
    if kind == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(trace.data, preserve_index=False)
        table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                               _PARQUET_KEY: document.encode()})
        return atomic_write(path, lambda temp: pq.write_table(table, temp,
                                                              compression="zstd"),
                            overwrite=overwrite)
    import xarray as xr

    data = trace.data
    variables = {}
    for name in data.columns:
        if name == "kind":
            variables[name] = ("interval", trace.kind_codes(),
                               {"flag_values": np.arange(len(KINDS), dtype=np.int8),
                                "flag_meanings": " ".join(KINDS)})
        else:
            attrs = {"units": "s"} if name in ("start", "end") or \
                name.startswith(NOISE_PREFIX) else {}
            variables[name] = ("interval", data[name].to_numpy(), attrs)
    dataset = xr.Dataset(variables, attrs={"jitterlab_events": document})
    encoding = {name: {"_FillValue": None} for name in variables}
    return atomic_write(path, lambda temp: dataset.to_netcdf(temp, encoding=encoding),
                        overwrite=overwrite)


def read_events(path) -> EventTrace:
    """Read an event trace written by :func:`write_events` (the suffix gives the format),
    or an OTF2 archive (``.otf2``: its anchor file or directory, see
    :func:`jitterlab.io.read_otf2_events`).

    Raises
    ------
    ValueError
        Naming the file, when it is truncated, damaged or not an event trace, or when
        the trace in it is malformed (see :class:`EventTrace`).
    """
    path = Path(path)
    kind = _kind_of(path)
    if kind == "otf2":
        from .otf2 import read_otf2_events

        return read_otf2_events(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such event-trace file")
    if kind == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except (OSError, pa.ArrowException) as err:
            raise ValueError(f"{path.name}: not a readable Parquet file, it is damaged or "
                             f"truncated ({err})") from None
        raw = (table.schema.metadata or {}).get(_PARQUET_KEY)
        frame = table.to_pandas()
    else:
        import xarray as xr

        try:
            with xr.open_dataset(path, engine="netcdf4", decode_cf=False) as dataset:
                dataset.load()
        except (OSError, ValueError, RuntimeError) as err:
            raise ValueError(f"{path.name}: not a readable netCDF file, it is damaged or "
                             f"truncated ({err})") from None
        raw = dataset.attrs.get("jitterlab_events")
        frame = pd.DataFrame({name: dataset[name].values for name in dataset.data_vars})
        if "kind" in frame:
            codes = frame["kind"].to_numpy()
            if not np.issubdtype(codes.dtype, np.integer) or codes.min() < 0 or \
                    codes.max() >= len(KINDS):
                raise ValueError(f"{path.name}: variable 'kind' must hold codes 0 to "
                                 f"{len(KINDS) - 1} ({' '.join(KINDS)})")
            frame["kind"] = pd.Categorical.from_codes(codes, categories=KINDS)
    if raw is None:
        raise ValueError(f"{path.name}: not a jitterlab event trace (no "
                         f"'jitterlab_events' metadata)")
    try:
        document = json.loads(raw)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{path.name}: damaged event-trace metadata ({err})") from None
    latency = document.get("latency", 0.0)
    if not isinstance(latency, int | float) or not math.isfinite(latency):
        raise ValueError(f"{path.name}: latency must be a number, got {latency!r}")
    attrs = dict(document.get("attrs", {}))
    attrs.pop("units", None)
    return EventTrace(frame, latency=latency, file=path, **attrs)
