"""FWQ (Fixed Work Quantum) output: the time of each repetition of a fixed piece of work.

FWQ (LLNL's ASC Sequoia benchmark, after Sottile & Minnich's FTQ) repeats the same
amount of work many times and records how long each repetition took, in ticks of the
CPU's cycle counter: one number per line (``fwq_<thread>_times.dat``), optionally after
``#`` comment lines. Each sample is w + δ: the work w plus the noise δ that struck that
repetition, which is exactly what the max-of-N model of Garg & De needs per process.

An FWQ result is not a trace (the samples carry no time line): ``read_trace`` refuses
it (``format="fwq"``, or a file named ``fwq_*``) with a
:class:`~jitterlab.io.NotATraceError` that points to :func:`read_fwq`.

References
----------
.. [1] LLNL, "FTQ/FWQ Benchmark", ASC Sequoia benchmark codes (2008).
.. [2] R. Garg, P. De, HiPC 2006 (seed 001), §3: per-process samples of w + δ.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from ..base.checks import check_positive
from ..noise import Empirical
from . import common as _common

__all__ = ["read_fwq", "read_fwq_ticks", "not_a_trace"]

_EXPECTED = "<ticks>"
#: header lines that give the tick rate: name -> (pattern, factor to Hz)
_RATE_LINES = {
    "frequency_hz": (re.compile(r"#\s*frequency_hz\s*:\s*([-+0-9.eE]+)\s*\Z"), 1.0),
    "ticks_per_ns": (re.compile(r"#\s*Ticks per ns\s*:\s*([-+0-9.eE]+)\s*\Z"), 1e9),
    "cpu_mhz": (re.compile(r"#\s*cpu_mhz\s*:\s*([-+0-9.eE]+)\s*\Z"), 1e6),
}


def read_fwq_ticks(path) -> tuple[np.ndarray, float | None]:
    """The raw tick counts of an FWQ file and the tick rate its header states (or None).

    Returns
    -------
    ticks : numpy.ndarray
        One value per repetition, in ticks (cycles). [cycles]
    frequency_hz : float or None
        From a ``# frequency_hz: <Hz>``, ``# Ticks per ns: <x>`` or ``# cpu_mhz: <MHz>``
        header line. [Hz]
    """
    name = Path(path).name
    lines = _common.read_lines(path)
    data: list[tuple[int, str]] = []
    frequency_hz = None
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            for pattern, factor in _RATE_LINES.values():
                match = pattern.match(stripped)
                if match:
                    try:
                        frequency_hz = float(match.group(1)) * factor
                    except ValueError:
                        raise ValueError(f"{name} line {number}: expected a number in "
                                         f"{line!r}") from None
            continue
        data.append((number, line))
    if not data:
        raise ValueError(f"{name}: expected FWQ samples, one {_EXPECTED} per line, found none")
    values = _common.parse_table(name, data, None, _EXPECTED, columns=1)
    return values[:, 0], frequency_hz


def read_fwq(path, frequency_hz: float | None = None) -> Empirical:
    """Read FWQ output as the empirical law of the time of one work quantum, w + δ.

    Parameters
    ----------
    path : str or path-like
        FWQ output (gzip-compressed or not): one tick count per line; ``#`` lines are
        comments.
    frequency_hz : float, optional
        Tick rate of the counter that timed the samples; by default taken from a
        ``# frequency_hz:``, ``# Ticks per ns:`` or ``# cpu_mhz:`` header line. [Hz]

    Returns
    -------
    jitterlab.noise.Empirical
        The samples ticks / frequency_hz. [s]

    Raises
    ------
    TypeError
        For a ``frequency_hz`` that is not a number.
    ValueError
        For malformed lines (naming the line), when no tick rate is known, or for an
        invalid ``frequency_hz``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from jitterlab.io import read_fwq
    >>> folder = tempfile.TemporaryDirectory()
    >>> path = pathlib.Path(folder.name) / "fwq_0_times.dat"
    >>> _ = path.write_text("1000\\n1000\\n1500\\n")
    >>> read_fwq(path, frequency_hz=1e9).values.tolist()
    [1e-06, 1e-06, 1.5e-06]
    >>> folder.cleanup()
    """
    if frequency_hz is not None:
        frequency_hz = check_positive("frequency_hz", frequency_hz)
    ticks, found = read_fwq_ticks(path)
    if frequency_hz is None:
        frequency_hz = found
    if frequency_hz is None:
        raise ValueError(f"{Path(path).name}: FWQ samples are in ticks; pass frequency_hz= "
                         "(the tick rate) [Hz]")
    if not (math.isfinite(frequency_hz) and frequency_hz > 0):
        raise ValueError(f"{Path(path).name}: the tick rate of the header must be finite "
                         f"and > 0, got {frequency_hz!r} Hz")
    return Empirical(ticks / frequency_hz)


def not_a_trace(name: str) -> _common.NotATraceError:
    """The error for FWQ output given to ``read_trace``: it names :func:`read_fwq`."""
    return _common.NotATraceError(
        f"{name}: FWQ output holds one time per repetition of a fixed piece of "
        "work, with no time line of the detours, so it is not a jitter trace. Read it "
        "with jitterlab.io.read_fwq(path, frequency_hz=...), which gives the empirical "
        "law of w + δ for max-of-N predictions.")
