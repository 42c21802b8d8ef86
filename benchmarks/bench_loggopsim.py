"""Benchmark against LogGOPSim: wall time on LogGOPSim's own tree-barrier workload.

Prints, from one run on this machine (issue #13, "the simulator 100x faster than
LogGOPSim with a barrier"), the wall time of LogGOPSim (spcl/LogGOPSim, Hoefler et al.,
SC10) and of ``jl.simulate`` on the same workload, and their ratio:

* workload: the reference runs' schedule of ``../shared/reference/loggopsim/
  make_goal_schedule.py`` (run as it is, in a temporary directory): N ranks (65 535 by
  default), ``phases`` iterations of 1 ms of compute, a reduce to rank 0 over the
  binary tree and a broadcast back; LogGP L = 5 µs, o = 1 µs, g = G = 0; noise from
  ``devref.trc.gz``, the reference trace, replayed from an independent random offset
  per rank by both simulators;
* LogGOPSim: ``txt2bin`` (GOAL text to binary) timed on its own, then ``LogGOPSim``
  with the noise trace, each the best of ``--repeat`` runs of the whole process;
* jitterlab: ``jl.simulate(trace, n=N, work=1 ms, phases, barrier=TreeBarrier(send=1 µs,
  recv=1 µs, latency=5 µs))`` on the same trace read with ``jl.read_trace(...,
  format="loggopsim")``: the first call of the process (loads the compiled kernels and
  computes the noiseless reference) and the best of ``--repeat`` later calls (each with
  its own seed), with numba's threads, again with one thread (LogGOPSim uses one
  core), and with the threads jitterlab chooses beside one process spinning on a CPU
  (issue #20: the goal must hold on a shared machine); the phase times must be the same;
* ratios LogGOPSim / jitterlab: simulation alone, and with the ``txt2bin`` conversion
  added to LogGOPSim's side (writing the GOAL text is not counted on either side);
* checks: without noise the two totals (common start to the last rank's last
  operation) agree to the nanosecond, and with noise both totals are of the same
  magnitude (their means within a factor of 2; both are printed, run by run).
  LogGOPSim seeds its offsets from the clock in whole seconds, so each of its noisy
  runs starts after the second in which the one before it ended (the wait is not timed).

Goal: LogGOPSim / jitterlab >= 100 for the simulation (issue #13 started from about 40).
Build LogGOPSim outside the project (its code never enters this repository), e.g. in
``/tmp/loggopsim``; run ``python benchmarks/bench_loggopsim.py`` without it to see how.
Run: ``python benchmarks/bench_loggopsim.py [--loggopsim DIR] [--ranks N] [--phases P]
[--repeat R]``.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np

import jitterlab as jl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_under_load import Busy  # noqa: E402  (a sibling script, not a package)

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "loggopsim"
WORK = 1e-3  # compute per phase [s]
LATENCY, OVERHEAD = 5e-6, 1e-6  # LogGP L and o [s]; g = G = 0
BUILD = """\
LogGOPSim not found in {where}. Build it outside the project, e.g.:

    mkdir -p /tmp/loggopsim
    git clone https://github.com/spcl/LogGOPSim /tmp/loggopsim
    cd /tmp/loggopsim/src/LogGOPSim
    gengetopt -F loggopsim_cmdline -i loggopsim_cmdline.ggo
    gengetopt -F txt2bin_cmdline -i txt2bin_cmdline.ggo
    re2c -o txt2bin.cpp txt2bin.re
    g++ -std=c++11 -O2 -g -DNDEBUG -I/usr/include/graphviz LogGOPSim.cpp loggopsim_cmdline.c \\
        -o LogGOPSim -lcgraph
    g++ -std=c++11 -O2 -g -DNDEBUG txt2bin.cpp txt2bin_cmdline.c -o txt2bin

(Debian packages: g++ gengetopt re2c libgraphviz-dev; the CMake build of src/CMakeLists.txt,
which also wants a Fortran compiler, puts the same two binaries in its build directory.)
Then pass --loggopsim /tmp/loggopsim (or that build directory)."""
FINISH = re.compile(r"Maximum finishing time at host \d+: (\d+)")


def find_binaries(root: Path) -> tuple[Path, Path] | None:
    """``LogGOPSim`` and ``txt2bin`` under a source tree or build directory, if built."""
    for folder in (root, root / "src" / "LogGOPSim", root / "build", root / "build" / "src"):
        simulator, converter = folder / "LogGOPSim", folder / "txt2bin"
        if simulator.is_file() and converter.is_file():
            return simulator, converter
    return None


def timed_run(command: list) -> tuple[float, str]:
    """Wall time of one process [s] and its standard output."""
    start = time.perf_counter()
    done = subprocess.run([str(part) for part in command], capture_output=True, text=True,
                          check=True)
    return time.perf_counter() - start, done.stdout


def noisy_runs(command: list, repeat: int) -> list:
    """``repeat`` timed runs of LogGOPSim with noise, each with its own seed.

    LogGOPSim seeds its trace offsets with ``time(0)`` once it has read the trace: two
    runs seeded within the same second draw the same offsets. So each run starts after
    the clock second in which the one before it ended; the wait is not timed.
    """
    runs, second = [], None
    for _ in range(repeat):
        while int(time.time()) == second:  # the second in which the last run ended
            # time(0) reads a coarse clock that lags by up to a kernel tick: wait 50 ms more
            time.sleep(1.0 - time.time() % 1.0 + 0.05)
        runs.append(timed_run(command))
        second = int(time.time())
    return runs


def loggopsim_total(output: str) -> int:
    """Total time of a LogGOPSim run: its maximum finishing time [ns]."""
    match = FINISH.search(output)
    if match is None:
        raise RuntimeError(f"no finishing time in LogGOPSim's output:\n{output}")
    return int(match.group(1))


def timed_calls(run, seeds) -> tuple[list, np.ndarray]:
    """Wall time [s] and phase times [s] (one row per seed) of ``run(rng=seed)``."""
    times, phase_times = [], []
    for seed in seeds:
        start = time.perf_counter()
        ds = run(rng=seed)
        times.append(time.perf_counter() - start)
        phase_times.append(ds["phase_time"].values)
    return times, np.array(phase_times)


def spread(totals) -> str:
    """Mean ± sample standard deviation of totals [s], printed in ms."""
    totals = np.asarray(totals)
    sd = totals.std(ddof=1) if totals.size > 1 else float("nan")
    return f"{totals.mean() * 1e3:.4f} ± {sd * 1e3:.4f} ms (n = {totals.size})"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loggopsim", type=Path, default=Path("/tmp/loggopsim"),
                        help="LogGOPSim source tree or build directory (default /tmp/loggopsim)")
    parser.add_argument("--ranks", type=int, default=65535, help="N ranks (default 65535)")
    parser.add_argument("--phases", type=int, default=4, help="iterations (default 4)")
    parser.add_argument("--repeat", type=int, default=3, help="runs timed (best of; default 3)")
    args = parser.parse_args(argv)
    binaries = find_binaries(args.loggopsim)
    if binaries is None:
        print(BUILD.format(where=args.loggopsim))
        return
    if not (REFERENCE / "make_goal_schedule.py").is_file():
        print(f"the reference schedule generator is not in {REFERENCE}: nothing to compare")
        return
    simulator, converter = binaries
    n, phases, repeat = args.ranks, args.phases, args.repeat
    loggp = ["-L", round(LATENCY * 1e9), "-o", round(OVERHEAD * 1e9), "-g", 0, "-G", 0, "-b"]
    barrier = jl.TreeBarrier(send=OVERHEAD, recv=OVERHEAD, latency=LATENCY)
    print(f"workload: N = {n} ranks, {phases} phases of {WORK * 1e3:g} ms, binary-tree reduce "
          f"+ broadcast, L = {LATENCY * 1e6:g} µs, o = {OVERHEAD * 1e6:g} µs, g = G = 0; "
          f"load average before the run {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="bench_loggopsim_") as folder:
        folder = Path(folder)
        noise = folder / "devref.trc"
        with gzip.open(REFERENCE / "devref.trc.gz", "rb") as packed, open(noise, "wb") as out:
            shutil.copyfileobj(packed, out)
        goal, schedule = folder / "tree.goal", folder / "tree.bin"
        write_seconds, _ = timed_run([sys.executable, REFERENCE / "make_goal_schedule.py", n,
                                      phases, round(WORK * 1e9), goal])
        convert_seconds = min(timed_run([converter, "-i", goal, "-o", schedule])[0]
                              for _ in range(repeat))
        quiet_seconds, output = timed_run([simulator, "-f", schedule, *loggp])
        loggopsim_quiet = loggopsim_total(output)
        runs = noisy_runs([simulator, "-f", schedule, *loggp, "--noise-trace", noise], repeat)
        loggopsim_seconds = min(seconds for seconds, _ in runs)
        loggopsim_noisy = np.array([loggopsim_total(output) for _, output in runs]) * 1e-9
        print(f"GOAL text written by make_goal_schedule.py in {write_seconds:.2f} s "
              f"({goal.stat().st_size / 1e6:.0f} MB; not counted)")
        print(f"LogGOPSim {simulator}")
        print(f"    txt2bin:              {convert_seconds:8.3f} s (best of {repeat})")
        print(f"    simulation, no noise: {quiet_seconds:8.3f} s, total {loggopsim_quiet} ns")
        print(f"    simulation, noise:    {loggopsim_seconds:8.3f} s (best of {repeat}), "
              f"totals [ms] {np.round(loggopsim_noisy * 1e3, 4).tolist()}")

        start = time.perf_counter()
        trace = jl.read_trace(noise, format="loggopsim")
        read_seconds = time.perf_counter() - start
    run = functools.partial(jl.simulate, trace, n=n, work=WORK, phases=phases, barrier=barrier)
    times, phase_times = timed_calls(run, range(repeat + 1))
    totals = phase_times.sum(axis=1)
    jitterlab_seconds = min(times[1:])
    threads = numba.get_num_threads()
    numba.set_num_threads(1)  # LogGOPSim runs on one core
    single_times, single_phase_times = timed_calls(run, range(1, repeat + 1))
    numba.set_num_threads(threads)
    with Busy(1):  # issue #20: the goal holds beside a busy process too
        busy_times, busy_phase_times = timed_calls(run, range(1, repeat + 1))
    quiet = jl.Trace(jitter=[0.0], gap=[30.0])  # as tests/test_simulate.py does
    jitterlab_quiet = float(jl.simulate(quiet, n=n, work=WORK, phases=phases, barrier=barrier,
                                        rng=0)["phase_time"].sum())
    print(f"jitterlab {jl.__version__} (read_trace {read_seconds * 1e3:.1f} ms; not counted)")
    print(f"    jl.simulate, first call: {times[0]:8.4f} s (compiled kernels loaded, "
          f"noiseless reference computed)")
    print(f"    jl.simulate, noise:      {jitterlab_seconds:8.4f} s (best of {repeat}, "
          f"median {np.median(times[1:]):.4f} s, {threads} threads), totals of all calls [ms] "
          f"{np.round(np.array(totals) * 1e3, 4).tolist()}")
    same = np.array_equal(single_phase_times, phase_times[1:])
    print(f"    jl.simulate, 1 thread:   {min(single_times):8.4f} s (best of {repeat}, median "
          f"{np.median(single_times):.4f} s); same "
          f"phase times as with {threads} threads: {same}")
    same_busy = np.array_equal(busy_phase_times, phase_times[1:])
    print(f"    jl.simulate, beside one busy process: {min(busy_times):8.4f} s (best of "
          f"{repeat}, median {np.median(busy_times):.4f} s, threads as jitterlab chooses them); "
          f"same phase times: {same_busy}")
    print(f"    no noise: total {jitterlab_quiet * 1e9:.3f} ns")

    same_quiet = abs(jitterlab_quiet - loggopsim_quiet * 1e-9) <= 0.5e-9
    magnitude = np.mean(totals) / loggopsim_noisy.mean()
    print(f"no noise: LogGOPSim {loggopsim_quiet} ns, jitterlab {jitterlab_quiet * 1e9:.3f} ns "
          f"-> equal to the nanosecond: {same_quiet}")
    print(f"noise: LogGOPSim {spread(loggopsim_noisy)}, jitterlab {spread(totals)} "
          f"-> ratio of means {magnitude:.3f} (same magnitude: within a factor of 2)")
    print(f"ratio LogGOPSim / jitterlab, simulation: "
          f"{loggopsim_seconds / jitterlab_seconds:7.1f} x (goal >= 100 x); first call: "
          f"{loggopsim_seconds / times[0]:.1f} x; 1 thread: "
          f"{loggopsim_seconds / min(single_times):.1f} x; beside one busy process: "
          f"{loggopsim_seconds / min(busy_times):.1f} x (goal >= 100 x); medians: "
          f"{loggopsim_seconds / np.median(times[1:]):.1f} x, 1 thread "
          f"{loggopsim_seconds / np.median(single_times):.1f} x, beside one busy process "
          f"{loggopsim_seconds / np.median(busy_times):.1f} x")
    print(f"ratio LogGOPSim (txt2bin + simulation) / jitterlab: "
          f"{(convert_seconds + loggopsim_seconds) / jitterlab_seconds:7.1f} x")
    if not same_quiet or not 0.5 <= magnitude <= 2.0:
        sys.exit("the two simulators disagree (see above)")
    if not same or not same_busy:
        sys.exit("jl.simulate gave other phase times with one thread or beside a busy process")


if __name__ == "__main__":
    main()
