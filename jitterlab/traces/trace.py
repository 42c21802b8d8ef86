"""Jitter traces in the form used by jitSim: rows of (jitter, gap), replayed cyclically.

A trace records the operating-system noise seen by one CPU: row ``i`` is a jitter event
of duration ``jitter_i`` followed by ``gap_i`` of undisturbed compute until the next
event, and the last gap leads back to the first row. The equivalent *absolute* form,
one ``(start, duration)`` pair per event on a timeline (used by LogGOPSim, netgauge and
sysjitter), converts both ways with :meth:`Trace.to_absolute` and
:meth:`Trace.from_absolute`. File formats live in :mod:`jitterlab.io`.

References
----------
.. [1] P. De, V. Mann, "jitSim: A Simulator for Predicting Scalability of Parallel
   Applications in Presence of OS Jitter", Euro-Par 2010 workshops (seed 000), §3.1
   (the trace tuple ⟨jitter_duration, cycles_to_next_jitter⟩) and Fig. 2.
"""

from __future__ import annotations

import copy
import math
import numbers
from pathlib import Path

import numpy as np
import pandas as pd

from ..base.checks import check_positive
from .values import plain_metadata, snap_to_integers

__all__ = ["Trace"]

UNITS = ("s", "cycles")

#: quantile levels reported by :meth:`Trace.stats`, with their labels
_STAT_QUANTILES = {"p50_jitter": 0.5, "p90_jitter": 0.9, "p99_jitter": 0.99,
                   "p999_jitter": 0.999}
_STAT_UNITS = {"n_events": "1", "duration": "s", "event_rate": "1/s", "noise_fraction": "1",
               "mean_jitter": "s", "total_jitter": "s", "p50_jitter": "s", "p90_jitter": "s",
               "p99_jitter": "s", "p999_jitter": "s", "max_jitter": "s", "mean_gap": "s"}




def _check_frequency(frequency_hz) -> float | None:
    return None if frequency_hz is None else check_positive("frequency_hz", frequency_hz)


def _as_times(name: str, values) -> np.ndarray:
    """A 1-D float64 array of finite non-negative times, or an error naming ``name``:
    TypeError for what is not numbers (strings and booleans included), ValueError for
    bad values or shapes."""
    try:
        raw = np.asarray(values)
    except ValueError:  # ragged nested sequences
        raise ValueError(f"{name} must be a one-dimensional array of numbers") from None
    if raw.dtype.kind in "USb" or (raw.dtype.kind == "O" and not all(
            isinstance(item, numbers.Real) and not isinstance(item, bool)
            for item in raw.ravel())):
        raise TypeError(f"{name} must be an array of numbers (times), got "
                        f"{_describe_values(raw)}")
    try:
        array = raw.astype(np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of numbers (times), got "
                        f"{_describe_values(raw)}") from None
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"{name} is empty; a trace needs at least one event")
    bad = ~np.isfinite(array)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{name} must be finite, got {array[i]!r} at index {i}")
    if (array < 0).any():
        i = int(np.argmax(array < 0))
        raise ValueError(f"{name} must be non-negative, got {array[i]!r} at index {i}")
    return array


def _describe_values(raw: np.ndarray) -> str:
    first = raw.ravel()[0] if raw.size else None
    return f"{type(first).__name__} values such as {first!r}" if raw.size else repr(raw)




class OverlapError(ValueError):
    """Two events of an absolute trace overlap (``first`` and ``second`` index the input)."""

    def __init__(self, message: str, first: int, second: int):
        super().__init__(message)
        self.first = first
        self.second = second


OVERLAP_RULES = ("raise", "serialize", "merge")


def absolute_to_rows(start, duration, total_duration=None, *, overlap: str = "raise",
                     unit_label: str = ""):
    """Array-level conversion of absolute events to trace rows (see Trace.from_absolute).

    Returns ``(jitter, gap, start_0)`` in the unit of the input.
    """
    if overlap not in OVERLAP_RULES:
        raise ValueError(f"overlap must be one of {OVERLAP_RULES}, got {overlap!r}")
    start = _as_times("start", start)
    duration = _as_times("duration", duration)
    if start.shape != duration.shape:
        raise ValueError(f"start and duration must have the same length, got {start.size} "
                         f"and {duration.size}")
    order = np.lexsort((duration, start))  # by start; zero-length events first on ties
    start, duration = start[order], duration[order]
    end = start + duration
    # an overlap within rounding of the timeline (a few ulps) counts as touching
    tolerance = 4 * np.finfo(np.float64).eps * float(end.max())
    overlapping = start[1:] < end[:-1] - tolerance
    if overlapping.any():
        if overlap == "raise":
            k = int(np.argmax(overlapping))
            first, second = int(order[k]), int(order[k + 1])
            raise OverlapError(
                f"events overlap: event {first} (start {float(start[k])!r}{unit_label}, "
                f"duration {float(duration[k])!r}{unit_label}) is still running when event "
                f"{second} starts at {float(start[k + 1])!r}{unit_label}", first, second)
        if overlap == "merge":
            reach = np.maximum.accumulate(end)
            opens = np.concatenate(([True], start[1:] >= reach[:-1]))
            first = np.flatnonzero(opens)
            alone = np.diff(np.append(first, start.size)) == 1
            end = np.maximum.reduceat(end, first)
            start = start[first]
            duration = np.where(alone, duration[first], end - start)  # exact when alone
    default_total = total_duration is None
    if default_total:
        total_duration = float(end[-1])
    else:
        total_duration = check_positive("total_duration", total_duration, allow_zero=True)
    gap = np.empty_like(start)
    gap[:-1] = start[1:] - end[:-1]
    gap[-1] = total_duration - end[-1] + start[0]
    gap[(gap < 0) & (gap >= -tolerance)] = 0.0
    if overlap == "serialize" and (gap[:-1] < 0).any():
        # delay each event that starts before the previous one ends: the shortfall is
        # carried into the following gaps
        values = gap.tolist()
        debt = 0.0
        for i, value in enumerate(values):
            value -= debt
            debt = max(-value, 0.0)
            values[i] = max(value, 0.0)
        if default_total:  # the timeline ends where the last (delayed) event ends
            values[-1] = float(start[0])
        elif debt > 0:
            values[-1] = -debt
        gap = np.array(values)
    if gap[-1] < 0:
        raise ValueError(f"total_duration ({total_duration!r}{unit_label}) is shorter than the "
                         f"span of the events ({total_duration - float(gap[-1])!r}{unit_label})")
    return duration, gap, float(start[0])


class Trace:
    """A jitter trace: row ``i`` is a jitter event of ``jitter[i]``, then ``gap[i]`` of compute.

    The trace wraps around: after the last gap comes the first event again, so one
    replay cycle lasts ``duration`` = Σ (jitter + gap).

    Parameters
    ----------
    jitter : array_like of float
        Duration of each jitter event (detour), in ``unit``; zero is allowed. [s or cycles]
    gap : array_like of float
        Undisturbed compute time after each event until the next one, in ``unit``.
        [s or cycles]
    unit : {"s", "cycles"}, default "s"
        Unit of ``jitter`` and ``gap``. jitSim traces count CPU cycles.
    frequency_hz : float, optional
        Clock frequency that converts cycles to seconds; required for ``unit="cycles"``,
        optional (recorded for :meth:`to_cycles`) for seconds. [Hz]
    **metadata
        Stored in :attr:`attrs`. Any key is allowed; the ones the package understands are
        ``source`` (what produced the trace), ``host``, ``cpu``, ``kernel``,
        ``collected_at`` (ISO 8601), ``threshold`` (detection threshold [s]), ``t_min``
        (smallest loop iteration of the collector [s]), ``window`` (co-scheduler period
        [s]), ``window_offset`` (start of the first high-priority window relative to the
        trace start [s]) and ``offset`` (start of the first jitter event on an absolute
        timeline [s], used by :meth:`to_absolute`). Values are kept JSON-compatible:
        datetimes become ISO 8601 strings, numpy scalars Python numbers, tuples lists.

    Attributes
    ----------
    attrs : dict
        The metadata.

    Raises
    ------
    TypeError
        If ``jitter`` or ``gap`` are not numbers (strings and booleans are refused), if
        ``unit`` is not a string or ``frequency_hz`` not a number, or if a metadata value
        cannot be stored (see the ``**metadata`` parameter).
    ValueError
        If ``jitter`` or ``gap`` is not one-dimensional, is empty, has a non-finite or
        negative value, if their lengths differ, if the trace has zero total length, or
        if ``unit``/``frequency_hz`` are invalid.

    Notes
    -----
    The table is pandas-backed (:attr:`table`, float64 columns ``jitter`` and ``gap``).
    The simulator uses :attr:`jitter_seconds` and :attr:`gap_seconds`; a task that starts
    at row ``s`` begins computing at the start of ``gap_s``.

    References
    ----------
    .. [1] P. De, V. Mann, "jitSim", Euro-Par 2010 workshops (seed 000), §3.1, Fig. 2.

    Examples
    --------
    The trace of jitSim Fig. 2, in cycles of a 1 GHz clock:

    >>> trace = Trace(jitter=[10, 5, 25, 5, 15, 20, 10, 60, 5, 10],
    ...               gap=[50, 30, 20, 10, 100, 300, 20, 60, 20, 70],
    ...               unit="cycles", frequency_hz=1e9, source="jitSim Fig. 2")
    >>> trace
    Trace(10 events, 8.45e-07 s, noise fraction 19.53%, unit='cycles' at 1e+09 Hz)
    >>> trace.duration  # 845 cycles [s]
    8.45e-07
    """

    def __init__(self, jitter, gap, unit: str = "s", frequency_hz: float | None = None,
                 **metadata):
        jitter = _as_times("jitter", jitter)
        gap = _as_times("gap", gap)
        if jitter.shape != gap.shape:
            raise ValueError(f"jitter and gap must have the same length, got {jitter.size} "
                             f"and {gap.size}")
        if not isinstance(unit, str):
            raise TypeError(f"unit must be 's' or 'cycles', got {type(unit).__name__} "
                            f"{unit!r}")
        if unit not in UNITS:
            raise ValueError(f"unit must be 's' or 'cycles', got {unit!r}")
        frequency_hz = _check_frequency(frequency_hz)
        if unit == "cycles" and frequency_hz is None:
            raise ValueError("a trace in cycles needs frequency_hz > 0 to convert to seconds")
        total = float(np.sum(jitter) + np.sum(gap))
        if not total > 0:
            raise ValueError("the trace has zero length: jitter and gap sum to 0")
        if not math.isfinite(total):
            raise ValueError("the total length of the trace overflows")
        self._table = pd.DataFrame({"jitter": jitter, "gap": gap})
        self._unit = unit
        self._frequency_hz = frequency_hz
        self.attrs: dict = plain_metadata(metadata)

    # -- the table ----------------------------------------------------------------------
    @property
    def table(self) -> pd.DataFrame:
        """A copy of the rows: float64 columns ``jitter`` and ``gap`` in :attr:`unit`.

        Its ``attrs`` hold ``unit``, ``frequency_hz`` and the trace metadata.
        """
        table = self._table.copy()
        table.attrs = {"unit": self._unit, "frequency_hz": self._frequency_hz,
                       **copy.deepcopy(self.attrs)}
        return table

    def _column(self, name: str) -> np.ndarray:
        view = self._table[name].to_numpy().view()
        view.flags.writeable = False
        return view

    @property
    def jitter(self) -> np.ndarray:
        """Duration of each jitter event, in :attr:`unit` (read-only). [s or cycles]"""
        return self._column("jitter")

    @property
    def gap(self) -> np.ndarray:
        """Compute time after each event until the next, in :attr:`unit` (read-only)."""
        return self._column("gap")

    @property
    def unit(self) -> str:
        """``"s"`` or ``"cycles"``."""
        return self._unit

    @property
    def frequency_hz(self) -> float | None:
        """Clock frequency that converts cycles to seconds, or None. [Hz]"""
        return self._frequency_hz

    @property
    def n_events(self) -> int:
        """Number of rows (jitter events, zero-length ones included)."""
        return len(self._table)

    def __len__(self) -> int:
        return self.n_events

    def _to_seconds(self, values: np.ndarray) -> np.ndarray:
        if self._unit == "s":
            return values
        out = values / self._frequency_hz
        out.flags.writeable = False
        return out

    @property
    def jitter_seconds(self) -> np.ndarray:
        """Duration of each jitter event (read-only float64). [s]"""
        return self._to_seconds(self.jitter)

    @property
    def gap_seconds(self) -> np.ndarray:
        """Compute time after each event (read-only float64). [s]"""
        return self._to_seconds(self.gap)

    @property
    def duration(self) -> float:
        """Length of one replay cycle, Σ (jitter + gap). [s]"""
        total = float(np.sum(self.jitter) + np.sum(self.gap))
        return total if self._unit == "s" else total / self._frequency_hz

    @property
    def starts(self) -> np.ndarray:
        """Start of each jitter event within one cycle, the first at 0. [s]

        The running sum is taken in :attr:`unit`, so integer cycle counts add exactly.
        """
        cycle = self.jitter + self.gap
        starts = np.concatenate(([0.0], np.cumsum(cycle[:-1])))
        return starts if self._unit == "s" else starts / self._frequency_hz

    # -- units --------------------------------------------------------------------------
    def copy(self) -> Trace:
        """An independent copy (rows, unit, frequency and metadata)."""
        return Trace(self.jitter, self.gap, self._unit, self._frequency_hz,
                     **copy.deepcopy(self.attrs))

    def to_seconds(self) -> Trace:
        """The same trace with ``jitter`` and ``gap`` in seconds.

        ``frequency_hz`` is kept, so :meth:`to_cycles` converts back.
        """
        if self._unit == "s":
            return self.copy()
        return Trace(self.jitter_seconds, self.gap_seconds, "s", self._frequency_hz,
                     **copy.deepcopy(self.attrs))

    def to_cycles(self, frequency_hz: float | None = None) -> Trace:
        """The same trace counted in cycles of a ``frequency_hz`` clock.

        Parameters
        ----------
        frequency_hz : float, optional
            Clock frequency; by default the one the trace records. [Hz]

        Returns
        -------
        Trace
            ``unit="cycles"``.

        Notes
        -----
        The cycle counts are seconds × frequency. Values within a few units in the last
        place of an integer are rounded to it, so a trace recorded in integer cycles
        survives ``to_seconds().to_cycles()`` exactly (lossless); fractional counts are
        kept as they are, to floating-point precision.
        """
        if frequency_hz is None:
            if self._frequency_hz is None:
                raise ValueError("to_cycles needs frequency_hz: the trace records none")
            frequency_hz = self._frequency_hz
        frequency_hz = _check_frequency(frequency_hz)
        if self._unit == "cycles" and frequency_hz == self._frequency_hz:
            return self.copy()
        jitter = snap_to_integers(self.jitter_seconds * frequency_hz)
        gap = snap_to_integers(self.gap_seconds * frequency_hz)
        return Trace(jitter, gap, "cycles", frequency_hz, **copy.deepcopy(self.attrs))

    # -- summaries ----------------------------------------------------------------------
    def stats(self) -> pd.Series:
        """Summary statistics, in seconds.

        Returns
        -------
        pandas.Series
            float64, indexed by ``n_events``, ``duration`` [s], ``event_rate`` [1/s],
            ``noise_fraction`` (Σ jitter / duration) [1], ``mean_jitter`` [s],
            ``total_jitter`` [s], ``p50_jitter``, ``p90_jitter``, ``p99_jitter``,
            ``p999_jitter`` (quantiles of the event durations, linear interpolation between
            order statistics) [s], ``max_jitter`` [s] and ``mean_gap`` [s]. The units are in
            ``series.attrs["units"]``.
        """
        jitter, gap = self.jitter_seconds, self.gap_seconds
        duration = self.duration
        total_jitter = float(np.sum(jitter))
        quantiles = np.quantile(jitter, list(_STAT_QUANTILES.values()))
        values = {"n_events": float(self.n_events), "duration": duration,
                  "event_rate": self.n_events / duration,
                  "noise_fraction": total_jitter / duration,
                  "mean_jitter": total_jitter / self.n_events, "total_jitter": total_jitter,
                  **dict(zip(_STAT_QUANTILES, quantiles.tolist(), strict=True)),
                  "max_jitter": float(np.max(jitter)),
                  "mean_gap": float(np.sum(gap)) / self.n_events}
        series = pd.Series(values, dtype=np.float64, name=self.attrs.get("source"))
        series.attrs["units"] = dict(_STAT_UNITS)
        return series

    def __repr__(self) -> str:
        duration = self.duration
        noise = float(np.sum(self.jitter_seconds)) / duration
        unit = "" if self._unit == "s" else f", unit='cycles' at {self._frequency_hz:g} Hz"
        return (f"Trace({self.n_events} events, {duration:.6g} s, "
                f"noise fraction {noise:.2%}{unit})")

    def equals(self, other) -> bool:
        """True if ``other`` is a Trace with the same rows, unit, frequency and metadata."""
        if not isinstance(other, Trace):
            return False
        return (self._unit == other._unit and self._frequency_hz == other._frequency_hz
                and np.array_equal(self.jitter, other.jitter)
                and np.array_equal(self.gap, other.gap)
                and plain_metadata(self.attrs) == plain_metadata(other.attrs))

    # -- absolute form ------------------------------------------------------------------
    def offset_seconds(self) -> float:
        """``attrs["offset"]``: start of the first event on an absolute timeline (0 if
        absent). [s]"""
        offset = self.attrs.get("offset")
        if offset is None:
            return 0.0
        if isinstance(offset, bool) or not isinstance(offset, int | float | np.number) \
                or not math.isfinite(offset):
            raise ValueError(f"attrs['offset'] must be a finite number of seconds, "
                             f"got {offset!r}")
        return float(offset)

    def to_absolute(self) -> pd.DataFrame:
        """The events on an absolute timeline, one row per event.

        Returns
        -------
        pandas.DataFrame
            Columns ``start`` [s] (``attrs["offset"]``, default 0, plus :attr:`starts`) and
            ``duration`` [s]. ``df.attrs["total_duration"]`` is the cycle length [s], which
            :meth:`from_absolute` picks up, so ``Trace.from_absolute(**t.to_absolute())``
            gives back the rows of ``t`` in seconds (up to the rounding of the running
            sums; exactly when the times are integers, e.g. nanoseconds).
        """
        table = pd.DataFrame({"start": self.offset_seconds() + self.starts,
                              "duration": np.array(self.jitter_seconds)})
        table.attrs = {"total_duration": self.duration, "unit": "s"}
        return table

    @classmethod
    def from_absolute(cls, start, duration, total_duration: float | None = None,
                      unit: str = "s", frequency_hz: float | None = None,
                      overlap: str = "raise", **metadata) -> Trace:
        """Build a trace from events given as (start, duration) on a timeline.

        Parameters
        ----------
        start : array_like of float
            Start of each event on a timeline that begins at 0; any order. [s or cycles]
        duration : array_like of float
            Length of each event; zero-length events are kept. [s or cycles]
        total_duration : float, optional
            Length of the timeline: the trace wraps around at it, so the last gap is
            ``total_duration − end_last + start_0``. By default the end of the last event
            (the idle time before the first event is then repeated after the last one);
            a pandas ``start`` with ``attrs["total_duration"]`` (the output of
            :meth:`to_absolute`) supplies it. [s or cycles]
        unit : {"s", "cycles"}, default "s"
            Unit of the inputs and of the trace.
        frequency_hz : float, optional
            As for :class:`Trace`. [Hz]
        overlap : {"raise", "serialize", "merge"}, default "raise"
            What to do with an event that starts before the previous one ends: raise
            ValueError; delay it until the previous one ends (every event keeps its full
            duration, the shortfall comes out of the following gaps — how LogGOPSim
            charges overlapping detours); or merge the two into one event (their union).
        **metadata
            Stored in :attr:`attrs`; ``offset`` is set to ``start_0`` in seconds.

        Returns
        -------
        Trace
            Row ``i`` = (duration_i, start_{i+1} − end_i) after sorting by start.

        Raises
        ------
        TypeError
            For times that are not numbers.
        ValueError
            For invalid times, for overlapping events with ``overlap="raise"`` (naming
            the first one, by its index in the input) or when the events do not fit in
            ``total_duration``.

        Examples
        --------
        >>> t = Trace.from_absolute(start=[1.0, 4.0], duration=[0.5, 1.0], total_duration=8.0)
        >>> t.jitter.tolist(), t.gap.tolist(), t.attrs["offset"]
        ([0.5, 1.0], [2.5, 4.0], 1.0)
        """
        if total_duration is None:
            total_duration = getattr(start, "attrs", {}).get("total_duration")
        jitter, gap, start_0 = absolute_to_rows(start, duration, total_duration,
                                                overlap=overlap,
                                                unit_label="" if unit == "cycles" else " s")
        trace = cls(jitter, gap, unit, frequency_hz, **metadata)
        trace.attrs["offset"] = start_0 if unit == "s" else start_0 / trace.frequency_hz
        return trace

    # -- files --------------------------------------------------------------------------
    def to_csv(self, path, *, overwrite: bool = False) -> Path:
        """Write the jitterlab CSV format (metadata in ``# key: <json>`` lines); lossless.

        Like every ``to_*`` writer, it refuses to replace an existing file unless
        ``overwrite=True``; the file appears whole or not at all (atomic).
        """
        from .writers import write_csv

        return write_csv(self, path, overwrite=overwrite)

    def to_parquet(self, path, *, overwrite: bool = False) -> Path:
        """Write Parquet (metadata as JSON in the schema metadata); lossless."""
        from .writers import write_parquet

        return write_parquet(self, path, overwrite=overwrite)

    def to_netcdf(self, path, *, overwrite: bool = False) -> Path:
        """Write netCDF via xarray (dimension ``event``); lossless."""
        from .writers import write_netcdf

        return write_netcdf(self, path, overwrite=overwrite)

    def to_jitsim(self, path, *, overwrite: bool = False) -> Path:
        """Write jitSim's two-column table (values in :attr:`unit`); lossless."""
        from .writers import write_jitsim

        return write_jitsim(self, path, overwrite=overwrite)

    def to_loggopsim(self, path, *, overwrite: bool = False) -> Path:
        """Write a LogGOPSim noise trace (``<start ns>\\t<duration ns>``); rounds to 1 ns."""
        from .writers import write_loggopsim

        return write_loggopsim(self, path, overwrite=overwrite)
