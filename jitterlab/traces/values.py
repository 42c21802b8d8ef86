"""Plain values shared by the trace, its writers and its readers.

:func:`plain_metadata` turns metadata into JSON-compatible Python data (what every
format can store); :func:`snap_to_integers` undoes the rounding of unit conversions.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Mapping

import numpy as np
import pandas as pd


# --------------------------------------------------------------------------------------
# metadata: kept JSON-compatible so that every file format stores it without loss
# --------------------------------------------------------------------------------------
def plain_metadata(value, where: str = "attrs"):
    """Return ``value`` as plain JSON-compatible Python data, or raise TypeError.

    Datetimes and dates become ISO 8601 strings, numpy scalars Python numbers, tuples
    and arrays lists, paths strings; dict keys must be strings.
    """
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value)
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, np.datetime64):
        return pd.Timestamp(value).isoformat()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{where}: keys must be strings, got {key!r}")
            out[key] = plain_metadata(item, f"{where}[{key!r}]")
        return out
    if isinstance(value, list | tuple | np.ndarray):
        return [plain_metadata(item, f"{where}[{i}]") for i, item in enumerate(value)]
    raise TypeError(f"{where}: cannot store a {type(value).__name__} value in trace metadata; "
                     "use str, numbers, bool, None, lists, dicts or datetimes")


def snap_to_integers(values: np.ndarray, ulps: float = 4.0) -> np.ndarray:
    """Round values that lie within a few units in the last place of an integer.

    Undoes the rounding of a unit conversion (cycles → seconds → cycles), so that
    integer counts come back exactly.
    """
    values = np.asarray(values, dtype=np.float64)
    nearest = np.rint(values)
    close = np.abs(values - nearest) <= ulps * np.finfo(np.float64).eps * np.abs(values)
    return np.where(close, nearest, values)
