"""Command line: ``jitterlab reproduce``, ``jitterlab measure``, ``jitterlab info``,
``jitterlab docs`` and ``jitterlab --version``.

The work is done in :mod:`jitterlab.reproduce` and :mod:`jitterlab.measure`; this module only
parses arguments and prints. Jupyter packages are imported only when a command needs them.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
from pathlib import Path

import numpy as np

from . import __version__
from .base.limits import MAX_PLANNED_SECONDS  # the longest measurement without --force [s]

__all__ = ["main"]


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jitterlab",
        description="Predict and measure the slowdown that operating-system noise causes "
        "in bulk-synchronous parallel programs.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    rep = commands.add_parser(
        "reproduce",
        help="run every notebook headless and write executed notebooks, figures and a summary",
        description="Run every notebooks/*.ipynb (sorted by name) in a fresh python3 kernel, "
        "from the notebook's own folder, and write the executed notebooks, their HTML export, "
        "their PNG figures and a summary (index.html, summary.md) to the output folder. "
        "Exits with status 1 if any notebook failed.",
    )
    rep.add_argument(
        "--notebooks",
        metavar="DIR",
        type=Path,
        default=None,
        help="folder of notebooks (default: ./notebooks, else the notebooks/ folder of the "
        "source checkout)",
    )
    rep.add_argument(
        "--output",
        metavar="DIR",
        type=Path,
        default=Path("reports"),
        help="report folder (default: ./reports)",
    )
    rep.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=float,
        default=600.0,
        help="longest time one cell may run (default: 600)",
    )
    rep.add_argument(
        "--only",
        metavar="PATTERN",
        default=None,
        help="run only notebooks whose name matches this shell pattern (e.g. 'fig*'); "
        "a plain word selects names containing it",
    )
    rep.add_argument("-v", "--verbose", action="store_true", help="log each notebook")
    rep.set_defaults(run=_reproduce, parser=rep)

    _add_measure_parsers(commands)
    _add_info_parser(commands)
    _add_stationarity_parser(commands)
    _add_docs_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``jitterlab`` command line and return its exit status."""
    parser = _build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    args.argv = argv
    if args.command == "measure":
        _check_planned_duration(args)
    return args.run(args, args.parser)


def _reproduce(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    # Before any jupyter package is imported: use the platform directories without a warning.
    os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")
    import pandas as pd

    from .reproduce import default_notebooks_dir, find_notebooks, reproduce

    _configure_logging(args.verbose)
    if args.timeout <= 0:
        parser.error("--timeout must be positive")
    notebooks_dir = args.notebooks if args.notebooks is not None else default_notebooks_dir()
    try:
        paths = find_notebooks(notebooks_dir, args.only)
    except FileNotFoundError as exc:
        parser.error(str(exc))
    if not paths:
        wanted = f" matching {args.only!r}" if args.only else ""
        parser.error(f"no notebooks{wanted} in {notebooks_dir}")

    print(f"Running {_count(len(paths))} from {notebooks_dir} into {args.output}")
    results = reproduce(notebooks_dir, args.output, timeout=args.timeout, pattern=args.only)

    failed = results[results["status"] != "ok"]
    for row in failed.itertuples():
        where = "" if pd.isna(row.cell) else f", cell {row.cell}"
        print(f"\nFAILED: {row.source}{where}", file=sys.stderr)
        for line in row.error.splitlines():
            print(f"    {line}", file=sys.stderr)

    print(
        f"\n{_count(len(results))}: {len(results) - len(failed)} ok, {len(failed)} FAILED. "
        f"Report: {args.output / 'index.html'}"
    )
    return 1 if len(failed) else 0


def _count(n: int) -> str:
    return f"{n} notebook" if n == 1 else f"{n} notebooks"


def _configure_logging(verbose: bool) -> None:
    """Show the library's log records with ``-v``; otherwise the CLI's own messages suffice."""
    log = logging.getLogger("jitterlab")
    if verbose:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
    elif not log.handlers:
        log.addHandler(logging.NullHandler())


# --------------------------------------------------------------------------------------
# jitterlab measure ...
# --------------------------------------------------------------------------------------
#: trace files ``measure detour`` can write, by extension (after removing ``.gz``)
_TRACE_WRITERS = {".csv": "to_csv", ".parquet": "to_parquet", ".nc": "to_netcdf",
                  ".jitsim": "to_jitsim", ".tsv": "to_jitsim", ".trc": "to_loggopsim"}
#: extension of a detour chunk directory
_DETOUR_SUFFIX = ".detour"


def _add_measure_parsers(commands) -> None:
    measure = commands.add_parser(
        "measure",
        help="measure operating-system noise on this machine",
        description="Measure operating-system noise on this machine with one of the "
        "benchmarks below (x86 CPUs: they read the timestamp counter). See docs/measure.md.",
    )
    benchmarks = measure.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True)
    _add_measure_detour(benchmarks)
    _add_measure_fwq(benchmarks)
    _add_measure_pb(benchmarks)
    _add_measure_latency(benchmarks)
    _add_measure_bsp(benchmarks)
    _add_measure_counters(benchmarks)
    # Further benchmarks go here, each in its own ``_add_measure_<name>(benchmarks)`` that
    # ends with ``set_defaults(run=<function(args, parser) -> exit status>, parser=<its
    # parser>)``; ``_add_output_options`` and ``_check_overwrite`` give the common
    # --output/--force.


def _add_output_options(parser: argparse.ArgumentParser, help_text: str) -> None:
    parser.add_argument("--output", metavar="FILE", type=Path, required=True, help=help_text)
    parser.add_argument("--force", action="store_true",
                        help="overwrite FILE (and an earlier run's chunks) if it exists, and "
                        "run even when the run is planned to take more than an hour")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def _add_cpu_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cpu", metavar="N", type=int, default=None,
                        help="CPU to pin the measurement to (default: the highest-numbered "
                        "CPU this process may use)")


def _add_measure_detour(benchmarks) -> None:
    det = benchmarks.add_parser(
        "detour",
        help="busy loop over the timestamp counter; records every detour (a jitter trace)",
        description="Read the timestamp counter in a tight loop pinned to one CPU and record "
        "every loop iteration longer than the threshold as a jitter event (start, duration), "
        "as jitSim's TraceCollector and sysjitter do. The run is stored chunk by chunk in "
        "FILE.detour/ (FILE itself when it ends in .detour), so a killed run keeps every "
        "completed chunk; at the end FILE is written in the format of its extension and the "
        "chunks are removed.",
    )
    det.add_argument("--duration", metavar="S", type=float, required=True,
                     help="measured time in seconds")
    _add_cpu_option(det)
    det.add_argument("--threshold", metavar="NS", type=float, default=None,
                     help="detection threshold in nanoseconds (default: max(10 x minimum "
                     "loop time, 4 x median loop time))")
    _add_output_options(det, "trace file: .nc, .csv, .parquet, .jitsim, .trc (optionally "
                        ".gz), or a .detour directory of chunks")
    det.add_argument("--chunk-seconds", metavar="S", type=float, default=1.0,
                     help="store the events every S seconds (default: 1)")
    det.add_argument("--keep-chunks", action="store_true",
                     help="keep FILE.detour/ after writing FILE")
    det.add_argument("--kernel-events", action="store_true",
                     help="also record the kernel events of the CPU (timer interrupt, device "
                     "interrupts, softirqs, context switches, hrtimers) in a private tracefs "
                     "instance, stored in FILE.detour/ beside the detours (kept), and print "
                     "what the detours were; needs root and tracefs (docs/kernel_events.md)")
    det.set_defaults(run=_measure_detour, parser=det)


def _add_measure_fwq(benchmarks) -> None:
    fwq = benchmarks.add_parser(
        "fwq",
        help="Fixed Work Quantum: times of a fixed piece of work, w + noise",
        description="Time SAMPLES repetitions of a fixed quantum of work (a linear "
        "congruential generator calibrated to take WORK seconds when undisturbed) on one "
        "CPU, and write the times w + noise with the measurement's attributes.",
    )
    fwq.add_argument("--work", metavar="S", type=float, required=True,
                     help="undisturbed length of one quantum in seconds (e.g. 100e-6)")
    fwq.add_argument("--samples", metavar="N", type=int, required=True,
                     help="number of quanta to time")
    _add_cpu_option(fwq)
    _add_output_options(fwq, "samples file: .nc (netCDF) or .csv (optionally .csv.gz)")
    fwq.set_defaults(run=_measure_fwq, parser=fwq)


def _add_measure_pb(benchmarks) -> None:
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
    _add_output_options(pb, "result file (.nc, netCDF)")
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
    pb.add_argument("--keep-chunks", action="store_true",
                    help="keep FILE.pb/ after writing FILE")
    _quiet_unless_first_rank(pb)
    pb.set_defaults(run=_measure_pb, parser=pb)


def _add_measure_latency(benchmarks) -> None:
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
    _add_output_options(lat, "result file (.nc, netCDF)")
    lat.add_argument("--keep-chunks", action="store_true",
                     help="keep FILE.latency/ after writing FILE")
    _quiet_unless_first_rank(lat)
    lat.set_defaults(run=_measure_latency, parser=lat)


def _add_measure_bsp(benchmarks) -> None:
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
    bsp.add_argument("-o", "--output", metavar="FILE", type=Path, required=True,
                     help="result file (.nc, netCDF)")
    bsp.add_argument("--force", action="store_true",
                     help="overwrite FILE (and an earlier run's chunks) if it exists, and "
                     "run even when the run is planned to take more than an hour")
    bsp.add_argument("--no-progress", action="store_true", help="no progress bar")
    bsp.add_argument("--keep-chunks", action="store_true",
                     help="keep FILE.bsp/ after writing FILE")
    _quiet_unless_first_rank(bsp)
    bsp.set_defaults(run=_measure_bsp, parser=bsp)


def _add_measure_counters(benchmarks) -> None:
    cnt = benchmarks.add_parser(
        "counters",
        help="hardware counters of a command (perf stat) and the cache/TLB metrics of seed 004",
        description="Run CMD under perf stat -x, and print its counts, named as PAPI names "
        "them where perf's generic event means the same, and the miss rates of Holder & "
        "Carothers' equations 1-5 that these counts allow (jitterlab.compare.counters). Needs perf "
        "and a hardware performance-monitoring unit; says so and runs nothing when the "
        "machine has none (most virtual machines). Usage: jitterlab measure counters "
        "[options] -- CMD [ARGS...]. See docs/counters.md.",
    )
    cnt.add_argument("-e", "--events", metavar="LIST", default=None,
                     help="comma-separated perf events (default: cycles, instructions, the "
                     "L1, LLC and TLB cache events)")
    cnt.add_argument("--map", metavar="PERF=PAPI", action="append", default=[],
                     help="name the perf event PERF as the PAPI counter PAPI (e.g. "
                     "l2_rqsts.references=PAPI_L2_TCA); repeatable")
    cnt.add_argument("--output", metavar="FILE", type=Path, default=None,
                     help="also write the counts as CSV (PAPI names as header)")
    cnt.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    cnt.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD",
                     help="the command to measure, after --")
    cnt.set_defaults(run=_measure_counters, parser=cnt)


def _measure_counters(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from .compare import counters

    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        parser.error("give the command to measure after --, e.g. jitterlab measure counters "
                     "-- ./a.out")
    names = {}
    for pair in args.map:
        perf_name, sep, papi_name = pair.partition("=")
        if not sep or not perf_name or not papi_name:
            parser.error(f"--map takes PERF=PAPI, got {pair!r}")
        names[perf_name] = papi_name
    events = counters.PERF_EVENTS if args.events is None else [
        e for e in args.events.split(",") if e]
    if not events:
        parser.error("--events lists no event")
    if args.output is not None:
        _check_overwrite(parser, args.output, args.force)
    problem = counters.perf_counters_problem()
    if problem is not None:
        return _error(parser, f"cannot count hardware events on this machine: {problem}. "
                      "Nothing was run.")
    try:
        table, status = counters.measure_perf_stat(command, events, names=names, check=False)
    except (RuntimeError, ValueError) as exc:
        return _error(parser, str(exc))
    if args.output is not None:
        table.to_csv(args.output, index=False)
    perf_names = table.attrs["perf_events"]
    print(f"{table.attrs['command']} (exit status {status})")
    rows = [(f"{column} ({perf_names.get(column, column)})" if perf_names.get(column, column)
             != column else column, f"{table[column].iloc[0]:.6g}")
            for column in table.columns if column not in table.attrs["labels"]]
    _print_table(rows)
    for event, why in table.attrs["unavailable"].items():
        print(f"  {event}: not counted (perf reported it {why})")
    try:
        result = counters.metrics(table)
    except ValueError as exc:
        print(f"No metric of Holder & Carothers' equations 1-5: {exc}")
    else:
        names_of = [c for c in result.columns if c in counters.EQUATIONS]
        _print_table([(f"{name} (eq. {result.attrs['equations'][name]})",
                       f"{result[name].iloc[0]:.6g}") for name in names_of])
        for name, lacking in result.attrs["missing"].items():
            print(f"  {name}: needs {', '.join(lacking)}")
    if args.output is not None:
        print(f"Counts written to {args.output}")
    return status


def _planned_seconds(args: argparse.Namespace) -> tuple[float, str] | None:
    """The least time a ``measure`` command asks for [s] and the options that set it; None
    for a benchmark whose time the options do not give (latency, counters)."""
    name = args.benchmark
    if name in ("detour", "pb"):
        return args.duration, f"--duration {args.duration:g}"
    if name == "fwq":
        return args.work * args.samples, f"--samples {args.samples} x --work {args.work:g}"
    if name == "bsp":
        seconds, options = args.phases * args.work, f"--phases {args.phases} x --work {args.work:g}"
        period, length = args.inject_period, args.inject_duration
        if period is not None and length is not None and 0 < length < period:
            # the injected detours lengthen each compute interval by length / period of it
            seconds *= period / (period - length)
            options += " with the injected detours"
        return seconds, options
    return None


def _duration(seconds: float) -> str:
    """A planned duration in the unit a person reads: ``2.78 h``, ``25 min``, ``3 ms``."""
    for scale, unit in ((365.25 * 86400, "years"), (86400, "days"), (3600, "h"),
                        (60, "min")):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return _seconds(seconds)


def _check_planned_duration(args: argparse.Namespace) -> None:
    """Say how long the measurement will take at least, and refuse (exit status 2) one
    longer than :data:`MAX_PLANNED_SECONDS` without --force (a typo such as 1e3 for 1e-3)."""
    planned = _planned_seconds(args)
    if planned is None:
        return
    seconds, options = planned
    if not seconds > 0:  # zero, negative or NaN: the benchmark's own checks name the option
        return
    if not math.isfinite(seconds):
        args.parser.error(f"the run would never end ({options} s): give finite values")
    if seconds > MAX_PLANNED_SECONDS and not args.force:
        args.parser.error(
            f"the run would take at least {_duration(seconds)} ({options} s), more than "
            f"the {_duration(MAX_PLANNED_SECONDS)} allowed without --force: check the "
            f"values (in seconds: 1e-3 is a millisecond), or pass --force to run it")
    if _launcher_rank() in (None, 0):
        print(f"planned: at least {_duration(seconds)} of measurement ({options} s)",
              file=sys.stderr)


#: environment variables in which MPI launchers give the rank of a process
_RANK_VARIABLES = ("PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_RANK")


def _launcher_rank() -> int | None:
    """The MPI rank the launcher gave this process (before MPI is initialised), or None."""
    for name in _RANK_VARIABLES:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return None


def _quiet_unless_first_rank(parser: argparse.ArgumentParser) -> None:
    """Under mpiexec, let only rank 0 print argparse's usage errors (all exit with 2)."""
    if _launcher_rank() not in (None, 0):
        parser.print_usage = lambda file=None: None
        parser.exit = lambda status=0, message=None: sys.exit(status)


def _check_overwrite(parser: argparse.ArgumentParser, path: Path, force: bool) -> None:
    """Stop with exit status 2, before anything is measured, if ``path`` exists and --force
    was not given, or if its directory does not exist."""
    if path.exists() and not force:
        parser.error(f"{path} exists; pass --force to overwrite it")
    if not path.parent.is_dir():
        parser.error(f"cannot write {path}: the directory {path.parent} does not exist")


def _command_line(args: argparse.Namespace) -> str:
    import shlex

    return shlex.join(["jitterlab", *args.argv])


def _error(parser: argparse.ArgumentParser, message: str, status: int = 1) -> int:
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return status


def _suffix(path: Path) -> str:
    name = path.name.lower().removesuffix(".gz")
    return Path(name).suffix


def _measure_detour(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from .io.chunks import is_store, remove_store
    from .measure import CycleCounterError, TracefsError, detour, read_detour

    output: Path = args.output
    suffix = _suffix(output)
    if suffix == _DETOUR_SUFFIX and not output.name.lower().endswith(".gz"):
        store, final = output, None
    elif suffix in _TRACE_WRITERS:
        store, final = output.with_name(output.name + _DETOUR_SUFFIX), output
    else:
        parser.error(f"cannot tell the output format from {output.name!r}: use .nc, .csv, "
                     ".parquet, .jitsim, .trc (optionally .gz) or a .detour directory")
    if final is not None:
        _check_overwrite(parser, final, args.force)
    if store.exists():
        if store.is_dir() and not any(store.iterdir()):
            pass
        elif not is_store(store):
            parser.error(f"{store} exists and is not a detour run directory; not overwriting it")
        elif not args.force:
            parser.error(f"{store} holds an earlier (perhaps interrupted) run; inspect it "
                         f"with 'jitterlab info {store}' or pass --force to overwrite it")
    threshold = None if args.threshold is None else args.threshold / 1e9
    _configure_logging(False)
    if args.kernel_events:
        _show_tracefs_warnings()
    interrupted = False
    try:
        trace = detour(args.duration, cpu=args.cpu, threshold=threshold, output=store,
                       chunk_seconds=args.chunk_seconds, progress=not args.no_progress,
                       overwrite=args.force, command=_command_line(args),
                       kernel_events=args.kernel_events)
    except ValueError as exc:
        parser.error(str(exc))
    except (CycleCounterError, FileExistsError, TracefsError) as exc:
        return _error(parser, str(exc))
    except KeyboardInterrupt:
        interrupted = True
        try:
            trace = read_detour(store)
        except ValueError as exc:
            return _error(parser, f"interrupted; nothing to save ({exc})", 130)
    if final is not None:
        getattr(trace, _TRACE_WRITERS[_suffix(final)])(final)
        if not (args.keep_chunks or interrupted or args.kernel_events):
            remove_store(store)
    _print_detour_summary(trace, final or store)
    if args.kernel_events:
        _print_attribution(store)
    if interrupted:
        print(f"Interrupted after {trace.attrs['measured_duration']:.3g} s; the chunks "
              f"stay in {store}", file=sys.stderr)
        return 130
    return 0


def _show_tracefs_warnings() -> None:
    """Print the tracefs module's warnings (a stale instance removed, events lost)."""
    log = logging.getLogger("jitterlab.measure.tracefs")
    if not any(isinstance(handler, logging.StreamHandler) for handler in log.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        handler.setLevel(logging.WARNING)
        log.addHandler(handler)


def _print_attribution(store: Path) -> None:
    """What the detours were: time per kind of cause, and the part the guest cannot see."""
    from .compare.attribution import attribute_recording, cause_summary

    table = attribute_recording(store)
    attrs = table.attrs
    summary = cause_summary(table)
    print(f"kernel events in {store} (trace clock {attrs['clock']}, "
          f"{attrs['lost_events']} lost; attribute with "
          f"jitterlab.compare.attribution.attribute_recording('{store}')):")
    for row in summary.head(8).itertuples():
        print(f"  {row.share:7.2%}  {_seconds(row.time):>9}  in {row.detours:6d} detours  "
              f"{row.cause}")
    if len(summary) > 8:
        print(f"  ... {len(summary) - 8} more causes")
    steal = attrs["steal_time"]
    print(f"not visible to the guest: {attrs['detours_without_guest_event']} detours with "
          f"no guest event ({attrs['rate_without_guest_event']:.4g}/s, largest "
          f"{_seconds(attrs['largest_without_guest_event'])}); steal time "
          + ("not reported by /proc/stat" if steal is None else _seconds(steal)))


def _print_detour_summary(trace, path: Path) -> None:
    stats = trace.stats()
    attrs = trace.attrs
    detected = attrs.get("events_detected", trace.n_events)
    print(f"{path}: {detected} events in {attrs['measured_duration']:.4g} s on CPU "
          f"{attrs.get('cpu')}: {detected / attrs['measured_duration']:.6g} events/s, "
          f"noise fraction {stats['noise_fraction']:.3%}")
    print(f"resolution (median loop time) {_seconds(attrs['median_loop_time'])}, "
          f"t_min {_seconds(attrs['t_min'])}, threshold {_seconds(attrs['threshold'])}")


def _measure_fwq(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from .measure import CycleCounterError, fwq, write_fwq_samples

    output: Path = args.output
    if _suffix(output) not in (".nc", ".csv") or output.name.lower().endswith(".nc.gz"):
        parser.error(f"cannot tell the output format from {output.name!r}: use .nc or .csv "
                     "(optionally .csv.gz)")
    _check_overwrite(parser, output, args.force)
    _configure_logging(False)
    try:
        law = fwq(args.work, args.samples, cpu=args.cpu, progress=not args.no_progress,
                  command=_command_line(args))
    except ValueError as exc:
        parser.error(str(exc))
    except CycleCounterError as exc:
        return _error(parser, str(exc))
    except KeyboardInterrupt:
        return _error(parser, "interrupted; nothing written", 130)
    write_fwq_samples(law, output, overwrite=args.force)
    values = law.values
    print(f"{output}: {values.size} quanta of {_seconds(args.work)} on CPU "
          f"{law.attrs['cpu']} ({law.attrs['iterations']} LCG iterations): min "
          f"{_seconds(values[0])}, median {_seconds(float(np.median(values)))}, mean "
          f"{_seconds(law.mean())}, max {_seconds(values[-1])}")
    return 0


def _run_under_mpi(args: argparse.Namespace, parser: argparse.ArgumentParser, name: str,
                   module, run, print_summary) -> int:
    """Run an MPI benchmark of ``module`` (``pb`` or ``latency``) from the command line.

    ``run()`` starts the measurement on every rank and returns the Dataset on rank 0;
    ``print_summary(path, dataset)`` prints it. Rank 0 checks the output first; every
    rank exits with the same status.
    """
    from .measure import CycleCounterError

    try:
        from mpi4py import MPI
    except ImportError:
        return _error(parser, f"measure {name} needs mpi4py and an MPI library: pip install "
                      "'jitterlab[mpi]', then run it under mpiexec -n N")
    comm = MPI.COMM_WORLD
    root = comm.Get_rank() == 0

    def fail(message: str, status: int = 2) -> int:
        if root:
            if status == 2:
                parser.error(message)  # usage, message, exit status 2
            _error(parser, message, status)
        return status

    output: Path = args.output
    if _suffix(output) != ".nc" or output.name.lower().endswith(".gz"):
        return fail(f"cannot tell the output format from {output.name!r}: use .nc (netCDF)")
    store = module.store_path(output)
    # rank 0 decides before anything is measured; every rank exits with the same status
    problem = module.target_problem(output, args.force) if root else None
    problem = comm.bcast(problem, root=0)
    if problem is not None:
        return fail(problem)
    _configure_logging(False)
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
            return _error(parser, f"interrupted; nothing to save ({exc})", 130)
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
    from .measure import pb

    return _run_under_mpi(args, parser, "pb", pb, lambda: pb.parallel_benchmark(
        args.work, args.duration, args.output, random_wait=not args.no_random_wait,
        broadcast=not args.no_broadcast, max_wait=args.max_wait, seed=args.seed,
        chunk_seconds=args.chunk_seconds, max_samples=args.max_samples,
        overwrite=args.force, keep_chunks=args.keep_chunks,
        progress=not args.no_progress, command=_command_line(args)), _print_pb_summary)


def _measure_latency(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from .measure import latency

    return _run_under_mpi(args, parser, "latency", latency, lambda: latency.latency_benchmark(
        args.output, round_trips=args.round_trips, barriers=args.barriers,
        overwrite=args.force, keep_chunks=args.keep_chunks, progress=not args.no_progress,
        command=_command_line(args), allow_large=args.force), _print_latency_summary)


def _measure_bsp(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from .measure import bsp

    return _run_under_mpi(args, parser, "bsp", bsp, lambda: bsp.bsp_benchmark(
        args.phases, args.work, args.output, collective=args.collective,
        inject_period=args.inject_period, inject_duration=args.inject_duration,
        inject_seed=args.inject_seed, threshold=args.threshold, poll=args.poll,
        chunk_seconds=args.chunk_seconds, overwrite=args.force, keep_chunks=args.keep_chunks,
        progress=not args.no_progress, command=_command_line(args)), _print_bsp_summary)


def _print_bsp_summary(path: Path, events) -> None:
    """What a BSP run recorded: the set-up, then per rank its noise."""
    attrs = events.attrs
    state = "complete" if attrs.get("complete") else "incomplete"
    injector = (f"injected {_seconds(attrs['inject_duration'])} every "
                f"{_seconds(attrs['inject_period'])}" if attrs.get("injector")
                else "no injection")
    print(f"{path}: BSP run ({state}), {events.n_ranks} ranks, {attrs['phases_done']} phases "
          f"of w = {_seconds(attrs['work'])} + {attrs['collective']}"
          f"{' (polled)' if attrs.get('poll') else ''}, {injector}; "
          f"{_seconds(attrs['measured_duration'])} in phases")
    data = events.data
    for rank in range(events.n_ranks):
        rows = data[data["rank"] == rank]
        print(f"  rank {rank}: noise injected {_seconds(rows['noise_injected'].sum())} "
              f"({attrs['injected_detours'][rank]} detours), other "
              f"{_seconds(rows['noise_other'].sum())} ({attrs['interruptions'][rank]} "
              "interruptions)")


def _print_latency_summary(path: Path, dataset) -> None:
    """τ from the ping-pong, the empty-barrier time, and the set-up."""
    from .measure.latency import summarize_latency

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
        print(f"  {label}: {_seconds(summary[name])} ± {_seconds(summary[f'{name}_se'])} "
              f"(SE; {level} interval {_seconds(low)} to {_seconds(high)}); mean, noise "
              f"included: {_seconds(summary[mean])}")
    if attrs.get("oversubscribed"):
        print("Note: more ranks than CPUs on a host: the ranks shared CPUs, so the times "
              "include waiting for descheduled ranks (see docs/measure.md).")


def _print_pb_summary(path: Path, dataset) -> None:
    """What a Parallel Benchmark run measured: the set-up, then per rank mean and p99."""
    attrs = dataset.attrs
    n_ranks, n_nodes = attrs["n_ranks"], attrs["n_nodes"]
    wait = (f"random wait up to {_seconds(attrs['max_wait'])}" if attrs["random_wait"]
            else "no random wait")
    state = "complete" if attrs.get("complete") else "incomplete"
    print(f"{path}: Parallel Benchmark ({state}), {n_ranks} rank{'s' * (n_ranks != 1)} on "
          f"{n_nodes} node{'s' * (n_nodes != 1)}, w = {_seconds(attrs['work'])}, {wait}, "
          f"{'broadcast' if attrs['broadcast'] else 'no broadcast'}; "
          f"{attrs['iterations']} iterations in {_seconds(attrs['measured_duration'])}")
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
                row.append(f"{_seconds(values.mean())} / "
                           f"{_seconds(float(np.quantile(values, 0.99)))}")
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


# --------------------------------------------------------------------------------------
# jitterlab info FILE
# --------------------------------------------------------------------------------------
def _add_info_parser(commands) -> None:
    info = commands.add_parser(
        "info",
        help="summarise a trace file, a detour run directory, an FWQ file or a Parallel "
        "Benchmark result",
        description="Print the summary statistics and the attributes of a jitter trace "
        "(any file jitterlab.read_trace reads), of a detour run directory (also an "
        "interrupted one), of FWQ samples or of a Parallel Benchmark result (its netCDF "
        "file or chunk directory: per-rank mean and p99 of the compute, barrier and "
        "iteration times).",
    )
    info.add_argument("file", metavar="FILE", type=Path)
    info.add_argument("--format", metavar="NAME", default=None,
                      help="trace format, when the extension does not tell it")
    info.set_defaults(run=_info, parser=info)


def _info(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from .io import read_trace
    from .io.chunks import store_kind
    from .measure import read_bsp, read_detour, read_fwq_samples, read_pb
    from .measure.bsp import is_bsp_file
    from .measure.fwq import is_fwq_samples_file
    from .measure.latency import is_latency_file, read_latency
    from .measure.pb import is_pb_file

    path: Path = args.file
    if not path.exists():
        parser.error(f"{path} does not exist")
    try:
        if path.is_dir():
            kind = store_kind(path)
            if kind == "pb":
                _print_pb_info(path, read_pb(path))
                return 0
            if kind == "latency":
                _print_latency_info(path, read_latency(path))
                return 0
            if kind == "bsp":
                _print_bsp_summary(path, read_bsp(path))
                return 0
            if kind != "detour":
                parser.error(f"{path} is a directory but not a detour run (nor a Parallel "
                             "Benchmark or latency run)")
            trace = read_detour(path)
            kind = "detour run" + ("" if trace.attrs.get("complete") else " (incomplete)")
        elif args.format is None and is_fwq_samples_file(path):
            _print_fwq_info(path, read_fwq_samples(path))
            return 0
        elif args.format is None and is_pb_file(path):
            _print_pb_info(path, read_pb(path))
            return 0
        elif args.format is None and is_latency_file(path):
            _print_latency_info(path, read_latency(path))
            return 0
        elif args.format is None and is_bsp_file(path):
            _print_bsp_summary(path, read_bsp(path))
            return 0
        else:
            trace = read_trace(path, format=args.format)
            kind = "jitter trace"
    except ValueError as exc:
        return _error(parser, str(exc))
    _print_trace_info(path, kind, trace)
    return 0


_UNIT_LABELS = {"1/s": "/s"}


def _seconds(value: float) -> str:
    """A time with an SI prefix, 4 significant digits: ``1.461 µs``."""
    value = float(value)
    magnitude = abs(value)
    for scale, prefix in ((1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n")):
        if magnitude >= scale:
            return f"{value / scale:.4g} {prefix}s"
    return f"{value / 1e-9:.4g} ns" if value else "0 s"


def _format_stat(value: float, unit: str) -> str:
    if unit == "s":
        return _seconds(value)
    if unit == "1" and value != int(value):
        return f"{value:.6g} ({value:.3%})"
    if unit == "1":
        return f"{int(value)}"
    return f"{value:.6g} {_UNIT_LABELS.get(unit, unit)}"


def _print_table(rows: list[tuple[str, str]], indent: str = "  ") -> None:
    width = max((len(key) for key, _ in rows), default=0)
    for key, value in rows:
        print(f"{indent}{key.ljust(width)}  {value}")


def _print_attrs(attrs: dict) -> None:
    import json

    print("attributes:")
    _print_table([(key, value if isinstance(value, str) else json.dumps(value))
                  for key, value in attrs.items()])


def _print_trace_info(path: Path, kind: str, trace) -> None:
    unit = ("seconds" if trace.unit == "s"
            else f"cycles at {trace.frequency_hz / 1e9:.6g} GHz")
    print(f"{path}: {kind}, {trace.n_events} events over {_seconds(trace.duration)} "
          f"(stored in {unit})")
    stats = trace.stats()
    units = stats.attrs["units"]
    print("statistics:")
    _print_table([(key, _format_stat(value, units[key])) for key, value in stats.items()])
    _print_attrs(trace.attrs)


def _print_fwq_info(path: Path, law) -> None:
    values = law.values
    attrs = law.attrs
    print(f"{path}: FWQ samples, {values.size} quanta of w = "
          f"{_seconds(attrs['work']) if 'work' in attrs else '?'}")
    levels = {"p50": 0.5, "p90": 0.9, "p99": 0.99, "p999": 0.999}
    quantiles = np.quantile(values, list(levels.values()))
    mean = law.mean()
    rows = [("samples", str(values.size)), ("min", _seconds(values[0]))]
    rows += [(name, _seconds(q)) for name, q in zip(levels, quantiles, strict=True)]
    rows += [("max", _seconds(values[-1])), ("mean", _seconds(mean)),
             ("mean_noise", f"{_seconds(mean - values[0])} (mean - min)"),
             ("noise_fraction", f"{(mean - values[0]) / mean:.3%} ((mean - min) / mean)")]
    print("statistics:")
    _print_table(rows)
    _print_attrs(attrs)


def _print_pb_info(path: Path, dataset) -> None:
    _print_pb_summary(path, dataset)
    histogram_total = dataset["iteration_hist"].sum("bin").values
    print(f"histograms: {dataset.sizes['bin']} bins from {_seconds(dataset['bin_edges'][1])} "
          f"to {_seconds(dataset['bin_edges'][-2])} (plus [0, ...) and [..., inf)); "
          f"iterations counted per rank: {', '.join(map(str, histogram_total.tolist()))}")
    _print_attrs(dataset.attrs)


def _print_latency_info(path: Path, dataset) -> None:
    _print_latency_summary(path, dataset)
    _print_attrs(dataset.attrs)


# --------------------------------------------------------------------------------------
# jitterlab stationarity [FILE ...]
# --------------------------------------------------------------------------------------
def _add_stationarity_parser(commands) -> None:
    check = commands.add_parser(
        "stationarity",
        help="test whether the shipped recordings' noise stays the same over each recording",
        description="Run jl.characterize.stationarity on the recordings shipped in "
        "data/measured/ (or the files named): detour rate and size per window, their "
        "p-values, change points and a verdict per recording; printed, or written as CSV.",
    )
    check.add_argument("files", nargs="*", metavar="FILE",
                       help="files of data/measured/ (default: every one)")
    check.add_argument("-o", "--output", metavar="CSV", type=Path, default=None,
                       help="write the table here instead of printing it")
    check.set_defaults(run=_stationarity, parser=check)


def _stationarity(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from .recording_checks import report_recordings

    if args.output is not None and args.output.exists():
        parser.error(f"{args.output} exists; remove it first (nothing is overwritten)")
    try:
        report_recordings(args.files or None, args.output)
    except (KeyError, FileNotFoundError, ValueError) as exc:
        parser.error(str(exc))
    return 0


# --------------------------------------------------------------------------------------
# jitterlab docs
# --------------------------------------------------------------------------------------
def _add_docs_parser(commands) -> None:
    docs = commands.add_parser(
        "docs",
        help="build the documentation site (HTML) from docs/, the docstrings and the notebooks",
        description="Build the HTML documentation site with Sphinx: the pages of docs/, an API "
        "reference from the docstrings and one page per notebook. Notebooks are not run: a "
        "notebook is shown with the outputs of its executed copy from `jitterlab reproduce` "
        "(REPORTS/notebooks/NAME.ipynb) when that copy has the notebook's current code, and as "
        "committed otherwise, with a note on its page. Needs the docs extra "
        "(pip install 'jitterlab[docs]').",
    )
    docs.add_argument("-o", "--output", metavar="DIR", type=Path, default=None,
                      help="folder of the HTML site (default: docs/_build/html)")
    docs.add_argument("--open", action="store_true",
                      help="open the front page in a web browser when the build is done")
    docs.add_argument("--reports", metavar="DIR", type=Path, default=Path("reports"),
                      help="output folder of `jitterlab reproduce` (default: ./reports)")
    docs.add_argument("--notebooks", metavar="DIR", type=Path, default=None,
                      help="folder of notebooks (default: as for `jitterlab reproduce`)")
    docs.add_argument("-W", "--warnings-as-errors", action="store_true",
                      help="fail on any Sphinx warning, as the tests do")
    docs.add_argument("-v", "--verbose", action="store_true",
                      help="print Sphinx's progress, not only its warnings")
    docs.set_defaults(run=_docs, parser=docs)


def _docs(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from .docs_site import DocsBuildError, build

    try:
        site = build(args.output, notebooks_dir=args.notebooks, reports_dir=args.reports,
                     warnings_as_errors=args.warnings_as_errors, verbose=args.verbose)
    except ImportError as exc:
        print(f"jitterlab docs: {exc}", file=sys.stderr)
        return 1
    except FileNotFoundError as exc:
        parser.error(str(exc))
    except DocsBuildError as exc:
        print(exc, file=sys.stderr)
        return 1
    if site.log.strip():
        print(site.log.rstrip(), file=sys.stderr)
    shown = sum(page.state in ("executed", "failed") for page in site.notebooks)
    print(f"Site written to {site.index} in {site.seconds:.0f} s; {shown} of "
          f"{_count(len(site.notebooks))} with outputs from {args.reports}.")
    if args.open:
        import webbrowser

        webbrowser.open(site.index.resolve().as_uri())
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
