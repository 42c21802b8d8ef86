"""Benchmark of trace-driven simulation: task-phases per second.

Prints, from one run on this machine, task-phases/s of ``jl.simulate`` at N = 10^6
tasks on a 10^6-event trace for work = 1 ms and 100 ms, with and without a
``TreeBarrier``, next to two baselines measured in the same run:

* ``jitterlab.testing.simulate_reference``, the event-by-event walk of jitSim §3.4
  in plain Python (on fewer tasks; its cost per task-phase does not depend on N);
* the same event walk compiled with numba, so that the ratio shows what sorting the
  tasks and galloping searches gain over walking, not just over the interpreter.

Targets: >= 10 M task-phases/s without barrier at work = 100 ms; >= 20x the
reference; >= 2 M task-phases/s with TreeBarrier (10x a general LogGP simulator's
~0.2 M/s on this machine). Run: ``python benchmarks/bench_simulate.py [--quick]``.
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np

import jitterlab as jl
from jitterlab.testing import simulate_reference, walk_from_row

_walk_from_row = numba.njit(walk_from_row)


@numba.njit
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


def rate(task_phases: int, seconds: float) -> float:
    return task_phases / seconds


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (for CI)")
    args = parser.parse_args(argv)
    n_events = 10**5 if args.quick else 10**6
    n_tasks = 10**5 if args.quick else 10**6
    phases = 2 if args.quick else 4
    rng = np.random.default_rng(0)
    # about 1 ms between events, Pareto-tailed detours from 2 µs: a ~17 min trace
    trace = jl.Trace(jitter=(rng.pareto(1.8, n_events) + 1) * 2e-6,
                     gap=rng.exponential(1e-3, n_events), source="benchmark")
    barrier = jl.TreeBarrier(send=1e-6, recv=1e-6, latency=5e-6)
    jl.simulate(trace, n=64, work=1e-3, rng=1)  # load compiled kernels
    jl.simulate(trace, n=64, work=1e-3, rng=1, barrier=barrier)
    print(f"trace: {n_events:.0e} events over {trace.duration:.0f} s; N = {n_tasks:.0e} tasks, "
          f"{phases} phases")
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
        ds, seconds = timed(lambda work=work: jl.simulate(trace, n=n_tasks, work=work,
                                                          phases=phases, rng=2,
                                                          barrier=barrier))
        tree = rate(n_tasks * phases, seconds)
        print(f"work = {work * 1e3:5.0f} ms, TreeBarrier: {tree / 1e6:6.2f} M task-phases/s "
              f"(slowdown {float(ds['slowdown']):.4f}; target >= 2 M/s)")


if __name__ == "__main__":
    main()
