"""Pinning to one CPU, and the description of the machine recorded with a measurement."""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import math
import operator
import os
import platform
from pathlib import Path

__all__ = ["resolve_cpu", "pinned", "machine_attrs", "check_seconds", "utc_now"]


def _affinity() -> set[int] | None:
    """CPUs this thread may run on, or None where affinity is not supported."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    return set(os.sched_getaffinity(0))


def resolve_cpu(cpu) -> int | None:
    """The CPU to pin to: ``cpu`` itself, checked, or by default the highest-numbered CPU
    of the current affinity set. None where the platform cannot pin threads.

    Raises ValueError naming ``cpu`` if it is not an integer of the affinity set.
    """
    allowed = _affinity()
    if cpu is None:
        return None if allowed is None else max(allowed)
    cpu = check_integer("cpu", cpu, 0)
    if allowed is None:
        raise ValueError(f"cpu={cpu}: this platform ({platform.system()}) cannot pin a "
                         "thread to a CPU; pass cpu=None")
    if cpu not in allowed:
        raise ValueError(f"cpu={cpu} is not in this process's CPU affinity set "
                         f"{sorted(allowed)}")
    return cpu


@contextlib.contextmanager
def pinned(cpu: int | None):
    """Run the calling thread on ``cpu`` only; restore the previous affinity afterwards."""
    if cpu is None:
        yield
        return
    previous = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, previous)


@functools.cache
def cpu_model() -> str:
    """The ``model name`` of ``/proc/cpuinfo`` (else :func:`platform.processor`)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                return value.strip()
    return platform.processor() or platform.machine()


def utc_now() -> str:
    """The current time, ISO 8601 in UTC to the second."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def machine_attrs() -> dict:
    """``host``, ``kernel`` (operating-system release), ``cpu_model``, ``n_cpus`` and the
    jitterlab version, for the metadata of a measurement."""
    from .. import __version__

    return {"host": platform.node(), "kernel": platform.release(),
            "os": platform.system(), "cpu_model": cpu_model(),
            "n_cpus": os.cpu_count(), "jitterlab_version": __version__}


def check_seconds(name: str, value, *, zero: bool = False) -> float:
    """``value`` as a finite float > 0 (>= 0 with ``zero``), or ValueError naming ``name``."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number of seconds, got {value!r}")
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number of seconds, got {value!r}") from None
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        raise ValueError(f"{name} must be finite and {'>=' if zero else '>'} 0 seconds, "
                         f"got {value!r}")
    return value


def check_integer(name: str, value, minimum: int) -> int:
    """``value`` as an int >= ``minimum``, or ValueError naming ``name``."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    try:
        value = operator.index(value)
    except TypeError:
        raise ValueError(f"{name} must be an integer, got {value!r}") from None
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return value
