"""The chunk directory of a detour run (``jitterlab measure detour``), read-only here.

Writing happens chunk by chunk while measuring, in :mod:`jitterlab.measure.detour`.
"""

from __future__ import annotations

__all__ = ["read"]


def read(path):
    """Read a finished or interrupted detour run; see :func:`jitterlab.measure.read_detour`."""
    from ..measure import read_detour

    return read_detour(path)
