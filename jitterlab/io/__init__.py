"""Reading and writing jitter traces; one module per file format.

* ``"jitterlab"`` — :mod:`jitterlab.io.native`: CSV, Parquet and netCDF, lossless
  (``.csv``, ``.parquet``, ``.nc``);
* ``"jitsim"`` — :mod:`jitterlab.io.jitsim`: jitSim's two-column table (``.jitsim``,
  ``.tsv``);
* ``"loggopsim"`` — :mod:`jitterlab.io.loggopsim`: LogGOPSim/netgauge noise traces,
  absolute nanoseconds (``.trc``);
* ``"sysjitter"`` — :mod:`jitterlab.io.sysjitter`: sysjitter raw files
  (``PREFIX.<core>``; no extension of their own, recognised from their header);
* ``"detour"`` — the chunk directory of a detour run (``.detour``), see
  :func:`jitterlab.measure.read_detour`.

Measurements that are not traces have their own readers: the sysjitter summary
(:func:`read_sysjitter_summary`, a pandas Series), ROSS's end-of-run statistics
(:func:`read_ross_summary`, a pandas Series), FTQ output (:func:`read_ftq`, an
:class:`~jitterlab.io.ftq.FTQMeasurement` with the noise per quantum) and FWQ output
(:func:`read_fwq`, the empirical law of w + δ); kernel trace events from ftrace or
``trace-cmd report`` (:func:`read_ftrace`, a pandas DataFrame, see
``docs/kernel_events.md``) and the output of Linux's osnoise tracer and ``rtla osnoise``
(:func:`read_osnoise_events`, :func:`read_osnoise_periods`,
:func:`read_rtla_osnoise_top`, :func:`read_rtla_osnoise_hist`). ``read_trace`` given
one of them (``format="ftq"`` or ``"fwq"``, a file named ``ftq_*``/``fwq_*``, FTQ's header or a
sysjitter summary) raises :class:`NotATraceError` naming the reader to use.

Any of them may be gzip-compressed (``.gz`` appended); compression is recognised from
the content. Writing goes through the :class:`~jitterlab.traces.trace.Trace` methods
(``to_csv``, ``to_parquet``, ``to_netcdf``, ``to_jitsim``, ``to_loggopsim``), which write
atomically (a temporary file in the same directory, then :func:`os.replace`).

A new format is a module in this package with a function ``read(path, **options) ->
Trace`` (and ``write(trace, path)``), registered by one entry in :data:`FORMATS` and its
file extensions in :data:`EXTENSIONS`; the keywords of its ``read`` are the options
``read_trace`` accepts for it.
"""

from __future__ import annotations

import errno
import importlib
import inspect
import os
import re
from pathlib import Path

from ..base.lazy import lazy_attributes
from ..traces.trace import Trace
from . import common as _common
from .common import NotATraceError, strip_gz

#: public name -> (module of this package, its attribute), imported on first use (PEP 562):
#: a process that needs one reader, or only :mod:`jitterlab.io.chunks` (an MPI rank of
#: ``jitterlab measure``), does not import them all (FTQ's and FWQ's readers import
#: :mod:`jitterlab.noise` and with it ``scipy.stats``)
_LAZY: dict[str, tuple[str, str]] = {
    "read_sysjitter_summary": ("sysjitter", "read_summary"),
    "read_ftq": ("ftq", "read_ftq"),
    "FTQMeasurement": ("ftq", "FTQMeasurement"),
    "read_fwq": ("fwq", "read_fwq"),
    "read_ross_summary": ("ross", "read_summary"),
    "read_otf2_events": ("otf2", "read_otf2_events"),
    "write_otf2_events": ("otf2_write", "write_otf2_events"),
    "read_loggopsim_timeline": ("loggopsim", "read_timeline"),
    "read_events": ("events", "read_events"),
    "write_events": ("events", "write_events"),
    "read_ftrace": ("ftrace", "read_ftrace"),
    "LostEventsWarning": ("ftrace", "LostEventsWarning"),
    "read_osnoise_events": ("osnoise", "read_osnoise_events"),
    "read_osnoise_periods": ("osnoise", "read_osnoise_periods"),
    "read_rtla_osnoise_top": ("osnoise", "read_rtla_osnoise_top"),
    "read_rtla_osnoise_hist": ("osnoise", "read_rtla_osnoise_hist"),
    "OsnoiseHistogram": ("osnoise", "OsnoiseHistogram"),
}

__all__ = ["read_trace", "FORMATS", "EXTENSIONS", "NOT_TRACES", "NotATraceError",
           "read_sysjitter_summary", "read_ftq", "FTQMeasurement", "read_fwq",
           "read_ross_summary", "read_otf2_events", "write_otf2_events", "read_loggopsim_timeline",
           "read_events", "write_events"]
__all__ += ["read_ftrace", "LostEventsWarning", "read_osnoise_events", "read_osnoise_periods",
            "read_rtla_osnoise_top", "read_rtla_osnoise_hist", "OsnoiseHistogram"]


def _locate(name: str) -> tuple[str, str | None] | None:
    """Where a public name of :data:`_LAZY`, or a module of this package
    (``jitterlab.io.ftq``), is."""
    if name in _LAZY:
        module_name, attribute = _LAZY[name]
        return f"{__name__}.{module_name}", attribute
    if not name.startswith("_") and (Path(__file__).parent / f"{name}.py").is_file():
        return f"{__name__}.{name}", None
    return None


__getattr__, __dir__ = lazy_attributes(globals(), _locate)


def _not_a_trace(format: str, name: str) -> NotATraceError:
    """The error of the reader module ``format`` (``"ftq"``, ``"fwq"``) for the file
    ``name``, naming the reader to use."""
    return importlib.import_module(f"{__name__}.{format}").not_a_trace(name)


#: format name -> module of this package that reads it
FORMATS: dict[str, str] = {
    "jitterlab": "native",
    "jitsim": "jitsim",
    "loggopsim": "loggopsim",
    "sysjitter": "sysjitter",
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

#: measurements that are not traces: name -> the error naming their reader (called with
#: the file name)
NOT_TRACES = {"ftq": lambda name: _not_a_trace("ftq", name),
              "fwq": lambda name: _not_a_trace("fwq", name)}

#: file names FTQ and FWQ give their output (``ftq_0.dat``, ``fwq_0_times.dat``)
_NOT_TRACE_NAME = re.compile(r"(ftq|fwq)(?![a-z])", re.IGNORECASE)
#: title in the marker line jitterlab writes -> format
_MARKER_TITLES = {"(jitterlab CSV": "jitterlab", "(jitSim": "jitsim", "(LogGOPSim": "loggopsim"}
#: bytes read to recognise a file from its content
_HEAD_BYTES = 1 << 16


def _describe_formats() -> str:
    by_format = {name: [ext for ext, fmt in EXTENSIONS.items() if fmt == name]
                 for name in FORMATS}
    described = "; ".join(f"{name!r} ({', '.join(exts) or 'recognised from its header'})"
                          for name, exts in by_format.items())
    return (f"{described}. FTQ and FWQ output are not traces: read them with "
            "jitterlab.io.read_ftq and read_fwq")


def _sniff(path: Path) -> str | None:
    """The format of a file recognised from its first bytes, or None.

    Raises NotATraceError for FTQ output and FWQ files named by FWQ.
    """
    from . import native, sysjitter

    match = _NOT_TRACE_NAME.match(path.name)
    if match:
        raise NOT_TRACES[match.group(1).lower()](path.name)
    head = _common.read_bytes(path, _HEAD_BYTES)
    if native.binary_kind(head) is not None:
        return "jitterlab"
    lines = head.decode("utf-8", errors="replace").split("\n")
    if lines[0].startswith(_common.MARKER):
        title = lines[0][len(_common.MARKER):].strip()
        return next((fmt for prefix, fmt in _MARKER_TITLES.items()
                     if title.startswith(prefix)), None)
    if sysjitter.looks_like_raw(lines) or sysjitter.looks_like_summary(lines):
        return "sysjitter"  # whose reader refuses a summary, naming read_sysjitter_summary
    from . import ftq  # after the cheaper checks: it imports jitterlab.noise

    if ftq.looks_like_ftq(lines[:40]):
        raise ftq.not_a_trace(path.name)
    return None


def _format_of(path: Path) -> str:
    suffix = Path(strip_gz(path)).suffix.lower()
    if suffix in EXTENSIONS:
        return EXTENSIONS[suffix]
    if path.is_dir():
        raise ValueError(f"{path.name} is a directory; read_trace reads a directory only as "
                         "a detour run (name ending in '.detour', or format='detour')")
    format = _sniff(path)
    if format is None:
        raise ValueError(f"cannot tell the format of {path.name!r} from its extension or "
                         f"its first lines; pass format= one of {_describe_formats()}")
    return format


def _check_options(reader, format: str, options: dict) -> None:
    """TypeError naming each keyword the format's reader does not take."""
    parameters = list(inspect.signature(reader).parameters.values())[1:]  # after path
    accepted = [p.name for p in parameters
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = [key for key in options if key not in accepted]
    if unknown:
        takes = (f"accepts {', '.join(accepted)}" if accepted else "takes no options")
        raise TypeError(f"read_trace() got unexpected keyword argument(s) "
                        f"{', '.join(map(repr, unknown))}: the {format!r} format {takes}")


def read_trace(path, format: str | None = None, **options) -> Trace:
    """Read a jitter trace from a file.

    Parameters
    ----------
    path : str or path-like
        The file; gzip-compressed files are read transparently.
    format : {"jitterlab", "jitsim", "loggopsim", "sysjitter", "detour"}, optional
        The file format; by default recognised from the extension (``.csv``,
        ``.parquet``, ``.nc`` → jitterlab; ``.jitsim``, ``.tsv`` → jitsim; ``.trc`` →
        loggopsim; each optionally followed by ``.gz``; a ``.detour`` directory → the
        chunks of a detour run, see :func:`jitterlab.measure.read_detour`), else from the
        first lines (a sysjitter raw file ``PREFIX.<core>``, a file jitterlab wrote).
        FTQ and FWQ output are not traces: read them with :func:`read_ftq` and
        :func:`read_fwq` (``format="ftq"`` or ``"fwq"`` raises :class:`NotATraceError`
        saying so).
    **options
        Passed to the format's reader, e.g. ``frequency_hz=`` [Hz] and ``unit=`` for a
        jitSim table that does not record them, ``unit="cycles"`` or ``overlap=`` for
        sysjitter, ``overlap=`` for LogGOPSim; the jitterlab and detour formats take
        none.

    Returns
    -------
    Trace

    Raises
    ------
    FileNotFoundError
        When ``path`` does not exist.
    TypeError
        For a ``path`` or ``format`` of the wrong type, and for a keyword the format's
        reader does not take (naming it and the accepted ones).
    ValueError
        For an unknown format or a file whose format cannot be told, and for malformed
        or damaged files, gzip included (naming the file, the line and what was
        expected).
    NotATraceError
        (a ValueError) For files that hold a summary or a benchmark result rather than
        a trace; the message names the reader to use.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from jitterlab.traces.trace import Trace
    >>> trace = Trace([10, 5], [50, 30], unit="cycles", frequency_hz=1e9)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = trace.to_jitsim(pathlib.Path(tmp) / "fig2.jitsim")
    ...     read_trace(path).equals(trace)
    True
    """
    if isinstance(path, bytes) or not isinstance(path, str | os.PathLike):
        raise TypeError(f"path must be a str or path-like, got {type(path).__name__} {path!r}")
    path = Path(path)
    if not str(path) or path == Path("."):
        raise ValueError(f"path must name a file, got {str(path)!r}")
    if format is not None and not isinstance(format, str):
        raise TypeError(f"format must be a string, got {type(format).__name__} {format!r}")
    if not path.exists():
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))
    if format in NOT_TRACES:
        raise NOT_TRACES[format](path.name)
    if format is None:
        format = _format_of(path)
    if format not in FORMATS:
        raise ValueError(f"unknown trace format {format!r}; known formats: "
                         f"{_describe_formats()}")
    reader = importlib.import_module(f"{__name__}.{FORMATS[format]}").read
    _check_options(reader, format, options)
    return reader(path, **options)
