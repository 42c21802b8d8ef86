"""Checks of tabular inputs: a DataFrame's columns, a Dataset's variables.

A function that takes the table another function returns (a reader's DataFrame, a fit's
Dataset) checks first that it got that kind of table and that the table holds the names
it reads, and otherwise says what to pass (:func:`check_holds`).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["check_holds"]


def check_holds(value, kind: type, within: str, required: Iterable[str], wrong_type: str,
                lacking: str):
    """``value`` if it is a ``kind`` whose ``within`` holds every name of ``required``.

    Parameters
    ----------
    value : object
        The table given.
    kind : type
        The type it must have (``pandas.DataFrame``, ``xarray.Dataset``).
    within : str
        The attribute of ``value`` that lists its names: ``"columns"``, ``"data_vars"``.
    required : iterable of str
        The names it must hold.
    wrong_type, lacking : str
        The messages of the TypeError (another type; ``{type}``: its name) and of the
        ValueError (names missing; ``{missing}``: their list, in ``required``'s order).

    Examples
    --------
    >>> import pandas as pd
    >>> check_holds(pd.DataFrame({"a": [1]}), pd.DataFrame, "columns", ["a", "b"],
    ...             "need a DataFrame, got {type}", "lacks {missing}")
    Traceback (most recent call last):
    ...
    ValueError: lacks ['b']
    """
    if not isinstance(value, kind):
        raise TypeError(wrong_type.format(type=type(value).__name__))
    present = getattr(value, within)
    missing = [name for name in required if name not in present]
    if missing:
        raise ValueError(lacking.format(missing=missing))
    return value
