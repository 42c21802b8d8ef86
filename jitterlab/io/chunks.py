"""Incremental storage of a long measurement: a directory of numbered chunk files.

Layout of a chunk store (a directory)::

    metadata.json        written first, before any measurement; rewritten at the end
    chunk-000000.npz     one file per completed chunk: named numpy arrays
    chunk-000001.npz
    ...

Every file is written to a temporary name (``.<name>.<random>.tmp``) in the directory,
flushed to disk, then renamed onto its final name, so a reader never sees a half-written
chunk under a ``chunk-*.npz`` name. If the process is killed, the directory keeps every
completed chunk; :func:`read_store` returns them and ignores leftover temporary files.
A last chunk that cannot be read (after a power failure, say) is dropped with a logged
warning. A chunk in the middle that is missing or cannot be read ends what is read: the chunks
before it are returned and a :class:`DamagedStoreWarning` names it and the files after it.

``metadata.json`` holds ``{"format": FORMAT, "version": VERSION, "kind": ...,
"complete": false, ...}`` while the run goes on and ``"complete": true`` plus a summary
once it has finished.

For results that come one row at a time (a script looping over runs),
:func:`append_csv_row` grows a CSV table by one synced row.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import functools
import json
import logging
import os
import re
import tempfile
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..base.checks import check_document

__all__ = ["ChunkWriter", "append_csv_row", "read_store", "is_store", "store_kind", "remove_store",
           "output_problem", "DamagedStoreWarning", "FORMAT", "VERSION"]

logger = logging.getLogger(__name__)

FORMAT = "jitterlab chunk store"
VERSION = 1
METADATA = "metadata.json"
_CHUNK = "chunk-{:06d}.npz"
_CHUNK_NAME = re.compile(r"chunk-(\d{6,})\.npz\Z")


class DamagedStoreWarning(UserWarning):
    """A chunk store has a missing or unreadable chunk; only the chunks before it are read."""


@functools.cache
def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _write_atomic(path: Path, write: Callable) -> None:
    """``write(binary file)`` into a temporary file next to ``path``, fsync, rename."""
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(handle, 0o666 & ~_umask())  # mkstemp makes the file private (0600)
        with os.fdopen(handle, "wb") as stream:
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


def _csv_problem(path: Path, columns: list) -> str | None:
    """Why a row may not be appended to the existing CSV ``path``, or None.

    Refused: a last row cut short (no newline at the end: a run killed while writing it; a
    row appended there would merge with it) and a header other than ``columns``.
    """
    with path.open("rb") as stream:
        stream.seek(-1, os.SEEK_END)
        if stream.read(1) not in (b"\n", b"\r"):
            stream.seek(0)
            lines = stream.read().count(b"\n") + 1
            return (f"{path} line {lines}: the last row is cut short (no newline at the end: "
                    "a run killed while writing it?); remove that line or complete it, then "
                    "run again")
    with path.open(newline="") as stream:
        header = next(csv.reader(stream), [])
    if header != [str(column) for column in columns]:
        return f"{path} line 1: the columns {header} are not {list(columns)}; give another file"
    return None


def append_csv_row(path, row: dict, columns) -> None:
    """Append ``row`` to the CSV table ``path`` (its header ``columns`` first when the file
    is new or empty) and sync it to disk, so a killed script keeps every row written.

    Raises ValueError, naming the file and line, if the file's last row is cut short or its
    header is not ``columns``: the row would merge with the cut one or land in the wrong
    columns.
    """
    path = Path(path)
    new = not path.exists() or path.stat().st_size == 0
    if not new and (problem := _csv_problem(path, list(columns))):
        raise ValueError(problem)
    with path.open("a", newline="") as stream:
        writer = csv.DictWriter(stream, fieldnames=list(columns))
        if new:
            writer.writeheader()
        writer.writerow(row)
        stream.flush()
        os.fsync(stream.fileno())


def _write_json(path: Path, document: dict) -> None:
    text = json.dumps(document, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    _write_atomic(path, lambda stream: stream.write(text.encode("utf-8")))


def is_store(path) -> bool:
    """True if ``path`` is a directory with a chunk-store ``metadata.json``."""
    path = Path(path)
    try:
        document = json.loads((path / METADATA).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(document, dict) and document.get("format") == FORMAT


def store_kind(path) -> str | None:
    """The ``kind`` of the chunk store at ``path`` (``"detour"``, ``"pb"``), else None."""
    path = Path(path)
    try:
        document = json.loads((path / METADATA).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        return None
    kind = document.get("kind")
    return kind if isinstance(kind, str) else None


def output_problem(output, store, kind: str, what: str, overwrite: bool) -> str | None:
    """Why a run may not write the file ``output`` and its chunk store ``store``, or None.

    Refused: an existing ``output`` or an earlier run in ``store`` (unless ``overwrite``),
    and always a directory at ``output`` or a ``store`` that is not a chunk store of
    ``kind`` (``what`` names the benchmark in the message).
    """
    output, store = Path(output), Path(store)
    if output.is_dir():
        return f"{output} is a directory; name the output FILE.nc"
    if output.exists() and not overwrite:
        return f"{output} exists; pass --force (overwrite=True) to replace it"
    if store.exists():
        if not store.is_dir():
            return f"{store} exists and is not a directory"
        if any(store.iterdir()):
            if store_kind(store) != kind:
                return (f"{store} is a directory that is not a {what} chunk directory; "
                        "not writing into it")
            if not overwrite:
                return (f"{store} holds an earlier (perhaps interrupted) run; inspect it with "
                        f"'jitterlab info {store}' or pass --force (overwrite=True) to "
                        "replace it")
    return None


def remove_store(path) -> None:
    """Delete a chunk store (only its own files; refuses any other directory)."""
    path = Path(path)
    if not is_store(path):
        raise ValueError(f"{path} is not a jitterlab chunk store; not deleting it")
    for item in path.iterdir():
        if item.is_file() and (_CHUNK_NAME.match(item.name) or item.name == METADATA
                               or (item.name.startswith(".") and item.name.endswith(".tmp"))):
            item.unlink()
    with contextlib.suppress(OSError):
        path.rmdir()  # fails, and keeps the directory, if anything else is in it


class ChunkWriter:
    """Write a chunk store: metadata first, then one file per :meth:`append`.

    Parameters
    ----------
    path : path-like
        The directory; created (with parents). It must not exist yet, or be empty, or —
        with ``overwrite=True`` — be an earlier chunk store, which is deleted.
    metadata : dict
        JSON-compatible; stored in ``metadata.json`` with ``complete: false``.
    overwrite : bool
        Replace an earlier chunk store at ``path``.
    """

    def __init__(self, path, metadata: dict, *, kind: str, overwrite: bool = False):
        self.path = Path(path)
        if self.check_target(self.path, overwrite):
            remove_store(self.path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.metadata = {"format": FORMAT, "version": VERSION, "kind": kind,
                         "complete": False, **metadata}
        self.n_chunks = 0
        _write_json(self.path / METADATA, self.metadata)

    @staticmethod
    def check_target(path, overwrite: bool = False) -> bool:
        """Raise FileExistsError unless a store may be written at ``path``.

        Allowed: a path that does not exist, an empty directory, or (with ``overwrite``)
        an earlier chunk store. Returns True if an earlier store is to be replaced.
        """
        path = Path(path)
        if not path.exists():
            return False
        if not path.is_dir():
            raise FileExistsError(f"{path} exists and is not a directory")
        if not any(path.iterdir()):
            return False
        if not is_store(path):
            raise FileExistsError(f"{path} is a directory that is not a jitterlab chunk "
                                  "store; not writing into it")
        if not overwrite:
            raise FileExistsError(f"{path} holds an earlier run; pass overwrite=True to "
                                  "replace it")
        return True

    def append(self, **arrays) -> Path:
        """Store one chunk of named arrays (atomically) and return its file."""
        path = self.path / _CHUNK.format(self.n_chunks)
        _write_atomic(path, lambda stream: np.savez(stream, **arrays))
        self.n_chunks += 1
        return path

    def finish(self, **summary) -> None:
        """Mark the run complete and add ``summary`` to the metadata."""
        self.metadata.update(summary)
        self.metadata["complete"] = True
        _write_json(self.path / METADATA, self.metadata)

    def update(self, **items) -> None:
        """Rewrite the metadata with ``items`` added (the run stays incomplete)."""
        self.metadata.update(items)
        _write_json(self.path / METADATA, self.metadata)


def _load_chunk(path: Path) -> dict:
    with open(path, "rb") as stream, np.load(stream, allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}


def require_path(path, what: str) -> Path:
    """``path`` as a Path, or FileNotFoundError naming it and what was expected there."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(errno.ENOENT, f"{path.name}: no such {what}", str(path))
    return path


def _listing(names: list[str], most: int = 4) -> str:
    """Up to ``most`` file names, then how many more."""
    shown = ", ".join(names[:most])
    return shown if len(names) <= most else f"{shown} and {len(names) - most} more"


def read_store(path, kind: str | None = None) -> tuple[dict, list[dict]]:
    """Read a chunk store: its metadata and the arrays of every complete chunk, in order.

    The chunks are read in order up to the first that is missing or cannot be read (a disk
    error, a file cut short): those before it are returned, and a :class:`DamagedStoreWarning`
    names the bad chunk and the chunk files after it, whose data are not in the result (they
    would follow a hole). An unreadable last chunk of a run that did not finish is what a
    crash leaves; it is only logged.

    Raises ValueError if ``path`` is not a chunk store (of ``kind``, when given), or if the
    first chunk is missing or unreadable while later ones exist (nothing intact to read).
    """
    path = require_path(path, "chunk store")
    name = path.name
    try:
        metadata = json.loads((path / METADATA).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{name}: not a jitterlab chunk store (no {METADATA})") from None
    except (OSError, ValueError) as err:
        raise ValueError(f"{name}/{METADATA}: cannot be read ({err})") from None
    check_document(metadata, format=FORMAT, version=VERSION, what="chunk store",
                   where=f"{name}/{METADATA}")
    if kind is not None and metadata.get("kind") != kind:
        raise ValueError(f"{name}: a chunk store of {metadata.get('kind')!r}, not {kind!r}")
    numbered = sorted((int(match.group(1)), item) for item in path.iterdir()
                      if (match := _CHUNK_NAME.match(item.name)))
    chunks, problem = [], None
    for position, (number, item) in enumerate(numbered):
        if number != position:
            problem = f"chunk {position} is missing (next is {item.name})"
            after = [other.name for _, other in numbered[position:]]
            break
        try:
            chunks.append(_load_chunk(item))
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
            problem = f"{item.name} cannot be read ({err})"
            after = [other.name for _, other in numbered[position + 1:]]
            break
    if problem is None:
        return metadata, chunks
    if not chunks and after:
        raise ValueError(f"{name}: {problem}; no chunk before it to read "
                         f"({len(after)} after it: {_listing(after)})")
    if not after and not metadata.get("complete"):
        logger.warning("%s: ignoring the unreadable last chunk (%s)", name, problem)
        return metadata, chunks
    lost = (f"; the {len(after)} chunk files after it ({_listing(after)}) are not read "
            "either, as they would follow a hole" if after else "")
    read = (f"Read the {len(chunks)} intact chunks before it ({_CHUNK.format(0)} to "
            f"{_CHUNK.format(len(chunks) - 1)}), which end the result early" if chunks
            else "No chunk before it to read")
    warnings.warn(f"{name}: {problem}: its data are lost{lost}. {read}",
                  DamagedStoreWarning, stacklevel=2)
    return metadata, chunks
