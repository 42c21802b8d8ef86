"""The detour benchmark: a busy loop over the timestamp counter that records every detour.

A thread pinned to one CPU reads the timestamp counter (TSC) over and over. Undisturbed,
two successive reads are one loop iteration apart (``t_min`` at best, a few nanoseconds);
when the operating system takes the CPU away — a timer tick, an interrupt, another task —
the difference is as long as the detour. Every difference above a threshold is recorded
as a jitter event ``(start, duration)``; the result is a jitter trace in the form of
jitSim's TraceCollector (De & Mann, §3.1) and of the ``sysjitter`` tool.

The run is cut into chunks of ``chunk_seconds``. Between chunks (never inside the timed
loop) the events are stored and the progress bar is updated; with ``output`` every chunk
goes to its own file at once, so an interrupted or killed run keeps every completed chunk
(:func:`read_detour` reads them back). The few milliseconds spent between chunks are not
measured: the trace is the concatenation of the measured intervals (their total is in
``attrs["unmeasured"]``).

References
----------
.. [1] P. De, V. Mann, "jitSim: A Simulator for Predicting Scalability of Parallel
   Applications in Presence of OS Jitter", Euro-Par 2010 workshops (seed 000), §3.1
   (TraceCollector: deltas of successive timestamp reads compared with ``t_min``).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import signal
import threading
import zlib
from pathlib import Path

import numba
import numpy as np
from tqdm import tqdm

from ..io import chunks as _chunks
from ..io.detour import (  # noqa: F401  (the readers are jl.bench.* too)
    KIND,
    SOURCE,
    STORE_KEYS,
    SYNC_MARK,
    detour_table,
    read_detour,
    read_kernel_events,
    trace_from_chunks,
)
from ..traces.trace import Trace
from ._machine import check_seconds, machine_attrs, pinned, resolve_cpu, utc_now
from ._tsc import calibrate_tsc, check_cycle_counter, read_cycles, read_tsc, tsc_flags
from .tracefs import NOISE_EVENTS, trace_instance

logger = logging.getLogger(__name__)

__all__ = ["detour", "read_detour", "detour_table", "read_kernel_events", "probe_loop",
           "steal_ticks", "THRESHOLD_TMIN_FACTOR", "THRESHOLD_MEDIAN_FACTOR", "SOURCE",
           "SYNC_MARK"]

#: default threshold: this many times the minimum loop time t_min ...
THRESHOLD_TMIN_FACTOR = 10
#: ... but at least this many times the median loop time
THRESHOLD_MEDIAN_FACTOR = 4
#: loop iterations recorded by the probe that measures t_min and the median loop time
_PROBE_ITERATIONS = 1 << 18
#: events one chunk can hold; a chunk that fills up ends early and the next one goes on
_BUFFER_EVENTS = 1 << 20
#: the tracefs buffer of a recording with kernel events holds this many chunks of events
#: (at the rate of :func:`jitterlab.measure.tracefs.buffer_size_kb`, twice over)
_BUFFERED_CHUNKS = 10


@numba.njit(cache=True)
def _detour_loop(length, threshold, starts, durations):
    """Read the TSC until ``length`` cycles have passed or the buffers are full.

    Every difference of successive reads above ``threshold`` [cycles] is stored as an
    event: ``starts[k]`` is the read before the detour and ``durations[k]`` the
    difference. Nothing is allocated. Returns ``(n_events, first_read, last_read,
    iterations)``; the events lie within ``[first_read, last_read]``.
    """
    capacity = starts.size
    n = 0
    iterations = 0
    first = read_tsc()
    previous = first
    now = first
    while n < capacity:
        now = read_tsc()
        iterations += 1
        delta = now - previous
        if delta > threshold:
            starts[n] = previous
            durations[n] = delta
            n += 1
        if now - first >= length:
            break
        previous = now
    return n, first, now, iterations


def _buffer(size: int) -> np.ndarray:
    """An int64 array whose pages are already mapped (no page fault in the loop)."""
    return np.full(size, -1, dtype=np.int64)


def probe_loop(iterations: int = _PROBE_ITERATIONS) -> np.ndarray:
    """Loop times of the detour loop, every iteration recorded (threshold −1). [cycles]

    Runs on the calling thread as it is (pin it first). The minimum is ``t_min``;
    the median is the resolution of the benchmark.
    """
    check_cycle_counter()
    starts, durations = _buffer(iterations), _buffer(iterations)
    for _ in range(2):  # the first pass compiles (or loads) the kernel and warms caches
        n, _, _, _ = _detour_loop(np.int64(2**62), np.int64(-1), starts, durations)
    return durations[:n].copy()


def _command(duration, cpu, threshold, chunk_seconds) -> str:
    return (f"jitterlab.measure.detour(duration={duration!r}, cpu={cpu!r}, "
            f"threshold={threshold!r}, chunk_seconds={chunk_seconds!r})")


def detour(duration: float, cpu: int | None = None, threshold: float | None = None,
           output=None, chunk_seconds: float = 1.0, progress: bool = True, *,
           overwrite: bool = False, command: str | None = None,
           kernel_events=False) -> Trace:
    """Measure the detours of one CPU with a busy loop over the timestamp counter.

    Parameters
    ----------
    duration : float
        Measured time; the run stops at the end of the loop iteration that reaches it.
        [s]
    cpu : int, optional
        CPU to pin the measuring thread to (``os.sched_setaffinity``; the previous
        affinity is restored afterwards). Must be in the process's affinity set. Default:
        the highest-numbered CPU of that set.
    threshold : float, optional
        A loop iteration longer than this is a jitter event. Default:
        ``max(THRESHOLD_TMIN_FACTOR·t_min, THRESHOLD_MEDIAN_FACTOR·median)`` =
        ``max(10·t_min, 4·median loop time)``, from a probe of 2^18 loop iterations run
        just before. Must exceed the median loop time. [s]
    output : path-like, optional
        Directory to store the run in, one file per chunk (see
        :mod:`jitterlab.io.chunks`); it must not exist or be empty (or
        ``overwrite=True``). Read it back with :func:`read_detour`. Without it the events
        are kept in memory.
    chunk_seconds : float, default 1.0
        Length of one chunk: how often events are stored and the progress bar is
        updated; an interrupted run loses at most the chunk in progress. [s]
    progress : bool, default True
        Show a tqdm progress bar (on stderr).
    overwrite : bool, default False
        Replace an earlier run stored at ``output``.
    command : str, optional
        The command recorded in ``attrs["command"]`` (default: this call).
    kernel_events : bool or sequence of str, default False
        Also record the kernel events of the measured CPU (True: those of
        :data:`jitterlab.measure.tracefs.NOISE_EVENTS`; or a sequence of ``"system:event"``)
        in a private tracefs instance (:func:`jitterlab.measure.trace_instance`: trace clock
        ``x86-tsc``, buffer sized for the duration or, as it is drained after every chunk,
        for ten chunks if that is shorter; removed at the end, on Ctrl-C and on
        error; one left by a killed run is removed with a warning). Needs ``output``: after
        every chunk the events waiting in the instance are stored in the chunk beside its
        detours (zlib-compressed text), with a ``trace_marker`` sync mark (counter read
        before and after it; for a trace clock other than the counter, the line through
        these marks maps event times onto the counter) and the CPU's steal time from
        ``/proc/stat``. Read them with
        :func:`read_kernel_events`; join them with the detours with
        :func:`jitterlab.compare.attribution.attribute_recording`.

    Returns
    -------
    Trace
        ``unit="cycles"`` with the calibrated ``frequency_hz`` (as jitSim's traces):
        row ``i`` is the event ``jitter_i`` = the whole loop iteration that contained the
        detour (the difference of the two timestamp reads around it, so events are never
        shorter than the threshold), then ``gap_i = start_{i+1} − end_i``; the last gap
        runs to the end of the measurement and wraps around to the idle time before the
        first event (``attrs["offset"]``), so the trace lasts exactly the measured time.
        ``attrs``: ``source`` = ``"jitterlab.bench.detour"``, ``t_min``,
        ``median_loop_time`` (the resolution), ``mean_loop_time`` (undisturbed mean of
        the run) and ``threshold`` [s], ``threshold_cycles``, ``cpu``, ``host``,
        ``kernel`` (``platform.release()``), ``cpu_model``, ``collected_at`` (ISO UTC),
        ``duration`` (requested) and ``measured_duration`` [s], ``unmeasured`` (time
        between chunks, not measured) [s], ``chunks``, ``chunk_seconds``,
        ``events_detected``, ``complete``, ``command``, the TSC calibration
        (``tsc_calibration_spread``, ``tsc_invariant``) and ``jitterlab_version``. If no
        event was detected, the trace has a single zero-length event at the start
        (``events_detected`` is 0).

    Raises
    ------
    ValueError
        For a non-positive or non-finite ``duration``, ``threshold`` or
        ``chunk_seconds``, a ``cpu`` outside the affinity set, or a threshold not above
        the median loop time.
    FileExistsError
        If ``output`` holds an earlier run and ``overwrite`` is False.
    jitterlab.measure.CycleCounterError
        On a machine without an x86 timestamp counter.
    jitterlab.measure.TracefsError
        With ``kernel_events``: not root, tracefs not mounted, or an event the kernel does
        not offer (each named); never a silent run without the events.
    KeyboardInterrupt
        After Ctrl-C (SIGINT, when called from the main thread): the run stops at the end
        of the current chunk, stores it, and re-raises; ``output`` keeps every chunk.

    Notes
    -----
    The timed loop is a numba kernel that reads the counter (``rdtsc``), compares the
    difference with the threshold and stores events into preallocated, pre-faulted
    buffers; it allocates nothing, prints nothing and makes no system call. jitSim's
    TraceCollector [1]_ compares each difference with the minimum loop time ``t_min``;
    on some processors the counter advances in steps, so that ``t_min`` can be a single
    cycle while a loop iteration takes tens, hence the floor at a multiple of the
    median loop time.

    References
    ----------
    .. [1] P. De, V. Mann, "jitSim", Euro-Par 2010 workshops (seed 000), §3.1.

    Examples
    --------
    >>> trace = detour(1.0, cpu=1, threshold=300e-9, progress=False)   # doctest: +SKIP
    >>> trace.stats()[["event_rate", "noise_fraction"]]                # doctest: +SKIP
    """
    requested = (duration, cpu, threshold, chunk_seconds)
    duration = check_seconds("duration", duration)
    chunk_seconds = check_seconds("chunk_seconds", chunk_seconds)
    if threshold is not None:
        threshold = check_seconds("threshold", threshold)
    cpu = resolve_cpu(cpu)
    events = _kernel_event_names(kernel_events)
    if events and output is None:
        raise ValueError("kernel_events needs output: the events are stored in the chunk "
                         "store beside the detours")
    if output is not None:
        _chunks.ChunkWriter.check_target(output, overwrite)
    check_cycle_counter()
    if command is None:
        command = _command(*requested)

    bar = tqdm(total=round(duration, 6), unit="s", desc=f"detour cpu {cpu}",
               disable=not progress, leave=True,
               bar_format="{l_bar}{bar}| {n:.1f}/{total:.1f} s [{elapsed}<{remaining}]"
                          "{postfix}")
    with contextlib.ExitStack() as stack:
        stack.enter_context(bar)
        interrupt = stack.enter_context(DeferredInterrupt())
        stack.enter_context(pinned(cpu))
        calibration = calibrate_tsc()
        frequency = calibration.frequency_hz
        loop_times = probe_loop()
        t_min = int(loop_times.min())
        median = float(np.median(loop_times))
        if threshold is None:
            threshold_cycles = int(math.ceil(max(THRESHOLD_TMIN_FACTOR * t_min,
                                                 THRESHOLD_MEDIAN_FACTOR * median)))
            threshold = threshold_cycles / frequency
        else:
            threshold_cycles = int(round(threshold * frequency))
        if threshold_cycles <= median:
            raise ValueError(f"threshold={threshold!r} s ({threshold_cycles} cycles) is not "
                             f"above the median loop time ({median / frequency:.3g} s, "
                             f"{median:g} cycles): nearly every loop iteration would count "
                             "as a jitter event")
        metadata = {
            "frequency_hz": frequency, "unit": "cycles", "source": SOURCE,
            "t_min": t_min / frequency, "median_loop_time": median / frequency,
            "threshold": threshold, "threshold_cycles": threshold_cycles, "cpu": cpu,
            **machine_attrs(), "collected_at": utc_now(), "duration": duration,
            "chunk_seconds": chunk_seconds, "command": command,
            "tsc_calibration_spread": calibration.relative_spread,
            "tsc_invariant": calibration.invariant,
            "clock": "rdtsc (llvm.readcyclecounter)",
        }
        if tsc_flags()["constant_tsc"] is False:
            logger.warning("/proc/cpuinfo does not list constant_tsc: the timestamp counter "
                           "may change rate with the clock speed")
        instance = None
        if events:
            # drained after every chunk: the buffer holds ten chunks' worth of events
            buffered = min(duration, _BUFFERED_CHUNKS * chunk_seconds)
            instance = stack.enter_context(trace_instance(events, cpu=cpu, duration=buffered))
            metadata.update(kernel_events=list(instance.events),
                            kernel_events_not_recorded=list(instance.not_recorded),
                            kernel_events_encoding="zlib",
                            trace_clock=instance.clock,
                            trace_buffer_kb=instance.buffer_size_kb,
                            measured_tid=threading.get_native_id(),
                            steal_ticks_start=steal_ticks(cpu),
                            clock_ticks_per_second=os.sysconf("SC_CLK_TCK"),
                            stale_instances_removed=[str(p) for p in instance.removed_stale])
        writer = (None if output is None
                  else _chunks.ChunkWriter(output, metadata, kind=KIND, overwrite=overwrite))
        chunks = _run_chunks(writer, duration, chunk_seconds, frequency, threshold_cycles,
                             bar, interrupt, instance)
        if writer is not None:
            summary = _summary(chunks, frequency)
            if instance is not None:
                summary["kernel_events_lost"] = instance.stop()
            if interrupt.requested:
                writer.update(interrupted=True, **summary)
            else:
                writer.finish(**summary)
    if interrupt.requested:
        raise KeyboardInterrupt
    if writer is not None:
        return read_detour(output)
    metadata["complete"] = True
    return trace_from_chunks(metadata, chunks, "detour")


def _kernel_event_names(kernel_events) -> tuple[str, ...]:
    if kernel_events is False or kernel_events is None:
        return ()
    if kernel_events is True:
        return NOISE_EVENTS
    if isinstance(kernel_events, str):
        return (kernel_events,)
    names = tuple(kernel_events)
    if not names:
        raise ValueError("kernel_events is an empty sequence: give True or event names")
    return names


def steal_ticks(cpu: int) -> int:
    """The steal time of ``cpu`` so far, from ``/proc/stat`` [clock ticks, USER_HZ], or −1
    when the kernel does not report it (not Linux, or no steal column)."""
    try:
        text = Path("/proc/stat").read_text()
    except OSError:
        return -1
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == f"cpu{cpu}":
            return int(fields[8]) if len(fields) > 8 else -1
    return -1


def _kernel_chunk(instance, number: int, cpu: int) -> dict:
    """After a chunk: a sync mark, then every event waiting in the instance (as text)."""
    before = read_cycles()
    instance.mark(f"{SYNC_MARK} {number} {before}")
    after = read_cycles()
    text = zlib.compress(instance.drain(), 1)  # the text shrinks ~7x, in ~3 ms per MB
    return {"kernel_events": np.frombuffer(text, dtype=np.uint8),
            "sync": np.array([number, before, after], dtype=np.int64),
            "steal_ticks": np.int64(steal_ticks(cpu))}


def _run_chunks(writer, duration, chunk_seconds, frequency, threshold_cycles, bar,
                interrupt, instance=None) -> list[dict]:
    """The measurement proper: chunk after chunk until ``duration`` is measured.

    Returns the chunks (with a writer: only their spans and counts, not the events).
    With a tracefs ``instance``, each chunk also carries the kernel events drained after it.
    """
    starts, durations = _buffer(_BUFFER_EVENTS), _buffer(_BUFFER_EVENTS)
    target = int(math.ceil(duration * frequency))
    chunk_cycles = max(1, int(round(chunk_seconds * frequency)))
    measured = 0
    events = 0
    chunks = []
    while measured < target and not interrupt.requested:
        length = min(chunk_cycles, target - measured)
        n, first, last, iterations = _detour_loop(np.int64(length), np.int64(threshold_cycles),
                                                  starts, durations)
        # ---- outside the timed loop from here on ----
        measured += last - first
        events += n
        chunk = {"start": starts[:n].copy(), "duration": durations[:n].copy(),
                 "span": np.array([first, last], dtype=np.int64),
                 "iterations": np.int64(iterations)}
        if instance is not None:
            chunk.update(_kernel_chunk(instance, len(chunks), instance.cpu))
        if writer is not None:
            writer.append(**chunk)
            chunk = {"start": chunk["start"][:0], "duration": chunk["duration"][:0],
                     "span": chunk["span"], "iterations": chunk["iterations"], "n": n}
        chunks.append(chunk)
        bar.update(min(measured / frequency, duration) - bar.n)
        bar.set_postfix_str(f"{events / (measured / frequency):.0f} events/s", refresh=False)
    return chunks


def _summary(chunks: list[dict], frequency: float) -> dict:
    """Totals stored in the metadata at the end of a run (informative only)."""
    measured = sum(int(c["span"][1] - c["span"][0]) for c in chunks)
    events = sum(int(c.get("n", c["duration"].size)) for c in chunks)
    return {"measured_duration": measured / frequency, "events_detected": events,
            "finished_at": utc_now()}


class DeferredInterrupt:
    """While active (main thread only), SIGINT sets ``requested`` instead of raising."""

    def __init__(self):
        self.requested = False
        self._previous = None

    def _handle(self, signum, frame):
        self.requested = True
        logger.warning("interrupted: stopping at the end of the current chunk")

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc):
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
        return False










