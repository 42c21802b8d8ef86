"""Noise sources and the cyclic trace of their union.

A source draws its detours on an absolute timeline (:class:`PeriodicSource`: a timer
tick, a periodic daemon; :class:`PoissonSource`: random interrupts with Pareto
durations, whose capped mean is :func:`capped_pareto_mean`); :func:`trace_from_sources`
merges the detours of several sources and wraps the timeline into a cyclic
:class:`~jitterlab.traces.trace.Trace`. The generators of
:mod:`~jitterlab.traces.synthetic` and :mod:`~jitterlab.traces.jitsim_node` build on these
(:func:`standard_sources`: a tick, daemons and interrupts from their parameters).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..base.rng import RngLike, as_generator
from .trace import Trace, plain_metadata

__all__ = ["PeriodicSource", "PoissonSource", "trace_from_sources", "capped_pareto_mean"]


def check_bounded_below(name: str, value, *, low: float = 0.0, allow_low: bool = True) -> float:
    """``value`` as a float if it is a finite real >= ``low`` (> with ``allow_low=False``)."""
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
        period = check_bounded_below("period", self.period, allow_low=False)
        duration = check_bounded_below("duration", self.duration)
        if duration >= period:
            raise ValueError(f"duration ({duration:g} s) must be shorter than period "
                             f"({period:g} s)")
        if self.phase is not None and not 0 <= float(self.phase) < period:
            raise ValueError(f"phase must lie in [0, period), got {self.phase!r}")
        spread = check_bounded_below("spread", self.spread)
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
        check_bounded_below("rate", self.rate)
        check_bounded_below("alpha", self.alpha, allow_low=False)
        check_bounded_below("scale", self.scale, allow_low=False)
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
def wrap_timeline(start: np.ndarray, duration: np.ndarray, total: float):
    """Split events that run past the end of the timeline; the rest continues at 0."""
    end = start + duration
    over = end > total
    head = np.minimum(end[over] - total, total)
    return (np.concatenate((start, np.zeros(head.size))),
            np.concatenate((np.where(over, total - start, duration), head)))


def assemble_trace(pieces: Iterable[tuple[np.ndarray, np.ndarray]], duration: float,
              metadata: dict) -> Trace:
    """The cyclic trace of the detours ``pieces`` (start, duration) over ``duration``."""
    starts, durations = zip(*pieces, strict=True) if pieces else ((), ())
    start = np.concatenate([np.empty(0), *starts])
    length = np.concatenate([np.empty(0), *durations])
    start, length = wrap_timeline(start, length, duration)
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
    duration = check_bounded_below("duration", duration, allow_low=False)
    gen = as_generator(rng)
    pieces = [source.events(duration, gen) for source in sources]
    return assemble_trace(pieces, duration, metadata)


def standard_sources(tick_hz, tick_duration, tick_spread, daemons, interrupt_rate,
                      interrupt_alpha, interrupt_scale, interrupt_cap):
    """(tick, daemons, interrupts) of a node, from the parameters of
    :func:`~jitterlab.traces.synthetic.synthetic_trace`."""
    # check the arguments under their own names before the sources check theirs
    tick_hz = check_bounded_below("tick_hz", tick_hz)
    check_bounded_below("tick_duration", tick_duration)
    if check_bounded_below("tick_spread", tick_spread) > 1:
        raise ValueError(f"tick_spread must be at most 1, got {tick_spread!r}")
    check_bounded_below("interrupt_rate", interrupt_rate)
    check_bounded_below("interrupt_alpha", interrupt_alpha, allow_low=False)
    check_bounded_below("interrupt_scale", interrupt_scale, allow_low=False)
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
                               check_bounded_below("interrupt_cap", interrupt_cap, allow_low=False))
    return ticks, periodic, interrupts


def trace_parameters(**values) -> dict:
    """A generator's parameters as plain trace attributes (``rng`` as ``seed``)."""
    out = {}
    for key, value in values.items():
        if key == "rng":
            out["seed"] = int(value) if isinstance(value, int | np.integer) else None
        elif key in ("daemons", "processes"):
            out[key] = [[float(p), float(d)] for p, d in value]
        else:
            out[key] = value
    return out
