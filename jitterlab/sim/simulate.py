"""Trace-driven simulation of bulk-synchronous phases (jitSim, De & Mann 2010, seed 000).

N tasks replay one jitter trace from different start points: each compute phase
uses the gaps between jitter events as compute time; then either every task waits
for the slowest (jitSim §3.4) or a reduce and broadcast run on a tree whose
messages are themselves hit by jitter (§3.6).
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np
import xarray as xr

from ..base.checks import check_integer, check_positive
from ..base.limits import check_allow_large, check_memory
from ..base.provenance import provenance_attrs
from ..base.rng import RngLike, seed_from
from ..base.threads import kernel_threads, map_on_threads
from ..traces.trace import Trace
from . import collective_kernels as _collkernels
from . import event_output as _simevents
from . import replay_kernels as _simkernels
from .barriers import TreeBarrier, tree_levels  # noqa: F401  (tree_levels: its old home)
from .collectives import RoundCollective
from .replay import draw_offsets, one_thread_or, start_offsets, task_counts, trace_table
from .replay_kernels import PARALLEL_MIN_TASKS

__all__ = ["TreeBarrier", "simulate", "draw_offsets", "tree_levels"]

_CHUNKS = 64  # fixed work split, so results never depend on the number of threads


def _run(table, offsets, work, phases, barrier, detail, ops=False):
    """Phase times, compute times, end times and operation ends of one configuration [s].

    A barrier model runs itself (its ``run`` method, with the operation ends ``[phase,
    task, op]`` when ``ops``); without one every task waits for the slowest.
    """
    if barrier is not None:
        return barrier.run(table, offsets, work, phases, detail, ops)
    n_tasks = offsets.size
    shape = (phases, n_tasks) if detail else (0, 0)
    order = np.argsort(offsets, kind="stable")
    sorted_compute = np.zeros(shape)
    with kernel_threads(n_tasks, PARALLEL_MIN_TASKS):
        kernel = one_thread_or(_simkernels.run_without_barrier,
                                _simkernels.run_without_barrier_one_thread)
        theta = kernel(table, offsets[order], work, phases, _CHUNKS, sorted_compute)
    if not detail:
        return theta, None, None, None
    compute = np.zeros(shape)
    compute[:, order] = sorted_compute
    end_times = np.repeat(np.cumsum(theta)[:, None], n_tasks, axis=1)
    return theta, compute, end_times, None


#: runs at several N spread over threads when the largest takes at most this share of a
#: thread's fair part of the work (task-phases): otherwise it would run alone for longer
_BALANCE = 1.1
#: numba threading layers on which kernels may be launched from several threads at once
_THREAD_SAFE_LAYERS = ("omp", "tbb")


def _spread(table, offsets_all, counts, work, phases, barrier):
    """θ per phase of each N, the runs spread over numba's threads, one thread per run, or
    None when they do not spread evenly (then each run takes the threads of a parallel
    kernel in turn) [trace unit].

    A run at one N needs a barrier per phase (or per tree level) between its threads; runs
    at different N need none. So the runs go to the threads whole (the largest first, each
    thread taking the next when done): no thread waits for another but at the end, and a
    thread that loses its CPU to another process holds up nobody (issue #20). Without a
    barrier or with a :class:`TreeBarrier` (whose one-thread kernels release the GIL).
    """
    threads = min(numba.get_num_threads(), counts.size)
    if (threads < 2 or counts.max() * threads > _BALANCE * counts.sum()
            or not (barrier is None or isinstance(barrier, TreeBarrier))):
        return None
    # the tree's set-up kernels open (one-thread) parallel regions, from several threads at
    # once (numba.get_num_threads above has started the threading layer)
    if barrier is not None and numba.threading_layer() not in _THREAD_SAFE_LAYERS:
        return None

    def run(count):
        offsets = np.ascontiguousarray(offsets_all[:count])
        return _run(table, offsets, work, phases, barrier, False)[0]

    largest_first = np.argsort(-counts, kind="stable")
    thetas = map_on_threads(run, counts[largest_first].tolist(), threads)
    out = [None] * counts.size
    for position, theta in zip(largest_first, thetas, strict=True):
        out[position] = theta
    return out


@functools.lru_cache(maxsize=256)
def _noiseless_phase_mean(n, work, phases, barrier) -> float:
    """Mean phase time of n tasks with a barrier model, without noise [s].

    Without noise the run settles after a phase or two: once every task's phase takes
    as long as in the phase before (to rounding), every later phase repeats it. So three
    phases are run, and the rest only if they have not settled. The result depends on
    nothing else, so it is kept for the next call with the same arguments (a sweep over
    seeds, traces or start modes at one N); the barrier models are frozen dataclasses.
    """
    probe = min(phases, 3)
    theta, change = barrier.noiseless_phases(n, work, probe)
    if probe == phases:
        return float(theta.mean())
    rounding = 64 * np.finfo(float).eps * float(theta.sum())  # the latest end of a task
    if not change <= rounding:
        return float(barrier.noiseless_phases(n, work, phases)[0].mean())
    return float((theta.sum() + (phases - probe) * theta[-1]) / phases)


#: bytes per task of a run: start offsets, their order and sorted copy, the kernels' state
_BYTES_PER_TASK = 64
#: bytes per task and phase with detail=True: compute, end, previous end, wait and temporaries
_BYTES_PER_TASK_PHASE = 48


def _check_size(counts, phases, detail, events, barrier, allow_large) -> None:
    """Refuse, before allocating, a run that needs more memory than allowed (O(1))."""
    check_allow_large(allow_large)
    n = max(counts.tolist())
    estimate = float(n) * _BYTES_PER_TASK + 8.0 * phases * (counts.size + 1)
    if detail or events:
        estimate += float(n) * phases * _BYTES_PER_TASK_PHASE
    if events:  # operation ends [phase, task, op], then the event table (about 5 columns)
        if isinstance(barrier, TreeBarrier):
            ops = 2 * barrier.fanout + 3
        elif barrier is None:
            ops = 1
        else:
            ops = 1 + 2 * math.ceil(math.log2(max(n, 2)))
        estimate += float(n) * phases * ops * 8 * 6
    if detail or events:
        check_memory(estimate, lambda: f"jl.simulate with n={n}, phases={phases}, "
                     f"detail={detail!r}", "a smaller n or fewer phases, or detail=False",
                     allow_large)
    else:
        check_memory(estimate, lambda: f"jl.simulate with n={n}, phases={phases}",
                     "a smaller n or fewer phases", allow_large)


def simulate(trace, n=None, work: float | None = None, phases: int = 1, start="random",
             barrier: TreeBarrier | None = None, rng: RngLike = None,
             detail: bool = False, *, n_tasks=None, allow_large: bool = False) -> xr.Dataset:
    """Simulate N tasks that replay one jitter trace, phase after phase.

    Parameters
    ----------
    trace : jitterlab.Trace
        The jitter trace; it wraps around.
    n : int or sequence of int
        Numbers of tasks N; a sequence adds the dimension ``n`` (the tasks of a
        smaller N are the first tasks of a larger one). [-]
    work : float
        Compute per task and phase w. [s]
    phases : int
        Number of compute phases. [-]
    start : {"random", "random_row", "synchronized", "coscheduled"} or sequence of int
        "random": each task at a uniformly random *time* of the trace (inside a jitter
        it first waits out the remainder); "random_row": each task at a uniformly
        random *row*, computing from the start of its gap, as jitSim does (every row
        is equally likely however long its gap, and no task starts inside a jitter,
        so on a short trace the two differ); "synchronized": all at one random time;
        "coscheduled": at random starts of the co-scheduler's high-priority windows
        (trace attribute ``window`` [s], optional ``window_offset`` [s]); or one trace
        row per task (the task starts computing at the start of that row's gap).
    barrier : TreeBarrier, Dissemination or RecursiveDoubling, optional
        None: every task waits for the slowest after each phase, absorbing the jitter
        it meets while waiting (jitSim §3.4). A :class:`TreeBarrier`: reduce and
        broadcast whose sends and receives can be hit by jitter (§3.6). A
        :class:`jitterlab.Dissemination` or :class:`jitterlab.RecursiveDoubling`: rounds
        of send-then-receive with the same message costs and jitter rules; each task
        starts its next phase when its own last round is done.
    rng : int or numpy.random.Generator, optional
        Seed of the start points; results do not depend on the number of threads.
    detail : bool or "events"
        True: also return ``compute_time`` and ``wait_time`` per phase and task (one N
        only). "events": return instead the run's :class:`jitterlab.EventTrace` (one N
        only): per task and phase a compute interval whose ``noise_combined`` is the
        jitter it met, and a collective interval (tag = phase) to the end of the phase;
        attrs ``makespan`` and ``noiseless_makespan`` [s] (see
        :func:`jitterlab.estimate.accumulated_noise`).
    n_tasks : int or sequence of int, optional
        Another name for ``n``, kept for code written against the first API.
    allow_large : bool
        Run even when the memory the run needs (estimated before anything is allocated:
        about 64 B per task, 8 B per phase, and with ``detail`` 48 B per task and phase)
        exceeds half of the memory available; without it such a call raises
        :class:`jitterlab.limits.ResourceLimitError` naming the figure. The environment
        variable ``JITTERLAB_ALLOW_LARGE=1`` does the same for every call.

    Returns
    -------
    xarray.Dataset
        ``phase_time`` (dims ``n`` if several N, ``phase``) [s]; ``slowdown`` = mean
        phase time / noiseless phase time − 1 [-]; ``coverage``, the fraction of the
        trace each task traversed (elapsed time / trace length; above 1 the trace
        wrapped) [-]; with ``detail``
        also ``compute_time`` and ``wait_time`` (dims ``phase``, ``task``) [s].

    References
    ----------
    .. [1] P. De, V. Mann, "jitSim: A Simulator for Predicting Scalability of Parallel
       Applications in Presence of OS Jitter", Euro-Par 2010 workshops (seed 000).

    Examples
    --------
    >>> import jitterlab as jl
    >>> trace = jl.Trace(jitter=[1e-6], gap=[99e-6])
    >>> ds = jl.simulate(trace, n=1000, work=50e-6, phases=4, rng=1)
    >>> round(float(ds["slowdown"]), 3)  # someone always meets the detour: 1 µs / 50 µs
    0.02
    """
    if not isinstance(trace, Trace):
        raise TypeError(f"trace must be a jitterlab.Trace (see jl.Trace, jl.read_trace), "
                        f"got {type(trace).__name__}")
    if n_tasks is not None:
        if n is not None:
            raise TypeError("give the number of tasks once: n or its old name n_tasks")
        n = n_tasks
    if n is None:
        raise TypeError("simulate() needs n, the number of tasks N")
    if work is None:
        raise TypeError("simulate() needs work, the compute per task and phase [s]")
    table = trace_table(trace)
    counts = task_counts(n)
    work = check_positive("work", work)
    phases = check_integer("phases", phases, 1)
    if barrier is not None and not isinstance(barrier, TreeBarrier | RoundCollective):
        raise TypeError(f"barrier must be None, a jl.TreeBarrier, jl.Dissemination or "
                        f"jl.RecursiveDoubling, got {type(barrier).__name__}")
    events = isinstance(detail, str) and detail == "events"
    if not events and not isinstance(detail, bool | np.bool_):
        raise TypeError(f"detail must be True, False or 'events', got {detail!r}")
    if (events or detail) and counts.size > 1:
        raise ValueError(f"detail={detail!r} needs a single n")
    _check_size(counts, phases, detail, events, barrier, allow_large)
    if events:
        detail = True
        if (isinstance(barrier, TreeBarrier) and barrier.cores_per_node
                and barrier.intra_node_latency not in (None, barrier.latency)):
            raise ValueError("detail='events' needs one wire latency (an event trace has "
                             "one): give the TreeBarrier no intra_node_latency")
    seed = seed_from(rng) if isinstance(start, str) else None
    offsets_all = start_offsets(trace, table, int(counts.max()), start, seed)
    period = float(table[-1, _simkernels.START])

    phase_times, slowdowns, coverages = [], [], []
    detail_vars = {}
    spread = None if detail else _spread(table, offsets_all, counts, work, phases, barrier)
    with kernel_threads():  # the free CPUs counted once for all the N
        for index, count in enumerate(counts):
            if spread is not None:
                theta = spread[index]
            else:
                offsets = np.ascontiguousarray(offsets_all[:count])
                theta, compute, end_times, op_ends = _run(
                    table, offsets, work, phases, barrier, detail,
                    ops=events and barrier is not None)
            if barrier is None:  # without jitter every phase takes exactly w
                reference = work
            else:
                reference = _noiseless_phase_mean(int(count), work, phases, barrier)
            phase_times.append(theta)
            slowdowns.append(theta.mean() / reference - 1.0)
            coverages.append(theta.sum() / period)
            if detail:
                previous_end = np.vstack([np.zeros((1, count)), end_times[:-1]])
                wait = (end_times - previous_end) - compute
                detail_vars = {
                    "compute_time": (("phase", "task"), compute,
                                     {"units": "s", "long_name": "compute time incl. jitter"}),
                    "wait_time": (("phase", "task"), wait,
                                  {"units": "s", "long_name": "time at the barrier"})}

    single = np.ndim(n) == 0
    phase_coord = np.arange(phases)
    if single:
        data = {"phase_time": ("phase", phase_times[0], {"units": "s",
                                                         "long_name": "phase time θ"}),
                "slowdown": ((), slowdowns[0], {"units": "1",
                                                "long_name": "mean θ / noiseless θ − 1"}),
                "coverage": ((), coverages[0], {"units": "1",
                                                "long_name": "fraction of the trace traversed"}),
                **detail_vars}
        coords = {"phase": phase_coord, "n": int(counts[0])}
    else:
        data = {"phase_time": (("n", "phase"), np.array(phase_times),
                               {"units": "s", "long_name": "phase time θ"}),
                "slowdown": ("n", np.array(slowdowns),
                             {"units": "1", "long_name": "mean θ / noiseless θ − 1"}),
                "coverage": ("n", np.array(coverages),
                             {"units": "1", "long_name": "fraction of the trace traversed"})}
        coords = {"phase": phase_coord, "n": ("n", counts, {"long_name": "number of tasks N"})}
    attrs = {"method": "trace-driven simulation (jitSim)",
             "work": work, "phases": phases,
             "start": start if isinstance(start, str) else "explicit rows",
             "barrier": barrier.describe() if barrier is not None else "wait for the slowest",
             "trace_source": str(getattr(trace, "attrs", {}).get("source", "unknown")),
             "trace_events": table.shape[0] - 1, "trace_duration": period}
    if seed is not None:
        attrs["seed"] = seed
    if events:
        return _event_trace(barrier, detail_vars["compute_time"][1], end_times, op_ends, work,
                            {**attrs, "n": int(counts[0]), **provenance_attrs(),
                             "source": "jl.simulate",
                             "makespan": float(end_times[-1].max()),
                             "noiseless_makespan": float(reference) * phases})
    return xr.Dataset(data, coords=coords, attrs={**attrs, **provenance_attrs()})


def _event_trace(barrier, compute, end_times, op_ends, work, attrs):
    """The event trace of one simulated run (``detail="events"``), see
    :mod:`jitterlab._simevents`; attrs ``makespan`` and ``noiseless_makespan`` (the same
    run on a trace without jitter) give the true cost of the noise.
    """
    if barrier is None:
        return _simevents.barrier_free_events(compute, end_times, work, **attrs)
    if isinstance(barrier, RoundCollective):
        message = barrier.message
        n = compute.shape[1]
        partners = np.array([[_collkernels.partner(barrier._kind, n, k, task)
                              for task in range(n)] for k in range(barrier.rounds(n))],
                            dtype=np.int64).reshape(-1, n, 2)
        return _simevents.round_events(op_ends, work, partners, message.send, message.recv,
                                       message.wire_time(), **attrs)
    return _simevents.tree_events(op_ends, work, int(barrier.fanout), float(barrier.send),
                                  float(barrier.recv), float(barrier.latency), **attrs)
