"""Output of Linux's osnoise tracer and of ``rtla osnoise top`` / ``rtla osnoise hist``.

The osnoise tracer (Documentation/trace/osnoise-tracer.rst of the Linux sources) runs a
busy loop per CPU inside the kernel and attributes each detour to its cause, the idea of
KTAU (seed 003) in the mainline kernel. Its output comes in three forms:

* the tracer's ``trace`` file: one summary line per CPU and period (runtime, noise, % of
  CPU available, largest single noise, interference counters) and, when enabled, the
  tracepoints ``osnoise:sample_threshold`` (one detour: start, duration, number of
  interferences) and ``osnoise:irq_noise``, ``softirq_noise``, ``thread_noise``,
  ``nmi_noise`` (one interference: cause, start, net duration) —
  :func:`read_osnoise_periods` and :func:`read_osnoise_events`;
* ``rtla osnoise top`` (and ``rtla hwnoise``): the per-CPU totals —
  :func:`read_rtla_osnoise_top`;
* ``rtla osnoise hist``: the histogram of the ``sample_threshold`` durations per CPU —
  :func:`read_rtla_osnoise_hist`.

All times are returned in seconds. rtla's "events missed" notice is kept in
``attrs["missed_events"]`` and reported by a :class:`~jitterlab.io.ftrace.LostEventsWarning`.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .ftrace import LostEventsWarning, read_ftrace, source_lines

__all__ = ["read_osnoise_events", "read_osnoise_periods", "read_rtla_osnoise_top",
           "read_rtla_osnoise_hist", "OsnoiseHistogram", "NOISE_EVENTS"]

#: osnoise tracepoints: event name -> the source of noise it reports
NOISE_EVENTS = {"sample_threshold": "sample", "nmi_noise": "nmi", "irq_noise": "irq",
                "softirq_noise": "softirq", "thread_noise": "thread"}
_EVENT_COLUMNS = ["cpu", "timestamp", "event", "source", "comm", "pid", "start", "duration",
                  "interference", "name", "vector", "action", "vec", "thread_comm",
                  "thread_pid"]
_PERIOD_COLUMNS = ["cpu", "timestamp", "comm", "pid", "runtime", "noise",
                   "cpu_available_percent", "max_single_noise", "hw_count", "nmi_count",
                   "irq_count", "softirq_count", "thread_count"]

_ANSI = re.compile(r"\x1b(?:\[[0-9;]*m|c)")
_MISSED = re.compile(r"(\d+) \((\d+(?:\.\d+)?)%\) events missed, results might not be "
                     r"accurate\Z")
_MISSED_UNKNOWN = "unknown number of events missed, results might not be accurate"
#: rtla's messages that are not part of the tables
_NOTICES = re.compile(r"(?:Saving trace to .*|rtla (?:osnoise|hwnoise) hit stop tracing"
                      r"|\s*Printing stack trace:?.*)\Z")
_DURATION = re.compile(r"(\d+) (\d\d):(\d\d):(\d\d)")
_TOP_ROW = re.compile(r"\s*(\d+) #(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\.(\d{5})\s*(\d+)\s+(\d+)"
                      r"\s+(\d+)\s+(\d+)(?:\s+(\d+)\s+(\d+)\s+(\d+))?\s*\Z")
_UNIT = {"us": 1e-6, "ns": 1e-9}


def _select(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    attrs = frame.attrs
    kept = frame[[name for name in columns if name in frame.columns]].reset_index(drop=True)
    kept.attrs = attrs
    return kept


def read_osnoise_events(source) -> pd.DataFrame:
    """The osnoise tracepoints of a trace (``sample_threshold``, ``*_noise``).

    Parameters
    ----------
    source : path or str
        The ``trace`` file (or ``trace_pipe``/``trace-cmd report`` output), or its text.

    Returns
    -------
    pandas.DataFrame
        One row per tracepoint: ``cpu``, ``timestamp`` [s] (when the line was written),
        ``event``, ``source`` (``"sample"``, ``"nmi"``, ``"irq"``, ``"softirq"``,
        ``"thread"``), ``comm``/``pid`` of the line, ``start`` [s] and ``duration`` [s]
        of the noise (net of nested interferences for the ``*_noise`` events),
        ``interference`` (sample_threshold: number of interferences), ``name`` and
        ``vector`` (irq_noise), ``action`` and ``vec`` (softirq_noise), ``thread_comm`` and
        ``thread_pid`` (thread_noise). Other events of the trace are left out. ``attrs``
        as :func:`jitterlab.io.read_ftrace`.
    """
    frame = read_ftrace(source, event_filter=NOISE_EVENTS.__contains__)
    frame["source"] = frame["event"].map(NOISE_EVENTS)
    return _select(frame, _EVENT_COLUMNS)


def read_osnoise_periods(source) -> pd.DataFrame:
    """The osnoise tracer's summary lines (one per CPU and period).

    Parameters
    ----------
    source : path or str
        The ``trace`` file of the osnoise tracer (``# tracer: osnoise``), or its text.

    Returns
    -------
    pandas.DataFrame
        ``cpu``, ``timestamp`` [s], ``comm``/``pid`` (the osnoise thread), ``runtime``
        [s] (time the loop ran), ``noise`` [s] (sum of noise), ``cpu_available_percent``
        [%], ``max_single_noise`` [s], and the interference counters ``hw_count``,
        ``nmi_count``, ``irq_count``, ``softirq_count``, ``thread_count``.

    Raises
    ------
    ValueError
        When the text is not the osnoise tracer's (naming its tracer), or a summary line
        whose % of CPU available does not follow from its runtime and noise (naming the
        line).
    """
    frame = read_ftrace(source, event_filter="osnoise".__eq__)
    if frame.attrs["tracer"] != "osnoise":
        raise ValueError(f"{frame.attrs['source']}: not the osnoise tracer's output "
                         f"(header says tracer {frame.attrs['tracer']!r})")
    return _select(frame, _PERIOD_COLUMNS)


def _missed(line: str, attrs: dict) -> bool:
    if line == _MISSED_UNKNOWN:
        attrs["missed_events"] = None
        return True
    match = _MISSED.match(line)
    if match:
        attrs["missed_events"] = int(match.group(1))
        attrs["missed_percent"] = float(match.group(2))
        return True
    return False


def _warn_missed(attrs: dict) -> None:
    if attrs["missed_events"] != 0:
        count = ("an unknown number of" if attrs["missed_events"] is None
                 else str(attrs["missed_events"]))
        warnings.warn(f"{attrs['source']}: rtla reports {count} events missed; its figures "
                      "may be low", LostEventsWarning, stacklevel=3)


def _duration(text: str, name: str, number: int) -> float:
    match = _DURATION.search(text)
    if match is None:
        raise ValueError(f"{name}, line {number}: duration not in rtla's 'D HH:MM:SS' "
                         f"form: {text.strip()!r}")
    days, hours, minutes, seconds = map(int, match.groups())
    return float(((days * 24 + hours) * 60 + minutes) * 60 + seconds)


def read_rtla_osnoise_top(source) -> pd.DataFrame:
    """The per-CPU summary table of ``rtla osnoise top`` (or ``rtla hwnoise``).

    When the output holds several refreshes (rtla without ``-q`` redraws the table every
    second), the last one is returned (``attrs["updates"]`` counts them).

    Parameters
    ----------
    source : path or str
        A file holding rtla's output (terminal escapes are removed), or the text.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``cpu``: ``periods`` (osnoise periods summed), ``runtime`` [s],
        ``noise`` [s], ``cpu_available_percent`` [%], ``max_noise`` [s] (largest noise of
        one period), ``max_single_noise`` [s], ``hw_count``, ``nmi_count`` and, except
        for hwnoise, ``irq_count``, ``softirq_count``, ``thread_count``. ``attrs``:
        ``source``, ``mode`` (``"osnoise"`` or ``"hwnoise"``), ``duration`` [s],
        ``updates``, ``missed_events`` (0, a count, or None when rtla says unknown).

    Raises
    ------
    ValueError
        An unexpected line, a row whose % of CPU available does not follow from its
        runtime and noise, or no table at all (naming the file and line).
    """
    name, lines = source_lines(source)
    attrs = {"source": name, "mode": None, "duration": None, "updates": 0,
             "missed_events": 0}
    rows: list[dict] = []
    for number, raw in enumerate(lines, start=1):
        line = _ANSI.sub("", raw).rstrip()
        stripped = line.strip()
        if not stripped or _NOTICES.match(stripped) or _missed(stripped, attrs):
            continue
        if stripped in ("Operating System Noise", "Hardware-related Noise"):
            attrs["mode"] = "osnoise" if stripped.startswith("Operating") else "hwnoise"
        elif stripped.startswith("duration:"):
            attrs["duration"] = _duration(stripped, name, number)
            attrs["updates"] += 1
            rows = []
        elif stripped.startswith("CPU Period"):
            continue
        elif match := _TOP_ROW.match(line):
            values = match.groups()
            runtime, noise = int(values[2]), int(values[3])
            printed = int(values[4]) * 100_000 + int(values[5])
            if runtime and printed != (runtime - noise) * 10_000_000 // runtime:
                raise ValueError(f"{name}, line {number}: % CPU available "
                                 f"{values[4]}.{values[5]} does not follow from runtime "
                                 f"{runtime} us and noise {noise} us")
            row = {"cpu": int(values[0]), "periods": int(values[1]),
                   "runtime": runtime * 1e-6, "noise": noise * 1e-6,
                   "cpu_available_percent": printed / 1e5,
                   "max_noise": int(values[6]) * 1e-6,
                   "max_single_noise": int(values[7]) * 1e-6,
                   "hw_count": int(values[8]), "nmi_count": int(values[9])}
            if values[10] is not None:
                row.update(irq_count=int(values[10]), softirq_count=int(values[11]),
                           thread_count=int(values[12]))
            rows.append(row)
        else:
            raise ValueError(f"{name}, line {number}: not a line of rtla osnoise top's "
                             f"table: {stripped[:160]!r}")
    if not rows:
        raise ValueError(f"{name}: no per-CPU row of rtla osnoise top found")
    table = pd.DataFrame(rows).set_index("cpu")
    table.attrs.update(attrs)
    _warn_missed(attrs)
    return table


@dataclass
class OsnoiseHistogram:
    """``rtla osnoise hist`` output.

    Attributes
    ----------
    counts : pandas.DataFrame
        Index ``bucket_start`` [s] (rows rtla printed; all-zero rows are omitted unless
        rtla ran with ``--with-zeros``), one column per CPU: the number of
        ``sample_threshold`` noises in that bucket.
    over : pandas.Series
        Per CPU: noises beyond the last bucket.
    summary : pandas.DataFrame
        Index ``cpu``: ``count``, ``min`` [s], ``avg`` [s], ``max`` [s].
    time_unit : float
        rtla's printed unit (1e-6 for "us", 1e-9 for "ns"). [s]
    duration : float or None
        Length of the session. [s]
    missed_events : int or None
        rtla's count of missed events (None: unknown).
    source : str
        File name, or ``"<text>"``.
    """

    counts: pd.DataFrame
    over: pd.Series
    summary: pd.DataFrame
    time_unit: float
    duration: float | None
    missed_events: int | None
    source: str
    attrs: dict = field(default_factory=dict)


def _hist_values(text: str, n_cpus: int, name: str, number: int, kind=int) -> list:
    values = text.split()
    if len(values) != n_cpus:
        raise ValueError(f"{name}, line {number}: {len(values)} value(s) for {n_cpus} "
                         f"CPU column(s): {text.strip()[:160]!r}")
    try:
        return [np.nan if value == "-" else kind(value) for value in values]
    except ValueError:
        raise ValueError(f"{name}, line {number}: not numbers: {text.strip()[:160]!r}") \
            from None


def read_rtla_osnoise_hist(source) -> OsnoiseHistogram:
    """The histogram printed by ``rtla osnoise hist``.

    Parameters
    ----------
    source : path or str
        A file holding rtla's output, or the text.

    Returns
    -------
    OsnoiseHistogram
        Counts per bucket and CPU, the overflow and the per-CPU summary, in seconds.

    Raises
    ------
    ValueError
        Output of another rtla tool, output printed with ``--no-index`` (the bucket of a
        row is then unknown), a row with the wrong number of values, or a CPU whose
        buckets plus overflow differ from its ``count`` (naming the file and line).
    """
    name, lines = source_lines(source)
    attrs = {"source": name, "missed_events": 0}
    unit, duration, cpus = None, None, None
    buckets: dict[int, list[int]] = {}
    summary: dict[str, tuple[int, list]] = {}
    for number, raw in enumerate(lines, start=1):
        stripped = _ANSI.sub("", raw).strip()
        if not stripped or _NOTICES.match(stripped) or _missed(stripped, attrs):
            continue
        if stripped.startswith("#"):
            if "histogram" in stripped and "osnoise" not in stripped:
                raise ValueError(f"{name}, line {number}: not rtla osnoise hist output: "
                                 f"{stripped!r}")
            if match := re.search(r"Time unit is \w+ \((us|ns)\)", stripped):
                unit = _UNIT[match.group(1)]
            elif stripped.startswith("# Duration:"):
                duration = _duration(stripped, name, number)
            continue
        label, _, rest = stripped.partition(" ")
        if label == "Index":
            cpus = [int(word.removeprefix("CPU-")) for word in rest.split()]
        elif label.startswith("CPU-"):
            raise ValueError(f"{name}, line {number}: printed with --no-index, so the "
                             "bucket of each row is unknown; run rtla without it")
        elif label.endswith(":") and label[:-1] in ("over", "count", "min", "avg", "max"):
            if cpus is None:
                cpus = []
            kind = float if label == "avg:" else int
            if not cpus and rest.strip() == "0":  # rtla's line when nothing was recorded
                summary[label[:-1]] = (number, [])
            else:
                summary[label[:-1]] = (number, _hist_values(rest, len(cpus), name, number,
                                                            kind))
        elif label.isdigit() and cpus is not None:
            buckets[int(label)] = _hist_values(rest, len(cpus), name, number)
        else:
            raise ValueError(f"{name}, line {number}: not a line of rtla osnoise hist: "
                             f"{stripped[:160]!r}")
    if cpus is None:
        raise ValueError(f"{name}: no 'Index CPU-nnn' header of rtla osnoise hist found")
    if unit is None:
        unit = 1e-6  # rtla's default; the header says otherwise when -N was used
        attrs["time_unit_assumed"] = True
    counts = pd.DataFrame.from_dict(buckets, orient="index", columns=cpus, dtype=np.int64)
    counts.index = pd.Index(counts.index.to_numpy(dtype=np.float64) * unit,
                            name="bucket_start")
    counts.columns.name = "cpu"
    over = pd.Series(summary.get("over", (0, [0] * len(cpus)))[1] or [0] * len(cpus),
                     index=pd.Index(cpus, name="cpu"), name="over", dtype=np.int64)
    table = pd.DataFrame(index=pd.Index(cpus, name="cpu"))
    for key in ("count", "min", "avg", "max"):
        if key in summary and summary[key][1]:
            values = np.asarray(summary[key][1], dtype=np.float64)
            table[key] = values.astype(np.int64) if key == "count" else values * unit
    if "count" in table:
        expected = counts.sum(axis=0).to_numpy() + over.to_numpy()
        wrong = [cpu for cpu, total, count in zip(cpus, expected, table["count"], strict=True)
                 if total != count]
        if wrong:
            raise ValueError(f"{name}, line {summary['count'][0]}: the buckets and 'over' "
                             f"of CPU(s) {wrong} do not add up to their count")
    histogram = OsnoiseHistogram(counts=counts, over=over, summary=table, time_unit=unit,
                                 duration=duration, missed_events=attrs["missed_events"],
                                 source=name, attrs=attrs)
    _warn_missed(attrs)
    return histogram
