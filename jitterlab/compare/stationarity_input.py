"""A recording as detours: start times and sizes from a Trace, a table or measured times.

:func:`recording_detours` reads :func:`~jitterlab.compare.stationarity.stationarity`'s
input (a :class:`~jitterlab.traces.trace.Trace`, a table of detours with ``start`` and
``duration``, or measured times whose excess over the fastest above a threshold is a
detour) and gives the detours' times and sizes, the recording's start and length, and
the threshold used.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from ..base.checks import check_positive
from ..traces.trace import Trace

__all__ = ["recording_detours"]


def _as_float_array(name: str, values) -> np.ndarray:
    """``values`` as a float array of finite numbers, else an error naming ``name``."""
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be numbers, got {type(values).__name__}") from None
    if array.size and not np.all(np.isfinite(array)):
        raise ValueError(f"{name} holds NaN or infinite values")
    return array


def _samples_input(data, times, variable):
    """Values and time stamps [s] of measured times (1-D array, Empirical, DataArray or
    Dataset with ``variable``); series (rank, sample) are placed back to back per rank."""
    if isinstance(data, xr.Dataset):
        if variable is None:
            raise ValueError("a Dataset needs variable=, the name of its measured times "
                             f"(variables: {sorted(data.data_vars)})")
        if variable not in data:
            raise ValueError(f"variable {variable!r} is not in the Dataset "
                             f"(variables: {sorted(data.data_vars)})")
        data = data[variable]
    elif variable is not None and not isinstance(data, xr.DataArray):
        raise ValueError("variable= applies to a Dataset only")
    if hasattr(data, "sequence") and not isinstance(data, np.ndarray | xr.DataArray):
        data = data.sequence
    values = _as_float_array("data", data.values if isinstance(data, xr.DataArray) else data)
    if values.ndim == 1:
        values = values[None, :]
    if values.ndim != 2:
        raise ValueError(f"measured times must be 1-D (sample) or 2-D (series, sample), "
                         f"got {values.ndim} dimensions")
    if values.size == 0:
        raise ValueError("data holds no samples")
    if np.any(values < 0):
        raise ValueError("measured times must be >= 0")
    if times is None:
        # back to back: each sample starts when the previous one ends
        stamps = np.cumsum(values, axis=1) - values
    else:
        stamps = _as_float_array("times", times)
        if stamps.ndim == 1:
            stamps = stamps[None, :]
        if stamps.shape != values.shape:
            raise ValueError(f"times must have the shape of the samples {values.shape}, "
                             f"got {stamps.shape}")
    return values.ravel(), stamps.ravel()


def _refuse(what: str, **arguments) -> None:
    """ValueError naming the first of ``arguments`` that is set: it applies to measured
    times only, not to ``what``."""
    for name, value in arguments.items():
        if value is not None:
            raise ValueError(f"{name}= applies to measured times, not to {what}")


def recording_detours(data, times, variable, duration, threshold, exceed_quantile):
    """Detour start times, the sizes and their times [s], the recording's start and length
    [s], and the threshold (None for detour input) of :func:`stationarity`'s input."""
    if isinstance(data, Trace):
        _refuse("a Trace", times=times, variable=variable, threshold=threshold)
        if duration is not None:
            raise ValueError("duration= applies to a table of detours or measured times; "
                             "a Trace has its own duration")
        seconds = data.to_seconds() if data.unit != "s" else data
        event_times = np.asarray(seconds.starts, dtype=float)
        sizes = np.asarray(seconds.jitter_seconds, dtype=float)
        if event_times.size == 0:
            raise ValueError("the recording holds no detours: nothing to test")
        return event_times, sizes, event_times, 0.0, float(seconds.duration), None
    if isinstance(data, pd.DataFrame):
        _refuse("a table of detours", times=times, variable=variable, threshold=threshold)
        missing = [c for c in ("start", "duration") if c not in data.columns]
        if missing:
            raise ValueError(f"a table of detours needs the columns 'start' and "
                             f"'duration' [s]; it lacks {missing}")
        event_times = _as_float_array("start", data["start"].to_numpy())
        sizes = _as_float_array("duration", data["duration"].to_numpy())
        if event_times.size == 0:
            raise ValueError("the recording holds no detours: nothing to test")
        if np.any(event_times < 0) or np.any(sizes < 0):
            raise ValueError("detour starts and durations must be >= 0")
        order = np.argsort(event_times, kind="stable")
        event_times, sizes = event_times[order], sizes[order]
        span = _duration(duration, float(np.max(event_times + sizes)),
                         float(event_times[-1]))
        return event_times, sizes, event_times, 0.0, span, None
    if isinstance(data, str | bytes) or data is None:
        raise TypeError(f"data must be a jitterlab Trace or measured times [s], got "
                        f"{type(data).__name__}")
    values, stamps = _samples_input(data, times, variable)
    order = np.argsort(stamps, kind="stable")
    values, stamps = values[order], stamps[order]
    excess = values - values.min()
    if threshold is None:
        threshold = float(np.quantile(excess, exceed_quantile))
    else:
        threshold = check_positive("threshold", threshold, allow_zero=True)
    event_times = stamps[excess > threshold]
    if event_times.size == 0:
        raise ValueError("the recording holds no detours: nothing to test")
    start = float(stamps[0])
    span = _duration(duration, float(np.max(stamps + values)) - start,
                     float(stamps[-1]) - start)
    return event_times, excess, stamps, start, span, threshold


def _duration(duration, default: float, last: float) -> float:
    """The recording's length: ``duration`` if given (checked against the ``last`` time
    stamp), else ``default``; ValueError when it is not positive."""
    if duration is not None:
        duration = check_positive("duration", duration)
        if duration < last:
            raise ValueError(f"duration={duration!r} s ends before the last detour or "
                             f"sample ({last!r} s)")
        default = duration
    if not default > 0:
        raise ValueError("the recording has zero duration")
    return default

