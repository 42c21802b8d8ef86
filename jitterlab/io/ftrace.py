"""Kernel trace events as text: ftrace's ``trace`` / ``trace_pipe`` files and
``trace-cmd report`` output.

:func:`read_ftrace` turns the text into a tidy :class:`pandas.DataFrame`, one row per event,
with the fields of the events that explain operating-system noise parsed into columns
(:data:`EVENT_FIELDS`): the timer interrupt (``irq_vectors:local_timer_entry/exit`` and the
other vectors), device interrupts (``irq:irq_handler_entry/exit``), softirqs
(``irq:softirq_entry/exit/raise``, vector and action name), scheduling
(``sched:sched_switch``, ``sched:sched_wakeup``), hrtimer callbacks
(``timer:hrtimer_expire_entry/exit``), NMI handlers (``nmi:nmi_handler``, with the time each
took), page faults (``exceptions:page_fault_user/kernel``) and the osnoise tracepoints
(``osnoise:*_noise``,
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

The text is read column by column: one multi-line regex over the whole text splits every
line into its parts, and one regex per event over all that event's bodies gives its fields
(:data:`EVENT_FIELDS`, the same layouts :func:`parse_fields` applies to one line).

Timestamps: with a clock in seconds (``local``, ``global``, ``mono``, ...) the kernel prints
``seconds.microseconds``; with a counter clock (``x86-tsc``, ``counter``) it prints the raw
count, kept exactly in the ``ticks`` column (``timestamp`` is ``ticks / tsc_hz`` when
``tsc_hz`` is given, else NaN).
"""

from __future__ import annotations

import functools
import gc
import operator
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
    # nmi:nmi_handler (print fmt "%ps() delta_ns: %lld handled: %d"): one NMI handler, traced
    # when it returns, with the time it took
    "nmi_handler": _fields(r"(?P<handler>\S+?)\(\) delta_ns: (?P<delta>-?\d+)"
                           r" handled: (?P<handled>\d+)"),
    # exceptions:page_fault_user/kernel ("address=%ps ip=%ps error_code=0x%lx"): no exit event
    **{name: _fields(r"address=(?P<address>\S+) ip=(?P<ip>\S+)"
                     r" error_code=(?P<error_code>0x[0-9a-fA-F]+)")
       for name in ("page_fault_user", "page_fault_kernel")},
    "sample_threshold": _fields(_NS_TIME + r" interferences? (?P<interference>\d+)"),
    # the osnoise tracer's per-period summary line (no event name in the text)
    "osnoise": _fields(
        r"(?P<runtime>\d+)\s+(?P<noise>\d+)\s+(?P<cpu_available_percent>\d+\.\d+)\s+"
        r"(?P<max_single_noise>\d+)\s+(?P<hw_count>\d+)\s+(?P<nmi_count>\d+)\s+"
        r"(?P<irq_count>\d+)\s+(?P<softirq_count>\d+)\s+(?P<thread_count>\d+)"),
}

#: fields converted from the printed unit to seconds: field -> printed units per second
_SECONDS = {"duration": 1e9, "runtime": 1e6, "noise": 1e6, "max_single_noise": 1e6,
            "delta": 1e9}
#: fields kept as text
_TEXT = {"name", "action", "prev_comm", "next_comm", "prev_state", "woken_comm", "hrtimer",
         "function", "thread_comm", "ret", "handler", "address", "ip"}
#: integer fields printed in hexadecimal (``0x...``)
_HEXADECIMAL = {"error_code"}
#: fields that are floats as printed
_FLOAT = {"start", "cpu_available_percent"}


def _seconds_and_nanoseconds(text: str) -> float:
    """``seconds.nanoseconds`` exact to the nanosecond in float64 below 1e6 s."""
    seconds, nanoseconds = text.split(".")
    return int(seconds) + int(nanoseconds) / 1e9


@functools.cache
def _converter(field: str) -> Callable[[str], object]:
    """The function turning a field's printed text into its value."""
    if field in _TEXT:
        return str
    if field == "start":
        return _seconds_and_nanoseconds
    if field in _FLOAT:
        return float
    if field in _HEXADECIMAL:
        return functools.partial(int, base=16)
    if field in _SECONDS:
        factor = _SECONDS[field]
        return lambda text: int(text) / factor
    return int


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
            return {key: _converter(key)(value) for key, value in match.groupdict().items()
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
        if "\r" not in source:
            return "<text>", source.split("\n")
        return "<text>", [line.removesuffix("\r") for line in source.split("\n")]
    if not isinstance(source, str | Path):
        raise TypeError(f"source must be a path or the trace as text, got "
                        f"{type(source).__name__}")
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (a trace given as text has several "
                                "lines; a single line is taken for a path)")
    return path.name, read_lines(path)


# --------------------------------------------------------------------------------------
# reading, column by column
# --------------------------------------------------------------------------------------
_S = r"[^\S\n]"  # white space inside one line of a text of many lines
#: any line of a trace, as one match of a multi-line regex over the whole text: an event line
#: in the kernel's or trace-cmd's layout (with trace-cmd's instance prefix), the latency
#: layout, or anything else (``other``: headers, lost-event marks, errors)
_ANY_LINE = re.compile(
    rf"^(?:(?!{_S}*#)(?:(?P<instance>[^\s:]+): )?"
    rf"(?:{_S}*(?P<comm>.*?)-(?P<pid>\d+){_S}+(?:\({_S}*(?P<tgid>-+|\d+)\){_S}+)?"
    rf"\[(?P<cpu>\d+)\]{_S}+(?:(?P<flags>\S{{4,6}}){_S}+)?"
    rf"|{_S}*(?P<latency_comm>.*?)-(?P<latency_pid>\d+){_S}+(?P<latency_cpu>\d+)"
    rf"(?P<latency_flags>[^\s\d]\S{{3,5}}){_S}+)"
    rf"(?P<timestamp>\d+(?:\.\d+)?):{_S}*(?:(?P<event>[A-Za-z_]\w*):(?:{_S}+|$))?"
    r"(?P<body>.*)|(?P<other>.*))$", re.MULTILINE)


def _transpose(regex: re.Pattern, matches: list[tuple]) -> dict[str, tuple]:
    """The groups of ``findall``'s tuples (a regex of several groups) as columns, by name."""
    columns = list(zip(*matches, strict=True)) if matches else [()] * regex.groups
    return {name: columns[number - 1] for name, number in regex.groupindex.items()}


def _multiline(pattern: re.Pattern, suffix: str) -> str:
    """A field layout (made for one line) for a regex over many lines, its groups renamed."""
    text = pattern.pattern.replace(r"\s", _S).replace(r"\Z", "$")
    return re.sub(r"\(\?P<(\w+)>", rf"(?P<\1{suffix}>", text)


@functools.cache
def _layouts_regex(event: str) -> re.Pattern:
    """One regex over the bodies of ``event`` (one per line): each layout in a group
    ``layout_k`` (empty unless that layout matched), then ``rest`` for a body none fits."""
    branches = [f"(?P<layout_{k}>{_multiline(pattern, f'__{k}')})"
                for k, pattern in enumerate(EVENT_FIELDS[event])]
    return re.compile("^(?:" + "|".join(branches) + "|(?P<rest>.*))$", re.MULTILINE)


class _Failures:
    """The errors found, by line: the first line's is raised (as a line-by-line reader
    would)."""

    def __init__(self, name: str, lines: list[str]):
        self.name, self.lines, self.found = name, lines, []

    def add(self, number: int, why: str) -> None:
        self.found.append((number, len(self.found), why))

    def raise_first(self) -> None:
        if self.found:
            number, _, why = min(self.found)
            line = self.lines[number - 1]
            raise ValueError(f"{self.name}, line {number}: {why}: {line.strip()[:160]!r}")


class _Header:
    """The header, lost-event and trace-cmd lines of a trace, in order."""

    def __init__(self, name: str):
        self.attrs: dict = {"source": name, "format": "ftrace", "tracer": None,
                            "entries_in_buffer": None, "entries_written": None,
                            "n_cpus": None, "buffer_started_cpus": [], "lost": [],
                            "instances": []}

    def read(self, number: int, line: str) -> bool:
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
            count = match.group(2) or match.group(3)
            self.attrs["lost"].append({"cpu": int(match.group(1)),
                                       "count": int(count) if count else None,
                                       "line": number, "before_timestamp": None})
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


def _pick(column, rows: list[int]) -> tuple:
    """``column[row]`` for each of ``rows``, as a tuple (one C call)."""
    if len(rows) > 1:
        return operator.itemgetter(*rows)(column)
    return tuple(column[row] for row in rows)


def _layout_fields(event: str, k: int, texts: dict[str, tuple], hits: list[int],
                   rows: list[int], values: dict[str, list]) -> None:
    """Convert the fields of the bodies (positions ``hits`` among ``rows``) that matched
    layout ``k`` of ``event``: ``values[field]`` gets (rows, values)."""
    every = len(hits) == len(rows)
    target = rows if every else _pick(rows, hits)
    for field in EVENT_FIELDS[event][k].groupindex:
        column = texts[f"{field}__{k}"]
        if not every:
            column = _pick(column, hits)
        values.setdefault(field, []).append((target, list(map(_converter(field), column))))


def _field_columns(events: list[str], bodies: list[str], numbers: list[int],
                   failures: _Failures) -> dict:
    """The fields of the known events, one regex per event over all its bodies."""
    if not events:
        return {}
    codes, names = pd.factorize(np.asarray(events, dtype=object))
    order = np.argsort(codes, kind="stable")
    bounds = np.cumsum(np.bincount(codes, minlength=len(names)))[:-1]
    values: dict[str, list] = {}
    for event, group in zip(names.tolist(), np.split(order, bounds), strict=True):
        if event not in EVENT_FIELDS:
            continue
        rows = group.tolist()
        regex = _layouts_regex(event)
        texts = _transpose(regex, regex.findall("\n".join(_pick(bodies, rows))))
        left = range(len(rows))
        for k in range(len(EVENT_FIELDS[event])):
            layout = texts[f"layout_{k}"]
            if "" not in layout:  # every body left fits this layout
                hits, left = list(left), []
            else:
                hits = [position for position in left if layout[position]]
                left = [position for position in left if not layout[position]]
            if hits:
                _layout_fields(event, k, texts, hits, rows, values)
            if not left:
                break
        for position in left:
            failures.add(numbers[rows[position]], f"fields of {event!r} not in the kernel's "
                         "or trace-cmd's layout")
        if event == "osnoise":
            for row in set(rows) - {rows[position] for position in left}:
                try:
                    _check_available(EVENT_FIELDS["osnoise"][0].match(bodies[row]))
                except ValueError as err:
                    failures.add(numbers[row], str(err))
    size = len(events)
    columns = {}
    for field, pieces in values.items():
        index = np.concatenate([np.asarray(rows, dtype=np.int64) for rows, _ in pieces])
        given = [value for _, chunk in pieces for value in chunk]
        if field in _TEXT:
            column = np.full(size, np.nan, dtype=object)
            column[index] = given
            columns[field] = pd.array(column, dtype=object)
        elif field in _FLOAT or field in _SECONDS:
            column = np.full(size, np.nan)
            column[index] = given
            columns[field] = column
        else:
            column = np.zeros(size, dtype=np.int64)
            column[index] = given
            missing = np.ones(size, dtype=bool)
            missing[index] = False
            columns[field] = pd.arrays.IntegerArray(column, missing)
    return columns


def _read_lines(name: str, lines: list[str]):
    """The header, the event lines' columns (texts), their line numbers, the failures."""
    matches = _ANY_LINE.findall("\n".join(lines))
    if len(matches) != len(lines):
        raise RuntimeError(f"{name}: {len(matches)} matches for {len(lines)} lines")
    texts = _transpose(_ANY_LINE, matches)
    header = _Header(name)
    failures = _Failures(name, lines)
    for index, stamp in enumerate(texts["timestamp"]):
        if stamp:
            continue
        line = lines[index]
        prefixed = (_INSTANCE_PREFIX.match(line)
                    if header.attrs["format"] == "trace-cmd report" else None)
        if prefixed and header.read(index + 1, prefixed.group("rest")):
            continue
        if not header.read(index + 1, line):
            failures.add(index + 1, "not an ftrace event line (expected 'comm-pid [cpu] "
                         "flags timestamp: event: fields')")
    rows = [index for index, stamp in enumerate(texts["timestamp"]) if stamp]
    if len(rows) < len(lines):
        texts = {key: _pick(column, rows) for key, column in texts.items()}
    columns = {key: list(column) for key, column in texts.items()}
    if any(columns["latency_pid"]):
        for index, latency_pid in enumerate(columns["latency_pid"]):
            if latency_pid:
                for key in ("comm", "pid", "cpu", "flags"):
                    columns[key][index] = columns[f"latency_{key}"][index]
    instances = columns["instance"]
    if not any(instances):
        pass
    elif header.attrs["format"] != "trace-cmd report":  # the prefix belongs to the comm
        columns["comm"] = [f"{instance}: {comm}" if instance else comm
                           for instance, comm in zip(instances, columns["comm"], strict=True)]
    else:
        header.attrs["instances"].extend(dict.fromkeys(filter(None, instances)))
    return header, columns, [index + 1 for index in rows], failures


def _timestamps(stamps: list[str], numbers: list[int], failures: _Failures):
    """(counter clock?, the timestamps: int ticks or float seconds) of the event lines."""
    counter = ["." not in stamp for stamp in stamps]
    if counter and counter.count(counter[0]) != len(counter):
        failures.add(numbers[counter.index(not counter[0])],
                     "timestamp in seconds and in counter ticks mixed")
        return counter[0], None
    if counter and counter[0]:
        return True, np.fromiter(map(int, stamps), dtype=np.int64, count=len(stamps))
    return False, np.fromiter(map(float, stamps), dtype=np.float64, count=len(stamps))


def _frame(source, tsc_hz: float | None) -> pd.DataFrame:
    name, lines = source_lines(source)
    header, columns, numbers, failures = _read_lines(name, lines)
    bodies = [body.strip() for body in columns["body"]]
    events = columns["event"]
    summary = EVENT_FIELDS["osnoise"][0]
    for row, event in enumerate(events if "" in events else ()):
        if not event:  # only the osnoise tracer's summary has no event name
            if header.attrs["tracer"] not in (None, "osnoise") or not summary.match(bodies[row]):
                failures.add(numbers[row], "a line without an event name (only the osnoise "
                             "tracer's per-period summary is read without one)")
            events[row] = "osnoise"
    fields = _field_columns(events, bodies, numbers, failures)
    counter_clock, stamps = _timestamps(columns["timestamp"], numbers, failures)
    failures.raise_first()
    size = len(events)
    cpus = np.fromiter(map(int, columns["cpu"]), dtype=np.int64, count=size)
    for record in header.attrs["lost"]:  # the timestamp of that CPU's next event
        later = [row for row in range(size)
                 if numbers[row] > record["line"] and cpus[row] == record["cpu"]][:1]
        if later:
            record["before_timestamp"] = stamps[later[0]].item()
    tgid = ([int(text) if text.isdigit() else None for text in columns["tgid"]]
            if any(columns["tgid"]) else [None] * size)
    if counter_clock:
        timestamp = stamps / tsc_hz if tsc_hz is not None else np.full(size, np.nan)
        ticks = pd.arrays.IntegerArray(stamps, np.zeros(size, dtype=bool))
    else:
        timestamp = stamps
        ticks = pd.arrays.IntegerArray(np.zeros(size, dtype=np.int64), np.ones(size, bool))
    frame = pd.DataFrame({
        "cpu": cpus,
        "timestamp": np.asarray(timestamp, dtype=np.float64),
        "ticks": ticks,
        "event": pd.array(events, dtype=object),
        "comm": pd.array([comm.strip() for comm in columns["comm"]], dtype=object),
        "pid": np.fromiter(map(int, columns["pid"]), dtype=np.int64, count=size),
        "tgid": pd.array(tgid, dtype="Int64"),
        "flags": pd.array([flags or None for flags in columns["flags"]], dtype=object),
        **fields,
        "body": pd.array(bodies, dtype=object),
    })
    header.attrs["timestamp_unit"] = "ticks" if counter_clock else "s"
    header.attrs["tsc_hz"] = tsc_hz if counter_clock else None
    frame.attrs.update(header.attrs)
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
        ``target_cpu``, ``hrtimer``, ``function``, ``now`` [ns], ``handler``, ``delta``
        [s] and ``handled`` (``nmi_handler``), ``address``, ``ip`` (as printed) and
        ``error_code`` (``page_fault_user/kernel``), ``start`` [s],
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
    collecting = gc.isenabled()
    gc.disable()  # the parse makes ~10⁵ tuples and strings, no cycles: skip the GC passes
    try:
        frame = _frame(source, tsc_hz)
    finally:
        if collecting:
            gc.enable()
    _report_losses(frame.attrs)
    if event_filter is not None:
        attrs = frame.attrs
        frame = frame[frame["event"].map(event_filter).astype(bool)].reset_index(drop=True)
        frame.attrs = attrs
    return frame
