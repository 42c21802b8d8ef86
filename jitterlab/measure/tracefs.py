"""A private tracefs instance that records kernel events of one CPU.

:func:`trace_instance` is a context manager around a Linux tracefs *instance* (a ring
buffer of its own, ``instances/jitterlab-<pid>``, never the global buffer): it enables the
requested events restricted to one CPU (``tracing_cpumask``), sizes the buffer for the
expected duration, selects the trace clock (``x86-tsc`` when the kernel offers it, so that
event timestamps are timestamp-counter cycles like the detour loop's), and removes the
instance on exit, whether the block ends normally, by an exception or by Ctrl-C. At entry it
removes the instances that a killed jitterlab process left behind (their pid no longer
alive), logging each. On exit it reads the CPU's ``stats`` file: events overwritten
(``overrun``) or dropped are logged as a warning and kept in
:attr:`TraceInstance.lost`.

Missing prerequisites raise :class:`TracefsError` subclasses naming what is missing: not
root (:class:`TracefsPermissionError`), tracefs not mounted
(:class:`TracefsNotMountedError`, naming where it looked), an event the kernel does not
offer (:class:`EventNotAvailableError`, naming it). The text the instance recorded is read
with :meth:`TraceInstance.read_trace` and parsed by :func:`jitterlab.io.read_ftrace`.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import math
import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["trace_instance", "TraceInstance", "TracefsError", "TracefsPermissionError",
           "TracefsNotMountedError", "EventNotAvailableError", "TRACEFS_ROOTS",
           "NOISE_EVENTS", "OPTIONAL_EVENTS", "remove_stale_instances", "buffer_size_kb",
           "cpu_mask", "mount_tracefs"]

logger = logging.getLogger(__name__)

#: where tracefs is looked for, in this order
TRACEFS_ROOTS = (Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing"))
#: instance names this module creates: ``jitterlab-<pid>``
INSTANCE_NAME = re.compile(r"jitterlab-(\d+)\Z")
#: events that explain detours of a busy loop (issue #22): timer tick, the other x86 interrupt
#: vectors (inter-processor interrupts: reschedule, call function, irq_work; APIC events),
#: device interrupts, softirqs, preemption, hrtimer callbacks
NOISE_EVENTS = ("irq_vectors:local_timer_entry", "irq_vectors:local_timer_exit",
                *(f"irq_vectors:{vector}_{end}" for vector in (
                    "reschedule", "call_function", "call_function_single", "irq_work",
                    "x86_platform_ipi", "thermal_apic", "error_apic", "spurious_apic")
                  for end in ("entry", "exit")),
                "irq:irq_handler_entry", "irq:irq_handler_exit",
                "irq:softirq_entry", "irq:softirq_exit",
                "sched:sched_switch",
                "timer:hrtimer_expire_entry", "timer:hrtimer_expire_exit")
#: events recorded beside :data:`NOISE_EVENTS` when the kernel offers them (and listed in
#: :attr:`TraceInstance.not_recorded` when it does not): NMI handlers, with the time each
#: took, and page faults (no exit event: counted, without duration)
OPTIONAL_EVENTS = ("nmi:nmi_handler", "exceptions:page_fault_user",
                   "exceptions:page_fault_kernel")
#: clocks whose timestamps are counter ticks rather than seconds
COUNTER_CLOCKS = frozenset({"x86-tsc", "counter", "uptime"})
#: the ``stats`` lines that count events lost
LOST_STATS = ("overrun", "commit overrun", "dropped events")


class TracefsError(RuntimeError):
    """Kernel event recording through tracefs is not possible here."""


class TracefsPermissionError(TracefsError, PermissionError):
    """The process is not root (tracefs instances need root)."""


class TracefsNotMountedError(TracefsError, FileNotFoundError):
    """tracefs is not mounted where it was looked for."""


class EventNotAvailableError(TracefsError, LookupError):
    """The kernel does not offer a requested trace event."""


def cpu_mask(cpu: int) -> str:
    """The ``tracing_cpumask`` text selecting one CPU.

    Parameters
    ----------
    cpu : int
        The CPU number.

    Returns
    -------
    str
        Hexadecimal, in comma-separated 32-bit words as the kernel prints it.

    Examples
    --------
    >>> cpu_mask(1), cpu_mask(33)
    ('2', '2,00000000')
    """
    words = []
    value = 1 << cpu
    while True:
        words.append(value & 0xFFFFFFFF)
        value >>= 32
        if not value:
            break
    return ",".join([f"{words[-1]:x}"] + [f"{word:08x}" for word in reversed(words[:-1])])


def buffer_size_kb(duration: float, events_per_second: float = 20_000.0,
                   bytes_per_event: float = 48.0, margin: float = 2.0,
                   minimum_kb: int = 1024) -> int:
    """Per-CPU ring-buffer size that holds ``duration`` of events with a margin.

    Parameters
    ----------
    duration : float
        Expected recording time. [s]
    events_per_second : float
        Expected event rate on the recorded CPU (a busy loop on a 2-vCPU virtual machine
        sees about 10³ per second; the default allows bursts). [1/s]
    bytes_per_event : float
        Ring-buffer bytes per event (header and fields; ~31 B measured here for the
        default events). [B]
    margin : float
        Factor of safety. [-]
    minimum_kb : int
        Smallest size returned. [KiB]

    Returns
    -------
    int
        ``max(minimum_kb, ceil(duration · rate · bytes · margin / 1024))``. [KiB]
    """
    if not (math.isfinite(duration) and duration > 0):
        raise ValueError(f"duration must be a positive number of seconds, got {duration!r}")
    return max(int(minimum_kb),
               math.ceil(duration * events_per_second * bytes_per_event * margin / 1024))


def find_tracefs(root=None) -> Path:
    """The tracefs mount point: ``root`` when given, else the first of
    :data:`TRACEFS_ROOTS` that holds an ``instances`` directory.

    Raises
    ------
    TracefsNotMountedError
        Naming every place looked at and the command that mounts it.
    """
    candidates = (Path(root),) if root is not None else TRACEFS_ROOTS
    for candidate in candidates:
        if (candidate / "instances").is_dir():
            return candidate
    looked = " and ".join(str(candidate) for candidate in candidates)
    raise TracefsNotMountedError(
        f"tracefs is not mounted: no 'instances' directory in {looked}; as root, mount it "
        f"with 'mount -t tracefs nodev {candidates[0]}'")


def mount_tracefs(target=None) -> Path:
    """Mount tracefs at ``target`` (default the first of :data:`TRACEFS_ROOTS`) unless
    tracefs is mounted already; returns the mount point.

    For machines (a fresh CI runner, say) where nobody mounted it: the kernel has tracefs
    but it is not mounted until someone does, as root.

    Raises
    ------
    TracefsPermissionError
        Not root.
    TracefsNotMountedError
        The ``mount`` failed (its message is included).
    """
    with contextlib.suppress(TracefsNotMountedError):
        return find_tracefs(target)
    target = Path(target) if target is not None else TRACEFS_ROOTS[0]
    if os.geteuid() != 0:
        raise TracefsPermissionError(f"mounting tracefs at {target} needs root, this process "
                                     f"runs as uid {os.geteuid()}")
    result = subprocess.run(["mount", "-t", "tracefs", "nodev", str(target)],
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise TracefsNotMountedError(f"'mount -t tracefs nodev {target}' failed: "
                                     f"{(result.stderr or result.stdout).strip()}")
    logger.warning("mounted tracefs at %s", target)
    return find_tracefs(target)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _write(path: Path, text: str) -> None:
    """Write to an existing tracefs file (never creates one)."""
    try:
        handle = os.open(path, os.O_WRONLY | os.O_TRUNC)
        try:
            os.write(handle, text.encode())
        finally:
            os.close(handle)
    except FileNotFoundError:
        raise TracefsError(f"{path} does not exist: is {path.parent} a tracefs "
                           "instance?") from None
    except OSError as err:
        raise TracefsError(f"cannot write {text!r} to {path}: {err.strerror}") from None


def _remove_instance(path: Path) -> None:
    """Stop tracing in an instance, disable its events and remove it."""
    for name, text in (("tracing_on", "0"), ("events/enable", "0")):
        if (path / name).exists():
            with contextlib.suppress(OSError):
                _write(path / name, text)
    for attempt in range(20):  # EBUSY while a reader still holds trace_pipe open
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as err:
            if err.errno != errno.EBUSY or attempt == 19:
                raise TracefsError(f"cannot remove the tracefs instance {path}: "
                                   f"{err.strerror}; remove it with 'rmdir {path}'") from None
            time.sleep(0.05)


def remove_stale_instances(root=None) -> list[Path]:
    """Remove the ``instances/jitterlab-<pid>`` directories whose process is dead.

    Each removal is logged (warning level, so that a terminal user sees it).

    Parameters
    ----------
    root : path, optional
        tracefs mount point (default: found in :data:`TRACEFS_ROOTS`).

    Returns
    -------
    list of pathlib.Path
        The instances removed.
    """
    instances = find_tracefs(root) / "instances"
    removed = []
    for path in sorted(instances.iterdir()):
        match = INSTANCE_NAME.match(path.name)
        if match is None or _pid_alive(int(match.group(1))):
            continue
        _remove_instance(path)
        logger.warning("removed the tracefs instance %s left behind by process %s, which "
                       "is no longer running", path, match.group(1))
        removed.append(path)
    return removed


def parse_stats(text: str) -> dict[str, float]:
    """The ``per_cpu/cpuN/stats`` file of a tracefs instance.

    Parameters
    ----------
    text : str
        The file's content.

    Returns
    -------
    dict
        ``"entries"``, ``"overrun"``, ``"commit overrun"``, ``"bytes"``, ``"dropped
        events"``, ``"read events"`` (counts, int), ``"oldest event ts"``, ``"now ts"``
        (as printed: seconds, or ticks for a counter clock).
    """
    stats: dict[str, float] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        value = value.strip()
        try:
            stats[key.strip()] = int(value)
        except ValueError:
            with contextlib.suppress(ValueError):
                stats[key.strip()] = float(value)
    return stats


@dataclass
class TraceInstance:
    """A live private tracefs instance (yielded by :func:`trace_instance`).

    Attributes
    ----------
    path : pathlib.Path
        The instance directory (``<tracefs>/instances/jitterlab-<pid>``).
    cpu : int
        The recorded CPU.
    events : tuple of str
        The enabled events, ``"system:event"``.
    clock : str
        The trace clock in use (``"x86-tsc"`` when available; timestamps are then
        counter ticks, see :attr:`clock_is_counter`).
    buffer_size_kb : int
        Per-CPU ring-buffer size. [KiB]
    removed_stale : list of pathlib.Path
        Instances of dead jitterlab processes removed at entry.
    not_recorded : tuple of str
        Optional events (:data:`OPTIONAL_EVENTS`) this kernel does not offer, so not
        recorded.
    lost : dict
        After :meth:`stop`: ``{"overrun": n, "commit overrun": n, "dropped events": n}``
        for the recorded CPU (events overwritten or dropped because the buffer was full).
    """

    path: Path
    cpu: int
    events: tuple[str, ...]
    clock: str
    buffer_size_kb: int
    removed_stale: list[Path] = field(default_factory=list)
    not_recorded: tuple[str, ...] = ()
    lost: dict[str, int] = field(default_factory=dict)
    stopped: bool = False
    pipe: int | None = field(default=None, repr=False)

    @property
    def clock_is_counter(self) -> bool:
        """True when timestamps are counter ticks (``x86-tsc``, ``counter``), not seconds."""
        return self.clock in COUNTER_CLOCKS

    @property
    def trace_pipe(self) -> Path:
        """The instance's consuming reader (``trace_pipe``), for streaming."""
        return self.path / "trace_pipe"

    def stats(self) -> dict[str, float]:
        """The recorded CPU's ``stats`` file, parsed (see :func:`parse_stats`)."""
        return parse_stats((self.path / "per_cpu" / f"cpu{self.cpu}" / "stats").read_text())

    def stop(self) -> dict[str, int]:
        """Stop recording (``tracing_on`` = 0), read the lost-event counts and log a
        warning when any is non-zero. Idempotent. Returns :attr:`lost`."""
        if not self.stopped:
            _write(self.path / "tracing_on", "0")
            self.stopped = True
            stats = self.stats()
            self.lost = {key: int(stats.get(key, 0)) for key in LOST_STATS}
            if any(self.lost.values()):
                logger.warning("tracefs instance %s lost events on CPU %d: %s (buffer of "
                               "%d KiB too small for the event rate; raise "
                               "events_per_second)", self.path, self.cpu,
                               ", ".join(f"{key} {value}" for key, value in self.lost.items()),
                               self.buffer_size_kb)
        return self.lost

    def drain(self) -> bytes:
        """Consume and return the events waiting in the instance's ``trace_pipe`` (text, as
        the kernel prints it; whole lines only). Never blocks: returns ``b""`` when there is
        nothing. Events lost since the last call appear as ``CPU:N [LOST k EVENTS]``."""
        if self.pipe is None:
            self.pipe = os.open(self.trace_pipe, os.O_RDONLY | os.O_NONBLOCK)
        blocks = []
        while True:
            try:
                block = os.read(self.pipe, 1 << 20)
            except BlockingIOError:
                break
            if not block:
                break
            blocks.append(block)
        return b"".join(blocks)

    def mark(self, text: str) -> None:
        """Write ``text`` into the trace (``trace_marker``): a ``tracing_mark_write`` event
        on the calling thread's CPU, with the trace clock's timestamp."""
        _write(self.path / "trace_marker", text)

    def close_pipe(self) -> None:
        """Close ``trace_pipe`` if :meth:`drain` opened it (the instance cannot be removed
        while it is open)."""
        if self.pipe is not None:
            os.close(self.pipe)
            self.pipe = None

    def read_trace(self) -> str:
        """Stop recording and return the text of the instance's ``trace`` file (parse it
        with :func:`jitterlab.io.read_ftrace`)."""
        self.stop()
        return (self.path / "trace").read_text(errors="replace")


def _offered(root: Path, event: str) -> bool:
    return (root / "events" / event.replace(":", "/") / "enable").exists()


def _check_events(root: Path, events) -> tuple[str, ...]:
    if isinstance(events, str):
        events = (events,)
    events = tuple(events)
    malformed = [event for event in events
                 if not isinstance(event, str) or event.count(":") != 1]
    if malformed or not events:
        raise ValueError(f"events must be 'system:event' names, got {malformed or events!r}")
    missing = [event for event in events if not _offered(root, event)]
    if missing:
        raise EventNotAvailableError(
            f"event(s) not available in this kernel's tracefs ({root / 'events'}): "
            f"{', '.join(missing)}")
    return events


def _choose_clock(path: Path, clock: str) -> str:
    """Select ``clock`` when the instance offers it; else keep the current one."""
    offered = (path / "trace_clock").read_text().split()
    current = next((name.strip("[]") for name in offered if name.startswith("[")), None)
    names = [name.strip("[]") for name in offered]
    if clock in names:
        if clock != current:
            _write(path / "trace_clock", clock)
        return clock
    logger.warning("trace clock %r is not offered here (%s); recording with %r", clock,
                   " ".join(names), current)
    return current


@contextlib.contextmanager
def trace_instance(events=NOISE_EVENTS, cpu: int = 0, duration: float = 10.0, *,
                   root=None, clock: str = "x86-tsc", events_per_second: float = 20_000.0,
                   buffer_kb: int | None = None, optional_events=None):
    """Record kernel events of one CPU in a private tracefs instance.

    Parameters
    ----------
    events : sequence of str
        Events as ``"system:event"`` (default :data:`NOISE_EVENTS`); each must be offered
        by the kernel (else :class:`EventNotAvailableError`).
    optional_events : sequence of str, optional
        Events recorded too when the kernel offers them; those it does not offer are listed
        in :attr:`TraceInstance.not_recorded` (and logged), without an error. Default:
        :data:`OPTIONAL_EVENTS` with the default ``events``, none with events the caller
        named (ask for an optional event by naming it in ``events``: then a kernel without
        it is an error).
    cpu : int
        The CPU whose events are recorded (``tracing_cpumask``).
    duration : float
        Expected recording time, which sizes the buffer (see :func:`buffer_size_kb`). [s]
    root : path, optional
        tracefs mount point; by default the first of :data:`TRACEFS_ROOTS` that is
        mounted (a parameter so that tests can point at a fake tree).
    clock : str
        Trace clock wanted; when the kernel does not offer it the current one is kept
        and a warning logged (:attr:`TraceInstance.clock` says which).
    events_per_second : float
        Expected event rate, for the buffer size. [1/s]
    buffer_kb : int, optional
        Per-CPU buffer size, instead of the estimate from ``duration``. [KiB]

    Yields
    ------
    TraceInstance
        Recording has started; call :meth:`TraceInstance.read_trace` before the block
        ends to get the text.

    Raises
    ------
    TracefsPermissionError
        Not root.
    TracefsNotMountedError
        tracefs not mounted (naming where it looked).
    EventNotAvailableError
        An event the kernel does not offer (naming it).
    ValueError
        A CPU that the kernel does not have, malformed event names, a bad duration.

    Examples
    --------
    >>> from jitterlab.measure.tracefs import trace_instance
    >>> from jitterlab.io import read_ftrace
    >>> with trace_instance(cpu=1, duration=2.0) as instance:  # doctest: +SKIP
    ...     run_the_loop()
    ...     text = instance.read_trace()
    >>> events = read_ftrace(text)  # doctest: +SKIP
    """
    if os.geteuid() != 0:
        raise TracefsPermissionError(
            f"recording kernel events needs root (tracefs instances), this process runs "
            f"as uid {os.geteuid()}")
    tracefs = find_tracefs(root)
    if not isinstance(cpu, int) or isinstance(cpu, bool) or cpu < 0:
        raise ValueError(f"cpu must be a non-negative int, got {cpu!r}")
    if not (tracefs / "per_cpu" / f"cpu{cpu}").is_dir():
        raise ValueError(f"CPU {cpu} is not in {tracefs / 'per_cpu'}: this machine has "
                         f"{len(list((tracefs / 'per_cpu').glob('cpu*')))} CPU(s)")
    if optional_events is None:
        optional_events = OPTIONAL_EVENTS if tuple(events) == NOISE_EVENTS else ()
    events = _check_events(tracefs, events)
    optional = [event for event in dict.fromkeys(optional_events) if event not in events]
    not_recorded = tuple(event for event in optional if not _offered(tracefs, event))
    if not_recorded:
        logger.info("not recorded (this kernel does not offer them): %s",
                    ", ".join(not_recorded))
    events += tuple(event for event in optional if event not in not_recorded)
    size_kb = buffer_size_kb(duration, events_per_second)
    if buffer_kb is not None:
        if not isinstance(buffer_kb, int) or isinstance(buffer_kb, bool) or buffer_kb < 1:
            raise ValueError(f"buffer_kb must be a positive int [KiB], got {buffer_kb!r}")
        size_kb = buffer_kb
    removed = remove_stale_instances(tracefs)
    path = tracefs / "instances" / f"jitterlab-{os.getpid()}"
    try:
        path.mkdir()
    except FileExistsError:
        raise TracefsError(f"{path} already exists: this process is already recording "
                           "(one instance per process)") from None
    try:
        _write(path / "tracing_on", "0")
        chosen = _choose_clock(path, clock)
        _write(path / "buffer_size_kb", str(size_kb))
        _write(path / "tracing_cpumask", cpu_mask(cpu))
        for event in events:
            _write(path / "events" / event.replace(":", "/") / "enable", "1")
        instance = TraceInstance(path=path, cpu=cpu, events=events, clock=chosen,
                                 buffer_size_kb=size_kb, removed_stale=removed,
                                 not_recorded=not_recorded)
        _write(path / "tracing_on", "1")
        try:
            yield instance
        finally:
            try:
                instance.stop()
            finally:
                instance.close_pipe()
    finally:
        _remove_instance(path)
