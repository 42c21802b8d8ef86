"""Limits on what one call may allocate, draw or run for, checked before it starts.

A call that would need more memory than the machine has, draw more random numbers than a
few minutes allow, or run for longer than :data:`MAX_PLANNED_SECONDS` (a benchmark given
1e3 for 1e-3, a simulation of a huge grid) is refused up front with the figure and the
argument to change, instead of ending after minutes in numpy's ``MemoryError``, in the
out-of-memory killer or in hours of waiting. The brave opt in with ``allow_large=True`` (a
keyword of the functions that check) or, for every call of the process (a notebook, a sweep
on Dask workers), the environment variable ``JITTERLAB_ALLOW_LARGE=1``. See
``docs/simulate.md``.
"""

from __future__ import annotations

import math
import os

__all__ = ["ResourceLimitError", "ALLOW_LARGE_VARIABLE", "MEMORY_FRACTION",
           "MAX_PLANNED_SECONDS", "large_allowed", "check_allow_large", "check_memory",
           "check_duration", "available_memory", "format_bytes", "format_duration"]

#: environment variable that lifts every limit of this module for the process when "1"
ALLOW_LARGE_VARIABLE = "JITTERLAB_ALLOW_LARGE"

#: share of the available memory one call may plan to use
MEMORY_FRACTION = 0.5

#: the longest run a call (or ``jitterlab measure``) starts without an opt-in [s]
MAX_PLANNED_SECONDS = 3600.0

#: estimates below this many bytes are accepted without asking the system [B]
_ALWAYS_FITS = 256 * 2**20


class ResourceLimitError(ValueError):
    """A call would need more memory or time than allowed; the message says which argument
    to change, and how to opt in (``allow_large=True`` or ``JITTERLAB_ALLOW_LARGE=1``)."""


def check_allow_large(allow_large) -> bool:
    """``allow_large`` if it is True or False, else TypeError."""
    if not isinstance(allow_large, bool):
        raise TypeError(f"allow_large must be True or False, got {allow_large!r}")
    return allow_large


def large_allowed(allow_large: bool) -> bool:
    """True if the caller (``allow_large``) or the environment lifts the limits."""
    return check_allow_large(allow_large) or os.environ.get(ALLOW_LARGE_VARIABLE, "") == "1"


def available_memory() -> int:
    """Memory available to a new allocation [B]: ``MemAvailable`` of /proc/meminfo, else the
    physical memory, else 2**63 (unknown: no limit)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as stream:
            for line in stream:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 2**63


def format_bytes(size: float) -> str:
    """``size`` bytes as "1.5 GB" (powers of 1000)."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size:.0f} B"


def check_memory(estimate: float, what, change: str, allow_large: bool = False) -> None:
    """Raise :class:`ResourceLimitError` if ``estimate`` bytes exceed the allowed share.

    Parameters
    ----------
    estimate : float
        Bytes the call is about to allocate, at least. [B]
    what : str or callable
        What needs it, for the message ("jl.simulate with n=1e9, detail=True"); a function
        returning that text is called only when the call is refused.
    change : str
        Which argument to change, for the message ("a smaller n").
    allow_large : bool
        The caller's opt-in.
    """
    if estimate <= _ALWAYS_FITS:  # the common case: no system call
        return
    limit = MEMORY_FRACTION * available_memory()
    if estimate <= limit or large_allowed(allow_large):
        return
    if callable(what):
        what = what()
    raise ResourceLimitError(
        f"{what} would allocate about {format_bytes(estimate)}, more than "
        f"{MEMORY_FRACTION:.0%} of the {format_bytes(limit / MEMORY_FRACTION)} of memory "
        f"available: give {change}, or pass allow_large=True (or set "
        f"{ALLOW_LARGE_VARIABLE}=1) to try anyway")


def format_duration(seconds: float) -> str:
    """A duration in the unit a person reads: "2.78 h", "25 min", "3.5 s", "12 ms"."""
    for scale, unit in ((365.25 * 86400, "years"), (86400, "days"), (3600, "h"), (60, "min"),
                        (1, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds:.3g} s"


def check_duration(seconds: float, what, change: str, allow_large: bool = False,
                   opt_in: str = "pass allow_large=True (or set JITTERLAB_ALLOW_LARGE=1)"
                   ) -> None:
    """Raise :class:`ResourceLimitError` if a run is planned to last longer than
    :data:`MAX_PLANNED_SECONDS` (or for ever).

    Parameters
    ----------
    seconds : float
        The planned (or least) duration of the run; NaN counts as for ever. [s]
    what : str or callable
        What would run so long, for the message; a function returning that text is called
        only when the run is refused.
    change : str
        Which argument to change, for the message ("fewer round_trips").
    allow_large : bool
        The caller's opt-in (it does not lift the refusal of a run that never ends).
    opt_in : str
        How the caller opts in, for the message (the CLI: "pass --force").
    """
    if seconds <= MAX_PLANNED_SECONDS:
        return
    if callable(what):
        what = what()
    if not math.isfinite(seconds) or seconds != seconds:
        raise ResourceLimitError(f"{what} would never end: give {change}")
    if large_allowed(allow_large):
        return
    raise ResourceLimitError(
        f"{what} would take about {format_duration(seconds)}, more than the "
        f"{format_duration(MAX_PLANNED_SECONDS)} allowed: give {change}, or {opt_in} to run "
        f"it anyway")
