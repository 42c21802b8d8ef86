"""Do the shipped recordings stay the same over their length? (``data/stationarity.csv``)

:func:`check_recordings` runs :func:`jitterlab.characterize.stationarity` on every
recording of ``data/measured/`` (a Friedman test on the round-robin sessions of the ROSS
PHOLD table) and gives one row per recording with its verdict; ``jitterlab stationarity``
and ``python -m jitterlab.recording_checks`` print or write that table.
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats

from . import datasets
from .compare.stationarity import stationarity, windows_for
from .io import read_trace
from .measure import read_bsp_interruptions, read_fwq_samples, read_pb
from .measure.latency import read_latency

__all__ = ["recording_series", "check_recordings", "report_recordings", "round_robin_test",
           "STATIONARITY_COLUMNS", "STATIONARITY_COMMAND", "STATIONARITY_TABLE"]

#: columns of :func:`check_recordings` (and of ``data/stationarity.csv``)
STATIONARITY_COLUMNS = ("file", "kind", "series", "collected_at", "session", "duration_s",
                        "windows",
                        "window_s", "events", "event_rate_per_s", "rate_p_value",
                        "size_p_value", "rate_independent_p_value",
                        "size_independent_p_value", "rate_change_points_s",
                        "size_change_points_s", "segment_rate_ratio", "verdict")


#: the shipped table of :func:`check_recordings`, in ``DATA_DIR`` (derived from
#: ``data/measured/``, which holds only what ``python -m
#: jitterlab.recipes.record_measurements`` records)
STATIONARITY_TABLE = "stationarity.csv"


#: the command that writes it
STATIONARITY_COMMAND = "python -m jitterlab.recording_checks --output data/stationarity.csv"


def recording_series(file: str) -> tuple[object, dict, str]:
    """The series of a shipped recording that :func:`check_recordings` tests.

    Parameters
    ----------
    file : str
        A file of ``data/measured/`` (an index entry of
        :func:`jitterlab.datasets.list_measurements`).

    Returns
    -------
    tuple
        ``(data, keywords, series)``: the input of :func:`stationarity`, its keyword
        arguments, and a sentence saying which series it is and what is assumed. Detour
        traces: every detour. FWQ: the quanta w + δ, back to back. Parallel Benchmark:
        the iteration times θ of every rank (the first ``max_samples`` of each), placed
        back to back per rank (the random waits of Algorithm 1 are not in θ, so the time
        axis omits them). Latency: the empty barriers of every rank, back to back. BSP:
        the interruptions of both ranks, pooled, over the run's measured duration.
        The ROSS PHOLD table is not a time series of detours: :func:`check_recordings`
        tests it with a Friedman test instead.

    Raises
    ------
    ValueError
        If ``file`` is not a shipped recording, or is the ROSS PHOLD table.
    """

    table = datasets.list_measurements()
    if file not in table.index:
        raise ValueError(f"{file!r} is not a shipped recording; shipped: "
                         f"{', '.join(table.index)}")
    kind = table.loc[file, "kind"]
    path = datasets.measurement_path(file)
    if kind == "detour":
        trace = read_trace(path)
        return trace, {"windows": windows_for(trace.n_events)}, "detours (every one)"
    if kind == "fwq":
        samples = read_fwq_samples(path)
        values = np.asarray(samples.sequence, dtype=float)
        return values, {"windows": windows_for(values.size // 10)}, (
            "FWQ quanta w + δ, back to back; detour: excess over the minimum above its "
            "pooled 90 % quantile")
    if kind == "pb":
        run = read_pb(path)
        return run["iteration"], {"windows": windows_for(run["iteration"].size // 10)}, (
            "iteration times θ of every rank (first samples of each), back to back per "
            "rank without the random waits; detour: excess above its pooled 90 % quantile")
    if kind == "latency":
        run = read_latency(path)
        return run["barrier"], {"windows": windows_for(run["barrier"].size // 10)}, (
            "empty-barrier times of every rank, back to back per rank; detour: excess "
            "above its pooled 90 % quantile")
    if kind == "bsp":
        events = read_bsp_interruptions(path)
        return events[["start", "duration"]], {"windows": windows_for(len(events))}, (
            "interruptions of both ranks pooled (busy-loop steps, injected detours, "
            "collective steps), from the clock's origin to the end of the last one")
    raise ValueError(f"{file!r} ({kind}) is not a time series of detours or measured "
                     "times; check_recordings tests it with a Friedman test")


#: runs further apart than this belong to different sessions of the ROSS table [s]
SESSION_GAP = 1800.0


def round_robin_test(runs: pd.DataFrame) -> tuple[float, int, int]:
    """Do the rounds of one round-robin session differ (drift across the session)?

    Parameters
    ----------
    runs : pandas.DataFrame
        One row per run, with columns ``config``, ``started_at`` and ``running_time_s``
        [s] (as :func:`jitterlab.datasets.load_ross_phold`).

    Returns
    -------
    tuple
        ``(p_value, configurations, rounds)``. Blocks are the configurations, treatments
        each configuration's 1st, 2nd, ... run in time order: a Friedman test for 3 or
        more rounds, a Wilcoxon signed-rank test for 2, on the k rounds that give the
        most runs with at least 3 configurations. ``(nan, 0, 0)`` when no configuration
        set allows a test.
    """
    ordered = runs.sort_values("started_at")
    ordered = ordered.assign(round=ordered.groupby("config").cumcount())
    counts = ordered.groupby("config").size()
    best = (math.nan, 0, 0)
    for rounds in range(int(counts.max()), 1, -1):
        configs = counts.index[counts >= rounds]
        if len(configs) < 3:
            continue
        table = ordered[ordered["config"].isin(configs) & (ordered["round"] < rounds)]
        table = table.pivot(index="config", columns="round", values="running_time_s")
        columns = [table[c].to_numpy() for c in table.columns]
        if rounds >= 3:
            p_value = float(stats.friedmanchisquare(*columns).pvalue)
        else:
            p_value = float(stats.wilcoxon(columns[0], columns[1]).pvalue)
        if len(configs) * rounds > best[1] * best[2]:
            best = (p_value, len(configs), rounds)
    return best


def _ross_row(file: str) -> dict:
    """The ROSS PHOLD table: sessions (runs less than :data:`SESSION_GAP` apart), in each a
    test of its round-robin rounds (:func:`round_robin_test`); the verdict at 5 % over the
    sessions (Bonferroni)."""

    runs = datasets.load_ross_phold()
    started = pd.to_datetime(runs["started_at"])
    order = started.sort_values()
    session = (order.diff().dt.total_seconds() > SESSION_GAP).cumsum()
    runs = runs.assign(started_at=started, session=session.reindex(runs.index))
    level = 0.05
    p_values, parts = [], []
    for _, group in runs.groupby("session"):
        p_value, configs, rounds = round_robin_test(group)
        parts.append(f"{group['started_at'].min():%Y-%m-%d %H:%M}–"
                     f"{group['started_at'].max():%H:%M} UTC: {len(group)} runs, "
                     + (f"{configs} configurations x {rounds} rounds, p = {p_value:.3g}"
                        if configs else "no configuration repeated in 3 or more runs"))
        if configs:
            p_values.append(p_value)
    p_value = min(1.0, min(p_values) * len(p_values)) if p_values else math.nan
    span = float((started.max() - started.min()).total_seconds()
                 + runs.loc[started.idxmax(), "wall_s"])
    rounds = int(runs.groupby(["session", "config"]).size().max())
    verdict = ("" if math.isnan(p_value) else f"stationary at {100 * level:g} %"
               if p_value >= level else f"not stationary at {100 * level:g} %")
    return {"file": file, "kind": "ross_phold",
            "series": ("ROSS running time per configuration and round-robin round "
                       "(Friedman, or Wilcoxon for 2 rounds; size_p_value: the smallest "
                       "session's p times the number of sessions); no detours, so no rate "
                       "test; sessions: " + "; ".join(parts)),
            "duration_s": span, "windows": rounds, "window_s": math.nan,
            "events": len(runs), "event_rate_per_s": math.nan, "rate_p_value": math.nan,
            "size_p_value": p_value, "rate_independent_p_value": math.nan,
            "size_independent_p_value": math.nan, "rate_change_points_s": "",
            "size_change_points_s": "", "segment_rate_ratio": math.nan, "verdict": verdict}


def _segment_rate_ratio(check: xr.Dataset) -> float:
    """Largest over smallest mean rate of the segments between rate change points."""
    edges = [0.0, *check.attrs["rate_change_points"],
             float(check["window_end"].values[-1])]
    starts = check["window_start"].values
    rates = []
    for low, high in zip(edges[:-1], edges[1:], strict=True):
        inside = (starts >= low - 1e-12) & (starts < high - 1e-12)
        rates.append(float(check["event_rate"].values[inside].mean()))
    low = min(rates)
    return max(rates) / low if low > 0 else math.inf


def check_recordings(files=None) -> pd.DataFrame:
    """Run :func:`stationarity` on shipped recordings, one row each.

    Parameters
    ----------
    files : list of str, optional
        Files of ``data/measured/``; default every one listed by
        :func:`jitterlab.datasets.list_measurements`.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`STATIONARITY_COLUMNS`: the file, its kind, the series tested
        (:func:`recording_series`), when it was recorded (UTC), its ``session`` (1, 2, ...
        in time order; recordings started less than :data:`SESSION_GAP` after the one
        before share a session — back to back or interleaved, not hours apart), its
        duration [s], the
        number and length [s] of the windows, the detours in them, the mean detour rate
        [1/s], the four p-values, the change points of the rate and of the sizes (times
        from the start [s], separated by ``;``), the ratio of the largest to the smallest
        segment rate between rate change points [1], and the verdict.
    """

    table = datasets.list_measurements()
    files = list(table.index) if files is None else list(files)
    started = pd.to_datetime(table["collected_at"]).sort_values()
    sessions = (started.diff().dt.total_seconds() > SESSION_GAP).cumsum() + 1
    rows = []
    for file in files:
        if file in table.index and table.loc[file, "kind"] == "ross_phold":
            row = _ross_row(file)
        else:
            data, keywords, series = recording_series(file)
            check = stationarity(data, **keywords)
            row = {"file": file, "kind": table.loc[file, "kind"], "series": series,
                   "duration_s": check.attrs["duration"], "windows": check.attrs["windows"],
                   "window_s": check.attrs["window"], "events": int(check["events"].sum()),
                   "event_rate_per_s": float(check["events"].sum())
                   / (check.attrs["windows"] * check.attrs["window"]),
                   "segment_rate_ratio": _segment_rate_ratio(check),
                   "verdict": check.attrs["verdict"]}
            for key in ("rate_p_value", "size_p_value", "rate_independent_p_value",
                        "size_independent_p_value"):
                row[key] = check.attrs[key]
            for key in ("rate", "size"):
                row[f"{key}_change_points_s"] = ";".join(
                    f"{t:.4g}" for t in check.attrs[f"{key}_change_points"])
        row["collected_at"] = table.loc[file, "collected_at"]
        row["session"] = sessions[file]
        rows.append(row)
    return pd.DataFrame(rows, columns=list(STATIONARITY_COLUMNS))


def main(argv=None) -> int:
    """``python -m jitterlab.recording_checks [--output CSV] [FILE ...]``: the check of every
    shipped recording (or of the files named), printed or written as CSV."""
    parser = argparse.ArgumentParser(
        prog="python -m jitterlab.recording_checks",
        description="Stationarity check of the recordings shipped in data/measured/.")
    parser.add_argument("files", nargs="*", help="files of data/measured/ (default: all)")
    parser.add_argument("--output", "-o", help="write the table as CSV here")
    args = parser.parse_args(argv)
    report_recordings(args.files or None, args.output)
    return 0


def report_recordings(files=None, output=None) -> pd.DataFrame:
    """:func:`check_recordings`, written as CSV to ``output`` or printed as a table."""
    table = check_recordings(files)
    if output:
        table.to_csv(output, index=False, float_format="%.6g")
    else:
        with pd.option_context("display.width", 200, "display.max_columns", 20):
            print(table.drop(columns=["series"]).to_string(index=False))
    return table


if __name__ == "__main__":
    sys.exit(main())
