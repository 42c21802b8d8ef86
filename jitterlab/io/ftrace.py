"""Kernel trace events as text: ftrace's ``trace`` / ``trace_pipe`` files and
``trace-cmd report`` output.

:func:`read_ftrace` turns the text into a tidy :class:`pandas.DataFrame`, one row per event,
with the fields of the events that explain operating-system noise parsed into columns
(:data:`EVENT_FIELDS`): the timer interrupt (``irq_vectors:local_timer_entry/exit`` and the
other vectors), device interrupts (``irq:irq_handler_entry/exit``), softirqs
(``irq:softirq_entry/exit/raise``, vector and action name), scheduling
(``sched:sched_switch``, ``sched:sched_wakeup``), hrtimer callbacks
(``timer:hrtimer_expire_entry/exit``) and the osnoise tracepoints (``osnoise:*_noise``,
``osnoise:sample_threshold``) and per-period summary lines of the osnoise tracer (see
:mod:`jitterlab.io.osnoise`). Other events are kept with their text in ``body``.

Three layouts are read: the kernel's (``comm-pid [cpu] flags timestamp: event: fields``,
with or without the irq-info flags and the ``(tgid)`` column), ``trace-cmd report``'s
(``cpus=N`` first, an optional ``instance:`` prefix, trace-cmd's own wording of
``sched_switch``, ``sched_wakeup`` and ``hrtimer_expire_entry``) and ``trace-cmd report
-l``'s (CPU number glued to the flags).

Events lost are never ignored: ``CPU:N [LOST k EVENTS]`` and ``CPU:N [LOST EVENTS]``
(kernel), ``CPU:N [k EVENTS DROPPED]`` and ``CPU:N [EVENTS DROPPED]`` (trace-cmd),
``##### CPU N buffer started ####`` (the older events of that CPU were overwritten) and an
``entries-in-buffer/entries-written`` header whose two numbers differ are kept in
``attrs`` and reported by a :class:`LostEventsWarning`.

Timestamps: with a clock in seconds (``local``, ``global``, ``mono``, ...) the kernel prints
``seconds.microseconds``; with a counter clock (``x86-tsc``, ``counter``) it prints the raw
count, kept exactly in the ``ticks`` column (``timestamp`` is ``ticks / tsc_hz`` when
``tsc_hz`` is given, else NaN).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from .common import read_lines

__all__ = ["read_ftrace", "LostEventsWarning", "EVENT_FIELDS", "parse_fields", "source_lines"]


class LostEventsWarning(UserWarning):
    """A kernel trace says that events were lost (overwritten or dropped)."""


# --------------------------------------------------------------------------------------
# line layouts
# --------------------------------------------------------------------------------------
_TIMESTAMP_AND_EVENT = (r"(?P<timestamp>\d+(?:\.\d+)?):\s*"
                        r"(?:(?P<event>[A-Za-z_]\w*):(?:\s+|\Z))?(?P<body>.*)\Z")
#: the kernel's layout and trace-cmd report's: ``comm-pid [(tgid)] [cpu] [flags] ts:``
_BRACKET_LINE = re.compile(
    r"\s*(?P<comm>.*)-(?P<pid>\d+)\s+(?:\(\s*(?P<tgid>-+|\d+)\)\s+)?\[(?P<cpu>\d+)\]\s+"
    r"(?:(?P<flags>\S{4,6})\s+)?" + _TIMESTAMP_AND_EVENT)
#: trace-cmd report -l: ``comm-pid  <cpu><flags>  ts:``
_LATENCY_LINE = re.compile(
    r"\s*(?P<comm>.*)-(?P<pid>\d+)\s+(?P<cpu>\d+)(?P<flags>[^\s\d]\S{3,5})\s+"
    + _TIMESTAMP_AND_EVENT)
_TRACER = re.compile(r"#\s*tracer:\s*(\S+)")
_ENTRIES = re.compile(r"#\s*entries-in-buffer/entries-written:\s*(\d+)/(\d+)\s+#P:(\d+)")
_BUFFER_STARTED = re.compile(r"#+\s*CPU\s+(\d+)\s+buffer started\s*#+\Z")
_LOST = re.compile(r"CPU:\s*(\d+)\s+\[(?:LOST (\d+) EVENTS|LOST EVENTS|(\d+) EVENTS DROPPED"
                   r"|EVENTS DROPPED)\]\Z")
_TRACE_CMD_HEADER = re.compile(r"(?:cpus=(\d+)|version\s*=\s*(\S+)|CPU\s+(\d+)\s+is empty)\Z")
_INSTANCE_PREFIX = re.compile(r"(?P<instance>[^\s:]+): (?P<rest>.*)\Z")

# --------------------------------------------------------------------------------------
# event fields
# --------------------------------------------------------------------------------------
_NS_TIME = r"start (?P<start>\d+\.\d{9}) duration (?P<duration>\d+) ns"


def _fields(*patterns: str) -> list[re.Pattern]:
    return [re.compile(pattern + r"\s*\Z") for pattern in patterns]


_VECTOR = _fields(r"vector=(?P<vector>\d+)")
_SOFTIRQ = _fields(r"vec=(?P<vec>\d+) \[action=(?P<action>\w+)\]")
_HRTIMER = _fields(r"hrtimer=(?P<hrtimer>\S+)")
#: event name -> its layouts (kernel's first, then trace-cmd's); named groups are columns
EVENT_FIELDS: dict[str, list[re.Pattern]] = {
    **{name: _VECTOR for name in (
        "local_timer_entry", "local_timer_exit", "reschedule_entry", "reschedule_exit",
        "call_function_entry", "call_function_exit", "call_function_single_entry",
        "call_function_single_exit", "irq_work_entry", "irq_work_exit",
        "error_apic_entry", "error_apic_exit", "spurious_apic_entry",
        "spurious_apic_exit", "thermal_apic_entry", "thermal_apic_exit",
        "x86_platform_ipi_entry", "x86_platform_ipi_exit")},
    "irq_handler_entry": _fields(r"irq=(?P<irq>\d+) name=(?P<name>.*?)"),
    "irq_handler_exit": _fields(r"irq=(?P<irq>\d+) ret=(?P<ret>\w+)"),
    "softirq_entry": _SOFTIRQ, "softirq_exit": _SOFTIRQ, "softirq_raise": _SOFTIRQ,
    "sched_switch": _fields(
        r"prev_comm=(?P<prev_comm>.*) prev_pid=(?P<prev_pid>\d+) prev_prio=(?P<prev_prio>-?\d+)"
        r" prev_state=(?P<prev_state>\S+) ==> next_comm=(?P<next_comm>.*)"
        r" next_pid=(?P<next_pid>\d+) next_prio=(?P<next_prio>-?\d+)",
        r"(?P<prev_comm>.*):(?P<prev_pid>\d+) \[(?P<prev_prio>-?\d+)\] (?P<prev_state>\S+)"
        r" ==> (?P<next_comm>.*):(?P<next_pid>\d+) \[(?P<next_prio>-?\d+)\]"),
    **{name: _fields(
        r"comm=(?P<woken_comm>.*) pid=(?P<woken_pid>\d+) prio=(?P<woken_prio>-?\d+)"
        r"(?: success=\d+)? target_cpu=(?P<target_cpu>\d+)",
        r"(?P<woken_comm>.*):(?P<woken_pid>\d+) \[(?P<woken_prio>-?\d+)\]"
        r"(?: success=\d+)? CPU:(?P<target_cpu>\d+)")
       for name in ("sched_wakeup", "sched_wakeup_new", "sched_waking")},
    "hrtimer_expire_entry": _fields(
        r"hrtimer=(?P<hrtimer>\S+) function=(?P<function>\S+) now=(?P<now>\d+)",
        r"hrtimer=(?P<hrtimer>\S+) now=(?P<now>\d+) function=(?P<function>\S+?)"
        r"(?:/0x[0-9a-f]+)?"),
    "hrtimer_expire_exit": _HRTIMER, "hrtimer_cancel": _HRTIMER,
    "thread_noise": _fields(r"\s*(?P<thread_comm>.*):(?P<thread_pid>\d+) " + _NS_TIME),
    "softirq_noise": _fields(r"\s*(?P<action>\w+):(?P<vec>\d+) " + _NS_TIME),
    "irq_noise": _fields(r"\s*(?P<name>.*):(?P<vector>\d+) " + _NS_TIME),
    "nmi_noise": _fields(_NS_TIME),
    "sample_threshold": _fields(_NS_TIME + r" interferences? (?P<interference>\d+)"),
    # the osnoise tracer's per-period summary line (no event name in the text)
    "osnoise": _fields(
        r"(?P<runtime>\d+)\s+(?P<noise>\d+)\s+(?P<cpu_available_percent>\d+\.\d+)\s+"
        r"(?P<max_single_noise>\d+)\s+(?P<hw_count>\d+)\s+(?P<nmi_count>\d+)\s+"
        r"(?P<irq_count>\d+)\s+(?P<softirq_count>\d+)\s+(?P<thread_count>\d+)"),
}

#: fields converted from the printed unit to seconds: field -> printed units per second
_SECONDS = {"duration": 1e9, "runtime": 1e6, "noise": 1e6, "max_single_noise": 1e6}
#: fields kept as text
_TEXT = {"name", "action", "prev_comm", "next_comm", "prev_state", "woken_comm", "hrtimer",
         "function", "thread_comm", "ret"}
#: fields that are floats as printed
_FLOAT = {"start", "cpu_available_percent"}


def _convert(field: str, text: str):
    if field in _TEXT:
        return text
    if field == "start":  # seconds.nanoseconds, exact to the nanosecond in float64 < 1e6 s
        seconds, nanoseconds = text.split(".")
        return int(seconds) + int(nanoseconds) / 1e9
    if field in _FLOAT:
        return float(text)
    if field in _SECONDS:
        return int(text) / _SECONDS[field]
    return int(text)


def parse_fields(event: str, body: str) -> dict | None:
    """The fields of one event's text as a dict, ``{}`` for an event not in
    :data:`EVENT_FIELDS`, None when the text does not match the event's layout.

    Times are converted to seconds (``start``, ``duration``, ``runtime``, ``noise``,
    ``max_single_noise``); ``now`` of ``hrtimer_expire_entry`` stays in nanoseconds of the
    hrtimer's clock, as printed.
    """
    patterns = EVENT_FIELDS.get(event)
    if patterns is None:
        return {}
    for pattern in patterns:
        match = pattern.match(body)
        if match:
            if event == "osnoise":
                _check_available(match)
            return {key: _convert(key, value) for key, value in match.groupdict().items()
                    if value is not None}
    return None


def _check_available(match: re.Match) -> None:
    """The kernel prints the % of CPU available as floor(10⁷ (runtime − noise) / runtime)
    with five decimals: a line where it does not follow is damaged."""
    runtime, noise = int(match.group("runtime")), int(match.group("noise"))
    printed = int(match.group("cpu_available_percent").replace(".", ""))
    if runtime and printed != (runtime - noise) * 10_000_000 // runtime:
        raise ValueError(f"% of CPU available {match.group('cpu_available_percent')} does "
                         f"not follow from runtime {runtime} us and noise {noise} us")


# --------------------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------------------
def source_lines(source) -> tuple[str, list[str]]:
    """``(name, lines)`` of a path (gzip read transparently) or of text with newlines."""
    if isinstance(source, str) and "\n" in source:
        return "<text>", [line.removesuffix("\r") for line in source.split("\n")]
    if not isinstance(source, str | Path):
        raise TypeError(f"source must be a path or the trace as text, got "
                        f"{type(source).__name__}")
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (a trace given as text has several "
                                "lines; a single line is taken for a path)")
    return path.name, read_lines(path)


class _Reader:
    """State of one pass over a trace's lines."""

    def __init__(self, name: str):
        self.name = name
        self.attrs: dict = {"source": name, "format": "ftrace", "tracer": None,
                            "entries_in_buffer": None, "entries_written": None,
                            "n_cpus": None, "buffer_started_cpus": [], "lost": [],
                            "instances": []}
        self.columns: dict[str, list] = {key: [] for key in (
            "cpu", "ticks", "timestamp", "comm", "pid", "tgid", "flags", "event", "body")}
        self.fields: list[dict] = []
        self.counter_clock: bool | None = None
        self.pending_lost: dict[int, list[dict]] = {}

    def fail(self, number: int, line: str, why: str):
        raise ValueError(f"{self.name}, line {number}: {why}: {line.strip()[:160]!r}")

    def header(self, number: int, line: str) -> bool:
        """Consume a header, lost-event or trace-cmd line; True when it was one."""
        stripped = line.strip()
        if not stripped:
            return True
        if stripped.startswith("#"):
            if match := _BUFFER_STARTED.match(stripped):
                self.attrs["buffer_started_cpus"].append(int(match.group(1)))
            elif match := _TRACER.match(stripped):
                self.attrs["tracer"] = match.group(1)
            elif match := _ENTRIES.match(stripped):
                in_buffer, written, cpus = map(int, match.groups())
                self.attrs.update(entries_in_buffer=in_buffer, entries_written=written,
                                  n_cpus=cpus)
            return True
        if match := _LOST.match(stripped):
            cpu = int(match.group(1))
            count = match.group(2) or match.group(3)
            record = {"cpu": cpu, "count": int(count) if count else None, "line": number,
                      "before_timestamp": None}
            self.attrs["lost"].append(record)
            self.pending_lost.setdefault(cpu, []).append(record)
            return True
        if match := _TRACE_CMD_HEADER.match(stripped):
            self.attrs["format"] = "trace-cmd report"
            if match.group(1):
                self.attrs["n_cpus"] = int(match.group(1))
            elif match.group(2):
                self.attrs["trace_cmd_version"] = match.group(2)
            else:
                self.attrs.setdefault("empty_cpus", []).append(int(match.group(3)))
            return True
        return False

    def event(self, number: int, line: str) -> None:
        match = None
        prefixed = (_INSTANCE_PREFIX.match(line)
                    if self.attrs["format"] == "trace-cmd report" else None)
        if prefixed:  # trace-cmd names the buffer of an instance first
            if self.header(number, prefixed.group("rest")):
                return
            match = (_BRACKET_LINE.match(prefixed.group("rest"))
                     or _LATENCY_LINE.match(prefixed.group("rest")))
            if match and prefixed.group("instance") not in self.attrs["instances"]:
                self.attrs["instances"].append(prefixed.group("instance"))
        match = match or _BRACKET_LINE.match(line) or _LATENCY_LINE.match(line)
        if match is None:
            self.fail(number, line, "not an ftrace event line (expected 'comm-pid [cpu] "
                      "flags timestamp: event: fields')")
        event, body = match.group("event"), match.group("body").strip()
        if event is None:  # only the osnoise tracer's summary has no event name
            if (self.attrs["tracer"] not in (None, "osnoise")
                    or not EVENT_FIELDS["osnoise"][0].match(body)):
                self.fail(number, line, "a line without an event name (only the osnoise "
                          "tracer's per-period summary is read without one)")
            event = "osnoise"
        try:
            fields = parse_fields(event, body)
        except ValueError as err:
            self.fail(number, line, str(err))
        if fields is None:
            self.fail(number, line, f"fields of {event!r} not in the kernel's or "
                      "trace-cmd's layout")
        stamp = match.group("timestamp")
        counter = "." not in stamp
        if self.counter_clock is None:
            self.counter_clock = counter
        elif counter != self.counter_clock:
            self.fail(number, line, "timestamp in seconds and in counter ticks mixed")
        cpu = int(match.group("cpu"))
        tgid = match.groupdict().get("tgid")
        column = self.columns
        column["cpu"].append(cpu)
        column["ticks"].append(int(stamp) if counter else None)
        column["timestamp"].append(np.nan if counter else float(stamp))
        column["comm"].append(match.group("comm").strip())
        column["pid"].append(int(match.group("pid")))
        column["tgid"].append(int(tgid) if tgid and tgid.isdigit() else None)
        column["flags"].append(match.group("flags"))
        column["event"].append(event)
        column["body"].append(body)
        self.fields.append(fields)
        for record in self.pending_lost.pop(cpu, ()):
            record["before_timestamp"] = float(stamp) if not counter else int(stamp)

    def frame(self, tsc_hz: float | None) -> pd.DataFrame:
        frame = pd.DataFrame({
            "cpu": np.asarray(self.columns["cpu"], dtype=np.int64),
            "timestamp": np.asarray(self.columns["timestamp"], dtype=np.float64),
            "ticks": pd.array(self.columns["ticks"], dtype="Int64"),
            "event": pd.array(self.columns["event"], dtype=object),
            "comm": pd.array(self.columns["comm"], dtype=object),
            "pid": np.asarray(self.columns["pid"], dtype=np.int64),
            "tgid": pd.array(self.columns["tgid"], dtype="Int64"),
            "flags": pd.array(self.columns["flags"], dtype=object),
        })
        fields = pd.DataFrame.from_records(self.fields, index=frame.index)
        for name in fields.columns:
            if name not in _TEXT and name not in _FLOAT and name not in _SECONDS:
                fields[name] = fields[name].astype("Int64")
            elif name in _FLOAT or name in _SECONDS:
                fields[name] = fields[name].astype(np.float64)
        frame = pd.concat([frame, fields], axis=1)
        frame["body"] = pd.array(self.columns["body"], dtype=object)
        if self.counter_clock and tsc_hz is not None:
            frame["timestamp"] = frame["ticks"].to_numpy(dtype=np.float64) / tsc_hz
        self.attrs["timestamp_unit"] = "ticks" if self.counter_clock else "s"
        self.attrs["tsc_hz"] = tsc_hz if self.counter_clock else None
        frame.attrs.update(self.attrs)
        return frame


def _report_losses(attrs: dict) -> None:
    written, in_buffer = attrs["entries_written"], attrs["entries_in_buffer"]
    attrs["overwritten"] = (written - in_buffer
                            if written is not None and in_buffer is not None else 0)
    counted = [record["count"] for record in attrs["lost"]]
    attrs["lost_events"] = (None if None in counted else sum(counted)) if counted else 0
    problems = []
    if attrs["lost"]:
        by_cpu: dict[int, list] = {}
        for record in attrs["lost"]:
            by_cpu.setdefault(record["cpu"], []).append(record["count"])
        problems.append("events lost on " + ", ".join(
            f"CPU {cpu}: " + ("an unknown number" if None in counts else str(sum(counts)))
            for cpu, counts in sorted(by_cpu.items())))
    if attrs["overwritten"]:
        problems.append(f"{attrs['overwritten']} events overwritten (entries-written "
                        f"{written}, entries-in-buffer {in_buffer})")
    if attrs["buffer_started_cpus"]:
        problems.append("the older events of CPU(s) "
                        f"{', '.join(map(str, attrs['buffer_started_cpus']))} were "
                        "overwritten ('buffer started' marks)")
    if problems:
        warnings.warn(f"{attrs['source']}: {'; '.join(problems)}; the recording has gaps "
                      "(see attrs['lost'])", LostEventsWarning, stacklevel=3)


def read_ftrace(source, *, tsc_hz: float | None = None,
                event_filter: Callable[[str], bool] | None = None) -> pd.DataFrame:
    """Kernel trace events from ftrace's text output or ``trace-cmd report``.

    Parameters
    ----------
    source : path or str
        A file (gzip read transparently) holding the ``trace`` file, ``trace_pipe``
        output or ``trace-cmd report`` output, or that text itself.
    tsc_hz : float, optional
        Rate of the counter when the trace clock is a counter (``x86-tsc``): ``timestamp``
        is then ``ticks / tsc_hz``. Ignored for traces in seconds. [Hz]
    event_filter : callable, optional
        Keep only the events whose name it accepts (all by default).

    Returns
    -------
    pandas.DataFrame
        One row per event, in file order: ``cpu``, ``timestamp`` [s] (NaN for a counter
        clock without ``tsc_hz``), ``ticks`` (the counter value; <NA> for clocks in
        seconds), ``event`` (name without its system, e.g. ``"softirq_entry"``), ``comm``
        and ``pid`` of the task the line names, ``tgid`` (when recorded), ``flags`` (the
        irq-info column, e.g. ``"d.h1."``), the parsed fields of the known events
        (:data:`EVENT_FIELDS`: ``vector``, ``irq``, ``name``, ``ret``, ``vec``,
        ``action``, ``prev_comm``, ``prev_pid``, ``prev_prio``, ``prev_state``,
        ``next_comm``, ``next_pid``, ``next_prio``, ``woken_comm``, ``woken_pid``,
        ``target_cpu``, ``hrtimer``, ``function``, ``now`` [ns], ``start`` [s],
        ``duration`` [s], ...; missing where an event has no such field) and ``body`` (the
        event's text). ``attrs``: ``source``, ``format`` (``"ftrace"`` or ``"trace-cmd
        report"``), ``tracer``, ``entries_in_buffer``, ``entries_written``, ``n_cpus``,
        ``overwritten`` (written − in buffer), ``lost`` (one dict per lost-events line:
        ``cpu``, ``count`` or None when unknown, ``line``, ``before_timestamp``: the
        timestamp of that CPU's next event), ``lost_events`` (their sum, None when one is
        unknown), ``buffer_started_cpus``, ``instances`` (trace-cmd buffer names),
        ``timestamp_unit`` (``"s"`` or ``"ticks"``), ``tsc_hz``.

    Raises
    ------
    ValueError
        A line that is not an event line, or a known event whose fields do not match its
        layout, naming the file and the line.

    Warns
    -----
    LostEventsWarning
        When the trace says events were lost or overwritten (the counts per CPU).

    Examples
    --------
    >>> text = '''# tracer: nop
    ... #
    ...   python-2263  [001] d.h..  3700.852419: local_timer_entry: vector=236
    ...   python-2263  [001] d.h..  3700.852431: local_timer_exit: vector=236
    ... '''
    >>> events = read_ftrace(text)
    >>> print(events[["cpu", "event", "vector"]].to_string(index=False))
     cpu             event  vector
       1 local_timer_entry     236
       1  local_timer_exit     236
    """
    if tsc_hz is not None and not (isinstance(tsc_hz, int | float) and np.isfinite(tsc_hz)
                                   and tsc_hz > 0):
        raise ValueError(f"tsc_hz must be a positive rate in Hz, got {tsc_hz!r}")
    name, lines = source_lines(source)
    reader = _Reader(name)
    for number, line in enumerate(lines, start=1):
        if not reader.header(number, line):
            reader.event(number, line)
    frame = reader.frame(tsc_hz)
    _report_losses(frame.attrs)
    if event_filter is not None:
        attrs = frame.attrs
        frame = frame[frame["event"].map(event_filter).astype(bool)].reset_index(drop=True)
        frame.attrs = attrs
    return frame
