"""Benchmark of trace-driven simulation: task-phases per second.

Prints, from one run on this machine, task-phases/s of ``jl.simulate`` at N = 10^6
tasks on a 10^6-event trace for work = 1 ms and 100 ms, with and without a
``TreeBarrier``, next to two baselines measured in the same run:

* ``jitterlab.testing.simulate_reference``, the event-by-event walk of jitSim §3.4
  in plain Python (on fewer tasks; its cost per task-phase does not depend on N);
* the same event walk compiled with numba, so that the ratio shows what sorting the
  tasks and galloping searches gain over walking, not just over the interpreter.

With ``TreeBarrier`` it also times, in the same run, ``jl.simulate`` with the tree
kernel as it was before issue #13 (a frozen copy below, ``_old_run_tree_barrier``:
tasks in index order, an atomic reference count on the trace at every search), checks
that both give the same phase times bit for bit and prints the ratio; then, in a fresh
process, 10^7 tasks with the tree barrier: wall time and peak resident memory.

Targets: >= 10 M task-phases/s without barrier at work = 100 ms; >= 20x the
reference; >= 10 M task-phases/s with TreeBarrier at N = E = 10^6 (issue #13; best of
three calls, which take the noiseless reference from ``jl.simulate``'s cache; the first
call, which computes it, is printed too, and as the median of five fresh processes: issue
#20's >= 10 M/s);
10^7 tasks with TreeBarrier in < 10 s and < 4 GB. The machine has 2 cores that other
jobs may share: the load average is printed, and times are the best of a few runs.
Run: ``python benchmarks/bench_simulate.py [--quick] [--first-only]``.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numba
import numpy as np

import jitterlab as jl
from jitterlab.sim import replay_kernels as _simkernels
from jitterlab.sim.simulate import PARALLEL_MIN_TASKS, _noiseless_phase_mean
from jitterlab.sim.trace_walk import COMPUTED, JITTER, START, TIE, prefetch_row
from jitterlab.testing import simulate_reference, walk_from_row
from jitterlab.threads import free_cpus

_walk_from_row = numba.njit(cache=True)(walk_from_row)


@numba.njit(cache=True)
def _walk_phases(jitter, gap, offsets, work, phases):
    """Compiled jitSim walk: binary search for the start row, then row after row."""
    period = jitter.sum() + gap.sum()
    row_starts = np.concatenate((np.zeros(1), np.cumsum(jitter + gap)))
    elapsed = 0.0
    for _ in range(phases):
        theta = 0.0
        for x0 in offsets:
            x = x0 + elapsed
            cycle = np.floor(x / period)
            row = np.searchsorted(row_starts, x - cycle * period, side="right") - 1
            finish = _walk_from_row(jitter, gap, row, cycle * period + row_starts[row], x, work)
            theta = max(theta, finish - x)
        elapsed += theta
    return elapsed


# --------------------------------------------------------------------------------------
# The tree kernel before issue #13 (jitterlab/_simkernels.py at commit 9a573c1), frozen
# here so that every run measures the new kernel against it and tests can compare
# results bit for bit (tests/test_kernels.py). Not cached: it compiles in each run.
# --------------------------------------------------------------------------------------
_PREFETCH_AHEAD = 8


@numba.njit(inline="always")
def _old_precedes(a, b, strict):
    return a < b if strict else a <= b


@numba.njit(inline="always")
def _old_last_before(table, col, value, hint, top, strict):
    """Largest i in [0, top] with table[i, col] <= value (< value if ``strict``).

    Needs the condition to hold at i = 0. Gallops from ``hint``: cheap when the
    answer is near it.
    """
    i = hint if 0 <= hint <= top else 0
    if _old_precedes(table[i, col], value, strict):
        lo, step, hi = i, 1, i + 1
        while hi <= top and _old_precedes(table[hi, col], value, strict):
            lo = hi
            step *= 2
            hi = lo + step
        if hi > top:
            hi = top + 1
    else:
        hi, step, lo = i, 1, i - 1
        while lo > 0 and not _old_precedes(table[lo, col], value, strict):
            hi = lo
            step *= 2
            lo = hi - step
        if lo < 0:
            lo = 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _old_precedes(table[mid, col], value, strict):
            lo = mid
        else:
            hi = mid
    return lo


@numba.njit(cache=True)
def _old_advance(table, x, cpu, hint, finish_hint):
    """Consume ``cpu`` of compute from trace time x; jitter met on the way adds its length.

    ``hint`` and ``finish_hint`` are rows near x and near the finish: the searches
    gallop from them. Returns (finish time, row of x, row of the finish). The finish
    is the earliest time at which the compute is done, so a jitter starting at that instant is not
    counted; a start inside a jitter first waits out its remainder.
    """
    n_rows = table.shape[0] - 1
    period = table[n_rows, START]
    total_gap = table[n_rows, COMPUTED]
    cycle = math.floor(x / period)
    offset = x - cycle * period
    if offset >= period:
        offset -= period
        cycle += 1
    elif offset < 0.0:
        offset += period
        cycle -= 1
    row = _old_last_before(table, START, offset, hint, n_rows - 1, False)
    if cpu <= 0.0:
        return x, row, row
    done_here = offset - table[row, START] - table[row, JITTER]
    coordinate = table[row, COMPUTED] + (done_here if done_here > 0.0 else 0.0)
    target = coordinate + cpu
    # a finish within rounding of a gap's end counts as at its end (the jitter that
    # follows is not met), whatever the unit the trace was converted from; the rounding
    # is that of the wall time x (and of the work), not of the remainder in the cycle
    tie = TIE * (abs(x) + cpu + period)
    extra = math.ceil(target / total_gap) - 1.0
    rest = target - extra * total_gap
    if rest <= tie:
        rest += total_gap
        extra -= 1.0
    elif rest > total_gap + tie:
        rest -= total_gap
        extra += 1.0
    finish_row = _old_last_before(table, COMPUTED, rest - tie, finish_hint, n_rows - 1, True)
    finish = ((cycle + extra) * period + table[finish_row, START]
              + table[finish_row, JITTER] + (rest - table[finish_row, COMPUTED]))
    return finish, row, finish_row


@numba.njit(inline="always")
def _old_hop_latency(child, parent, latency, intra_latency, node_size):
    if node_size > 0 and child // node_size == parent // node_size:
        return intra_latency
    return latency


@numba.njit(parallel=True, cache=True)
def _old_run_tree_barrier(table, offsets, work, phases, fanout, send, recv,
                     latency, intra_latency, node_size, level_bounds, compute_out, end_out):
    """Phases of ``work``, each closed by a reduce and a broadcast on a complete tree.

    Tasks are numbered breadth-first (children of i: fanout·i + 1 ... fanout·i +
    fanout). Reduce: after its compute a task receives from each child, in order of
    arrival, then sends to its parent. Broadcast: it receives from its parent, then
    sends to each child in index order. Every send and receive consumes CPU time on
    the task's trace (jitter can strike it); a message arrives one hop latency after
    its send completes. A task starts its next compute when its broadcast part is
    done.

    Returns the time at which the last task ends each phase [trace unit]; fills
    ``compute_out[phase, task]`` and ``end_out[phase, task]`` when they are not empty.
    """
    n_tasks = offsets.size
    n_levels = level_bounds.size - 1
    # per task: when it ends the phase (the broadcast reuses it for the time its
    # parent's message was sent), when its reduce part is done, the trace row it is
    # at, and how many rows its last compute spanned (to start the finish search)
    end = np.zeros(n_tasks)
    up = np.empty(n_tasks)
    hint = np.zeros(n_tasks, dtype=np.int64)
    span = np.zeros(n_tasks, dtype=np.int64)
    phase_end = np.empty(phases)
    keep = compute_out.shape[0] > 0
    for phase in range(phases):
        for level in range(n_levels - 1, -1, -1):
            for task in numba.prange(level_bounds[level], level_bounds[level + 1]):
                ahead = task + _PREFETCH_AHEAD
                if ahead < level_bounds[level + 1]:
                    prefetch_row(table, hint[ahead])
                    prefetch_row(table, min(hint[ahead] + span[ahead], table.shape[0] - 1))
                origin = offsets[task]
                finish, row, h = _old_advance(table, origin + end[task], work, hint[task],
                                         hint[task] + span[task])
                span[task] = max(h - row, 0)
                now = finish - origin
                if keep:
                    compute_out[phase, task] = now - end[task]
                first = fanout * task + 1
                n_children = min(fanout, max(n_tasks - first, 0))
                taken = 0
                for _ in range(n_children):  # receive in order of arrival
                    best, pick = np.inf, 0
                    for q in range(n_children):
                        if not (taken >> q) & 1:
                            child = first + q
                            arrival = up[child] + _old_hop_latency(child, task, latency,
                                                               intra_latency, node_size)
                            if arrival < best:
                                best, pick = arrival, q
                    taken |= 1 << pick
                    begin = now if now > best else best
                    finish, _, h = _old_advance(table, origin + begin, recv, h, h)
                    now = finish - origin
                if task > 0:
                    finish, _, h = _old_advance(table, origin + now, send, h, h)
                    now = finish - origin
                up[task] = now
                hint[task] = h
        for level in range(n_levels):
            for task in numba.prange(level_bounds[level], level_bounds[level + 1]):
                ahead = task + _PREFETCH_AHEAD
                if ahead < level_bounds[level + 1]:
                    prefetch_row(table, hint[ahead])
                origin = offsets[task]
                h = hint[task]
                now = up[task]
                if task > 0:
                    parent = (task - 1) // fanout
                    arrival = end[task] + _old_hop_latency(task, parent, latency, intra_latency,
                                                       node_size)
                    begin = now if now > arrival else arrival
                    finish, _, h = _old_advance(table, origin + begin, recv, h, h)
                    now = finish - origin
                first = fanout * task + 1
                for child in range(first, min(first + fanout, n_tasks)):
                    finish, _, h = _old_advance(table, origin + now, send, h, h)
                    now = finish - origin
                    end[child] = now  # the child reads it as its parent's send time
                end[task] = now
                hint[task] = h
                if keep:
                    end_out[phase, task] = now
        phase_end[phase] = end.max()
    return phase_end


def rate(task_phases: int, seconds: float) -> float:
    return task_phases / seconds


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def best_of(fn, repeats):
    """The output and the shortest wall time of ``repeats`` calls [s]."""
    times = []
    for _ in range(repeats):
        out, seconds = timed(fn)
        times.append(seconds)
    return out, min(times)


class old_tree_kernel:  # noqa: N801 - used as ``with old_tree_kernel():``
    """Within the block, ``jl.simulate`` runs the frozen pre-#13 tree kernel."""

    names = ("run_tree_barrier", "run_tree_barrier_one_thread")

    def __enter__(self):
        self.saved = {name: getattr(_simkernels, name) for name in self.names}
        for name in self.names:  # the frozen kernel has no operation log and no workspace
            setattr(_simkernels, name, lambda *args: _old_run_tree_barrier(*args[:-2]))

    def __exit__(self, *exc):
        for name, kernel in self.saved.items():
            setattr(_simkernels, name, kernel)


FRESH_PROCESSES = 5


def benchmark_trace(n_events):
    rng = np.random.default_rng(0)
    # about 1 ms between events, Pareto-tailed detours from 2 µs: a ~17 min trace
    return rng, jl.Trace(jitter=(rng.pareto(1.8, n_events) + 1) * 2e-6,
                         gap=rng.exponential(1e-3, n_events), source="benchmark")


def load_kernels(trace, barrier):
    """Load the compiled kernels that the timed calls use: below PARALLEL_MIN_TASKS tasks
    ``jl.simulate`` runs the one-thread kernels, above it (on an idle machine) the parallel
    ones, so one small call loads only the first (issue #20)."""
    for n in (64, 4 * PARALLEL_MIN_TASKS):
        jl.simulate(trace, n=n, work=1e-3, rng=1)
        jl.simulate(trace, n=n, work=1e-3, rng=1, barrier=barrier)


def large_child(n_events, n_tasks, phases):
    """In a fresh process: one ``jl.simulate`` with TreeBarrier; prints seconds and bytes."""
    _, trace = benchmark_trace(n_events)
    barrier = jl.TreeBarrier(send=1e-6, recv=1e-6, latency=5e-6)
    load_kernels(trace, barrier)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    _, seconds = timed(lambda: jl.simulate(trace, n=n_tasks, work=1e-3, phases=phases,
                                           rng=2, barrier=barrier))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(seconds, peak, before)


def large_run(n_events, n_tasks, phases):
    """:func:`large_child` in a fresh interpreter: (seconds, peak RSS, RSS before) [s, B]."""
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--large",
                           str(n_events), str(n_tasks), str(phases)],
                          capture_output=True, text=True, check=True)
    seconds, peak, before = done.stdout.split()
    return float(seconds), float(peak), float(before)


def first_calls(n_events, n_tasks, phases):
    """Issue #20: the first N = E = 10^6 call of a fresh process (kernels loaded by small
    calls, noiseless reference not yet computed), median of FRESH_PROCESSES processes."""
    print(f"load average before the fresh processes {os.getloadavg()[0]:.2f}; free CPUs now "
          f"{free_cpus()}")
    firsts = [large_run(n_events, n_tasks, phases)[0] for _ in range(FRESH_PROCESSES)]
    rates = sorted(rate(n_tasks * phases, seconds) / 1e6 for seconds in firsts)
    print(f"first call in {FRESH_PROCESSES} fresh processes, TreeBarrier, N = {n_tasks:.0e}: "
          f"median {float(np.median(rates)):.2f} M task-phases/s (target >= 10 M/s; all: "
          + ", ".join(f"{r:.2f}" for r in rates) + ")")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (for CI)")
    parser.add_argument("--first-only", action="store_true",
                        help="only the first call in fresh processes (issue #20)")
    parser.add_argument("--large", nargs=3, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.large:
        large_child(*args.large)
        return
    n_events = 10**5 if args.quick else 10**6
    n_tasks = 10**5 if args.quick else 10**6
    phases = 2 if args.quick else 4
    if args.first_only:
        first_calls(n_events, n_tasks, phases)
        return
    repeats = 3
    rng, trace = benchmark_trace(n_events)
    barrier = jl.TreeBarrier(send=1e-6, recv=1e-6, latency=5e-6)
    load_kernels(trace, barrier)
    with old_tree_kernel():
        jl.simulate(trace, n=64, work=1e-3, rng=1, barrier=barrier)
    print(f"trace: {n_events:.0e} events over {trace.duration:.0f} s; N = {n_tasks:.0e} tasks, "
          f"{phases} phases; {numba.get_num_threads()} threads; load average before "
          f"the run {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    for work in (1e-3, 100e-3):
        ds, seconds = timed(lambda work=work: jl.simulate(trace, n=n_tasks, work=work,
                                                          phases=phases, rng=2))
        ours = rate(n_tasks * phases, seconds)
        # the baselines on fewer tasks: their cost per task-phase does not depend on N
        few = 200 if work < 0.01 else 20
        _, ref_seconds = timed(lambda work=work, few=few: simulate_reference(
            trace, few, work, phases=1, rng=2))
        reference = rate(few, ref_seconds)
        offsets = rng.uniform(0, trace.duration, 20_000)
        _walk_phases(trace.jitter_seconds, trace.gap_seconds, offsets[:10], work, 1)
        _, walk_seconds = timed(lambda work=work, offsets=offsets: _walk_phases(
            trace.jitter_seconds, trace.gap_seconds, offsets, work, 1))
        walked = rate(offsets.size, walk_seconds)
        print(f"work = {work * 1e3:5.0f} ms, no barrier: {ours / 1e6:7.2f} M task-phases/s "
              f"(slowdown {float(ds['slowdown']):.4f})")
        print(f"    reference (Python walk): {reference / 1e6:9.5f} M/s -> ratio "
              f"{ours / reference:8.0f} x (target >= 20 x)")
        print(f"    compiled event walk:     {walked / 1e6:9.3f} M/s -> ratio "
              f"{ours / walked:8.1f} x")
        # the first call computes the noiseless reference (for the slowdown), later calls
        # with the same N, work, phases and barrier take it from jl.simulate's cache
        _noiseless_phase_mean.cache_clear()
        _, first_seconds = timed(lambda work=work: jl.simulate(
            trace, n=n_tasks, work=work, phases=phases, rng=2, barrier=barrier))
        ds, seconds = best_of(lambda work=work: jl.simulate(
            trace, n=n_tasks, work=work, phases=phases, rng=2, barrier=barrier), repeats)
        tree = rate(n_tasks * phases, seconds)
        with old_tree_kernel():
            old_ds, old_seconds = best_of(lambda work=work: jl.simulate(
                trace, n=n_tasks, work=work, phases=phases, rng=2, barrier=barrier), repeats)
        same = np.array_equal(ds["phase_time"].values, old_ds["phase_time"].values)
        print(f"work = {work * 1e3:5.0f} ms, TreeBarrier: {tree / 1e6:6.2f} M task-phases/s "
              f"(slowdown {float(ds['slowdown']):.4f}; target >= 10 M/s)")
        print(f"    first call, noiseless reference computed: "
              f"{rate(n_tasks * phases, first_seconds) / 1e6:6.2f} M task-phases/s")
        print(f"    pre-#13 tree kernel:     {rate(n_tasks * phases, old_seconds) / 1e6:9.3f} M/s "
              f"-> ratio {old_seconds / seconds:8.2f} x; same phase times bit for bit: {same}")
    first_calls(n_events, n_tasks, phases)
    n_large = 10**6 if args.quick else 10**7
    seconds, peak, before = large_run(n_events, n_large, phases)
    print(f"N = {n_large:.0e} tasks, TreeBarrier, work = 1 ms, {phases} phases, fresh process: "
          f"{seconds:.2f} s (target < 10 s), peak resident {peak / 2**30:.2f} GiB "
          f"({(peak - before) / 2**30:.2f} GiB above the {before / 2**30:.2f} GiB before the "
          f"call; target < 4 GB)")


if __name__ == "__main__":
    main()
