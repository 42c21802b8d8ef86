"""jitterlab: how much does operating-system noise slow a parallel program at N processes?

Three methods side by side: distribution-based max-of-N (:func:`max_of_n`), the
Theorem 1 bounds of Garg & De (:func:`theorem1_bounds`), and trace-driven simulation
of jitter traces (:class:`Trace`, :func:`simulate`).
"""

from importlib.metadata import PackageNotFoundError, version

from . import apps, datasets, io, noise
from . import measure as bench
from .analytic import correlated
from .analytic.bounds import arrival_offsets, barrier_time, theorem1_bounds, tree_depth
from .analytic.maxofn import max_of_n
from .compare import attribution, causes, characterize, counters, estimate, validate
from .compare.attribution import attribute_detours
from .explore import explore
from .io import read_trace
from .io.events import read_events, write_events
from .sim.collectives import Dissemination, RecursiveDoubling
from .sim.message import Message
from .sim.simulate import TreeBarrier, simulate
from .sweep import sweep
from .traces import synthetic
from .traces.events import EventTrace
from .traces.synthetic import (
    coscheduled_trace,
    jitsim_coscheduled_trace,
    jitsim_trace,
    synthetic_trace,
)
from .traces.trace import Trace

try:
    __version__ = version("jitterlab")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"

__all__ = [
    "noise", "max_of_n", "theorem1_bounds", "tree_depth", "arrival_offsets", "barrier_time",
    "Trace", "read_trace", "synthetic_trace", "coscheduled_trace", "jitsim_trace",
    "jitsim_coscheduled_trace", "simulate", "TreeBarrier", "Dissemination", "RecursiveDoubling",
    "io", "synthetic", "bench", "causes", "characterize", "validate", "datasets", "__version__",
    "correlated", "counters", "Message", "apps", "estimate", "EventTrace", "read_events",
    "write_events", "sweep", "explore", "attribution", "attribute_detours",
]

from .sim.schedules import Schedule, read_goal  # noqa: E402  (GOAL schedules, issue #23)

__all__ += ["Schedule", "read_goal"]

from .sim.schedules import LogGOPS, simulate_schedule  # noqa: E402  (GOAL schedules, issue #23)

__all__ += ["LogGOPS", "simulate_schedule"]
