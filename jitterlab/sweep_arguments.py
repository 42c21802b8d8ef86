"""The checks of :func:`jitterlab.sweep.sweep`'s arguments, and the labels of its grid.

Everything here runs before any point is evaluated: the grid is a dict of value lists, the
function can take the grid's and the fixed arguments, sweep's own options are of their kind
and not ambiguous with the function's, the seed is usable, and every grid value has a label
(its coordinate in the result). Split from :mod:`jitterlab.sweep`, which calls these.
"""

from __future__ import annotations

import functools
import inspect
import numbers
import re
from collections.abc import Mapping, Sequence

import numpy as np

#: what jitterlab.sweep calls (its own API is in jitterlab.sweep)
__all__ = ["check_grid", "check_options", "check_rng", "check_signature", "fixed_arguments",
           "function_name", "labels_for", "seed_entropy"]


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real | np.number) and not isinstance(value, bool | np.bool_)


def _default_labels(values: list) -> tuple[list, str | None]:
    """Coordinate values for one parameter's grid values, and the rule used (None: as is)."""
    if all(_is_number(v) for v in values) or all(isinstance(v, str) for v in values) or all(
            isinstance(v, bool | np.bool_) for v in values):
        return list(values), None
    return [v if isinstance(v, str) else repr(v) for v in values], "repr"


def labels_for(name: str, values: list, given) -> tuple[list, str | None]:
    """Coordinate values for grid parameter ``name`` (``given``: its ``labels=`` entry or
    None), and the rule used: None (the values as they are), "repr" or "labels"."""
    if given is None:
        return _default_labels(values)
    if callable(given):
        labels = [given(v) for v in values]
    elif isinstance(given, Sequence) and not isinstance(given, str):
        labels = list(given)
        if len(labels) != len(values):
            raise ValueError(f"labels[{name!r}] has {len(labels)} labels for "
                             f"{len(values)} grid values")
    else:
        raise TypeError(f"labels[{name!r}] must be a sequence of labels or a function of the "
                        f"value, got {type(given).__name__}")
    if not (all(_is_number(v) for v in labels) or all(isinstance(v, str) for v in labels)):
        raise TypeError(f"labels[{name!r}] must be all numbers or all strings, got {labels!r}")
    return labels, "labels"


def check_grid(grid) -> dict[str, list]:
    """The grid as a dict of parameter name -> list of values; TypeError or ValueError if it
    is not one, or a list is empty."""
    if not isinstance(grid, Mapping):
        raise TypeError(f"grid must be a dict of parameter name -> list of values, "
                        f"got {type(grid).__name__}")
    if not grid:
        raise ValueError("grid is empty: give at least one parameter and its values")
    checked = {}
    for name, values in grid.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise TypeError(f"grid keys must be parameter names, got {name!r}")
        if isinstance(values, str | bytes | Mapping) or not isinstance(
                values, Sequence | np.ndarray | range):
            raise TypeError(f"grid[{name!r}] must be a list of values, got "
                            f"{type(values).__name__} {values!r}")
        values = list(values)
        if not values:
            raise ValueError(f"grid[{name!r}] has no values")
        checked[name] = values
    return checked


#: what each of sweep's own options takes (for the messages on a wrong kind)
_OPTION_KINDS = {
    "client": "None, 'local', a scheduler address ('tcp://host:8786') or a "
              "dask.distributed Client",
    "progress": "True or False (sweep's progress bar)",
    "labels": "a dict of parameter name -> labels",
    "points_per_task": "a whole number of points per Dask task",
    "fixed": "a dict of argument name -> value passed to the function at every point",
}

_ADDRESS = re.compile(r"\A(?:[a-z][a-z0-9+]*://\S+|[^\s:/]+:\d+)\Z")


def _option_fits(name: str, value) -> bool:
    """Whether ``value`` is of the kind sweep's option ``name`` takes."""
    if name == "client":
        if isinstance(value, str):
            return value == "local" or bool(_ADDRESS.match(value))
        return hasattr(value, "submit") and hasattr(value, "scatter")
    if name == "progress":
        return isinstance(value, bool | np.bool_)
    if name in ("labels", "fixed"):
        return isinstance(value, Mapping)
    return _is_number(value)  # points_per_task: its value is checked afterwards


def _own_arguments(func) -> set[str]:
    """Names ``func`` takes as keyword arguments that are not already bound by a partial."""
    try:
        parameters = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return set()
    names = {p.name for p in parameters
             if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                           inspect.Parameter.KEYWORD_ONLY)}
    while isinstance(func, functools.partial):
        names -= set(func.keywords)
        func = func.func
    return names


def fixed_arguments(func, options: dict, keywords: dict) -> dict:
    """The arguments passed to ``func`` at every point: ``fixed=`` and the other keywords."""
    fixed = options["fixed"]
    if fixed is None:
        return dict(keywords)
    if not isinstance(fixed, Mapping) or not all(isinstance(k, str) for k in fixed):
        raise TypeError(_misfit("fixed", fixed, func))
    both = sorted(set(fixed) & set(keywords))
    if both:
        raise ValueError(f"{', '.join(both)} given both in fixed= and as a keyword argument "
                         f"of sweep: give each once")
    return {**fixed, **keywords}


def _misfit(name: str, value, func) -> str:
    """The message for sweep's option ``name`` given a value of another kind."""
    text = f"{name}={value!r}: sweep's own option {name!r} takes {_OPTION_KINDS[name]}"
    if name in _own_arguments(func):
        text += (f"; {function_name(func)} also takes {name}=: give the function's with "
                 f"fixed={{{name!r}: {value!r}}}")
    return text


def check_options(func, options: dict, fixed: dict) -> None:
    """Refuse an option of ``sweep`` of the wrong kind, or one ``func`` also takes.

    A name that both ``sweep`` and ``func`` take is ``sweep``'s when given to ``sweep``;
    if ``func``'s own is not given too (by ``fixed=`` or a partial) the call is ambiguous.
    """
    own = _own_arguments(func)
    for name, value in options.items():
        if value is None:
            continue
        if not _option_fits(name, value):
            raise TypeError(_misfit(name, value, func))
        if name in own and name not in fixed:
            raise ValueError(
                f"sweep(..., {name}={value!r}) is ambiguous: {function_name(func)} also "
                f"takes {name}=. Arguments given to sweep by its own option names are "
                f"sweep's; give the function's with fixed={{{name!r}: ...}} (its default, "
                f"if that is what you meant) or functools.partial")


def check_rng(rng) -> None:
    """Refuse a seed of the wrong kind, whether or not ``func`` takes one."""
    if isinstance(rng, np.random.Generator | np.random.SeedSequence):
        return
    if not isinstance(rng, int | np.integer) or isinstance(rng, bool | np.bool_):
        raise TypeError(f"rng must be an int seed, a SeedSequence, a numpy Generator or None, "
                        f"not {type(rng).__name__} {rng!r}")
    if rng < 0:
        raise ValueError(f"rng seed must be non-negative, got {rng}")


def check_signature(func, names, fixed, pass_rng) -> bool:
    """Raise TypeError if ``func`` cannot take the grid's and fixed arguments.

    Returns whether ``func`` takes ``rng`` (a parameter of that name or ``**kwargs``, as
    :func:`jitterlab.theorem1_bounds` passes it on to :func:`jitterlab.max_of_n`): then each
    point gets its seed.
    """
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):  # some builtins cannot be inspected: let the call tell
        return False
    accepts_rng = "rng" in signature.parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values())
    try:
        signature.bind_partial(**fixed, **dict.fromkeys(names))
    except TypeError as error:
        raise TypeError(f"{function_name(func)} cannot take the arguments of this sweep "
                        f"({', '.join([*names, *fixed])}): {error}") from None
    return accepts_rng and pass_rng


def function_name(func) -> str:
    """``func``'s dotted name for messages and the ``sweep_function`` attribute."""
    if isinstance(func, functools.partial):
        return f"functools.partial({function_name(func.func)})"
    module = getattr(func, "__module__", None)
    name = getattr(func, "__qualname__", None) or type(func).__name__
    return f"{module}.{name}" if module else name


def seed_entropy(rng) -> int:
    """The sweep's seed as one integer (a fresh one for None), from ``rng=``."""
    if rng is None:
        return int(np.random.SeedSequence().entropy)
    check_rng(rng)
    if isinstance(rng, np.random.SeedSequence):
        if rng.spawn_key:
            raise ValueError("rng: give a root SeedSequence (empty spawn_key) or an int seed")
        return int(rng.entropy)
    if isinstance(rng, np.random.Generator):
        return int(rng.integers(0, 2**63 - 1))
    return int(rng)
