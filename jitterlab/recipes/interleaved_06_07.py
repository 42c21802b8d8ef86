"""Interleaved recordings for notebooks 06 and 07 (issue #18, §4: drift is measured).

The comparisons of notebooks 06 and 07 between recordings made hours apart, recorded again
with the arms in a mirrored order (A B B A, or A B C D D C B A), as declared in
``data/interleaved_06_07.md`` before the first run:

``setups`` (notebook 07, Fig. 3–5)
    ``mpiexec -n 2 jitterlab measure pb`` at w = 300 µs, 15 s, in four set-ups: random wait
    and broadcast (``wait_bcast``), neither (``neither``), no broadcast (``no_bcast``), no
    random wait (``no_wait``).
``quanta`` (notebook 07, Fig. 6(b))
    the same benchmark (random wait and broadcast) at w = 300 µs (``w300us``) and 83 ms
    (``w83ms``), 15 s each.
``tools`` (notebook 06, §3)
    ``sysjitter --cores 1 --runtime 10 --raw ... 300`` with the ``mincore`` helper preloaded
    (``sysjitter``) and ``jitterlab measure detour --cpu 1 --duration 10 --threshold 300``
    (``jitterlab``).

``record`` runs one batch and writes each run's file into a scratch folder outside the
project, appending a row to ``runs.csv`` there (:data:`COLUMNS`: experiment, batch, position,
arm, file, start and end [UTC], 1-minute load before and after, the CPU time of the run's
processes and of every other process during the run [s], the command). Run it from the
repository root at normal priority under the team's measurement lock::

    /work/team/quiet.sh .venv/bin/python -m jitterlab.recipes.interleaved_06_07 record RAW \\
        --experiment setups --batch 1 [--sysjitter /work/ext/sysjitter/sysjitter \\
        --shim /work/ext/interleaved_06_07/mincore_shim.so]

``pack RAW data/interleaved_06_07`` then writes what the notebooks read, losslessly: the PB
runs of an experiment concatenated along a ``run`` dimension (``<experiment>.nc``, every
variable of every run; the per-run attributes are columns of ``runs.csv``), each detour
recording as a jitterlab trace (``tools_b<batch>_<position>_<arm>.parquet``, sysjitter's raw
file read with ``jl.read_trace(raw, buffer=helper_output)``, its page-first rows in the
trace's attrs), and ``runs.csv``.

Until 2026-11-26 this program was the script ``data/interleaved_06_07.py`` (same
arguments), the name ``data/interleaved_06_07.md`` and the packed files record.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

from . import DATA_DIR
from .run_ross_phold import append_row, busy_cpu_seconds, children_cpu_seconds

#: the project's virtual environment, whose ``jitterlab`` and ``mpiexec`` the runs use
VENV_BIN = DATA_DIR.parent / ".venv" / "bin"
PB = ["mpiexec", "-n", "2", "jitterlab", "measure", "pb", "--no-progress"]

#: experiment → arms (in the order of the first half of a batch) and each arm's options
EXPERIMENTS = {
    "setups": {"wait_bcast": [], "neither": ["--no-random-wait", "--no-broadcast"],
               "no_bcast": ["--no-broadcast"], "no_wait": ["--no-random-wait"]},
    "quanta": {"w300us": [], "w83ms": []},
    "tools": {"sysjitter": [], "jitterlab": []},
}
#: how many times a batch runs its mirrored order
REPEATS = {"setups": 1, "quanta": 1, "tools": 2}
#: columns of ``runs.csv``
COLUMNS = ["experiment", "batch", "position", "arm", "file", "start_utc", "end_utc",
           "load_before", "load_after", "run_cpu_s", "other_cpu_s", "wall_s", "command"]
#: length of each run of an experiment [s]
SECONDS = {"setups": 15, "quanta": 15, "tools": 10}


def batch_order(experiment: str) -> list[str]:
    """The arms of one batch: the mirrored order (A B .. B A), repeated.

    Parameters
    ----------
    experiment : str
        A key of :data:`EXPERIMENTS`.

    Returns
    -------
    list of str
        The arms in the order they run.
    """
    arms = list(EXPERIMENTS[experiment])
    return (arms + arms[::-1]) * REPEATS[experiment]


def load_average() -> float:
    """The 1-minute load average. [1]"""
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def command_of(experiment: str, arm: str, output: Path, args) -> tuple[list[str], dict, Path]:
    """The command line of one run, its extra environment and its stderr file.

    ``args`` holds ``seconds`` (None: :data:`SECONDS`), ``sysjitter`` and ``shim``.
    """
    seconds = f"{args.seconds or SECONDS[experiment]:g}"
    stderr = output.with_suffix(".stderr.txt")
    if experiment == "tools" and arm == "sysjitter":
        raw = output.with_suffix("")
        return ([args.sysjitter, "--cores", "1", "--runtime", seconds, "--raw", str(raw),
                 "300"], {"LD_PRELOAD": args.shim}, stderr)
    if experiment == "tools":
        return (["jitterlab", "measure", "detour", "--cpu", "1", "--duration", seconds,
                 "--threshold", "300", "--output", str(output), "--no-progress"], {}, stderr)
    work = "83e-3" if arm == "w83ms" else "300e-6"
    return ([*PB, "--work", work, "--duration", seconds, "--max-samples", "1000",
             "--output", str(output), *EXPERIMENTS[experiment][arm]], {}, stderr)


def command_text(argv: list[str], extra: dict) -> str:
    """The ``command`` column of a run: its environment and command line, with every
    absolute path cut to its file name (the scratch folder is not part of the record)."""
    return " ".join(shlex.quote(a) for a in
                    [*(f"{k}={Path(v).name}" for k, v in extra.items()),
                     *(Path(a).name if a.startswith("/") else a for a in argv)])


def record(args) -> None:
    """Run one batch, one run after the other, appending a row per run to RAW/runs.csv."""
    raw = Path(args.raw)
    raw.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"}
    for position, arm in enumerate(batch_order(args.experiment), start=1):
        suffix = ".parquet" if args.experiment == "tools" else ".nc"
        output = raw / f"{args.experiment}_b{args.batch}_{position}_{arm}{suffix}"
        if output.exists() or output.with_suffix(".1").exists():
            raise FileExistsError(f"{output} exists: a batch is recorded once")
        argv, extra, stderr = command_of(args.experiment, arm, output, args)
        before_load, before_busy = load_average(), busy_cpu_seconds()
        before_children, start = children_cpu_seconds(), time.monotonic()
        started = datetime.now(UTC)
        with open(stderr, "w") as err, open(output.with_suffix(".stdout.txt"), "w") as out:
            subprocess.run(argv, env={**env, **extra}, stdout=out, stderr=err, check=True)
        wall = time.monotonic() - start
        run_cpu = children_cpu_seconds() - before_children
        other = busy_cpu_seconds() - before_busy - run_cpu
        row = {"experiment": args.experiment, "batch": args.batch, "position": position,
               "arm": arm, "file": output.name, "start_utc": started.strftime("%H:%M:%S"),
               "end_utc": datetime.now(UTC).strftime("%H:%M:%S"),
               "load_before": before_load, "load_after": load_average(),
               "run_cpu_s": round(run_cpu, 2), "other_cpu_s": round(max(other, 0.0), 2),
               "wall_s": round(wall, 2),
               "command": command_text(argv, extra)}
        append_row(raw / "runs.csv", row, COLUMNS)
        print(f"{row['file']}: {row['start_utc']}-{row['end_utc']}, load "
              f"{before_load:.2f} -> {row['load_after']:.2f}", flush=True)


def pack(args) -> None:
    """Write the notebooks' files from the raw folder (see the module docstring)."""
    import numpy as np
    import pandas as pd
    import xarray as xr

    import jitterlab as jl

    raw, out = Path(args.raw), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs = pd.read_csv(raw / "runs.csv")
    for experiment in ("setups", "quanta"):
        rows = runs[runs["experiment"] == experiment]
        if rows.empty:
            continue
        parts = []
        for name in rows["file"]:
            ds = jl.measure.read_pb(raw / name).copy()
            ds.attrs = {}
            ds = ds.assign_coords(sample=np.arange(ds.sizes["sample"]))  # padded with NaN
            parts.append(ds)
        packed = xr.concat(parts, dim=pd.Index(list(rows["file"]), name="run"),
                           join="outer", combine_attrs="drop")
        packed.attrs = {"source": "python -m jitterlab.recipes.interleaved_06_07 pack; "
                                  "per-run attributes in runs.csv and in the scratch files"}
        encoding = {v: {"zlib": True, "complevel": 9} for v in packed.data_vars}
        packed.to_netcdf(out / f"{experiment}.nc", encoding=encoding)
    for _, row in runs[runs["experiment"] == "tools"].iterrows():
        target = out / row["file"]
        if row["arm"] == "sysjitter":
            stem = raw / row["file"].replace(".parquet", "")
            trace = jl.read_trace(f"{stem}.1", buffer=f"{stem}.stderr.txt")
        else:
            trace = jl.read_trace(raw / row["file"])
        trace.to_parquet(target, overwrite=True)
    shutil.copyfile(raw / "runs.csv", out / "runs.csv")


def main(argv=None) -> None:
    """``record`` one batch or ``pack`` the raw folder (``--help`` of each says how)."""
    parser = argparse.ArgumentParser(prog="python -m jitterlab.recipes.interleaved_06_07",
                                     description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    rec = commands.add_parser("record", help="record one batch")
    rec.add_argument("raw", help="scratch folder outside the project")
    rec.add_argument("--experiment", choices=sorted(EXPERIMENTS), required=True,
                     help="which comparison: its arms run in the mirrored order")
    rec.add_argument("--batch", type=int, required=True, help="number of the batch")
    rec.add_argument("--sysjitter", default="/work/ext/sysjitter/sysjitter",
                     help="the sysjitter binary (experiment tools)")
    rec.add_argument("--shim", default="/work/ext/interleaved_06_07/mincore_shim.so",
                     help="the mincore helper preloaded into sysjitter")
    rec.add_argument("--seconds", type=float, default=None,
                     help="length of each run [s] (default: the declared one; for tests)")
    packer = commands.add_parser("pack", help="write the notebooks' files")
    packer.add_argument("raw", help="the scratch folder of record")
    packer.add_argument("out", help="the folder the notebooks read (data/interleaved_06_07)")
    args = parser.parse_args(argv)
    (record if args.command == "record" else pack)(args)


if __name__ == "__main__":
    main()
