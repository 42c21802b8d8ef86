"""Helpers shared by the trace formats: atomic writes, gzip, metadata lines, table parsing."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable

import numpy as np

from ..base.files import GZIP_MAGIC, atomic_write, read_bytes, read_lines, strip_gz, write_text  # noqa: F401  (the readers reach them as common.*)
from ..traces.trace import Trace
from ..traces.values import plain_metadata  # noqa: F401
from ..traces.writers import (  # noqa: F401
    MARKER,
    format_column,
    format_number,
    header_fields,
    metadata_lines,
    to_json,
    write_two_columns,
)

_META_LINE = re.compile(r'#\s*([A-Za-z_][A-Za-z0-9_.\-]*|"(?:[^"\\]|\\.)*")\s*:\s?(.*)\Z')
























def parse_comment(line: str) -> tuple[str, object] | None:
    """``(key, value)`` for a ``# key: <json>`` line, else None (a free-text comment)."""
    match = _META_LINE.match(line)
    if match is None:
        return None
    key, raw = match.groups()
    try:
        value = json.loads(raw)
        if key.startswith('"'):
            key = json.loads(key)
    except ValueError:
        return None
    return key, value


def comment_and_data_lines(lines: list[str]
                           ) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """``#`` lines (stripped) and data lines, each as ``(line number, text)``; blank
    lines dropped."""
    comments: list[tuple[int, str]] = []
    data: list[tuple[int, str]] = []
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if stripped.startswith("#"):
            comments.append((number, stripped))
        elif stripped:
            data.append((number, line))
    return comments, data


def split_comments(lines: list[str]) -> tuple[dict, list[str], list[tuple[int, str]]]:
    """Separate ``#`` lines from data lines.

    Returns the metadata (``# key: <json>`` lines), the free-text comments (without the
    ``#``) and the data lines as ``(line number, text)``, blank lines dropped.
    """
    metadata: dict = {}
    comments: list[str] = []
    comment_lines, data = comment_and_data_lines(lines)
    for _, stripped in comment_lines:
        if stripped.startswith(MARKER):
            continue
        item = parse_comment(stripped)
        if item is None:
            comments.append(stripped[1:].strip())
        else:
            metadata[item[0]] = item[1]
    return metadata, comments, data


def add_comments(metadata: dict, comments: list[str]) -> dict:
    """Keep free-text comments of a foreign file in ``attrs["comment"]``."""
    if comments:
        text = "\n".join(comments)
        previous = metadata.get("comment")
        metadata["comment"] = text if previous is None else f"{previous}\n{text}"
    return metadata






def parse_table(name: str, data: list[tuple[int, str]], delimiter: str | None,
                expected: str, columns: int = 2) -> np.ndarray:
    """Parse data lines into an (n, columns) float64 array of finite, non-negative numbers.

    ``delimiter`` separates the columns (None: any whitespace). Raises ValueError
    naming the file, the line number and what was expected.
    """
    if not data:
        return np.empty((0, columns))
    try:  # fast path (numpy's C reader, correctly rounded)
        values = np.loadtxt([line for _, line in data], delimiter=delimiter,
                            dtype=np.float64, ndmin=2, comments=None, quotechar=None)
        if values.shape[1] != columns:
            raise ValueError(f"expected {columns} columns")
    except ValueError:
        values = _parse_slowly(name, data, delimiter, expected, columns)
    bad = ~np.isfinite(values).all(axis=1) | (values < 0).any(axis=1)
    if bad.any():
        number, line = data[int(np.argmax(bad))]
        raise ValueError(f"{name} line {number}: expected finite non-negative numbers "
                         f"{expected!r}, got {line!r}")
    return values


def _parse_slowly(name, data, delimiter, expected, columns=2) -> np.ndarray:
    """Line by line, to report the first line that is not ``columns`` numbers."""
    rows = []
    for number, line in data:
        fields = line.split(delimiter)
        try:
            if len(fields) != columns:
                raise ValueError
            rows.append([float(field) for field in fields])
        except ValueError:
            raise ValueError(f"{name} line {number}: expected {expected!r}, "
                             f"got {line!r}") from None
    return np.array(rows, dtype=np.float64).reshape(-1, columns)


def make_trace(name: str, jitter, gap, unit, frequency_hz, metadata: dict) -> Trace:
    """Build a Trace, prefixing validation errors with the file name."""
    try:
        return Trace(jitter, gap, unit, frequency_hz, **metadata)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name}: {err}") from None


def check_number(name: str, key: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name}: metadata {key!r} must be a finite number, got {value!r}")
    return float(value)


def check_choice(name: str, value, choices: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``choices``; else TypeError (not a string) or
    ValueError, naming the option ``name``."""
    choices = tuple(choices)
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {choices}, got {type(value).__name__} "
                        f"{value!r}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


class NotATraceError(ValueError):
    """The file holds something other than a jitter trace (a summary, a benchmark result).

    The message names the function that reads it.
    """


