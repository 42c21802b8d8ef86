"""Limits on what one call may allocate or draw, checked before it starts.

A call that would need more memory than the machine has, or draw more random numbers than a
few minutes allow, is refused up front with the figure and the argument to change, instead of
ending after minutes in numpy's ``MemoryError`` or in the out-of-memory killer. The brave opt
in with ``allow_large=True`` (a keyword of the functions that check) or, for every call of the
process (a notebook, a sweep on Dask workers), the environment variable
``JITTERLAB_ALLOW_LARGE=1``. See ``docs/simulate.md``.
"""

from __future__ import annotations

import os

__all__ = ["ResourceLimitError", "ALLOW_LARGE_VARIABLE", "MEMORY_FRACTION", "large_allowed",
           "check_allow_large", "check_memory", "available_memory", "format_bytes"]

#: environment variable that lifts every limit of this module for the process when "1"
ALLOW_LARGE_VARIABLE = "JITTERLAB_ALLOW_LARGE"

#: share of the available memory one call may plan to use
MEMORY_FRACTION = 0.5

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
