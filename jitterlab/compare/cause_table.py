"""The attribution table of :mod:`jitterlab.compare.causes`, checked: one row per (detour,
cause) with ``detour``, ``start`` [s], ``length`` [s], ``cause``, ``kind`` and ``time`` [s];
the time of a detour its causes do not account for is added as :data:`UNATTRIBUTED`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .attribution import KINDS

__all__ = ["UNATTRIBUTED", "check_attribution", "window", "cause_kinds", "cause_set"]

#: the pseudo-cause of detour time that the causes of a detour do not account for
UNATTRIBUTED = "unattributed time of detours with guest events"
_COLUMNS = ("detour", "start", "length", "cause", "kind", "time")
#: relative rounding allowed between a detour's length and the sum of its causes' times
_RELATIVE_ROUNDING = 1e-9
#: absolute rounding allowed in the same comparison (a TSC tick is ~0.4 ns) [s]
_ABSOLUTE_ROUNDING = 1e-9


# --------------------------------------------------------------------------------------
# the table
# --------------------------------------------------------------------------------------
def _numbers(table: pd.DataFrame, column: str) -> np.ndarray:
    values = pd.to_numeric(table[column], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"attribution table row {i}: {column} must be a finite number >= 0 "
                         f"[s], got {table[column].iat[i]!r}")
    return values


def check_attribution(table) -> pd.DataFrame:
    """The attribution table, checked, sorted by detour, with the unattributed time added.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per (detour, cause): ``detour``, ``start`` [s], ``length`` [s], ``cause``,
        ``kind``, ``time`` [s]; ``attrs["duration"]`` [s] the length of the recording.

    Returns
    -------
    pandas.DataFrame
        The same columns (``detour`` int64, times float64), sorted by start and detour,
        with one more row of cause :data:`UNATTRIBUTED` (kind ``"unattributed"``) for
        every detour whose causes' times add up to less than its length (by more than
        rounding); ``attrs`` kept.

    Raises
    ------
    TypeError
        For what is not a DataFrame.
    ValueError
        A missing column or ``duration``, a time that is not a finite number >= 0, a
        detour of length 0 or with two starts or lengths, a kind not in :data:`KINDS`, a
        cause under two kinds, a detour whose causes take more time than the detour, or
        a detour that ends after the recording; each names the row or detour.
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"expected the attribution DataFrame, got {type(table).__name__}")
    missing = [c for c in _COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"the attribution table lacks the columns {missing} (expected "
                         f"{list(_COLUMNS)})")
    if len(table) == 0:
        raise ValueError("the attribution table is empty: no detour to attribute")
    duration = table.attrs.get("duration")
    if duration is None or not (isinstance(duration, int | float | np.number)
                                and math.isfinite(duration) and duration > 0):
        raise ValueError(f"attrs['duration'] must be the recording's length > 0 [s], got "
                         f"{duration!r}")
    detour = pd.to_numeric(table["detour"], errors="coerce").to_numpy(dtype=np.float64)
    if (~np.isfinite(detour) | (detour != np.round(detour))).any():
        i = int(np.flatnonzero(~np.isfinite(detour) | (detour != np.round(detour)))[0])
        raise ValueError(f"attribution table row {i}: detour must be an integer, got "
                         f"{table['detour'].iat[i]!r}")
    start, length, time = (_numbers(table, c) for c in ("start", "length", "time"))
    kind = table["kind"].astype(str).to_numpy()
    unknown = sorted(set(kind) - {*KINDS, "unattributed"})
    if unknown:
        raise ValueError(f"unknown kind(s) {unknown}; an attribution table uses {list(KINDS)}"
                         " (and 'unattributed' once checked)")
    frame = pd.DataFrame({"detour": detour.astype(np.int64), "start": start,
                          "length": length, "cause": table["cause"].astype(str).to_numpy(),
                          "kind": kind, "time": time})
    kinds = frame.groupby("cause")["kind"].nunique()
    if (kinds > 1).any():
        cause = kinds.index[int(np.argmax(kinds.to_numpy() > 1))]
        raise ValueError(f"cause {cause!r} appears under several kinds "
                         f"{sorted(frame.loc[frame['cause'] == cause, 'kind'].unique())}")
    per = frame.groupby("detour").agg(start_lo=("start", "min"), start_hi=("start", "max"),
                                      length_lo=("length", "min"),
                                      length_hi=("length", "max"), time=("time", "sum"))
    for name in ("start", "length"):
        differ = per[f"{name}_lo"] != per[f"{name}_hi"]
        if differ.any():
            raise ValueError(f"detour {int(per.index[differ.to_numpy()][0])} has several "
                             f"values of {name}")
    if (per["length_lo"] <= 0).any():
        raise ValueError(f"detour {int(per.index[(per['length_lo'] <= 0).to_numpy()][0])} "
                         "has length 0: a detour takes time")
    slack = _RELATIVE_ROUNDING * per["length_lo"] + _ABSOLUTE_ROUNDING
    over = per["time"] > per["length_lo"] + slack
    if over.any():
        i = int(np.argmax(over.to_numpy()))
        raise ValueError(f"detour {int(per.index[i])}: its causes take "
                         f"{per['time'].iat[i]:.9g} s, more than its length "
                         f"{per['length_lo'].iat[i]:.9g} s (nested causes counted twice?)")
    late = per["start_lo"] + per["length_lo"] > duration * (1 + 1e-9) + _ABSOLUTE_ROUNDING
    if late.any():
        raise ValueError(f"detour {int(per.index[int(np.argmax(late.to_numpy()))])} ends "
                         f"after the recording's duration {duration} s")
    rest = per["length_lo"] - per["time"]
    short = rest > slack
    if short.any():
        extra = pd.DataFrame({"detour": per.index[short.to_numpy()].to_numpy(np.int64),
                              "start": per["start_lo"][short].to_numpy(),
                              "length": per["length_lo"][short].to_numpy(),
                              "cause": UNATTRIBUTED, "kind": "unattributed",
                              "time": rest[short].to_numpy()})
        frame = pd.concat([frame, extra], ignore_index=True)
    frame = frame.sort_values(["start", "detour", "cause"], kind="stable",
                              ignore_index=True)
    frame.attrs = dict(table.attrs)
    return frame


def window(table, start: float, stop: float) -> pd.DataFrame:
    """The attribution table of a part of the recording.

    Parameters
    ----------
    table : pandas.DataFrame
        The attribution table (see :func:`check_attribution`).
    start, stop : float
        The part of the recording kept, ``start <= t < stop`` (a detour is kept when it
        starts and ends in it). [s]

    Returns
    -------
    pandas.DataFrame
        The rows of the detours inside, ``start`` measured from ``start``;
        ``attrs["duration"]`` is ``stop - start``, ``attrs["window"]`` the two bounds.
    """
    frame = check_attribution(table)
    duration = float(frame.attrs["duration"])
    start, stop = float(start), float(stop)
    if not 0 <= start < stop <= duration * (1 + 1e-12):
        raise ValueError(f"need 0 <= start < stop <= the recording's duration {duration} s, "
                         f"got {start!r} and {stop!r}")
    inside = (frame["start"] >= start) & (frame["start"] + frame["length"] <= stop)
    out = frame[inside].reset_index(drop=True)
    out["start"] = out["start"] - start
    out.attrs = {**frame.attrs, "duration": stop - start, "window": [start, stop]}
    if out.empty:
        raise ValueError(f"no detour between {start} s and {stop} s")
    return out


def cause_kinds(frame: pd.DataFrame) -> pd.Series:
    """The kind of each cause of a checked attribution table (index ``cause``)."""
    return frame.groupby("cause")["kind"].first()


def cause_set(frame: pd.DataFrame, names, what: str) -> set[str]:
    """The causes ``names`` (a name or several; None: none) as a set, each checked to be in
    the table; ``what`` names the argument in the error."""
    if names is None:
        return set()
    if isinstance(names, str):
        names = [names]
    names = set(map(str, names))
    unknown = sorted(names - set(frame["cause"]))
    if unknown:
        raise ValueError(f"{what}: no cause {unknown} in the table; its causes are "
                         f"{sorted(frame['cause'].unique())}")
    return names
