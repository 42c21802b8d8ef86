"""The recording plan of :mod:`jitterlab.recipes.record_measurements`: one job per file.

Each job is a dict: the file name (names do not depend on the durations), its kind and
variant, what it is, its units, how to load it, and the command line (``jitterlab measure
...``, under ``mpiexec`` for the MPI benchmarks) that records it. :func:`plan` turns the
parsed options into the jobs, in the order they run.
"""

from __future__ import annotations

import os
import sys

import numpy as np

#: kinds of measurement this program records
KINDS = ("detour", "fwq", "pb", "latency", "bsp")
#: recording steps (``--only``): one per kind, and the jitSim session (detour + pb files)
STEPS = (*KINDS, "session")
#: variants of each kind, in the order the manifest lists them
VARIANTS = ("fixed_threshold", "default_threshold", "lcg", "default", "no_wait_no_bcast",
            "no_bcast", "no_wait", "session", "polled", "polled_injected", "blocking",
            "blocking_injected")
#: PB set-ups: variant -> (benchmark flags, what they mean); the 2-rank runs cover all
PB_SETUPS = {
    "default": ([], "with the random wait and the broadcast of Algorithm 1 (Garg & De "
                "Fig. 3)"),
    "no_wait_no_bcast": (["--no-random-wait", "--no-broadcast"],
                         "without the random wait and the broadcast"),
    "no_bcast": (["--no-broadcast"], "with the random wait, without the broadcast (Garg & "
                 "De Fig. 4)"),
    "no_wait": (["--no-random-wait"], "with the broadcast, without the random wait (the "
                "two-process effect of Garg & De Fig. 5)"),
}
#: larger work quanta of 2-rank PB runs (with random wait and broadcast): Garg & De's
#: Fig. 11(b) (13 ms) and Fig. 6(b) (83 ms)
PB_LARGE_WORKS = (13e-3, 83e-3)
#: ranks of the jitSim session's compute-barrier loops (De & Mann 2010, Fig. 7)
SESSION_RANKS = (1, 2, 4, 8)
#: Garg & De's work quanta: 300 µs (Fig. 6-9, 11), 13 ms (Fig. 11), 83 ms (Fig. 6)
FWQ_WORKS = (300e-6, 13e-3, 83e-3)
#: ranks of the PB runs; those above the number of CPUs are oversubscribed
PB_RANKS = (2, 4, 8)
#: ranks of the latency runs (those above the number of CPUs are oversubscribed)
LATENCY_RANKS = (2, 4, 8)
QUICK = {"detour_seconds": 3.0, "default_threshold_seconds": 2.0, "fwq_seconds": 3.0,
         "pb_seconds": 5.0, "latency_round_trips": 200, "latency_barriers": 1000,
         "session_detour_seconds": 3.0, "session_pb_seconds": 3.0, "bsp_phases": 200,
         "bsp_polled_pairs": 1, "bsp_blocking_pairs": 1}
FULL = {"detour_seconds": 60.0, "default_threshold_seconds": 5.0, "fwq_seconds": 60.0,
        "pb_seconds": 60.0, "latency_round_trips": 1000, "latency_barriers": 5000,
        "session_detour_seconds": 15.0, "session_pb_seconds": 20.0, "bsp_phases": 1000,
        "bsp_polled_pairs": 4, "bsp_blocking_pairs": 2}
#: fewest FWQ samples per quantum, whatever the duration
MIN_FWQ_SAMPLES = 30
#: BSP runs (issue #10): ranks, work per phase [s], injector period and duration [s]
BSP_RANKS = 2
BSP_WORK = 1e-3
BSP_INJECT_PERIOD = 10e-3
BSP_INJECT_DURATION = 500e-6
#: BSP collectives: variant (with "_injected" for the runs with the injector) ->
#: (benchmark flags, what they are)
BSP_SETUPS = {
    "polled": (["--poll"], "polled collective (MPI_Ibarrier + MPI_Test loop that records "
               "its own interruptions)"),
    "blocking": ([], "blocking MPI_Barrier (nothing observed inside it)"),
}


def time_label(seconds: float, space: str = "", micro: str = "u") -> str:
    """A duration for file names: 300e-6 -> '300us', 13e-3 -> '13ms', 2.5 -> '2.5s'.

    Parameters
    ----------
    seconds : float
        The duration [s].
    space, micro : str
        Put between number and unit, and the prefix of microseconds: ``" "`` and ``"µ"``
        give text, '300 µs' (:func:`time_text`).
    """
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, f"{micro}s"), (1e-9, "ns")):
        if seconds >= scale * (1 - 1e-9):
            return f"{seconds / scale:.6g}{space}{unit}"
    return f"{seconds:g}{space}s"


def time_text(seconds: float) -> str:
    """A duration [s] for text: 300e-6 -> '300 µs'."""
    return time_label(seconds, " ", "µ")



def plan(args) -> list[dict]:
    """One job per file: the command line, what it is, and how to describe it.

    Parameters
    ----------
    args : argparse.Namespace
        The options of :func:`jitterlab.recipes.record_measurements.parse_args`.

    Returns
    -------
    list of dict
        One job per file, in the order they run: ``file``, ``kind``, ``variant``,
        ``argv`` (the command, run in the output folder), ``description``, ``units``,
        ``loader`` and the job's own numbers (``cpu``, ``ranks``, ``work`` [s] ...).

    Raises
    ------
    SystemExit
        When ``--variants`` and ``--works`` leave no job of the chosen steps.
    """
    jitterlab, mpiexec = "jitterlab", "mpiexec"
    jobs = []
    threshold_ns = args.threshold_ns
    if "detour" in args.only:
        for cpu in args.cpus:
            jobs.append(detour_job(
                cpu, "fixed_threshold", f"detour_cpu{cpu}_thr{threshold_ns:g}ns.parquet",
                threshold_ns, args.detour_seconds,
                f"detour trace of CPU {cpu}: every iteration of a busy loop over the "
                f"timestamp counter longer than {threshold_ns:g} ns (start, duration), as a "
                "jitSim-style (jitter, gap) trace"))
        for cpu in args.cpus:
            name = f"detour_cpu{cpu}_default_threshold.parquet"
            jobs.append({
                "file": name, "kind": "detour", "variant": "default_threshold", "cpu": cpu,
                "threshold": None, "duration": args.default_threshold_seconds,
                "argv": [jitterlab, "measure", "detour", "--duration",
                         f"{args.default_threshold_seconds:g}", "--cpu", str(cpu),
                         "--output", name, "--force"],
                "description": f"detour trace of CPU {cpu} at jitterlab's default threshold "
                               "max(10 t_min, 4 median loop time); its attributes record "
                               "t_min, the median loop time (resolution) and that threshold",
                "units": {"jitter": "cycles", "gap": "cycles"},
                "loader": f"jitterlab.datasets.load_detour(cpu={cpu}, "
                          "variant='default_threshold')"})
    if "fwq" in args.only:
        for work in FWQ_WORKS:
            samples = max(MIN_FWQ_SAMPLES, int(round(args.fwq_seconds / work)))
            name = f"fwq_cpu{args.fwq_cpu}_w{time_label(work)}.nc"
            jobs.append({
                "file": name, "kind": "fwq", "variant": "lcg", "cpu": args.fwq_cpu,
                "work": work, "duration": samples * work,
                "argv": [jitterlab, "measure", "fwq", "--work", f"{work:g}", "--samples",
                         str(samples), "--cpu", str(args.fwq_cpu), "--output", name,
                         "--force"],
                "description": f"FWQ: {samples} quanta of w = {time_text(work)} of LCG work "
                               f"(Garg & De 2006, eq. 3) timed back to back on CPU "
                               f"{args.fwq_cpu}: samples of w + δ",
                "units": {"iteration_time": "s"},
                "loader": f"jitterlab.datasets.load_fwq({work:g})"})
    if "pb" in args.only:
        runs = [(2, variant, args.pb_work) for variant in PB_SETUPS] + [
            (2, "default", work) for work in PB_LARGE_WORKS] + [
            (ranks, "default", args.pb_work) for ranks in PB_RANKS if ranks != 2]
        for ranks, variant, work in runs:
            jobs.append(pb_job(ranks, variant, work, args.pb_seconds,
                               args.pb_max_samples, PB_SETUPS[variant]))
    if "latency" in args.only:
        for ranks in LATENCY_RANKS:
            name = f"latency_{ranks}ranks.nc"
            oversubscribed = ranks > (os.cpu_count() or 1)
            description = (f"latency, {ranks} ranks: {args.latency_round_trips} ping-pong "
                           "round trips of 8 bytes between every pair of ranks (one-way "
                           "latency τ = half a round trip) and "
                           f"{args.latency_barriers} empty barriers")
            if oversubscribed:
                description += (f"; OVERSUBSCRIBED: {ranks} ranks on {os.cpu_count()} CPUs, "
                                "so messages and barriers wait for descheduled ranks")
            jobs.append({
                "file": name, "kind": "latency", "variant": "default", "ranks": ranks,
                "oversubscribed": oversubscribed,
                "round_trips": args.latency_round_trips, "barriers": args.latency_barriers,
                "argv": [mpiexec, "-n", str(ranks), jitterlab, "measure", "latency",
                         "--round-trips", str(args.latency_round_trips), "--barriers",
                         str(args.latency_barriers), "--output", name, "--force"],
                "description": description,
                "units": {"ping_pong": "s", "barrier": "s"},
                "loader": f"jitterlab.datasets.load_latency(ranks={ranks})"})
    if "session" in args.only:
        jobs += session_jobs(args)
    if "bsp" in args.only:
        jobs += bsp_jobs(args)
    if args.variants:
        jobs = [job for job in jobs if job["variant"] in args.variants]
    if args.works:
        jobs = [job for job in jobs if job.get("work") is not None
                and any(np.isclose(job["work"], work, rtol=1e-9) for work in args.works)]
    if not jobs:
        sys.exit(f"record_measurements: no measurement of {', '.join(args.only)} has a "
                 f"variant in {args.variants} and a work quantum in {args.works}")
    return jobs


def detour_job(cpu: int, variant: str, name: str, threshold_ns: float, seconds: float,
               description: str) -> dict:
    """One detour trace of one CPU at a fixed threshold."""
    return {
        "file": name, "kind": "detour", "variant": variant, "cpu": cpu,
        "threshold": threshold_ns * 1e-9, "duration": seconds,
        "argv": ["jitterlab", "measure", "detour", "--duration", f"{seconds:g}", "--cpu",
                 str(cpu), "--threshold", f"{threshold_ns:g}", "--output", name, "--force"],
        "description": description,
        "units": {"jitter": "cycles", "gap": "cycles"},
        "loader": (f"jitterlab.datasets.load_detour(cpu={cpu}"
                   + ("" if variant == "fixed_threshold" else f", variant={variant!r}") + ")")}


def pb_job(ranks: int, variant: str, work: float, seconds: float, max_samples: int,
           setup: tuple[list[str], str], note: str = "") -> dict:
    """One Parallel Benchmark run under ``mpiexec -n ranks``."""
    flags, what = setup
    suffix = "" if variant == "default" else f"_{variant}"
    name = f"pb_{ranks}ranks_w{time_label(work)}{suffix}.nc"
    oversubscribed = ranks > (os.cpu_count() or 1)
    description = (f"Parallel Benchmark (Garg & De 2006, Algorithm 1), {ranks} "
                   f"rank{'s' * (ranks != 1)}, w = {time_text(work)}, {what}{note}")
    if oversubscribed:
        description += (f"; OVERSUBSCRIBED: {ranks} ranks on {os.cpu_count()} CPUs, "
                        "so the ranks take turns and their noise is not independent")
    return {
        "file": name, "kind": "pb", "variant": variant, "ranks": ranks,
        "work": work, "duration": seconds, "oversubscribed": oversubscribed,
        "max_samples": max_samples,
        "argv": ["mpiexec", "-n", str(ranks), "jitterlab", "measure", "pb", "--work",
                 f"{work:g}", "--duration", f"{seconds:g}", "--max-samples",
                 str(max_samples), "--output", name, *flags, "--force"],
        "description": description,
        "units": {"compute": "s", "barrier": "s", "iteration": "s"},
        "loader": (f"jitterlab.datasets.load_pb(ranks={ranks}"
                   + ("" if variant == "default" else f", variant={variant!r}") + ")")}


def session_jobs(args) -> list[dict]:
    """The jitSim session (De & Mann 2010, §4.1, Fig. 7): a detour trace of every CPU,
    then the compute-barrier loop (PB without random wait and broadcast) at 1, 2, 4 and
    8 ranks, one right after the other."""
    jobs = []
    threshold_ns = args.threshold_ns
    for cpu in args.cpus:
        jobs.append(detour_job(
            cpu, "session", f"detour_cpu{cpu}_session.parquet", threshold_ns,
            args.session_detour_seconds,
            f"detour trace of CPU {cpu} (threshold {threshold_ns:g} ns) of the jitSim "
            "session: recorded right before the session's compute-barrier loops, to feed "
            "jitterlab.simulate (De & Mann 2010, Fig. 7)"))
    loop = (["--no-random-wait", "--no-broadcast"],
            "the compute-barrier loop of jitSim (no random wait, no broadcast)")
    for ranks in SESSION_RANKS:
        jobs.append(pb_job(ranks, "session", args.pb_work, args.session_pb_seconds,
                           args.session_max_samples, loop,
                           note=", recorded right after the session's detour traces "
                                "(De & Mann 2010, Fig. 7)"))
    return jobs


def bsp_jobs(args) -> list[dict]:
    """BSP runs (issue #10): pairs without/with the injector, polled and blocking,
    interleaved (see the module docstring, step 6)."""
    pairs = {"polled": args.bsp_polled_pairs, "blocking": args.bsp_blocking_pairs}
    period, duration = BSP_INJECT_PERIOD, BSP_INJECT_DURATION
    jobs = []
    for repeat in range(1, max(pairs.values()) + 1):
        variants = list(BSP_SETUPS) if repeat % 2 else list(BSP_SETUPS)[::-1]
        for variant in [v for v in variants if repeat <= pairs[v]]:
            flags, what = BSP_SETUPS[variant]
            for injector in ((False, True) if repeat % 2 else (True, False)):
                name = (f"bsp_{BSP_RANKS}ranks_w{time_label(BSP_WORK)}_{variant}"
                        + (f"_inject{time_label(duration)}_{time_label(period)}"
                           if injector else "") + f"_r{repeat}.nc")
                injection = (["--inject-period", f"{period:g}", "--inject-duration",
                              f"{duration:g}", "--inject-seed", str(repeat)]
                             if injector else [])
                jobs.append({
                    "file": name, "kind": "bsp",
                    "variant": variant + ("_injected" if injector else ""), "ranks": BSP_RANKS,
                    "work": BSP_WORK, "injector": injector, "repeat": repeat,
                    "phases": args.bsp_phases, "threshold": None, "duration": None,
                    "argv": ["mpiexec", "-n", str(BSP_RANKS), "jitterlab", "measure", "bsp",
                             "--phases", str(args.bsp_phases), "--work", f"{BSP_WORK:g}",
                             *flags, *injection, "-o", name, "--no-progress", "--force"],
                    "description": (
                        f"BSP run with its event trace and every interruption (issue #10, "
                        f"validation 2; Nataraj et al., seed 003): {BSP_RANKS} ranks, "
                        f"{args.bsp_phases} phases of {time_text(BSP_WORK)} busy-loop work "
                        f"+ {what}, " + (f"injector: a busy detour of {time_text(duration)} "
                                         f"every {time_text(period)} per rank (seed {repeat})"
                                         if injector else "no injection")
                        + f"; pair {repeat}"),
                    "units": {"records (compute_start, ..., collective_noise)":
                              "timestamp-counter cycles (clock_frequency_hz converts)",
                              "interruption_records (start, duration)": "cycles",
                              "event trace (read_bsp), read_bsp_interruptions": "s"},
                    "loader": f"jitterlab.bench.read_bsp(jitterlab.datasets."
                              f"measurement_path({name!r}))"})
    return jobs

