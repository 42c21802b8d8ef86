"""LogGOPSim / netgauge noise traces, and LogGOPSim's per-rank timelines (``-V``).

Noise traces: ``<start ns><TAB><duration ns>`` per line (:func:`read`, :func:`write`).
Timelines: the file LogGOPSim writes with ``-V`` (:func:`read_timeline`, an
:class:`~jitterlab.traces.events.EventTrace` with the noise LogGOPSim injected in each interval).

LogGOPSim (Hoefler et al., SC10) replays noise recorded by netgauge's noise benchmark:
``#`` comment lines, then one event per line, its start on an absolute timeline and its
duration, both in integer nanoseconds.

Writing converts the trace to absolute times (:meth:`Trace.to_absolute`) and rounds them
to the nearest nanosecond: sub-nanosecond detail is lost, so a round trip is lossless
only for a trace on a 1 ns grid (times k/10⁹ s, or cycles of a 1 GHz clock). The start
and the end of each event are rounded (not the durations), so rounding errors do not
accumulate. jitterlab records the cycle length as ``# duration_ns: <integer>`` and the
unit, frequency and metadata as ``# key: <json>`` comments, which LogGOPSim skips.

Reading takes the cycle length from ``# duration_ns`` when present, else the default of
:meth:`Trace.from_absolute` (the end of the last event, so the idle time before the first
event repeats after the last). The trace is in seconds unless the file records
``# unit: "cycles"``. ``attrs["offset"]`` is the start of the first event [s] (left out
when it is 0 and the file does not record it). Free-text comments go to
``attrs["comment"]``.

Notes
-----
LogGOPSim itself reads lines of at most 1023 characters and wraps the trace at the start
of its last event (it ignores ``# duration_ns``); the writer refuses metadata lines that
LogGOPSim could not read.

References
----------
.. [1] T. Hoefler, T. Schneider, A. Lumsdaine, "Characterizing the Influence of System
   Noise on Large-Scale Applications by Simulation", SC10.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from ..traces.events import EventTrace
from ..traces.trace import OVERLAP_RULES, OverlapError, Trace, absolute_to_rows
from ..traces.writers import MAX_LINE  # noqa: F401
from ..traces.writers import write_loggopsim as write
from . import common as _common

__all__ = ["read", "write", "read_timeline"]

_EXPECTED = "<start ns>\t<duration ns>"
#: LogGOPSim reads each line into a 1024-byte buffer






def read(path, overlap: str = "serialize") -> Trace:
    """Read a LogGOPSim noise trace (gzip-compressed or not).

    Parameters
    ----------
    path : str or path-like
        The file.
    overlap : {"serialize", "merge", "raise"}, default "serialize"
        Events that start before the previous one ends (measured and generated traces
        have them): by default each keeps its full duration and is delayed until the
        previous one ends, as LogGOPSim charges both in full; see
        :meth:`Trace.from_absolute`.
    """
    _common.check_choice("overlap", overlap, OVERLAP_RULES)
    name = Path(path).name
    metadata, comments, rows = _common.split_comments(_common.read_lines(path))
    if not rows:
        raise ValueError(f"{name}: expected lines {_EXPECTED!r}, found none")
    values = _common.parse_table(name, rows, None, _EXPECTED)
    total = metadata.pop("duration_ns", None)
    if total is not None:
        total = _common.check_number(name, "duration_ns", total)
    try:
        jitter, gap, start_0 = absolute_to_rows(values[:, 0], values[:, 1], total,
                                                overlap=overlap, unit_label=" ns")
    except OverlapError as err:
        first, second = rows[err.first][0], rows[err.second][0]
        raise ValueError(f"{name} line {second}: the event overlaps the one on line {first} "
                         f"({err})") from None
    except ValueError as err:
        raise ValueError(f"{name}: {err}") from None
    unit = metadata.pop("unit", "s")
    frequency_hz = metadata.pop("frequency_hz", None)
    # keep a recorded offset that rounds to the first start; else record the first start
    recorded = metadata.get("offset")
    if recorded is None:
        recorded_ns = 0.0
    elif isinstance(recorded, int | float) and not isinstance(recorded, bool):
        recorded_ns = float(np.rint(recorded * 1e9))
    else:
        recorded_ns = None
    if recorded_ns != start_0:
        metadata["offset"] = start_0 / 1e9
    metadata = _common.add_comments(metadata, comments)
    trace = _common.make_trace(name, jitter / 1e9, gap / 1e9, "s", frequency_hz, metadata)
    if unit == "cycles":
        if frequency_hz is None:
            raise ValueError(f"{name}: unit 'cycles' needs frequency_hz in the metadata")
        trace = trace.to_cycles()
    elif unit != "s":
        raise ValueError(f"{name}: unit must be 's' or 'cycles', got {unit!r}")
    return trace


# ------------------------------------------------------------------- -V timelines
#: fields of the -V lines LogGOPSim writes (TimelineVisualization.hpp), after the keyword
_TIMELINE_FIELDS = {"loclop": 7, "osend": 7, "orecv": 7, "noise": 7, "transmission": 9,
                    "numranks": 1}
_GOAL_OP = re.compile(r"^\s*(\w+):\s*(calc|send|recv)\s+(.*?)\s*$")
_GOAL_MESSAGE = re.compile(r"^(\d+)b\s+(to|from)\s+(\d+)\s+tag\s+(\d+)$")


def _timeline_lines(path) -> list[tuple[int, str, list[int]]]:
    """(line number, keyword, integer fields without the colour) of a -V file."""
    name = Path(path).name
    out = []
    for number, line in enumerate(_common.read_lines(path), start=1):
        words = line.strip().rstrip(";").split()
        if not words:
            continue
        keyword, fields = words[0], words[1:]
        if keyword not in _TIMELINE_FIELDS or len(fields) != _TIMELINE_FIELDS[keyword]:
            raise ValueError(f"{name} line {number}: expected a LogGOPSim -V line (numranks, "
                             f"loclop, osend, orecv, noise or transmission with its fields), "
                             f"got {line[:60]!r}")
        keep = {"numranks": 1, "transmission": 4}.get(keyword, 4)  # drop sizes and colour
        try:
            values = [int(v) for v in fields[:keep]]
        except ValueError:
            raise ValueError(f"{name} line {number}: non-integer field in {line[:60]!r}"
                             ) from None
        out.append((number, keyword, values))
    return out


def _goal_operations(path) -> list[list[tuple[str, int, int]]]:
    """Per rank, its operations in the order written: (kind, peer or size, tag)."""
    name = Path(path).name
    ranks: list[list[tuple[str, int, int]]] = []
    current = None
    for number, line in enumerate(_common.read_lines(path), start=1):
        text = line.strip()
        if text.startswith("rank ") and text.endswith("{"):
            current = []
            ranks.append(current)
            if int(text.split()[1]) != len(ranks) - 1:
                raise ValueError(f"{name} line {number}: ranks must be written in order "
                                 f"0, 1, 2, ...")
            continue
        match = _GOAL_OP.match(text)
        if match is None:
            continue  # num_ranks, requires, braces, blank lines
        if current is None:
            raise ValueError(f"{name} line {number}: an operation outside a rank block")
        kind, rest = match.group(2), match.group(3)
        if kind == "calc":
            current.append(("calc", int(rest.split()[0]), -1))
            continue
        message = _GOAL_MESSAGE.match(rest)
        if message is None or (message.group(2) == "to") != (kind == "send"):
            raise ValueError(f"{name} line {number}: expected '{kind} <n>b "
                             f"{'to' if kind == 'send' else 'from'} <rank> tag <t>', got "
                             f"{text[:60]!r} (cpu and nic options are not supported)")
        current.append((kind, int(message.group(3)), int(message.group(4))))
    return ranks


def _activities(path, n_ranks_expected: int):
    """The -V file as per-rank activities in time order and its messages.

    Returns (chain, receptions, messages): ``chain[r]`` lists the rank's loclop and osend
    lines as [kind, start, end, noise after the end]; ``receptions[r]`` maps a message
    number to [arrival taken up, end of orecv, noise after it]; ``messages`` lists
    (source, destination, departure [ns], index of the send in the source's chain).
    """
    name = Path(path).name
    lines = _timeline_lines(path)
    if not lines or lines[0][1] != "numranks":
        raise ValueError(f"{name}: not a LogGOPSim -V file (it must begin with 'numranks')")
    n_ranks = lines[0][2][0]
    if n_ranks != n_ranks_expected:
        raise ValueError(f"{name}: {n_ranks} ranks, but the schedule has {n_ranks_expected}")
    chain: list[list[list[int]]] = [[] for _ in range(n_ranks)]
    receptions: list[dict[int, list[int]]] = [{} for _ in range(n_ranks)]
    send_at: dict[tuple[int, int], list[int]] = {}  # (rank, end of osend) -> chain indices
    messages: list[tuple[int, int, int, int]] = []

    def following(i: int, expected: str, rank: int, start: int) -> list[int]:
        if i + 1 >= len(lines):
            raise ValueError(f"{name}: the file ends after line {lines[i][0]}, where a "
                             f"{expected!r} line must follow")
        number, keyword, values = lines[i + 1]
        if keyword != expected or values[0] != rank or values[2] != start:
            raise ValueError(f"{name} line {number}: expected the {expected!r} line of rank "
                             f"{rank} from {start} ns after line {lines[i][0]}")
        return values

    i = 1
    while i < len(lines):
        number, keyword, values = lines[i]
        rank = values[1] if keyword == "transmission" else values[0]
        if not 0 <= rank < n_ranks:
            raise ValueError(f"{name} line {number}: rank {rank} outside 0..{n_ranks - 1}")
        if keyword in ("loclop", "osend", "orecv", "noise") and values[1] != 0:
            raise ValueError(f"{name} line {number}: rank {rank} on CPU {values[1]}; only "
                             f"runs with one CPU per rank can be read")
        if keyword == "loclop":
            chain[rank].append(["calc", values[2], values[3], 0])
            i += 1
        elif keyword == "osend":
            noise = following(i, "noise", rank, values[3])
            send_at.setdefault((rank, values[3]), []).append(len(chain[rank]))
            chain[rank].append(["send", values[2], values[3], noise[3] - noise[2]])
            i += 2
        elif keyword == "transmission":
            source, departure, taken = values[0], values[2], values[3]
            orecv = following(i, "orecv", rank, taken)
            noise = following(i + 1, "noise", rank, orecv[3])
            sends = send_at.get((source, departure))
            if not sends:
                raise ValueError(f"{name} line {number}: the message from rank {source} to "
                                 f"{rank} left at {departure} ns, where no send of rank "
                                 f"{source} ends (a rendezvous message, -O above 0, or a "
                                 f"truncated file)")
            receptions[rank][len(messages)] = [taken, orecv[3], noise[3] - noise[2]]
            messages.append((source, rank, departure, sends.pop(0)))
            i += 3
        elif keyword == "orecv":
            raise ValueError(f"{name} line {number}: rank {rank} received an unexpected "
                             f"message (it arrived before its receive was posted): LogGOPSim "
                             f"charged its overhead at arrival without writing it; post the "
                             f"receives before their messages can arrive (no 'requires')")
        elif keyword == "noise":
            raise ValueError(f"{name} line {number}: a noise line that follows no send or "
                             f"receive of rank {rank}")
        else:
            raise ValueError(f"{name} line {number}: a second 'numranks' line")
    unmatched = [key for key, sends in send_at.items() if sends]
    if unmatched:
        rank, end = unmatched[0]
        raise ValueError(f"{name}: the send of rank {rank} ending at {end} ns was never "
                         f"received (a truncated file or an unexpected message)")
    return chain, receptions, messages


def _overlap(low: float, high: float, segments: list[tuple[int, int]]) -> int:
    """Total length of the segments inside [low, high]."""
    return sum(max(0, min(high, b) - max(low, a)) for a, b in segments)


def _fill_gaps(rows: list[list], noise_segments: list[tuple[int, int]]) -> list[list]:
    """Rows with a compute interval (peer -2 as a mark) in every gap between two rows
    that holds noise of a message processing: the noise of a message LogGOPSim took up
    before its receive was reached, which delayed what came next."""
    out = rows[:1]
    for row in rows[1:]:
        end = out[-1][2]
        if row[1] > end:
            noise = _overlap(end, row[1], noise_segments)
            if noise > 0:
                out.append(["compute", end, row[1], noise, -2, -1])
        out.append(row)
    return out


def read_timeline(path, schedule, latency: float) -> EventTrace:
    """Read the per-rank timeline LogGOPSim writes with ``-V`` as an event trace.

    LogGOPSim (spcl/LogGOPSim, ``TimelineVisualization.hpp``) writes, in the order it
    simulates them, one line per CPU activity (times in integer ns): ``loclop`` (a
    computation, without its noise), ``osend`` (the overhead o of a send) followed by
    ``noise`` (the noise charged after it), and for a message taken into a posted
    receive ``transmission`` (source, destination, the send's start + o, when the
    receiver takes it up), ``orecv`` (its overhead o) and ``noise``. It writes no peer
    for a send or receive, so the schedule (the GOAL text given to ``txt2bin``) gives
    the program order: each rank's operations in the order they are written, whose
    computations and sends LogGOPSim must run in that order (a chain of ``requires``).
    The intervals of a rank, in program order:

    * compute (a ``calc``): from the ``loclop``'s start to the rank's next activity in
      time; the time after the ``loclop``'s end is its noise. LogGOPSim does not write
      the noise of a local operation but starts the rank's next operation when it is
      over, so this is exact when every computation is followed by a send or a
      computation; otherwise waiting would count as noise (check it on a run without
      noise: then no interval may carry noise);
    * send: the ``osend`` (the message leaves at its end: LogGOPSim sends it before the
      noise), then, if the noise after it is not zero, a compute interval holding it;
    * recv: from the end of the previous interval to the end of the message's
      processing (``orecv`` and its noise), or of zero length when LogGOPSim took the
      message up earlier (a receive posted ahead completes whenever the CPU is free).
      Its noise is that of the rank's message processings inside the part after the
      message's arrival (send start + o + L); noise met while the rank waited for the
      message was absorbed and is not counted.

    A message LogGOPSim took up before the program reached its receive was processed
    inside an earlier receive's wait or in a gap between two intervals. In a gap, its
    noise becomes a compute interval over the gap (it delayed what came next); its
    overhead (o) stays where LogGOPSim spent it, and the estimate keeps it as measured.
    That is the representation's error against LogGOPSim: up to o per such message that
    a noiseless run would have spent later, or not on the critical path.

    Parameters
    ----------
    path : str or path-like
        The ``-V`` file (gzip-compressed or not) of a run with one CPU per rank, eager
        messages (at most LogGOPSim's ``-S`` bytes) and ``-O 0``.
    schedule : str or path-like
        The GOAL text of the run (``rank r { l1: calc 100 ... }``), ranks in order.
    latency : float
        LogGP L, the wire latency of the run (``-L``). [s]

    Returns
    -------
    EventTrace
        Tags are the message numbers; attrs ``source`` ("LogGOPSim -V"), ``makespan``
        (the last end, LogGOPSim's "Maximum finishing time") [s] and ``absorbed_noise``
        (noise of message processings left out: it fell while the rank waited for a
        message that had not yet arrived) [s].

    Raises
    ------
    ValueError
        For a line that is not of the -V format, a rank on another CPU than 0, a
        receive of an unexpected message (one that arrived before its receive was
        posted: LogGOPSim charges its overhead then without writing it; post receives
        ahead, with no ``requires``), a message whose send is not in the file, a latency
        above a message's transmission time, a schedule that does not match the file,
        and a rank whose last activity is a computation (its noise is not written).
    """
    name = Path(path).name
    latency_ns = float(latency) * 1e9
    if not latency_ns >= 0 or math.isinf(latency_ns):
        raise ValueError(f"latency must be a finite non-negative number of seconds, got "
                         f"{latency!r}")
    operations = _goal_operations(schedule)
    chain, receptions, messages = _activities(path, len(operations))
    steps_written = [[o for o in ops if o[0] != "recv"] for ops in operations]
    receive_of: dict[tuple[int, int, int], list[int]] = {}  # (rank, peer, tag) -> message
    send_message: dict[tuple[int, int], tuple[int, int]] = {}  # (rank, step) -> (peer, tag)
    for number, (source, destination, departure, index) in enumerate(messages):
        op = steps_written[source][index] if index < len(steps_written[source]) else None
        if op is None or op[0] != "send" or op[1] != destination:
            raise ValueError(f"{name}: send {index} of rank {source} goes to rank "
                             f"{destination} in the run but is {op} in the schedule")
        if receptions[destination][number][0] - departure < latency_ns - 1e-6:
            raise ValueError(f"{name}: the message from rank {source} to {destination} "
                             f"at {departure} ns took less than the latency "
                             f"{latency_ns:g} ns")
        receive_of.setdefault((destination, source, op[2]), []).append(number)
        send_message[(source, index)] = (destination, number)
    frames, absorbed = [], 0
    for rank, ops in enumerate(operations):
        steps = chain[rank]
        if len(steps) != len(steps_written[rank]):
            raise ValueError(f"{name}: rank {rank} ran {len(steps)} computations and sends, "
                             f"the schedule has {len(steps_written[rank])}")
        taken = sorted(r[0] for r in receptions[rank].values())
        noise_segments = [(r[1], r[1] + r[2]) for r in receptions[rank].values()]
        rows, previous_end, k = [], 0, 0
        for op_kind, peer, tag in ops:
            if op_kind == "recv":
                numbers = receive_of.get((rank, peer, tag))
                if not numbers:
                    raise ValueError(f"{name}: rank {rank} never received the message from "
                                     f"rank {peer} with tag {tag} of the schedule")
                number = numbers.pop(0)
                took, o_end, noise = receptions[rank][number]
                arrival = messages[number][2] + latency_ns
                end = max(previous_end, o_end + noise)
                counted = _overlap(max(previous_end, arrival), end, noise_segments)
                rows.append(["recv", previous_end, end, counted, peer, number])
                previous_end = end
                continue
            kind, start, stop, noise = steps[k]
            if kind != op_kind:
                raise ValueError(f"{name}: rank {rank}'s activity {k} is a {kind} in the run "
                                 f"and a {op_kind} in the schedule (computations and sends "
                                 f"must run in the order they are written)")
            if start < previous_end:
                raise ValueError(f"{name}: rank {rank}'s {kind} at {start} ns starts before "
                                 f"the end of the operation written before it "
                                 f"({previous_end} ns): the schedule is not in program order")
            if kind == "calc":
                later = [s[1] for s in steps[k + 1:k + 2]] + [t for t in taken if t >= stop]
                if not later:
                    raise ValueError(f"{name}: rank {rank} ends with a computation, whose "
                                     f"noise LogGOPSim does not write; end every rank with a "
                                     f"send or a receive")
                resumed = max(stop, min(later))
                rows.append(["compute", start, resumed, resumed - stop, -1, -1])
                previous_end = resumed
            else:
                rows.append(["send", start, stop, 0, *send_message[(rank, k)]])
                if noise > 0:
                    rows.append(["compute", stop, stop + noise, noise, -1, -1])
                previous_end = stop + noise
            k += 1
        rows = _fill_gaps(rows, noise_segments)
        absorbed += sum(b - a for a, b in noise_segments)
        absorbed -= sum(r[3] for r in rows if r[0] == "recv" or r[4] == -2)
        for row in rows:
            row[4] = -1 if row[4] == -2 else row[4]
        frame = pd.DataFrame(rows, columns=["kind", "start", "end", "noise_combined",
                                            "peer", "tag"])
        frame.insert(0, "rank", rank)
        frame.insert(1, "seq", np.arange(len(frame)))
        frames.append(frame)
    data = pd.concat(frames, ignore_index=True)
    for column in ("start", "end", "noise_combined"):
        data[column] = data[column].to_numpy(dtype=np.float64) / 1e9
    return EventTrace(data, latency=float(latency), file=path, source="LogGOPSim -V",
                      makespan=float(data["end"].max()), absorbed_noise=absorbed / 1e9)

