"""jitterlab: how much does operating-system noise slow a parallel program at N processes?

Three methods side by side: distribution-based max-of-N (:func:`max_of_n`), the
Theorem 1 bounds of Garg & De (:func:`theorem1_bounds`), and trace-driven simulation
of jitter traces (:class:`Trace`, :func:`simulate`).

The package is arranged by topic (``docs/architecture.md``): ``base`` (checks, random
streams, files), ``traces`` (the jitter and event traces), ``noise`` (noise laws),
``io`` (reading recordings), ``measure`` (making them), ``sim`` (the replay engine, the
barriers, collectives and GOAL schedules), ``analytic`` (max-of-N and Theorem 1),
``apps`` (wavefront, Time Warp), ``compare`` (validation, estimation, attribution),
and on top plotting, sweeps, the explorer, ``reproduce`` and the CLI. The names below are
imported on first use, so ``import jitterlab`` itself is quick.
"""

from __future__ import annotations

import copyreg
import importlib
import sys
import types
from importlib.metadata import PackageNotFoundError, version

from . import old_paths
from .base.lazy import lazy_attributes

old_paths.install()

#: public name -> (module, attribute); attribute None: the module itself
_PUBLIC: dict[str, tuple[str, str | None]] = {
    "noise": ("jitterlab.noise", None),
    "io": ("jitterlab.io", None),
    "apps": ("jitterlab.apps", None),
    "datasets": ("jitterlab.datasets", None),
    "bench": ("jitterlab.measure", None),
    "synthetic": ("jitterlab.traces.synthetic", None),
    "causes": ("jitterlab.compare.causes", None),
    "characterize": ("jitterlab.compare.characterize", None),
    "validate": ("jitterlab.compare.validate", None),
    "correlated": ("jitterlab.analytic.correlated", None),
    "counters": ("jitterlab.compare.counters", None),
    "estimate": ("jitterlab.compare.estimate", None),
    "attribution": ("jitterlab.compare.attribution", None),
    "max_of_n": ("jitterlab.analytic.maxofn", "max_of_n"),
    "theorem1_bounds": ("jitterlab.analytic.bounds", "theorem1_bounds"),
    "arrival_offsets": ("jitterlab.analytic.bounds", "arrival_offsets"),
    "barrier_time": ("jitterlab.analytic.bounds", "barrier_time"),
    "tree_depth": ("jitterlab.sim.barriers", "tree_depth"),
    "Trace": ("jitterlab.traces.trace", "Trace"),
    "EventTrace": ("jitterlab.traces.events", "EventTrace"),
    "read_trace": ("jitterlab.io", "read_trace"),
    "read_events": ("jitterlab.io.events", "read_events"),
    "write_events": ("jitterlab.io.events", "write_events"),
    "synthetic_trace": ("jitterlab.traces.synthetic", "synthetic_trace"),
    "coscheduled_trace": ("jitterlab.traces.synthetic", "coscheduled_trace"),
    "jitsim_trace": ("jitterlab.traces.synthetic", "jitsim_trace"),
    "jitsim_coscheduled_trace": ("jitterlab.traces.synthetic", "jitsim_coscheduled_trace"),
    "simulate": ("jitterlab.sim.simulate", "simulate"),
    "TreeBarrier": ("jitterlab.sim.barriers", "TreeBarrier"),
    "Dissemination": ("jitterlab.sim.collectives", "Dissemination"),
    "RecursiveDoubling": ("jitterlab.sim.collectives", "RecursiveDoubling"),
    "Message": ("jitterlab.sim.message", "Message"),
    "Schedule": ("jitterlab.sim.schedules", "Schedule"),
    "read_goal": ("jitterlab.sim.schedules", "read_goal"),
    "LogGOPS": ("jitterlab.sim.schedules", "LogGOPS"),
    "simulate_schedule": ("jitterlab.sim.schedules", "simulate_schedule"),
    "sweep": ("jitterlab.sweep", "sweep"),
    "explore": ("jitterlab.explore", "explore"),
    "attribute_detours": ("jitterlab.compare.attribution", "attribute_detours"),
}

#: the subpackages (rooms) and top-level modules, imported on first use as ``jl.<name>``
_ROOMS = ("base", "traces", "noise", "io", "measure", "sim", "analytic", "apps", "compare",
          "plotting", "datasets", "reproduce", "recording_checks", "testing")

try:
    __version__ = version("jitterlab")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"

__all__ = [*_PUBLIC, "__version__"]


def _locate(name: str) -> tuple[str, str | None] | None:
    """Where a public name, a room, or a module's old top-level name is (:data:`_PUBLIC`)."""
    if name in _PUBLIC:
        return _PUBLIC[name]
    if name in _ROOMS or f"jitterlab.{name}" in old_paths.OLD_PATHS:
        # a room of the package, or a module's old top-level name (jl.limits, jl.bounds)
        return old_paths.new_path(f"jitterlab.{name}") or f"jitterlab.{name}", None
    return None


__getattr__, __dir__ = lazy_attributes(globals(), _locate)


class _Package(types.ModuleType):
    """The package module: importing a submodule that shares a public function's name
    (``jitterlab.sweep``, ``jitterlab.explore``, the old path ``jitterlab.simulate``)
    must not replace the function by the module."""

    def __setattr__(self, name, value):
        if (isinstance(value, types.ModuleType) and name in _PUBLIC
                and _PUBLIC[name][1] is not None):
            return
        super().__setattr__(name, value)


def _import_by_name(module: types.ModuleType):
    """Pickle the package as modules are pickled: by name (Dask sends functions that use
    ``jl`` to its workers; cloudpickle and pickle look the reducer up here)."""
    return importlib.import_module, (module.__name__,)


copyreg.pickle(_Package, _import_by_name)
sys.modules[__name__].__class__ = _Package
