"""Run a GOAL schedule with LogGOPSim's semantics, without noise or under any noise.

:func:`simulate_schedule` is LogGOPSim's discrete-event simulation (Hoefler, Schneider
& Lumsdaine, HPDC 2010) on a columnar :class:`Schedule`, in a serial numba kernel with
a radix event queue (:mod:`jitterlab.sim.schedules.kernel`), its inputs laid out once
per schedule and kept with it for its runs and later calls
(:mod:`jitterlab.sim.schedules.arguments`).
Without noise, makespan and every rank's end equal LogGOPSim's to the nanosecond
(tests/test_schedules.py).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ...base.rng import as_generator, seed_from
from ...traces.schedule import CALC, KIND_NAMES, Schedule
from ...traces.trace import Trace
from ..message import Message
from . import kernel
from .arguments import prepare_arguments
from .loggops import LogGOPS
from .tracing import events_from_operations

__all__ = ["simulate_schedule", "DeadlockError"]

_EMPTY_I = np.zeros(0, dtype=np.int64)


class DeadlockError(RuntimeError):
    """Operations that never ran, or messages that no receive matched (LogGOPSim would
    report non-empty queues and print no times)."""


class _Prepared:
    """The schedule's arrays as the kernel takes them (laid out once per schedule, shared
    by the runs, the noiseless run and later calls)."""

    def __init__(self, schedule: Schedule, params: LogGOPS, resolution: float):
        self.schedule = schedule
        self.resolution = resolution
        self.n = schedule.n_operations
        self.args, longest_calc = prepare_arguments(schedule, params, resolution)
        self.rank_offsets = self.args.rank_offsets
        self.exact = self.args.exact
        self.overhead = self.args.overhead
        self.latency = self.args.latency
        #: the longest calc [ticks]
        self.longest_calc = longest_calc

    def arguments(self):
        """The kernel's arguments from ``kind`` to ``eager_limit``."""
        return self.args

    def run(self, mode, trc_start, trc_dur, rank_time, delta, keep=False):
        end = np.zeros(self.schedule.num_ranks, dtype=np.int64)
        op_start = np.full(self.n if keep else 0, -1, dtype=np.int64)
        op_end = np.full(self.n if keep else 0, -1, dtype=np.int64)
        done, events, left = kernel.simulate_arrays(
            *self.arguments(), mode, trc_start, trc_dur, rank_time, delta, op_start, op_end,
            end)
        if done != self.n or left:
            self._deadlock(done, left, mode, trc_start, trc_dur, rank_time, delta)
        return end, events, op_start, op_end

    def times(self, mode, trc_start, trc_dur, rank_time, delta):
        """Every operation's times (rows ``kernel.TIME_FIELDS``), the send each receive
        matched (−1 for other operations) and each rank's end [ticks]."""
        end = np.zeros(self.schedule.num_ranks, dtype=np.int64)
        times = kernel.new_operation_times(self.n)
        matched = np.full(self.n, -1, dtype=np.int64)
        done, _, left = kernel.simulate_with_matches(
            *self.arguments(), mode, trc_start, trc_dur, rank_time, delta, times, matched,
            end, True)  # park given, as every caller gives it: one compiled version
        if done != self.n or left:
            self._deadlock(done, left, mode, trc_start, trc_dur, rank_time, delta)
        return times, matched, end

    def _deadlock(self, done, left, *noise):
        s = self.schedule
        end = np.full(self.n, -1, dtype=np.int64)
        start = np.full(self.n, -1, dtype=np.int64)
        out = np.zeros(s.num_ranks, dtype=np.int64)
        kernel.simulate_arrays(*self.arguments(), *noise, start, end, out)
        missing = np.flatnonzero(end < 0)
        text = f"{self.n - done} of {self.n} operations never finished"
        if missing.size:
            i = int(missing[0])
            local = i - int(self.rank_offsets[s.rank[i]])
            what = KIND_NAMES[int(s.kind[i])]
            state = "started but not matched" if start[i] >= 0 else "never ready"
            text += (f" (the first: rank {s.rank[i]}, operation {local}, a {what}"
                     + (f" with peer {s.peer[i]}, tag {s.tag[i]}" if s.kind[i] != CALC
                        else "") + f", {state})")
        if left:
            text += f"; {left} (receiver, sender, tag) queues hold unmatched entries"
        raise DeadlockError(text + " — a receive without its send, or a cycle of "
                            "dependencies")


def _trace_arrays(trace: Trace, resolution: float, longest: int):
    table = trace.to_absolute()
    start = np.asarray(table["start"], dtype=float)
    begin = np.rint(start / resolution).astype(np.int64)
    end = np.rint((start + np.asarray(table["duration"], dtype=float)) / resolution)
    duration = end.astype(np.int64) - begin
    order = np.argsort(begin, kind="stable")
    begin, duration = np.ascontiguousarray(begin[order]), np.ascontiguousarray(duration[order])
    if begin.size < 2:
        raise ValueError("LogGOPSim's noise rule needs a trace of at least two detours")
    if begin[-1] <= longest:
        raise ValueError(f"the trace wraps at the start of its last detour, "
                         f"{begin[-1] * resolution!r} s, not after the longest CPU use of "
                         f"the schedule ({longest * resolution!r} s): LogGOPSim's rule needs "
                         f"a longer trace")
    return begin, duration


def _rank_times(start, n_ranks, wrap, resolution, gen):
    """Each rank's offset in the trace [ticks] (LogGOPSim: uniform in [0, wrap))."""
    if isinstance(start, str):
        if start == "random":
            return np.floor(gen.random(n_ranks) * wrap).astype(np.int64)
        if start == "synchronized":
            return np.full(n_ranks, int(np.floor(gen.random() * wrap)), dtype=np.int64)
        raise ValueError(f"start must be 'random', 'synchronized' or one offset per rank "
                         f"[s], got {start!r}")
    offsets = np.asarray(start, dtype=float)
    if offsets.shape != (n_ranks,) or np.any(offsets < 0) or not np.all(np.isfinite(offsets)):
        raise ValueError(f"start offsets must be {n_ranks} finite values >= 0 [s]")
    return np.rint(offsets / resolution).astype(np.int64)


def simulate_schedule(schedule: Schedule, params, noise=None, start="random", rng=None,
                      runs: int = 1, detail=False, resolution: float = 1e-12) -> xr.Dataset:
    """Simulate a GOAL schedule with LogGOPSim's semantics, with or without noise.

    Parameters
    ----------
    schedule : Schedule
        From :func:`read_goal`, the generators, or built by hand.
    params : LogGOPS or Message
        Network and CPU costs (a Message becomes ``LogGOPS.from_message(m)``, g = 0).
    noise : None, Trace or noise law
        None: LogGOPSim without ``--noise-trace``. A :class:`~jitterlab.Trace`:
        LogGOPSim's ``--noise-trace`` rule — each CPU use (a calc, the o of a send and
        of a received message) is lengthened by the rest of a detour under way at its
        start plus every detour that begins inside it; the trace wraps at the start of
        its last detour. A noise law (``jl.noise.*``): one δ drawn per CPU use, added
        as LogGOPSim adds trace noise. [s]
    start : "random", "synchronized" or array of float
        Trace offset of each rank: "random" draws one per rank uniformly over the trace
        (LogGOPSim's default), "synchronized" one for all ranks (LogGOPSim's
        ``--noise-cosched``); or one offset per rank [s].
    rng : int or numpy.random.Generator, optional
        Seed of the offsets and δ draws.
    runs : int
        Independent runs (new offsets or δ each run).
    detail : bool, "operations" or "events"
        "operations" adds each operation's start and end (variables ``op_start``,
        ``op_end`` [s], dims run, operation). "events" (``runs=1``) returns instead the
        run's :class:`jitterlab.EventTrace`, the input of :mod:`jitterlab.estimate`:
        per rank its CPU uses in time order (a calc, a send's overhead, the taking of a
        received message, the wait for it included) with the noise in each, attrs
        ``makespan`` and ``noiseless_makespan`` [s]; the rules are in
        :mod:`jitterlab.schedules.tracing`.
    resolution : float
        Clock tick of the simulation: every time is a whole number of ticks, costs and
        trace times are rounded to it. The default 1 ps reproduces LogGOPSim's integer
        nanoseconds exactly when the inputs are whole nanoseconds. [s]

    Notes
    -----
    The kernel's arrays depend on the schedule alone (and the resolution): the first
    call lays them out and keeps them with the schedule (its ``kept_layout``, about
    60 B per operation, as long as the schedule lives;
    :func:`jitterlab.sim.schedules.arguments.forget_layout` frees them), so ``runs=N``
    and later calls on the same schedule with the same resolution, with other
    ``params`` or noise, skip that set-up. The schedule's arrays become read-only then:
    to change a schedule, build a new one (or change a copy of its arrays); a schedule
    whose arrays were replaced, or made writable again, is laid out anew.

    Returns
    -------
    xarray.Dataset or EventTrace
        ``makespan`` (run) and ``end`` (run, rank): the latest time a rank's CPU is
        busy, as LogGOPSim prints it [s]; ``noiseless_makespan`` and ``slowdown`` (run)
        when there is noise; attrs: parameters, events handled per run, seed. With
        ``detail="events"`` the run's event trace.

    Examples
    --------
    >>> import jitterlab as jl
    >>> from jitterlab.sim.schedules import SEND, RECV
    >>> ping = jl.Schedule(2, kind=[SEND, RECV], rank=[0, 1], peer=[1, 0], size=[8, 8])
    >>> ds = jl.simulate_schedule(ping, jl.LogGOPS.from_loggopsim())
    >>> int(round(float(ds.makespan[0]) * 1e9))  # o + L + o + 7 G [ns]
    5542
    """
    if not isinstance(schedule, Schedule):
        raise TypeError(f"expected a jl.Schedule, got {type(schedule).__name__}")
    if isinstance(params, Message):
        params = LogGOPS.from_message(params)
    if not isinstance(params, LogGOPS):
        raise TypeError(f"params must be a jl.LogGOPS or a jl.Message, got "
                        f"{type(params).__name__}")
    if isinstance(runs, bool) or not isinstance(runs, int | np.integer) or runs < 1:
        raise ValueError(f"runs must be a positive integer, got {runs!r}")
    if detail not in (False, True, "operations", "events"):
        raise ValueError(f"detail must be False, 'operations' or 'events', got {detail!r}")
    as_events = detail == "events"
    if as_events and runs != 1:
        raise ValueError(f"detail='events' gives the event trace of one run: use runs=1, "
                         f"got runs={runs}")
    keep = detail is not False and not as_events
    if not (isinstance(resolution, float | int) and 0 < resolution <= 1e-6):
        raise ValueError(f"resolution must be a positive time of at most 1 µs, got "
                         f"{resolution!r}")
    prepared = _Prepared(schedule, params, float(resolution))
    p = schedule.num_ranks
    empty_delta = _EMPTY_I
    seed = None
    if noise is None:
        mode, trc_start, trc_dur = kernel.NO_NOISE, np.zeros(2, np.int64), np.zeros(2, np.int64)
        kind = "no noise"
    elif isinstance(noise, Trace):
        mode = kernel.TRACE
        longest = max(prepared.overhead, prepared.longest_calc)
        trc_start, trc_dur = _trace_arrays(noise, prepared.resolution, longest)
        kind = "LogGOPSim's --noise-trace rule"
    elif hasattr(noise, "sample"):
        mode = kernel.DELTA
        trc_start, trc_dur = np.zeros(2, np.int64), np.zeros(2, np.int64)
        kind = "one noise draw per CPU use (calc, send o, receive o)"
    else:
        raise TypeError(f"noise must be None, a jl.Trace or a noise law, got "
                        f"{type(noise).__name__}")
    if mode != kernel.NO_NOISE:
        seed = seed_from(rng) if (mode == kernel.DELTA or isinstance(start, str)) else None
    gen = as_generator(seed) if seed is not None else None
    ends = np.zeros((runs, p), dtype=np.int64)
    events = np.zeros(runs, dtype=np.int64)
    op_start = np.zeros((runs, prepared.n if keep else 0), dtype=np.int64)
    op_end = np.zeros_like(op_start)
    zeros = np.zeros(p, dtype=np.int64)
    for run in range(runs):
        rank_time, delta = zeros, empty_delta
        if mode == kernel.TRACE:
            rank_time = _rank_times(start, p, int(trc_start[-1]), prepared.resolution, gen)
        elif mode == kernel.DELTA:
            draws = np.asarray(noise.sample(2 * prepared.n, rng=gen), dtype=float)
            if np.any(draws < 0) or not np.all(np.isfinite(draws)):
                raise ValueError("the noise law drew a negative or non-finite δ")
            delta = np.rint(draws / prepared.resolution).astype(np.int64)
        if as_events:
            times, matched, ends[run] = prepared.times(mode, trc_start, trc_dur, rank_time,
                                                       delta)
            continue
        ends[run], events[run], first, last = prepared.run(mode, trc_start, trc_dur,
                                                           rank_time, delta, keep)
        if keep:
            op_start[run], op_end[run] = first, last
    res = prepared.resolution
    data = {
        "makespan": (("run",), ends.max(axis=1) * res,
                     {"units": "s", "long_name": "latest end of any rank"}),
        "end": (("run", "rank"), ends * res,
                {"units": "s", "long_name": "time each rank's CPU is last busy"}),
    }
    noiseless = ends.max(axis=1)[0] * res
    if mode != kernel.NO_NOISE:
        quiet, _, _, _ = prepared.run(kernel.NO_NOISE, np.zeros(2, np.int64),
                                      np.zeros(2, np.int64), zeros, empty_delta)
        noiseless = quiet.max() * res
        data["noiseless_makespan"] = ((), noiseless, {"units": "s",
                                                      "long_name": "makespan without noise"})
        data["slowdown"] = (("run",), ends.max(axis=1) * res / noiseless - 1.0
                            if noiseless > 0 else np.zeros(runs),
                            {"units": "1", "long_name": "makespan / noiseless − 1"})
    if keep:
        for name, values, text in (("op_start", op_start, "start"), ("op_end", op_end, "end")):
            data[name] = (("run", "operation"), np.where(values >= 0, values * res, np.nan),
                          {"units": "s", "long_name": f"{text} of each operation"})
    attrs = {
        "model": "jl.simulate_schedule (LogGOPSim semantics)",
        "noise": kind,
        "L": params.L, "o": params.o, "g": params.g, "G": params.G, "O": params.O,
        "S": -1 if params.S is None else params.S,
        "resolution": prepared.resolution,
        "operations": prepared.n,
        "events_per_run": int(events[0]),
        "matching": "exact (receiver, sender, tag) queues" if prepared.exact
        else "wildcards: per-host queues searched in posting order",
    }
    if mode == kernel.TRACE:
        attrs["start"] = start if isinstance(start, str) else "explicit offsets"
        attrs["trace_source"] = str(noise.attrs.get("source", "unknown"))
    if seed is not None:
        attrs["seed"] = seed
    if as_events:
        del attrs["events_per_run"]
        return events_from_operations(
            schedule, times[kernel.START], times[kernel.CPU_START], times[kernel.CPU_END],
            times[kernel.NOISE], matched=matched,
            overhead=prepared.overhead, latency=prepared.latency, tick=res,
            attrs={**attrs, "source": "jl.simulate_schedule",
                   "makespan": float(ends[0].max() * res),
                   "noiseless_makespan": float(noiseless)})
    return xr.Dataset(data, coords={"run": np.arange(runs), "rank": np.arange(p)},
                      attrs=attrs)
