"""Helpers shared by the trace formats: atomic writes, gzip, metadata lines, table parsing."""

from __future__ import annotations

import contextlib
import gzip
import json
import math
import os
import re
import shutil
import tempfile
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from ..base.checks import refuse_existing
from ..traces.trace import Trace, plain_metadata

GZIP_MAGIC = b"\x1f\x8b"
#: a bare metadata key; other keys are written as JSON string literals
_BARE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*\Z")
_META_LINE = re.compile(r'#\s*([A-Za-z_][A-Za-z0-9_.\-]*|"(?:[^"\\]|\\.)*")\s*:\s?(.*)\Z')
#: first line of every file jitterlab writes (skipped when reading)
MARKER = "# jitterlab trace"


# --------------------------------------------------------------------------------------
# reading bytes and text (gzip detected from the content, not the name)
# --------------------------------------------------------------------------------------
def read_bytes(path, size: int = -1) -> bytes:
    """The content of ``path``, decompressed if it is gzip (the first ``size`` bytes
    only, when ``size`` >= 0).

    Raises ValueError naming the file for damaged gzip data.
    """
    with open(path, "rb") as handle:
        data = handle.read(size if size < 0 else max(size, len(GZIP_MAGIC)))
    if data[:2] != GZIP_MAGIC:
        return data if size < 0 else data[:size]
    try:
        if size < 0:
            return gzip.decompress(data)
        with gzip.open(path, "rb") as handle:
            return handle.read(size)
    except (OSError, EOFError, zlib.error) as err:
        raise ValueError(f"{Path(path).name}: not a readable gzip file, it is damaged or "
                         f"truncated ({err})") from None


def read_lines(path) -> list[str]:
    """The lines of a UTF-8 text file (gzip transparently), without line ends."""
    data = read_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{Path(path).name}: not a UTF-8 text file ({err})") from None
    # split on newlines only: str.splitlines would also cut at U+2028 and the like,
    # which JSON metadata may contain unescaped
    return [line.removesuffix("\r") for line in text.split("\n")]


def strip_gz(path) -> str:
    """The file name without a trailing ``.gz``."""
    name = Path(path).name
    return name[:-3] if name.lower().endswith(".gz") else name


# --------------------------------------------------------------------------------------
# atomic writes
# --------------------------------------------------------------------------------------
@contextlib.contextmanager
def _temporary(directory: Path, name: str):
    handle, temp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
    os.close(handle)
    os.chmod(temp, 0o666 & ~_umask())  # mkstemp makes it private; give it the usual mode
    try:
        yield Path(temp)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path, write: Callable[[Path], None], *, overwrite: bool = True) -> Path:
    """Call ``write(temporary_path)``, gzip the result if ``path`` ends in ``.gz``, then
    move it onto ``path`` (readers never see a partial file).

    The one writer rule lives here: with ``overwrite=False`` an existing ``path`` is
    refused (FileExistsError, "pass overwrite=True") before anything is written, and the
    finished file is moved into place only if no file appeared there meanwhile (a hard
    link, which fails on an existing name, where the file system has them; else a last
    check before :func:`os.replace`). Every public writer passes its ``overwrite``
    (default False); True replaces, for internal writers that checked the target already.
    """
    refuse_existing(path, overwrite)
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():  # else mkstemp's error names a temporary file
        raise FileNotFoundError(f"cannot write {path}: the directory {directory} does not "
                                f"exist" if not directory.exists() else
                                f"cannot write {path}: {directory} is not a directory")
    if path.is_dir():
        raise IsADirectoryError(f"cannot write {path}: it is a directory")
    with _temporary(directory, path.name) as temp:
        write(temp)
        if path.name.lower().endswith(".gz"):
            with _temporary(directory, path.name) as packed:
                with open(temp, "rb") as source, open(packed, "wb") as raw, \
                        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as target:
                    shutil.copyfileobj(source, target)
                _move(packed, path, overwrite)
        else:
            _move(temp, path, overwrite)
    return path


def _move(temp: Path, path: Path, overwrite: bool) -> None:
    """Put the finished ``temp`` at ``path``; without ``overwrite`` never onto a file."""
    if overwrite:
        os.replace(temp, path)
        return
    try:
        os.link(temp, path)  # atomic, and fails if path exists
    except FileExistsError:
        raise FileExistsError(f"{path} appeared while it was being written; pass "
                              f"overwrite=True to replace it") from None
    except OSError:  # no hard links here (some network or FAT file systems)
        refuse_existing(path, overwrite)
        os.replace(temp, path)


def write_text(path, lines: Iterable[str], *, overwrite: bool = True) -> Path:
    """Write ``lines`` (each ended by a newline) atomically, UTF-8 (``overwrite`` as for
    :func:`atomic_write`)."""
    text = "".join(f"{line}\n" for line in lines)
    return atomic_write(path, lambda temp: temp.write_text(text, encoding="utf-8"),
                        overwrite=overwrite)


# --------------------------------------------------------------------------------------
# metadata
# --------------------------------------------------------------------------------------
def to_json(value) -> str:
    """Compact JSON of plain metadata (NaN and infinities as Python's json writes them)."""
    return json.dumps(plain_metadata(value), ensure_ascii=False, separators=(", ", ": "))


def header_fields(trace: Trace, reserved: Iterable[str], fmt: str) -> dict:
    """``unit``, ``frequency_hz`` and the metadata of ``trace``, checked for collisions."""
    attrs = plain_metadata(trace.attrs)
    clash = sorted({"unit", "frequency_hz", *reserved} & set(attrs))
    if clash:
        raise ValueError(f"cannot write the {fmt} format: metadata key(s) {clash} are "
                         "reserved by the format")
    return {"unit": trace.unit, "frequency_hz": trace.frequency_hz, **attrs}


def metadata_lines(fields: dict) -> list[str]:
    """One ``# key: <json>`` line per item (keys that are not bare names are quoted)."""
    lines = []
    for key, value in fields.items():
        label = key if _BARE_KEY.match(key) else json.dumps(key, ensure_ascii=False)
        lines.append(f"# {label}: {to_json(value)}")
    return lines


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


# --------------------------------------------------------------------------------------
# numbers
# --------------------------------------------------------------------------------------
def format_number(value: float) -> str:
    """Shortest text that reads back as the same float; integers without decimals."""
    if value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(value)


def format_column(values: np.ndarray) -> list[str]:
    return [format_number(v) for v in np.asarray(values, dtype=np.float64).tolist()]


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


def write_two_columns(trace, path, fmt: str, title: str, header: str, separator: str, *,
                      overwrite: bool = True) -> Path:
    """Write jitter and gap as a text table (atomic): a marker line ``(title)``, the
    ``# key: <json>`` metadata, ``header``, then one row per event; ``fmt`` names the
    format in errors (``overwrite`` as for :func:`atomic_write`)."""
    fields = header_fields(trace, (), fmt)
    rows = map(separator.join, zip(format_column(trace.jitter), format_column(trace.gap),
                                   strict=True))
    return write_text(path, [f"{MARKER} ({title})", *metadata_lines(fields), header, *rows],
                      overwrite=overwrite)
