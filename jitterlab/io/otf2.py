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

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ..traces.events import KINDS, NOISE_PREFIX, EventTrace
from .otf2_records import (  # noqa: F401  (the encoding's constants, importable from here)
    ANY_ORDER_ATTRIBUTE,
    ARCHIVE_NAME,
    BARRIER_LIKE_OPS,
    FORMAT_VERSION,
    PROPERTY,
    TAG_ATTRIBUTE,
    TAG_STRIDE,
    TIMER_RESOLUTION,
    ReadError,
    intervals,
    match_messages,
    noise_members,
    otf2_package,
    ranks_of,
    read_records,
    sample_at,
    seconds_text,
)

__all__ = ["read_otf2_events", "TIMER_RESOLUTION"]

_REGION_OF_KIND = {"compute": "compute", "send": "MPI_Send", "recv": "MPI_Recv",
                   "collective": "MPI_Barrier"}


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
    except ReadError as err:
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
            ranks = ranks_of(reader.definitions, anchor)
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

    scales = noise_members(definitions, metrics, anchor)
    ranks = ranks_of(definitions, anchor)
    state = read_records(reader, ranks, scales, anchor, time_of)

    columns = {name: [] for name in ("rank", "seq", "kind", "start", "end", "peer", "tag",
                                     "attribute", "comm", "mpi_tag", "region", "any_order")}
    raw_noise = {member: [] for member in scales}
    for rank in state:
        instances = 0
        for seq, (kind, first, last, region) in enumerate(intervals(rank)):
            for member in scales:
                values = [sample_at(rank, record, member) for record in (first, last)]
                for value, record, edge in zip(values, (first, last), ("start", "end"),
                                               strict=True):
                    if value is None:
                        raise ReadError(
                            f"rank {rank.number} ({rank.name}), interval seq {seq} ({kind}, "
                            f"{seconds_text(time_of(rank.times[first]))} to "
                            f"{seconds_text(time_of(rank.times[last]))}): no sample of metric "
                            f"{member!r} at its {edge} "
                            f"({seconds_text(time_of(rank.times[record]))}); noise metrics "
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
                f"{seconds_text(time_of(columns['start'][row]))})")

    if all(tag is not None for tag in columns["attribute"]):
        columns["tag"] = columns["attribute"]  # written by jitterlab: its own tags
        columns["tag"] = match_messages(columns, True, describe)
    else:
        columns["tag"] = match_messages(columns, False, describe)
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
        raise ReadError(message) from None






