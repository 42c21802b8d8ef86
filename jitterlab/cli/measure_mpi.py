"""``jitterlab measure pb | latency | bsp``: the benchmarks that run under MPI (mpiexec), and
the summaries of their results (also printed by ``jitterlab info``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from . import common
from .common import (
    command_line,
    configure_logging,
    file_suffix,
    format_seconds,
    launcher_rank,
    print_error,
)

__all__ = ["add_measure_pb", "add_measure_latency", "add_measure_bsp", "launcher_rank",
           "print_pb_summary", "print_latency_summary", "print_bsp_summary"]


def add_measure_pb(benchmarks) -> None:
    """Add ``measure pb`` to the benchmarks of ``measure``."""
    pb = benchmarks.add_parser(
        "pb",
        help="Parallel Benchmark under MPI: compute, barrier and iteration times per rank",
        description="Garg & De's Parallel Benchmark; run it under MPI: mpiexec -n N jitterlab "
        "measure pb .... Every rank repeats: a random busy-wait, a barrier, WORK seconds of "
        "calibrated work, a barrier, and (by default) a broadcast of rank 0's elapsed time; "
        "it records the compute, barrier and iteration time of every iteration. The samples "
        "are gathered to rank 0 every few seconds and stored in FILE.pb/, so a killed run "
        "keeps every completed chunk; at the end rank 0 writes FILE (netCDF) and removes the "
        "chunks. Only rank 0 prints. Needs mpi4py (pip install 'jitterlab[mpi]').",
    )
    pb.add_argument("--work", metavar="S", type=float, required=True,
                    help="undisturbed length of the work of one iteration in seconds "
                    "(e.g. 300e-6)")
    pb.add_argument("--duration", metavar="S", type=float, required=True,
                    help="measured time in seconds")
    common.add_output_options(pb, "result file (.nc, netCDF)")
    pb.add_argument("--no-random-wait", action="store_true",
                    help="no random busy-wait before the first barrier of an iteration")
    pb.add_argument("--max-wait", metavar="S", type=float, default=None,
                    help="longest random wait in seconds (default: WORK)")
    pb.add_argument("--no-broadcast", action="store_true",
                    help="no broadcast of rank 0's elapsed time after each iteration (the "
                    "ranks agree on the number of iterations between chunks instead)")
    pb.add_argument("--seed", metavar="N", type=int, default=0,
                    help="seed of the random waits; rank r draws from (N, r) (default: 0)")
    pb.add_argument("--chunk-seconds", metavar="S", type=float, default=2.0,
                    help="gather and store the samples every S seconds (default: 2)")
    pb.add_argument("--max-samples", metavar="N", type=int, default=None,
                    help="keep at most N raw samples per rank (the histograms count every "
                    "iteration; default: keep all)")
    common.finish_benchmark_parser(pb, _measure_pb, ".pb", mpi=True)


def add_measure_latency(benchmarks) -> None:
    """Add ``measure latency`` to the benchmarks of ``measure``."""
    lat = benchmarks.add_parser(
        "latency",
        help="one-way latency (ping-pong between rank pairs) and empty-barrier time under MPI",
        description="Measure the one-hop latency τ of Theorem 1 under MPI; run it under MPI: "
        "mpiexec -n N jitterlab measure latency .... For every pair of ranks in turn, the "
        "lower rank sends an 8-byte message to the higher one and gets it back, ROUND_TRIPS "
        "times, timing each round trip (τ is half of it) while the other ranks sleep in a "
        "barrier; then all ranks time BARRIERS back-to-back empty barriers. Each pair and "
        "each block of barriers is stored in FILE.latency/ as it completes, so a killed run "
        "keeps every completed chunk; at the end rank 0 writes FILE (netCDF) and removes the "
        "chunks. Only rank 0 prints. Needs at least 2 ranks and mpi4py (pip install "
        "'jitterlab[mpi]').",
    )
    lat.add_argument("--round-trips", metavar="N", type=int, default=1000,
                     help="timed round trips per pair of ranks (default: 1000)")
    lat.add_argument("--barriers", metavar="N", type=int, default=10000,
                     help="timed empty barriers (default: 10000)")
    common.add_output_options(lat, "result file (.nc, netCDF)")
    common.finish_benchmark_parser(lat, _measure_latency, ".latency", mpi=True)


def add_measure_bsp(benchmarks) -> None:
    """Add ``measure bsp`` to the benchmarks of ``measure``."""
    bsp = benchmarks.add_parser(
        "bsp",
        help="BSP run under MPI (compute + barrier/allreduce) that writes its event trace",
        description="A bulk-synchronous run that records its own event trace with the local "
        "noise of every compute interval (Nataraj et al., seed 003); run it under MPI on one "
        "host: mpiexec -n N jitterlab measure bsp .... Every rank repeats PHASES times: a "
        "timestamp-counter busy loop until WORK seconds of undisturbed loop time are done "
        "(interruptions above the threshold are recorded as noise and lengthen the "
        "interval), then MPI_Barrier or MPI_Allreduce. An optional seeded injector spins "
        "away --inject-duration every --inject-period inside the compute intervals "
        "(recorded as noise_injected). The records are stored in FILE.bsp/ chunk by chunk; "
        "at the end rank 0 writes FILE (netCDF), read by jitterlab.measure.read_bsp. Only "
        "rank 0 prints. Needs mpi4py (pip install 'jitterlab[mpi]').",
    )
    bsp.add_argument("--phases", metavar="P", type=int, required=True,
                     help="number of phases (compute + collective)")
    bsp.add_argument("--work", metavar="S", type=float, required=True,
                     help="undisturbed busy-loop time of one compute interval in seconds "
                     "(e.g. 1e-3)")
    bsp.add_argument("--collective", choices=("barrier", "allreduce"), default="barrier",
                     help="collective after each compute interval (default: barrier)")
    bsp.add_argument("--inject-period", metavar="S", type=float, default=None,
                     help="inject a busy detour every S seconds on every rank")
    bsp.add_argument("--inject-duration", metavar="S", type=float, default=None,
                     help="length of an injected detour in seconds (< the period)")
    bsp.add_argument("--inject-seed", metavar="N", type=int, default=0,
                     help="seed of the injector's random phase; rank r draws from (N, r) "
                     "(default: 0)")
    bsp.add_argument("--threshold", metavar="S", type=float, default=None,
                     help="loop steps longer than S seconds are interruptions (default: as "
                     "the detour benchmark, max(10 t_min, 4 median loop time))")
    bsp.add_argument("--poll", action="store_true",
                     help="start the collective non-blocking and complete it with a loop of "
                     "MPI_Test that records its own interruptions (longer than max(threshold, "
                     "10 us)) as the collective's noise; default: a blocking collective, "
                     "whose noise cannot be observed and is recorded as 0")
    bsp.add_argument("--chunk-seconds", metavar="S", type=float, default=1.0,
                     help="gather and store the records about every S seconds (default: 1)")
    common.add_output_options(bsp, "result file (.nc, netCDF)", short=True)
    common.finish_benchmark_parser(bsp, _measure_bsp, ".bsp", mpi=True)


def _run_under_mpi(args: argparse.Namespace, parser: argparse.ArgumentParser, name: str,
                   module, run, print_summary) -> int:
    """Run an MPI benchmark of ``module`` (``pb`` or ``latency``) from the command line.

    ``run()`` starts the measurement on every rank and returns the Dataset on rank 0;
    ``print_summary(path, dataset)`` prints it. Rank 0 checks the output first; every
    rank exits with the same status.
    """
    from ..measure import CycleCounterError

    try:
        from mpi4py import MPI
    except ImportError:
        return print_error(parser, f"measure {name} needs mpi4py and an MPI library: pip install "
                      "'jitterlab[mpi]', then run it under mpiexec -n N")
    comm = MPI.COMM_WORLD
    root = comm.Get_rank() == 0

    def fail(message: str, status: int = 2) -> int:
        if root:
            if status == 2:
                parser.error(message)  # usage, message, exit status 2
            print_error(parser, message, status)
        return status

    output: Path = args.output
    if file_suffix(output) != ".nc" or output.name.lower().endswith(".gz"):
        return fail(f"cannot tell the output format from {output.name!r}: use .nc (netCDF)")
    store = module.store_path(output)
    # rank 0 decides before anything is measured; every rank exits with the same status
    problem = module.target_problem(output, args.force) if root else None
    problem = comm.bcast(problem, root=0)
    if problem is not None:
        return fail(problem)
    configure_logging(False)
    reader = getattr(module, f"read_{name}")
    try:
        dataset = run()
    except ValueError as exc:
        return fail(str(exc))
    except (CycleCounterError, FileExistsError, RuntimeError, MPI.Exception) as exc:
        return fail(str(exc), 1)
    except KeyboardInterrupt:
        if not root:
            return 130
        try:
            dataset = reader(store)
        except ValueError as exc:
            return print_error(parser, f"interrupted; nothing to save ({exc})", 130)
        getattr(module, f"write_{name}")(dataset, output)
        print_summary(output, dataset)
        measured = dataset.attrs.get("measured_duration")
        after = "" if measured is None else f" after {measured:.3g} s"
        print(f"Interrupted{after}; the chunks stay in {store}", file=sys.stderr)
        return 130
    if root:
        print_summary(output, dataset)
    return 0


def _measure_pb(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from ..measure import pb

    return _run_under_mpi(args, parser, "pb", pb, lambda: pb.parallel_benchmark(
        args.work, args.duration, args.output, random_wait=not args.no_random_wait,
        broadcast=not args.no_broadcast, max_wait=args.max_wait, seed=args.seed,
        chunk_seconds=args.chunk_seconds, max_samples=args.max_samples,
        overwrite=args.force, keep_chunks=args.keep_chunks,
        progress=not args.no_progress, command=command_line(args)), print_pb_summary)


def _measure_latency(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from ..measure import latency

    return _run_under_mpi(args, parser, "latency", latency, lambda: latency.latency_benchmark(
        args.output, round_trips=args.round_trips, barriers=args.barriers,
        overwrite=args.force, keep_chunks=args.keep_chunks, progress=not args.no_progress,
        command=command_line(args), allow_large=args.force), print_latency_summary)


def _measure_bsp(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from ..measure import bsp

    return _run_under_mpi(args, parser, "bsp", bsp, lambda: bsp.bsp_benchmark(
        args.phases, args.work, args.output, collective=args.collective,
        inject_period=args.inject_period, inject_duration=args.inject_duration,
        inject_seed=args.inject_seed, threshold=args.threshold, poll=args.poll,
        chunk_seconds=args.chunk_seconds, overwrite=args.force, keep_chunks=args.keep_chunks,
        progress=not args.no_progress, command=command_line(args)), print_bsp_summary)


def print_bsp_summary(path: Path, events) -> None:
    """What a BSP run recorded: the set-up, then per rank its noise."""
    attrs = events.attrs
    state = "complete" if attrs.get("complete") else "incomplete"
    injector = (f"injected {format_seconds(attrs['inject_duration'])} every "
                f"{format_seconds(attrs['inject_period'])}" if attrs.get("injector")
                else "no injection")
    print(f"{path}: BSP run ({state}), {events.n_ranks} ranks, {attrs['phases_done']} phases "
          f"of w = {format_seconds(attrs['work'])} + {attrs['collective']}"
          f"{' (polled)' if attrs.get('poll') else ''}, {injector}; "
          f"{format_seconds(attrs['measured_duration'])} in phases")
    data = events.data
    for rank in range(events.n_ranks):
        rows = data[data["rank"] == rank]
        print(f"  rank {rank}: noise injected {format_seconds(rows['noise_injected'].sum())} "
              f"({attrs['injected_detours'][rank]} detours), other "
              f"{format_seconds(rows['noise_other'].sum())} ({attrs['interruptions'][rank]} "
              "interruptions)")


def print_latency_summary(path: Path, dataset) -> None:
    """τ from the ping-pong, the empty-barrier time, and the set-up."""
    from ..measure.latency import summarize_latency

    attrs = dataset.attrs
    n_ranks = attrs["n_ranks"]
    state = "complete" if attrs.get("complete") else "incomplete"
    print(f"{path}: latency ({state}), {n_ranks} ranks on {attrs['n_nodes']} "
          f"node{'s' * (attrs['n_nodes'] != 1)}, {attrs.get('mpi_vendor', 'MPI')} "
          f"{attrs.get('mpi_vendor_version', '')}; {dataset.sizes['pair']} "
          f"pair{'s' * (dataset.sizes['pair'] != 1)} x "
          f"{dataset.sizes['exchange']} round trips of {attrs['message_bytes']} bytes, "
          f"{dataset.sizes['sample']} barriers")
    summary = summarize_latency(dataset)
    level = f"{summary.attrs['confidence']:.0%}"
    for name, label, dim in (("tau", "one-way latency tau (median ping-pong / 2)", "exchange"),
                             ("barrier_time", "empty barrier (median)", "sample")):
        if dataset.sizes[dim] == 0:
            print(f"  {label}: not measured (the run stopped before)")
            continue
        low, high = summary[f"{name}_ci"].values
        mean = "tau_mean" if name == "tau" else "barrier_mean"
        print(f"  {label}: {format_seconds(summary[name])} ± "
              f"{format_seconds(summary[f'{name}_se'])} (SE; {level} interval "
              f"{format_seconds(low)} to {format_seconds(high)}); mean, noise included: "
              f"{format_seconds(summary[mean])}")
    if attrs.get("oversubscribed"):
        print("Note: more ranks than CPUs on a host: the ranks shared CPUs, so the times "
              "include waiting for descheduled ranks (see docs/measure.md).")


def print_pb_summary(path: Path, dataset) -> None:
    """What a Parallel Benchmark run measured: the set-up, then per rank mean and p99."""
    attrs = dataset.attrs
    n_ranks, n_nodes = attrs["n_ranks"], attrs["n_nodes"]
    wait = (f"random wait up to {format_seconds(attrs['max_wait'])}" if attrs["random_wait"]
            else "no random wait")
    state = "complete" if attrs.get("complete") else "incomplete"
    print(f"{path}: Parallel Benchmark ({state}), {n_ranks} rank{'s' * (n_ranks != 1)} on "
          f"{n_nodes} node{'s' * (n_nodes != 1)}, w = {format_seconds(attrs['work'])}, {wait}, "
          f"{'broadcast' if attrs['broadcast'] else 'no broadcast'}; "
          f"{attrs['iterations']} iterations in {format_seconds(attrs['measured_duration'])}")
    samples = dataset.sizes["sample"]
    counted = ("" if samples == attrs["iterations"]
               else f" (first {samples} samples; the histograms count all iterations)")
    print(f"{attrs.get('mpi_vendor', 'MPI')} {attrs.get('mpi_vendor_version', '')}; per "
          f"rank, mean / p99{counted}:")
    header = ["rank", "host", "cpu", "compute", "barrier", "iteration"]
    rows = []
    for rank in range(n_ranks):
        row = [str(rank), str(dataset["host"].values[rank]), str(dataset["cpu"].values[rank])]
        for quantity in ("compute", "barrier", "iteration"):
            values = dataset[quantity].values[rank]
            if values.size:
                row.append(f"{format_seconds(values.mean())} / "
                           f"{format_seconds(float(np.quantile(values, 0.99)))}")
            else:
                row.append("-")
        rows.append(row)
    widths = [max(len(item) for item in column) for column in zip(header, *rows, strict=True)]
    for row in [header, *rows]:
        print("  " + "  ".join(item.ljust(width) for item, width in zip(row, widths,
                                                                         strict=True)))
    if attrs.get("oversubscribed"):
        print("Note: more ranks than CPUs on a host: the ranks shared CPUs, so their noise "
              "is not independent (see docs/measure.md).")
