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

The checks of the table live in :mod:`jitterlab.compare.cause_table`, the removals in
:mod:`jitterlab.compare.cause_removal`, the sources in :mod:`jitterlab.compare.cause_sources`;
every public name is importable from here as well.

References
----------
.. [1] A. Nataraj et al., "The Ghost in the Machine: Observing the Effects of Kernel
   Operation on Parallel Application Performance", SC07 (seed 003): noise attributed to
   kernel sources (timer interrupts, preemption) and the accumulated noise of each.
.. [2] P. De, V. Mann, "jitSim", Euro-Par 2010 workshops (seed 000), §4: which mitigation
   (removing which source) helps at scale.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..base.rng import RngLike, as_generator
from .attribution import INVISIBLE, KINDS
from .cause_removal import cause_trace, event_laws, removal_cost
from .cause_sources import label_sources, periodic_sources_by_cause
from .cause_table import UNATTRIBUTED, cause_kinds, check_attribution, window

__all__ = ["KINDS", "INVISIBLE", "UNATTRIBUTED", "check_attribution", "window", "noise_by_cause",
           "cause_trace", "event_laws", "removal_cost", "label_sources",
           "periodic_sources_by_cause"]


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
    kinds = cause_kinds(frame)
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
