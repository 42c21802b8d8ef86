"""Benchmark of max-of-N on a measured-size sample: Monte Carlo and the exact method.

Prints, from one run on this machine:

* Monte Carlo draws per second of ``jl.max_of_n(..., method="montecarlo")`` and of a
  numpy baseline (``rng.choice(sample, (R, N)).max(axis=1)``) at N = 10^5 on a
  10^6-value empirical sample, and their ratio (target >= 50x);
* the exact method's time per value of N, N from 1 to 10^9, after the one-time sort
  done when the ``Empirical`` is built (target <= 2 ms).

Run: ``python benchmarks/bench_max_of_n.py [--quick]``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import jitterlab as jl


def best_of(fn, repeats: int) -> float:
    """Shortest wall time of ``repeats`` calls [s] (the least disturbed run)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer replicates (for CI)")
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    sample = rng.gamma(2.0, 5e-6, 10**6) + 1e-3  # a 10^6-value FWQ-like sample [s]
    start = time.perf_counter()
    model = jl.noise.Empirical(sample)
    sort_time = time.perf_counter() - start
    n = 10**5
    replicates = 200 if args.quick else 2000
    baseline_replicates = 20 if args.quick else 100
    repeats = 2 if args.quick else 3

    # warm up the kernel (compilation is cached on disk, loading it is not free)
    jl.max_of_n(model, n=n, method="montecarlo", replicates=4, rng=1, quantiles=[0.5])
    ours = best_of(lambda: jl.max_of_n(model, n=n, method="montecarlo", replicates=replicates,
                                       rng=1, quantiles=[0.5]), repeats)
    gen = np.random.default_rng(1)
    baseline = best_of(lambda: gen.choice(sample, (baseline_replicates, n)).max(axis=1),
                       repeats)
    ours_rate = replicates * n / ours
    baseline_rate = baseline_replicates * n / baseline
    print(f"Monte Carlo, N = {n:.0e}, sample of {sample.size:.0e} values:")
    print(f"  jitterlab     {ours_rate:10.3e} draws/s  ({replicates} replicates)")
    print(f"  numpy choice  {baseline_rate:10.3e} draws/s  ({baseline_replicates} replicates)")
    print(f"  ratio         {ours_rate / baseline_rate:10.1f} x   (target >= 50 x)")

    print(f"Exact method, one-time sort of the sample: {sort_time * 1e3:.1f} ms")
    n_values = [1, 2, 10, 100, 10**3, 10**4, 10**5, 10**6, 10**7, 10**8, 10**9]
    worst = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jl.noise.TailWarning)
        jl.max_of_n(model, n=n_values)
        for k in n_values:
            elapsed = best_of(lambda k=k: jl.max_of_n(model, n=k), repeats + 2)
            worst = max(worst, elapsed)
            print(f"  N = {k:>10d}: {elapsed * 1e3:7.3f} ms")
        total = best_of(lambda: jl.max_of_n(model, n=n_values), repeats)
    print(f"  all {len(n_values)} values in one call: {total * 1e3:.2f} ms "
          f"({total / len(n_values) * 1e3:.3f} ms per N); slowest single call "
          f"{worst * 1e3:.3f} ms (target <= 2 ms per N)")


if __name__ == "__main__":
    main()
