"""ROSS's end-of-run statistics (Rensselaer's Optimistic Simulation System, seed 004).

ROSS prints, after a run, blocks of statistics (``TW Library Statistics``, ``TW GVT
Statistics``, ...). :func:`read_summary` takes the ones a Time Warp study needs.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

__all__ = ["read_summary", "STATISTICS"]

_NUMBER = r"(-?[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)"

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
        second, efficiency in percent as printed); ``attrs["source"]``.

    Raises
    ------
    ValueError
        A statistic is missing (the run did not finish, or this is not ROSS output),
        naming it and the source.
    """
    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source
                                     and Path(source).is_file()):
        name = str(source)
        text = Path(source).read_text(encoding="utf-8", errors="replace")
    elif isinstance(source, str):
        name, text = "<text>", source
    else:
        raise TypeError(f"source must be a path or ROSS's output as text, got "
                        f"{type(source).__name__}")
    values = {}
    for key, (label, kind) in STATISTICS.items():
        match = re.search(label + r"\s+" + _NUMBER, text)
        if match is None:
            raise ValueError(f"{name}: ROSS output without {key!r} (no line "
                             f"'{label.replace(chr(92), '')} ...'): the run did not finish "
                             f"or this is not ROSS's end-of-run output")
        values[key] = kind(float(match.group(1))) if kind is int else kind(match.group(1))
    series = pd.Series(values, name=Path(name).name)
    series.attrs["source"] = name
    return series
