"""What the noise is: detours attributed to their kernel causes, with uncertainties, the
cost at scale of each cause, and periodic sources named by cause.

The input is the attribution table of :mod:`jitterlab.compare.attribution` (``jitterlab measure
detour --kernel-events``): one row per (detour, cause) with ``detour`` (int), ``start``
[s] since the recording began, ``length`` [s] of the detour, ``cause`` (``"timer
interrupt"``, ``"irq:<name>"``, ``"softirq:RCU"``, ``"thread:<comm>"``,
``"hrtimer:<function>"``, ``"not visible to the guest"``), ``kind`` (one of
:data:`KINDS`) and ``time`` [s] of that cause inside the detour; ``attrs["duration"]``
[s] is the length of the recording.

* :func:`noise_by_cause`: noise time, detour counts, rates and shares per cause, with
  block-bootstrap confidence intervals.
* :func:`cause_trace` and :func:`event_laws`: the detour trace with some causes removed
  (or only some kept), and each cause's law of time per detour, for
  :func:`jitterlab.max_of_n` and :func:`jitterlab.simulate`.
* :func:`removal_cost`: the noise per phase at N processes with one cause removed at a
  time: the question of mitigations (De & Mann, seed 000, Fig. 10; Hammond et al., seed
  002) asked per kernel source.
* :func:`label_sources` and :func:`periodic_sources_by_cause`: the periodic-source search
  of :func:`jitterlab.compare.characterize.find_periodic_sources` with causes instead of
  frequencies alone.

A detour the guest kernel saw no event in keeps its cause ``"not visible to the guest"``
(kind ``"invisible"``): on a virtual machine this is the hypervisor's share (vCPU
preempted by the host, VM exits), which no guest trace can name, and it is never folded
into a named cause. Time of a detour that its causes do not account for is reported as
:data:`UNATTRIBUTED` (kind ``"unattributed"``).

References
----------
.. [1] A. Nataraj et al., "The Ghost in the Machine: Observing the Effects of Kernel
   Operation on Parallel Application Performance", SC07 (seed 003): noise attributed to
   kernel sources (timer interrupts, preemption) and the accumulated noise of each.
.. [2] P. De, V. Mann, "jitSim", Euro-Par 2010 workshops (seed 000), §4: which mitigation
   (removing which source) helps at scale.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from ..analytic.maxofn import exact_max_mean
from ..base.rng import RngLike, as_generator
from ..noise import Empirical, from_trace
from ..sim.simulate import simulate
from ..traces.trace import Trace
from .attribution import INVISIBLE, KINDS
from .characterize import find_periodic_sources, label_events

__all__ = ["KINDS", "INVISIBLE", "UNATTRIBUTED", "check_attribution", "window", "noise_by_cause",
           "cause_trace", "event_laws", "removal_cost", "label_sources",
           "periodic_sources_by_cause"]

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


def _detours(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per detour (index ``detour``): ``start`` and ``length``, by start."""
    return (frame.groupby("detour")[["start", "length"]].first()
            .sort_values(["start"], kind="stable"))


def _kinds(frame: pd.DataFrame) -> pd.Series:
    return frame.groupby("cause")["kind"].first()


# --------------------------------------------------------------------------------------
# time and counts per cause, with block-bootstrap intervals
# --------------------------------------------------------------------------------------
def _block_sums(frame: pd.DataFrame, blocks: int, causes: list[str]):
    """Per time block and cause: time [s] and detours; per block: detour time [s]."""
    duration = float(frame.attrs["duration"])
    width = duration / blocks
    block_of = np.minimum((frame["start"].to_numpy() / width).astype(np.int64), blocks - 1)
    column = pd.Categorical(frame["cause"], categories=causes).codes
    time = np.zeros((blocks, len(causes)))
    np.add.at(time, (block_of, column), frame["time"].to_numpy())
    # a cause counts once per detour even when the table has several rows for it
    first = ~frame.duplicated(["detour", "cause"]).to_numpy()
    count = np.zeros((blocks, len(causes)))
    np.add.at(count, (block_of[first], column[first]), 1.0)
    return time, count


def noise_by_cause(table, level: float = 0.95, blocks: int = 20, resamples: int = 2000,
                  rng: RngLike = 0) -> pd.DataFrame:
    """Noise time, detours and shares per cause, with block-bootstrap confidence intervals.

    Parameters
    ----------
    table : pandas.DataFrame
        The attribution table (see :func:`check_attribution`).
    level : float, default 0.95
        Confidence level of the intervals. [1]
    blocks : int, default 20
        The recording is cut into this many blocks of equal length; the bootstrap draws
        blocks with replacement. [-]
    resamples : int, default 2000
        Bootstrap resamples. [-]
    rng : int or numpy.random.Generator, default 0
        Seed of the resampling (a fixed default makes the intervals reproducible).

    Returns
    -------
    pandas.DataFrame
        Index ``cause`` (by decreasing time; :data:`INVISIBLE` and
        :data:`UNATTRIBUTED` included when present), columns ``kind``, ``detours``
        (detours the cause appears in), ``rate`` [1/s], ``time`` [s] (its time summed over
        the recording), ``mean_time`` [s] (per detour it appears in), ``noise_fraction``
        [1] (time / duration), ``share`` [1] (of all detour time; the shares add up to
        one), and ``rate_low/high``, ``time_low/high``, ``noise_fraction_low/high``,
        ``share_low/high``: percentile intervals at ``level``. ``attrs``: ``duration``,
        ``level``, ``blocks``, ``block_length`` [s], ``resamples``, ``method``, ``units``.

    Notes
    -----
    Why blocks of time and not detours: the detours of a cause are not independent. A
    timer fires on a clock, a woken thread preempts the loop several times in a row, and
    the rate of a source drifts over minutes (``jitterlab stationarity``). Resampling
    single detours would treat them as independent and, with the total number of
    detours held fixed, would not let the count of a cause vary as much as it does.
    Blocks of ``duration / blocks`` keep bursts and clocks whole inside a block and let
    the count vary with the recording; the interval is right when a block is long
    compared with the time over which detours are correlated (a 100 Hz source has 25
    periods in a block of 0.25 s). A cause seen in no block of a resample gets 0.

    Examples
    --------
    >>> import pandas as pd
    >>> from jitterlab.compare.causes import noise_by_cause
    >>> table = pd.DataFrame({"detour": [0, 1, 1], "start": [0.1, 0.5, 0.5],
    ...                       "length": [2e-6, 5e-6, 5e-6],
    ...                       "cause": ["timer interrupt", "timer interrupt",
    ...                                 "softirq:RCU"],
    ...                       "kind": ["timer", "timer", "softirq"],
    ...                       "time": [2e-6, 3e-6, 2e-6]})
    >>> table.attrs["duration"] = 1.0
    >>> summary = noise_by_cause(table, blocks=2, resamples=100)
    >>> summary["time"].round(9).tolist(), summary["detours"].tolist()
    ([5e-06, 2e-06], [2, 1])
    """
    frame = check_attribution(table)
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    blocks, resamples = int(blocks), int(resamples)
    if blocks < 2:
        raise ValueError(f"blocks must be >= 2 for a block bootstrap, got {blocks}")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    duration = float(frame.attrs["duration"])
    kinds = _kinds(frame)
    causes = kinds.index.tolist()
    time, count = _block_sums(frame, blocks, causes)
    total_time, total_count = time.sum(axis=0), count.sum(axis=0)
    draws = as_generator(rng).integers(0, blocks, size=(resamples, blocks))
    boot_time = time[draws].sum(axis=1)           # resamples × causes
    boot_count = count[draws].sum(axis=1)
    boot_all = boot_time.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        boot_share = np.where(boot_all > 0, boot_time / boot_all, np.nan)
    low_q, high_q = (1 - level) / 2, 1 - (1 - level) / 2
    out = pd.DataFrame(index=pd.Index(causes, name="cause"))
    out["kind"] = kinds.to_numpy()
    out["detours"] = total_count.astype(np.int64)
    out["rate"] = total_count / duration
    out["time"] = total_time
    out["mean_time"] = total_time / total_count
    out["noise_fraction"] = total_time / duration
    out["share"] = total_time / total_time.sum()
    for name, boot in (("rate", boot_count / duration), ("time", boot_time),
                       ("noise_fraction", boot_time / duration), ("share", boot_share)):
        out[f"{name}_low"] = np.nanquantile(boot, low_q, axis=0)
        out[f"{name}_high"] = np.nanquantile(boot, high_q, axis=0)
    out = out.sort_values("time", ascending=False, kind="stable")
    out.attrs = {"duration": duration, "level": level, "blocks": blocks,
                 "block_length": duration / blocks, "resamples": resamples,
                 "method": "percentile bootstrap over time blocks",
                 "units": {"detours": "1", "rate": "1/s", "time": "s", "mean_time": "s",
                           "noise_fraction": "1", "share": "1"}}
    return out


# --------------------------------------------------------------------------------------
# traces and laws with causes removed
# --------------------------------------------------------------------------------------
def _cause_set(frame: pd.DataFrame, names, what: str) -> set[str]:
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


def cause_trace(table, keep: Iterable[str] | str | None = None,
                remove: Iterable[str] | str | None = None, *,
                overlap: str = "raise") -> Trace:
    """The detour trace with the time of some causes taken out (or only some kept).

    Parameters
    ----------
    table : pandas.DataFrame
        The attribution table (see :func:`check_attribution`).
    keep : str or iterable of str, optional
        Keep only these causes' time (default: all causes).
    remove : str or iterable of str, optional
        Take these causes' time out (applied after ``keep``).
    overlap : {"raise", "serialize", "merge"}, default "raise"
        As for :meth:`jitterlab.Trace.from_absolute`.

    Returns
    -------
    Trace
        Each detour starts where it started and lasts the time of the causes left; the
        removed time becomes undisturbed compute. Detours left with no time are dropped;
        when none is left the trace is one detour of length 0 followed by the whole
        recording (a trace without noise, whose laws and simulations give exactly the
        work). ``attrs``: ``recording_duration`` [s], ``causes`` kept, ``detours`` (the
        table's detour of each row).

    Examples
    --------
    >>> import pandas as pd
    >>> from jitterlab.compare.causes import cause_trace
    >>> table = pd.DataFrame({"detour": [0, 0], "start": [0.5, 0.5],
    ...                       "length": [3e-6, 3e-6], "cause": ["timer interrupt",
    ...                       "thread:kworker"], "kind": ["timer", "thread"],
    ...                       "time": [1e-6, 2e-6]})
    >>> table.attrs["duration"] = 1.0
    >>> cause_trace(table, remove="thread:kworker").jitter_seconds.tolist()
    [1e-06]
    """
    frame = check_attribution(table)
    kept = _cause_set(frame, keep, "keep") if keep is not None else set(frame["cause"])
    kept -= _cause_set(frame, remove, "remove")
    duration = float(frame.attrs["duration"])
    chosen = frame[frame["cause"].isin(kept)]
    per = (chosen.groupby("detour").agg(start=("start", "first"), time=("time", "sum")))
    per = per[per["time"] > 0].sort_values("start", kind="stable")
    attrs = {"recording_duration": duration, "causes": sorted(kept),
             "source": frame.attrs.get("source", "attribution table")}
    if per.empty:
        return Trace([0.0], [duration], detours=[], **attrs)
    trace = Trace.from_absolute(per["start"].to_numpy(), per["time"].to_numpy(),
                                total_duration=duration, overlap=overlap, **attrs)
    trace.attrs["detours"] = per.index.to_numpy(np.int64).tolist()
    return trace


def event_laws(table) -> dict[str, Empirical]:
    """Each cause's law of time per detour it appears in.

    Returns
    -------
    dict of str to jitterlab.noise.Empirical
        cause -> the empirical law of its time in each detour that holds it [s] (several
        rows of one cause in one detour are added). With the rates of
        :func:`noise_by_cause` this is a compound law of the cause.
    """
    frame = check_attribution(table)
    per = frame.groupby(["cause", "detour"])["time"].sum()
    return {cause: Empirical(values.to_numpy()) for cause, values in per.groupby(level=0)}


# --------------------------------------------------------------------------------------
# cost at scale of each cause
# --------------------------------------------------------------------------------------
def _noise_per_phase(trace: Trace, n_values: np.ndarray, work: float, method: str,
                     phases: int, rng) -> np.ndarray:
    """Mean noise per phase [s] at each N: E[max of N] of the trace's law for ``work``,
    or the simulated mean phase time minus ``work``."""
    if method == "max_of_n":
        law = from_trace(trace, work)
        return np.array([exact_max_mean([law], [n]) for n in n_values.tolist()])
    result = simulate(trace, n=n_values.tolist(), work=work, phases=phases, rng=rng)
    return result["phase_time"].mean(dim="phase").to_numpy() - work


def _resampled_table(frame: pd.DataFrame, blocks: int, gen: np.random.Generator
                     ) -> pd.DataFrame:
    """The table rebuilt from ``blocks`` time blocks drawn with replacement."""
    duration = float(frame.attrs["duration"])
    width = duration / blocks
    block_of = np.minimum((frame["start"].to_numpy() / width).astype(np.int64), blocks - 1)
    span = int(frame["detour"].max()) + 1
    pieces = []
    for place, block in enumerate(gen.integers(0, blocks, size=blocks).tolist()):
        piece = frame[block_of == block].copy()
        piece["start"] += (place - block) * width
        piece["detour"] += place * span
        pieces.append(piece)
    out = pd.concat(pieces, ignore_index=True)
    out.attrs = dict(frame.attrs)
    return out


def removal_cost(table, n: Sequence[int] | int, work: float, *,
                 causes: Iterable[str] | None = None, method: str = "max_of_n",
                 phases: int = 200, resamples: int = 0, blocks: int = 20,
                 level: float = 0.95, rng: RngLike = 0) -> pd.DataFrame:
    """The noise per phase at N processes with one cause removed at a time.

    Parameters
    ----------
    table : pandas.DataFrame
        The attribution table (see :func:`check_attribution`).
    n : int or sequence of int
        Numbers of processes N. [-]
    work : float
        Compute per process and phase w. [s]
    causes : iterable of str, optional
        The causes to remove one at a time (default: every cause of the table).
    method : {"max_of_n", "simulate"}, default "max_of_n"
        "max_of_n": the mean of the maximum over N processes of the exact law of the
        noise met by ``work`` from a random start in the trace
        (:func:`jitterlab.noise.from_trace`, :func:`jitterlab.analytic.maxofn.exact_max_mean`);
        "simulate": the mean phase time of :func:`jitterlab.simulate` (``phases``
        phases, random starts, wait for the slowest) minus ``work``.
    phases : int, default 200
        Phases simulated (method "simulate"). [-]
    resamples : int, default 0
        Block-bootstrap resamples of the recording for intervals (0: none). [-]
    blocks, level, rng
        As for :func:`noise_by_cause`; ``rng`` also seeds the simulations.

    Returns
    -------
    pandas.DataFrame
        One row per (cause, n): ``cause``, ``kind``, ``n``, ``noise`` [s] (mean noise per
        phase with all causes), ``noise_without`` [s] (with this cause removed),
        ``saving`` [s] (their difference) and ``share`` [1] (saving / noise; NaN without
        noise); with ``resamples`` also ``share_low`` and ``share_high``. ``attrs``:
        ``work``, ``method``, ``noise`` (n -> noise with all causes, as a dict).

    Notes
    -----
    The maximum over processes is not additive: the shares of the causes need not add
    up to one. Removing a cause that only ever shares detours with a longer one saves
    little at large N (the maximum is set by the longest detours), while removing the
    cause of the longest detours saves most. Removing every cause gives zero noise.
    """
    frame = check_attribution(table)
    if method not in ("max_of_n", "simulate"):
        raise ValueError(f"method must be 'max_of_n' or 'simulate', got {method!r}")
    n_values = np.atleast_1d(np.asarray(n))
    if n_values.dtype.kind not in "iu" or (n_values < 1).any() or n_values.ndim != 1:
        raise ValueError(f"n must be whole numbers >= 1, got {n!r}")
    if not (isinstance(work, int | float | np.number) and math.isfinite(work) and work > 0):
        raise ValueError(f"work must be a time > 0 [s], got {work!r}")
    kinds = _kinds(frame)
    chosen = (sorted(_cause_set(frame, causes, "causes")) if causes is not None
              else kinds.index.tolist())
    seed = int(as_generator(rng).integers(0, 2**62))

    def evaluate(data: pd.DataFrame, overlap: str) -> tuple[np.ndarray, np.ndarray]:
        present = set(data["cause"])
        base = _noise_per_phase(cause_trace(data, overlap=overlap), n_values, work,
                                method, phases, seed)
        without = np.array([
            _noise_per_phase(cause_trace(data, remove=cause, overlap=overlap), n_values,
                             work, method, phases, seed)
            if cause in present else base for cause in chosen])
        return base, without

    base, without = evaluate(frame, "raise")
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(base > 0, (base - without) / base, np.nan)
    rows = pd.DataFrame({
        "cause": np.repeat(chosen, n_values.size),
        "kind": np.repeat(kinds.loc[chosen].to_numpy(), n_values.size),
        "n": np.tile(n_values, len(chosen)),
        "noise": np.tile(base, len(chosen)),
        "noise_without": without.ravel(),
        "saving": (base - without).ravel(),
        "share": share.ravel()})
    if resamples > 0:
        gen = as_generator(seed)
        boot = np.empty((int(resamples), len(chosen), n_values.size))
        for r in range(int(resamples)):
            data = _resampled_table(frame, int(blocks), gen)
            b_base, b_without = evaluate(data, "serialize")
            with np.errstate(invalid="ignore", divide="ignore"):
                boot[r] = np.where(b_base > 0, (b_base - b_without) / b_base, np.nan)
        rows["share_low"] = np.nanquantile(boot, (1 - level) / 2, axis=0).ravel()
        rows["share_high"] = np.nanquantile(boot, 1 - (1 - level) / 2, axis=0).ravel()
    rows.attrs = {"work": float(work), "method": method, "resamples": int(resamples),
                  "noise": dict(zip(n_values.tolist(), base.tolist(), strict=True)),
                  "units": {"noise": "s", "noise_without": "s", "saving": "s",
                            "share": "1"}}
    return rows


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
    kinds = _kinds(frame)
    counts = frame.drop_duplicates(["detour", "cause"])["cause"].value_counts()
    if causes is not None:
        counts = counts[sorted(_cause_set(frame, causes, "causes"))].sort_values(
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
