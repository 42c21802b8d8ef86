"""Periodic sources of a recording named by cause: the periodic-source search of
:func:`jitterlab.compare.characterize.find_periodic_sources` with causes instead of
frequencies alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd

from .cause_removal import cause_trace
from .cause_table import cause_kinds, cause_set, check_attribution
from .characterize import find_periodic_sources, label_events

__all__ = ["label_sources", "periodic_sources_by_cause"]


# --------------------------------------------------------------------------------------
# periodic sources named by cause
# --------------------------------------------------------------------------------------
def _composition(frame: pd.DataFrame, detours: np.ndarray) -> pd.Series:
    """Time per cause among the given detours, largest first [s]."""
    inside = frame[frame["detour"].isin(detours)]
    return inside.groupby("cause")["time"].sum().sort_values(ascending=False, kind="stable")


def label_sources(table, top: int = 3, **options) -> pd.DataFrame:
    """The periodic sources of the detour trace, each named by the causes of its detours.

    Parameters
    ----------
    table : pandas.DataFrame
        The attribution table (see :func:`check_attribution`).
    top : int, default 3
        How many causes to name in ``causes``. [-]
    **options
        Passed to :func:`jitterlab.compare.characterize.find_periodic_sources` (``min_period``,
        ``max_period``, ``false_alarm``, ...).

    Returns
    -------
    pandas.DataFrame
        The frame of :func:`~jitterlab.compare.characterize.find_periodic_sources` for the whole
        detour trace with three more columns: ``cause`` (the cause with most time in the
        source's detours), ``cause_share`` [1] (its share of their time) and ``causes``
        (the ``top`` largest, as text with their shares).
    """
    frame = check_attribution(table)
    trace = cause_trace(frame)
    sources, labels = label_events(trace, **options)
    detours = np.asarray(trace.attrs["detours"])
    names, shares, texts = [], [], []
    for source in sources.index:
        composition = _composition(frame, detours[labels == source])
        total = float(composition.sum())
        if total > 0:
            names.append(composition.index[0])
            shares.append(float(composition.iloc[0]) / total)
            texts.append(", ".join(f"{cause} {value / total:.0%}"
                                   for cause, value in composition.head(top).items()))
        else:
            names.append(None)
            shares.append(math.nan)
            texts.append("")
    out = sources.copy()
    out["cause"], out["cause_share"], out["causes"] = names, shares, texts
    out.attrs = dict(sources.attrs)
    return out


def periodic_sources_by_cause(table, min_detours: int = 20,
                              causes: Iterable[str] | None = None, **options) -> pd.DataFrame:
    """The periodic-source search run on each cause's own detours.

    Parameters
    ----------
    table : pandas.DataFrame
        The attribution table (see :func:`check_attribution`).
    min_detours : int, default 20
        Causes in fewer detours are not searched. [-]
    causes : iterable of str, optional
        Search only these causes (default: every cause; the search takes about a second
        per cause and minute of recording).
    **options
        Passed to :func:`jitterlab.compare.characterize.find_periodic_sources`.

    Returns
    -------
    pandas.DataFrame
        The rows of :func:`~jitterlab.compare.characterize.find_periodic_sources` for the trace of
        each cause alone (:func:`cause_trace` with ``keep=cause``), index (``cause``,
        ``source``), with ``kind``; ``share`` is the share of that cause's time.
    """
    frame = check_attribution(table)
    kinds = cause_kinds(frame)
    counts = frame.drop_duplicates(["detour", "cause"])["cause"].value_counts()
    if causes is not None:
        counts = counts[sorted(cause_set(frame, causes, "causes"))].sort_values(
            ascending=False, kind="stable")
    pieces = {}
    for cause in counts.index[counts >= int(min_detours)]:
        found = find_periodic_sources(cause_trace(frame, keep=cause), **options)
        found.insert(0, "kind", kinds[cause])
        pieces[cause] = found
    if not pieces:
        raise ValueError(f"no cause appears in {min_detours} detours or more; lower "
                         "min_detours")
    return pd.concat(pieces, names=["cause", "source"])
