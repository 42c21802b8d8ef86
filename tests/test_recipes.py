"""The programs that made the shipped data (``jitterlab.recipes``, issue #21): each imports and
answers ``--help``, refuses bad arguments with a message naming them, and its pure parts
(plans, batch orders, file names, parsing of LogGOPSim's output, canonical texts) give what the
shipped data records. Nothing here runs MPI, ROSS, LogGOPSim or tracefs; the estimate study
runs once on a tiny grid."""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import importlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from jitterlab import datasets, recipes
from jitterlab.recipes import (
    estimate_accuracy,
    interleaved_06_07,
    loggopsim_estimate_accuracy,
    make_goal_references,
    measurement_files,
    measurement_manifest,
    measurement_plan,
    mpi_interleaved,
    record_causes_pinning,
    record_measurements,
    run_ross_phold,
)

DATA = datasets.DATA_DIR
TESTS_DATA = Path(__file__).resolve().parent / "data"
MEASURED = DATA / "measured"
#: the programs (``python -m jitterlab.recipes.<name>``) and the parts of record_measurements
PROGRAMS = ("record_measurements", "run_ross_phold", "make_goal_references", "mpi_interleaved",
            "loggopsim_estimate_accuracy", "interleaved_06_07", "record_causes_pinning",
            "estimate_accuracy")
PARTS = ("measurement_plan", "measurement_files", "measurement_manifest")


@pytest.fixture(scope="module")
def manifest():
    return json.loads((MEASURED / "manifest.json").read_text(encoding="utf-8"))


def entries_of(manifest, kind):
    return [e for e in manifest["files"] if e["kind"] == kind]


# --------------------------------------------------------------------------------------
# every recipe: imports, --help, bad arguments
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", PROGRAMS + PARTS)
def test_every_recipe_imports_and_says_what_it_is(name):
    module = importlib.import_module(f"jitterlab.recipes.{name}")
    assert len(module.__doc__.split()) > 20, name
    assert callable(getattr(module, "main", None)) == (name in PROGRAMS)
    assert Path(module.__file__).with_suffix("").name == name


def test_the_old_scripts_are_gone_and_data_keeps_data():
    # data/ holds data and provenance; the C source of the injector stays beside them
    assert not list(DATA.glob("*.py"))
    assert (DATA / "dutyhog.c").is_file() and run_ross_phold.DUTYHOG_SOURCE.is_file()


@pytest.fixture(scope="module")
def helps():
    """``python -m jitterlab.recipes.<name> --help`` of every program, run side by side."""
    running = {name: subprocess.Popen(["nice", "-n", "19", sys.executable, "-m",
                                       f"jitterlab.recipes.{name}", "--help"],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True) for name in PROGRAMS}
    done = {}
    for name, process in running.items():
        stdout, stderr = process.communicate(timeout=300)
        done[name] = subprocess.CompletedProcess(process.args, process.returncode, stdout,
                                                 stderr)
    return done


@pytest.mark.xdist_group("recipes_help")  # one worker starts the programs, not each
@pytest.mark.parametrize("name", PROGRAMS)
def test_help_runs_as_a_module(helps, name):
    done = helps[name]
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: python -m jitterlab.recipes.{name}")
    assert "--help" in done.stdout and done.stderr == ""


#: what --help must not import: the numerical stack and jitterlab's engine and readers
HEAVY = ("pandas", "scipy", "xarray", "numba", "jitterlab.datasets", "jitterlab.io",
         "jitterlab.sim", "jitterlab.measure")


def test_help_imports_nothing_heavy():
    # --help answers before anything is measured or computed: the heavy imports happen in
    # main, after the options are parsed (about 0.1 s of CPU a program instead of 1-3 s)
    script = (
        "import contextlib, io, runpy, sys\n"
        f"for name in {PROGRAMS!r}:\n"
        "    sys.argv = [name, '--help']\n"
        "    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "        runpy.run_module('jitterlab.recipes.' + name, run_name='__main__')\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_light_names_agree_with_the_datasets_module():
    # the recipes name data/ and their command without importing jitterlab.datasets (pandas)
    assert recipes.DATA_DIR == datasets.DATA_DIR
    assert measurement_manifest.PROGRAM == datasets.RECORD_COMMAND


BAD_ARGUMENTS = [
    (record_measurements.main, ["--only", "everything"], "invalid choice: 'everything'"),
    (record_measurements.main, ["--cpus", "one"], "argument --cpus: invalid"),
    (record_measurements.main, ["--pb-seconds", "0"], "--pb-seconds must be positive, got 0.0"),
    (record_measurements.main, ["--bsp-polled-pairs", "-1"],
     "--bsp-polled-pairs must be at least 0, got -1"),
    (record_measurements.main, ["--pb-work=-3e-4"], "--pb-work must be positive"),
    (record_measurements.main, ["--only", "latency", "--variants", "no_bcast", "--dry-run"],
     "no measurement of latency has a variant"),
    (run_ross_phold.main, ["out.csv", "--reps", "0"], "--reps must be at least 1, got 0"),
    (run_ross_phold.main, ["out.csv", "--ross-build", "/nonexistent/ross"],
     "no PHOLD binary /nonexistent/ross/models/phold/phold"),
    (run_ross_phold.main, ["out.csv", "--only", "opt9"], "invalid choice: 'opt9'"),
    (interleaved_06_07.main, ["record", "raw", "--experiment", "speeds", "--batch", "1"],
     "invalid choice: 'speeds'"),
    (interleaved_06_07.main, ["record", "raw", "--experiment", "tools"],
     "the following arguments are required: --batch"),
    (interleaved_06_07.main, [], "the following arguments are required: command"),
    (mpi_interleaved.main, ["out", "--experiment", "injection", "--pairs", "0"],
     "--pairs must be at least 1, got 0"),
    (mpi_interleaved.main, ["out", "--experiment", "noise"], "invalid choice: 'noise'"),
    (mpi_interleaved.main, ["out", "--experiment", "pinning", "--mpiexec", "/nonexistent"],
     "no mpiexec /nonexistent"),
    (record_causes_pinning.main, ["out", "--dutyhog", "d", "--pairs", "0"],
     "--pairs must be at least 1"),
    (record_causes_pinning.main, ["out", "--dutyhog", "d", "--busy-us", "3000"],
     "--busy-us must be positive and at most --period-us; got 3000 and 2500"),
    (record_causes_pinning.main, ["out"], "the following arguments are required: --dutyhog"),
    (estimate_accuracy.main, ["--ranks", "32", "0"], "--ranks must be positive, got [0]"),
    (estimate_accuracy.main, ["--noise", "loud"], "invalid choice: 'loud'"),
    (estimate_accuracy.main, ["--phases", "0"], "--phases must be at least 1, got 0"),
    (loggopsim_estimate_accuracy.main, ["--runs", "0"], "--runs must be at least 1, got 0"),
    (make_goal_references.main, ["--runs", "-1"], "--runs must be at least 0, got -1"),
]


@pytest.mark.parametrize(("main", "argv", "message"), BAD_ARGUMENTS,
                         ids=[f"{m.__module__.rsplit('.', 1)[1]}-{i}"
                              for i, (m, _, _) in enumerate(BAD_ARGUMENTS)])
def test_bad_arguments_give_a_clear_error(main, argv, message, capsys, tmp_path,
                                          monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing may be written where the test runs
    with pytest.raises(SystemExit) as raised:
        main(argv)
    said = capsys.readouterr().err + str(raised.value.code)
    assert message in said
    assert raised.value.code != 0
    assert list(tmp_path.iterdir()) == []


def test_missing_simulators_are_named(capsys, tmp_path):
    assert loggopsim_estimate_accuracy.main(["--loggopsim", str(tmp_path)]) == 1
    assert f"LogGOPSim is not built in {tmp_path}" in capsys.readouterr().out
    assert make_goal_references.main(["--loggopsim", str(tmp_path)]) == 1
    assert f"{tmp_path / 'LogGOPSim'} is missing" in capsys.readouterr().out


# --------------------------------------------------------------------------------------
# record_measurements: the plan, the files, the manifest
# --------------------------------------------------------------------------------------
def test_time_labels_name_files_and_text():
    label = measurement_plan.time_label
    assert [label(v) for v in (300e-6, 13e-3, 83e-3, 1e-3, 2.5, 5e-9)] == \
        ["300us", "13ms", "83ms", "1ms", "2.5s", "5ns"]
    assert measurement_plan.time_text(500e-6) == "500 µs"
    assert measurement_plan.time_text(10e-3) == "10 ms"


def test_the_full_plan_names_every_file_once():
    args = record_measurements.parse_args(["--cpus", "0,1", "--fwq-cpu", "1"])
    jobs = measurement_plan.plan(args)
    files = [job["file"] for job in jobs]
    assert len(files) == len(set(files)) == 2 * 2 + 3 + 8 + 3 + (2 + 4) + 12
    # the steps in order, the jitSim session (detour traces, then loops) before the BSP runs
    steps = [job["kind"] + "_session" * (job["variant"] == "session") for job in jobs]
    assert [s for i, s in enumerate(steps) if i == 0 or s != steps[i - 1]] == [
        "detour", "fwq", "pb", "latency", "detour_session", "pb_session", "bsp"]
    for job in jobs:
        assert job["argv"][-1] == "--force" and job["file"] in job["argv"]
        assert job["variant"] in measurement_plan.VARIANTS


def test_quick_durations_and_explicit_ones():
    quick = record_measurements.parse_args(["--quick"])
    assert (quick.detour_seconds, quick.bsp_phases) == (3.0, 200)
    explicit = record_measurements.parse_args(["--quick", "--detour-seconds", "7"])
    assert (explicit.detour_seconds, explicit.fwq_seconds) == (7.0, 3.0)
    full = record_measurements.parse_args([])
    assert (full.detour_seconds, full.pb_seconds, full.bsp_polled_pairs) == (60.0, 60.0, 4)


@pytest.mark.parametrize("kind", ["detour", "fwq", "bsp"])
def test_the_plan_gives_the_shipped_commands(manifest, kind):
    # the shipped detour traces, FWQ samples and BSP runs were recorded with the
    # commands the plan makes today (latency, pb and session: tests/test_datasets.py)
    shipped = {e["file"]: e for e in entries_of(manifest, kind)
               if e["variant"] != "session"}
    cpus = sorted({e["cpu"] for e in entries_of(manifest, "detour")})
    fwq_cpu = entries_of(manifest, "fwq")[0]["cpu"]
    args = record_measurements.parse_args(["--only", kind, "--cpus",
                                           ",".join(map(str, cpus)), "--fwq-cpu",
                                           str(fwq_cpu)])
    jobs = measurement_plan.plan(args)
    assert sorted(job["file"] for job in jobs) == sorted(shipped)
    for job in jobs:
        assert shlex.join(job["argv"]) == shipped[job["file"]]["command"]
        assert job["description"] == shipped[job["file"]]["description"]


def test_bsp_pairs_interleave_and_alternate():
    args = record_measurements.parse_args(["--only", "bsp"])
    jobs = measurement_plan.bsp_jobs(args)
    order = [(job["repeat"], job["variant"]) for job in jobs]
    assert order[:4] == [(1, "polled"), (1, "polled_injected"), (1, "blocking"),
                         (1, "blocking_injected")]
    # repeat 2: the blocking pair first, the injected run first in each pair
    assert order[4:8] == [(2, "blocking_injected"), (2, "blocking"),
                          (2, "polled_injected"), (2, "polled")]
    assert order[8:] == [(3, "polled"), (3, "polled_injected"), (4, "polled_injected"),
                         (4, "polled")]
    injected = [job for job in jobs if job["injector"]]
    assert all(job["argv"][job["argv"].index("--inject-seed") + 1] == str(job["repeat"])
               for job in injected)


def test_plain_values_for_json():
    value = {1: (np.float64(0.5), np.int64(3)), "x": [float("nan"), np.float32(np.inf)]}
    assert measurement_files.plain(value) == {"1": [0.5, 3], "x": [None, None]}
    attrs = {"host": "vm", "cpu_model": "AMD", "n_cpus": np.int64(2), "other": 1}
    assert measurement_files.machine_of(attrs) == {"host": "vm", "cpu_model": "AMD",
                                                   "n_cpus": 2, "kernel": None, "os": None}


def test_compact_netcdf_stores_whole_cycles_exactly(tmp_path):
    import xarray as xr

    frequency = 2.5e9
    rng = np.random.default_rng(4)
    cycles = rng.integers(750_000, 2_000_000, size=500).astype(float)
    path = tmp_path / "fwq.nc"
    ds = xr.Dataset({"iteration_time": ("sample", cycles / frequency, {"units": "s"}),
                     "other": ("sample", rng.random(500), {"units": "s"})},
                    attrs={"frequency_hz": frequency})
    ds.to_netcdf(path)
    done = measurement_files.compact_netcdf(path, frequency)
    assert "iteration_time stored as integer timestamp-counter cycles" in done["reencoded"]
    assert "other" not in done["reencoded"].split(";")[1]  # not whole cycles: kept float
    back = xr.load_dataset(path)
    np.testing.assert_allclose(back["iteration_time"], ds["iteration_time"], rtol=1e-14)
    np.testing.assert_array_equal(back["other"], ds["other"])
    assert back.attrs == ds.attrs and done["bytes_as_written"] > 0


@pytest.mark.parametrize("kind", ["detour", "pb", "latency", "fwq"])
def test_describing_a_shipped_file_gives_its_manifest_summary(manifest, kind, tmp_path):
    entry = next(e for e in entries_of(manifest, kind) if e["variant"] != "session")
    path = tmp_path / entry["file"]
    shutil.copy(MEASURED / entry["file"], path)  # describe_fwq re-encodes in place
    described = measurement_files.DESCRIBE[kind](path)
    summary = measurement_files.plain(described["summary"])
    assert summary.keys() == entry["summary"].keys()
    for key, value in entry["summary"].items():
        if isinstance(value, float):
            assert summary[key] == pytest.approx(value, rel=1e-12), key
        else:
            assert summary[key] == value, key
    assert measurement_files.machine_of(described["attrs"]) == entry["machine"]


def test_recording_program_and_bsp_section(manifest):
    program = measurement_manifest.recording_program
    assert program("python data/record_measurements.py --only bsp") == \
        "data/record_measurements.py"
    assert program("python -m jitterlab.recipes.record_measurements --quick") == \
        "python -m jitterlab.recipes.record_measurements"
    bsp = entries_of(manifest, "bsp")
    lines = measurement_manifest.bsp_markdown(manifest["files"], manifest["recordings"])
    assert f"{len(bsp)} runs, recorded by `data/record_measurements.py --only bsp`" in \
        "\n".join(lines)
    # a recording by the program as it is now names it
    later = [{"started_at": "2000-01-01T00:00:00+00:00",
              "command": "python -m jitterlab.recipes.record_measurements --only bsp"}]
    text = "\n".join(measurement_manifest.bsp_markdown(manifest["files"], later))
    assert "recorded by `python -m jitterlab.recipes.record_measurements --only bsp`" in text
    assert measurement_manifest.bsp_markdown(entries_of(manifest, "pb")) == []


def test_bsp_table_pairs_runs_by_repeat():
    def run(variant, repeat, injector, duration, injected, combined):
        return {"kind": "bsp", "variant": variant + "_injected" * injector,
                "repeat": repeat, "injector": injector,
                "summary": {"measured_duration": duration,
                            "run_accumulated": {"injected": injected,
                                                "combined": combined}}}

    entries = [run("polled", 1, False, 1.00, 0.0, 0.01), run("polled", 1, True, 1.10, 0.08, 0.10),
               run("polled", 2, False, 1.02, 0.0, 0.02), run("polled", 2, True, 1.14, 0.09, 0.11),
               run("blocking", 1, True, 1.2, 0.1, 0.1)]  # no clean run: no pair
    table = measurement_manifest.bsp_table(entries)
    assert table["polled"]["pairs"] == 2 and table["blocking"]["pairs"] == 0
    mean, se, low, high, n = table["polled"]["measured_cost"]
    assert (mean, low, high, n) == pytest.approx((0.11, 0.10, 0.12, 2))
    assert se == pytest.approx(np.std([0.10, 0.12], ddof=1) / np.sqrt(2))
    assert table["polled"]["cost_minus_estimate_difference"][0] == pytest.approx(0.11 - 0.09)
    assert "measured_cost" not in table["blocking"]


def test_manifest_round_trip_and_refusal(manifest, tmp_path):
    measurement_manifest.write_manifest(tmp_path, json.loads(json.dumps(manifest)))
    back = measurement_manifest.read_manifest(tmp_path)
    assert [e["file"] for e in back["files"]] == [e["file"] for e in manifest["files"]]
    assert measurement_manifest.read_manifest(tmp_path / "nothing") is None
    (tmp_path / "manifest.json").write_text('{"format": "something else"}')
    with pytest.raises(SystemExit, match="is not a jitterlab measurements manifest"):
        measurement_manifest.read_manifest(tmp_path)
    first = manifest["files"][0]
    assert measurement_manifest.entry_key(first) == measurement_manifest.entry_key(
        {**first, "file": "renamed.parquet"})


def test_dry_run_prints_the_commands(capsys, tmp_path):
    code = record_measurements.main(["--only", "latency", "--quick", "--dry-run",
                                     "--output", str(tmp_path)])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0 and len(lines) == 3
    assert lines[0] == (f"(cd {tmp_path} && mpiexec -n 2 jitterlab measure latency "
                        "--round-trips 200 --barriers 1000 --output latency_2ranks.nc --force)")
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------------------
# the other recordings: batch orders and the commands their tables record
# --------------------------------------------------------------------------------------
def test_interleaved_06_07_commands_are_the_recorded_ones(tmp_path):
    runs = pd.read_csv(DATA / "interleaved_06_07" / "runs.csv")
    args = argparse.Namespace(seconds=None, sysjitter="/opt/sysjitter/sysjitter",
                              shim="/opt/shim/mincore_shim.so")
    for row in runs.itertuples():
        suffix = ".parquet" if row.experiment == "tools" else ".nc"
        output = tmp_path / f"{row.experiment}_b{row.batch}_{row.position}_{row.arm}{suffix}"
        assert output.name == row.file
        argv, extra, stderr = interleaved_06_07.command_of(row.experiment, row.arm, output,
                                                           args)
        assert interleaved_06_07.command_text(argv, extra) == row.command
        assert stderr == output.with_suffix(".stderr.txt")


def test_mpi_interleaved_commands_are_the_recorded_ones():
    runs = pd.read_csv(DATA / "mpi_interleaved" / "runs.csv")
    old, new = "python data/mpi_interleaved.py", "python -m jitterlab.recipes.mpi_interleaved"
    for row in runs.itertuples():
        nice = re.search(r"--autogroup-nice (-?\d+)", row.command)
        command = mpi_interleaved.command_text(row.arm, row.file, row.pair,
                                               int(nice.group(1)) if nice else None)
        assert command == row.command.replace(old, new)
        assert row.arm in mpi_interleaved.EXPERIMENTS[row.experiment]
    arguments = mpi_interleaved.worker_arguments("unpinned", Path("x.nc"), 3)
    assert arguments == ["--worker", "x.nc", "--seed", "3", "--no-pin"]


def test_causes_pinning_ran_the_arms_in_their_order():
    runs = pd.read_csv(DATA / "causes_pinning" / "runs.csv")
    assert record_causes_pinning.arm_order(0) == ("alone", "pinned", "unpinned")
    assert record_causes_pinning.arm_order(1) == ("unpinned", "pinned", "alone")
    for pair, rows in runs.groupby("pair"):
        ran = tuple(rows.sort_values("started_utc", kind="stable")["arm"])
        assert ran == record_causes_pinning.arm_order(pair), pair
    assert set(runs["second_rank"].fillna("")) == {
        "", *(f"dutyhog 2000 2500 on CPUs {cpus}"
              for cpus in record_causes_pinning.SECOND_RANK_CPUS.values() if cpus)}


# --------------------------------------------------------------------------------------
# the estimate against simulations and against LogGOPSim
# --------------------------------------------------------------------------------------
def test_estimate_accuracy_grid_gives_the_shipped_seeds():
    shipped = pd.read_csv(DATA / "estimate_accuracy.csv")
    seeds = {(name, kind, n, work): seed
             for seed, name, kind, n, work in estimate_accuracy.grid()}
    assert len(seeds) == len(shipped) == 64
    for row in shipped.itertuples():
        assert seeds[(row.noise, row.barrier_kind, row.n, row.phase_work)] == row.seed


def test_estimate_accuracy_tiny_run(tmp_path, capsys):
    output = tmp_path / "accuracy.csv"
    argv = ["--output", str(output), "--noise", "100Hz_100us", "--ranks", "4", "8",
            "--phase-work", "0.004", "--phases", "30"]
    assert estimate_accuracy.main(argv) == 0
    rows = list(csv.DictReader(output.read_text().splitlines()))
    assert [(r["barrier_kind"], r["n"], r["seed"]) for r in rows] == [
        ("ideal", "4", "0"), ("ideal", "8", "1"), ("tree", "4", "2"), ("tree", "8", "3")]
    assert list(rows[0]) == estimate_accuracy.FIELDS
    for row in rows:
        assert int(row["phases"]) == 30 and float(row["work"]) == 0.004 / int(row["n"])
        assert float(row["true_cost"]) > 0  # 30 phases of 1 ms or less meet a detour
    # with the ideal barrier the estimate is exact (self-consistency): rounding error only
    ideal = [r for r in rows if r["barrier_kind"] == "ideal"]
    assert all(abs(float(r["error"])) < 1e-9 for r in ideal)
    assert capsys.readouterr().out.count("100Hz_100us") == 4
    # a second run finds every row done and adds none
    assert estimate_accuracy.main(argv) == 0
    assert len(list(csv.DictReader(output.read_text().splitlines()))) == 4


@pytest.mark.parametrize("pattern", ["dissemination", "ring"])
def test_loggopsim_schedules_are_the_shipped_fixtures(pattern):
    shipped = gzip.decompress((TESTS_DATA / f"loggopsim_{pattern}8.goal.gz").read_bytes())
    text = loggopsim_estimate_accuracy.goal_schedule(pattern, 8, 5, 2_000_000)
    assert text == shipped.decode()
    with pytest.raises(ValueError, match="unknown pattern 'tree'"):
        loggopsim_estimate_accuracy.goal_schedule("tree", 4, 1, 10)


def _host_ends(text):
    return [int(t) for t in re.findall(r"^Host \d+: (\d+)$", text, re.MULTILINE)]


def test_loggopsim_output_and_a_run_evaluated_from_its_timeline(tmp_path):
    recipe = loggopsim_estimate_accuracy
    quiet_text = (TESTS_DATA / "loggopsim_dissemination8_quiet.out").read_text()
    noisy_text = (TESTS_DATA / "loggopsim_dissemination8_noisy.out").read_text()
    # the fixtures ran without -b: the finishing time is the last rank's end
    with pytest.raises(RuntimeError, match="no finishing time"):
        recipe.parse_output(noisy_text)
    noisy_ns = max(_host_ends(noisy_text))
    finished, injected = recipe.parse_output(
        noisy_text + f"Maximum finishing time at host 3: {noisy_ns}\n")
    assert finished == noisy_ns and injected == 8 * 100_000
    assert recipe.parse_output("Maximum finishing time at host 0: 7\n") == (7, None)
    quiet_ns = max(_host_ends(quiet_text))
    goal = tmp_path / "s.goal"
    goal.write_bytes(gzip.decompress((TESTS_DATA / "loggopsim_dissemination8.goal.gz")
                                     .read_bytes()))
    viz = tmp_path / "noisy.viz"
    viz.write_bytes(gzip.decompress((TESTS_DATA / "loggopsim_dissemination8_noisy.viz.gz")
                                    .read_bytes()))
    result = recipe.evaluate_run(viz, goal, quiet_ns, noisy_ns, injected)
    assert result["true_cost_ns"] == noisy_ns - quiet_ns > 0
    assert result["trace_noise_ns"] + result["absorbed_noise_ns"] == injected
    assert result["estimate_ns"] == pytest.approx(result["estimate"], abs=0.05)
    assert result["error"] == pytest.approx(result["estimate"] / result["true_cost_ns"] - 1)
    assert result["intervals"] > 8 * 5
    with pytest.raises(RuntimeError, match="LogGOPSim printed"):
        recipe.evaluate_run(viz, goal, quiet_ns, noisy_ns + 1, injected)
    with pytest.raises(RuntimeError, match="LogGOPSim injected"):
        recipe.evaluate_run(viz, goal, quiet_ns, noisy_ns, injected + 1)


def test_loggopsim_table_rows_and_what_is_done(tmp_path):
    table = tmp_path / "table.csv"
    row = dict.fromkeys(loggopsim_estimate_accuracy.FIELDS, 1)
    row.update(pattern="ring", noise="devref", run=2)
    loggopsim_estimate_accuracy.append_row(row, table)
    loggopsim_estimate_accuracy.append_row({**row, "run": 3}, table)
    assert table.read_text().splitlines()[0] == ",".join(loggopsim_estimate_accuracy.FIELDS)
    assert loggopsim_estimate_accuracy.done_runs(table) == {("ring", "devref", 1, 1, 2),
                                                            ("ring", "devref", 1, 1, 3)}
    assert loggopsim_estimate_accuracy.done_runs(tmp_path / "none.csv") == set()


# --------------------------------------------------------------------------------------
# make_goal_references: the cases and the canonical text
# --------------------------------------------------------------------------------------
def test_canonical_text_of_a_small_schedule():
    goal = """num_ranks 2

rank 0 {
a: calc 100 cpu 0
b: send 8b to 1 tag 3
b requires a
b requires a
}

rank 1 {
x: recv 8b from 0 tag 3
y: calc 5
y requires x
y irequires x
}
"""
    text, operations, dependencies = make_goal_references.canonical_text(goal)
    assert text == ("rank 0\n0 calc 100 cpu 0\n1 send 8 1 3\n1 requires 0\n"
                    "rank 1\n0 recv 8 0 3\n1 calc 5\n1 irequires 0\n1 requires 0\n")
    assert (operations, dependencies) == (4, 3)
    with pytest.raises(ValueError, match="line 3: not understood: 'a: wait 100'"):
        make_goal_references.canonical_text("num_ranks 1\nrank 0 {\na: wait 100\n}\n")


def test_goal_cases_are_the_shipped_ones():
    shipped = {row["case"]: row for row in csv.DictReader(
        (TESTS_DATA / "goal" / "cases.csv").read_text().splitlines())}
    cases = make_goal_references.schedgen2_cases()
    assert {c["case"] for c in cases} | {"binary_tree_32"} == set(shipped)
    for case in cases:
        row = shipped[case["case"]]
        for key, value in case.items():
            assert row[key] == str(value), (case["case"], key)


def test_canonical_text_gives_the_shipped_checksums():
    rows = [r for r in csv.DictReader((TESTS_DATA / "goal" / "cases.csv").read_text()
                                         .splitlines())
            if r["file"] and int(r["operations"]) <= 2000]
    assert len(rows) >= 10
    for row in rows:
        goal = gzip.decompress((TESTS_DATA / "goal" / row["file"]).read_bytes()).decode()
        text, operations, dependencies = make_goal_references.canonical_text(goal)
        assert hashlib.sha256(text.encode()).hexdigest() == row["canonical_sha256"]
        assert (operations, dependencies) == (int(row["operations"]),
                                              int(row["dependencies"]))


def test_rows_are_written_atomically_and_read_back(tmp_path):
    rows = [{"a": "1", "b": "x"}, {"a": "2", "b": "y"}]
    for name in ("t.csv", "t.csv.gz"):
        make_goal_references.write_rows(tmp_path / name, ["a", "b"], rows)
        assert make_goal_references.read_rows(tmp_path / name) == rows
    first = (tmp_path / "t.csv.gz").read_bytes()
    make_goal_references.write_rows(tmp_path / "t.csv.gz", ["a", "b"], rows)
    assert (tmp_path / "t.csv.gz").read_bytes() == first  # no timestamp in the gzip
    assert not list(tmp_path.glob("*.partial"))
    assert make_goal_references.read_rows(tmp_path / "none.csv") == []
    assert os.path.getsize(tmp_path / "t.csv") > 0
