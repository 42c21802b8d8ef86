"""Argument checks shared by the public API: each error names the argument."""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = ["check_positive", "check_probability", "check_integer", "check_size"]

#: the largest count the kernels hold in a 64-bit signed integer
_INT64_MAX = np.iinfo(np.int64).max


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real | np.number) and not isinstance(value, bool | np.bool_)


def check_positive(name: str, value, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a float, or raise naming ``name``.

    Strings and booleans are refused with TypeError (``"1e-6"`` is not a time);
    NaN, infinities and negative values (and zero unless ``allow_zero``) with ValueError.
    """
    if not _is_number(value) and not (isinstance(value, np.ndarray) and value.ndim == 0
                                      and _is_number(value[()])):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    value = float(value)
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be finite and {bound}, got {value!r}")
    return value


def check_probability(name: str, q) -> np.ndarray:
    """Return ``q`` as a float array, or raise ValueError if any value is outside [0, 1]."""
    try:
        q = np.asarray(q, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be numbers in [0, 1], got {q!r}") from None
    if np.any(~np.isfinite(q)) or np.any((q < 0) | (q > 1)):
        raise ValueError(f"{name} must lie in [0, 1], got {q}")
    return q


def check_integer(name: str, value, minimum: int = 0) -> int:
    """Return ``value`` as an int >= ``minimum``, or raise naming ``name``.

    Whole-valued floats (``1e6``) are accepted; fractions (``2.7``), NaN, infinities,
    values beyond a 64-bit integer, booleans and strings are refused.
    """
    if not _is_number(value):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    if isinstance(value, numbers.Integral | np.integer):
        value = int(value)
    else:
        value = float(value)
        if not math.isfinite(value) or value != math.floor(value):
            raise ValueError(f"{name} must be a whole number, got {value!r}")
        if abs(value) > _INT64_MAX:
            raise ValueError(f"{name} = {value:g} is too large (at most {_INT64_MAX})")
        value = int(value)
    if value > _INT64_MAX:
        raise ValueError(f"{name} = {value} is too large (at most {_INT64_MAX})")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def check_size(size, name: str = "size"):
    """A sample size for numpy: None (one draw), an int >= 0 or a tuple of them."""
    if size is None:
        return None
    if isinstance(size, tuple | list):
        return tuple(check_integer(f"{name}[{i}]", value, 0) for i, value in enumerate(size))
    return check_integer(name, size, 0)


def refuse_existing(path, overwrite: bool):
    """Raise FileExistsError if ``path`` exists and ``overwrite`` is not True (the rule of
    every jitterlab writer: nothing a user has is replaced without being asked)."""
    import os

    if not isinstance(overwrite, bool):
        raise TypeError(f"overwrite must be True or False, got {overwrite!r}")
    if isinstance(path, bytes) or not isinstance(path, str | os.PathLike):
        raise TypeError(f"path must be a str or path-like, got {type(path).__name__}")
    if not overwrite and os.path.lexists(path):
        raise FileExistsError(f"{os.fspath(path)} exists; pass overwrite=True to replace it")


def as_process_counts(n, n_models: int) -> np.ndarray:
    """The numbers of processes ``n`` (one or a 1-D sequence; ``n_models`` when None) as a
    1-D int64 array, each checked (an error names ``n[i]``)."""
    if n is None:
        n = n_models
    if isinstance(n, str | bytes):
        raise TypeError(f"n must be a positive integer or a 1-D sequence of them, got {n!r}")
    arr = np.asarray(n, dtype=object)
    if arr.ndim == 0:
        return np.array([check_integer("n", arr[()], 1)], dtype=np.int64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"n must be a positive integer or a 1-D sequence of them, got {n!r}")
    return np.array([check_integer(f"n[{i}]", v, 1) for i, v in enumerate(arr)],
                    dtype=np.int64)


def check_confidence(confidence) -> float:
    """A confidence level strictly between 0 and 1, as a float (errors name ``confidence``)."""
    if isinstance(confidence, bool | np.bool_) or not isinstance(confidence,
                                                                  int | float | np.number):
        raise TypeError(f"confidence must be a number strictly between 0 and 1, got "
                        f"{type(confidence).__name__} {confidence!r}")
    confidence = float(confidence)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    return confidence


def check_document(document, *, format: str, version, what: str, where: str) -> dict:
    """A parsed JSON document of jitterlab's ``format`` at ``version``, checked.

    Parameters
    ----------
    document
        What ``json.loads`` gave.
    format, version
        The values its ``"format"`` and ``"version"`` keys must hold.
    what
        What the document is, for the messages ("chunk store", "measurements manifest").
    where
        The file or folder it came from, as the messages name it.

    Raises
    ------
    ValueError
        Naming ``where``, if the document is not a mapping of this format, or of another version.
    """
    if not isinstance(document, dict) or document.get("format") != format:
        raise ValueError(f"{where} is not a jitterlab {what}")
    if document.get("version") != version:
        raise ValueError(f"{where}: {what} version {document.get('version')!r}; this "
                         f"jitterlab reads version {version}")
    return document


def plain_scalar(value):
    """A numpy scalar as the Python number it holds (for messages); other values as given."""
    return value.item() if isinstance(value, np.generic) else value
