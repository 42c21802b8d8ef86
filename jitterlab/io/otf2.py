"""OTF2 traces (Score-P, TAU) as event traces, in and out, through the ``otf2`` package.

:func:`read_otf2_events` turns an OTF2 archive into a :class:`~jitterlab.traces.events.EventTrace`;
:func:`write_otf2_events` writes one with the same encoding, so that reading it back gives
the trace again, to the timer resolution of 1 ns.

Reading
-------
* **Ranks.** The MPI ranks are the members of the archive's MPI location group
  (``COMM_LOCATIONS``, paradigm MPI), in its order; other locations (threads other than a
  rank's master thread) are ignored. An archive without MPI definitions has one rank per
  location, in the order of their references.
* **Intervals.** On each rank the ``Enter``/``Leave`` records of the regions give the
  intervals. A region that directly holds an MPI record is one interval from its ``Enter``
  to its ``Leave``: ``send`` for ``MpiSend``/``MpiIsend`` (``MPI_Send``, ``MPI_Isend``),
  ``recv`` for ``MpiRecv``/``MpiIrecv`` (``MPI_Recv``, the ``MPI_Wait`` that completes an
  ``MPI_Irecv``), ``collective`` for ``MpiCollectiveBegin``/``MpiCollectiveEnd``
  (``MPI_Barrier``, ``MPI_Allreduce``, ...). Every other stretch of time spent inside at
  least one region is a ``compute`` interval: from the record that enters it (a region
  entered from outside all regions, or the ``Leave`` of an MPI interval) to the record that
  leaves it, whatever user regions are entered and left in between (under Score-P's
  ``main`` this is the time between MPI calls). Time outside every region is a gap: no
  interval, kept as measured by the timeline approximation.
* **Messages.** A send's peer is the ``receiver`` of its record, a recv's the ``sender``,
  translated from the communicator's ranks to MPI_COMM_WORLD's. MPI reuses tags; messages
  are matched as MPI does (non-overtaking): the k-th send from rank r to rank p with tag t
  on a communicator matches the k-th receive on p from r with tag t on it. The event
  trace needs one tag per message, so the k-th message from r to p with MPI tag t gets the
  tag ``t + k·2**32`` (k counted over communicators, in the order of the sends): the MPI
  tag is ``tag % 2**32``, and a trace without reused tags keeps its tags.
* **Collectives** get the instance number as tag: the k-th collective of every rank is
  instance k. The communicator must span all ranks.
* **Noise.** Every metric member named ``noise_<source>`` (``noise_tick``,
  ``noise_daemon``, ...) is an accumulated counter of the time that source took from the
  rank, sampled at every ``Enter`` and ``Leave`` (a ``Metric`` record with the same
  timestamp, written just before the region record as Score-P does, or just after it).
  Its mode is ``ACCUMULATED_START`` (or ``ACCUMULATED_POINT``), its type an integer or a
  double, and its value times ``base**exponent`` is in the unit given: ``s``, ``ms``,
  ``us`` or ``ns`` (e.g. nanoseconds as ``unit="s"``, ``exponent=-9``). The noise of an
  interval is the counter at its end minus the counter at its start.
* **Times** are ``(timestamp − global offset) / timer resolution`` [s]: seconds from the
  start of the trace.

Writing
-------
One location group ``MPI Rank <r>`` with one location per rank, MPI_COMM_WORLD, a region
per kind (``compute``, ``MPI_Send``, ``MPI_Recv``, ``MPI_Barrier``), and per interval: the
noise counters, ``Enter``, the MPI record (``MpiSend`` at the start of a send, ``MpiRecv``
at the end of a recv, ``MpiCollectiveBegin``/``End`` at the start and end of a
collective), the counters again and ``Leave``. The timer resolution is 1 ns: times are
rounded to the nearest nanosecond, and so is each interval's noise (never above the
rounded interval). The counters are ``noise_<source>`` members (``UINT64`` nanoseconds:
``unit="s"``, ``exponent=-9``, ``ACCUMULATED_START``). The trace's own tags are kept in an
attribute ``jitterlab::tag`` of each MPI record (the record's MPI tag is ``tag % 2**32``);
the latency, the attrs and the time origin in the archive property
``JITTERLAB::EVENTS`` (JSON). Other OTF2 tools (Vampir, otf2-print) read the archive as
any other.
"""

from __future__ import annotations

import bisect
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..traces.events import KINDS, NOISE_PREFIX, EventTrace

__all__ = ["read_otf2_events", "TIMER_RESOLUTION"]

#: ticks per second of the archives written by :func:`write_otf2_events` [Hz]
TIMER_RESOLUTION = 10**9
#: name of the anchor file (without ``.otf2``) inside an archive directory that jitterlab
#: writes (Score-P's name)
ARCHIVE_NAME = "traces"
PROPERTY = "JITTERLAB::EVENTS"
TAG_ATTRIBUTE = "jitterlab::tag"
ANY_ORDER_ATTRIBUTE = "jitterlab::any_order"
#: collective operations in which every rank's exit depends on every rank's entry
BARRIER_LIKE_OPS = ("BARRIER", "ALLGATHER", "ALLGATHERV", "ALLTOALL", "ALLTOALLV", "ALLTOALLW",
                    "ALLREDUCE", "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK")
FORMAT_VERSION = 1
#: the k-th reuse of an MPI tag t between two ranks is tag t + k * TAG_STRIDE
TAG_STRIDE = 2**32
_UNITS = {"s": 1, "sec": 1, "second": 1, "seconds": 1, "ms": 10**3, "msec": 10**3,
          "us": 10**6, "usec": 10**6, "µs": 10**6, "ns": 10**9, "nsec": 10**9}
_REGION_OF_KIND = {"compute": "compute", "send": "MPI_Send", "recv": "MPI_Recv",
                   "collective": "MPI_Barrier"}


def otf2_package():
    try:
        import otf2
    except ImportError as err:  # pragma: no cover - otf2 is a dependency
        raise ImportError("reading and writing OTF2 needs the 'otf2' package "
                          "(pip install otf2)") from err
    return otf2


def _seconds(value: float) -> str:
    return f"{value:.12g} s"


# ---------------------------------------------------------------------- the archive
def _anchor(path) -> Path:
    """The anchor file of an archive given as the file or its directory."""
    if isinstance(path, bytes) or not isinstance(path, str | os.PathLike):
        raise TypeError(f"path must be a str or path-like, got {type(path).__name__}")
    path = Path(path)
    if path.is_dir():
        anchors = sorted(p for p in path.glob("*.otf2") if p.is_file())
        if len(anchors) != 1:
            found = (f"several: {', '.join(p.name for p in anchors)}" if anchors else "none")
            raise ValueError(f"{path}: an OTF2 archive directory holds one anchor file "
                             f"(*.otf2); found {found}. Pass the anchor file")
        return anchors[0]
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such OTF2 archive (anchor file or directory)")
    return path


def _damaged(anchor: Path, err, detail: str = "") -> ValueError:
    return ValueError(f"{anchor}: not a readable OTF2 archive, it is damaged or truncated "
                      f"({err}){detail}")


# ---------------------------------------------------------------------- reading
@dataclass
class _Region:
    """One entered region on a rank, and the MPI record it holds, if any."""
    name: str
    enter: int  # index of its Enter among the rank's region records
    leave: int = -1
    kind: str = ""  # "", "send", "recv" or "collective"
    peer: int = -1  # world rank
    comm: int = -1
    mpi_tag: int = 0
    tag: int | None = None  # the jitterlab::tag attribute
    any_order: bool = False  # the jitterlab::any_order attribute of a recv
    collective_open: bool = False
    holds_inner: bool = False  # a region inside it holds an MPI record


@dataclass
class _Rank:
    """The records of one rank, in the order of the trace."""
    number: int
    name: str
    position: int = 0  # records seen, region or metric
    times: list = field(default_factory=list)  # timestamp of each region record [ticks]
    positions: list = field(default_factory=list)  # its place among all records
    regions: list = field(default_factory=list)  # the _Region it enters or leaves
    tags: list = field(default_factory=list)  # the jitterlab::tag attribute of an Enter
    stack: list = field(default_factory=list)
    #: per noise member: positions, timestamps and raw values of its samples
    samples: dict = field(default_factory=dict)


class _ReadError(ValueError):
    pass


def _noise_members(definitions, metrics, anchor: Path) -> dict:
    """metric member name -> (source, numerator, denominator): seconds = raw * num / den."""
    otf2 = otf2_package()
    members = list(definitions.metric_members)
    if metrics is None:
        chosen = {m.name: m.name[len(NOISE_PREFIX):] for m in members
                  if m.name.startswith(NOISE_PREFIX) and len(m.name) > len(NOISE_PREFIX)}
    elif isinstance(metrics, dict):
        chosen = dict(metrics)
    elif not (isinstance(metrics, str) or (isinstance(metrics, list | tuple)
                                           and all(isinstance(m, str) for m in metrics))):
        raise TypeError(f"metrics must be a member name, a list of them or a dict of member "
                        f"-> source name, got {metrics!r}")
    else:
        chosen = {name: (name[len(NOISE_PREFIX):] if name.startswith(NOISE_PREFIX) else name)
                  for name in ([metrics] if isinstance(metrics, str) else metrics)}
    names = [m.name for m in members]
    if not chosen:
        raise ValueError(f"{anchor}: no noise metric in the archive: jitterlab reads the "
                         f"local noise from metric members named noise_<source> (e.g. "
                         f"noise_tick), accumulated counters in s or ns sampled at every "
                         f"Enter and Leave; it has {names or 'no metric members'} "
                         f"(pass metrics= to name others)")
    missing = [name for name in chosen if name not in names]
    if missing:
        raise ValueError(f"{anchor}: no metric member {missing[0]!r}; it has {names}")
    accepted = (otf2.MetricMode.ACCUMULATED_START, otf2.MetricMode.ACCUMULATED_POINT)
    scales = {}
    for member in members:
        if member.name not in chosen:
            continue
        if member.metric_mode not in accepted:
            raise ValueError(f"{anchor}: metric {member.name!r} has mode "
                             f"{member.metric_mode}; noise metrics are accumulated counters "
                             f"(ACCUMULATED_START)")
        unit = (member.unit or "").strip()
        if unit not in _UNITS:
            raise ValueError(f"{anchor}: metric {member.name!r} has unit {unit!r}; noise "
                             f"metrics are times in {', '.join(sorted(set(_UNITS)))}")
        base = 10 if member.base == otf2.Base.DECIMAL else 2
        numerator, denominator = 1, _UNITS[unit]
        if member.exponent >= 0:
            numerator *= base ** member.exponent
        else:
            denominator *= base ** -member.exponent
        scales[member.name] = (chosen[member.name], numerator, denominator)
    return scales


def _ranks_of(definitions, anchor: Path) -> dict:
    """location reference -> (world rank, description)."""
    otf2 = otf2_package()
    for group in definitions.groups:
        if group.group_type == otf2.GroupType.COMM_LOCATIONS and \
                group.paradigm == otf2.Paradigm.MPI:
            members = group.members
            break
    else:
        members = sorted(definitions.locations, key=lambda location: location._ref)
    if not members:
        raise ValueError(f"{anchor}: the archive defines no locations")
    return {location._ref: (rank, f"{location.group.name}/{location.name}")
            for rank, location in enumerate(members)}


def _world_rank(comm, rank_in_comm: int, ranks: dict, where: str) -> int:
    try:
        location = comm.location(rank_in_comm)
    except (IndexError, AttributeError, TypeError):
        raise _ReadError(f"{where}: rank {rank_in_comm} is not in communicator "
                         f"{comm.name!r}") from None
    if location._ref not in ranks:
        raise _ReadError(f"{where}: rank {rank_in_comm} of communicator {comm.name!r} is "
                         f"not an MPI rank of the archive")
    return ranks[location._ref][0]


def _read_records(reader, ranks: dict, scales: dict, anchor: Path, time_of) -> list[_Rank]:
    """One pass over the events: region records, MPI records and noise samples per rank."""
    otf2 = otf2_package()
    events = otf2.events
    tag_attribute = next((a for a in reader.definitions.attributes
                          if a.name == TAG_ATTRIBUTE), None)
    any_order_attribute = next((a for a in reader.definitions.attributes
                                if a.name == ANY_ORDER_ATTRIBUTE), None)
    state = [_Rank(rank, name) for rank, name in sorted(ranks.values())]
    expected = {rank: reader.definitions.locations[ref].number_of_events
                for ref, (rank, _) in ranks.items()}
    send_types = (events.MpiSend, events.MpiIsend)
    recv_types = (events.MpiRecv, events.MpiIrecv)

    def where(rank: _Rank, event) -> str:
        return (f"rank {rank.number} ({rank.name}), {type(event).__name__} record at "
                f"{_seconds(time_of(event.time))}")

    def holder(rank: _Rank, event) -> _Region:
        if not rank.stack:
            raise _ReadError(f"{where(rank, event)}: an MPI record outside every region")
        region = rank.stack[-1]
        outer = next((r for r in rank.stack[:-1] if r.kind), None)
        inner = region.holds_inner
        if outer is not None or inner:
            raise _ReadError(f"{where(rank, event)}: MPI records in nested regions "
                             f"({(outer or region).name!r} and one inside it); an MPI "
                             f"interval cannot hold another")
        busy = region.kind and not (isinstance(event, events.MpiCollectiveEnd)
                                    and region.collective_open)
        if busy:
            raise _ReadError(f"{where(rank, event)}: region {region.name!r} already holds "
                             f"a {region.kind}; jitterlab's event trace has one message or "
                             f"collective per interval (MPI_Sendrecv, MPI_Waitall over "
                             f"several requests are not supported)")
        return region

    def attribute_tag(event):
        if tag_attribute is None or not event.attributes:
            return None
        return event.attributes.get(tag_attribute)

    for location, event in reader.events:
        found = ranks.get(location._ref)
        if found is None:
            continue
        rank = state[found[0]]
        rank.position += 1
        if isinstance(event, (events.Enter, events.Leave)):
            if isinstance(event, events.Enter):
                region = _Region(event.region.name, len(rank.times))
                rank.stack.append(region)
            else:
                if not rank.stack or rank.stack[-1].name != event.region.name:
                    open_name = rank.stack[-1].name if rank.stack else "none"
                    raise _ReadError(f"{where(rank, event)}: Leave of region "
                                     f"{event.region.name!r} while the open region is "
                                     f"{open_name!r}")
                region = rank.stack.pop()
                region.leave = len(rank.times)
                if rank.stack and (region.kind or region.holds_inner):
                    rank.stack[-1].holds_inner = True
                if region.collective_open:
                    raise _ReadError(f"{where(rank, event)}: region {region.name!r} has an "
                                     f"MpiCollectiveBegin without MpiCollectiveEnd")
            rank.times.append(event.time)
            rank.positions.append(rank.position)
            rank.regions.append(region)
            rank.tags.append(attribute_tag(event))
        elif isinstance(event, events.Metric):
            metric = event.metric
            members = (metric.metric_class.members if hasattr(metric, "metric_class")
                       else metric.members)
            for member, value in zip(members, event.values, strict=False):
                if member.name in scales:
                    positions, times, values = rank.samples.setdefault(member.name,
                                                                       ([], [], []))
                    positions.append(rank.position)
                    times.append(event.time)
                    values.append(value)
        elif isinstance(event, send_types + recv_types):
            region = holder(rank, event)
            is_send = isinstance(event, send_types)
            region.kind = "send" if is_send else "recv"
            region.comm = event.communicator._ref
            region.peer = _world_rank(event.communicator,
                                      event.receiver if is_send else event.sender,
                                      ranks, where(rank, event))
            region.mpi_tag = int(event.msg_tag)
            region.tag = attribute_tag(event)
            if any_order_attribute is not None and event.attributes:
                region.any_order = bool(event.attributes.get(any_order_attribute, 0))
        elif isinstance(event, events.MpiCollectiveBegin):
            region = holder(rank, event)
            region.kind, region.collective_open = "collective", True
        elif isinstance(event, events.MpiCollectiveEnd):
            region = holder(rank, event)
            if not region.collective_open:
                raise _ReadError(f"{where(rank, event)}: MpiCollectiveEnd without "
                                 f"MpiCollectiveBegin in region {region.name!r}")
            size = len(event.communicator.group.members)
            if size != len(state):
                raise _ReadError(f"{where(rank, event)}: collective on communicator "
                                 f"{event.communicator.name!r} of {size} ranks; jitterlab's "
                                 f"collectives span all {len(state)} ranks")
            operation = str(event.collective_op).rsplit(".", 1)[-1]
            if operation not in BARRIER_LIKE_OPS:
                raise _ReadError(f"{where(rank, event)}: region {region.name!r} is a "
                                 f"{operation} collective, in which ranks do not all wait "
                                 f"for each other; jitterlab's collectives are barrier-like "
                                 f"({', '.join(BARRIER_LIKE_OPS)}). Record rooted "
                                 f"collectives as their messages (e.g. Score-P's "
                                 f"point-to-point view of them) to estimate their noise")
            region.kind, region.collective_open = "collective", False
            region.comm = event.communicator._ref
            region.tag = attribute_tag(event)
    for rank in state:
        if expected[rank.number] and rank.position != expected[rank.number]:
            raise _ReadError(f"rank {rank.number} ({rank.name}): its events end after "
                             f"{rank.position} of the {expected[rank.number]} records "
                             f"defined; the archive is damaged or truncated")
        if rank.stack:
            region = rank.stack[-1]
            raise _ReadError(f"rank {rank.number} ({rank.name}): region {region.name!r} "
                             f"entered at {_seconds(time_of(rank.times[region.enter]))} is "
                             f"never left (a truncated trace?)")
    return state


def _sample_at(rank: _Rank, record: int, member: str):
    """The raw counter value of ``member`` at region record ``record`` (a sample with the
    same timestamp, just before the record or else just after it), or None."""
    positions, times, values = rank.samples.get(member, ((), (), ()))
    time, position = rank.times[record], rank.positions[record]
    before = bisect.bisect_left(positions, position) - 1
    if before >= 0 and times[before] == time:
        return values[before]
    after = before + 1
    if after < len(positions) and times[after] == time:
        return values[after]
    return None


def _intervals(rank: _Rank) -> list[tuple]:
    """(kind, first record, last record, region) per interval of a rank."""
    intervals = []
    depth = 0
    open_at = None  # record that opened the current compute stretch
    record = 0
    n_records = len(rank.times)
    while record < n_records:
        region = rank.regions[record]
        entering = region.enter == record
        if entering and region.kind:
            if open_at is not None:
                intervals.append(("compute", open_at, record, None))
            intervals.append((region.kind, record, region.leave, region))
            record = region.leave
            open_at = record if depth > 0 else None
        elif entering:
            if depth == 0:
                open_at = record
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                intervals.append(("compute", open_at, record, None))
                open_at = None
        record += 1
    return intervals


def _match_messages(rows: dict, use_attribute: bool, describe) -> np.ndarray:
    """The event-trace tag of every message row (MPI matching, see the module doc)."""
    kind = rows["kind"]
    tags = np.array(rows["tag"], dtype=np.int64)
    groups: dict = {}
    for row, what in enumerate(kind):
        if what in ("send", "recv"):
            source, target = ((rows["rank"][row], rows["peer"][row]) if what == "send"
                              else (rows["peer"][row], rows["rank"][row]))
            key = (source, target, rows["comm"][row], rows["mpi_tag"][row])
            groups.setdefault(key, ([], []))[what == "recv"].append(row)
    pairs = []
    for (source, target, _, mpi_tag), (sends, recvs) in groups.items():
        if len(sends) != len(recvs):
            k = min(len(sends), len(recvs))
            if len(sends) > k:
                row, other, missing = sends[k], target, "receive"
                what = f"send to rank {target}"
            else:
                row, other, missing = recvs[k], source, "send"
                what = f"recv from rank {source}"
            raise _ReadError(f"{describe(row)}: {what} with MPI tag {mpi_tag} (the "
                             f"{_ordinal(k + 1)} such message) has no matching {missing} "
                             f"on rank {other} ({len(sends)} sends, {len(recvs)} receives)")
        pairs.extend(zip(sends, recvs, strict=True))
    if use_attribute:
        for send, recv in pairs:
            if tags[send] != tags[recv]:
                raise _ReadError(f"{describe(recv)}: its {TAG_ATTRIBUTE} {tags[recv]} "
                                 f"differs from that of its matching send "
                                 f"({describe(send)}: {tags[send]})")
        return tags
    tags[np.array(rows["kind"]) == "compute"] = 0
    # the k-th message r -> p with MPI tag t, in the order of the sends, gets t + k * 2**32
    pairs.sort()
    occurrence: dict = {}
    for send, recv in pairs:
        key = (rows["rank"][send], rows["peer"][send], rows["mpi_tag"][send])
        k = occurrence.get(key, 0)
        occurrence[key] = k + 1
        tags[send] = tags[recv] = rows["mpi_tag"][send] + k * TAG_STRIDE
    return tags


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def read_otf2_events(path, *, metrics=None, latency: float | None = None) -> EventTrace:
    """Read an OTF2 archive (Score-P, TAU, :func:`write_otf2_events`) as an event trace.

    Parameters
    ----------
    path : str or path
        The anchor file (``traces.otf2``) or the archive directory holding it.
    metrics : str, sequence of str or dict, optional
        The metric members holding the noise counters; a dict maps member name to source
        name. Default: every member named ``noise_<source>``.
    latency : float, optional
        Least wire time of a message; default: the one recorded by
        :func:`write_otf2_events`, else 0. [s]

    Returns
    -------
    EventTrace
        With attrs ``source="otf2"``, ``otf2_creator`` and ``timer_resolution_hz`` for a
        foreign archive; the written attrs for one jitterlab wrote.

    Raises
    ------
    FileNotFoundError
        When there is no such archive.
    ValueError
        Naming the file, and the rank, interval and record where it applies: a damaged or
        truncated archive, no noise metric, a noise sample missing at an interval's start
        or end, unbalanced regions, a message without its match (MPI's matching rules),
        a region with two messages, a collective on part of the ranks, and every check of
        :class:`~jitterlab.traces.events.EventTrace`.

    Notes
    -----
    The encoding is described in the module docstring (:mod:`jitterlab.io.otf2`).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from jitterlab.testing import random_events
    >>> trace = random_events(1, n_ranks=3, steps=6)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     anchor = write_otf2_events(trace, pathlib.Path(tmp) / "run")
    ...     back = read_otf2_events(anchor)
    >>> back.n_ranks, len(back) == len(trace)
    (3, True)
    """
    anchor = _anchor(path)
    otf2 = otf2_package()
    import _otf2

    try:
        reader = otf2.reader.Reader(str(anchor))
    except (_otf2.Error, otf2.error.Error, OSError, ValueError, KeyError) as err:
        raise _damaged(anchor, err) from None
    try:
        return _read(reader, anchor, metrics, latency)
    except _ReadError as err:
        # a cut event file may also read as wrong records rather than fail: say so
        damaged = _damaged_locations(anchor)
        if damaged:
            raise _damaged(anchor, err, damaged) from None
        raise ValueError(f"{anchor}: {err}") from None
    except (_otf2.Error, otf2.error.Error, KeyError, IndexError) as err:
        raise _damaged(anchor, err, _damaged_locations(anchor)) from None
    finally:
        reader.close()


def _damaged_locations(anchor: Path) -> str:
    """Which ranks' event files cannot be read to their end (read one by one)."""
    import _otf2

    otf2 = otf2_package()
    try:
        with otf2.reader.open(str(anchor)) as reader:
            ranks = _ranks_of(reader.definitions, anchor)
    except (_otf2.Error, otf2.error.Error, ValueError, KeyError):
        return ""
    bad = []
    for ref, (rank, name) in sorted(ranks.items(), key=lambda item: item[1]):
        count, last = 0, None
        try:
            with otf2.reader.open(str(anchor)) as reader:
                location = reader.definitions.locations[ref]
                for _, event in reader.events(location):
                    count, last = count + 1, event.time
            complete = count == location.number_of_events
        except (_otf2.Error, otf2.error.Error, KeyError, IndexError):
            complete = False
        if not complete:
            bad.append(f"rank {rank} ({name}) after {count} records"
                       + ("" if last is None else f" (last timestamp {last} ticks)"))
    return f"; unreadable events: {', '.join(bad)}" if bad else ""


def _read(reader, anchor: Path, metrics, latency) -> EventTrace:
    import _otf2

    definitions = reader.definitions
    names = _otf2.Reader_GetPropertyNames(reader.handle) or []
    document = None
    if PROPERTY in names:
        try:
            document = json.loads(_otf2.Reader_GetProperty(reader.handle, PROPERTY))
        except ValueError as err:
            raise ValueError(f"{anchor}: damaged {PROPERTY} property ({err})") from None
    resolution = int(reader.timer_resolution)
    if resolution <= 0:
        raise ValueError(f"{anchor}: timer resolution {resolution} must be > 0")
    zero = (int(document["time_zero_ticks"]) if document
            else int(definitions.clock_properties.global_offset))

    def time_of(ticks: int) -> float:
        return (ticks - zero) / resolution

    scales = _noise_members(definitions, metrics, anchor)
    ranks = _ranks_of(definitions, anchor)
    state = _read_records(reader, ranks, scales, anchor, time_of)

    columns = {name: [] for name in ("rank", "seq", "kind", "start", "end", "peer", "tag",
                                     "attribute", "comm", "mpi_tag", "region", "any_order")}
    raw_noise = {member: [] for member in scales}
    for rank in state:
        instances = 0
        for seq, (kind, first, last, region) in enumerate(_intervals(rank)):
            for member in scales:
                values = [_sample_at(rank, record, member) for record in (first, last)]
                for value, record, edge in zip(values, (first, last), ("start", "end"),
                                               strict=True):
                    if value is None:
                        raise _ReadError(
                            f"rank {rank.number} ({rank.name}), interval seq {seq} ({kind}, "
                            f"{_seconds(time_of(rank.times[first]))} to "
                            f"{_seconds(time_of(rank.times[last]))}): no sample of metric "
                            f"{member!r} at its {edge} "
                            f"({_seconds(time_of(rank.times[record]))}); noise metrics "
                            f"must be recorded at every Enter and Leave")
                raw_noise[member].append(values[1] - values[0])
            tag = 0
            if kind == "collective":
                tag = instances
                instances += 1
            for name, value in (("rank", rank.number), ("seq", seq), ("kind", kind),
                                ("start", rank.times[first]), ("end", rank.times[last]),
                                ("peer", region.peer if region else -1), ("tag", tag),
                                ("attribute", region.tag if region else
                                 (rank.tags[first] or 0)),
                                ("comm", region.comm if region else -1),
                                ("mpi_tag", region.mpi_tag if region else 0),
                                ("region", region.name if region else "compute"),
                                ("any_order", bool(region and region.any_order))):
                columns[name].append(value)

    def describe(row: int) -> str:
        return (f"rank {columns['rank'][row]} ({state[columns['rank'][row]].name}), "
                f"interval seq {columns['seq'][row]} ({columns['region'][row]} at "
                f"{_seconds(time_of(columns['start'][row]))})")

    if all(tag is not None for tag in columns["attribute"]):
        columns["tag"] = columns["attribute"]  # written by jitterlab: its own tags
        columns["tag"] = _match_messages(columns, True, describe)
    else:
        columns["tag"] = _match_messages(columns, False, describe)
    frame = pd.DataFrame({name: columns[name] for name in
                          ("rank", "seq", "kind", "peer", "tag")})
    frame["kind"] = pd.Categorical(frame["kind"], categories=KINDS)
    if any(columns["any_order"]):
        frame["any_order"] = np.array(columns["any_order"], dtype=np.bool_)
    for name in ("start", "end"):
        ticks = np.array([t - zero for t in columns[name]], dtype=np.int64)
        frame[name] = ticks / resolution
    for member, (source, numerator, denominator) in scales.items():
        values = np.asarray(raw_noise[member], dtype=np.float64) * numerator
        frame[NOISE_PREFIX + source] = values / denominator if denominator != 1 else values
    if document:
        attrs = dict(document.get("attrs", {}))
        attrs.pop("units", None)
        recorded = document.get("latency", 0.0)
    else:
        attrs = {"source": "otf2", "otf2_creator": _otf2.Reader_GetCreator(reader.handle),
                 "timer_resolution_hz": resolution}
        recorded = 0.0
    try:
        return EventTrace(frame, latency=recorded if latency is None else latency,
                          file=anchor, **attrs)
    except ValueError as err:  # name the archive, not only its anchor file
        message = str(err)
        if message.startswith(f"{anchor.name}: "):
            message = message[len(anchor.name) + 2:]
        raise _ReadError(message) from None






