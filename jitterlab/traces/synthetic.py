"""Synthetic jitter traces: a timer tick, periodic daemons and random interrupts.

The generators build a trace on an absolute timeline from independent noise *sources*
(:class:`PeriodicSource`, :class:`PoissonSource`), take the union of overlapping events
and wrap the timeline into a cyclic :class:`~jitterlab.traces.trace.Trace`. The defaults of
:func:`synthetic_trace` describe the kind of machine the project runs on and the
reference trace ``devref.trc`` (a 250 Hz tick of about 2.5 µs, a 40 µs daemon every
100 ms, about 50 interrupts per second with Pareto(1.8) durations from 5 µs, capped at
2 ms). :func:`coscheduled_trace` moves the daemons into the low-priority windows of a
co-scheduler, as in jitSim §3.5.

Every generator takes ``rng`` (an int seed or a :class:`numpy.random.Generator`) and
returns the same trace for the same seed.

References
----------
.. [1] P. De, V. Mann, "jitSim: A Simulator for Predicting Scalability of Parallel
   Applications in Presence of OS Jitter", Euro-Par 2010 workshops (seed 000): timer
   ticks and daemons as the main sources of jitter (§1), co-scheduled jitter (§3.5,
   Fig. 4).
.. [2] T. Hoefler, T. Schneider, A. Lumsdaine, "Characterizing the Influence of System
   Noise on Large-Scale Applications by Simulation", SC10.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..base.rng import RngLike, as_generator
from .trace import Trace, plain_metadata

__all__ = ["PeriodicSource", "PoissonSource", "trace_from_sources", "synthetic_trace",
           "coscheduled_trace", "capped_pareto_mean", "jitsim_trace", "jitsim_coscheduled_trace",
           "JITSIM_SOURCES", "JITSIM_CONFIGURATIONS", "JITSIM_NODE", "JITSIM_COSCHEDULER"]


def _check(name: str, value, *, low: float = 0.0, allow_low: bool = True) -> float:
    if isinstance(value, str | bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    value = float(value)
    if not math.isfinite(value) or value < low or (value == low and not allow_low):
        bound = f">= {low:g}" if allow_low else f"> {low:g}"
        raise ValueError(f"{name} must be finite and {bound}, got {value!r}")
    return value


@dataclass(frozen=True)
class PeriodicSource:
    """A detour of ``duration`` every ``period`` (a timer tick, a periodic daemon).

    Parameters
    ----------
    period : float
        Time between the starts of two detours. [s]
    duration : float
        Length of each detour; shorter than ``period``. [s]
    phase : float, optional
        Start of the first detour, in [0, period); drawn uniformly when None. [s]
    spread : float, default 0
        Each detour lasts ``duration·(1 + u)`` with u uniform in [−spread, spread]. [1]
    name : str, default "periodic"
        A label for the source.
    """

    period: float
    duration: float
    phase: float | None = None
    spread: float = 0.0
    name: str = "periodic"

    def __post_init__(self):
        period = _check("period", self.period, allow_low=False)
        duration = _check("duration", self.duration)
        if duration >= period:
            raise ValueError(f"duration ({duration:g} s) must be shorter than period "
                             f"({period:g} s)")
        if self.phase is not None and not 0 <= float(self.phase) < period:
            raise ValueError(f"phase must lie in [0, period), got {self.phase!r}")
        spread = _check("spread", self.spread)
        if spread > 1:
            raise ValueError(f"spread must be at most 1, got {spread!r}")

    def events(self, total_duration: float, rng: RngLike = None):
        """Starts and durations of the detours in [0, total_duration). [s]

        Draws the phase (when None), then the spread of the durations, from ``rng``.
        """
        gen = as_generator(rng)
        phase = gen.uniform(0.0, self.period) if self.phase is None else float(self.phase)
        count = max(math.ceil((total_duration - phase) / self.period), 0)
        start = phase + self.period * np.arange(count)
        start = start[start < total_duration]
        duration = np.full(start.size, float(self.duration))
        if self.spread:
            duration *= 1.0 + gen.uniform(-self.spread, self.spread, start.size)
        return start, duration


@dataclass(frozen=True)
class PoissonSource:
    """Detours at the events of a Poisson process with Pareto-distributed durations.

    Parameters
    ----------
    rate : float
        Mean number of detours per second. [1/s]
    alpha : float
        Tail index of the Pareto law of the durations. [1]
    scale : float
        Smallest duration (scale of the Pareto law). [s]
    cap : float, default inf
        Durations are cut at this value. [s]
    name : str, default "interrupts"
        A label for the source.
    """

    rate: float
    alpha: float
    scale: float
    cap: float = math.inf
    name: str = "interrupts"

    def __post_init__(self):
        _check("rate", self.rate)
        _check("alpha", self.alpha, allow_low=False)
        _check("scale", self.scale, allow_low=False)
        if not float(self.cap) > 0:
            raise ValueError(f"cap must be > 0, got {self.cap!r}")

    def events(self, total_duration: float, rng: RngLike = None):
        """Starts (sorted) and durations of the detours in [0, total_duration). [s]

        Draws the count, the starts, then the durations from ``rng``.
        """
        gen = as_generator(rng)
        count = gen.poisson(self.rate * total_duration)
        start = np.sort(gen.uniform(0.0, total_duration, count))
        # Pareto(alpha, scale) = scale·(1 + Lomax(alpha))
        duration = np.minimum(self.scale * (1.0 + gen.pareto(self.alpha, count)), self.cap)
        return start, duration

    def mean_duration(self) -> float:
        """E[min(X, cap)] for X ~ Pareto(alpha, scale). [s]"""
        return capped_pareto_mean(self.alpha, self.scale, self.cap)


def capped_pareto_mean(alpha: float, scale: float, cap: float = math.inf) -> float:
    """E[min(X, cap)] for X ~ Pareto(alpha, scale), P(X > x) = (scale/x)^alpha. [s]

    Notes
    -----
    E[min(X, c)] = ∫₀^c P(X > x) dx = s + s^α (c^{1−α} − s^{1−α}) / (1 − α) for c > s
    (s·(1 + ln(c/s)) when α = 1).
    """
    if cap <= scale:
        return float(cap)
    if alpha == 1.0:
        return scale * (1.0 + math.log(cap / scale))
    tail = 0.0 if math.isinf(cap) else cap ** (1.0 - alpha)
    if math.isinf(cap) and alpha < 1:
        return math.inf
    return scale + scale**alpha * (tail - scale ** (1.0 - alpha)) / (1.0 - alpha)


# --------------------------------------------------------------------------------------
# assembling a trace
# --------------------------------------------------------------------------------------
def _wrap(start: np.ndarray, duration: np.ndarray, total: float):
    """Split events that run past the end of the timeline; the rest continues at 0."""
    end = start + duration
    over = end > total
    head = np.minimum(end[over] - total, total)
    return (np.concatenate((start, np.zeros(head.size))),
            np.concatenate((np.where(over, total - start, duration), head)))


def _assemble(pieces: Iterable[tuple[np.ndarray, np.ndarray]], duration: float,
              metadata: dict) -> Trace:
    starts, durations = zip(*pieces, strict=True) if pieces else ((), ())
    start = np.concatenate([np.empty(0), *starts])
    length = np.concatenate([np.empty(0), *durations])
    start, length = _wrap(start, length, duration)
    if start.size == 0:  # no noise at all: one empty event
        start, length = np.zeros(1), np.zeros(1)
    trace = Trace.from_absolute(start, length, total_duration=duration, overlap="merge")
    trace.attrs = plain_metadata({**metadata, "offset": trace.attrs["offset"]})
    return trace


def trace_from_sources(sources: Sequence[PeriodicSource | PoissonSource], duration: float,
                       rng: RngLike = None, **metadata) -> Trace:
    """The union of the detours of several sources over ``duration``, as a cyclic trace.

    Parameters
    ----------
    sources : sequence of PeriodicSource or PoissonSource
        Drawn in this order from ``rng``.
    duration : float
        Length of the timeline, and of the trace's replay cycle. [s]
    rng : int or numpy.random.Generator, optional
        Seed or generator; the same seed gives the same trace.
    **metadata
        Stored in the trace's ``attrs``.

    Notes
    -----
    Overlapping detours merge into one event (the CPU is busy from the first start to
    the last end). A detour that runs past ``duration`` continues at time 0, so the
    trace wraps around seamlessly; choose ``duration`` a multiple of the periods for
    the periodic sources to stay periodic across the wrap. Without any detour the trace
    is a single zero-length event.
    """
    duration = _check("duration", duration, allow_low=False)
    gen = as_generator(rng)
    pieces = [source.events(duration, gen) for source in sources]
    return _assemble(pieces, duration, metadata)


def _standard_sources(tick_hz, tick_duration, tick_spread, daemons, interrupt_rate,
                      interrupt_alpha, interrupt_scale, interrupt_cap):
    # check the arguments under their own names before the sources check theirs
    tick_hz = _check("tick_hz", tick_hz)
    _check("tick_duration", tick_duration)
    if _check("tick_spread", tick_spread) > 1:
        raise ValueError(f"tick_spread must be at most 1, got {tick_spread!r}")
    _check("interrupt_rate", interrupt_rate)
    _check("interrupt_alpha", interrupt_alpha, allow_low=False)
    _check("interrupt_scale", interrupt_scale, allow_low=False)
    ticks = ([PeriodicSource(1.0 / tick_hz, tick_duration, spread=tick_spread, name="tick")]
             if tick_hz > 0 else [])
    periodic = []
    for i, item in enumerate(daemons):
        try:
            period, length = item
        except (TypeError, ValueError):
            raise ValueError(f"daemons[{i}] must be a pair (period [s], duration [s]), "
                             f"got {item!r}") from None
        periodic.append(PeriodicSource(period, length, name=f"daemon {i}"))
    interrupts = PoissonSource(interrupt_rate, interrupt_alpha, interrupt_scale,
                               _check("interrupt_cap", interrupt_cap, allow_low=False))
    return ticks, periodic, interrupts


def _parameters(**values) -> dict:
    out = {}
    for key, value in values.items():
        if key == "rng":
            out["seed"] = int(value) if isinstance(value, int | np.integer) else None
        elif key in ("daemons", "processes"):
            out[key] = [[float(p), float(d)] for p, d in value]
        else:
            out[key] = value
    return out


def synthetic_trace(duration: float, tick_hz: float = 250.0, tick_duration: float = 2.5e-6,
                    tick_spread: float = 0.02,
                    daemons: Iterable[tuple[float, float]] = ((0.1, 40e-6),),
                    interrupt_rate: float = 50.0, interrupt_alpha: float = 1.8,
                    interrupt_scale: float = 5e-6, interrupt_cap: float = 2e-3,
                    rng: RngLike = None, **metadata) -> Trace:
    """A trace of a timer tick, periodic daemons and Poisson interrupts.

    Parameters
    ----------
    duration : float
        Length of the trace (one replay cycle). [s]
    tick_hz : float, default 250
        Timer interrupt frequency; 0 for a tickless kernel. [Hz]
    tick_duration : float, default 2.5e-6
        Mean length of a tick. [s]
    tick_spread : float, default 0.02
        Each tick lasts tick_duration·(1 + u), u uniform in [−tick_spread, tick_spread]
        (±2 % by default). [1]
    daemons : iterable of (period, duration), default ((0.1, 40e-6),)
        Periodic daemons, each with its own uniformly random phase. [s]
    interrupt_rate : float, default 50
        Mean number of other interrupts per second (a Poisson process). [1/s]
    interrupt_alpha : float, default 1.8
        Tail index of their Pareto durations. [1]
    interrupt_scale : float, default 5e-6
        Smallest interrupt duration. [s]
    interrupt_cap : float, default 2e-3
        Interrupt durations are cut at this value. [s]
    rng : int or numpy.random.Generator, optional
        Seed or generator; the same seed gives the same trace.
    **metadata
        Added to the trace's ``attrs``.

    Returns
    -------
    Trace
        In seconds; ``attrs`` hold ``source="synthetic"``, ``generator`` and every
        parameter (``seed`` when ``rng`` is an int).

    Notes
    -----
    The tick has period 1/tick_hz and a random phase; daemons have their own periods
    and random phases; interrupts arrive at rate λ with durations min(X, cap),
    P(X > x) = (scale/x)^α. Overlapping detours merge into one event. The expected
    number of events per second is about tick_hz + Σ 1/period + λ (slightly fewer
    after merging), and the noise fraction about tick_hz·tick_duration +
    Σ duration/period + λ·E[min(X, cap)] (see :func:`capped_pareto_mean`).

    Examples
    --------
    >>> trace = synthetic_trace(duration=30.0, rng=1)
    >>> bool(300 < trace.stats()["event_rate"] < 320)  # 250 + 10 + about 50 per second
    True
    """
    duration = _check("duration", duration, allow_low=False)
    daemons = tuple(daemons)
    ticks, periodic, interrupts = _standard_sources(
        tick_hz, tick_duration, tick_spread, daemons, interrupt_rate, interrupt_alpha,
        interrupt_scale, interrupt_cap)
    attrs = {"source": "synthetic", "generator": "jitterlab.synthetic.synthetic_trace",
             **_parameters(duration=duration, tick_hz=tick_hz, tick_duration=tick_duration,
                           tick_spread=tick_spread, daemons=daemons,
                           interrupt_rate=interrupt_rate,
                           interrupt_alpha=interrupt_alpha, interrupt_scale=interrupt_scale,
                           interrupt_cap=interrupt_cap, rng=rng),
             **metadata}
    gen = as_generator(rng)
    pieces = [source.events(duration, gen) for source in (*ticks, *periodic, interrupts)]
    return _assemble(pieces, duration, attrs)


def _defer_to_low_windows(release, work, window, high, total):
    """Run the daemon activations, first come first served, only inside low windows.

    A low window of cycle k is [k·window + high, (k + 1)·window); work left at its end
    continues in the next one. Returns the pieces (start, duration).
    """
    starts, lengths = [], []
    clock = -math.inf
    for r, w in sorted(zip(release.tolist(), work.tolist(), strict=True)):
        clock = max(clock, r)
        done = 1e-12 * max(w, window)  # what is left after rounding in ``w -= run``
        while w > done:
            cycle = math.floor(clock / window)
            position = clock - cycle * window
            if window - position <= 1e-9 * window:  # at the end of a window (rounding)
                cycle, position = cycle + 1, 0.0
            if position < high:  # wait for the next low window
                position = high
            clock = cycle * window + position
            run = min(w, window - position)
            starts.append(clock)
            lengths.append(run)
            clock += run
            w -= run
    start = np.asarray(starts, dtype=np.float64)
    length = np.asarray(lengths, dtype=np.float64)
    # work pushed past the end of the timeline wraps to its beginning (whole windows)
    start = np.mod(start, total)
    return start, length


def coscheduled_trace(duration: float, window: float, low_fraction: float,
                      tick_hz: float = 250.0, tick_duration: float = 2.5e-6,
                      tick_spread: float = 0.02,
                      daemons: Iterable[tuple[float, float]] = ((0.1, 40e-6),),
                      interrupt_rate: float = 50.0, interrupt_alpha: float = 1.8,
                      interrupt_scale: float = 5e-6, interrupt_cap: float = 2e-3,
                      rng: RngLike = None, **metadata) -> Trace:
    """A trace of a node under a co-scheduler: daemons run only in low-priority windows.

    Parameters
    ----------
    duration : float
        Length of the trace; a whole number of windows. [s]
    window : float
        Period of the co-scheduler: one high-priority window followed by one
        low-priority window. [s]
    low_fraction : float
        Fraction of each period that is the low-priority window, in (0, 1). [1]
    tick_hz, tick_duration, tick_spread, daemons, interrupt_rate, interrupt_alpha, \
interrupt_scale, interrupt_cap
        As for :func:`synthetic_trace`.
    rng : int or numpy.random.Generator, optional
        Seed or generator; the same seed gives the same trace.
    **metadata
        Added to the trace's ``attrs``.

    Returns
    -------
    Trace
        In seconds, with ``attrs["window"]``, the co-scheduler period [s], and
        ``attrs["window_offset"]``, the start of the first high-priority window in
        [0, window), measured like :attr:`Trace.starts` from the start of the first row
        [s]: high-priority windows start at ``window_offset + k·window``, which is where
        ``simulate(start="coscheduled")`` starts its tasks. Also ``low_fraction`` and the
        other parameters.

    Notes
    -----
    jitSim's model of co-scheduled jitter (seed 000, §3.5, Fig. 4): a co-scheduler
    daemon raises the parallel task to high priority for a window of (1 − f)·window
    and lowers it for the remaining f·window, synchronised across nodes. During the
    high-priority window only interrupts strike the task (the timer tick and the
    Poisson interrupts, which no scheduler can defer); a daemon released then waits for
    the next low-priority window. Daemon work runs first come first served, only inside
    low-priority windows, and work left when a window closes continues in the next one.
    The total daemon work is unchanged; only its timing moves. Work pushed past the end
    of the trace wraps to its beginning (``duration`` is a whole number of windows, so
    the windows line up). On the generator's timeline the high-priority windows start
    at k·window; the trace's rows begin with its first event (``attrs["offset"]`` on
    that timeline), hence ``window_offset = (−offset) mod window``.

    Examples
    --------
    >>> trace = coscheduled_trace(duration=1.0, window=0.01, low_fraction=0.1, rng=3)
    >>> trace.attrs["window"], trace.attrs["low_fraction"]
    (0.01, 0.1)
    >>> bool(0 <= trace.attrs["window_offset"] < 0.01)
    True
    """
    duration, window, low_fraction = _check_windows(duration, window, low_fraction)
    daemons = tuple(daemons)
    ticks, periodic, interrupts = _standard_sources(
        tick_hz, tick_duration, tick_spread, daemons, interrupt_rate, interrupt_alpha,
        interrupt_scale, interrupt_cap)
    gen = as_generator(rng)
    pieces = [source.events(duration, gen) for source in ticks]
    released = [source.events(duration, gen) for source in periodic]
    pieces.append(interrupts.events(duration, gen))
    attrs = {"source": "synthetic", "generator": "jitterlab.synthetic.coscheduled_trace",
             **_parameters(duration=duration, window=window, low_fraction=low_fraction,
                           tick_hz=tick_hz,
                           tick_duration=tick_duration, tick_spread=tick_spread, daemons=daemons,
                           interrupt_rate=interrupt_rate, interrupt_alpha=interrupt_alpha,
                           interrupt_scale=interrupt_scale, interrupt_cap=interrupt_cap,
                           rng=rng),
             **metadata}
    return _assemble_coscheduled(pieces, released, window, low_fraction, duration, attrs)


def _check_windows(duration, window, low_fraction):
    duration = _check("duration", duration, allow_low=False)
    window = _check("window", window, allow_low=False)
    low_fraction = float(low_fraction)
    if not 0 < low_fraction < 1:
        raise ValueError(f"low_fraction must lie in (0, 1), got {low_fraction!r}")
    n_windows = round(duration / window)
    if n_windows < 1 or abs(n_windows * window - duration) > 1e-9 * duration:
        raise ValueError(f"duration ({duration!r} s) must be a whole number of windows "
                         f"({window!r} s)")
    return duration, window, low_fraction


def _assemble_coscheduled(pieces, released, window, low_fraction, duration, attrs) -> Trace:
    """The trace of the events ``pieces`` and of the work ``released``, deferred to the
    low-priority windows; records where the high-priority windows start."""
    pieces = list(pieces)
    if released:
        release = np.concatenate([r for r, _ in released])
        work = np.concatenate([w for _, w in released])
        pieces.append(_defer_to_low_windows(release, work, window,
                                            (1.0 - low_fraction) * window, duration))
    trace = _assemble(pieces, duration, attrs)
    window_offset = -trace.attrs["offset"] % window
    trace.attrs["window_offset"] = 0.0 if window_offset >= window else window_offset
    return trace


# --------------------------------------------------------------------------------------
# the node of jitSim §4.2–4.3: named sources, mitigations, co-scheduler
# --------------------------------------------------------------------------------------
#: the noise sources of :func:`jitsim_trace`, named after jitSim §4.3
JITSIM_SOURCES = ("tick", "interrupts", "processes")

#: the sources each configuration of jitSim Fig. 10 keeps (§4.3): boosting the task's OS
#: priority removes the user-level and kernel processes but not the interrupts; the
#: isolated CPU (primary SMT thread isolated, IRQs rerouted) removes both; the timer
#: tick is local to every CPU and stays. Fig. 10's fourth configuration, HW priority,
#: acts inside the SMT core and has no model here.
JITSIM_CONFIGURATIONS = {"baseline": ("tick", "interrupts", "processes"),
                         "OS priority": ("tick", "interrupts"),
                         "Isolated CPU": ("tick",)}

#: parameters of :func:`jitsim_trace` and :func:`jitsim_coscheduled_trace` by default.
#: Only the 100 Hz tick and the list of sources come from the paper (§4.2, §4.3); every
#: duration, rate and period is an assumption of typical size for Linux 2.6 (see the
#: function's Notes)
JITSIM_NODE = {"tick_hz": 100.0, "tick_duration": 10e-6, "tick_spread": 0.1,
               "interrupt_rate": 100.0, "interrupt_alpha": 1.8, "interrupt_scale": 5e-6,
               "interrupt_cap": 1e-3, "processes": ((1.0, 100e-6), (5.0, 1e-3))}

#: the co-scheduler of :func:`jitsim_coscheduled_trace` by default (assumptions)
JITSIM_COSCHEDULER = {"window": 0.1, "low_fraction": 0.05, "coscheduler_daemon": 50e-6,
                      "ntpdate": (10.0, 2e-3)}

# one random stream per source, in this order, then one per process: removing a source
# leaves the events of the others unchanged (common random numbers across configurations)
_STREAMS = ("tick", "interrupts", "coscheduler", "ntpdate")


def _check_keep(keep) -> tuple[str, ...]:
    if isinstance(keep, str):
        keep = (keep,)
    try:
        keep = tuple(keep)
    except TypeError:
        raise TypeError(f"keep must be a sequence of source names from {JITSIM_SOURCES}, "
                        f"got {keep!r}") from None
    unknown = [name for name in keep if name not in JITSIM_SOURCES]
    if unknown:
        raise ValueError(f"keep names unknown source(s) {unknown}; the sources are "
                         f"{JITSIM_SOURCES}")
    return tuple(name for name in JITSIM_SOURCES if name in keep)


def _node_events(duration, keep, streams, tick_hz, tick_duration, tick_spread,
                 interrupt_rate, interrupt_alpha, interrupt_scale, interrupt_cap, processes):
    """(events of the tick and interrupts, activations of the processes), each source
    drawn from its own stream."""
    ticks, periodic, interrupts = _standard_sources(
        tick_hz, tick_duration, tick_spread, processes, interrupt_rate, interrupt_alpha,
        interrupt_scale, interrupt_cap)
    free = []
    if "tick" in keep and ticks:
        free.append(ticks[0].events(duration, streams[0]))
    if "interrupts" in keep:
        free.append(interrupts.events(duration, streams[1]))
    released = ([source.events(duration, stream)
                 for source, stream in zip(periodic, streams[len(_STREAMS):], strict=True)]
                if "processes" in keep else [])
    return free, released


def _streams(rng, n_processes):
    seeds = as_generator(rng).integers(0, 2**63 - 1, size=len(_STREAMS) + n_processes)
    return [np.random.default_rng(int(seed)) for seed in seeds]


def jitsim_trace(duration: float, keep=JITSIM_SOURCES, *,
                 tick_hz: float = JITSIM_NODE["tick_hz"],
                 tick_duration: float = JITSIM_NODE["tick_duration"],
                 tick_spread: float = JITSIM_NODE["tick_spread"],
                 interrupt_rate: float = JITSIM_NODE["interrupt_rate"],
                 interrupt_alpha: float = JITSIM_NODE["interrupt_alpha"],
                 interrupt_scale: float = JITSIM_NODE["interrupt_scale"],
                 interrupt_cap: float = JITSIM_NODE["interrupt_cap"],
                 processes: Iterable[tuple[float, float]] = JITSIM_NODE["processes"],
                 rng: RngLike = None, **metadata) -> Trace:
    """A trace of the node of jitSim §4.2–4.3, from named sources.

    Parameters
    ----------
    duration : float
        Length of the trace (one replay cycle); a multiple of the process periods keeps
        them periodic across the wrap. [s]
    keep : sequence of {"tick", "interrupts", "processes"}
        The sources in the trace; :data:`JITSIM_CONFIGURATIONS` gives those of the
        mitigations of jitSim Fig. 10 (e.g. ``keep=("tick",)`` for the isolated CPU).
    tick_hz : float, default 100
        Timer interrupt frequency (jitSim §4.2: 100 Hz). [Hz]
    tick_duration : float, default 10e-6
        Mean length of a tick (assumption). [s]
    tick_spread : float, default 0.1
        Each tick lasts tick_duration·(1 + u), u uniform in [−tick_spread, tick_spread]. [1]
    interrupt_rate : float, default 100
        Mean number of device interrupts per second, a Poisson process (assumption). [1/s]
    interrupt_alpha : float, default 1.8
        Tail index of their Pareto durations (assumption). [1]
    interrupt_scale : float, default 5e-6
        Shortest interrupt (assumption). [s]
    interrupt_cap : float, default 1e-3
        Interrupt durations are cut at this value (assumption). [s]
    processes : iterable of (period, duration), default ((1, 100e-6), (5, 1e-3))
        User-level and kernel processes as periodic detours with random phases
        (assumption: a kernel thread every second, a daemon every 5 s). [s]
    rng : int or numpy.random.Generator, optional
        Seed or generator. The sources draw from separate streams derived from it, so a
        trace with fewer sources (same seed) holds exactly the same events of the
        sources it keeps.
    **metadata
        Added to the trace's ``attrs``.

    Returns
    -------
    Trace
        In seconds; ``attrs`` hold ``generator``, ``sources`` (the kept ones) and every
        parameter (``seed`` when ``rng`` is an int).

    Notes
    -----
    jitSim §4.2 and §4.3 (seed 000) describe the traced node: one Power5 CPU at
    1.5 GHz, Fedora Core 6, Linux 2.6.24 with the CFS scheduler, a 100 Hz timer tick,
    SMT on; its jitter came mostly from interrupts and partly from user-level and kernel
    processes. The paper gives no durations or rates; the defaults here
    (:data:`JITSIM_NODE`) are assumptions of the usual size for Linux 2.6. The noise
    fraction is tick_hz·tick_duration + λ·E[min(X, cap)] + Σ duration/period (about
    0.10 % + 0.11 % + 0.03 % by default: interrupts, tick included, carry most of it).

    Examples
    --------
    >>> trace = jitsim_trace(60.0, rng=1)
    >>> bool(0.2 < trace.stats()["noise_fraction"] * 100 < 0.3)  # about 0.24 % [%]
    True
    >>> jitsim_trace(10.0, keep=("tick",), rng=1).n_events  # the isolated CPU: 100 Hz
    1000
    """
    duration = _check("duration", duration, allow_low=False)
    keep = _check_keep(keep)
    processes = tuple(processes)
    streams = _streams(rng, len(processes))
    free, released = _node_events(duration, keep, streams, tick_hz, tick_duration,
                                  tick_spread, interrupt_rate, interrupt_alpha,
                                  interrupt_scale, interrupt_cap, processes)
    attrs = {"source": "synthetic", "generator": "jitterlab.synthetic.jitsim_trace",
             "sources": list(keep),
             **_parameters(duration=duration, tick_hz=tick_hz, tick_duration=tick_duration,
                           tick_spread=tick_spread, interrupt_rate=interrupt_rate,
                           interrupt_alpha=interrupt_alpha, interrupt_scale=interrupt_scale,
                           interrupt_cap=interrupt_cap, processes=processes, rng=rng),
             **metadata}
    return _assemble([*free, *released], duration, attrs)


def jitsim_coscheduled_trace(duration: float, keep=JITSIM_SOURCES, *,
                             window: float = JITSIM_COSCHEDULER["window"],
                             low_fraction: float = JITSIM_COSCHEDULER["low_fraction"],
                             coscheduler_daemon: float = JITSIM_COSCHEDULER[
                                 "coscheduler_daemon"],
                             ntpdate: tuple[float, float] | None = JITSIM_COSCHEDULER[
                                 "ntpdate"],
                             rng: RngLike = None, **node) -> Trace:
    """The node of :func:`jitsim_trace` under a co-scheduler (jitSim §3.5, §4.3, Fig. 9).

    Parameters
    ----------
    duration : float
        Length of the trace; a whole number of windows. [s]
    keep : sequence of {"tick", "interrupts", "processes"}
        The node's sources, as for :func:`jitsim_trace`.
    window : float, default 0.1
        Period of the co-scheduler: a high-priority window, then a low-priority one
        (assumption). [s]
    low_fraction : float, default 0.05
        Fraction of each period that is the low-priority window (assumption). [1]
    coscheduler_daemon : float, default 50e-6
        CPU time of the co-scheduler daemon per period, spent when the low-priority
        window opens (assumption); 0 for none. [s]
    ntpdate : (period, duration) or None, default (10, 2e-3)
        The clock synchronisation that keeps the windows aligned across nodes, as a
        periodic detour (assumption); None for none. [s]
    rng : int or numpy.random.Generator, optional
        Seed or generator; with the same seed the tick and interrupts are those of
        :func:`jitsim_trace`, and the processes are released at the same instants.
    **node
        The node's parameters, as for :func:`jitsim_trace` (defaults :data:`JITSIM_NODE`).

    Returns
    -------
    Trace
        As :func:`coscheduled_trace`: ``attrs["window"]`` and ``attrs["window_offset"]``
        (where ``simulate(start="coscheduled")`` starts its tasks), and the parameters.

    Notes
    -----
    As in :func:`coscheduled_trace`: the tick and the interrupts strike at any time; the
    processes, the co-scheduler daemon and ntpdate run only in the low-priority windows,
    first come first served. jitSim §4.3 blames the co-scheduler daemon and ntpdate for
    co-scheduling being worse than the baseline up to about 512 tasks: they add
    coscheduler_daemon/window + duration/period to the noise fraction (0.05 % + 0.02 %
    by default). All their parameters are assumptions; the paper gives none.

    Examples
    --------
    >>> trace = jitsim_coscheduled_trace(10.0, rng=1)
    >>> trace.attrs["window"], trace.attrs["low_fraction"]
    (0.1, 0.05)
    """
    unknown = sorted(set(node) - set(JITSIM_NODE))
    if unknown:
        raise TypeError(f"jitsim_coscheduled_trace() got unknown parameter(s) {unknown}; "
                        f"the node's are {sorted(JITSIM_NODE)}")
    node = {**JITSIM_NODE, **node}
    duration, window, low_fraction = _check_windows(duration, window, low_fraction)
    keep = _check_keep(keep)
    processes = tuple(node["processes"])
    streams = _streams(rng, len(processes))
    free, released = _node_events(duration, keep, streams, node["tick_hz"],
                                  node["tick_duration"], node["tick_spread"],
                                  node["interrupt_rate"], node["interrupt_alpha"],
                                  node["interrupt_scale"], node["interrupt_cap"], processes)
    high = (1.0 - low_fraction) * window
    coscheduler_daemon = _check("coscheduler_daemon", coscheduler_daemon)
    if coscheduler_daemon > 0:
        released.append(PeriodicSource(window, coscheduler_daemon, phase=high,
                                        name="co-scheduler").events(duration, streams[2]))
    if ntpdate is not None:
        try:
            period, length = ntpdate
        except (TypeError, ValueError):
            raise ValueError(f"ntpdate must be a pair (period [s], duration [s]) or None, "
                             f"got {ntpdate!r}") from None
        released.append(PeriodicSource(period, length, name="ntpdate").events(duration,
                                                                              streams[3]))
    attrs = {"source": "synthetic",
             "generator": "jitterlab.synthetic.jitsim_coscheduled_trace",
             "sources": list(keep),
             **_parameters(duration=duration, window=window, low_fraction=low_fraction,
                           coscheduler_daemon=coscheduler_daemon,
                           ntpdate=None if ntpdate is None else [float(v) for v in ntpdate],
                           **{k: v for k, v in node.items() if k != "processes"},
                           processes=processes, rng=rng)}
    return _assemble_coscheduled([*free], released, window, low_fraction, duration, attrs)
