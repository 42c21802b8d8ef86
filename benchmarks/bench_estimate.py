"""Speed and memory of the noise-effect estimate (issue #10).

Run: ``python benchmarks/bench_estimate.py``.

Prints, for the event trace of a simulated run of 2 048 ranks and 10 000 phases (compute
and barrier, 4.1·10⁷ intervals):

* intervals per second of the timeline approximation (the numba kernel) and of the
  whole ``jl.estimate.accumulated_noise`` for one source, and the ratio of the kernel's
  rate to the plain-Python twin (``jitterlab.testing.timeline_reference``) on a small
  trace in the same process;
* the peak memory of a fresh process that builds the trace and estimates, at 1 000 and at
  10 000 phases, and their ratio (10 for memory linear in the trace).

Goal: the estimate of the large trace in under a minute on this 2-vCPU machine.
"""

from __future__ import annotations

import multiprocessing
import resource
import time

RANKS = 2048
PHASES = 10_000
WORK = 100e-6


def _events(ranks: int, phases: int):
    import jitterlab as jl

    trace = jl.Trace(jitter=[25e-6], gap=[1e-3 - 25e-6])
    return jl.simulate(trace, n=ranks, work=WORK, phases=phases, rng=1, detail="events")


def _high_water_mark() -> int:
    """Peak resident memory of this process image [bytes]: VmHWM, which, unlike
    ``ru_maxrss``, does not carry over the parent's peak through fork and exec."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _peak_memory(phases: int, queue) -> None:
    import jitterlab as jl

    events = _events(RANKS, phases)
    jl.estimate.accumulated_noise(events, sources="combined")
    queue.put((len(events), _high_water_mark()))


def peak_memory(phases: int) -> tuple[int, int]:
    """(intervals, peak resident memory [bytes]) of a fresh process."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=_peak_memory, args=(phases, queue))
    process.start()
    result = queue.get()
    process.join()
    return result


def best_of(function, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        function()
        times.append(time.perf_counter() - began)
    return min(times)


def timed_large() -> None:
    """Time the kernel and the whole estimate on the large trace, and print them."""
    import jitterlab as jl
    from jitterlab import estimate

    began = time.perf_counter()
    events = _events(RANKS, PHASES)
    built = time.perf_counter() - began
    prepared = estimate._prepare(events)
    noise = events.noise("combined")
    kernel = best_of(lambda: estimate._run(events, prepared, noise, False), 2)
    whole = best_of(lambda: jl.estimate.accumulated_noise(events, sources="combined"), 1)
    n = len(events)
    print(f"trace: {RANKS} ranks x {PHASES} phases = {n:.3g} intervals "
          f"(simulated and checked in {built:.1f} s)")
    print(f"timeline kernel:          {kernel:6.2f} s  {n / kernel / 1e6:6.1f} M intervals/s")
    print(f"accumulated_noise (1 src): {whole:6.2f} s  {n / whole / 1e6:6.1f} M intervals/s "
          f"(goal: under 60 s)")


def main() -> None:
    from jitterlab import estimate
    from jitterlab.testing import timeline_reference

    small = _events(64, 300)
    estimate.approximate_timeline(small)  # compile outside the timings
    reference_rate = len(small) / best_of(lambda: timeline_reference(small), 1)
    kernel_small = len(small) / best_of(lambda: estimate.approximate_timeline(small))

    timed_large()
    print(f"kernel / plain-Python twin on {len(small)} intervals: "
          f"{kernel_small / reference_rate:,.0f}x")
    few, few_bytes = peak_memory(PHASES // 10)
    many, many_bytes = peak_memory(PHASES)
    print(f"peak memory: {few_bytes / 2**30:.2f} GiB for {few:.3g} intervals, "
          f"{many_bytes / 2**30:.2f} GiB for {many:.3g}: ratio {many_bytes / few_bytes:.1f} "
          f"for {many / few:.0f}x the intervals ({many_bytes / many:.0f} bytes per interval)")


if __name__ == "__main__":
    main()
