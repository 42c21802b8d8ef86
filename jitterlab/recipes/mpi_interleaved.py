"""Interleaved real MPI runs of the BSP benchmark for notebook 12 (issue #18, seed 003).

Three experiments, each a series of pairs of runs of the same program, the two arms of a
pair launched one right after the other and the pairs one after the other (A B A B ...),
so that the slow drifts of a shared machine fall on both arms alike:

``injection``
    ``mpiexec -n 2 jitterlab measure bsp`` (1000 phases of 1 ms busy-loop work and a
    polled barrier, ranks pinned) without (``clean``) and with (``injected``) the
    benchmark's injector: a busy detour of 500 µs every 10 ms on every rank. The cost of
    the injection is the difference of the two runs' times in phases (wall clock,
    timestamp counter), not anything the runs record of their own noise.
``pinning``
    The same program without injection, each rank pinned to its own CPU (``pinned``, as
    ``taskset -c <cpu>`` would do it: ``sched_setaffinity`` of the rank to CPU 0 or 1)
    against ranks left to the scheduler (``unpinned``, ``pin=False``: either CPU). Seed
    003 pins the ranks and sees the scheduling noise go.
``recording``
    The same program (pinned, no injection) without (``plain``) and with
    (``kernel_events``) jitterlab's kernel-event recording running: one private tracefs
    instance per CPU (:func:`jitterlab.measure.trace_instance`, the events of
    :data:`jitterlab.measure.tracefs.NOISE_EVENTS`: timer ticks, device interrupts, softirqs,
    context switches, hrtimers — the operating-system view KTAU records in seed 003),
    started before the launch and read after it. The cost of recording is the difference
    of the two times; seed 003 measured 0.97 % for its tracing of NPB LU.

Every run writes its netCDF file (``jitterlab.measure.read_bsp``) into the output directory
and appends one row to ``runs.csv`` there (:data:`COLUMNS`): experiment, pair, arm, file,
start, the time in phases and the launch's wall time, the 1-minute load before and after,
the CPU time of the run's process tree and of every other process during the run (busy
time of all CPUs from ``/proc/stat`` minus the run's), and for the recording arm the
number of kernel events recorded and lost. Run it from the repository root at normal
priority under the team's measurement lock, one experiment per call::

    flock /work/team/measure.lock .venv/bin/python -m jitterlab.recipes.mpi_interleaved \\
        data/mpi_interleaved --experiment injection --pairs 8

The kernel-event recording needs root and tracefs. ``--worker`` is the per-rank entry
point that the driver launches under ``mpiexec``; ``--recorder CPU SECONDS`` the
kernel-event recorder of one CPU.

Until 2026-11-26 this program was the script ``data/mpi_interleaved.py`` (same options),
the name in the commands that ``data/mpi_interleaved/runs.csv`` and the runs' files
record.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import os
import shlex
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from .run_ross_phold import append_row, busy_cpu_seconds, children_cpu_seconds

#: how the program is run (``python -m`` and this module), under ``mpiexec`` too
MODULE = "jitterlab.recipes.mpi_interleaved"

#: experiment → its two arms, in the order they run within a pair
EXPERIMENTS = {"injection": ("clean", "injected"), "pinning": ("pinned", "unpinned"),
               "recording": ("plain", "kernel_events")}
PHASES = 1000  # phases of one run [-]
WORK = 1e-3  # undisturbed busy-loop time of one compute interval [s]
INJECT_PERIOD, INJECT_DURATION = 10e-3, 500e-6  # the injector: 500 µs every 10 ms [s]
#: columns of ``runs.csv``
COLUMNS = ("experiment", "pair", "arm", "file", "started_at", "time_in_phases_s", "wall_s",
           "run_cpu_s", "other_cpu_s", "load_before", "load_after", "kernel_events",
           "kernel_events_lost", "command")


def worker_arguments(arm: str, output: Path, seed: int,
                     autogroup_nice: int | None = None) -> list[str]:
    """The ``--worker`` arguments of one run of ``arm`` writing ``output``."""
    arguments = ["--worker", str(output), "--seed", str(seed)]
    if autogroup_nice is not None:
        arguments += ["--autogroup-nice", str(autogroup_nice)]
    if arm == "injected":
        arguments.append("--inject")
    if arm == "unpinned":
        arguments.append("--no-pin")
    return arguments


def command_text(arm: str, name: str, pair: int, autogroup_nice: int | None = None) -> str:
    """The ``command`` column of a run of ``arm`` writing ``name`` (in the output folder)."""
    return shlex.join(["mpiexec", "-n", "2", "python", "-m", MODULE,
                       *worker_arguments(arm, Path(name), pair, autogroup_nice)])


def run_worker(argv: list[str]) -> int:
    """One rank of a run: the BSP benchmark with the worker's options (under mpiexec)."""
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE} --worker")
    parser.add_argument("--worker", type=Path, required=True, help="output .nc")
    parser.add_argument("--seed", type=int, default=0, help="the injector's seed")
    parser.add_argument("--inject", action="store_true", help="inject 500 µs every 10 ms")
    parser.add_argument("--no-pin", action="store_true", help="leave the ranks unpinned")
    parser.add_argument("--autogroup-nice", type=int, default=None,
                        help="nice value of the rank's scheduling autogroup")
    args = parser.parse_args(argv)
    if args.autogroup_nice is not None:  # each rank leads its own session under hydra
        Path("/proc/self/autogroup").write_text(str(args.autogroup_nice))
    import jitterlab as jl

    inject = {"inject_period": INJECT_PERIOD, "inject_duration": INJECT_DURATION} \
        if args.inject else {}
    jl.measure.bsp_benchmark(PHASES, WORK, args.worker, poll=True, pin=not args.no_pin,
                             inject_seed=args.seed, progress=False, overwrite=True,
                             command=shlex.join(["python", "-m", MODULE, *sys.argv[1:]]),
                             **inject)
    return 0


def run_recorder(cpu: int, duration: float) -> int:
    """Record the kernel's noise events of ``cpu`` until standard input closes.

    Prints ``ready`` once recording runs, then, at the end, the number of events recorded
    and the number lost (one tracefs instance per process, so one process per CPU).
    """
    from jitterlab.measure import trace_instance

    with trace_instance(cpu=cpu, duration=duration) as instance:
        print("ready", flush=True)
        sys.stdin.read()
        text = instance.read_trace()
    events = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    print(events, sum(instance.lost.values()), flush=True)
    return 0


@contextlib.contextmanager
def kernel_recording(record: bool, cpus=(0, 1), duration: float = 60.0):
    """Record the kernel's noise events of ``cpus`` while the block runs (if ``record``).

    One recorder process per CPU (:func:`run_recorder`). Yields a dict that holds, after
    the block, ``events`` (events recorded) and ``lost`` (overwritten or dropped), summed
    over the CPUs; empty strings when nothing is recorded.
    """
    result = {"events": "", "lost": ""}
    if not record:
        yield result
        return
    recorders = [subprocess.Popen([sys.executable, "-m", MODULE,
                                   "--recorder", str(cpu), str(duration)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                 for cpu in cpus]
    try:
        for recorder in recorders:
            if recorder.stdout.readline().strip() != "ready":
                raise RuntimeError("a kernel-event recorder did not start (root and tracefs "
                                   "needed)")
        yield result
        counts = [recorder.communicate("")[0].split() for recorder in recorders]
    finally:
        for recorder in recorders:
            if recorder.poll() is None:
                recorder.kill()
                recorder.wait()
    result["events"] = sum(int(events) for events, _ in counts)
    result["lost"] = sum(int(lost) for _, lost in counts)


def read_rows(path: Path) -> list[dict]:
    """The rows of ``runs.csv`` so far (none if it does not exist)."""
    if not path.exists():
        return []
    with path.open(newline="") as stream:
        return list(csv.DictReader(stream))


def run_once(experiment: str, pair: int, arm: str, out_dir: Path, mpiexec: Path,
             autogroup_nice: int | None = None) -> dict:
    """Launch one run, measure it and return its row of :data:`COLUMNS`."""
    import jitterlab as jl

    name = f"bsp_{experiment}_p{pair:02d}_{arm}.nc"
    output = out_dir / name
    if output.exists():
        raise FileExistsError(f"{output} exists: give another directory or another --first-pair")
    command = [str(mpiexec), "-n", "2", sys.executable, "-m", MODULE,
               *worker_arguments(arm, output, pair, autogroup_nice)]
    load_before = os.getloadavg()[0]
    started_at = datetime.now(UTC)
    busy_before, cpu_before = busy_cpu_seconds(), children_cpu_seconds()
    start = time.perf_counter()
    with kernel_recording(arm == "kernel_events") as recorded:
        completed = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    run_cpu = children_cpu_seconds() - cpu_before
    other = busy_cpu_seconds() - busy_before - run_cpu
    if completed.returncode != 0:
        raise RuntimeError(f"{name}: mpiexec exited with {completed.returncode}: "
                           f"{completed.stderr[-2000:]}")
    events = jl.measure.read_bsp(output)
    return {"experiment": experiment, "pair": pair, "arm": arm, "file": name,
            "started_at": started_at.isoformat(timespec="seconds"),
            "time_in_phases_s": f"{events.attrs['measured_duration']:.6f}",
            "wall_s": f"{wall:.3f}", "run_cpu_s": f"{run_cpu:.3f}",
            "other_cpu_s": f"{other:.2f}", "load_before": f"{load_before:.2f}",
            "load_after": f"{os.getloadavg()[0]:.2f}", "kernel_events": recorded["events"],
            "kernel_events_lost": recorded["lost"],
            "command": command_text(arm, name, pair, autogroup_nice)}


def main(argv=None) -> int:
    """Run ``--pairs`` pairs of one experiment (or, with ``--worker`` / ``--recorder``, one
    rank of a run / one CPU's kernel-event recorder).

    Returns
    -------
    int
        0 (a failed run raises RuntimeError with mpiexec's message).
    """
    argv = sys.argv[1:] if argv is None else argv
    if "--worker" in argv:
        return run_worker(argv)
    if argv[:1] == ["--recorder"]:
        return run_recorder(int(argv[1]), float(argv[2]))
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path, help="directory of the runs and runs.csv")
    parser.add_argument("--experiment", choices=list(EXPERIMENTS), required=True)
    parser.add_argument("--pairs", type=int, default=8, help="pairs of runs (default 8)")
    parser.add_argument("--mpiexec", type=Path, default=Path(sys.executable).parent / "mpiexec",
                        help="mpiexec to launch with (default: beside this Python)")
    parser.add_argument("--autogroup-nice", type=int, default=None, metavar="N",
                        help="run every rank in a scheduling autogroup of nice value N "
                        "(e.g. -20, so that niced work of other sessions yields; see "
                        "run_ross_phold.with_autogroup_nice)")
    args = parser.parse_args(argv)
    if args.pairs < 1:
        parser.error(f"--pairs must be at least 1, got {args.pairs}")
    if not args.mpiexec.is_file():
        parser.error(f"no mpiexec {args.mpiexec}: give --mpiexec")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    table = args.out_dir / "runs.csv"
    done = [r for r in read_rows(table) if r["experiment"] == args.experiment]
    first = 1 + max((int(r["pair"]) for r in done), default=0)
    for pair in range(first, first + args.pairs):
        for arm in EXPERIMENTS[args.experiment]:
            row = run_once(args.experiment, pair, arm, args.out_dir.resolve(), args.mpiexec,
                           args.autogroup_nice)
            append_row(table, row, COLUMNS)
            share = float(row["other_cpu_s"]) / (2 * float(row["wall_s"]))
            print(f"{args.experiment} pair {pair} {arm:<13} {row['time_in_phases_s']} s in "
                  f"phases, wall {row['wall_s']} s, load {row['load_before']} -> "
                  f"{row['load_after']}, others {100 * share:.1f} % of 2 CPUs"
                  + (f", {row['kernel_events']} kernel events ({row['kernel_events_lost']} "
                     "lost)" if arm == "kernel_events" else ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
