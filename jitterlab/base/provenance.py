"""Provenance attributes recorded on every result Dataset."""

from __future__ import annotations

import platform
from functools import cache


@cache
def provenance_attrs() -> dict:
    """jitterlab version and the machine a result was computed on."""
    from .. import __version__

    return {"jitterlab_version": __version__,
            "machine": f"{platform.node()} ({platform.machine()}, {platform.system()} "
                       f"{platform.release()})"}
