"""Benchmark of the wavefront application model: rank-blocks per second and memory.

Prints, from one run on this machine (issue #9, "Speed and scale"):

* trace-driven rank-blocks per second of ``jl.apps.wavefront_simulate(workload,
  trace)`` (progress="in_order") at 32 768 ranks (a 128 × 256 grid, 10 blocks of
  100 µs, the four sweeps of the LogGOPSim reference schedule, 2 iterations) on the
  reference noise trace ``../shared/reference/loggopsim/devref.trc.gz`` (a synthetic
  trace if ``../shared`` is absent), rank-blocks = ranks × blocks × sweeps ×
  iterations, the whole public call timed after a warm-up call;
* the ratio against ``jitterlab.testing.wavefront_reference``, the plain-Python walk
  of every rank's operation list, measured in the same run on small grids with the
  same start rows (both give the same times; their difference is printed). Its cost per
  rank-block is printed for two grids: it grows somewhat with the grid, so the ratio
  is taken against the fastest. Most of that cost is finding each CPU interval's
  trace row by walking from the trace's first row, so the ratio also grows with the
  trace's length (9312 rows for the reference trace);
* informative lines: the Monte Carlo method (an exponential law), the event-driven
  progress="on_arrival" run at a moderate size, and ``wavefront_predict`` at 32 768
  ranks for 10 to 1000 blocks (closed form over blocks);
* memory: the peak of the trace-driven call at 32 768 ranks for 10 and 100 blocks,
  each in a fresh process, from tracemalloc (numpy arrays) and from the resident-set
  high-water mark (which also sees the numba kernels' own arrays), and their ratio;
  the same for the Monte Carlo, whose δ chunks make its peak grow up to a budget.

Targets: >= 10 M rank-blocks/s trace-driven at 32 768 ranks; memory O(ranks), not
O(ranks × blocks): the 100-block peak about the 10-block peak.
Run: ``python benchmarks/bench_wavefront.py [--quick]``.

``--loggopsim DIR`` (the folder of LogGOPSim's ``LogGOPSim`` and ``txt2bin`` binaries, built
outside the project as in ``tests/data/goal/PROVENANCE.md``) prints instead only the
comparison of issue #23 on the held-out grids 16 × 32 and 64 × 64 (10 blocks of 100 µs,
the four sweeps, 2 iterations, L = 5 µs, o = 1 µs, no noise): the wall time of LogGOPSim's
run (``LogGOPSim -f s.bin -b``, the process, its reading of the binary schedule included;
the GOAL text and ``txt2bin`` are made once in ``--workdir``, not timed), of
``wavefront_simulate(progress="on_arrival")`` (the dedicated kernel) and of the same
schedule on the schedule engine (``programs.wavefront`` + ``simulate_schedule``, and the
engine alone), best of ``--repeat``, their ratios, and whether the three totals are equal.
``--busy`` runs one busy loop (``python3 -c "while True: pass"``, normal priority) beside
the timed calls and stops it after. Timing-sensitive: run it under the measurement lock.
"""

from __future__ import annotations

import argparse
import gc
import re
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
from bench_max_of_n import best_of  # a sibling script: run this one as a script too

import jitterlab as jl
from jitterlab.testing import wavefront_reference

TRACE = (Path(__file__).resolve().parents[2] / "shared" / "reference" / "loggopsim"
         / "devref.trc.gz")
MESSAGE = jl.Message(send=1e-6, recv=1e-6, latency=5e-6)
WORK = 100e-6  # compute of one block [s]
STATUS = Path("/proc/self/status")


def rank_blocks(workload) -> int:
    """Blocks computed by all ranks in a run: ranks × blocks × sweeps × iterations."""
    return workload.n * workload.blocks * len(workload.corners) * workload.iterations


def workload(px: int, py: int, blocks: int, iterations: int = 1):
    return jl.apps.Wavefront(px, py, blocks=blocks, work=WORK, iterations=iterations,
                             message=MESSAGE)


def load_trace() -> jl.Trace:
    if TRACE.exists():
        return jl.read_trace(TRACE, format="loggopsim")
    print(f"({TRACE} not found: a 30 s synthetic trace instead)")
    return jl.synthetic_trace(30.0, rng=0, source="benchmark")


def _status_bytes(key: str) -> int:
    for line in STATUS.read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024  # reported in kB
    raise KeyError(key)


def peak_memory(fn) -> tuple[float, float | None]:
    """Peak memory of ``fn()`` above what was held before [B]: tracemalloc's peak
    (numpy and Python objects) and the rise of the resident-set high-water mark
    (everything, the numba kernels' own arrays included; None without /proc)."""
    gc.collect()
    try:  # "5" resets the high-water mark to the current resident set (Linux >= 4.0)
        Path("/proc/self/clear_refs").write_text("5")
        before = _status_bytes("VmRSS")
    except (OSError, KeyError):
        before = None
    tracemalloc.start()
    try:
        fn()
        _, traced = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    resident = None if before is None else _status_bytes("VmHWM") - before
    return traced, resident


def memory_child(case: str) -> None:
    """Print the peak memory of one call at 32 768 ranks, ``case`` = "trace:blocks" or
    "montecarlo:blocks", measured in this fresh process (memory freed by earlier calls
    would be reused and hide a rise of the resident set)."""
    kind, blocks = case.split(":")
    trace = load_trace()
    noise = trace if kind == "trace" else jl.noise.Exponential(
        mean=float(jl.noise.from_trace(trace, WORK).mean()))
    jl.apps.wavefront_simulate(workload(4, 4, 2), noise, rng=1)  # load the kernels
    wf = workload(128, 256, int(blocks))
    traced, resident = peak_memory(lambda: jl.apps.wavefront_simulate(wf, noise, rng=6))
    print(traced, -1 if resident is None else resident)


def measure_memory(kind: str, blocks: int) -> tuple[float, float | None]:
    """:func:`memory_child` in a fresh interpreter: (tracemalloc peak, resident rise) [B]."""
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--memory",
                           f"{kind}:{blocks}"], capture_output=True, text=True, check=True)
    traced, resident = (float(word) for word in done.stdout.split()[-2:])
    return traced, None if resident < 0 else resident


def reference_rate(trace, px: int, py: int, blocks: int, seed: int):
    """Rank-blocks/s of the plain-Python walk and the relative difference of its
    total time from the kernel's, both from the same start rows."""
    wf = workload(px, py, blocks)
    rows = np.random.default_rng(seed).integers(0, trace.jitter_seconds.size, wf.n)
    starts = np.concatenate(([0.0], np.cumsum(trace.jitter_seconds + trace.gap_seconds)))
    offsets = starts[rows] + trace.jitter_seconds[rows]  # a rank starts at its row's gap
    begin = time.perf_counter()
    expected, _ = wavefront_reference(wf, "in_order", trace=trace, offsets=offsets)
    seconds = time.perf_counter() - begin
    ours = float(jl.apps.wavefront_simulate(wf, trace, start=rows)["total_time"][0])
    return rank_blocks(wf) / seconds, abs(ours - expected) / expected


#: the held-out grids of issue #23's on-arrival goal (px, py)
HELD_OUT_GRIDS = ((16, 32), (64, 64))
FINISH = re.compile(r"Maximum finishing time at host \d+: (\d+)")


def loggopsim_comparison(folder: Path, workdir: Path, repeat: int) -> None:
    """The on-arrival wavefront against LogGOPSim on :data:`HELD_OUT_GRIDS` (printed)."""
    from jitterlab.schedules import programs

    params = jl.LogGOPS(L=MESSAGE.latency, o=MESSAGE.send, g=0.0, G=0.0)
    jl.apps.wavefront_simulate(workload(4, 4, 2), progress="on_arrival")  # load the kernels
    jl.simulate_schedule(programs.wavefront(4, 4, 2, WORK), params)
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"load before: {Path('/proc/loadavg').read_text().strip()}")
    for px, py in HELD_OUT_GRIDS:
        wf = workload(px, py, blocks=10, iterations=2)
        build = lambda wf=wf: programs.wavefront(  # noqa: E731
            wf.px, wf.py, wf.blocks, WORK, wf.iterations)
        schedule = build()
        binary = workdir / f"wavefront_{px}x{py}.bin"
        if not binary.exists():
            goal = binary.with_suffix(".goal")
            schedule.to_goal(goal, overwrite=True)
            subprocess.run([str(folder / "txt2bin"), "-i", str(goal), "-o", str(binary)],
                           check=True, stdout=subprocess.DEVNULL)
        command = [str(folder / "LogGOPSim"), "-f", str(binary), "-b",
                   *params.loggopsim_arguments()]
        outputs = []
        theirs = best_of(lambda command=command, outputs=outputs: outputs.append(subprocess.run(
            command, check=True, capture_output=True, text=True).stdout), repeat)
        theirs_ns = int(FINISH.search(outputs[-1]).group(1))
        kernel = best_of(lambda wf=wf: jl.apps.wavefront_simulate(wf, progress="on_arrival"),
                         repeat)
        kernel_ns = round(float(jl.apps.wavefront_simulate(
            wf, progress="on_arrival")["total_time"][0]) * 1e9)
        engine = best_of(lambda schedule=schedule: jl.simulate_schedule(schedule, params),
                         repeat)
        built = best_of(build, 1)
        engine_ns = round(float(jl.simulate_schedule(schedule, params)["makespan"][0]) * 1e9)
        same = "equal" if theirs_ns == kernel_ns == engine_ns else "DIFFERENT"
        print(f"{px} × {py} ranks, {schedule.n_operations} operations, best of {repeat}; "
              f"totals {theirs_ns} / {kernel_ns} / {engine_ns} ns ({same})")
        print(f"  LogGOPSim {theirs:8.3f} s")
        print(f"  on_arrival kernel {kernel:8.3f} s   {theirs / kernel:6.2f} x LogGOPSim")
        print(f"  engine {built + engine:8.3f} s (schedule {built:.3f} s + run {engine:.3f} s)  "
              f"{theirs / (built + engine):6.2f} x LogGOPSim (run alone {theirs / engine:.2f} x)")
    print(f"load after: {Path('/proc/loadavg').read_text().strip()}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (for CI)")
    parser.add_argument("--memory", help=argparse.SUPPRESS)  # one measurement, see below
    parser.add_argument("--loggopsim", type=Path,
                        help="folder of LogGOPSim and txt2bin: only the on-arrival comparison")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/jitterlab-bench-wavefront"))
    parser.add_argument("--repeat", type=int, default=3, help="timed calls (best kept)")
    parser.add_argument("--busy", action="store_true",
                        help="one busy loop beside the --loggopsim comparison")
    args = parser.parse_args(argv)
    if args.memory:
        memory_child(args.memory)
        return
    if args.loggopsim:
        busy = (subprocess.Popen(["python3", "-c", "while True: pass"]) if args.busy
                else None)
        try:
            loggopsim_comparison(args.loggopsim, args.workdir, args.repeat)
        finally:
            if busy is not None:
                busy.kill()
                busy.wait()
        return
    repeats = 2 if args.quick else 3
    trace = load_trace()
    law = jl.noise.Exponential(mean=float(jl.noise.from_trace(trace, WORK).mean()))
    small = workload(4, 4, 2)
    for progress in ("in_order", "on_arrival"):  # load the compiled kernels
        jl.apps.wavefront_simulate(small, trace, rng=1, progress=progress)
    jl.apps.wavefront_simulate(small, law, rng=1)
    jl.apps.wavefront_predict(small, law)
    print(f"trace: {trace.jitter_seconds.size} events over {trace.duration:.1f} s "
          f"({trace.attrs.get('source', TRACE.name)}); block: {WORK * 1e6:.0f} µs of work, "
          f"messages {MESSAGE.send * 1e6:g} µs send, {MESSAGE.recv * 1e6:g} µs receive, "
          f"{MESSAGE.latency * 1e6:g} µs latency")

    big = workload(128, 256, blocks=10, iterations=2)
    run = lambda: jl.apps.wavefront_simulate(big, trace, rng=2)  # noqa: E731
    slowdown = float(run()["slowdown"][0])  # warm-up at this size
    ours = rank_blocks(big) / best_of(run, repeats)
    print(f"Trace-driven, in order, {big.px} × {big.py} = {big.n} ranks, {big.blocks} blocks, "
          f"{len(big.corners)} sweeps, {big.iterations} iterations "
          f"({rank_blocks(big) / 1e6:.2f} M rank-blocks, best of {repeats}):")
    print(f"  jitterlab   {ours / 1e6:10.2f} M rank-blocks/s  (goal >= 10 M/s; "
          f"slowdown {slowdown:.4f})")

    # the reference walks every rank's list of operations in plain Python and finds
    # each CPU interval's trace row from the first row; it is measured per rank-block
    # on small grids, where it takes seconds instead of hours. Per rank-block it gets
    # somewhat slower with more ranks and blocks (it retries the ranks whose upstream
    # has not yet sent, and scans the rest of a rank's list for its receives), so the
    # ratio against its fastest grid is a lower bound of the ratio at 32 768 ranks
    grids = [(4, 4, 2)] if args.quick else [(4, 4, 5), (8, 8, 5)]
    reference = 0.0
    for px, py, blocks in grids:
        rate, difference = reference_rate(trace, px, py, blocks, seed=3)
        reference = max(reference, rate)
        print(f"  reference   {rate / 1e6:10.6f} M rank-blocks/s  on {px} × {py} ranks, "
              f"{blocks} blocks, 1 iteration (total time as the kernel's to "
              f"{difference:.0e} relative)")
    print(f"  ratio       {ours / reference:10.3g} x  (against the reference's "
          f"{'only' if len(grids) == 1 else 'fastest'} grid)")

    mc = workload(128, 256, blocks=10)
    mc_run = lambda: jl.apps.wavefront_simulate(mc, law, rng=4)  # noqa: E731
    mc_run()
    mc_rate = rank_blocks(mc) / best_of(mc_run, repeats)
    print(f"Monte Carlo, {mc.n} ranks, {mc.blocks} blocks, Exponential "
          f"(mean {law.mean() * 1e6:.3f} µs, the trace's mean δ for {WORK * 1e6:.0f} µs): "
          f"{mc_rate / 1e6:.2f} M rank-blocks/s")

    side = 32 if args.quick else 64
    events = workload(side, side, blocks=10)
    arrival_run = lambda: jl.apps.wavefront_simulate(  # noqa: E731
        events, trace, rng=5, progress="on_arrival")
    arrival_run()
    arrival = rank_blocks(events) / best_of(arrival_run, 2)
    print(f"Event-driven (on_arrival), trace, {side} × {side} = {events.n} ranks, "
          f"{events.blocks} blocks: {arrival / 1e6:.3f} M rank-blocks/s "
          f"(in order at {big.n} ranks: {ours / arrival:.0f} x this)")

    print(f"wavefront_predict at {big.n} ranks, 1 iteration (best of {repeats}):")
    for blocks in (10, 100, 1000):
        wf = workload(128, 256, blocks)
        jl.apps.wavefront_predict(wf)
        noiseless = best_of(lambda wf=wf: jl.apps.wavefront_predict(wf), repeats)
        print(f"  {blocks:5d} blocks: {noiseless * 1e3:7.2f} ms without noise")
    wf = workload(128, 256, 10)
    bounded = best_of(lambda: jl.apps.wavefront_predict(wf, law), repeats)
    print(f"     10 blocks: {bounded * 1e3:7.2f} ms with the Jensen and level bounds "
          f"under the exponential law")

    print(f"Memory of one call at {big.n} ranks, 1 iteration, each in a fresh process (peak "
          f"above what was held before; tracemalloc sees numpy arrays, the resident set "
          f"also the kernels' own):")
    block_counts = (10, 100)
    cases = [("trace", block_counts),
             ("montecarlo", block_counts if args.quick else (*block_counts, 1000))]
    for kind, counts in cases:
        traced = []
        for blocks in counts:
            peak, resident = measure_memory(kind, blocks)
            traced.append(peak)
            rss = "" if resident is None else f", resident set +{resident / 1e6:6.1f} MB"
            print(f"  {kind:10s} {blocks:5d} blocks: tracemalloc {peak / 1e6:6.1f} MB{rss}")
        for k in range(1, len(counts)):
            extra = rank_blocks(workload(128, 256, counts[k] - counts[k - 1])) * 8
            print(f"  {kind:10s} tracemalloc peak at {counts[k]} / at {counts[k - 1]} "
                  f"blocks: {traced[k] / traced[k - 1]:.2f} (one float per rank-block would "
                  f"add {extra / 1e6:.0f} MB)")
    print("  (the Monte Carlo draws the δ in chunks of at most 2^22 values, so its peak "
          "grows with the blocks up to that budget, then stays)")


if __name__ == "__main__":
    main()
