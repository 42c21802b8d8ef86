"""Old import paths of the public modules, from before the package had its rooms.

Until issue #21 the modules lived at the top of the package (``jitterlab.simulate``,
``jitterlab.bench``, ...). Code written against them keeps working: importing an old
path gives the module at its new home (the very same module object), through a finder
installed by ``import jitterlab``. New code imports the new paths (``docs/architecture.md``).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

#: old module path -> its home now (a package entry covers its submodules too)
OLD_PATHS: dict[str, str] = {
    "jitterlab.trace": "jitterlab.traces.trace",
    "jitterlab.events": "jitterlab.traces.events",
    "jitterlab.synthetic": "jitterlab.traces.synthetic",
    "jitterlab.limits": "jitterlab.base.limits",
    "jitterlab.threads": "jitterlab.base.threads",
    "jitterlab.maxofn": "jitterlab.analytic.maxofn",
    "jitterlab.bounds": "jitterlab.analytic.bounds",
    "jitterlab.asymptotics": "jitterlab.analytic.asymptotics",
    "jitterlab.correlated": "jitterlab.analytic.correlated",
    "jitterlab.simulate": "jitterlab.sim.simulate",
    "jitterlab.message": "jitterlab.sim.message",
    "jitterlab.collectives": "jitterlab.sim.collectives",
    "jitterlab.schedules": "jitterlab.sim.schedules",
    "jitterlab.schedules.schedule": "jitterlab.traces.schedule",
    "jitterlab.validate": "jitterlab.compare.validate",
    "jitterlab.verdict": "jitterlab.compare.verdict",
    "jitterlab.estimate": "jitterlab.compare.estimate",
    "jitterlab.characterize": "jitterlab.compare.characterize",
    "jitterlab.stationarity": "jitterlab.compare.stationarity",
    "jitterlab.counters": "jitterlab.compare.counters",
    "jitterlab.attribution": "jitterlab.compare.attribution",
    "jitterlab.causes": "jitterlab.compare.causes",
    "jitterlab.bench": "jitterlab.measure",
}


def new_path(name: str) -> str | None:
    """The home of the old module path ``name`` now, or None if it is not an old path."""
    if name in OLD_PATHS:
        return OLD_PATHS[name]
    for old, new in OLD_PATHS.items():
        if name.startswith(old + "."):
            return new + name[len(old):]
    return None


class _Alias(importlib.abc.Loader):
    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self.home_spec = module.__spec__
        return module

    def exec_module(self, module):
        module.__spec__ = self.home_spec  # the import system set the old path's spec


class OldPathFinder(importlib.abc.MetaPathFinder):
    """Finds an old module path and hands out the module at its new home."""

    def find_spec(self, name, path=None, target=None):
        home = new_path(name)
        if home is None:
            return None
        return importlib.util.spec_from_loader(name, _Alias(home))


def install() -> None:
    """Put the finder on ``sys.meta_path`` once."""
    if not any(isinstance(finder, OldPathFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, OldPathFinder())  # before the path finder, which would
        # otherwise load a second copy of a submodule of an old package path
