"""Record the measurements of this machine that jitterlab ships in ``data/measured/``.

Every measurement is made with jitterlab's own command line (``jitterlab measure ...``,
under ``mpiexec`` for the Parallel Benchmark), one after the other, so that no benchmark
disturbs another:

1. **Detour traces** (jitSim's TraceCollector, De & Mann 2010, §3.1): a busy loop over
   the timestamp counter on EACH CPU in turn, ``--detour-seconds`` long (default 60 s),
   at the fixed threshold ``--threshold-ns`` (default 300 ns, as the sysjitter reference
   run in ``tests/data/``), plus a shorter run per CPU at jitterlab's default threshold
   (max(10·t_min, 4·median loop time)) that records t_min and the loop's resolution.
2. **FWQ samples** for Garg & De's (2006) work quanta w = 300 µs, 13 ms and 83 ms
   (§3.3, §4.2) on one CPU, about ``--fwq-seconds`` of samples each.
3. **Parallel Benchmark** (Garg & De 2006, Algorithm 1), w = ``--pb-work`` (300 µs):
   2 ranks in the four set-ups of the random wait (line 2) and the broadcast (line 10)
   — both on (Algorithm 1 as printed, their Fig. 3), random wait without broadcast
   (their Fig. 4), broadcast without random wait (the two-process effect of their
   Fig. 5) and neither —; 2 ranks with both at the larger quanta w = 13 ms and 83 ms
   (their Fig. 11(b) and 6(b)); and 4 and 8 ranks with both. On a machine with fewer CPUs
   than ranks those runs are *oversubscribed*: the ranks take turns on the CPUs, so
   their noise is not independent across processes (the assumption of Theorem 1). The
   manifest marks them so.
4. **Latency** (``jitterlab measure latency``) for 2, 4 and 8 ranks: ping-pong round trips
   between every pair of ranks (the one-way latency τ of Garg & De's Theorem 1 is half a
   round trip) and a loop of empty barriers, so that τ is measured apart from the PB runs
   it is compared with. The 4- and 8-rank runs are oversubscribed on a 2-CPU machine and
   marked so.
5. **A jitSim session** (De & Mann 2010, §4.1, Fig. 7): detour traces of every CPU
   (``--session-detour-seconds``, default 15 s each) and, right after them, the
   compute–barrier loop of jitSim — the Parallel Benchmark without random wait and
   broadcast — at 1, 2, 4 and 8 ranks (``--session-pb-seconds``, default 20 s each), so
   that the simulation is fed with traces of the same machine in the same session as
   the real runs it is compared with. Its files have the variant ``"session"``.
6. **BSP runs with their event traces** (``jitterlab measure bsp``; issue #10, the
   validation of Nataraj et al., seed 003): pairs of 2-rank runs of ``--bsp-phases``
   (1000) phases of w = 1 ms, each pair one run without and one with the injector (a
   busy detour of 500 µs every 10 ms per rank, ``--inject-seed`` = the repeat), with the
   polled collective (``--bsp-polled-pairs``, 4) and the blocking barrier
   (``--bsp-blocking-pairs``, 2), interleaved: repeat r runs the polled and the blocking
   pair (their order alternating with r), clean first in odd repeats and injected first
   in even ones, so that a drift of the machine's load spreads over both kinds.
   ``--wait-load L`` first waits (up to ``--wait-seconds``) until the 1-minute load
   average is at most L (once, before the first run). :func:`bsp_table` computes, from
   the manifest, the comparison of the estimate with the measured cost of the injection
   that ``PROVENANCE.md`` shows.

Until 2026-11-26 this program was the script ``data/record_measurements.py`` (same
options); the commands recorded in the shipped manifest name it so. Its parts: the
plan of the jobs (:mod:`jitterlab.recipes.measurement_plan`), reading back what each job
recorded (:mod:`jitterlab.recipes.measurement_files`), the manifest and ``PROVENANCE.md``
(:mod:`jitterlab.recipes.measurement_manifest`); this module runs them.

Each file gets an entry in ``data/measured/manifest.json`` (machine-readable: what it
is, machine — CPU model, number of CPUs, host, kernel — from the file's own attributes,
date, the exact command and the folder it ran in, units, load averages before and
after, size and SHA-256) and a section in ``data/measured/PROVENANCE.md``. The
manifest is rewritten after every file, so an interrupted recording keeps what it
finished. Load the data with :mod:`jitterlab.datasets` (``load_detour``, ``load_fwq``,
``load_pb``, ``load_latency``, ``list_measurements``).

Usage (from the repository root, with jitterlab installed, e.g. in ``.venv``)::

    python -m jitterlab.recipes.record_measurements          # everything, about 20 minutes
    python -m jitterlab.recipes.record_measurements --quick  # a few seconds each
    python -m jitterlab.recipes.record_measurements --dry-run  # print the commands only

and, to re-record some of the files (the other entries of the manifest are kept)::

    --only fwq pb                     # some kinds
    --only latency                    # add or redo latency only
    --only pb --variants no_bcast no_wait   # some PB runs
    --only pb --works 0.013 0.083     # PB at 13 and 83 ms
    --only session                    # jitSim Fig. 7 session
    --only bsp --wait-load 1.0        # BSP pairs (issue #10)
    --cpus 1 --detour-seconds 120

Measure on a quiet machine: noise is what *other* activity does to the CPU, so
anything else running is measured too (the load averages in the manifest tell).
``--quick`` recordings are for developing the notebooks and tests; the manifest marks
them (``"quick": true``) and so does ``PROVENANCE.md``.

Stored files (names do not depend on the durations):

* ``detour_cpu<C>_thr<T>ns.parquet``, ``detour_cpu<C>_default_threshold.parquet`` —
  jitter traces in CPU cycles (Parquet, zstd), read by ``jitterlab.read_trace``.
* ``fwq_cpu<C>_w<W>.nc`` — FWQ samples (netCDF), read by
  ``jitterlab.measure.read_fwq_samples``.
* ``pb_<R>ranks_w<W>[_<variant>].nc`` — PB runs (netCDF), read by
  ``jitterlab.measure.read_pb``; the variants ``no_wait_no_bcast``, ``no_bcast``,
  ``no_wait`` name what is switched off.
* ``detour_cpu<C>_session.parquet``, ``pb_<R>ranks_w<W>_session.nc`` — the jitSim
  session (step 5).
* ``latency_<R>ranks.nc`` — latency runs (netCDF), read by
  ``jitterlab.measure.read_latency``.
* ``bsp_2ranks_w1ms_<polled|blocking>[_inject500us_10ms]_r<R>.nc`` — BSP runs (netCDF),
  read by ``jitterlab.measure.read_bsp`` (event trace) and
  ``jitterlab.measure.read_bsp_interruptions`` (every interruption).

To keep ``data/`` small (a few MB): the FWQ files are re-encoded after the run — the
samples, whole numbers of timestamp-counter cycles divided by ``frequency_hz``, are
stored as integer cycles with ``scale_factor = 1/frequency_hz`` and zlib compression
(decoded values agree with the originals to within one unit in the last place; the
program checks this before replacing a file, and the manifest records it). The PB runs
keep ``--pb-max-samples`` raw samples per rank (the first ones; default 4000) while
their histograms count every iteration of the run, as Garg & De stored their
distributions (§4); their files are stored exactly as the benchmark wrote them (each
rank converts cycles with its own calibrated counter rate, so one scale factor would
not be exact).

References
----------
R. Garg, P. De, "Impact of Noise on Scaling of Collectives: An Empirical Evaluation",
HiPC 2006 (seed 001). P. De, V. Mann, "jitSim", Euro-Par 2010 workshops (seed 000).
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from . import DATA_DIR
from .measurement_files import DESCRIBE, machine_of, plain
from .measurement_manifest import (
    MANIFEST,
    MANIFEST_FORMAT,
    MANIFEST_VERSION,
    PROGRAM,
    PROVENANCE,
    entry_key,
    read_manifest,
    utc_now,
    write_manifest,
)
from .measurement_plan import FULL, KINDS, QUICK, STEPS, VARIANTS, plan

ROOT = DATA_DIR.parent
OUTPUT = DATA_DIR / "measured"


def load_average() -> list[float] | None:
    """The 1-, 5- and 15-minute load averages, or None where the platform has none."""
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:  # pragma: no cover - not on this platform
        return None


def program(name: str) -> str:
    """An executable next to this Python (a virtual environment) or on PATH."""
    local = Path(sys.executable).parent / name
    if local.exists():
        return str(local)
    found = shutil.which(name)
    if found is None:
        sys.exit(f"record_measurements: cannot find {name!r} next to {sys.executable} "
                 "or on PATH; install jitterlab with its mpi extra (pip install -e '.[mpi]')")
    return found


def mpi_version() -> str | None:
    """The MPI library of this environment, as its own tools report it."""
    for command in (["mpichversion"], ["mpiexec", "--version"]):
        local = Path(sys.executable).parent / command[0]
        executable = str(local) if local.exists() else shutil.which(command[0])
        if executable is None:
            continue
        try:
            output = subprocess.run([executable, *command[1:]], capture_output=True,
                                    text=True, check=False, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        lines = [" ".join(line.split()) for line in output.splitlines() if line.strip()]
        if lines:
            return lines[0].replace("MPICH Version:", "MPICH")
    return None


def git_revision() -> dict:
    """The commit of the source checkout the recording ran from, and whether it was dirty."""
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], check=True,
                                capture_output=True, text=True).stdout.strip()
        status = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain",
                                 "--untracked-files=no", "--", "jitterlab"], check=True,
                                capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {"git_commit": None, "git_dirty": None}
    return {"git_commit": commit, "git_dirty": bool(status.strip())}



def wait_for_load(limit: float, seconds: float) -> list[float] | None:
    """Wait until the 1-minute load average is at most ``limit`` (at most ``seconds``)."""
    deadline = time.monotonic() + seconds
    load = load_average()
    while load is not None and load[0] > limit and time.monotonic() < deadline:
        print(f"    waiting for the load average to fall to {limit:g}: {load}", flush=True)
        time.sleep(min(15.0, max(deadline - time.monotonic(), 0.0)))
        load = load_average()
    return load


def executable_argv(argv: list[str]) -> list[str]:
    """The command with ``jitterlab`` and ``mpiexec`` resolved to this environment."""
    return [program(word) if word in ("jitterlab", "mpiexec") else word for word in argv]



#: the options whose defaults are those of the full recording or of ``--quick``
#: (:data:`~jitterlab.recipes.measurement_plan.FULL`, ``QUICK``): name -> (type, what)
SIZE_OPTIONS = {
    "detour_seconds": (float, "length of each fixed-threshold detour trace [s]"),
    "default_threshold_seconds": (float, "length of each default-threshold detour trace [s]"),
    "fwq_seconds": (float, "about this many seconds of samples per FWQ quantum"),
    "pb_seconds": (float, "length of each Parallel Benchmark run [s]"),
    "latency_round_trips": (int, "ping-pong round trips per pair of ranks of each latency "
                            "run"),
    "latency_barriers": (int, "empty barriers of each latency run"),
    "session_detour_seconds": (float, "length of each detour trace of the jitSim session "
                               "[s]"),
    "session_pb_seconds": (float, "length of each compute-barrier loop of the jitSim "
                           "session [s]"),
    "bsp_phases": (int, "phases of each BSP run"),
    "bsp_polled_pairs": (int, "pairs of BSP runs (without/with the injector) with the "
                         "polled collective"),
    "bsp_blocking_pairs": (int, "pairs of BSP runs with the blocking barrier"),
}


def recorded_command(argv: list[str]) -> str:
    """The command of a recording as the manifest records it (``recorded_with``)."""
    return shlex.join([*shlex.split(PROGRAM), *argv])


def parse_args(argv=None):
    """The options of a recording (``--help`` lists them), with the durations of
    ``--quick`` or of the full recording filled in where none is given.

    Raises
    ------
    SystemExit
        For an unknown option or a bad value (argparse's message names it).
    """
    parser = argparse.ArgumentParser(
        prog="python -m jitterlab.recipes.record_measurements",
        description="Record the measurements of this machine shipped in data/measured/ "
        "(detour traces, FWQ samples, Parallel Benchmark runs, latency runs) with their "
        "provenance.",
        epilog="Durations default to the full recording (60 s per benchmark); --quick "
        "sets them to a few seconds, and an explicit --*-seconds option wins over both.")
    parser.add_argument("--quick", action="store_true",
                        help="a few seconds per benchmark, for development; marked in the "
                        "manifest")
    parser.add_argument("--only", nargs="+", choices=STEPS, default=list(STEPS),
                        help="record only these steps (a kind of measurement, or the jitSim "
                        "session); the other entries of an existing manifest are kept")
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=None,
                        help="of the steps chosen, record only the files of these variants "
                        "(e.g. --only pb --variants no_bcast no_wait); the other entries "
                        "are kept")
    parser.add_argument("--cpus", type=lambda s: [int(c) for c in s.split(",")],
                        default=None,
                        help="comma-separated CPUs for the detour traces (default: every "
                        "CPU this process may use)")
    parser.add_argument("--threshold-ns", type=float, default=300.0,
                        help="fixed detour threshold in ns (default 300, as the sysjitter "
                        "reference)")
    parser.add_argument("--fwq-cpu", type=int, default=None,
                        help="CPU of the FWQ runs (default: the highest-numbered CPU)")
    parser.add_argument("--pb-max-samples", type=int, default=4000,
                        help="raw samples kept per rank of each PB run (its histograms count "
                        "every iteration; default 4000)")
    parser.add_argument("--pb-work", type=float, default=300e-6,
                        help="work quantum w of the PB runs in seconds (default 300e-6)")
    parser.add_argument("--works", nargs="+", type=float, default=None,
                        help="of the steps chosen, record only the files of these work "
                        "quanta in seconds (e.g. --only pb --works 0.013 0.083)")
    parser.add_argument("--session-max-samples", type=int, default=1000,
                        help="raw samples kept per rank of each session loop (its "
                        "histograms count every iteration; default 1000)")
    parser.add_argument("--wait-load", type=float, default=None,
                        help="before the first BSP run, wait until the 1-minute load average "
                        "is at most this (see --wait-seconds)")
    parser.add_argument("--wait-seconds", type=float, default=600.0,
                        help="wait at most this long for --wait-load (default 600)")
    for key, (kind, what) in SIZE_OPTIONS.items():
        parser.add_argument("--" + key.replace("_", "-"), type=kind, default=None,
                            help=f"{what} (default {FULL[key]:g}, with --quick "
                            f"{QUICK[key]:g})")
    parser.add_argument("--output", type=Path, default=OUTPUT,
                        help=f"folder of the measurements (default {OUTPUT.relative_to(ROOT)})")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the commands and exit")
    args = parser.parse_args(argv)
    for key in (*SIZE_OPTIONS, "threshold_ns", "pb_max_samples", "pb_work",
                "session_max_samples", "wait_seconds"):
        value = getattr(args, key)
        if value is not None and (value < 0 if key.endswith("_pairs") else not value > 0):
            parser.error(f"--{key.replace('_', '-')} must be "
                         f"{'at least 0' if key.endswith('_pairs') else 'positive'}, got {value}")
    defaults = QUICK if args.quick else FULL
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [0]
    if args.cpus is None:
        args.cpus = allowed
    if args.fwq_cpu is None:
        args.fwq_cpu = max(allowed)
    return args


def main(argv=None) -> int:
    """Record the measurements the options ask for (see the module docstring).

    Returns
    -------
    int
        0, or the exit status of the first benchmark that failed.
    """
    args = parse_args(argv)
    output: Path = args.output
    jobs = plan(args)
    if args.dry_run:
        for job in jobs:
            print(f"(cd {output} && {shlex.join(job['argv'])})")
        return 0
    output.mkdir(parents=True, exist_ok=True)
    recorded_with = recorded_command(sys.argv[1:] if argv is None else argv)
    import jitterlab as jl
    from jitterlab.datasets import sha256  # pandas: not for --help

    manifest = read_manifest(output)
    host = platform.node()
    partial = set(args.only) != set(STEPS) or bool(args.variants) or bool(args.works)
    if (manifest is not None and partial
            and manifest.get("machine", {}).get("host") != host):
        sys.exit(f"record_measurements: {output / MANIFEST} describes host "
                 f"{manifest.get('machine', {}).get('host')!r}, this is {host!r}; record "
                 "everything (without --only) to replace it")
    same_host = manifest is not None and manifest.get("machine", {}).get("host") == host
    if not same_host:
        # another machine's measurements: start afresh (their files go at the end)
        old = manifest["files"] if manifest is not None else []
        manifest = {"format": MANIFEST_FORMAT, "version": MANIFEST_VERSION, "files": [],
                    "recordings": []}
    else:
        # entries are replaced one by one as they are recorded, so an interrupted run
        # leaves a consistent manifest (each entry says when and how it was recorded)
        old = []
    manifest.setdefault("recordings", []).append(
        {"command": recorded_with, "started_at": utc_now(), "quick": bool(args.quick)})
    manifest.update({
        "recorded_with": recorded_with, "jitterlab_version": jl.__version__,
        **git_revision(), "python": platform.python_version(),
        "mpi": (mpi_version() if {"pb", "latency", "session", "bsp"} & set(args.only)
                else manifest.get("mpi")),
    })
    recorded = set()
    print(f"Recording {len(jobs)} measurements into {output} "
          f"({'quick' if args.quick else 'full'}; load average {load_average()})")
    started = time.monotonic()
    for number, job in enumerate(jobs, start=1):
        argv_run = executable_argv(job["argv"])
        if (job["kind"] == "bsp" and args.wait_load is not None
                and job is next(j for j in jobs if j["kind"] == "bsp")):
            wait_for_load(args.wait_load, args.wait_seconds)  # a quiet start
        print(f"\n[{number}/{len(jobs)}] {job['file']}: {shlex.join(job['argv'])}",
              flush=True)
        before = load_average()
        begin = time.monotonic()
        result = subprocess.run(argv_run, cwd=output, check=False)
        if result.returncode != 0:
            print(f"record_measurements: {job['file']} failed (exit status "
                  f"{result.returncode}); the manifest keeps what was recorded before",
                  file=sys.stderr)
            return result.returncode or 1
        path = output / job["file"]
        described = DESCRIBE[job["kind"]](path)
        attrs = described["attrs"]
        entry = {key: value for key, value in job.items() if key != "argv"}
        entry.update({
            "command": shlex.join(job["argv"]), "cwd": "data/measured",
            "quick": bool(args.quick),
            "collected_at": attrs.get("collected_at"),
            "finished_at": attrs.get("finished_at") or utc_now(),
            "wall_seconds": round(time.monotonic() - begin, 1),
            "machine": machine_of(attrs), "jitterlab_version": attrs.get("jitterlab_version"),
            "load_average_before": before, "load_average_after": load_average(),
            "summary": described["summary"], "postprocess": described["postprocess"],
            "bytes": path.stat().st_size, "sha256": sha256(path),
        })
        if job["kind"] in ("pb", "latency", "bsp") and attrs.get("oversubscribed") is not None:
            entry["oversubscribed"] = bool(attrs["oversubscribed"])
        manifest.setdefault("machine", entry["machine"])
        for replaced in [e for e in manifest["files"] if entry_key(e) == entry_key(entry)]:
            if replaced["file"] != entry["file"] and (output / replaced["file"]).is_file():
                (output / replaced["file"]).unlink()  # same measurement, another name
        manifest["files"] = [e for e in manifest["files"]
                             if entry_key(e) != entry_key(entry) and e["file"] != entry["file"]]
        manifest["files"].append(plain(entry))
        recorded.add(entry_key(entry))
        write_manifest(output, manifest)
        print(f"    -> {path.stat().st_size} bytes, {entry['wall_seconds']} s", flush=True)
    if not partial:
        # a full recording replaces everything it records: drop what it did not record
        # again, but keep measurements of kinds it never records (made by other means)
        dropped = [e for e in manifest["files"]
                   if entry_key(e) not in recorded and e["kind"] in KINDS]
        old += dropped
        manifest["files"] = [e for e in manifest["files"] if e not in dropped]
        write_manifest(output, manifest)
    kept = {e["file"] for e in manifest["files"]}
    for entry in old:
        stale = output / entry["file"]
        if entry["file"] not in kept and stale.is_file():
            stale.unlink()
            print(f"removed {stale.name} (not part of this recording)")
    total = sum((output / e["file"]).stat().st_size for e in manifest["files"])
    print(f"\nDone in {time.monotonic() - started:.0f} s: {len(manifest['files'])} files, "
          f"{total / 1e6:.2f} MB in {output}; see {output / PROVENANCE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
