"""``jitterlab measure ...``: the parsers of every benchmark, the check of a run's planned
length, and the runs on one CPU (detour, FWQ) and of a command's hardware counters.

The benchmarks under MPI (pb, latency, bsp) are in :mod:`jitterlab.cli.measure_mpi`.
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
from pathlib import Path

import numpy as np

from ..base.limits import MAX_PLANNED_SECONDS  # the longest measurement without --force [s]
from .common import (
    add_keep_chunks_option,
    add_output_options,
    command_line,
    configure_logging,
    file_suffix,
    finish_benchmark_parser,
    format_seconds,
    launcher_rank,
    print_error,
    print_table,
)
from .measure_mpi import add_measure_bsp, add_measure_latency, add_measure_pb

__all__ = ["add_measure_parsers", "check_planned_duration"]

#: trace files ``measure detour`` can write, by extension (after removing ``.gz``)
_TRACE_WRITERS = {".csv": "to_csv", ".parquet": "to_parquet", ".nc": "to_netcdf",
                  ".jitsim": "to_jitsim", ".tsv": "to_jitsim", ".trc": "to_loggopsim"}
#: extension of a detour chunk directory
_DETOUR_SUFFIX = ".detour"


def add_measure_parsers(commands) -> None:
    """Add ``measure`` and its benchmarks to the subcommands ``commands`` of the top parser."""
    measure = commands.add_parser(
        "measure",
        help="measure operating-system noise on this machine",
        description="Measure operating-system noise on this machine with one of the "
        "benchmarks below (x86 CPUs: they read the timestamp counter). See docs/measure.md.",
    )
    benchmarks = measure.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True)
    _add_measure_detour(benchmarks)
    _add_measure_fwq(benchmarks)
    add_measure_pb(benchmarks)
    add_measure_latency(benchmarks)
    add_measure_bsp(benchmarks)
    _add_measure_counters(benchmarks)
    # Further benchmarks go here, each in its own ``_add_measure_<name>(benchmarks)`` (here,
    # or ``add_measure_<name>`` in measure_mpi.py for one under MPI) that ends with
    # ``common.finish_benchmark_parser(<its parser>, <function(args, parser) -> exit
    # status>, ...)``; ``common.add_output_options`` and ``_check_overwrite`` give the
    # common --output/--force.


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
    add_output_options(det, "trace file: .nc, .csv, .parquet, .jitsim, .trc (optionally "
                        ".gz), or a .detour directory of chunks")
    det.add_argument("--chunk-seconds", metavar="S", type=float, default=1.0,
                     help="store the events every S seconds (default: 1)")
    add_keep_chunks_option(det, _DETOUR_SUFFIX)
    det.add_argument("--kernel-events", action="store_true",
                     help="also record the kernel events of the CPU (timer interrupt, device "
                     "interrupts, softirqs, context switches, hrtimers) in a private tracefs "
                     "instance, stored in FILE.detour/ beside the detours (kept), and print "
                     "what the detours were; needs root and tracefs (docs/kernel_events.md)")
    finish_benchmark_parser(det, _measure_detour)


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
    add_output_options(fwq, "samples file: .nc (netCDF) or .csv (optionally .csv.gz)")
    finish_benchmark_parser(fwq, _measure_fwq)


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
    finish_benchmark_parser(cnt, _measure_counters)


def _measure_counters(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from ..compare import counters

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
        return print_error(parser, f"cannot count hardware events on this machine: {problem}. "
                      "Nothing was run.")
    try:
        table, status = counters.measure_perf_stat(command, events, names=names, check=False)
    except (RuntimeError, ValueError) as exc:
        return print_error(parser, str(exc))
    if args.output is not None:
        table.to_csv(args.output, index=False)
    perf_names = table.attrs["perf_events"]
    print(f"{table.attrs['command']} (exit status {status})")
    rows = [(f"{column} ({perf_names.get(column, column)})" if perf_names.get(column, column)
             != column else column, f"{table[column].iloc[0]:.6g}")
            for column in table.columns if column not in table.attrs["labels"]]
    print_table(rows)
    for event, why in table.attrs["unavailable"].items():
        print(f"  {event}: not counted (perf reported it {why})")
    try:
        result = counters.metrics(table)
    except ValueError as exc:
        print(f"No metric of Holder & Carothers' equations 1-5: {exc}")
    else:
        names_of = [c for c in result.columns if c in counters.EQUATIONS]
        print_table([(f"{name} (eq. {result.attrs['equations'][name]})",
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
    return format_seconds(seconds)


def check_planned_duration(args: argparse.Namespace) -> None:
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
    if launcher_rank() in (None, 0):
        print(f"planned: at least {_duration(seconds)} of measurement ({options} s)",
              file=sys.stderr)


def _check_overwrite(parser: argparse.ArgumentParser, path: Path, force: bool) -> None:
    """Stop with exit status 2, before anything is measured, if ``path`` exists and --force
    was not given, or if its directory does not exist."""
    if path.exists() and not force:
        parser.error(f"{path} exists; pass --force to overwrite it")
    if not path.parent.is_dir():
        parser.error(f"cannot write {path}: the directory {path.parent} does not exist")


def _measure_detour(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from ..io.chunks import is_store, remove_store
    from ..measure import CycleCounterError, TracefsError, detour, read_detour

    output: Path = args.output
    suffix = file_suffix(output)
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
    configure_logging(False)
    if args.kernel_events:
        _show_tracefs_warnings()
    interrupted = False
    try:
        trace = detour(args.duration, cpu=args.cpu, threshold=threshold, output=store,
                       chunk_seconds=args.chunk_seconds, progress=not args.no_progress,
                       overwrite=args.force, command=command_line(args),
                       kernel_events=args.kernel_events)
    except ValueError as exc:
        parser.error(str(exc))
    except (CycleCounterError, FileExistsError, TracefsError) as exc:
        return print_error(parser, str(exc))
    except KeyboardInterrupt:
        interrupted = True
        try:
            trace = read_detour(store)
        except ValueError as exc:
            return print_error(parser, f"interrupted; nothing to save ({exc})", 130)
    if final is not None:
        getattr(trace, _TRACE_WRITERS[file_suffix(final)])(final)
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
    from ..compare.attribution import attribute_recording
    from ..compare.causes import noise_by_cause

    table = attribute_recording(store)
    attrs = table.attrs
    summary = noise_by_cause(table).reset_index()
    print(f"kernel events in {store} (trace clock {attrs['clock']}, "
          f"{attrs['lost_events']} lost; attribute with "
          f"jitterlab.compare.attribution.attribute_recording('{store}')):")
    for row in summary.head(8).itertuples():
        print(f"  {row.share:7.2%}  {format_seconds(row.time):>9}  in {row.detours:6d} detours  "
              f"{row.cause}")
    if len(summary) > 8:
        print(f"  ... {len(summary) - 8} more causes")
    steal = attrs["steal_time"]
    print(f"not visible to the guest: {attrs['detours_without_guest_event']} detours with "
          f"no guest event ({attrs['rate_without_guest_event']:.4g}/s, largest "
          f"{format_seconds(attrs['largest_without_guest_event'])}); steal time "
          + ("not reported by /proc/stat" if steal is None else format_seconds(steal)))


def _print_detour_summary(trace, path: Path) -> None:
    stats = trace.stats()
    attrs = trace.attrs
    detected = attrs.get("events_detected", trace.n_events)
    print(f"{path}: {detected} events in {attrs['measured_duration']:.4g} s on CPU "
          f"{attrs.get('cpu')}: {detected / attrs['measured_duration']:.6g} events/s, "
          f"noise fraction {stats['noise_fraction']:.3%}")
    print(f"resolution (median loop time) {format_seconds(attrs['median_loop_time'])}, "
          f"t_min {format_seconds(attrs['t_min'])}, threshold {format_seconds(attrs['threshold'])}")


def _measure_fwq(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from ..measure import CycleCounterError, fwq, write_fwq_samples

    output: Path = args.output
    if file_suffix(output) not in (".nc", ".csv") or output.name.lower().endswith(".nc.gz"):
        parser.error(f"cannot tell the output format from {output.name!r}: use .nc or .csv "
                     "(optionally .csv.gz)")
    _check_overwrite(parser, output, args.force)
    configure_logging(False)
    try:
        law = fwq(args.work, args.samples, cpu=args.cpu, progress=not args.no_progress,
                  command=command_line(args))
    except ValueError as exc:
        parser.error(str(exc))
    except CycleCounterError as exc:
        return print_error(parser, str(exc))
    except KeyboardInterrupt:
        return print_error(parser, "interrupted; nothing written", 130)
    write_fwq_samples(law, output, overwrite=args.force)
    values = law.values
    print(f"{output}: {values.size} quanta of {format_seconds(args.work)} on CPU "
          f"{law.attrs['cpu']} ({law.attrs['iterations']} LCG iterations): min "
          f"{format_seconds(values[0])}, median {format_seconds(float(np.median(values)))}, mean "
          f"{format_seconds(law.mean())}, max {format_seconds(values[-1])}")
    return 0
