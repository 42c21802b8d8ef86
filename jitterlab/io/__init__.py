"""Reading and writing jitter traces; one module per file format.

* ``"jitterlab"`` — :mod:`jitterlab.io.native`: CSV, Parquet and netCDF, lossless
  (``.csv``, ``.parquet``, ``.nc``);
* ``"jitsim"`` — :mod:`jitterlab.io.jitsim`: jitSim's two-column table (``.jitsim``,
  ``.tsv``);
* ``"loggopsim"`` — :mod:`jitterlab.io.loggopsim`: LogGOPSim/netgauge noise traces,
  absolute nanoseconds (``.trc``);
* ``"sysjitter"`` — :mod:`jitterlab.io.sysjitter`: sysjitter raw files
  (``PREFIX.<core>``; no extension of their own, so pass ``format="sysjitter"``).

Measurements that are not traces have their own readers: the sysjitter summary
(:func:`read_sysjitter_summary`, a pandas Series), FTQ output (:func:`read_ftq`, an
:class:`~jitterlab.io.ftq.FTQMeasurement` with the noise per quantum) and FWQ output
(:func:`read_fwq`, the empirical law of w + δ). ``read_trace`` with ``format="ftq"`` or
``"fwq"``, or on a sysjitter summary, raises :class:`NotATraceError` naming the reader
to use.

Any of them may be gzip-compressed (``.gz`` appended); compression is recognised from
the content. Writing goes through the :class:`~jitterlab.trace.Trace` methods
(``to_csv``, ``to_parquet``, ``to_netcdf``, ``to_jitsim``, ``to_loggopsim``), which write
atomically (a temporary file in the same directory, then :func:`os.replace`).

A new format is a module in this package with a function ``read(path, **options) ->
Trace`` (and ``write(trace, path)``), registered by one entry in :data:`FORMATS` and its
file extensions in :data:`EXTENSIONS`.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from ..trace import Trace
from ._common import NotATraceError, strip_gz
from .ftq import FTQMeasurement, read_ftq
from .fwq import read_fwq
from .sysjitter import read_summary as read_sysjitter_summary

__all__ = ["read_trace", "FORMATS", "EXTENSIONS", "NotATraceError", "read_sysjitter_summary",
           "read_ftq", "FTQMeasurement", "read_fwq"]

#: format name -> module of this package that reads it
FORMATS: dict[str, str] = {
    "jitterlab": "native",
    "jitsim": "jitsim",
    "loggopsim": "loggopsim",
    "sysjitter": "sysjitter",
    "ftq": "ftq",
    "fwq": "fwq",
    "detour": "detour",
}

#: file extension (after removing ``.gz``) -> format name
EXTENSIONS: dict[str, str] = {
    ".csv": "jitterlab",
    ".parquet": "jitterlab",
    ".nc": "jitterlab",
    ".jitsim": "jitsim",
    ".tsv": "jitsim",
    ".trc": "loggopsim",
    ".detour": "detour",
}


def _describe_formats() -> str:
    by_format = {name: [ext for ext, fmt in EXTENSIONS.items() if fmt == name]
                 for name in FORMATS}
    return "; ".join(f"{name!r} ({', '.join(exts) or 'no extension'})"
                     for name, exts in by_format.items())


def read_trace(path, format: str | None = None, **options) -> Trace:
    """Read a jitter trace from a file.

    Parameters
    ----------
    path : str or path-like
        The file; gzip-compressed files are read transparently.
    format : {"jitterlab", "jitsim", "loggopsim", "sysjitter", "ftq", "fwq", "detour"}, optional
        The file format; by default recognised from the extension (``.csv``,
        ``.parquet``, ``.nc`` → jitterlab; ``.jitsim``, ``.tsv`` → jitsim; ``.trc`` →
        loggopsim; each optionally followed by ``.gz``; a ``.detour`` directory → the
        chunks of a detour run, see :func:`jitterlab.bench.read_detour`). "ftq" and
        "fwq" always raise :class:`NotATraceError` (use :func:`read_ftq`, :func:`read_fwq`).
    **options
        Passed to the format's reader, e.g. ``frequency_hz=`` [Hz] and ``unit=`` for a
        jitSim table that does not record them, ``unit="cycles"`` or ``overlap=`` for
        sysjitter.

    Returns
    -------
    Trace

    Raises
    ------
    ValueError
        For an unknown format or extension, and for malformed files (naming the file,
        the line and what was expected).
    NotATraceError
        (a ValueError) For files that hold a summary or a benchmark result rather than
        a trace; the message names the reader to use.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from jitterlab.trace import Trace
    >>> trace = Trace([10, 5], [50, 30], unit="cycles", frequency_hz=1e9)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = trace.to_jitsim(pathlib.Path(tmp) / "fig2.jitsim")
    ...     read_trace(path).equals(trace)
    True
    """
    if format is None:
        name = strip_gz(path)
        suffix = Path(name).suffix.lower()
        if suffix not in EXTENSIONS:
            raise ValueError(f"cannot tell the format of {Path(path).name!r} from its "
                             f"extension; pass format= one of {_describe_formats()}")
        format = EXTENSIONS[suffix]
    if format not in FORMATS:
        raise ValueError(f"unknown trace format {format!r}; known formats: "
                         f"{_describe_formats()}")
    module = importlib.import_module(f"{__name__}.{FORMATS[format]}")
    return module.read(path, **options)
