"""Benchmark: how much slower do jitterlab's calls run beside busy processes? (issue #20)

A fixed set of calls, each timed as the best of 2-7 calls in a fresh process (more of the
short ones):

* ``nb05``: notebook 05's pattern, 8 runs of ``jl.simulate`` with 1 000 phases at
  N = 1 ... 4 096 (no barrier), on the 60 s synthetic node of that notebook;
* ``tree``: one ``jl.simulate`` with a ``TreeBarrier`` at 65 535 ranks, 4 phases of 1 ms
  (LogGOPSim's tree workload of ``bench_loggopsim.py``, on the synthetic node);
* ``wavefront``: ``jl.apps.wavefront_simulate`` of a 128 × 128 grid, 10 blocks, 4
  iterations, on the same trace (about 0.1 s on the idle machine);
* ``max_of_n``: the exact max-of-N of a 10^6-value ``Empirical`` for 91 values of N from
  1 to 10^9.

Each call runs in a plain process and inside a Jupyter kernel (nbclient, as a user runs a
notebook), first on the quiet machine and then with ``--busy`` (default 2) processes
spinning beside it, for each thread setting: numba's default (one thread per CPU), one
thread less than the CPUs, and ``NUMBA_NUM_THREADS=1``. It prints every time and the
ratio loaded / quiet per call. Goal: <= 3x for every call (four runnable processes on two
CPUs make 2x the fair share).

Run: ``python benchmarks/bench_under_load.py [--busy 2] [--modes plain,kernel]
[--threads default,minus1,1] [--calls nb05,tree,wavefront,max_of_n]``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import time

CALLS = ("nb05", "tree", "wavefront", "max_of_n")
REPEATS = 2  # timed calls at least, ...
MAX_REPEATS = 7  # ... at most, ...
BUDGET = 1.0  # ... and more than REPEATS while they took less than this in all [s]


# ------------------------------------------------------------------------------- the calls
def _setup():
    """Inputs of the calls, built once per process (not timed)."""
    import numpy as np

    import jitterlab as jl

    trace = jl.synthetic_trace(duration=60.0, rng=2010)
    sample = np.random.default_rng(0).gamma(2.0, 5e-6, 10**6) + 1e-3
    return {
        "trace": trace,
        "tree": jl.TreeBarrier(send=1e-6, recv=1e-6, latency=5e-6),
        "wavefront": jl.apps.Wavefront(128, 128, blocks=10, work=100e-6, iterations=4,
                                       message=jl.Message(send=1e-6, recv=1e-6,
                                                          latency=5e-6)),
        "empirical": jl.noise.Empirical(sample),
        "n_values": np.unique(np.logspace(0, 9, 91).round().astype(np.int64)),
    }


def _call(name: str, inputs: dict) -> None:
    import warnings

    import numpy as np

    import jitterlab as jl

    if name == "nb05":
        n = 2 ** np.arange(0, 13)
        for seed in range(1, 9):
            jl.simulate(inputs["trace"], n, 1e-3, phases=1000, rng=seed)
    elif name == "tree":
        jl.simulate(inputs["trace"], n=65535, work=1e-3, phases=4, barrier=inputs["tree"],
                    rng=1)
    elif name == "wavefront":
        jl.apps.wavefront_simulate(inputs["wavefront"], inputs["trace"], rng=2)
    elif name == "max_of_n":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", jl.noise.TailWarning)
            jl.max_of_n(inputs["empirical"], n=inputs["n_values"])
    else:
        raise ValueError(f"unknown call {name!r}; choose from {CALLS}")


def time_calls(names) -> dict:
    """Best wall time [s] per call of at least REPEATS and at most MAX_REPEATS timed calls
    (more while they take less than BUDGET seconds in all), after one untimed warm-up call."""
    inputs = _setup()
    out = {}
    for name in names:
        _call(name, inputs)  # compile or load the kernels, fill caches a user would have
        best, spent, count = float("inf"), 0.0, 0
        while count < REPEATS or (count < MAX_REPEATS and spent < BUDGET):
            start = time.perf_counter()
            _call(name, inputs)
            took = time.perf_counter() - start
            best, spent, count = min(best, took), spent + took, count + 1
        out[name] = best
    return out


# ------------------------------------------------------------------------ how they run
def _environment(threads: str) -> dict:
    env = dict(os.environ)
    cpus = os.cpu_count() or 1
    if threads == "minus1":
        env["NUMBA_NUM_THREADS"] = str(max(1, cpus - 1))
    elif threads != "default":
        env["NUMBA_NUM_THREADS"] = str(int(threads))
    return env


def run_plain(names, threads: str) -> dict:
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); import bench_under_load as b; "
            "print(json.dumps(b.time_calls(sys.argv[2].split(','))))")
    result = subprocess.run([sys.executable, "-c", code, os.path.dirname(__file__),
                             ",".join(names)], env=_environment(threads), check=True,
                            capture_output=True, text=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def run_kernel(names, threads: str) -> dict:
    import nbformat
    from nbclient import NotebookClient

    source = (f"import json, sys\nsys.path.insert(0, {os.path.dirname(__file__)!r})\n"
              f"import bench_under_load as b\n"
              f"print(json.dumps(b.time_calls({list(names)!r})))")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source)]
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(_environment(threads))  # the kernel inherits this environment
    try:
        NotebookClient(notebook, timeout=3600, kernel_name="python3").execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    text = "".join(o.get("text", "") for o in notebook.cells[0].outputs
                   if o.get("output_type") == "stream")
    return json.loads(text.strip().splitlines()[-1])


def _spin(stop):
    while not stop.is_set():
        pass


class Busy:
    """``count`` processes spinning on a CPU each, while the block runs."""

    def __init__(self, count: int):
        self.count = count

    def __enter__(self):
        context = multiprocessing.get_context("spawn")
        self.stop = context.Event()
        self.processes = [context.Process(target=_spin, args=(self.stop,), daemon=True)
                          for _ in range(self.count)]
        for process in self.processes:
            process.start()
        time.sleep(0.5)
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for process in self.processes:
            process.join(5)
            if process.is_alive():
                process.terminate()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=2, help="busy processes beside the calls")
    parser.add_argument("--modes", default="plain,kernel")
    parser.add_argument("--threads", default="default,minus1,1")
    parser.add_argument("--calls", default=",".join(CALLS))
    args = parser.parse_args(argv)
    names = args.calls.split(",")
    runners = {"plain": run_plain, "kernel": run_kernel}
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} before the runs; "
          f"best of {REPEATS}-{MAX_REPEATS} per call; loaded = {args.busy} busy processes "
          "beside it")
    worst = 0.0
    header = f"{'mode':<7} {'threads':<8} {'call':<10} {'quiet [s]':>10} {'loaded [s]':>11} " \
             f"{'ratio':>6}"
    print(header)
    for mode in args.modes.split(","):
        for threads in args.threads.split(","):
            quiet = runners[mode](names, threads)
            with Busy(args.busy):
                loaded = runners[mode](names, threads)
            for name in names:
                ratio = loaded[name] / quiet[name]
                worst = max(worst, ratio)
                print(f"{mode:<7} {threads:<8} {name:<10} {quiet[name]:10.3f} "
                      f"{loaded[name]:11.3f} {ratio:6.2f}", flush=True)
    print(f"largest ratio loaded / quiet: {worst:.2f} (goal <= 3)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
