"""The files of the MPI benchmarks: chunk directory and netCDF file, written and read.

A run writing ``FILE.nc`` keeps its chunks in ``FILE.nc.<kind>/`` while it runs
(:mod:`jitterlab.io.chunks`) and ends with one netCDF file, written atomically and
recognised by its ``source`` attribute. netCDF has no boolean attributes: they are stored
as 0/1 and read back as bool. :class:`RunFiles` describes one benchmark's files; used by
:mod:`jitterlab.measure.pb_files`, :mod:`jitterlab.measure.latency_files` and
:mod:`jitterlab.measure.bsp_files`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["RunFiles", "write_dataset", "read_dataset", "read_run", "has_source", "run_attrs"]


def write_dataset(dataset, path, compressed: Iterable[str], what: str, *,
                  overwrite: bool = False) -> Path:
    """Write ``dataset`` to the netCDF file ``path`` atomically, no fill values, the
    ``compressed`` variables with zlib; ValueError naming the file unless it ends in .nc;
    an existing file only with ``overwrite=True`` (FileExistsError otherwise).
    """
    from ..io.common import atomic_write

    path = Path(path)
    if path.suffix.lower() != ".nc":
        raise ValueError(f"{path.name}: write a {what} as FILE.nc")
    dataset = dataset.copy()
    dataset.attrs = {key: (int(value) if isinstance(value, bool | np.bool_) else value)
                     for key, value in dataset.attrs.items()}
    encoding = {name: {"_FillValue": None} for name in dataset.variables
                if dataset[name].dtype.kind != "U"}
    for name in compressed:
        encoding[name].update(zlib=True, complevel=1, shuffle=True)
    return atomic_write(path, lambda temp: dataset.to_netcdf(temp, encoding=encoding),
                        overwrite=overwrite)


def has_source(path, source: str) -> bool:
    """True if ``path`` is a netCDF file whose ``source`` attribute is ``source``."""
    path = Path(path)
    if not path.is_file() or path.suffix.lower() != ".nc":
        return False
    try:
        import netCDF4

        with netCDF4.Dataset(path) as handle:
            return getattr(handle, "source", None) == source
    except OSError:
        return False


def read_dataset(path, bool_attrs: Iterable[str]):
    """The Dataset of a benchmark's netCDF file, loaded, with its boolean attributes."""
    import xarray as xr

    with xr.open_dataset(path, decode_timedelta=False) as dataset:
        dataset = dataset.load()
    attrs = {key: value.item() if isinstance(value, np.generic) else value
             for key, value in dataset.attrs.items()}
    for key in bool_attrs:
        if key in attrs:
            attrs[key] = bool(attrs[key])
    dataset.attrs = attrs
    return dataset


def run_attrs(metadata: dict, left_out: Iterable[str], **more) -> dict:
    """The attributes of a run's Dataset from its chunk store's ``metadata``: every entry
    not ``left_out`` and not None, then ``more``, then ``complete`` and ``interrupted``."""
    left_out = set(left_out)
    attrs = {key: value for key, value in metadata.items()
             if key not in left_out and value is not None}
    attrs.update(more, complete=bool(metadata.get("complete", False)),
                 interrupted=bool(metadata.get("interrupted", False)))
    return attrs


def read_run(path, *, kind: str, source: str, what: str, bool_attrs: Iterable[str],
             from_store: Callable):
    """Read an MPI benchmark run: its netCDF file, or its chunk directory.

    ``from_store(metadata, chunks, name)`` builds the Dataset of a chunk directory of
    ``kind`` (from one complete chunk or more); a file must carry ``source``. ``what``
    names the result in errors (for example "Parallel Benchmark", with the command
    "jitterlab measure pb").
    """
    from ..io import chunks as _chunks

    path = _chunks.require_path(path, f"{what} file")
    if path.is_dir():
        metadata, chunks = _chunks.read_store(path, kind=kind)
        if not chunks:
            raise ValueError(f"{path.name}: no complete chunk: the run stopped before its "
                             "first chunk was stored")
        return from_store(metadata, chunks, path.name)
    if not has_source(path, source):
        raise ValueError(f"{path.name}: not a {what} file (netCDF from jitterlab measure "
                         f"{kind}) or chunk directory")
    return read_dataset(path, bool_attrs)


@dataclass(frozen=True)
class RunFiles:
    """The chunk directory and netCDF file of one MPI benchmark.

    Parameters
    ----------
    kind : str
        Kind of the chunk store, and suffix of the chunk directory: ``<output>.<kind>``.
    source : str
        The ``source`` attribute of the benchmark's netCDF files.
    what : str
        The runs' name in messages: "Parallel Benchmark" gives "not a Parallel Benchmark
        file" and "not a Parallel Benchmark chunk directory".
    benchmark : str
        The benchmark in the message on a wrong output name: "the Parallel Benchmark".
    bool_attrs : tuple of str
        Attributes stored as 0/1 and read back as bool.
    from_store : callable
        ``from_store(metadata, chunks, name)``: the Dataset of a chunk directory.
    """

    kind: str
    source: str
    what: str
    benchmark: str
    bool_attrs: tuple[str, ...]
    from_store: Callable

    def store_path(self, output) -> Path:
        """The chunk directory of a run writing ``output``: ``<output>.<kind>``."""
        output = Path(output)
        return output.with_name(f"{output.name}.{self.kind}")

    def target_problem(self, output, overwrite: bool = False) -> str | None:
        """Why a run may not write ``output`` and its chunk directory, or None if it may.

        Refused: an existing ``output`` or an earlier run in the chunk directory (unless
        ``overwrite``), and always a directory at ``output`` or a chunk directory of
        another kind.
        """
        from ..io import chunks

        return chunks.output_problem(output, self.store_path(output), self.kind, self.what,
                                     overwrite)

    def output_path(self, output) -> Path:
        """``output`` as a Path, or ValueError unless it names a netCDF file (``.nc``)."""
        output = Path(output)
        if output.suffix.lower() != ".nc":
            raise ValueError(f"{output.name}: {self.benchmark} writes netCDF; name the "
                             "output FILE.nc")
        return output

    def is_file(self, path) -> bool:
        """True if ``path`` is a netCDF file written by this benchmark."""
        return has_source(path, self.source)

    def read(self, path):
        """The Dataset of a run: its netCDF file or its chunk directory (see :func:`read_run`).

        Raises
        ------
        FileNotFoundError
            If ``path`` does not exist.
        ValueError
            If ``path`` is neither, holds no complete chunk, or a chunk other than the last
            is damaged.
        """
        return read_run(path, kind=self.kind, source=self.source, what=self.what,
                        bool_attrs=self.bool_attrs, from_store=self.from_store)
