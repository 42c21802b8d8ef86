"""FTQ (Fixed Time Quantum) output: units of work done in each fixed time quantum.

FTQ (Sottile & Minnich) counts how many units of work a loop completes in each of many
consecutive quanta of fixed length; a quantum in which the OS took the CPU away counts
less. Its output (``ftq_<thread>.dat``, or stdout with ``-s``) has ``#`` header lines
(``# Frequency <samples per second>``, ``# Ticks per ns: ...``, ``# Total count is
...``, ``# Max possible work is ...``) and one row per quantum::

    <time [ns]> <count>

the time stamp of the quantum relative to the first. An older layout writes the counts
alone, one per line (the quantum then comes from ``quantum=``).

An FTQ result is not a jitter trace: it says how much time each quantum lost, not when
the detours happened or how many there were. ``read_trace`` therefore refuses it
(``format="ftq"``, a file named ``ftq_*`` or with FTQ's header) with a
:class:`~jitterlab.io.NotATraceError` that points here; read it with :func:`read_ftq`
into an :class:`FTQMeasurement`, whose ``noise`` is the empirical law of the time lost
per quantum and whose :meth:`FTQMeasurement.to_trace` builds a coarse trace (one detour
per quantum) for those who accept that resolution.

References
----------
.. [1] M. Sottile, R. Minnich, "Analysis of microbenchmarks for performance tuning of
   clusters", IEEE Cluster 2004 (FTQ). Code: https://github.com/rminnich/ftq
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from ..base.checks import check_positive
from ..noise import Empirical
from ..traces.trace import Trace
from . import common as _common

__all__ = ["read_ftq", "FTQMeasurement", "looks_like_ftq", "not_a_trace"]

_EXPECTED = "<time ns> <count>"
_HEADER_ITEMS = {
    "frequency": re.compile(r"#\s*Frequency[:\s]\s*([-+0-9.eE]+)"),
    "ticks_per_ns": re.compile(r"#\s*Ticks per ns:\s*([-+0-9.eE]+)"),
    "total_count": re.compile(r"#\s*Total count is\s*([-+0-9.eE]+)"),
    "max_possible_work": re.compile(r"#\s*Max possible work is\s*([-+0-9.eE]+)"),
    "fraction": re.compile(r"#\s*Fraction is\s*([-+0-9.eE]+)"),
}


@dataclass(frozen=True, eq=False)
class FTQMeasurement:
    """One FTQ run: the work counted in each quantum and the time it lost.

    Attributes
    ----------
    time : numpy.ndarray
        Time stamp of each quantum, relative to the first. [s]
    count : numpy.ndarray
        Units of work completed in each quantum. [-]
    quantum : float
        Length of one quantum. [s]
    max_count : float
        Count of an undisturbed quantum (by default the largest count of the run). [-]
    attrs : dict
        Metadata from the header (``frequency`` [1/s], ``ticks_per_ns``,
        ``total_count``, ``max_possible_work``, ``fraction``), ``source`` ("FTQ"),
        ``file`` and free-text ``comment`` lines.

    Notes
    -----
    The time a quantum lost to noise is estimated as (1 − count/max_count)·quantum:
    work is done at the undisturbed rate max_count/quantum whenever the loop runs.
    """

    time: np.ndarray
    count: np.ndarray
    quantum: float
    max_count: float
    attrs: dict = field(default_factory=dict)

    @property
    def n_quanta(self) -> int:
        """Number of quanta."""
        return int(self.count.size)

    @cached_property
    def lost_time(self) -> np.ndarray:
        """Time lost to noise in each quantum, (1 − count/max_count)·quantum. [s]"""
        fraction = np.clip(1.0 - self.count / self.max_count, 0.0, 1.0)
        out = fraction * self.quantum
        out.flags.writeable = False
        return out

    @cached_property
    def noise(self) -> Empirical:
        """Empirical law of the noise δ in one quantum (:attr:`lost_time`). [s]"""
        return Empirical(self.lost_time)

    def noise_fraction(self) -> float:
        """Share of the run lost to noise, Σ lost time / (quanta × quantum). [1]"""
        return float(self.lost_time.sum() / (self.n_quanta * self.quantum))

    def to_dataset(self):
        """The run as an xarray Dataset with dimension ``quantum_index``.

        Variables ``time`` [s], ``count`` [1] and ``lost_time`` [s]; attributes
        ``quantum`` [s], ``max_count`` and the metadata (JSON-compatible values only).
        """
        import xarray as xr

        attrs = {key: value for key, value in self.attrs.items()
                 if isinstance(value, str | int | float) and not isinstance(value, bool)}
        return xr.Dataset(
            {"time": ("quantum_index", np.asarray(self.time),
                      {"units": "s", "long_name": "time stamp of the quantum"}),
             "count": ("quantum_index", np.asarray(self.count),
                       {"units": "1", "long_name": "units of work done in the quantum"}),
             "lost_time": ("quantum_index", np.asarray(self.lost_time),
                           {"units": "s", "long_name": "time lost to noise in the quantum, "
                                                      "(1 - count/max_count)·quantum"})},
            attrs={**attrs, "quantum": self.quantum, "max_count": self.max_count})

    def to_trace(self) -> Trace:
        """A coarse trace: each quantum's lost time as one detour at its start.

        FTQ does not record when within a quantum the detours happened nor how many
        there were, so this trace only holds at the resolution of one quantum: use it
        for work phases much longer than the quantum. Quanta without lost time add
        no event (an all-quiet run gives a single zero-length event).

        Returns
        -------
        Trace
            In seconds; duration n_quanta × quantum; ``attrs`` as this measurement's
            plus ``resolution`` (the quantum) [s].
        """
        lost = np.asarray(self.lost_time)
        keep = np.flatnonzero(lost > 0)
        if keep.size == 0:
            keep = np.array([0])
        starts = keep * self.quantum
        attrs = {**self.attrs, "resolution": self.quantum,
                 "note": "coarse trace from FTQ: one detour per quantum, at its start"}
        return Trace.from_absolute(starts, lost[keep],
                                   total_duration=self.n_quanta * self.quantum, **attrs)


def _parse(path, quantum, max_count) -> FTQMeasurement:
    name = Path(path).name
    lines = _common.read_lines(path)
    header: dict = {}
    comments: list[str] = []
    comment_lines, data = _common.comment_and_data_lines(lines)
    for number, stripped in comment_lines:
        for key, pattern in _HEADER_ITEMS.items():
            match = pattern.match(stripped)
            if match:
                try:
                    header[key] = float(match.group(1))
                except ValueError:
                    raise ValueError(f"{name} line {number}: expected a number in "
                                     f"{stripped!r}") from None
                break
        else:
            comments.append(stripped[1:].strip())
    if not data:
        raise ValueError(f"{name}: expected FTQ rows {_EXPECTED!r} (or one count per line), "
                         "found none")
    columns = len(data[0][1].split())
    if columns not in (1, 2):
        raise ValueError(f"{name} line {data[0][0]}: expected {_EXPECTED!r} or a single "
                         f"count, got {data[0][1]!r}")
    expected = _EXPECTED if columns == 2 else "<count>"
    values = _common.parse_table(name, data, None, expected, columns=columns)
    count = values[:, -1]
    if quantum is None and header.get("frequency"):
        quantum = 1.0 / header["frequency"]
    if columns == 2:
        time = values[:, 0] / 1e9
        step = np.diff(time)
        if (step < 0).any():
            k = int(np.argmax(step < 0)) + 1
            raise ValueError(f"{name} line {data[k][0]}: time stamps must not decrease, got "
                             f"{data[k][1]!r} after {data[k - 1][1]!r}")
        if quantum is None:
            if time.size < 2:
                raise ValueError(f"{name}: one quantum only; pass quantum= [s]")
            quantum = float(np.median(step))
    else:
        if quantum is None:
            raise ValueError(f"{name}: counts without time stamps or '# Frequency' header; "
                             "pass quantum= (the length of one quantum) [s]")
        time = np.arange(count.size) * float(quantum)
    quantum = float(quantum)
    if not (math.isfinite(quantum) and quantum > 0):
        raise ValueError(f"{name}: the quantum must be finite and > 0, got {quantum!r} s")
    if max_count is None:
        max_count = float(count.max())
    max_count = float(max_count)
    if not (math.isfinite(max_count) and max_count > 0):
        raise ValueError(f"{name}: max_count must be finite and > 0 (all counts are zero?), "
                         f"got {max_count!r}")
    attrs = {"source": "FTQ", "file": name, **header}
    if comments:
        attrs["comment"] = "\n".join(comments)
    count.flags.writeable = False
    time.flags.writeable = False
    return FTQMeasurement(time=time, count=count, quantum=quantum, max_count=max_count,
                          attrs=attrs)


def read_ftq(path, quantum: float | None = None,
             max_count: float | None = None) -> FTQMeasurement:
    """Read FTQ output: the work counted in each quantum, and the noise it implies.

    Parameters
    ----------
    path : str or path-like
        FTQ output (gzip-compressed or not): ``<time ns> <count>`` rows after ``#``
        header lines, or one count per line.
    quantum : float, optional
        Length of one quantum; by default 1/``Frequency`` from the header, else the
        median step between time stamps. Required for counts without time stamps. [s]
    max_count : float, optional
        Count of an undisturbed quantum; default the largest count of the run. [-]

    Returns
    -------
    FTQMeasurement
        ``count``, ``time`` [s], ``quantum`` [s], ``lost_time`` [s] per quantum and
        ``noise``, the :class:`~jitterlab.noise.Empirical` law of the lost time.

    Raises
    ------
    TypeError
        For a ``quantum`` or ``max_count`` that is not a number.
    ValueError
        For malformed files (naming the line and what was expected) and invalid
        ``quantum``/``max_count``.

    Notes
    -----
    δ_k = (1 − c_k / c_max)·q for quantum k with count c_k, quantum q, undisturbed count
    c_max. With the largest count as c_max, the least-disturbed quantum has δ = 0 by
    definition, so δ is the noise relative to the quietest quantum.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from jitterlab.io import read_ftq
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = pathlib.Path(tmp) / "ftq_0.dat"
    ...     _ = path.write_text("# Frequency 1000.000000\\n0 100\\n1000000 100\\n2000000 75\\n")
    ...     ftq = read_ftq(path)
    >>> ftq.quantum, ftq.lost_time.tolist()
    (0.001, [0.0, 0.0, 0.00025])
    """
    if quantum is not None:
        quantum = check_positive("quantum", quantum)
    if max_count is not None:
        max_count = check_positive("max_count", max_count)
    return _parse(path, quantum, max_count)


def looks_like_ftq(lines: list[str]) -> bool:
    """Whether the first lines of a file hold FTQ's header (``# Frequency``, ``# Ticks
    per ns``, ``# Total count is`` ...)."""
    return any(pattern.match(line.strip()) for line in lines
               for pattern in _HEADER_ITEMS.values())


def not_a_trace(name: str) -> _common.NotATraceError:
    """The error for FTQ output given to ``read_trace``: it names :func:`read_ftq`."""
    return _common.NotATraceError(
        f"{name}: FTQ output counts the work done in each fixed time quantum; "
        "it does not record when the detours happened, so it is not a jitter trace. Read "
        "it with jitterlab.io.read_ftq(path, quantum=None): its .noise is the empirical "
        "law of the time lost per quantum, and .to_trace() builds a coarse trace (one "
        "detour per quantum) if that resolution is enough.")
