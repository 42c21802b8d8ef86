"""netCDF files of the MPI benchmarks: written atomically, recognised by their source.

netCDF has no boolean attributes: they are stored as 0/1 and read back as bool.
Used by :mod:`jitterlab.measure.pb` and :mod:`jitterlab.measure.latency`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

__all__ = ["write_dataset", "read_dataset", "has_source"]


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


def read_run(path, *, kind: str, source: str, what: str, bool_attrs: Iterable[str],
             from_store: Callable):
    """Read an MPI benchmark run: its netCDF file, or its chunk directory.

    ``from_store(metadata, chunks, name)`` builds the Dataset of a chunk directory of
    ``kind``; a file must carry ``source``. ``what`` names the result in errors (for
    example "Parallel Benchmark", with the command "jitterlab measure pb").
    """
    from ..io import chunks as _chunks

    path = _chunks.require_path(path, f"{what} file")
    if path.is_dir():
        metadata, chunks = _chunks.read_store(path, kind=kind)
        return from_store(metadata, chunks, path.name)
    if not has_source(path, source):
        raise ValueError(f"{path.name}: not a {what} file (netCDF from jitterlab measure "
                         f"{kind}) or chunk directory")
    return read_dataset(path, bool_attrs)
