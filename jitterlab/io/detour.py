"""The chunk store of a detour run (``jitterlab measure detour``): its format and readers.

A run of :func:`jitterlab.measure.detour` is written chunk by chunk into a directory
(:mod:`jitterlab.io.chunks`), so that a killed run keeps what it recorded. This module
defines the store's markers and reads it back: the jitter trace (:func:`read_detour`),
each detour with its absolute counter start (:func:`detour_table`) and the kernel events
recorded beside them (:func:`read_kernel_events`), on the counter's time base.
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from ..traces.trace import Trace, absolute_to_rows
from . import chunks as chunk_store
from .ftrace import read_ftrace

__all__ = ["read", "read_detour", "detour_table", "read_kernel_events", "SOURCE", "KIND",
           "STORE_KEYS", "SYNC_MARK"]

SOURCE = "jitterlab.bench.detour"  # the files' format marker (kept)


KIND = "detour"


#: keys of the chunk-store metadata that are not trace attributes
STORE_KEYS = ("format", "version", "kind", "frequency_hz", "unit")


#: text of the ``trace_marker`` write after every chunk of a recording with kernel events:
#: ``jitterlab_sync <chunk> <counter before the write>``; the chunk's ``sync`` array holds
#: ``[chunk, counter before, counter after]``
SYNC_MARK = "jitterlab_sync"


#: a recording whose trace clock is not the counter is mapped onto it by a straight line
#: through the sync marks; a mark further than this from the line is refused [ticks]
SYNC_TOLERANCE_TICKS = 100_000
_SYNC_LINE = re.compile(SYNC_MARK + r" (\d+) (\d+)\s*\Z")


# --------------------------------------------------------------------------------------
# from chunks to a trace
# --------------------------------------------------------------------------------------
def trace_from_chunks(metadata: dict, chunks: list[dict], name: str) -> Trace:
    """Concatenate the measured intervals of the chunks into one trace (in cycles)."""
    if not chunks:
        raise ValueError(f"{name}: no complete chunk: the run stopped before its first "
                         "chunk was stored")
    frequency = float(metadata["frequency_hz"])
    firsts = np.array([int(c["span"][0]) for c in chunks], dtype=np.int64)
    lasts = np.array([int(c["span"][1]) for c in chunks], dtype=np.int64)
    lengths = lasts - firsts
    offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    positions = np.concatenate([np.asarray(c["start"], dtype=np.int64) - first + offset
                                for c, first, offset in zip(chunks, firsts, offsets,
                                                            strict=True)])
    durations = np.concatenate([np.asarray(c["duration"], dtype=np.int64) for c in chunks])
    iterations = int(sum(int(c["iterations"]) for c in chunks))
    total = int(lengths.sum())
    n_events = int(durations.size)
    undisturbed = total - int(durations.sum())
    attrs = {key: value for key, value in metadata.items() if key not in STORE_KEYS}
    attrs.update(
        measured_duration=total / frequency,
        unmeasured=float(np.sum(firsts[1:] - lasts[:-1])) / frequency,
        chunks=len(chunks), events_detected=n_events,
        mean_loop_time=(undisturbed / (iterations - n_events) / frequency
                        if iterations > n_events else None),
    )
    attrs.setdefault("complete", False)
    attrs["tsc_origin"] = int(firsts[0])
    if n_events == 0:
        positions = durations = np.zeros(1, dtype=np.int64)
    try:
        jitter, gap, start_0 = absolute_to_rows(positions.astype(np.float64),
                                                durations.astype(np.float64), float(total))
        trace = Trace(jitter, gap, "cycles", frequency, **attrs)
    except ValueError as err:
        raise ValueError(f"{name}: {err}") from None
    trace.attrs["offset"] = start_0 / frequency
    return trace


def read_detour(path) -> Trace:
    """Read a run of :func:`detour` stored in chunks (also an interrupted one).

    Parameters
    ----------
    path : path-like
        The ``output`` directory of :func:`detour` (``jitterlab measure detour`` keeps it
        next to its output file as ``<output>.detour`` until the run has finished).

    Returns
    -------
    Trace
        As returned by :func:`detour`, built from every complete chunk; an unreadable
        last chunk and leftover temporary files are ignored. A missing or unreadable chunk
        in the middle ends what is read: the chunks before it are returned, with a
        ``DamagedStoreWarning`` (:mod:`jitterlab.io.chunks`) naming it and the files
        after it. ``attrs["complete"]`` is False for a run that did not finish (killed or
        interrupted).

    Raises
    ------
    ValueError
        If ``path`` is not a detour chunk store, or holds no complete chunk before the
        first damaged one.
    """
    path = Path(path)
    metadata, chunks = chunk_store.read_store(path, kind=KIND)
    return trace_from_chunks(metadata, chunks, path.name)


def detour_table(path) -> pd.DataFrame:
    """Every detour of a stored run with its absolute timestamp-counter start.

    The chunk store keeps, for every detour, the counter value read just before it (also in
    runs stored before this function existed); :func:`read_detour` turns them into relative
    rows, this function keeps them.

    Parameters
    ----------
    path : path-like
        A chunk store of :func:`detour` (``output``; also an interrupted run).

    Returns
    -------
    pandas.DataFrame
        One row per detour, in time order (row ``i`` is event ``i`` of
        :func:`read_detour`): ``tsc_start`` and ``tsc_length`` [ticks] (the loop iteration
        that held the detour), ``start`` [s] since ``attrs["tsc_origin"]`` (wall time: the
        unmeasured moments between chunks included) and ``length`` [s]. ``attrs``:
        ``tsc_origin`` and ``tsc_end`` (first and last counter read of the run), ``tsc_hz``,
        ``cpu``, ``spans`` (``[first, last]`` counter reads of each chunk) and the run's
        metadata (``measured_tid``, ``trace_clock``, ... when kernel events were recorded).
    """
    path = Path(path)
    metadata, chunks = chunk_store.read_store(path, kind=KIND)
    if not chunks:
        raise ValueError(f"{path.name}: no complete chunk: the run stopped before its first "
                         "chunk was stored")
    frequency = float(metadata["frequency_hz"])
    starts = np.concatenate([np.asarray(c["start"], dtype=np.int64) for c in chunks])
    lengths = np.concatenate([np.asarray(c["duration"], dtype=np.int64) for c in chunks])
    origin = int(chunks[0]["span"][0])
    table = pd.DataFrame({"tsc_start": starts, "tsc_length": lengths,
                          "start": (starts - origin) / frequency, "length": lengths / frequency})
    table.attrs.update({key: value for key, value in metadata.items()
                        if key not in STORE_KEYS})
    table.attrs.update(tsc_origin=origin, tsc_end=int(chunks[-1]["span"][1]), tsc_hz=frequency,
                       spans=[[int(c["span"][0]), int(c["span"][1])] for c in chunks])
    return table


def _clock_mapping(events: pd.DataFrame, syncs: list, counter_clock: bool, name: str):
    """Check (counter clock) or fit (other clocks) the sync marks; returns the attrs."""
    marks = events[(events["event"] == "tracing_mark_write")
                   & events["body"].str.startswith(SYNC_MARK)]
    found = {}
    for body, ticks, stamp in zip(marks["body"], marks["ticks"], marks["timestamp"],
                                  strict=True):
        match = _SYNC_LINE.match(body)
        if match:
            found[int(match.group(1))] = (ticks, stamp)
    pairs = [(sync, found[int(sync[0])]) for sync in syncs if int(sync[0]) in found]
    if not pairs:
        raise ValueError(f"{name}: no sync mark among the kernel events: cannot put them on "
                         "the detours' time base")
    before = np.array([int(sync[1]) for sync, _ in pairs], dtype=np.int64)
    after = np.array([int(sync[2]) for sync, _ in pairs], dtype=np.int64)
    if counter_clock:
        ticks = np.array([int(mark[0]) for _, mark in pairs], dtype=np.int64)
        outside = np.maximum(before - ticks, ticks - after).clip(min=0)
        if outside.max() > 0:
            raise ValueError(f"{name}: a sync mark's counter timestamp lies "
                             f"{int(outside.max())} ticks outside the counter reads around "
                             "its write: the trace clock is not this CPU's counter")
        return {"clock_mapping": "identity (trace clock is the counter)",
                "sync_marks": len(pairs), "sync_bracket_max": int((after - before).max())}
    seconds = np.array([float(mark[1]) for _, mark in pairs])
    middle = (before + after) / 2.0
    if len(pairs) < 2:
        raise ValueError(f"{name}: one sync mark only: offset and drift between the trace "
                         "clock and the counter need two")
    # a mark whose two counter reads were interrupted (a preemption, a VM exit) says only
    # that its time lies somewhere in that wide bracket: the line is fitted through the
    # tight marks, and every mark must lie on it within its own half-bracket
    bracket = (after - before).astype(float)
    tight = bracket <= max(4.0 * float(np.median(bracket)), 1.0)
    if tight.sum() < 2:
        tight[:] = True
    drift, offset = np.polyfit(seconds[tight] - seconds[0], middle[tight] - middle[0], 1)
    residual = middle - middle[0] - (offset + drift * (seconds - seconds[0]))
    excess = np.abs(residual) - bracket / 2.0
    if excess.max() > SYNC_TOLERANCE_TICKS:
        raise ValueError(f"{name}: the sync marks lie up to {np.abs(residual).max():.0f} "
                         "ticks off a straight line (more than their counter reads allow): "
                         "the trace clock does not follow the counter")
    return {"clock_mapping": "linear fit through the sync marks",
            "sync_marks": len(pairs), "clock_rate": float(drift),
            "clock_offset_ticks": float(middle[0] + offset - drift * seconds[0]),
            "clock_residual_max_ticks": float(np.abs(residual).max()),
            "sync_bracket_max": int((after - before).max())}


def read_kernel_events(path) -> pd.DataFrame:
    """The kernel events recorded beside the detours (``detour(..., kernel_events=True)``).

    Parameters
    ----------
    path : path-like
        A chunk store of :func:`detour` with kernel events (also an interrupted run).

    Returns
    -------
    pandas.DataFrame
        The events of every stored chunk as :func:`jitterlab.io.read_ftrace` returns them,
        on the detours' time base: ``ticks`` is the counter value (recorded with trace
        clock ``x86-tsc``, checked against the sync marks; for another clock mapped by the
        line through the sync marks), ``timestamp`` [s] = ``ticks / tsc_hz``. ``attrs`` as
        read_ftrace's, plus ``clock`` (the trace clock), ``clock_mapping``,
        ``sync_marks``, ``lost_events`` (the instance's overrun + dropped counts at the
        end, or the lost-event marks of the stream for a run that did not finish),
        ``steal_time`` [s] (the CPU's steal time over the stored chunks; None when the
        kernel does not report it), ``measured_tid`` and ``cpu``.

    Raises
    ------
    ValueError
        If the run recorded no kernel events, or the sync marks do not fit the counter.

    Warns
    -----
    jitterlab.io.ftrace.LostEventsWarning
        When the stream says events were lost.
    """

    path = Path(path)
    metadata, chunks = chunk_store.read_store(path, kind=KIND)
    if not metadata.get("kernel_events"):
        raise ValueError(f"{path.name}: this run recorded no kernel events (run it with "
                         "kernel_events=True / --kernel-events)")
    chunks = [chunk for chunk in chunks if "kernel_events" in chunk]
    blocks = [np.asarray(c["kernel_events"], dtype=np.uint8).tobytes() for c in chunks]
    if metadata.get("kernel_events_encoding") == "zlib":
        blocks = [zlib.decompress(block) for block in blocks]
    text = b"".join(blocks)
    frequency = float(metadata["frequency_hz"])
    events = read_ftrace("# tracer: nop\n" + text.decode("utf-8", errors="replace") + "\n",
                         tsc_hz=frequency)
    counter_clock = events.attrs.get("timestamp_unit") == "ticks"
    mapping = _clock_mapping(events, [c["sync"] for c in chunks], counter_clock, path.name)
    if not counter_clock:
        ticks = np.rint(mapping["clock_offset_ticks"]
                        + mapping["clock_rate"] * events["timestamp"].to_numpy())
        events["ticks"] = pd.array(ticks.astype(np.int64), dtype="Int64")
        events["timestamp"] = ticks / frequency
    lost = metadata.get("kernel_events_lost")
    steal = None
    start, end = metadata.get("steal_ticks_start", -1), int(chunks[-1]["steal_ticks"])
    if start >= 0 and end >= 0:
        steal = (end - start) / float(metadata["clock_ticks_per_second"])
    events.attrs.update(mapping, source=path.name, clock=metadata.get("trace_clock"),
                        lost_events=(sum(lost.values()) if lost
                                     else events.attrs.get("lost_events")),
                        steal_time=steal, measured_tid=metadata.get("measured_tid"),
                        cpu=metadata.get("cpu"))
    return events


def read(path) -> Trace:
    """Read a finished or interrupted detour run (the reader of :func:`jitterlab.io.read_trace`)."""
    return read_detour(path)
