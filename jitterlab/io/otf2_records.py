"""The records of an OTF2 archive, rank by rank: the encoding's constants and the pass
that collects each rank's regions, MPI records and noise samples.

:func:`jitterlab.io.otf2.read_otf2_events` turns what :func:`read_records` collects into
an event trace (:func:`intervals`, :func:`sample_at`, :func:`match_messages`);
:mod:`jitterlab.io.otf2_write` writes the same encoding. The encoding is described in
:mod:`jitterlab.io.otf2`.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..traces.events import NOISE_PREFIX

__all__ = ["Region", "Rank", "ReadError", "noise_members", "ranks_of", "read_records",
           "sample_at", "intervals", "match_messages", "otf2_package", "seconds_text",
           "TIMER_RESOLUTION", "ARCHIVE_NAME", "PROPERTY", "TAG_ATTRIBUTE",
           "ANY_ORDER_ATTRIBUTE", "BARRIER_LIKE_OPS", "FORMAT_VERSION", "TAG_STRIDE"]

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


def otf2_package():
    try:
        import otf2
    except ImportError as err:  # pragma: no cover - otf2 is a dependency
        raise ImportError("reading and writing OTF2 needs the 'otf2' package "
                          "(pip install otf2)") from err
    return otf2


def seconds_text(value: float) -> str:
    return f"{value:.12g} s"


@dataclass
class Region:
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
class Rank:
    """The records of one rank, in the order of the trace."""
    number: int
    name: str
    position: int = 0  # records seen, region or metric
    times: list = field(default_factory=list)  # timestamp of each region record [ticks]
    positions: list = field(default_factory=list)  # its place among all records
    regions: list = field(default_factory=list)  # the Region it enters or leaves
    tags: list = field(default_factory=list)  # the jitterlab::tag attribute of an Enter
    stack: list = field(default_factory=list)
    #: per noise member: positions, timestamps and raw values of its samples
    samples: dict = field(default_factory=dict)


class ReadError(ValueError):
    pass


def noise_members(definitions, metrics, anchor: Path) -> dict:
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


def ranks_of(definitions, anchor: Path) -> dict:
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
        raise ReadError(f"{where}: rank {rank_in_comm} is not in communicator "
                         f"{comm.name!r}") from None
    if location._ref not in ranks:
        raise ReadError(f"{where}: rank {rank_in_comm} of communicator {comm.name!r} is "
                         f"not an MPI rank of the archive")
    return ranks[location._ref][0]


def read_records(reader, ranks: dict, scales: dict, anchor: Path, time_of) -> list[Rank]:
    """One pass over the events: region records, MPI records and noise samples per rank."""
    otf2 = otf2_package()
    events = otf2.events
    tag_attribute = next((a for a in reader.definitions.attributes
                          if a.name == TAG_ATTRIBUTE), None)
    any_order_attribute = next((a for a in reader.definitions.attributes
                                if a.name == ANY_ORDER_ATTRIBUTE), None)
    state = [Rank(rank, name) for rank, name in sorted(ranks.values())]
    expected = {rank: reader.definitions.locations[ref].number_of_events
                for ref, (rank, _) in ranks.items()}
    send_types = (events.MpiSend, events.MpiIsend)
    recv_types = (events.MpiRecv, events.MpiIrecv)

    def where(rank: Rank, event) -> str:
        return (f"rank {rank.number} ({rank.name}), {type(event).__name__} record at "
                f"{seconds_text(time_of(event.time))}")

    def holder(rank: Rank, event) -> Region:
        if not rank.stack:
            raise ReadError(f"{where(rank, event)}: an MPI record outside every region")
        region = rank.stack[-1]
        outer = next((r for r in rank.stack[:-1] if r.kind), None)
        inner = region.holds_inner
        if outer is not None or inner:
            raise ReadError(f"{where(rank, event)}: MPI records in nested regions "
                             f"({(outer or region).name!r} and one inside it); an MPI "
                             f"interval cannot hold another")
        busy = region.kind and not (isinstance(event, events.MpiCollectiveEnd)
                                    and region.collective_open)
        if busy:
            raise ReadError(f"{where(rank, event)}: region {region.name!r} already holds "
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
                region = Region(event.region.name, len(rank.times))
                rank.stack.append(region)
            else:
                if not rank.stack or rank.stack[-1].name != event.region.name:
                    open_name = rank.stack[-1].name if rank.stack else "none"
                    raise ReadError(f"{where(rank, event)}: Leave of region "
                                     f"{event.region.name!r} while the open region is "
                                     f"{open_name!r}")
                region = rank.stack.pop()
                region.leave = len(rank.times)
                if rank.stack and (region.kind or region.holds_inner):
                    rank.stack[-1].holds_inner = True
                if region.collective_open:
                    raise ReadError(f"{where(rank, event)}: region {region.name!r} has an "
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
                raise ReadError(f"{where(rank, event)}: MpiCollectiveEnd without "
                                 f"MpiCollectiveBegin in region {region.name!r}")
            size = len(event.communicator.group.members)
            if size != len(state):
                raise ReadError(f"{where(rank, event)}: collective on communicator "
                                 f"{event.communicator.name!r} of {size} ranks; jitterlab's "
                                 f"collectives span all {len(state)} ranks")
            operation = str(event.collective_op).rsplit(".", 1)[-1]
            if operation not in BARRIER_LIKE_OPS:
                raise ReadError(f"{where(rank, event)}: region {region.name!r} is a "
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
            raise ReadError(f"rank {rank.number} ({rank.name}): its events end after "
                             f"{rank.position} of the {expected[rank.number]} records "
                             f"defined; the archive is damaged or truncated")
        if rank.stack:
            region = rank.stack[-1]
            raise ReadError(f"rank {rank.number} ({rank.name}): region {region.name!r} "
                             f"entered at {seconds_text(time_of(rank.times[region.enter]))} is "
                             f"never left (a truncated trace?)")
    return state


def sample_at(rank: Rank, record: int, member: str):
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


def intervals(rank: Rank) -> list[tuple]:
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


def match_messages(rows: dict, use_attribute: bool, describe) -> np.ndarray:
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
            raise ReadError(f"{describe(row)}: {what} with MPI tag {mpi_tag} (the "
                             f"{_ordinal(k + 1)} such message) has no matching {missing} "
                             f"on rank {other} ({len(sends)} sends, {len(recvs)} receives)")
        pairs.extend(zip(sends, recvs, strict=True))
    if use_attribute:
        for send, recv in pairs:
            if tags[send] != tags[recv]:
                raise ReadError(f"{describe(recv)}: its {TAG_ATTRIBUTE} {tags[recv]} "
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
