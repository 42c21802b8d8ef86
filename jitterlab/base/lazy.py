"""Names of a package imported on first use (PEP 562), so that importing it is quick."""

from __future__ import annotations

import importlib
from collections.abc import Callable


def lazy_attributes(namespace: dict, locate: Callable[[str], tuple[str, str | None] | None]):
    """A package's ``__getattr__`` and ``__dir__`` for names imported on first use.

    Parameters
    ----------
    namespace : dict
        The package's ``globals()``, with ``__name__`` and ``__all__``; a name, once
        imported, is kept there (the next look-up does not come back here).
    locate : callable
        ``locate(name)`` gives ``(module, attribute)`` — the module's full name, and the
        attribute to take from it, or None for the module itself — or None for a name the
        package does not have (AttributeError).
    """
    def __getattr__(name: str):
        where = locate(name)
        if where is None:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        module_name, attribute = where
        module = importlib.import_module(module_name)
        value = module if attribute is None else getattr(module, attribute)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *namespace["__all__"]})

    return __getattr__, __dir__
