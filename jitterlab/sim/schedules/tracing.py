"""A simulated schedule run as an event trace: ``simulate_schedule(..., detail="events")``.

The event trace (:class:`~jitterlab.events.EventTrace`) is what a tracer would record on
each rank's CPU: one interval per use of the CPU, in time order, with the noise that
struck it. A rank's CPU uses in a GOAL run are

* a ``calc``: the "compute" interval from its start to its end;
* a ``send``: the "send" interval of its overhead, o + (s−1)·O (the NIC's g and G and a
  rendezvous wait are not CPU time);
* the reception of a message: the "recv" interval of the receive that the message
  matched. It begins where the rank's previous interval ended (the rank waited for the
  message there, as a blocking receive waits inside MPI_Recv) and ends when the CPU has
  taken the message, o + max((s−1)·O, (s−1)·G) after it began to. A message that the CPU
  took before the receive was posted (LogGOPSim's progress on arrival) gives instead a
  receive of no duration at the posting, in program order, and the time of taking it is
  a gap (its noise is not in the trace): so the order of a rank's intervals is its
  program's, and :meth:`~jitterlab.events.EventTrace.to_schedule` gives back a schedule
  that runs, without noise, as the original did.

The noise of an interval is the noise the kernel added to that CPU use, so it is
exact; time in which a rank's CPU is free and no receive waits (a calc or a send
held by its dependencies or by the NIC) is a gap between intervals. Every rank's first
interval starts at 0. A message's tag in the trace is ``tag + k·2**32`` for the k-th
message from one rank to another with GOAL tag ``tag``, the rule of
:func:`jitterlab.io.read_otf2_events` (the GOAL tag is ``tag % 2**32``); a receive of
any source or tag gets the peer and tag of the message it took: the kernel records
which send each receive matched (LogGOPSim's list matching: a posted receive takes the
first waiting message it accepts, an arriving message the first posted receive that
accepts it), so a receive of any source or tag pairs with the very message it took.
``latency`` is L.

A rank must run on one CPU (GOAL ``cpu 0``): an event trace has one timeline per rank.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...traces.events import KINDS, EventTrace
from ...traces.schedule import ANY_SOURCE, ANY_TAG, CALC, RECV, SEND, Schedule

__all__ = ["events_from_operations", "match_messages", "check_matches", "TAG_STRIDE"]

#: the k-th message of a (sender, receiver, tag) channel gets the trace tag tag + k·TAG_STRIDE
TAG_STRIDE = 2**32
_TRACE_KIND = {CALC: KINDS.index("compute"), SEND: KINDS.index("send"),
               RECV: KINDS.index("recv")}


def match_messages(schedule: Schedule, cpu_start) -> np.ndarray:
    """Per receive, the send whose message it took (−1 for other operations).

    With no receive of any source or tag, LogGOPSim matches the messages of one
    (sender, receiver, tag) channel in order: they are taken in the order they were sent
    (they arrive o + L after their send starts, and the queue keeps that order), and the
    k-th taken matches the k-th posted receive, whose CPU time is the taking of it. So
    the sends of a channel sorted by start and its receives sorted by the start of their
    CPU time pair up (equal times: by operation index).

    Raises
    ------
    ValueError
        For a schedule with a wildcard receive (the pairing is then not recoverable
        from the times: pass the kernel's ``matched`` to :func:`events_from_operations`).
    """
    s = schedule
    cpu_start = np.asarray(cpu_start, dtype=np.int64)
    recv = s.kind == RECV
    if np.any(recv & ((s.peer == ANY_SOURCE) | (s.tag == ANY_TAG))) or np.any(
            (s.kind == SEND) & (s.tag == ANY_TAG)):
        raise ValueError("detail='events' needs receives of a named source and tag (the "
                         "schedule has a wildcard; the pairing of its messages is not "
                         "recorded)")
    send = np.flatnonzero(s.kind == SEND)
    receive = np.flatnonzero(recv)
    # channel key: (receiver, sender, tag); then the time, then the index
    key_send = (send, cpu_start[send], s.tag[send], s.rank[send], s.peer[send])
    key_recv = (receive, cpu_start[receive], s.tag[receive], s.peer[receive],
                s.rank[receive])
    send = send[np.lexsort(key_send)]
    receive = receive[np.lexsort(key_recv)]
    channel_send = np.stack([s.peer[send], s.rank[send], s.tag[send]])
    channel_recv = np.stack([s.rank[receive], s.peer[receive], s.tag[receive]])
    if send.size != receive.size or not np.array_equal(channel_send, channel_recv):
        raise ValueError("the sends and receives of the schedule do not pair up channel "
                         "by channel (receiver, sender, tag)")
    matched = np.full(s.n_operations, -1, dtype=np.int64)
    matched[receive] = send
    return matched


def check_matches(schedule: Schedule, matched) -> np.ndarray:
    """``matched`` (per receive the send whose message it took, −1 elsewhere) as int64,
    checked against the schedule: each send taken once, by a receive on its destination
    that accepts its source and tag.

    Raises
    ------
    ValueError
        Naming the first receive whose pairing is impossible.
    """
    s = schedule
    matched = np.asarray(matched, dtype=np.int64)
    if matched.shape != (s.n_operations,):
        raise ValueError(f"matched must have one entry per operation ({s.n_operations}), "
                         f"got shape {matched.shape}")
    receive = np.flatnonzero(s.kind == RECV)
    source = matched[receive]
    valid = (source >= 0) & (source < s.n_operations)
    source_of = np.where(valid, source, 0)
    ok = (valid & (s.kind[source_of] == SEND) & (s.peer[source_of] == s.rank[receive])
          & ((s.peer[receive] == ANY_SOURCE) | (s.peer[receive] == s.rank[source_of]))
          & ((s.tag[receive] == ANY_TAG) | (s.tag[receive] == s.tag[source_of])))
    if not np.all(ok):
        i = int(receive[np.argmin(ok)])
        raise ValueError(f"operation {i} (a receive of rank {s.rank[i]}) is paired with "
                         f"operation {int(matched[i])}, not a send to it that it accepts")
    taken = np.bincount(source, minlength=s.n_operations)
    if np.any(taken[s.kind == SEND] != 1) or np.any(matched[s.kind != RECV] != -1):
        raise ValueError("matched must pair every send with exactly one receive (−1 for "
                         "sends and calcs)")
    return matched


def events_from_operations(schedule: Schedule, posted, cpu_start, cpu_end, noise, *,
                           overhead: int, latency: int, tick: float, matched=None,
                           attrs=None) -> EventTrace:
    """The event trace of one run from its operations' CPU times.

    Parameters
    ----------
    schedule : Schedule
        The schedule that ran (every operation on CPU 0).
    posted : array of int
        Per operation, when it started (a receive: when it was posted) [ticks].
    cpu_start, cpu_end, noise : array of int
        Per operation, when its CPU use began and ended and the noise in it [ticks]: a
        calc's run, a send's overhead, and for a receive the taking of its message.
    overhead, latency : int
        o and L [ticks].
    tick : float
        Seconds per tick. [s]
    matched : array of int, optional
        Per receive, the send whose message it took (−1 for sends and calcs), as the
        kernel records it (:func:`~jitterlab.sim.schedules.kernel.simulate_with_matches`).
        Needed for receives of any source or tag; without it the pairs are recovered
        from the times channel by channel (:func:`match_messages`).
    attrs : dict, optional
        Metadata of the trace.

    Returns
    -------
    EventTrace
        One ``noise_combined`` column.

    Raises
    ------
    ValueError
        If a receive's CPU time begins before its message can be there (send start
        + o + L), or CPU times of a rank overlap: the times are not of this schedule.
    """
    s = schedule
    n = s.n_operations
    if np.any(s.cpu != 0):
        i = int(np.argmax(s.cpu != 0))
        raise ValueError(f"operation {i} (rank {s.rank[i]}) runs on cpu {s.cpu[i]}: an "
                         f"event trace has one timeline per rank, so detail='events' needs "
                         f"every operation on cpu 0")
    present = np.bincount(s.rank, minlength=s.num_ranks)
    if np.any(present == 0):
        raise ValueError(f"rank {int(np.argmin(present))} has no operation: an event trace "
                         f"has every rank from 0")
    posted = np.asarray(posted, dtype=np.int64)
    cpu_start = np.asarray(cpu_start, dtype=np.int64)
    cpu_end = np.asarray(cpu_end, dtype=np.int64)
    noise = np.asarray(noise, dtype=np.int64)
    matched = (match_messages(s, cpu_start) if matched is None
               else check_matches(s, matched))
    recv = s.kind == RECV
    send = s.kind == SEND
    source = matched[recv]
    early = np.flatnonzero(cpu_start[recv] < cpu_start[source] + overhead + latency)
    if early.size:
        i = int(np.flatnonzero(recv)[early[0]])
        raise ValueError(f"operation {i} (rank {s.rank[i]}) takes its message before it "
                         f"can arrive: the times are not of this schedule")
    # peers and tags of the messages: the k-th on a (sender, receiver, tag) channel
    peer = np.where(s.kind == CALC, -1, s.peer).astype(np.int64)
    tag = np.zeros(n, dtype=np.int64)
    sends = np.flatnonzero(send)
    channel = np.stack([s.rank[sends], s.peer[sends], s.tag[sends]]).astype(np.int64)
    order = np.lexsort((sends, *channel[::-1]))
    key = channel[:, order]
    first = np.ones(order.size, dtype=bool)
    first[1:] = np.any(key[:, 1:] != key[:, :-1], axis=0)
    start_of = np.maximum.accumulate(np.where(first, np.arange(order.size), 0))
    number = np.empty(order.size, dtype=np.int64)
    number[order] = np.arange(order.size) - start_of
    tag[sends] = s.tag[sends] + number * TAG_STRIDE
    receives = np.flatnonzero(recv)
    tag[receives] = tag[source]
    peer[receives] = s.rank[source]
    # per rank, the CPU uses in time order; a receive's interval starts at the end of
    # the interval before it
    order = np.lexsort((np.arange(n), cpu_end, cpu_start, s.rank))
    rank = s.rank[order].astype(np.int64)
    begin, end = cpu_start[order], cpu_end[order]
    first_of_rank = np.ones(n, dtype=bool)
    first_of_rank[1:] = rank[1:] != rank[:-1]
    previous_end = np.where(first_of_rank, 0, np.r_[0, end[:-1]])
    overlap = np.flatnonzero(~first_of_rank & (begin < previous_end))
    if overlap.size:
        i = order[overlap[0]]
        raise ValueError(f"operation {i} (rank {s.rank[i]}) uses the CPU from "
                         f"{begin[overlap[0]]} ticks, before the previous use ends "
                         f"({previous_end[overlap[0]]}): the CPU times are inconsistent")
    begin = np.where(s.kind[order] == RECV, previous_end, begin)
    # a message taken before its receive was posted: the receive is the instant of the
    # posting, in program order; the CPU time of taking it is a gap
    early = np.flatnonzero((s.kind[order] == RECV) & (cpu_start[order] < posted[order]))
    if early.size:
        begin[early] = end[early] = posted[order][early]
        noise = noise.copy()
        noise[order[early]] = 0
        again = np.lexsort((order, end, begin, rank))
        order, begin, end = order[again], begin[again], end[again]
    seq = np.arange(n) - np.maximum.accumulate(np.where(first_of_rank, np.arange(n), 0))
    codes = np.array([_TRACE_KIND[int(k)] for k in (SEND, RECV, CALC)], dtype=np.int8)
    kind_code = codes[s.kind[order].astype(np.int64) - 1]
    rows = pd.DataFrame({
        "rank": rank, "seq": seq,
        "kind": pd.Categorical.from_codes(kind_code, categories=KINDS),
        "start": begin * tick, "end": end * tick,
        "peer": peer[order], "tag": tag[order],
        "noise_combined": noise[order] * tick,
    })
    return EventTrace(rows, latency=latency * tick, **(attrs or {}))
