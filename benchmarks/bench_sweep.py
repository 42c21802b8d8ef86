"""Benchmark of ``jl.sweep``: serial against a two-process Dask LocalCluster; cost per point.

Prints, from one run on this machine:

* the wall time of a 64-point grid of ``jl.simulate`` runs (N × work × tree fanout × start ×
  phases, 0.05-0.5 s each) evaluated serially and on ``local_cluster(2)`` (two worker
  processes, one thread each, numba limited to one thread per worker; ``sweep``'s default
  tasks, which shrink from 16 points to 1), and their ratio. The
  serial run has numba on one thread, as each worker runs: the ratio measures what the
  cluster adds over one core. With ``--numba-threads`` the serial run is also timed with
  numba's default thread count (``jl.simulate``'s kernels are themselves parallel): what a
  user gains over a plain serial sweep (on a busy machine numba's threads oversubscribe the
  cores and that run can take minutes);
* the time per point for a trivial function (a one-number Dataset), serial and on the
  cluster with one and with 50 points per task: what the sweep machinery itself costs (task
  round trip, labelling, assembly);
* the same points on two plain worker processes (a ``multiprocessing`` pool, no Dask): the
  speed-up two cores allow at that moment, to tell Dask's cost from other work on the machine;
* each way is run ``--repeat`` times, interleaved, and the fastest run of each is compared;
* the cluster's start-up time (not included in the ratios) and the load average before and
  after, since the two cores may be shared with other work.

Goal: ratio >= 1.7 for serial (one numba thread) / LocalCluster(2 workers).
Run: ``python benchmarks/bench_sweep.py [--quick] [--repeat N] [--numba-threads]``.
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing
import os
import time
import warnings

import numba
import numpy as np
import xarray as xr

import jitterlab as jl
from jitterlab.sweep import local_cluster, sweep


def trivial(x):
    """The cheapest point: a one-number Dataset."""
    return xr.Dataset({"y": ((), 2.0 * x)})


_TRACE = None


def _keep_trace(trace):
    global _TRACE
    _TRACE = trace


def _simulate_point(kwargs):
    """One point in a plain worker process (the no-Dask ceiling)."""
    return float(jl.simulate(_TRACE, **kwargs)["slowdown"])


def plain_pool(trace, processes=2):
    """A multiprocessing pool with one numba thread per process (the no-Dask ceiling)."""
    saved = os.environ.get("NUMBA_NUM_THREADS")
    os.environ["NUMBA_NUM_THREADS"] = "1"  # read by numba when the spawned process imports it
    try:
        return multiprocessing.get_context("spawn").Pool(
            processes, initializer=_keep_trace, initargs=(trace,))
    finally:
        if saved is None:
            os.environ.pop("NUMBA_NUM_THREADS")
        else:
            os.environ["NUMBA_NUM_THREADS"] = saved


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="16 points instead of 64 (CI)")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved runs of each way")
    parser.add_argument("--numba-threads", action="store_true",
                        help="also time the serial sweep with numba's default thread count "
                             "(on a busy machine it can take minutes)")
    args = parser.parse_args(argv)
    from distributed import Client

    trace = jl.synthetic_trace(20.0, rng=1, source="benchmark")
    grid = {"n": [2**14, 2**15], "work": [1e-4, 1e-3, 1e-2, 1e-1],
            "barrier": [jl.TreeBarrier(fanout=2, send=1e-6, recv=1e-6, latency=2e-6),
                        jl.TreeBarrier(fanout=4, send=1e-6, recv=1e-6, latency=2e-6)],
            "start": ["random", "synchronized"], "phases": [20, 40]}
    if args.quick:
        grid["work"], grid["phases"] = [1e-4, 1e-2], [20]
    labels = {"barrier": ["tree-2", "tree-4"]}
    n_points = int(np.prod([len(v) for v in grid.values()]))
    fixed = {"trace": trace, "rng": 7, "labels": labels, "progress": False}
    print(f"{n_points}-point grid of jl.simulate on a {trace.duration:.0f} s synthetic trace; "
          f"{os.cpu_count()} cores; load average before: {load()}")

    default_threads = numba.get_num_threads()
    small = {name: values[:1] for name, values in grid.items()}
    warm = {**fixed, "labels": {"barrier": ["tree-2"]}}
    sweep(jl.simulate, small, **warm)  # load the compiled kernels in this process
    reference = sweep(jl.simulate, grid, **fixed)
    seeds = reference["point_seed"].values.ravel()
    points = [{**dict(zip(grid, values, strict=True)), "rng": int(seed)}
              for values, seed in zip(itertools.product(*grid.values()), seeds, strict=True)]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # start-up chatter of the cluster
        (cluster, client), t_start = timed(lambda: (lambda c: (c, Client(c)))(
            local_cluster(n_workers=2)))
    pool = plain_pool(trace)
    times = {"serial1": [], "serial": [], "cluster": [], "plain": []}
    try:
        threads = client.run(numba.get_num_threads)
        sweep(jl.simulate, small, client=client, **warm)  # import and load kernels on workers
        pool.map(_simulate_point, points[:2], chunksize=1)
        # interleaved repeats: other work on the machine comes and goes, so each way is
        # timed several times and its fastest run compared (the least disturbed one)
        for _ in range(args.repeat):
            numba.set_num_threads(1)
            result, seconds = timed(lambda: sweep(jl.simulate, grid, **fixed))
            times["serial1"].append(seconds)
            xr.testing.assert_identical(reference, result)
            numba.set_num_threads(default_threads)
            result, seconds = timed(lambda: sweep(jl.simulate, grid, client=client, **fixed))
            times["cluster"].append(seconds)
            xr.testing.assert_identical(reference, result)
            slowdowns, seconds = timed(lambda: pool.map(_simulate_point, points, chunksize=1))
            times["plain"].append(seconds)
            # the sweep's points are the direct calls with their recorded seeds
            assert slowdowns == reference["slowdown"].values.ravel().tolist()
            if args.numba_threads:
                result, seconds = timed(lambda: sweep(jl.simulate, grid, **fixed))
                times["serial"].append(seconds)
                xr.testing.assert_identical(reference, result)

        trivial_grid = {"x": list(range(200 if args.quick else 500))}
        sweep(trivial, {"x": [0]}, client=client, progress=False)
        _, t_trivial_serial = timed(lambda: sweep(trivial, trivial_grid, progress=False))
        _, t_trivial_dask = timed(lambda: sweep(trivial, trivial_grid, client=client,
                                                progress=False, points_per_task=1))
        _, t_trivial_batched = timed(lambda: sweep(trivial, trivial_grid, client=client,
                                                   progress=False, points_per_task=50))
    finally:
        pool.close()
        pool.join()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            client.close()
            cluster.close()

    best = {way: min(values) for way, values in times.items() if values}

    def line(label, way):
        runs = " ".join(f"{t:.2f}" for t in times[way])
        print(f"{label:<58} best {best[way]:6.2f} s  (runs: {runs})")

    print(f"wall time of the {n_points} points, {args.repeat} interleaved runs each:")
    line("serial, numba 1 thread", "serial1")
    if args.numba_threads:
        line(f"serial, numba {default_threads} threads (its default)", "serial")
    line(f"LocalCluster, 2 workers x 1 thread (numba threads {sorted(set(threads.values()))})",
         "cluster")
    line("2 plain processes (multiprocessing, no Dask)", "plain")
    print(f"cluster start-up {t_start:.1f} s (not counted); "
          f"{best['serial1'] / n_points:.3f} s per point serially")
    print(f"ratio serial (1 thread) / cluster:         {best['serial1'] / best['cluster']:5.2f}"
          f"  (goal >= 1.7)")
    print(f"ratio serial (1 thread) / plain processes: {best['serial1'] / best['plain']:5.2f}"
          f"  (what two cores gave during this run)")
    if args.numba_threads:
        print(f"ratio serial ({default_threads} threads) / cluster:        "
              f"{best['serial'] / best['cluster']:5.2f}")
    print("identical Datasets serial / cluster / plain processes: yes")
    n_trivial = len(trivial_grid["x"])
    print(f"per-point overhead ({n_trivial} trivial points): serial "
          f"{t_trivial_serial / n_trivial * 1e3:.2f} ms, cluster "
          f"{t_trivial_dask / n_trivial * 1e3:.2f} ms, cluster with 50 points per task "
          f"{t_trivial_batched / n_trivial * 1e3:.2f} ms")
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
