"""Causes taken out of a recording: the detour trace without them, each cause's law of time
per detour, and the noise at N processes with one cause removed at a time (the question of
mitigations, De & Mann, seed 000, Fig. 10; Hammond et al., seed 002, asked per kernel source).
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
from .cause_table import cause_kinds, cause_set, check_attribution

__all__ = ["cause_trace", "event_laws", "removal_cost"]


# --------------------------------------------------------------------------------------
# traces and laws with causes removed
# --------------------------------------------------------------------------------------
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
    kept = cause_set(frame, keep, "keep") if keep is not None else set(frame["cause"])
    kept -= cause_set(frame, remove, "remove")
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
    kinds = cause_kinds(frame)
    chosen = (sorted(cause_set(frame, causes, "causes")) if causes is not None
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
