"""jitSim's trace table: ⟨jitter_duration, cycles_to_next_jitter⟩ per line.

The format of the tables in jitSim's figures (seed 000, §3.1 and Fig. 2): a header line
``jitter_duration<TAB>cycles_to_next_jitter``, then one event per line, tab-separated,
in CPU cycles. jitterlab adds ``# key: <json>`` comment lines for ``unit``,
``frequency_hz`` and the metadata, and writes values in the trace's unit (integers
without decimals, other numbers as the shortest text that reads back exactly).

Reading accepts any whitespace between the two columns, an optional header (also the
figure's spelling ``Jitter duration<TAB>Cycles_to_next_jitter``) and ``#`` comments.
A file without ``# unit`` is taken to be in cycles, which needs a frequency: from
``# frequency_hz`` or from ``read_trace(path, frequency_hz=...)``.

References
----------
.. [1] P. De, V. Mann, "jitSim", Euro-Par 2010 workshops (seed 000), §3.1, Figs. 2 and 4.
"""

from __future__ import annotations

from pathlib import Path

from ..base.checks import check_positive
from ..traces.trace import UNITS, Trace
from ..traces.writers import HEADER  # noqa: F401
from ..traces.writers import write_jitsim as write
from . import common as _common

__all__ = ["read", "write"]

_EXPECTED = "<jitter>\t<gap>"




def _is_header(line: str) -> bool:
    return "_".join(line.lower().split()) == HEADER.replace("\t", "_")


def read(path, unit: str | None = None, frequency_hz: float | None = None) -> Trace:
    """Read a jitSim table.

    Parameters
    ----------
    path : str or path-like
        The file (gzip-compressed or not).
    unit : {"s", "cycles"}, optional
        Overrides the file's ``# unit``; files without one are in cycles.
    frequency_hz : float, optional
        Overrides the file's ``# frequency_hz``. [Hz]
    """
    if unit is not None:
        _common.check_choice("unit", unit, UNITS)
    if frequency_hz is not None:
        frequency_hz = check_positive("frequency_hz", frequency_hz)
    name = Path(path).name
    metadata, comments, rows = _common.split_comments(_common.read_lines(path))
    if rows and _is_header(rows[0][1]):
        rows = rows[1:]
    if not rows:
        raise ValueError(f"{name}: expected rows {_EXPECTED!r}, found none")
    values = _common.parse_table(name, rows, None, _EXPECTED)
    file_unit = metadata.pop("unit", "cycles")
    file_frequency = metadata.pop("frequency_hz", None)
    unit = file_unit if unit is None else unit
    frequency_hz = file_frequency if frequency_hz is None else frequency_hz
    if unit == "cycles" and frequency_hz is None:
        raise ValueError(f"{name}: the trace is in cycles but records no frequency; pass "
                         "read_trace(path, frequency_hz=...) or unit='s'")
    metadata = _common.add_comments(metadata, comments)
    return _common.make_trace(name, values[:, 0], values[:, 1], unit, frequency_hz, metadata)
