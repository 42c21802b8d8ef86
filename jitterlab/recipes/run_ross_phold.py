"""Run ROSS's PHOLD model on this machine and append one row per run to a CSV (issues #12, #18).

The benchmark of Holder & Carothers (seed 004, Sect. 4.1) on a 2-CPU machine: PHOLD with
16 KPs per PE, batch 4, gvt_interval 1024, 10 starting events per LP and their weak-scaling
ratio of 1024 LPs per PE, in 17 configurations (:data:`CONFIGURATIONS`) — 1 PE sequential
and optimistic, 2 PEs optimistic at 10/50/100 % remote and gvt_interval 16/256/1024,
2 PEs conservative, 4 PEs oversubscribed, ranks bound to cores or not, with and without
a busy loop on CPU 1 (``data/dutyhog.c``, always busy or 1 ms of every 10 ms). The
configurations run round-robin, every one once per repeat, so slow drifts of a shared
machine spread over all of them. ``--set issue18`` runs instead the grid of issue #18
(:func:`grid_configurations`: gvt_interval 8–2048, remote share 5–75 %, batch 4 and 16 on
2 PEs, another workload with 1 event per LP, and 1 PE), the out-of-sample test of the
Time Warp model in notebook 13.

Per run the row holds the configuration, ROSS's printed statistics (read with
:func:`jitterlab.io.read_ross_summary`), the wall time of the launch, the CPU time of
ROSS's process tree (``getrusage(RUSAGE_CHILDREN)`` around the launch), of the injected
noise (its own rusage) and of other processes (busy time of all CPUs from
``/proc/stat`` minus those two), the 1-minute load before and after, and the exact
command. A run during which other processes used more than :data:`DISTURBED_SHARE` of
the 2 CPUs is flagged ``DISTURBED`` in the log (the table keeps its CPU times, so the flag
can be recomputed: :func:`other_share`). The columns are :data:`COLUMNS`, described in
``data/measured/PROVENANCE.md`` (section "ROSS PHOLD runs").

ROSS is built outside the project (``data/measured/PROVENANCE.md`` gives the commit and
the cmake line); ``--ross-build`` points at that build. Each finished run is appended to
the CSV at once (flushed and synced), so an interrupted recording keeps its runs; a run
whose ROSS fails or whose output lacks a statistic is reported and not recorded. ROSS's
full output of every run is kept in the work directory (``--work-dir``), where the noise
injector is compiled with ``gcc -O2`` if it is missing.

Run with the project's Python, e.g. (the shipped table: 5 repeats)::

    .venv/bin/python -m jitterlab.recipes.run_ross_phold /tmp/ross-runs/runs.csv --reps 5

and a quick check of two configurations::

    .venv/bin/python -m jitterlab.recipes.run_ross_phold /tmp/check.csv --reps 1 \\
        --only seq opt2_r10

The grid of issue #18 was appended to a copy of the shipped table (3 repeats)::

    .venv/bin/python -m jitterlab.recipes.run_ross_phold runs.csv --set issue18 --reps 3 \\
        --ross-build /work/ext/ross/build --work-dir /work/ext/ross/runs/work

Until 2026-11-26 this program was the script ``data/run_ross_phold.py`` (same options),
the name in the commands recorded in ``data/measured/PROVENANCE.md``.

References
----------
Holder, A. and Carothers, C. D., "Investigating the memory characteristics of a
massively parallel Time Warp kernel" (seed 004), Sect. 4.1 (the PHOLD configuration).
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import jitterlab as jl

from . import DATA_DIR

#: the busy loop that injects the noise (C source, compiled by :func:`build_dutyhog`)
DUTYHOG_SOURCE = DATA_DIR / "dutyhog.c"
NOISE_CPU = 1  # the CPU the injected busy loop is pinned to
NOISE_SECONDS = 600  # the injector's own time limit; it is terminated when ROSS exits
NOISE_LEAD = 0.3  # seconds the injector runs before ROSS starts [s]

#: injected noise: name → (description, busy [µs], period [µs])
NOISE = {
    "hog": ("busy loop pinned to CPU 1 for the whole run", 1000, 1000),
    "duty": ("busy loop pinned to CPU 1, 1 ms of every 10 ms", 1000, 10000),
}

COLUMNS = (
    "run", "config", "repeat", "started_at", "pes", "synch", "remote_percent",
    "gvt_interval", "batch", "nlp", "nkp", "start_events", "mean", "end_time", "extramem",
    "bind_to_core", "noise", "oversubscribed", "committed_events", "event_rate_per_s",
    "efficiency_percent", "rollbacks", "events_rolled_back", "total_events_processed",
    "remote_network_events", "gvt_computations", "all_reduce_calls", "forced_gvt",
    "running_time_s", "wall_s", "ross_cpu_s", "noise_cpu_s", "other_cpu_s", "load_before",
    "load_after", "command",
)
#: ROSS's statistics recorded per run (names of :func:`jitterlab.io.read_ross_summary`)
STATISTICS = COLUMNS[COLUMNS.index("committed_events"):COLUMNS.index("wall_s")]
#: the statistics ROSS prints with decimals, and how many
PRINTED_DECIMALS = {"event_rate_per_s": ".1f", "efficiency_percent": ".2f",
                    "running_time_s": ".4f"}


@dataclass(frozen=True)
class Configuration:
    """One PHOLD configuration (seed 004, Sect. 4.1, on this 2-CPU machine).

    ``synch`` is ROSS's mode (1 sequential, 2 conservative, 3 optimistic); ``nlp`` and
    ``nkp`` are per PE; ``noise`` is ``None`` or a key of :data:`NOISE`.
    """

    name: str
    pes: int
    synch: int
    remote_percent: int = 10
    gvt_interval: int = 1024
    end_time: int = 300
    bind_to_core: bool = False
    noise: str | None = None
    batch: int = 4
    nlp: int = 1024
    nkp: int = 16
    start_events: int = 10
    mean: float = 2.0
    extramem: int = 200_000

    @property
    def oversubscribed(self) -> bool:
        """More PEs than this machine's 2 CPUs."""
        return self.pes > 2

    @property
    def noise_text(self) -> str:
        """The ``noise`` column: ``none`` or the injector and its command."""
        if self.noise is None:
            return "none"
        description, busy, period = NOISE[self.noise]
        return f"{description} ({shlex.join(noise_command(self, Path('dutyhog')))})"


CONFIGURATIONS = (
    Configuration("seq", 1, 1),
    Configuration("opt1", 1, 3),
    Configuration("opt2_r10", 2, 3),
    Configuration("opt2_r50", 2, 3, remote_percent=50),
    Configuration("opt2_r100", 2, 3, remote_percent=100),
    Configuration("opt2_r10_g256", 2, 3, gvt_interval=256),
    Configuration("opt2_r10_g16", 2, 3, gvt_interval=16, end_time=60),
    Configuration("opt2_r10_g1024_e60", 2, 3, end_time=60),
    Configuration("cons2_r10", 2, 2),
    Configuration("opt4_r10", 4, 3),
    Configuration("opt2_r10_bind", 2, 3, bind_to_core=True),
    Configuration("seq_hog", 1, 1, noise="hog"),
    Configuration("opt2_r10_hog", 2, 3, noise="hog"),
    Configuration("opt2_r10_duty", 2, 3, noise="duty"),
    Configuration("opt2_r10_bind_hog", 2, 3, bind_to_core=True, noise="hog"),
    Configuration("opt2_r10_g16_hog", 2, 3, gvt_interval=16, end_time=60, noise="hog"),
    Configuration("opt2_r10_g16_duty", 2, 3, gvt_interval=16, end_time=60, noise="duty"),
)

#: the grid of issue #18, an out-of-sample test of the Time Warp model (seed 004 on this
#: machine): gvt_interval, share of remote events and batch around the seed's 1024, 10 %
#: and 4, at end time 50 (about 0.5 M committed events on 2 PEs)
GRID_GVT_INTERVALS = (8, 64, 512, 2048)
GRID_REMOTE_PERCENTS = (5, 10, 25, 50, 75)
GRID_BATCHES = (4, 16)


def grid_configurations() -> tuple[Configuration, ...]:
    """The issue #18 grid, 25 configurations, all at 1024 LPs per PE.

    On 2 PEs, optimistic, 10 events per LP, end time 50: every remote share of
    :data:`GRID_REMOTE_PERCENTS` at gvt_interval 512 and batch 4 (the remote axis);
    every gvt_interval of :data:`GRID_GVT_INTERVALS` at 10 and 50 % remote for both
    batches (the gvt_interval and batch axes); 25 % remote at gvt_interval 8 and 2048
    with batch 16. With 1 event per LP and end time 500 (another workload: as many events,
    a tenth of the event population): 10 % remote, batch 4, gvt_interval 8 and 2048. On
    1 PE, sequential, with 10 and with 1 event per LP.
    """
    def two_pes(remote, gvt, batch):
        return Configuration(f"g2_r{remote}_i{gvt}_b{batch}", 2, 3, remote_percent=remote,
                             gvt_interval=gvt, batch=batch, end_time=50)

    grid = [two_pes(remote, 512, 4) for remote in GRID_REMOTE_PERCENTS]
    grid += [two_pes(remote, gvt, batch) for batch in GRID_BATCHES
             for gvt in GRID_GVT_INTERVALS for remote in (10, 50)
             if (gvt, batch) != (512, 4)]
    grid += [two_pes(25, gvt, 16) for gvt in (8, 2048)]
    grid += [Configuration(f"g2_r10_i{gvt}_b4_s1", 2, 3, gvt_interval=gvt, end_time=500,
                           start_events=1) for gvt in (8, 2048)]
    grid += [Configuration("g1_seq", 1, 1, end_time=50),
             Configuration("g1_seq_s1", 1, 1, end_time=500, start_events=1)]
    return tuple(grid)


GRID_CONFIGURATIONS = grid_configurations()
#: the configuration sets the runner knows: ``--set``
SETS = {"issue12": CONFIGURATIONS, "issue18": GRID_CONFIGURATIONS}
BY_NAME = {c.name: c for c in CONFIGURATIONS + GRID_CONFIGURATIONS}
#: a run is flagged as disturbed when other processes used more than this share of the
#: machine's 2 CPUs while it ran (``other_cpu_s / (2 wall_s)``) [-]
DISTURBED_SHARE = 0.10


def other_share(row: dict) -> float:
    """Share of the 2 CPUs that other processes used during the run of ``row``. [-]"""
    return float(row["other_cpu_s"]) / (2 * float(row["wall_s"]))


def with_autogroup_nice(command: list[str], nice: int) -> list[str]:
    """``command`` run by a shell that first sets the nice value of its autogroup.

    With the kernel's autogroups (``/proc/sys/kernel/sched_autogroup_enabled``), every
    session is one scheduling group and the nice value of a process counts only inside
    its own group: work niced in other sessions still takes an equal share of the CPUs.
    The autogroup's own nice value (``/proc/<pid>/autogroup``, negative needs root) is
    what weighs against the other sessions. ROSS's ranks each lead a session of their own
    (the sequential run through the runner, the MPI ranks through hydra).
    """
    return ["sh", "-c", f'echo {int(nice)} > /proc/$$/autogroup && exec "$0" "$@"', *command]


def ross_command(config: Configuration, ross_build: Path, mpiexec: Path,
                 autogroup_nice: int | None = None) -> list[str]:
    """The command that runs ``config``: sequential runs without ``mpiexec``; each rank
    under :func:`with_autogroup_nice` when ``autogroup_nice`` is given."""
    phold = [str(ross_build / "models" / "phold" / "phold"), f"--synch={config.synch}",
             f"--nlp={config.nlp}", f"--start-events={config.start_events}",
             f"--mean={config.mean:g}", f"--end={config.end_time}", f"--nkp={config.nkp}",
             f"--batch={config.batch}", f"--gvt-interval={config.gvt_interval}",
             f"--remote={config.remote_percent / 100:g}", f"--extramem={config.extramem}",
             "--report-interval=1"]
    if autogroup_nice is not None:
        phold = with_autogroup_nice(phold, autogroup_nice)
    if config.synch == 1:
        return phold
    bind = ["-bind-to", "core"] if config.bind_to_core else []
    return [str(mpiexec), *bind, "-n", str(config.pes), *phold]


def noise_command(config: Configuration, dutyhog: Path) -> list[str]:
    """The injector's command for ``config`` (which must have noise)."""
    _, busy, period = NOISE[config.noise]
    return ["taskset", "-c", str(NOISE_CPU), str(dutyhog), str(busy), str(period),
            str(NOISE_SECONDS)]


def busy_cpu_seconds() -> float:
    """Busy time of all CPUs since boot from ``/proc/stat`` (user, nice, system, irq,
    softirq; not idle, iowait or steal). [s]"""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    assert fields[0] == "cpu", fields
    user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in fields[1:8])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds() -> float:
    """User + system CPU time of this process's waited-for children. [s]"""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def parse_output(output: str, config: Configuration) -> dict:
    """ROSS's statistics of one run, checked against the configuration that ran.

    Raises
    ------
    ValueError
        A statistic is missing (the run did not finish) or ROSS ran another configuration.
    """
    summary = jl.io.read_ross_summary(output)
    expected = {"pes": config.pes, "gvt_interval": config.gvt_interval,
                "batch": config.batch, "end_time": config.end_time,
                "lps": config.pes * config.nlp}
    for key, value in expected.items():
        if summary[key] != value:
            raise ValueError(f"ROSS reports {key} = {summary[key]}, the configuration "
                             f"{config.name!r} has {value}")
    return {key: float(summary[key]) if key in PRINTED_DECIMALS else int(summary[key])
            for key in STATISTICS}


def make_row(config: Configuration, run: int, repeat: int, started_at: datetime,
             statistics: dict, measured: dict, command: list[str]) -> dict:
    """One CSV row as text, in the shipped table's formats."""
    row = {"run": run, "config": config.name, "repeat": repeat,
           "started_at": started_at.isoformat(timespec="seconds"), "pes": config.pes,
           "synch": config.synch, "remote_percent": config.remote_percent,
           "gvt_interval": config.gvt_interval, "batch": config.batch, "nlp": config.nlp,
           "nkp": config.nkp, "start_events": config.start_events,
           "mean": float(config.mean), "end_time": config.end_time,
           "extramem": config.extramem, "bind_to_core": config.bind_to_core,
           "noise": config.noise_text, "oversubscribed": config.oversubscribed}
    for key in STATISTICS:
        value = statistics[key]
        row[key] = (format(float(value), PRINTED_DECIMALS[key]) if key in PRINTED_DECIMALS
                    else int(value))
    row.update(wall_s=round(measured["wall_s"], 3), ross_cpu_s=round(measured["ross_cpu_s"], 3),
               noise_cpu_s=round(measured["noise_cpu_s"], 3),
               other_cpu_s=round(measured["other_cpu_s"], 2),
               load_before=round(measured["load_before"], 2),
               load_after=round(measured["load_after"], 2), command=shlex.join(command))
    assert tuple(row) == COLUMNS
    return {key: str(value) for key, value in row.items()}


def read_done(path: Path) -> list[dict]:
    """The rows already in ``path`` (none if it does not exist); refuses other columns."""
    if not path.exists():
        return []
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise ValueError(f"{path} has the columns {reader.fieldnames}, not a ROSS PHOLD "
                             f"table's {list(COLUMNS)}: give another file")
        return list(reader)


def append_row(path: Path, row: dict, columns=COLUMNS) -> None:
    """Append ``row`` to the CSV ``path`` (header ``columns`` first if the file is new) and
    sync it."""
    from jitterlab.io.chunks import append_csv_row  # jitterlab.io is heavy: not for --help

    append_csv_row(path, row, columns)


def build_dutyhog(work_dir: Path) -> Path:
    """The injector, compiled from ``data/dutyhog.c`` with ``gcc -O2`` if missing."""
    binary = work_dir / "dutyhog"
    if not binary.exists():
        subprocess.run(["gcc", "-O2", "-o", str(binary), str(DUTYHOG_SOURCE)], check=True)
    return binary


def run_once(config: Configuration, command: list[str], dutyhog: Path, work_dir: Path,
             timeout: float) -> tuple[subprocess.CompletedProcess, dict, datetime, str | None]:
    """Launch ``command`` (with the injector for noise configurations) and measure it.

    Returns ROSS's completed process, the measurements (:data:`COLUMNS` ``wall_s`` to
    ``load_after``), the start time and why the run must not be recorded (or ``None``).
    """
    load_before = os.getloadavg()[0]
    started_at = datetime.now(UTC)
    busy_before = busy_cpu_seconds()
    hog = process = None
    problem = None
    try:
        if config.noise is not None:
            hog = subprocess.Popen(noise_command(config, dutyhog), cwd=work_dir)
            time.sleep(NOISE_LEAD)
        cpu_before = children_cpu_seconds()
        start = time.perf_counter()
        process = subprocess.Popen(command, cwd=work_dir, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
            problem = f"killed after {timeout:g} s"
        wall = time.perf_counter() - start
        ross_cpu = children_cpu_seconds() - cpu_before  # the injector is not reaped yet
        noise_cpu = 0.0
        if hog is not None:
            if os.wait4(hog.pid, os.WNOHANG)[0] != 0:
                hog.returncode = -1  # reaped above
                problem = problem or "the noise injector ended before ROSS did"
            else:
                hog.terminate()
                usage = os.wait4(hog.pid, 0)[2]
                hog.returncode = 0
                noise_cpu = usage.ru_utime + usage.ru_stime
    finally:  # interrupted: leave neither ROSS nor the injector running
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if hog is not None and hog.returncode is None:
            hog.kill()
            hog.wait()
    busy = busy_cpu_seconds() - busy_before
    if problem is None and process.returncode != 0:
        problem = f"ROSS exited with {process.returncode}"
    measured = {"wall_s": wall, "ross_cpu_s": ross_cpu, "noise_cpu_s": noise_cpu,
                "other_cpu_s": busy - ross_cpu - noise_cpu, "load_before": load_before,
                "load_after": os.getloadavg()[0]}
    result = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
    return result, measured, started_at, problem


def main(argv=None) -> int:
    """Run the configurations ``--reps`` times, round robin, appending a row per run.

    Returns
    -------
    int
        0, or 1 if a run was not recorded (ROSS failed or printed no statistic).
    """
    parser = argparse.ArgumentParser(prog="python -m jitterlab.recipes.run_ross_phold",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("output", type=Path, help="CSV to append the runs to")
    parser.add_argument("--reps", type=int, default=5,
                        help="repeats: every configuration once per repeat (default 5)")
    parser.add_argument("--first-run", type=int, default=None,
                        help="number of the first run (default: after the CSV's last)")
    parser.add_argument("--first-repeat", type=int, default=None,
                        help="number of the first repeat (default: after the CSV's last)")
    parser.add_argument("--ross-build", type=Path, default=Path("/tmp/ross-build"),
                        help="ROSS's build directory (default /tmp/ross-build)")
    parser.add_argument("--mpiexec", type=Path,
                        default=Path(sys.executable).parent / "mpiexec",
                        help="mpiexec to launch with (default: beside this Python)")
    parser.add_argument("--set", choices=list(SETS), default="issue12",
                        help="the configurations: issue12 (the 17 of the shipped runs 1-85, "
                        "default) or issue18 (the grid of gvt_interval, remote share and "
                        "batch)")
    parser.add_argument("--only", nargs="+", choices=list(BY_NAME), default=None,
                        metavar="CONFIG", help="run only these configurations (of any "
                        "set): " + ", ".join(BY_NAME))
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/ross-runs"),
                        help="where ROSS runs, its outputs are kept and the noise injector "
                        "is built (default /tmp/ross-runs)")
    parser.add_argument("--autogroup-nice", type=int, default=None, metavar="N",
                        help="run every rank in a scheduling autogroup of nice value N "
                        "(e.g. -20: niced work of other sessions yields to ROSS; see "
                        "with_autogroup_nice); the command column shows it")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds after which a run is killed and not recorded")
    args = parser.parse_args(argv)
    # a terminated recording cleans up like an interrupted one (the finally of run_once)
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))

    if args.reps < 1:
        parser.error(f"--reps must be at least 1, got {args.reps}")
    phold = args.ross_build / "models" / "phold" / "phold"
    if not phold.is_file():
        parser.error(f"no PHOLD binary {phold}: build ROSS as data/measured/PROVENANCE.md "
                     "says, or give --ross-build")
    configs = [BY_NAME[n] for n in args.only] if args.only else list(SETS[args.set])
    if any(c.synch != 1 for c in configs) and not args.mpiexec.is_file():
        parser.error(f"no mpiexec {args.mpiexec}: give --mpiexec")
    if os.cpu_count() != 2:
        print(f"warning: {os.cpu_count()} CPUs; the configurations assume 2 (4 PEs "
              "oversubscribed, noise on CPU 1)", file=sys.stderr)
    output = args.output.resolve()
    try:
        done = read_done(output)
    except ValueError as error:
        parser.error(str(error))
    first_run = args.first_run or 1 + max((int(r["run"]) for r in done), default=0)
    first_repeat = args.first_repeat or 1 + max((int(r["repeat"]) for r in done), default=0)
    runs = range(first_run, first_run + args.reps * len(configs))
    taken = {int(r["run"]) for r in done} & set(runs)
    if taken:
        parser.error(f"{output} already holds runs {sorted(taken)}: give --first-run")
    work_dir = args.work_dir.resolve()
    (work_dir / "outputs").mkdir(parents=True, exist_ok=True)
    dutyhog = build_dutyhog(work_dir) if any(c.noise for c in configs) else None

    run, failed, disturbed = first_run, [], []
    for repeat in range(first_repeat, first_repeat + args.reps):
        for config in configs:
            command = ross_command(config, args.ross_build, args.mpiexec,
                                   args.autogroup_nice)
            result, measured, started_at, problem = run_once(
                config, command, dutyhog, work_dir, args.timeout)
            log = work_dir / "outputs" / f"run{run:03d}_{config.name}.txt"
            log.write_text(f"{result.stdout}\n--- stderr ---\n{result.stderr}")
            try:
                if problem is not None:
                    raise ValueError(problem)
                statistics = parse_output(result.stdout, config)
            except ValueError as error:
                failed.append(run)
                print(f"run {run} {config.name} repeat {repeat}: NOT RECORDED: {error} "
                      f"(output in {log})", file=sys.stderr, flush=True)
            else:
                row = make_row(config, run, repeat, started_at, statistics, measured, command)
                append_row(output, row)
                share = other_share(row)
                flag = ""
                if share > DISTURBED_SHARE:
                    disturbed.append(run)
                    flag = "  DISTURBED"
                print(f"run {run:3d}  {config.name:<19} repeat {repeat}  "
                      f"{float(row['event_rate_per_s']):>11,.0f} events/s  load "
                      f"{row['load_before']} -> {row['load_after']}  others "
                      f"{100 * share:.1f} % of 2 CPUs{flag}", flush=True)
            run += 1
    if disturbed:
        print(f"{len(disturbed)} runs disturbed (other processes above "
              f"{100 * DISTURBED_SHARE:g} % of the 2 CPUs): {disturbed}", file=sys.stderr)
    if failed:
        print(f"{len(failed)} runs not recorded: {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
