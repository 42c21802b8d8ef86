"""Characterising a measured jitter trace: summary statistics and periodic noise sources.

:func:`summarize` condenses a trace into one labelled Series (event rate, noise
fraction, quantiles of the detours, the largest detours and when they happened).
:func:`find_periodic_sources` splits the noise of a trace into periodic sources (a
timer tick, periodic daemons) and an aperiodic remainder, and reports each one's share
of the total noise: the user-space counterpart of KTAU's attribution of noise to kernel
sources (Nataraj et al., seed 003), which needs a kernel instrumented with KTAU, while
this works on the detours a user-level benchmark (sysjitter, FWQ, a LogGOPSim trace)
sees.

References
----------
.. [1] A. Nataraj, A. Morris, A. Malony, M. Sottile, P. Beckman, "The Ghost in the
   Machine: Observing the Effects of Kernel Operation on Parallel Application
   Performance", SC07 (seed 003): noise sources (global and local timer interrupts,
   preemption) measured separately, and the delay attributed to each.
.. [2] P. De, V. Mann, "jitSim", Euro-Par 2010 workshops (seed 000), §1: timer ticks and
   periodic daemons as the main sources of OS jitter.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..traces.trace import Trace
from .spectrum import Spectrum, common_multiple, lock_source, refine_frequency
from .stationarity import stationarity

__all__ = ["summarize", "find_periodic_sources", "label_events", "stationarity"]

#: quantile levels of the detours reported by :func:`summarize`
SUMMARY_QUANTILES = {"p50_jitter": 0.5, "p90_jitter": 0.9, "p99_jitter": 0.99,
                     "p999_jitter": 0.999}

#: a subharmonic f/k replaces the peak f when its power reaches this share of the peak's
#: (the random part of the spectrum moves the power of equal harmonics by a factor ~2)
_SUBHARMONIC_SHARE = 0.3
#: rejected peaks tolerated before the search stops
_MAX_REJECTED = 8


def _check_trace(trace) -> Trace:
    if not isinstance(trace, Trace):
        raise TypeError(f"expected a jitterlab Trace, got {type(trace).__name__}")
    return trace


def _absolute(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Starts on the trace's absolute timeline (``attrs['offset']`` + starts) and
    durations, both in seconds."""
    return trace.offset_seconds() + trace.starts, np.asarray(trace.jitter_seconds)


# --------------------------------------------------------------------------------------
# summary
# --------------------------------------------------------------------------------------
def summarize(trace: Trace, top: int = 5) -> pd.Series:
    """Summary statistics of a jitter trace, with its largest detours.

    Parameters
    ----------
    trace : Trace
        The trace (any unit; results are in seconds).
    top : int, default 5
        How many of the largest detours to list. [-]

    Returns
    -------
    pandas.Series
        float64: ``n_events``, ``duration`` (one replay cycle) [s], ``event_rate``
        [1/s], ``noise_fraction`` (Σ jitter / duration) [1], ``total_jitter``,
        ``mean_jitter``, ``p50_jitter``, ``p90_jitter``, ``p99_jitter``,
        ``p999_jitter``, ``max_jitter`` [s], ``mean_gap`` [s], ``longest_gap`` [s];
        then for k = 1..top ``largest_k`` (the k-th longest detour) [s] and
        ``largest_k_start`` (when it began on the trace's absolute timeline,
        ``attrs["offset"]`` included) [s] (NaN when the trace has fewer events). Units
        in ``series.attrs["units"]``.

    Notes
    -----
    Quantiles interpolate linearly between order statistics of the event durations.
    Ties among the largest detours are listed in time order.

    Examples
    --------
    >>> import jitterlab as jl
    >>> from jitterlab.compare.characterize import summarize
    >>> trace = jl.Trace(jitter=[1e-6, 5e-6, 2e-6], gap=[1e-3, 1e-3, 1e-3])
    >>> s = summarize(trace, top=2)
    >>> float(s["largest_1"]), float(s["largest_1_start"])
    (5e-06, 0.001001)
    """
    trace = _check_trace(trace)
    top = int(top)
    if top < 0:
        raise ValueError(f"top must be >= 0, got {top}")
    stats_ = trace.stats()
    start, jitter = _absolute(trace)
    values = {key: float(stats_[key]) for key in
              ("n_events", "duration", "event_rate", "noise_fraction", "total_jitter",
               "mean_jitter")}
    units = {"n_events": "1", "duration": "s", "event_rate": "1/s", "noise_fraction": "1",
             "total_jitter": "s", "mean_jitter": "s"}
    quantiles = np.quantile(jitter, list(SUMMARY_QUANTILES.values()))
    for key, value in zip(SUMMARY_QUANTILES, quantiles.tolist(), strict=True):
        values[key], units[key] = value, "s"
    values.update(max_jitter=float(jitter.max()), mean_gap=float(stats_["mean_gap"]),
                  longest_gap=float(np.max(trace.gap_seconds)))
    units.update(max_jitter="s", mean_gap="s", longest_gap="s")
    order = np.lexsort((start, -jitter))[:top]
    for k in range(top):
        found = k < order.size
        values[f"largest_{k + 1}"] = float(jitter[order[k]]) if found else math.nan
        values[f"largest_{k + 1}_start"] = float(start[order[k]]) if found else math.nan
        units[f"largest_{k + 1}"] = units[f"largest_{k + 1}_start"] = "s"
    series = pd.Series(values, dtype=np.float64, name=trace.attrs.get("source"))
    series.attrs["units"] = units
    return series


# --------------------------------------------------------------------------------------
# periodic sources
# --------------------------------------------------------------------------------------
_COLUMNS = {
    "period": ("s", "time between two events of the source"),
    "frequency": ("Hz", "1 / period"),
    "phase": ("s", "start of the first lattice point on the trace's timeline, in [0, period)"),
    "timing_spread": ("s", "robust standard deviation of the event starts about the lattice"),
    "tolerance": ("s", "largest offset from the lattice of an event assigned to the source"),
    "n_phases": ("1", "clusters of events at distinct phases of the same period (a tick "
                      "and its follow-up work)"),
    "regularity": ("1", "fraction of the periods spanned by the trace that hold an event "
                        "of the source"),
    "n_events": ("1", "events assigned to the source"),
    "events_per_second": ("1/s", "events per second of trace"),
    "typical_duration": ("s", "median duration of the source's events"),
    "mean_duration": ("s", "mean duration of the source's events"),
    "total_jitter": ("s", "sum of the durations of the source's events"),
    "share": ("1", "fraction of the total noise (Σ jitter) due to the source"),
    "significance": ("1", "peak power over background, in units of the detection "
                          "threshold (>= 1 for every detected source)"),
}


def find_periodic_sources(trace: Trace, min_period: float = 1e-3, max_period: float = 10.0,
                          **options) -> pd.DataFrame:
    """Periodic noise sources in a trace, and the share of the noise each one causes.

    Parameters
    ----------
    trace : Trace
        The measured (or generated) trace; any unit, results in seconds.
    min_period, max_period : float, default 1e-3 and 10
        Range of periods searched; the events of faster sources count as aperiodic.
        [s]
    max_sources : int, default 10
        At most this many periodic sources are reported. [-]
    false_alarm : float, default 1e-3
        Probability that events without any periodicity produce a detection, over the
        whole frequency range searched. [1]
    min_events : int, default 10
        Fewest events (in excess of chance coincidences) a source needs. [-]
    min_cycles : int, default 5
        The trace must span at least this many periods of a source. [-]
    min_regularity : float, default 0.2
        Fewest periods with an event of the source, as a fraction of the periods the
        trace spans; rarer lattice coincidences count as aperiodic. [1]
    tolerance : float, optional
        Largest offset of an event start from the source's lattice for the event to
        count as the source's; by default estimated for each source from the spread of
        the offsets (see Notes). [s]
    min_tolerance : float, default 1e-6
        Smallest automatic tolerance (the timing resolution that is trusted). [s]

    Returns
    -------
    pandas.DataFrame
        One row per periodic source (index ``source``: ``"periodic 1"``, ... by
        decreasing share) and a last row ``"aperiodic"`` with the events assigned to
        no source (period and the other lattice columns NaN). Columns: ``period`` [s],
        ``frequency`` [Hz], ``phase`` [s], ``timing_spread`` [s], ``tolerance`` [s],
        ``n_phases`` [-], ``regularity`` [1], ``n_events``, ``events_per_second``
        [1/s], ``typical_duration`` [s], ``mean_duration`` [s], ``total_jitter`` [s],
        ``share`` [1] (the shares add up to one; NaN for a trace without noise) and
        ``significance`` [1] (the detection peak over the threshold).
        ``df.attrs`` hold ``units``, ``descriptions`` and the search parameters.

    Notes
    -----
    1. *Detection.* The event starts are binned at min_period/16 and the power
       spectrum of this train is computed by FFT (Welch-averaged over segments for
       very long traces), once counting events and once weighting them by their
       durations (so that a rare but long daemon stands out as well as a frequent
       short tick). A source of period P puts power at 1/P and its harmonics; random
       arrivals give a noisy floor. The power is divided by its median in bands of
       about 15 % of the frequency, which makes it Gamma(K, 1) distributed (K
       segments) for events without periodicity, even when they come in bursts or
       their rate drifts. The strongest peak is significant when its probability,
       corrected for the number of independent frequencies searched and the two
       spectra, is below ``false_alarm``. A pulse train has the same power at all its
       harmonics, so the lowest subharmonic f/k with at least 30 % of the peak's power
       is taken as the fundamental.
    2. *Lattice.* The frequency is refined by maximising the phase coherence
       |Σ w_j exp(2πi f s_j)| of the starts, whose phase gives a lattice origin t₀.
       Two sources closer in frequency than 1/duration blur into one peak, so the
       densest family of starts is then followed as it drifts against that lattice
       (a search over linear drifts of the offsets) and the lattice t₀ + kP is fitted
       to that family by least squares. Each start gets its cycle k = round((s − t₀)/P)
       and offset r = s − t₀ − kP; events with |r| <= tolerance belong to the source,
       and t₀ and P are refitted on them (four rounds). The automatic tolerance is the
       first plateau of the excess of small offsets over the uniform background of the
       other events (see ``cluster_width``), at least ``min_tolerance`` and at most
       P/50. If the events found sit on every m-th lattice point only, the lattice was
       a harmonic and P becomes m·P.
    3. *Acceptance.* A lattice becomes a source when its excess over chance
       coincidences is at least ``min_events`` and at least the chance count, and its
       regularity at least ``min_regularity``; otherwise the peak is set aside and
       the next one is tried.
    4. *Iteration.* The source's events are removed and the search repeats on the
       rest, so weaker sources hidden under a strong one (a daemon under the timer
       tick) are found in turn, until no significant peak remains or ``max_sources``
       are found. Sources whose lattices stay within their tolerances of each other
       over the whole trace run on one clock (a tick and its follow-up work) and are
       reported as one source with ``n_phases`` > 1. What remains is aperiodic.
    5. *Share.* A source's share is the sum of its event durations over the sum of
       all durations. An aperiodic detour that merged with a periodic one (one event
       in the trace) counts for the periodic source.

    KTAU attributes kernel time to its sources by instrumenting the kernel (Nataraj et
    al., seed 003); this is the user-space counterpart: it attributes the detours a
    user-level loop sees to periodic sources by their timing alone, so two sources of
    the same period and phase are one source here.

    References
    ----------
    .. [1] A. Nataraj et al., "The Ghost in the Machine", SC07 (seed 003).

    Examples
    --------
    >>> import jitterlab as jl
    >>> from jitterlab.compare.characterize import find_periodic_sources
    >>> trace = jl.synthetic_trace(duration=10.0, rng=1)
    >>> sources = find_periodic_sources(trace)
    >>> [round(p, 6) for p in sources["period"].dropna()]
    [0.004, 0.1]
    """
    return _find_sources(trace, min_period, max_period, **options)[0]


def label_events(trace: Trace, min_period: float = 1e-3, max_period: float = 10.0,
                 **options) -> tuple[pd.DataFrame, np.ndarray]:
    """The periodic sources of a trace and, for every event, the source it belongs to.

    Returns ``(sources, labels)``: ``sources`` as :func:`find_periodic_sources` returns
    it, and ``labels``, one per row of the trace, the index of ``sources`` the event was
    assigned to ("periodic 1", ..., or "aperiodic"). Used to split the noise of an event
    trace by source (:func:`jitterlab.compare.estimate.split_noise`). Parameters as for
    :func:`find_periodic_sources`.
    """
    return _find_sources(trace, min_period, max_period, **options)


def _find_sources(trace: Trace, min_period: float = 1e-3, max_period: float = 10.0,
                  *, max_sources: int = 10, false_alarm: float = 1e-3,
                  min_events: int = 10, min_cycles: int = 5,
                  min_regularity: float = 0.2,
                  tolerance: float | None = None,
                  min_tolerance: float = 1e-6) -> tuple[pd.DataFrame, np.ndarray]:
    """:func:`find_periodic_sources` and the label of every event."""
    trace = _check_trace(trace)
    min_period, max_period = float(min_period), float(max_period)
    if not (math.isfinite(min_period) and math.isfinite(max_period)
            and 0 < min_period < max_period):
        raise ValueError(f"need 0 < min_period < max_period, got {min_period!r} and "
                         f"{max_period!r}")
    if not 0 < false_alarm < 1:
        raise ValueError(f"false_alarm must lie in (0, 1), got {false_alarm!r}")
    if tolerance is not None and not tolerance > 0:
        raise ValueError(f"tolerance must be > 0 when given, got {tolerance!r}")
    start, jitter = _absolute(trace)
    span = trace.duration
    origin_time = float(start.min())
    relative = start - origin_time
    f_high = 1.0 / min_period
    f_low = max(1.0 / max_period, min_cycles / span)
    remaining = np.ones(start.size, dtype=bool)
    found: list[dict] = []
    rejected: list[tuple[float, float]] = []
    spectra = None
    while len(found) < max_sources and f_low < f_high:
        idx = np.flatnonzero(remaining)
        if idx.size < max(min_events, 3):
            break
        if spectra is None:  # the events changed: the spectra of counts and of durations
            spectra = [Spectrum(relative[idx], None, span, f_low, f_high)]
            if np.ptp(jitter[idx]) > 0:
                spectra.append(Spectrum(relative[idx], jitter[idx], span, f_low, f_high))
            threshold = spectra[0].threshold(false_alarm / len(spectra))
            for spectrum in spectra:
                for lo, hi in rejected:
                    spectrum.z[(spectrum.freq >= lo) & (spectrum.freq <= hi)] = 0.0
        peaks = [int(np.argmax(spectrum.z)) for spectrum in spectra]
        mode = int(np.argmax([spectrum.z[k] for spectrum, k in zip(spectra, peaks,
                                                                    strict=True)]))
        spectrum, peak = spectra[mode], peaks[mode]
        weights = None if mode == 0 else jitter[idx]
        z = spectrum.z
        if z[peak] < threshold:
            break
        # the fundamental: the lowest subharmonic that carries much of the power
        best = peak
        for k in range(2, int(spectrum.freq[peak] / f_low) + 1):
            candidate = spectrum.peak_near(peak / k)
            if candidate >= 0 and z[candidate] >= max(_SUBHARMONIC_SHARE * z[peak],
                                                      threshold):
                best = candidate
        grid_step = float(spectrum.freq[1])
        frequency = refine_frequency(relative[idx], weights, span,
                                      float(spectrum.freq[best]), grid_step)
        lock = lock_source(relative[idx], weights, span, frequency, tolerance, min_tolerance)
        multiple, _ = common_multiple(lock.cycle[lock.selected])
        while multiple > 1 and span / (lock.period * multiple) >= min_cycles:
            # locked on a harmonic: the source's events sit on every m-th lattice point
            lock = lock_source(relative[idx], weights, span, 1.0 / (lock.period * multiple),
                         tolerance, min_tolerance)
            multiple, _ = common_multiple(lock.cycle[lock.selected])
        n_selected = int(np.count_nonzero(lock.selected))
        regularity = (np.unique(lock.cycle[lock.selected]).size
                      / max(round(span / lock.period), 1))
        if (lock.excess < min_events or n_selected < min_events
                or lock.excess < lock.background or span / lock.period < min_cycles
                or regularity < min_regularity
                or lock.period < min_period * (1 - 1e-6)):
            for index in {peak, best}:
                rejected.append((spectrum.freq[index] - 2 * grid_step,
                                 spectrum.freq[index] + 2 * grid_step))
                for other in spectra:
                    other.z[(other.freq >= rejected[-1][0])
                            & (other.freq <= rejected[-1][1])] = 0.0
            if len(rejected) > _MAX_REJECTED:
                break
            continue
        found.append({"period": lock.period, "origin": lock.origin, "tolerance": lock.width,
                      "members": idx[lock.selected], "offsets": lock.residual[lock.selected],
                      "significance": float(z[peak] / threshold)})
        remaining[idx[lock.selected]] = False
        spectra = None
    groups = _merge_same_clock(found, span)
    rows = [_source_row(group, relative, jitter, span, origin_time) for group in groups]
    order = sorted(range(len(rows)), key=lambda g: -rows[g]["total_jitter"])
    rows = [rows[g] for g in order]
    labels = np.full(start.size, "aperiodic", dtype=object)
    for place, g in enumerate(order):
        for detection in groups[g]:
            labels[detection["members"]] = f"periodic {place + 1}"
    rest = jitter[remaining]
    rows.append({
        "period": math.nan, "frequency": math.nan, "phase": math.nan,
        "timing_spread": math.nan, "tolerance": math.nan, "n_phases": math.nan,
        "regularity": math.nan, "n_events": float(rest.size),
        "events_per_second": rest.size / span,
        "typical_duration": float(np.median(rest)) if rest.size else math.nan,
        "mean_duration": float(rest.mean()) if rest.size else math.nan,
        "total_jitter": float(rest.sum()), "significance": math.nan,
    })
    total_jitter = float(jitter.sum())
    for row in rows:
        row["share"] = row["total_jitter"] / total_jitter if total_jitter > 0 else math.nan
    index = [f"periodic {i}" for i in range(1, len(rows))] + ["aperiodic"]
    frame = pd.DataFrame(rows, index=pd.Index(index, name="source"), columns=list(_COLUMNS))
    frame.attrs = {"units": {k: v[0] for k, v in _COLUMNS.items()},
                   "descriptions": {k: v[1] for k, v in _COLUMNS.items()},
                   "min_period": min_period, "max_period": max_period,
                   "false_alarm": false_alarm, "min_events": min_events,
                   "min_cycles": min_cycles, "min_regularity": min_regularity,
                   "tolerance": tolerance,
                   "min_tolerance": min_tolerance, "trace_source": trace.attrs.get("source")}
    return frame, labels


def _merge_same_clock(found: list[dict], span: float) -> list[list[dict]]:
    """Group detections whose lattices have the same period to within their tolerances
    over the whole trace (one clock, several phases: a tick and its follow-up work)."""
    groups: list[list[dict]] = []
    for item in sorted(found, key=lambda d: -d["members"].size):
        for group in groups:
            lead = group[0]
            drift = abs(item["period"] - lead["period"]) * span / lead["period"]
            if drift <= item["tolerance"] + lead["tolerance"]:
                group.append(item)
                break
        else:
            groups.append([item])
    return groups


def _source_row(group: list[dict], relative: np.ndarray, jitter: np.ndarray, span: float,
                origin_time: float) -> dict:
    """The columns of one source (a group of detections on one clock)."""
    lead = max(group, key=lambda d: float(jitter[d["members"]].sum()))
    period, origin = lead["period"], lead["origin"]
    members = np.concatenate([d["members"] for d in group])
    durations = jitter[members]
    offsets = lead["offsets"]
    spread = 1.4826 * float(np.median(np.abs(offsets - np.median(offsets))))
    cycle = np.floor((relative[members] - origin + lead["tolerance"]) / period)
    cycles_spanned = max(round(span / period), 1)
    return {
        "period": period, "frequency": 1.0 / period,
        "phase": float((origin + origin_time) % period),
        "timing_spread": spread, "tolerance": lead["tolerance"],
        "n_phases": float(len(group)),
        "regularity": min(np.unique(cycle).size / cycles_spanned, 1.0),
        "n_events": float(members.size), "events_per_second": members.size / span,
        "typical_duration": float(np.median(durations)),
        "mean_duration": float(durations.mean()),
        "total_jitter": float(durations.sum()),
        "significance": max(d["significance"] for d in group),
    }
