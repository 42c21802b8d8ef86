"""ROSS's end-of-run statistics (Rensselaer's Optimistic Simulation System, seed 004).

ROSS prints, after a run, blocks of statistics (``TW Library Statistics``, ``TW GVT
Statistics``, ...). :func:`read_summary` takes the ones a Time Warp study needs.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from pathlib import Path

import pandas as pd

__all__ = ["read_summary", "STATISTICS"]

#: a number as ROSS prints it, optionally with thousands separators ("1,234.5")
_NUMBER = re.compile(r"-?(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?")

#: the block that opens a run's end-of-run statistics
_RUN_HEADER = "TW Library Statistics:"

#: statistic → (label as ROSS prints it, type)
STATISTICS = {
    "running_time_s": (r": Running Time =", float),
    "total_events_processed": ("Total Events Processed", int),
    "events_aborted": (r"Events Aborted \(part of RBs\)", int),
    "events_rolled_back": ("Events Rolled Back", int),
    "efficiency_percent": ("Efficiency", float),
    "remote_network_events": (r"Total Remote \(network\) Events Processed", int),
    "rollbacks": ("Total Roll Backs", int),
    "primary_rollbacks": ("Primary Roll Backs", int),
    "secondary_rollbacks": ("Secondary Roll Backs", int),
    "gvt_computations": ("Total GVT Computations", int),
    "committed_events": ("Net Events Processed", int),
    "event_rate_per_s": (r"Event Rate \(events/sec\)", float),
    "gvt_interval": ("GVT Interval", int),
    "batch": ("Batch Size", int),
    "forced_gvt": ("Forced GVT", int),
    "all_reduce_calls": ("Total All Reduce Calls", int),
    "pes": ("Total PEs", int),
    "lps": ("Total LPs", int),
    "end_time": ("Simulation End Time", float),
}


def read_summary(source) -> pd.Series:
    """The statistics ROSS printed at the end of one run.

    Parameters
    ----------
    source : path or str
        A file holding ROSS's output, or the output itself.

    Returns
    -------
    pandas.Series
        One value per key of :data:`STATISTICS` (times in seconds, rates in events per
        second, efficiency in percent as printed), counts as exact Python ints (dtype
        object, so no count loses digits to float64); ``attrs["source"]``.

    Raises
    ------
    ValueError
        A statistic is missing (the run did not finish, or this is not ROSS output),
        printed more than once (several runs in one text), or not a whole number where
        a count is expected, naming it, the source and the line.
    """
    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source
                                     and Path(source).is_file()):
        name = str(source)
        text = Path(source).read_text(encoding="utf-8", errors="replace")
    elif isinstance(source, str) and "\n" not in source:
        raise FileNotFoundError(f"{source}: no such file (ROSS's output as text has many "
                                f"lines; a single line is taken for a path)")
    elif isinstance(source, str):
        name, text = "<text>", source
    else:
        raise TypeError(f"source must be a path or ROSS's output as text, got "
                        f"{type(source).__name__}")
    lines = text.splitlines()
    runs = [number for number, line in enumerate(lines, 1) if _RUN_HEADER in line]
    if len(runs) > 1:
        raise ValueError(f"{name}: {len(runs)} runs' statistics (a '{_RUN_HEADER}' block on "
                         f"lines {', '.join(map(str, runs))}); read each run's output on "
                         f"its own")
    values = {}
    for key, (label, kind) in STATISTICS.items():
        pattern = re.compile(label + r"\s+(\S+)")
        found = [(number, match) for number, line in enumerate(lines, 1)
                 if (match := pattern.search(line))]
        printed = label.replace(chr(92), "")
        if not found:
            raise ValueError(f"{name}: ROSS output without {key!r} (no line "
                             f"'{printed} ...'): the run did not finish or this is not "
                             f"ROSS's end-of-run output")
        read = {_value(match.group(1), kind, f"{name} line {number}", printed)
                for number, match in found}
        if len(read) > 1:  # ROSS prints some statistics twice, with the same value
            raise ValueError(f"{name}: '{printed}' is printed with different values on "
                             f"lines {', '.join(str(n) for n, _ in found)}")
        values[key] = read.pop()
    series = pd.Series(values, name=Path(name).name, dtype=object)
    series.attrs["source"] = name
    return series


def _value(token: str, kind, where: str, printed: str):
    """The number ``token`` as ``kind`` (int counts exactly), or a ValueError naming it."""
    match = _NUMBER.fullmatch(token)
    if match is None:
        raise ValueError(f"{where}: '{printed}' is followed by {token!r}, not a number")
    plain = token.replace(",", "")
    if kind is float:
        return float(plain)
    try:
        exact = Decimal(plain)
    except InvalidOperation:  # pragma: no cover - the pattern admits only numbers
        raise ValueError(f"{where}: {token!r} is not a number") from None
    if exact != exact.to_integral_value():
        raise ValueError(f"{where}: '{printed}' is a count, got {token!r}")
    return int(exact)
