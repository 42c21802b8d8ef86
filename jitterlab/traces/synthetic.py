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

The pieces: :mod:`~jitterlab.traces.noise_sources` (the sources and the union of their
detours), :mod:`~jitterlab.traces.coscheduling` (a co-scheduler's windows) and
:mod:`~jitterlab.traces.jitsim_node` (jitSim's node, :func:`jitsim_trace`); this module
holds the generators of a typical node and re-exports the others.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..base.rng import RngLike, as_generator
from .coscheduling import assemble_coscheduled, check_windows
from .jitsim_node import (
    JITSIM_CONFIGURATIONS,
    JITSIM_COSCHEDULER,
    JITSIM_NODE,
    JITSIM_SOURCES,
    jitsim_coscheduled_trace,
    jitsim_trace,
)
from .noise_sources import (
    PeriodicSource,
    PoissonSource,
    assemble_trace,
    capped_pareto_mean,
    check_bounded_below,
    standard_sources,
    trace_from_sources,
    trace_parameters,
)
from .trace import Trace

__all__ = ["PeriodicSource", "PoissonSource", "trace_from_sources", "synthetic_trace",
           "coscheduled_trace", "capped_pareto_mean", "jitsim_trace", "jitsim_coscheduled_trace",
           "JITSIM_SOURCES", "JITSIM_CONFIGURATIONS", "JITSIM_NODE", "JITSIM_COSCHEDULER"]


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
    duration = check_bounded_below("duration", duration, allow_low=False)
    daemons = tuple(daemons)
    ticks, periodic, interrupts = standard_sources(
        tick_hz, tick_duration, tick_spread, daemons, interrupt_rate, interrupt_alpha,
        interrupt_scale, interrupt_cap)
    attrs = {"source": "synthetic", "generator": "jitterlab.synthetic.synthetic_trace",
             **trace_parameters(duration=duration, tick_hz=tick_hz, tick_duration=tick_duration,
                           tick_spread=tick_spread, daemons=daemons,
                           interrupt_rate=interrupt_rate,
                           interrupt_alpha=interrupt_alpha, interrupt_scale=interrupt_scale,
                           interrupt_cap=interrupt_cap, rng=rng),
             **metadata}
    gen = as_generator(rng)
    pieces = [source.events(duration, gen) for source in (*ticks, *periodic, interrupts)]
    return assemble_trace(pieces, duration, attrs)


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
    duration, window, low_fraction = check_windows(duration, window, low_fraction)
    daemons = tuple(daemons)
    ticks, periodic, interrupts = standard_sources(
        tick_hz, tick_duration, tick_spread, daemons, interrupt_rate, interrupt_alpha,
        interrupt_scale, interrupt_cap)
    gen = as_generator(rng)
    pieces = [source.events(duration, gen) for source in ticks]
    released = [source.events(duration, gen) for source in periodic]
    pieces.append(interrupts.events(duration, gen))
    attrs = {"source": "synthetic", "generator": "jitterlab.synthetic.coscheduled_trace",
             **trace_parameters(duration=duration, window=window, low_fraction=low_fraction,
                           tick_hz=tick_hz,
                           tick_duration=tick_duration, tick_spread=tick_spread, daemons=daemons,
                           interrupt_rate=interrupt_rate, interrupt_alpha=interrupt_alpha,
                           interrupt_scale=interrupt_scale, interrupt_cap=interrupt_cap,
                           rng=rng),
             **metadata}
    return assemble_coscheduled(pieces, released, window, low_fraction, duration, attrs)
