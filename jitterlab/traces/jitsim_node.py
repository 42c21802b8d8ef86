"""The node of jitSim §4.2–4.3 (seed 000) as a synthetic trace: named sources, mitigations.

:func:`jitsim_trace` builds the traced node from its named sources
(:data:`JITSIM_SOURCES`; :data:`JITSIM_CONFIGURATIONS` keeps those of the mitigations of
jitSim Fig. 10, each source drawn from its own random stream), and
:func:`jitsim_coscheduled_trace` the same node under a co-scheduler
(:data:`JITSIM_COSCHEDULER`). Only the 100 Hz tick and the list of sources come from the
paper; the other defaults (:data:`JITSIM_NODE`) are assumptions.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..base.rng import RngLike, as_generator
from .coscheduling import assemble_coscheduled, check_windows
from .noise_sources import (
    PeriodicSource,
    assemble_trace,
    check_bounded_below,
    standard_sources,
    trace_parameters,
)
from .trace import Trace

__all__ = ["jitsim_trace", "jitsim_coscheduled_trace", "JITSIM_SOURCES",
           "JITSIM_CONFIGURATIONS", "JITSIM_NODE", "JITSIM_COSCHEDULER"]


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
    """The names of ``keep`` in :data:`JITSIM_SOURCES`'s order, each a known source."""
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
    ticks, periodic, interrupts = standard_sources(
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
    """One independent generator per source of ``_STREAMS`` and per process."""
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
    duration = check_bounded_below("duration", duration, allow_low=False)
    keep = _check_keep(keep)
    processes = tuple(processes)
    streams = _streams(rng, len(processes))
    free, released = _node_events(duration, keep, streams, tick_hz, tick_duration,
                                  tick_spread, interrupt_rate, interrupt_alpha,
                                  interrupt_scale, interrupt_cap, processes)
    attrs = {"source": "synthetic", "generator": "jitterlab.synthetic.jitsim_trace",
             "sources": list(keep),
             **trace_parameters(duration=duration, tick_hz=tick_hz, tick_duration=tick_duration,
                           tick_spread=tick_spread, interrupt_rate=interrupt_rate,
                           interrupt_alpha=interrupt_alpha, interrupt_scale=interrupt_scale,
                           interrupt_cap=interrupt_cap, processes=processes, rng=rng),
             **metadata}
    return assemble_trace([*free, *released], duration, attrs)


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
    duration, window, low_fraction = check_windows(duration, window, low_fraction)
    keep = _check_keep(keep)
    processes = tuple(node["processes"])
    streams = _streams(rng, len(processes))
    free, released = _node_events(duration, keep, streams, node["tick_hz"],
                                  node["tick_duration"], node["tick_spread"],
                                  node["interrupt_rate"], node["interrupt_alpha"],
                                  node["interrupt_scale"], node["interrupt_cap"], processes)
    high = (1.0 - low_fraction) * window
    coscheduler_daemon = check_bounded_below("coscheduler_daemon", coscheduler_daemon)
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
             **trace_parameters(duration=duration, window=window, low_fraction=low_fraction,
                           coscheduler_daemon=coscheduler_daemon,
                           ntpdate=None if ntpdate is None else [float(v) for v in ntpdate],
                           **{k: v for k, v in node.items() if k != "processes"},
                           processes=processes, rng=rng)}
    return assemble_coscheduled([*free], released, window, low_fraction, duration, attrs)
