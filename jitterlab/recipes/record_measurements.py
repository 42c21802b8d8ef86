#!/usr/bin/env python
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

Each file gets an entry in ``data/measured/manifest.json`` (machine-readable: what it
is, machine — CPU model, number of CPUs, host, kernel — from the file's own attributes,
date, the exact command and the folder it ran in, units, load averages before and
after, size and SHA-256) and a section in ``data/measured/PROVENANCE.md``. The
manifest is rewritten after every file, so an interrupted recording keeps what it
finished. Load the data with :mod:`jitterlab.datasets` (``load_detour``, ``load_fwq``,
``load_pb``, ``load_latency``, ``list_measurements``).

Usage (from the repository root, with jitterlab installed, e.g. in ``.venv``)::

    python data/record_measurements.py              # everything, about 20 minutes
    python data/record_measurements.py --quick      # a few seconds each (development)
    python data/record_measurements.py --only fwq pb            # re-record some kinds
    python data/record_measurements.py --only latency           # add or redo latency only
    python data/record_measurements.py --only pb --variants no_bcast no_wait  # some PB runs
    python data/record_measurements.py --only pb --works 0.013 0.083  # PB at 13 and 83 ms
    python data/record_measurements.py --only session           # jitSim Fig. 7 session
    python data/record_measurements.py --only bsp --wait-load 1.0   # BSP pairs (issue #10)
    python data/record_measurements.py --cpus 1 --detour-seconds 120
    python data/record_measurements.py --dry-run    # print the commands only

Measure on a quiet machine: noise is what *other* activity does to the CPU, so
anything else running is measured too (the load averages in the manifest tell).
``--quick`` recordings are for developing the notebooks and tests; the manifest marks
them (``"quick": true``) and so does ``PROVENANCE.md``.

Stored files (names do not depend on the durations):

* ``detour_cpu<C>_thr<T>ns.parquet``, ``detour_cpu<C>_default_threshold.parquet`` —
  jitter traces in CPU cycles (Parquet, zstd), read by ``jitterlab.read_trace``.
* ``fwq_cpu<C>_w<W>.nc`` — FWQ samples (netCDF), read by
  ``jitterlab.bench.read_fwq_samples``.
* ``pb_<R>ranks_w<W>[_<variant>].nc`` — PB runs (netCDF), read by
  ``jitterlab.bench.read_pb``; the variants ``no_wait_no_bcast``, ``no_bcast``,
  ``no_wait`` name what is switched off.
* ``detour_cpu<C>_session.parquet``, ``pb_<R>ranks_w<W>_session.nc`` — the jitSim
  session (step 5).
* ``latency_<R>ranks.nc`` — latency runs (netCDF), read by
  ``jitterlab.bench.read_latency``.
* ``bsp_2ranks_w1ms_<polled|blocking>[_inject500us_10ms]_r<R>.nc`` — BSP runs (netCDF),
  read by ``jitterlab.bench.read_bsp`` (event trace) and
  ``jitterlab.bench.read_bsp_interruptions`` (every interruption).

To keep ``data/`` small (a few MB): the FWQ files are re-encoded after the run — the
samples, whole numbers of timestamp-counter cycles divided by ``frequency_hz``, are
stored as integer cycles with ``scale_factor = 1/frequency_hz`` and zlib compression
(decoded values agree with the originals to within one unit in the last place; the
script checks this before replacing a file, and the manifest records it). The PB runs
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
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from jitterlab.bench._machine import utc_now
from jitterlab.datasets import sha256

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "data" / "measured"
MANIFEST = "manifest.json"
PROVENANCE = "PROVENANCE.md"
MANIFEST_FORMAT = "jitterlab measurements manifest"
MANIFEST_VERSION = 1
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


# --------------------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------------------
def time_label(seconds: float, space: str = "", micro: str = "u") -> str:
    """300e-6 -> '300us', 13e-3 -> '13ms', 2.5 -> '2.5s' (for file names); with
    ``space=" ", micro="µ"`` for text: '300 µs'."""
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, f"{micro}s"), (1e-9, "ns")):
        if seconds >= scale * (1 - 1e-9):
            return f"{seconds / scale:.6g}{space}{unit}"
    return f"{seconds:g}{space}s"


def time_text(seconds: float) -> str:
    return time_label(seconds, " ", "µ")


def load_average() -> list[float] | None:
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


def plain(value):
    """JSON-compatible value (numpy scalars to Python numbers, NaN to None)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def machine_of(attrs: dict) -> dict:
    """The machine as the measurement itself recorded it."""
    return {key: plain(attrs.get(key)) for key in ("host", "cpu_model", "n_cpus", "kernel",
                                                   "os")}


# --------------------------------------------------------------------------------------
# netCDF re-encoding: integer cycles + zlib
# --------------------------------------------------------------------------------------
def _integral_cycles(values: np.ndarray, frequency: float) -> np.ndarray | None:
    """``values·frequency`` rounded, if every finite value is whole cycles; else None."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return None
    cycles = finite * frequency
    # x = cycles / f in float64: x·f is within a few ulp of an integer
    tolerance = max(1e-6, 1e-13 * float(np.max(np.abs(cycles))))
    if np.max(np.abs(cycles - np.round(cycles))) > tolerance:
        return None
    return np.round(cycles)


def compact_netcdf(path: Path, frequency: float | None) -> dict:
    """Re-encode a netCDF file in place (integer cycles where exact, zlib); return a
    description of what was done. The decoded values are checked against the original."""
    import xarray as xr

    original = xr.load_dataset(path)
    encoding, as_cycles = {}, []
    for name, variable in {**original.data_vars, **original.coords}.items():
        if variable.dtype.kind not in "fiub" or variable.ndim == 0:
            continue
        spec = {"zlib": True, "complevel": 9, "shuffle": True}
        values = variable.values
        if (variable.dtype.kind == "f" and frequency
                and variable.attrs.get("units") == "s"):
            cycles = _integral_cycles(values, frequency)
            if cycles is not None:
                dtype = "int32" if cycles.max() < 2**31 - 1 else "int64"
                spec.update(dtype=dtype, scale_factor=np.float64(1.0 / frequency),
                            _FillValue=(np.int32(-1) if dtype == "int32" else np.int64(-1))
                            if np.isnan(values).any() else None)
                as_cycles.append(name)
            else:
                spec["_FillValue"] = None
        elif variable.dtype.kind == "f":
            spec["_FillValue"] = None
        encoding[name] = spec
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(handle)
    try:
        with warnings.catch_warnings():
            # integer storage without a fill value is intended (no NaN in those variables)
            warnings.filterwarnings("ignore", "saving variable .* as an integer dtype",
                                    category=xr.SerializationWarning)
            original.to_netcdf(temp, encoding=encoding)
        check = xr.load_dataset(temp)
        for name, variable in {**original.data_vars, **original.coords}.items():
            a, b = variable.values, check[name].values
            if a.dtype.kind == "f":
                same = np.allclose(a, b, rtol=1e-14, atol=0.0, equal_nan=True)
            else:
                same = np.array_equal(a, b)
            if not same or variable.attrs != check[name].attrs:
                raise RuntimeError(f"{path.name}: re-encoding changed {name!r}; keeping the "
                                   "file as the benchmark wrote it")
        if check.attrs != original.attrs:
            raise RuntimeError(f"{path.name}: re-encoding changed the attributes")
        before = path.stat().st_size
        os.chmod(temp, 0o644)
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise
    return {"reencoded": "netCDF4 with zlib (level 9, shuffle)"
            + (f"; {', '.join(as_cycles)} stored as integer timestamp-counter cycles with "
               "scale_factor = 1/frequency_hz (decoded values equal the originals to "
               "within 1 ulp)" if as_cycles else ""),
            "bytes_as_written": before}


# --------------------------------------------------------------------------------------
# the recording plan
# --------------------------------------------------------------------------------------
def plan(args) -> list[dict]:
    """One job per file: the command line, what it is, and how to describe it."""
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


# --------------------------------------------------------------------------------------
# reading back what was recorded, for the manifest
# --------------------------------------------------------------------------------------
def describe_detour(path: Path) -> dict:
    import jitterlab as jl

    trace = jl.read_trace(path)
    attrs = trace.attrs
    stats = trace.stats()
    summary = {
        "events": int(attrs.get("events_detected", trace.n_events)),
        "measured_duration": attrs.get("measured_duration"),
        "event_rate": float(stats["event_rate"]),
        "noise_fraction": float(stats["noise_fraction"]),
        "frequency_hz": trace.frequency_hz, "t_min": attrs.get("t_min"),
        "median_loop_time": attrs.get("median_loop_time"),
        "mean_loop_time": attrs.get("mean_loop_time"),
        "threshold_used": attrs.get("threshold"),
        "default_threshold": None,
    }
    if attrs.get("t_min") is not None and attrs.get("median_loop_time") is not None:
        from jitterlab.bench.detour import THRESHOLD_MEDIAN_FACTOR, THRESHOLD_TMIN_FACTOR

        frequency = trace.frequency_hz
        cycles = np.ceil(max(THRESHOLD_TMIN_FACTOR * attrs["t_min"] * frequency,
                             THRESHOLD_MEDIAN_FACTOR * attrs["median_loop_time"] * frequency)
                         - 1e-9)
        summary["default_threshold"] = float(cycles / frequency)
    return {"attrs": attrs, "summary": plain(summary), "postprocess": None}


def describe_fwq(path: Path) -> dict:
    import jitterlab as jl

    before = jl.bench.read_fwq_samples(path)
    post = compact_netcdf(path, before.attrs.get("frequency_hz"))
    law = jl.bench.read_fwq_samples(path)
    if not np.allclose(law.sequence, before.sequence, rtol=1e-14, atol=0.0):
        raise RuntimeError(f"{path.name}: samples changed when re-encoded")
    values = law.values
    summary = {"samples": int(values.size), "min": float(values[0]),
               "median": float(np.median(values)), "mean": float(law.mean()),
               "p99": float(np.quantile(values, 0.99)), "max": float(values[-1]),
               "iterations": law.attrs.get("iterations"),
               "frequency_hz": law.attrs.get("frequency_hz")}
    return {"attrs": law.attrs, "summary": plain(summary), "postprocess": post}


def describe_pb(path: Path) -> dict:
    import jitterlab as jl

    # stored as the benchmark wrote it: each rank converts cycles with its own counter
    # rate, so integer re-encoding with one scale factor would not be exact
    ds = jl.bench.read_pb(path)
    summary = {"ranks": int(ds.sizes["rank"]), "samples_per_rank": int(ds.sizes["sample"]),
               "iterations": plain(ds.attrs.get("iterations")),
               "mean_compute": plain(ds["compute"].mean("sample").values.tolist()),
               "mean_iteration": plain(ds["iteration"].mean("sample").values.tolist()),
               "nodes": plain(sorted({str(v) for v in ds["node"].values.tolist()}))
               if "node" in ds.coords else None,
               "random_wait": plain(ds.attrs.get("random_wait")),
               "broadcast": plain(ds.attrs.get("broadcast")),
               "oversubscribed": plain(ds.attrs.get("oversubscribed"))}
    attrs = dict(ds.attrs)
    if "host" in ds.coords and "host" not in attrs:
        attrs["host"] = ", ".join(sorted({str(h) for h in ds["host"].values.tolist()}))
    attrs.setdefault("n_cpus", os.cpu_count())  # of the host rank 0 ran on (this one)
    return {"attrs": attrs, "summary": plain(summary), "postprocess": None}


def describe_latency(path: Path) -> dict:
    from jitterlab.bench.latency import read_latency, summarize_latency

    # stored as the benchmark wrote it (each rank converts with its own counter rate)
    ds = read_latency(path)
    summary = summarize_latency(ds)
    numbers = {name: float(summary[name]) for name in (
        "tau", "tau_se", "tau_mean", "tau_mean_se", "barrier_time", "barrier_time_se",
        "barrier_mean", "barrier_mean_se")}
    numbers.update(ranks=int(ds.sizes["rank"]), pairs=int(ds.sizes["pair"]),
                   round_trips=int(ds.sizes["exchange"]), barriers=int(ds.sizes["sample"]),
                   oversubscribed=bool(ds.attrs.get("oversubscribed")))
    attrs = dict(ds.attrs)
    if "host" not in attrs:
        attrs["host"] = ", ".join(sorted({str(h) for h in ds["host"].values.tolist()}))
    return {"attrs": attrs, "summary": plain(numbers), "postprocess": None}


def describe_bsp(path: Path) -> dict:
    import jitterlab as jl

    # stored as the benchmark wrote it: counter cycles, converted with rank 0's rate
    events = jl.bench.read_bsp(path)
    interruptions = jl.bench.read_bsp_interruptions(path)
    estimate = jl.estimate.accumulated_noise(events)
    data = events.data
    compute = data[data["kind"] == "compute"].groupby("rank")
    collective = data[data["kind"] == "collective"].groupby("rank")
    attrs = events.attrs
    summary = {
        "ranks": int(events.n_ranks), "phases": int(attrs["phases_done"]),
        "work": attrs["work"], "poll": bool(attrs["poll"]),
        "injector": bool(attrs["injector"]), "chunks": int(attrs["chunks"]),
        "measured_duration": attrs["measured_duration"],
        "makespan": float(estimate["makespan"]),
        "noise_injected_per_rank": compute["noise_injected"].sum().tolist(),
        "noise_other_per_rank": compute["noise_other"].sum().tolist(),
        "collective_noise_per_rank": collective["noise_other"].sum().tolist(),
        "injected_detours": attrs["injected_detours"],
        "injector_dropped": attrs["injector_dropped"],
        "interruption_records": interruptions.groupby("kind", observed=False).size()
        .to_dict(),
        "interruptions_lost": attrs["interruptions_lost"],
        "run_accumulated": {str(source): float(estimate["run_accumulated"].sel(
            source=source)) for source in estimate["source"].values},
        "threshold": attrs["threshold"], "wait_threshold": attrs.get("wait_threshold"),
    }
    machine = dict(attrs)
    # the run's attributes name the host of every rank (all on one host)
    machine["host"] = ", ".join(sorted({str(host) for host in attrs["host"]}))
    machine.setdefault("n_cpus", os.cpu_count())
    return {"attrs": machine, "summary": plain(summary), "postprocess": None}


DESCRIBE = {"detour": describe_detour, "fwq": describe_fwq, "pb": describe_pb,
            "latency": describe_latency, "bsp": describe_bsp}


def _mean_se(values) -> tuple[float, float, float, float, int]:
    """Mean, its standard error (sample SD / sqrt(n); NaN for one value), min, max, n."""
    values = np.asarray(values, dtype=float)
    n = values.size
    se = float(np.std(values, ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
    return float(values.mean()), se, float(values.min()), float(values.max()), n


def bsp_table(entries: list[dict]) -> dict:
    """Per collective (variant), the comparison of seed 003's estimate with the measured
    cost of the injection, from the manifest entries of the BSP runs: per run its time in
    phases T (measured_duration) and T − the combined estimate; per pair (same repeat)
    the measured cost T_injected − T_clean, the injector's estimate (``run_accumulated``
    of source ``injected``), the difference of the two combined estimates, and the
    measured cost minus that difference. Each as (mean, SE, min, max, n) [s]."""
    table = {}
    for variant in BSP_SETUPS:
        runs = [e for e in entries if e["kind"] == "bsp"
                and e["variant"].removesuffix("_injected") == variant]
        if not runs:
            continue
        pairs = {}
        for entry in runs:
            pairs.setdefault(entry["repeat"], {})[bool(entry["injector"])] = entry["summary"]
        pairs = [pair for _, pair in sorted(pairs.items()) if len(pair) == 2]

        def combined(summary):
            return summary["run_accumulated"]["combined"]

        rows = {
            "run_time": [e["summary"]["measured_duration"] for e in runs],
            "run_time_minus_estimate": [e["summary"]["measured_duration"]
                                        - combined(e["summary"]) for e in runs],
            "measured_cost": [p[True]["measured_duration"] - p[False]["measured_duration"]
                              for p in pairs],
            "injector_estimate": [p[True]["run_accumulated"]["injected"] for p in pairs],
            "estimate_difference": [combined(p[True]) - combined(p[False]) for p in pairs],
        }
        rows["cost_minus_estimate_difference"] = [
            a - b for a, b in zip(rows["measured_cost"], rows["estimate_difference"],
                                  strict=True)]
        table[variant] = {key: _mean_se(values) for key, values in rows.items() if values}
        table[variant]["pairs"] = len(pairs)
    return table


_BSP_ROWS = (
    ("run_time", "run time T (time in phases), every run"),
    ("run_time_minus_estimate", "T − estimated accumulated noise (combined), every run"),
    ("measured_cost", "measured cost of the injection, T<sub>injected</sub> − "
     "T<sub>clean</sub> (paired)"),
    ("injector_estimate", "estimate for the injector, `run_accumulated` of source "
     "`injected`"),
    ("estimate_difference", "difference of the combined estimates of the two runs"),
    ("cost_minus_estimate_difference", "measured cost − difference of the combined "
     "estimates"),
)


def bsp_markdown(entries: list[dict]) -> list[str]:
    """The section of PROVENANCE.md on the BSP runs: when, the load, the table."""
    runs = [e for e in entries if e["kind"] == "bsp" and e.get("repeat") is not None]
    if not runs:
        return []
    loads = [v for e in runs for v in (e["load_average_before"][0],
                                       e["load_average_after"][0])]
    times = sorted(e["collected_at"] for e in runs if e.get("collected_at"))
    table = bsp_table(runs)
    variants = [v for v in BSP_SETUPS if v in table]
    lines = [
        "", "## BSP runs with event traces and interruptions (`bsp_*.nc`, issue #10)", "",
        f"{len(runs)} runs, recorded by `data/record_measurements.py --only bsp` (step 6 "
        f"of its docstring; the exact command of each file is above) from {times[0]} to "
        f"{times[-1]} UTC, interleaved: repeat r runs the polled and the blocking pair, "
        "clean first in odd repeats, injected first in even ones; the injector seed is the "
        f"repeat. 1-minute load average during the runs: {min(loads):g} to {max(loads):g} "
        "(each file's load before → after is in the table of files). Each run's "
        "`interruption_records` hold every interruption (rank, phase, start, duration, "
        "kind); `jitterlab.bench.read_bsp_interruptions` reads them.", "",
        "Per collective, mean ± standard error over the runs or pairs (min to max) [ms]:",
        "", "| | " + " | ".join(f"{v} (pairs: {table[v]['pairs']})" for v in variants)
        + " |", "|---|" + "---|" * len(variants)]
    for key, label in _BSP_ROWS:
        cells = []
        for variant in variants:
            if key not in table[variant]:
                cells.append("–")
                continue
            mean, se, low, high, n = table[variant][key]
            error = f"{1e3 * se:.1f}" if np.isfinite(se) else "–"
            cells.append(f"{1e3 * mean:.1f} ± {error} ({1e3 * low:.1f} to "
                         f"{1e3 * high:.1f}, n = {n})")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines



# --------------------------------------------------------------------------------------
# manifest and PROVENANCE.md
# --------------------------------------------------------------------------------------
def _key(entry: dict) -> tuple:
    return tuple(entry.get(k) for k in ("kind", "variant", "cpu", "ranks", "work",
                                        "injector", "repeat"))


def read_manifest(output: Path) -> dict | None:
    path = output / MANIFEST
    if not path.is_file():
        return None
    manifest = json.loads(path.read_text(encoding="utf-8"))
    if manifest.get("format") != MANIFEST_FORMAT:
        sys.exit(f"record_measurements: {path} is not a jitterlab measurements manifest")
    return manifest


def _order(entry: dict) -> tuple:
    """Sort key: this script's kinds first, then kinds recorded by other means."""
    kind, variant = entry["kind"], entry.get("variant")
    return (KINDS.index(kind) if kind in KINDS else len(KINDS), kind, entry.get("cpu") or 0,
            VARIANTS.index(variant) if variant in VARIANTS else len(VARIANTS),
            entry.get("ranks") or 0, entry.get("work") or 0.0,
            entry.get("repeat") or 0, bool(entry.get("injector")))


def write_manifest(output: Path, manifest: dict) -> None:
    manifest["files"].sort(key=_order)
    manifest["updated_at"] = utc_now()
    manifest["quick"] = any(e.get("quick") for e in manifest["files"])
    text = json.dumps(plain(manifest), indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    _write_text(output / MANIFEST, text)
    _write_text(output / PROVENANCE, provenance_markdown(manifest))


def _write_text(path: Path, text: str) -> None:
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        stream.write(text)
    os.chmod(temp, 0o644)
    os.replace(temp, path)


def _seconds(value) -> str:
    if value is None:
        return "–"
    value = float(value)
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if abs(value) >= scale:
            return f"{value / scale:.4g} {unit}"
    return f"{value / 1e-9:.4g} ns"


def provenance_markdown(manifest: dict) -> str:
    machine = manifest.get("machine", {})
    quick = [e["file"] for e in manifest["files"] if e.get("quick")]
    lines = [
        "# Provenance: measurements of one machine (`data/measured/`)",
        "",
        "Written by `data/record_measurements.py` (do not edit by hand; re-record instead).",
        "The same information, machine-readable, is in `manifest.json`; load the data with",
        "`jitterlab.datasets` (`list_measurements`, `load_detour`, `load_fwq`, `load_pb`,",
        "`load_latency`).",
        "",
    ]
    if quick:
        lines += [
            f"> **Quick recording.** {len(quick)} of {len(manifest['files'])} files were "
            "recorded with `--quick` (a few seconds each, possibly on a busy machine): good "
            "for developing notebooks and tests, not for conclusions about the machine. "
            "Re-record on a quiet machine with `python data/record_measurements.py`.",
            ""]
    lines += [
        "## Machine",
        "",
        f"* Host: `{machine.get('host')}`; CPU: {machine.get('cpu_model')}, "
        f"{machine.get('n_cpus')} CPUs; kernel {machine.get('os')} "
        f"`{machine.get('kernel')}`.",
        f"* jitterlab {manifest.get('jitterlab_version')}, commit "
        f"`{manifest.get('git_commit')}`"
        + (" (with uncommitted changes to `jitterlab/`)" if manifest.get("git_dirty") else "")
        + f"; Python {manifest.get('python')}; MPI: {manifest.get('mpi') or 'not used'}.",
        f"* Last update {manifest.get('updated_at')}. Recordings (each file's own command "
        "and date are below):",
        *[f"  * {r.get('started_at')}: `{r.get('command')}`"
          for r in manifest.get("recordings", [])],
        "",
        "## Units",
        "",
        "* Detour traces: `jitter` and `gap` in timestamp-counter `cycles`; the file's "
        "`frequency_hz` [Hz] converts them to seconds (`Trace.to_seconds()`).",
        "* FWQ: `iteration_time` in seconds `s` (stored as integer cycles × `scale_factor`, "
        "decoded to seconds on reading).",
        "* PB: `compute`, `barrier`, `iteration` and `bin_edges` in seconds `s`; the "
        "`*_hist` variables count iterations per bin (every iteration of the run, while "
        "the raw samples are the first `max_samples` of each rank).",
        "* Latency: `ping_pong` (round trips, dims `pair`, `exchange`) and `barrier` (dims "
        "`rank`, `sample`) in seconds `s`; the one-way latency τ is half a round trip.",
        "* Thresholds, t_min and loop times in the attributes: seconds.",
        "",
        "## Files",
        "",
        "| file | what | recorded (UTC) | quick | load before → after | bytes | SHA-256 |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for entry in manifest["files"]:
        load = (f"{entry.get('load_average_before', ['?'])[0]} → "
                f"{entry.get('load_average_after', ['?'])[0]}"
                if entry.get("load_average_before") else "–")
        lines.append(f"| `{entry['file']}` | {entry['description']} | "
                     f"{entry.get('collected_at')} | {'yes' if entry.get('quick') else 'no'} "
                     f"| {load} | {entry.get('bytes')} | `{entry.get('sha256')}` |")
    lines += ["", "## Commands", "",
              "Each ran in `data/measured/`, one after the other, with `jitterlab` and "
              "`mpiexec` from the environment named above:", ""]
    for entry in manifest["files"]:
        lines.append(f"* `{entry['file']}`: `{entry['command']}`")
        if entry.get("postprocess"):
            lines.append(f"  — then re-encoded: {entry['postprocess']['reencoded']}.")
    lines += ["", "## Key numbers", ""]
    for entry in manifest["files"]:
        s = entry.get("summary", {})
        if entry["kind"] == "detour":
            text = (f"{s.get('events')} events in {_seconds(s.get('measured_duration'))}, "
                    f"{s.get('event_rate', 0):.1f} events/s, noise fraction "
                    f"{100 * (s.get('noise_fraction') or 0):.3f} %, threshold "
                    f"{_seconds(s.get('threshold_used'))}, t_min {_seconds(s.get('t_min'))}, "
                    f"median loop time {_seconds(s.get('median_loop_time'))}, default "
                    f"threshold {_seconds(s.get('default_threshold'))}")
        elif entry["kind"] == "fwq":
            text = (f"{s.get('samples')} samples: min {_seconds(s.get('min'))}, median "
                    f"{_seconds(s.get('median'))}, mean {_seconds(s.get('mean'))}, p99 "
                    f"{_seconds(s.get('p99'))}, max {_seconds(s.get('max'))}")
        elif entry["kind"] == "latency":
            text = (f"{s.get('ranks')} ranks, {s.get('pairs')} "
                    f"pair{'s' * (s.get('pairs') != 1)} x "
                    f"{s.get('round_trips')} round trips, {s.get('barriers')} barriers: "
                    f"τ (median one-way) {_seconds(s.get('tau'))} ± "
                    f"{_seconds(s.get('tau_se'))}, empty barrier (median) "
                    f"{_seconds(s.get('barrier_time'))} ± "
                    f"{_seconds(s.get('barrier_time_se'))}"
                    + ("; oversubscribed" if s.get("oversubscribed") else ""))
        elif entry["kind"] == "bsp":
            noise = ", ".join(f"{1e3 * a:.1f} + {1e3 * b:.1f}" for a, b in zip(
                s.get("noise_injected_per_rank") or [], s.get("noise_other_per_rank") or [],
                strict=True))
            accumulated = s.get("run_accumulated") or {}
            waited = ", ".join(f"{1e3 * v:.1f}" for v in s.get("collective_noise_per_rank")
                               or [])
            text = (f"{s.get('phases')} phases of {_seconds(s.get('work'))} on "
                    f"{s.get('ranks')} ranks in {_seconds(s.get('measured_duration'))}; "
                    f"compute noise per rank (injected + other) {noise} ms, collective "
                    f"noise {waited} ms; "
                    f"{sum((s.get('interruption_records') or {}).values())} interruptions "
                    f"recorded, {sum(s.get('interruptions_lost') or [])} lost; estimated "
                    f"accumulated (seed 003): injected "
                    f"{_seconds(accumulated.get('injected'))}, combined "
                    f"{_seconds(accumulated.get('combined'))}")
        elif entry["kind"] not in KINDS:  # recorded by other means: its own words
            text = entry.get("summary_text") or entry["description"]
        else:
            means = ", ".join(_seconds(v) for v in s.get("mean_iteration") or [])
            text = (f"{s.get('ranks')} ranks, {s.get('iterations')} iterations (raw samples "
                    f"kept per rank: {s.get('samples_per_rank')}), mean iteration time per "
                    f"rank: {means}")
        lines.append(f"* `{entry['file']}`: {text}.")
    lines += bsp_markdown(manifest["files"])
    for entry in manifest["files"]:  # measurements recorded by other means keep their story
        if entry.get("provenance_section"):
            lines += ["", entry["provenance_section"].rstrip("\n")]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------
def parse_args(argv=None):
    parser = argparse.ArgumentParser(
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
    parser.add_argument("--detour-seconds", type=float, default=None,
                        help="length of each fixed-threshold detour trace (default 60)")
    parser.add_argument("--threshold-ns", type=float, default=300.0,
                        help="fixed detour threshold in ns (default 300, as the sysjitter "
                        "reference)")
    parser.add_argument("--default-threshold-seconds", type=float, default=None,
                        help="length of each default-threshold detour trace (default 5)")
    parser.add_argument("--fwq-seconds", type=float, default=None,
                        help="about this many seconds of samples per FWQ quantum "
                        "(default 60)")
    parser.add_argument("--fwq-cpu", type=int, default=None,
                        help="CPU of the FWQ runs (default: the highest-numbered CPU)")
    parser.add_argument("--pb-seconds", type=float, default=None,
                        help="length of each Parallel Benchmark run (default 60)")
    parser.add_argument("--pb-max-samples", type=int, default=4000,
                        help="raw samples kept per rank of each PB run (its histograms count "
                        "every iteration; default 4000)")
    parser.add_argument("--pb-work", type=float, default=300e-6,
                        help="work quantum w of the PB runs in seconds (default 300e-6)")
    parser.add_argument("--latency-round-trips", type=int, default=None,
                        help="ping-pong round trips per pair of ranks of each latency run "
                        "(default 1000)")
    parser.add_argument("--latency-barriers", type=int, default=None,
                        help="empty barriers of each latency run (default 5000)")
    parser.add_argument("--works", nargs="+", type=float, default=None,
                        help="of the steps chosen, record only the files of these work "
                        "quanta in seconds (e.g. --only pb --works 0.013 0.083)")
    parser.add_argument("--session-detour-seconds", type=float, default=None,
                        help="length of each detour trace of the jitSim session (default 15)")
    parser.add_argument("--session-pb-seconds", type=float, default=None,
                        help="length of each compute-barrier loop of the jitSim session "
                        "(default 20)")
    parser.add_argument("--session-max-samples", type=int, default=1000,
                        help="raw samples kept per rank of each session loop (its "
                        "histograms count every iteration; default 1000)")
    parser.add_argument("--bsp-phases", type=int, default=None,
                        help="phases of each BSP run (default 1000)")
    parser.add_argument("--bsp-polled-pairs", type=int, default=None,
                        help="pairs of BSP runs (without/with the injector) with the polled "
                        "collective (default 4)")
    parser.add_argument("--bsp-blocking-pairs", type=int, default=None,
                        help="pairs of BSP runs with the blocking barrier (default 2)")
    parser.add_argument("--wait-load", type=float, default=None,
                        help="before the first BSP run, wait until the 1-minute load average "
                        "is at most this (see --wait-seconds)")
    parser.add_argument("--wait-seconds", type=float, default=600.0,
                        help="wait at most this long for --wait-load (default 600)")
    parser.add_argument("--output", type=Path, default=OUTPUT,
                        help=f"folder of the measurements (default {OUTPUT.relative_to(ROOT)})")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the commands and exit")
    args = parser.parse_args(argv)
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
    args = parse_args(argv)
    output: Path = args.output
    jobs = plan(args)
    if args.dry_run:
        for job in jobs:
            print(f"(cd {output} && {shlex.join(job['argv'])})")
        return 0
    output.mkdir(parents=True, exist_ok=True)
    recorded_with = shlex.join(["python", "data/record_measurements.py",
                                *(sys.argv[1:] if argv is None else argv)])
    import jitterlab as jl

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
        for replaced in [e for e in manifest["files"] if _key(e) == _key(entry)]:
            if replaced["file"] != entry["file"] and (output / replaced["file"]).is_file():
                (output / replaced["file"]).unlink()  # same measurement, another name
        manifest["files"] = [e for e in manifest["files"]
                             if _key(e) != _key(entry) and e["file"] != entry["file"]]
        manifest["files"].append(plain(entry))
        recorded.add(_key(entry))
        write_manifest(output, manifest)
        print(f"    -> {path.stat().st_size} bytes, {entry['wall_seconds']} s", flush=True)
    if not partial:
        # a full recording replaces everything it records: drop what it did not record
        # again, but keep measurements of kinds it never records (made by other means)
        dropped = [e for e in manifest["files"]
                   if _key(e) not in recorded and e["kind"] in KINDS]
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
