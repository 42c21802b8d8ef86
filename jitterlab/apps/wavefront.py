"""A pipelined 2-D wavefront code (Sweep3D, Chimaera) under noise: seed 002's application.

Ranks form a px × py grid (rank = j·px + i) over the x-y plane of the problem; each
sweep starts at one corner of the grid and crosses it diagonally, pipelined in
``blocks`` (k-planes × angles): a rank receives its upstream x and y faces, computes
a block, and sends its downstream faces, so the downstream ranks start one block
behind (Hoisie et al.; Mudalige, Vernon & Jarvis; Hammond et al., seed 002).

Three ways side by side, as for the barrier loop: :func:`wavefront_predict` (the
noiseless pipeline in closed form, with bounds on the expected time under a noise
law), and :func:`wavefront_simulate` with ``method="montecarlo"`` (a δ from a noise
law added to every block) or ``method="trace"`` (each rank replays a jitter trace
from its own start, compute and message CPU time alike, with jitSim's rules).

The workload is :mod:`~jitterlab.apps.wavefront_workload`'s, the pipeline model
:mod:`~jitterlab.apps.wavefront_model`'s; this module simulates, and re-exports both.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import xarray as xr

from ..base.checks import check_integer
from ..base.limits import check_allow_large, check_duration, check_memory
from ..base.rng import RngLike, as_generator, seed_from
from ..noise import NoiseModel
from ..sim import event_output as _simevents
from ..sim.replay import start_offsets, trace_table
from ..traces.trace import Trace
from . import wavefront_kernels as _wavekernels
from .wavefront_model import (
    block_noise_law,
    noiseless_pipeline,
    noiseless_time,
    result_attrs,
    result_variables,
    wavefront_predict,
)
from .wavefront_workload import (
    SWEEP_ORDERS,
    Wavefront,
    check_workload,
    size_text,
    square_grid,
    sweep_corners,
)

__all__ = ["Wavefront", "wavefront_predict", "wavefront_simulate", "noiseless_time",
           "square_grid", "SWEEP_ORDERS"]

_DELTA_BUDGET = 1 << 22  # noise draws held at once by the Monte Carlo (32 MiB)

#: the names of ``start`` (:func:`jitterlab.simulate`'s)
START_NAMES = ("random", "random_row", "synchronized", "coscheduled")


def _check_start(start, n_ranks: int, law: bool):
    """``start`` if it is a known name or one integer row per rank; with a noise law
    (``law``) only the default "random" (a law has no start points to choose)."""
    if isinstance(start, str):
        if start not in START_NAMES:
            raise ValueError(f"start must be one of {list(START_NAMES)} or start rows (one "
                             f"integer per rank), got {start!r}")
    else:
        rows = np.asarray(start) if isinstance(start, Sequence | np.ndarray) else None
        if (rows is None or rows.ndim != 1 or not np.issubdtype(rows.dtype, np.integer)
                or isinstance(start, str)):
            raise ValueError(f"start must be one of {list(START_NAMES)} or start rows (one "
                             f"integer per rank), got {start!r}")
        if rows.size != n_ranks or (rows.size and rows.min() < 0):
            raise ValueError(f"start: explicit start rows must be {n_ranks} integers >= 0, "
                             f"one per rank, got {rows.size} values (min "
                             f"{rows.min() if rows.size else None})")
    if law and not (isinstance(start, str) and start == "random"):
        raise ValueError(f"start={start!r} has no effect with a noise law (a δ is drawn "
                         f"independently for every rank and block): give a jl.Trace with "
                         f"method='trace' to choose start points, or leave start='random'")
    return start


# Memory per rank (and pass), measured as the peak resident growth of runs of 10^5-10^6
# ranks (benchmarks of issue #19): in order 86 B/rank, on arrival 594, the model 31,
# detail="events" 1.6 kB per rank and pass (the event table and its checks).
#: bytes per rank of a simulation in order: state (64), offsets, finish, temporaries
_BYTES_PER_RANK = 96
#: bytes per rank of an event-driven run (progress="on_arrival"): event heap and records
_BYTES_PER_RANK_ON_ARRIVAL = 600
#: bytes per rank and pass with detail="events": operation ends, then the event table
_BYTES_PER_RANK_PASS_EVENTS = 1600

def _check_simulation_size(workload, runs, detail, events, law, on_arrival, allow_large):
    """Refuse, before allocating, a simulation that needs more memory than allowed."""
    n = float(workload.n)
    passes = float(workload.iterations) * len(sweep_corners(workload.sweeps)) * workload.blocks
    if on_arrival:
        estimate = n * _BYTES_PER_RANK_ON_ARRIVAL + 8.0 * passes
    else:
        estimate = n * _BYTES_PER_RANK
        if law:  # the chunk of draws, and the law's temporaries
            estimate += 16.0 * min(passes * n, max(float(_DELTA_BUDGET), n))
        if detail:
            estimate += 8.0 * runs * passes * n
        if events:
            estimate += _BYTES_PER_RANK_PASS_EVENTS * passes * n
    estimate += 16.0 * runs * (n + workload.iterations)
    change = "a smaller grid (px, py), fewer blocks, sweeps, iterations or runs"
    if detail or events:
        change += ", or detail=False"
    check_memory(estimate, lambda: f"jl.apps.wavefront_simulate of {size_text(workload)}, "
                 f"runs={runs}, detail={detail or ('events' if events else False)!r}",
                 change, allow_large)


#: an event-driven run with more rank-blocks than this (about 2 s at the 0.1 µs each that
#: the kernel takes on a quiet machine without noise, 64 × 64 ranks) is timed on a small
#: grid first [-]
_ON_ARRIVAL_TIMED_ABOVE = 2e7
#: the small grid that times the event-driven kernel: 16 × 16 ranks, 4 blocks, 4 sweeps
_ON_ARRIVAL_PROBE = (16, 16, 4)


def _on_arrival_seconds_per_rank_block(workload) -> float:
    """Time of the event-driven kernel per rank and block, on this machine now [s]: the
    best of two noiseless runs of a 16 × 16 grid (about 1 ms each on a quiet machine)."""
    import time

    px, py, blocks = _ON_ARRIVAL_PROBE
    probe = Wavefront(px=px, py=py, blocks=blocks, work=workload.work,
                      message=workload.message)
    best = math.inf
    for _ in range(2):
        started = time.perf_counter()
        _simulate_on_arrival(probe, None, "random", None, 1)
        best = min(best, time.perf_counter() - started)
    return best / (px * py * blocks * len(sweep_corners(probe.sweeps)))


def _check_on_arrival_time(workload, runs, noisy, allow_large):
    """Refuse an event-driven run that would take over an hour (a huge grid ran silently
    for hours): its rank-blocks times the kernel's time per rank-block, timed now."""
    passes = float(workload.iterations) * len(sweep_corners(workload.sweeps)) * workload.blocks
    rank_blocks = float(workload.n) * passes * (runs + (1 if noisy else 0))
    if rank_blocks <= _ON_ARRIVAL_TIMED_ABOVE:
        return
    per_rank_block = _on_arrival_seconds_per_rank_block(workload)
    check_duration(
        rank_blocks * per_rank_block,
        lambda: (f"jl.apps.wavefront_simulate(progress='on_arrival') of "
                 f"{size_text(workload)}, runs={runs}"
                 f"{' and the noiseless run' if noisy else ''} ({rank_blocks:.3g} rank-blocks "
                 f"at {per_rank_block * 1e6:.3g} µs each, timed on a 16 × 16 grid now)"),
        "a smaller grid (px, py), fewer blocks, sweeps, iterations or runs, or "
        "progress='in_order' (the block recurrence, much faster)", allow_large)


def wavefront_simulate(workload: Wavefront, noise=None, start="random", rng: RngLike = None,
                       method: str | None = None, runs: int = 1,
                       progress: str = "in_order", detail: bool = False, *,
                       allow_large: bool = False) -> xr.Dataset:
    """Simulate a wavefront workload block by block under noise.

    Parameters
    ----------
    workload : Wavefront
        The workload.
    noise : jitterlab.Trace or jitterlab.noise law, optional
        None: no noise. A Trace: each rank replays it from its own start (``start``);
        every CPU time (compute, send, receive) meets its jitter, as in
        :func:`jitterlab.simulate`. A law: a δ drawn independently for every rank and
        block is added to the block's compute.
    start : {"random", "random_row", "synchronized", "coscheduled"} or sequence of int
        Start points of the ranks in the trace, as for :func:`jitterlab.simulate`
        (trace-driven runs). Checked whatever the noise; with a noise law only "random"
        (its draws have no start points; anything else is a ValueError). Recorded in the
        attribute ``start`` only when a trace is replayed.
    rng : int or numpy.random.Generator, optional
        Seed of the start points or of the δ draws.
    method : {"trace", "montecarlo"}, optional
        Default: "trace" for a Trace, "montecarlo" for a law. "montecarlo" with a
        Trace uses its law for one block (:func:`jitterlab.noise.from_trace`).
    runs : int
        Independent repetitions (dimension ``run``). [-]
    progress : {"in_order", "on_arrival"}
        When a rank's CPU takes an arrived message (the receive's CPU time).
        "in_order": when the program reaches the receive, the block recurrence of
        :func:`wavefront_predict`. "on_arrival": as soon as the CPU is free after the
        message arrives, even in the middle of another block (LogGOPSim's rule; a
        discrete-event run, slower; no all-reduce, no noise law).
    detail : bool or "events"
        True: also return ``block_end`` (dims ``run``, ``pass``, ``rank``): when each
        rank is done with each block (in order only; memory ranks × blocks × sweeps ×
        iterations, for small workloads). "events": return instead the run's
        :class:`jitterlab.EventTrace` (one run, in order, the same wire time in x and y):
        per rank and block its receives, compute and sends with the noise each met,
        and with the all-reduce a collective interval per iteration; attrs
        ``makespan`` and ``noiseless_makespan`` [s] (see
        :func:`jitterlab.compare.estimate.accumulated_noise`).
    allow_large : bool
        Run even when the estimated memory exceeds half of the available memory (about
        100 B per rank in order, 600 B per rank on arrival, 8 B per rank, block, sweep,
        iteration and run with ``detail=True``, 1.6 kB per rank and pass with "events"),
        or, with ``progress="on_arrival"``, when the run would take over an hour
        (:data:`jitterlab.base.limits.MAX_PLANNED_SECONDS`; a run of over 2·10⁷ rank-blocks is
        planned from the kernel's time on a 16 × 16 grid, timed first); without it such a
        call raises :class:`jitterlab.base.limits.ResourceLimitError` naming the figure and
        the argument to change (or set ``JITTERLAB_ALLOW_LARGE=1``).

    Returns
    -------
    xarray.Dataset
        ``total_time`` (dim ``run``), ``iteration_time`` (``run``, ``iteration``),
        ``finish`` (``run``, ``rank``) [s]; ``noiseless_time`` [s] and ``slowdown`` =
        total / noiseless − 1 (``run``) [-].

    Examples
    --------
    >>> import jitterlab as jl
    >>> m = jl.Message(send=1e-6, recv=1e-6, latency=5e-6)
    >>> wf = jl.apps.Wavefront(4, 16, blocks=10, work=100e-6, iterations=2, message=m)
    >>> ds = jl.apps.wavefront_simulate(wf, progress="on_arrival")
    >>> round(float(ds["total_time"][0]) * 1e3, 6)  # [ms], as LogGOPSim gives it
    17.46
    """
    workload = check_workload(workload)
    runs = check_integer("runs", runs, 1)
    check_allow_large(allow_large)
    if workload.has_intra_node_wire:
        raise ValueError(f"wavefront_simulate gives every face message the inter-node wire "
                         f"time; this workload's intra-node messages differ "
                         f"({workload.message.describe()}, cores_per_node="
                         f"{workload.cores_per_node}): use wavefront_predict, or "
                         f"cores_per_node=1")
    if method is None:
        method = "trace" if isinstance(noise, Trace) else "montecarlo"
    if method not in ("trace", "montecarlo"):
        raise ValueError(f"method must be 'trace' or 'montecarlo', got {method!r}")
    if method == "trace" and noise is not None and not isinstance(noise, Trace):
        raise TypeError(f"method='trace' needs a jl.Trace as noise, got "
                        f"{type(noise).__name__} (use method='montecarlo' for a law)")
    if noise is not None and not isinstance(noise, Trace | NoiseModel):
        raise TypeError(f"noise must be None, a jl.noise law or a jl.Trace, got "
                        f"{type(noise).__name__}")
    law = noise is not None and method == "montecarlo"
    start = _check_start(start, workload.n, law)
    if progress not in ("in_order", "on_arrival"):
        raise ValueError(f"progress must be 'in_order' or 'on_arrival', got {progress!r}")
    if progress == "on_arrival":
        if detail:
            raise ValueError("detail=True needs progress='in_order'")
        if method == "montecarlo" and noise is not None:
            raise ValueError("progress='on_arrival' takes noise=None or a jl.Trace, not a "
                             "noise law (its blocks meet noise in event order)")
        if workload.allreduce:
            raise ValueError("progress='on_arrival' does not model the all-reduce: use "
                             "allreduce=False or progress='in_order'")
        _check_simulation_size(workload, runs, False, False, False, True, allow_large)
        _check_on_arrival_time(workload, runs, noise is not None, allow_large)
        return _simulate_on_arrival(workload, noise, start, rng, runs)
    events = isinstance(detail, str) and detail == "events"
    if not events and not isinstance(detail, bool | np.bool_):
        raise TypeError(f"detail must be True, False or 'events', got {detail!r}")
    args = workload._kernel_args()
    n_ranks, iterations = workload.n, workload.iterations
    n_passes = iterations * args[2].shape[0] * workload.blocks
    if events:
        if runs != 1:
            raise ValueError("detail='events' needs runs=1")
        if args[7] != args[8]:
            raise ValueError(f"detail='events' needs the same wire time in x and y (an "
                             f"event trace has one latency), got {args[7]!r} and "
                             f"{args[8]!r} s")
        detail = False
    _check_simulation_size(workload, runs, bool(detail), events, law, False, allow_large)
    op_ends = np.full((n_passes, n_ranks, 5), np.nan) if events else _NO_OPS
    block_end = np.zeros((runs, n_passes, n_ranks)) if detail else None
    noiseless_end = noiseless_pipeline(workload)[1][-1]
    finishes = np.zeros((runs, n_ranks))
    ends = np.zeros((runs, iterations))
    empty_table = np.zeros((1, 3))
    seed = None
    if noise is None:
        for run in range(runs):
            state = _run_passes(args, n_passes, _wavekernels.NO_NOISE, empty_table,
                                np.zeros(n_ranks), ends[run],
                                None if block_end is None else block_end[run], op_ends)
            finishes[run] = state[:, 0]
        kind = "no noise"
    elif method == "trace":
        table = trace_table(noise)
        seed = seed_from(rng) if isinstance(start, str) else None
        gen = as_generator(seed)
        for run in range(runs):
            offsets = np.ascontiguousarray(start_offsets(noise, table, n_ranks, start, gen))
            state = _run_passes(args, n_passes, _wavekernels.TRACE, table, offsets, ends[run],
                                None if block_end is None else block_end[run], op_ends)
            finishes[run] = state[:, 0]
        kind = "trace-driven simulation (jitSim rules for compute and message CPU time)"
    else:
        law = block_noise_law(noise, workload.work)
        seed = seed_from(rng)
        gen = as_generator(seed)
        chunk = max(1, _DELTA_BUDGET // n_ranks)
        for run in range(runs):
            state = _wavekernels.new_state(n_ranks)
            delta = None
            for first in range(0, n_passes, chunk):
                count = min(chunk, n_passes - first)
                del delta  # the previous chunk goes before the next is drawn
                delta = np.ascontiguousarray(law.sample((count, n_ranks), rng=gen), dtype=float)
                if block_end is None:
                    _wavekernels.run_passes(state, first, count, *args, _wavekernels.DELTA,
                                            empty_table, np.zeros(n_ranks), delta, ends[run],
                                            op_ends)
                    continue
                for k in range(count):  # one pass at a time, keeping each rank's clock
                    _wavekernels.run_passes(state, first + k, 1, *args, _wavekernels.DELTA,
                                            empty_table, np.zeros(n_ranks), delta[k:k + 1],
                                            ends[run], op_ends)
                    block_end[run, first + k] = state[:, 0]
            finishes[run] = state[:, 0]
        kind = "distribution-driven Monte Carlo of the block recurrence"
    ds = _labelled(workload, ends, finishes, noiseless_end, kind, noise,
                   start if method == "trace" else None, seed)
    if events:
        px, _, corners, blocks, work, send, recv, wire, _, _ = args
        return _simevents.wavefront_events(
            op_ends, ends[0], corners, px, blocks, (work, send, recv), wire,
            workload.allreduce, **ds.attrs, source="jl.apps.wavefront_simulate",
            makespan=float(ends[0, -1]), noiseless_makespan=float(noiseless_end))
    if block_end is not None:
        sweeps = len(workload.corners)
        passes = np.arange(n_passes)
        ds = ds.assign(block_end=(("run", "pass", "rank"), block_end,
                                  {"units": "s", "long_name": "time each rank is done with "
                                   "the pass's block"}))
        ds = ds.assign_coords({"pass": passes,
                               "pass_iteration": ("pass", passes // (sweeps * workload.blocks)),
                               "pass_sweep": ("pass", (passes // workload.blocks) % sweeps),
                               "pass_block": ("pass", passes % workload.blocks)})
    return ds


_SCALE = 10**12  # the event-driven run counts in whole picoseconds
_NO_OPS = np.zeros((0, 0, 0))  # no record of each step's end


def _in_units(value: float) -> int:
    """``value`` [s] in whole picoseconds."""
    return int(round(value * _SCALE))


def _simulate_on_arrival(workload, noise, start, rng, runs):
    px, py, corners, blocks, work, send, recv, wire_x, wire_y, _ = workload._kernel_args()
    costs = [_in_units(value) for value in (work, send, recv, wire_x, wire_y)]
    n_ranks, iterations = workload.n, workload.iterations
    finishes = np.zeros((runs, n_ranks))
    ends = np.zeros((runs, iterations))
    seed = None
    if noise is None:
        table, mode = np.zeros((1, 3)), _wavekernels.NO_NOISE
        offsets_of = lambda: np.zeros(n_ranks)  # noqa: E731
    else:
        table = trace_table(noise)
        mode = _wavekernels.TRACE
        seed = seed_from(rng) if isinstance(start, str) else None
        gen = as_generator(seed)
        offsets_of = lambda: np.ascontiguousarray(  # noqa: E731
            start_offsets(noise, table, n_ranks, start, gen))
    finish, end = np.zeros(n_ranks, dtype=np.int64), np.zeros(iterations, dtype=np.int64)
    for run in range(runs):
        _wavekernels.run_on_arrival(px, py, corners, blocks, iterations, *costs, mode, table,
                                    offsets_of(), _SCALE, finish, end)
        finishes[run], ends[run] = finish / _SCALE, end / _SCALE
    if noise is not None:
        _wavekernels.run_on_arrival(px, py, corners, blocks, iterations, *costs,
                                    _wavekernels.NO_NOISE, np.zeros((1, 3)), np.zeros(n_ranks),
                                    _SCALE, finish, end)
    noiseless_end = end[-1] / _SCALE if noise is not None else ends[0, -1]
    kind = ("discrete-event simulation, messages taken on arrival (LogGOPSim's rule)"
            + ("" if noise is None else ", jitSim rules for CPU time on the trace"))
    return _labelled(workload, ends, finishes, noiseless_end, kind, noise, start, seed)


def _labelled(workload, ends, finishes, noiseless_end, kind, noise, start, seed):
    data = result_variables(ends, finishes, dims=("run",))
    data["noiseless_time"] = ((), noiseless_end, {"units": "s",
                                                  "long_name": "total time without noise"})
    data["slowdown"] = (("run",), ends[:, -1] / noiseless_end - 1.0,
                        {"units": "1", "long_name": "total time / noiseless time − 1"})
    attrs = result_attrs(workload, kind)
    if noise is not None and start is not None:  # a replayed trace: where each rank began
        attrs["start"] = start if isinstance(start, str) else "explicit rows"
        if isinstance(noise, Trace):
            attrs["trace_source"] = str(noise.attrs.get("source", "unknown"))
    if seed is not None:
        attrs["seed"] = seed
    runs, iterations = ends.shape
    return xr.Dataset(data, coords={"run": np.arange(runs), "iteration": np.arange(iterations),
                                    "rank": np.arange(workload.n)}, attrs=attrs)


def _run_passes(args, n_passes, mode, table, offsets, iteration_end, block_end=None,
                op_ends=_NO_OPS):
    """All passes on a fresh state; with ``block_end``, one at a time, keeping the clocks;
    ``op_ends`` ``[pass, rank, step]`` is filled when not empty."""
    state = _wavekernels.new_state(offsets.size)
    empty = np.zeros((0, 0))
    if block_end is None:
        return _wavekernels.run_passes(state, 0, n_passes, *args, mode, table, offsets, empty,
                                       iteration_end, op_ends)
    for g in range(n_passes):
        _wavekernels.run_passes(state, g, 1, *args, mode, table, offsets, empty, iteration_end,
                                op_ends)
        block_end[g] = state[:, 0]
    return state
