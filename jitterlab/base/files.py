"""Files: reading bytes and lines (gzip detected from the content), atomic writes.

Every file jitterlab writes appears whole or not at all (:func:`atomic_write`), and an
existing file is replaced only when the caller says so.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import shutil
import tempfile
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path

from .checks import refuse_existing

GZIP_MAGIC = b"\x1f\x8b"


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
