"""The summary sysjitter prints (``key: value`` statistics per core), as a pandas Series.

Without ``--raw``, sysjitter prints per core the count, rate and quantiles of the
interruptions it saw; :func:`read_summary` reads them with the names of
:meth:`jitterlab.Trace.stats` (:data:`SUMMARY_KEYS`). Raw traces are read by
:func:`jitterlab.io.sysjitter.read`.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from . import common as _common

__all__ = ["read_summary", "looks_like_summary", "SUMMARY_KEYS"]

_SUMMARY_LINE = re.compile(r"\s*([A-Za-z_][\w%()]*)\s*:\s*(.*?)\s*\Z")

#: sysjitter summary key -> (name in the Series, divisor to SI, unit). The names follow
#: :meth:`jitterlab.Trace.stats`, so a summary and the stats of the raw trace line up.
SUMMARY_KEYS: dict[str, tuple[str, float, str]] = {
    "core_i": ("core", 1.0, "1"),
    "threshold(ns)": ("threshold", 1e9, "s"),
    "cpu_mhz": ("cpu_mhz", 1.0, "MHz"),
    "runtime(ns)": ("duration", 1e9, "s"),
    "int_n": ("n_events", 1.0, "1"),
    "int_n_per_sec": ("event_rate", 1.0, "1/s"),
    "int_min(ns)": ("min_jitter", 1e9, "s"),
    "int_median(ns)": ("p50_jitter", 1e9, "s"),
    "int_mean(ns)": ("mean_jitter", 1e9, "s"),
    "int_90(ns)": ("p90_jitter", 1e9, "s"),
    "int_99(ns)": ("p99_jitter", 1e9, "s"),
    "int_999(ns)": ("p999_jitter", 1e9, "s"),
    "int_9999(ns)": ("p9999_jitter", 1e9, "s"),
    "int_99999(ns)": ("p99999_jitter", 1e9, "s"),
    "int_max(ns)": ("max_jitter", 1e9, "s"),
    "int_total(ns)": ("total_jitter", 1e9, "s"),
    "int_total(%)": ("noise_fraction", 100.0, "1"),
}
#: summary keys that repeat another key at lower precision
_REDUNDANT = {"runtime(s)": "runtime(ns)"}
#: raw TSC values printed by ``sysjitter --verbose``
_HEXADECIMAL = ("frc_start", "frc_stop")


def looks_like_summary(lines: list[str]) -> bool:
    keys = set()
    for line in lines[:40]:
        match = _SUMMARY_LINE.match(line)
        if match and not line.lstrip().startswith("#"):
            keys.add(match.group(1))
    return bool(keys & {"core_i", "int_n", "int_total(ns)", "cpu_mhz"})


def _summary_number(name: str, number: int, key: str, text: str):
    try:
        if key in _HEXADECIMAL:
            return int(text, 16)
        return float(text)
    except ValueError:
        kind = "hexadecimal number" if key in _HEXADECIMAL else "number"
        raise ValueError(f"{name} line {number}: expected '{key}: <{kind}> ...' (one "
                         f"value per core), got {text!r}") from None


def read_summary(path, core: int | None = None) -> pd.Series:
    """Read the summary sysjitter prints (``key: value`` lines) for one core.

    Parameters
    ----------
    path : str or path-like
        The saved output (gzip-compressed or not). An optional first line starting
        with ``$`` (the command) is kept in ``attrs["command"]``.
    core : int, optional
        Which core (the ``core_i`` value) to return; needed when the summary covers
        several cores.

    Returns
    -------
    pandas.Series
        float64, named after the core, indexed like :meth:`jitterlab.Trace.stats`
        where the quantity is the same: ``core``, ``threshold`` [s], ``cpu_mhz`` [MHz],
        ``duration`` (the runtime) [s], ``n_events``, ``event_rate`` [1/s],
        ``min_jitter``, ``p50_jitter``, ``mean_jitter``, ``p90_jitter``, ``p99_jitter``,
        ``p999_jitter``, ``p9999_jitter``, ``p99999_jitter``, ``max_jitter``,
        ``total_jitter`` [s] and ``noise_fraction`` [1] (see :data:`SUMMARY_KEYS`).
        Other numeric keys keep their sysjitter name (``(ns)`` values converted to
        seconds). ``attrs``: ``units``, ``keys`` (the sysjitter key of each entry),
        ``command``, ``file``, ``source`` ("sysjitter summary").

    Notes
    -----
    sysjitter's quantiles are order statistics ``sorted[int(n·q)]`` truncated to whole
    nanoseconds, and its ``runtime(s)`` line (dropped here) repeats ``runtime(ns)``
    rounded to milliseconds; ``Trace.stats()`` of the raw file interpolates linearly,
    so its quantiles can differ from these by one order statistic.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from jitterlab.io import read_sysjitter_summary
    >>> lines = ["core_i: 1", "int_n: 31570", "int_n_per_sec: 1579.031", "int_total(%): 2.062"]
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = pathlib.Path(tmp) / "summary.txt"
    ...     _ = path.write_text("\\n".join(lines) + "\\n")
    ...     summary = read_sysjitter_summary(path)
    >>> summary.to_dict()
    {'core': 1.0, 'n_events': 31570.0, 'event_rate': 1579.031, 'noise_fraction': 0.02062}
    """
    name = Path(path).name
    lines = _common.read_lines(path)
    command = None
    items: list[tuple[int, str, list[str]]] = []
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("$") and command is None and not items:
            command = stripped[1:].strip()
            continue
        if stripped.startswith("#"):
            raise _common.NotATraceError(
                f"{name} line {number}: a '#' header line — this looks like a sysjitter "
                "raw file, not a summary; read it with read_trace(path, format='sysjitter')")
        match = _SUMMARY_LINE.match(stripped)
        if match is None or not match.group(2):
            raise ValueError(f"{name} line {number}: expected a sysjitter summary line "
                             f"'<key>: <value> ...', got {line!r}")
        items.append((number, match.group(1), match.group(2).split()))
    if not items:
        raise ValueError(f"{name}: expected sysjitter summary lines '<key>: <value>', "
                         "found none")
    width = len(items[0][2])
    for number, key, values in items:
        if len(values) != width:
            raise ValueError(f"{name} line {number}: expected {width} value(s) for {key!r} "
                             f"(one per core), got {len(values)}")
    cores = next((values for _, key, values in items if key == "core_i"), None)
    if cores is None:
        column = 0
        if width > 1 or core is not None:
            raise ValueError(f"{name}: no 'core_i:' line, so the cores cannot be told apart")
    elif core is None:
        if width > 1:
            raise ValueError(f"{name} summarises cores {', '.join(cores)}; choose one "
                             "with core=")
        column = 0
    elif str(core) in cores:
        column = cores.index(str(core))
    else:
        raise ValueError(f"{name}: no core {core!r}; the summary covers cores "
                         f"{', '.join(cores)}")
    values, units, keys = {}, {}, {}
    for number, key, row in items:
        if key in _REDUNDANT and _REDUNDANT[key] in {k for _, k, _ in items}:
            continue
        value = _summary_number(name, number, key, row[column])
        if key in SUMMARY_KEYS:
            label, scale, unit = SUMMARY_KEYS[key]
        elif key.endswith("(ns)"):
            label, scale, unit = key, 1e9, "s"
        else:
            label, scale, unit = key, 1.0, ""
        values[label] = value / scale
        units[label] = unit
        keys[label] = key
    label = f"sysjitter core {cores[column]}" if cores is not None else "sysjitter"
    series = pd.Series(values, dtype=np.float64, name=label)
    series.attrs = {"units": units, "keys": keys, "command": command, "file": name,
                    "source": "sysjitter summary"}
    return series
