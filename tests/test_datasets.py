"""Shipped data: paper values and measurements of this machine; loaders, provenance
records and checksums, consistency with the package."""

import hashlib
import json
import math
import os
import re
import shlex
import shutil

import numpy as np
import pandas as pd
import pytest

import jitterlab as jl
from jitterlab import datasets
from jitterlab.datasets import (
    PAPER_VALUE_COLUMNS,
    list_measurements,
    load_detour,
    load_fwq,
    load_latency,
    load_paper_values,
    load_pb,
)
from jitterlab.measure.latency import summarize_latency


@pytest.fixture(scope="module")
def table():
    return load_paper_values("garg_de_2006")


@pytest.fixture(scope="module")
def values(table):
    return table.set_index("quantity")["value"]


def test_columns_and_types(table):
    assert tuple(table.columns) == PAPER_VALUE_COLUMNS
    assert table["value"].dtype == np.float64
    assert table["quantity"].is_unique
    assert np.isfinite(table["value"]).all()
    assert set(table["unit"]) <= {"s", "Hz", "flop/s", "count", "id", "tau", "-"}
    assert table["source"].str.startswith("Garg & De 2006, §").all()
    assert (table["note"].str.len() > 0).all()
    assert table.attrs["path"].endswith("garg_de_2006.csv")


def test_transcribed_numbers(values):
    assert values["one_way_latency"] == 5e-6
    assert values["latency_term_32_nodes"] == 40e-6
    assert values["sdsc256_gap_mean_theta_minus_mean_max"] == 50e-6
    assert values["sdsc1024_w300us_mean_max"] == 1.93e-3
    assert (values["sdsc1024_w300us_mean_theta_low"],
            values["sdsc1024_w300us_mean_theta_high"]) == (2.54e-3, 2.93e-3)
    assert values[["sdsc256_work", "testbed_work_large", "sdsc1024_work_large"]].tolist() == [
        300e-6, 83e-3, 13e-3]
    assert values["sdsc256_processes"] == values["sdsc256_nodes"] * 8
    assert values["sdsc1024_processes"] == values["sdsc1024_nodes"] * 8
    assert values["anomalous_node_last_process"] - values["anomalous_node_first_process"] + 1 \
        == values["anomalous_node_processes"]


def test_latency_term_agrees_with_theorem1(values):
    """2·τ·log2((N+1)/2) for N + 1 = 32 tree nodes, Garg & De 2006 §4.1."""
    n = int(values["latency_term_tree_nodes"]) - 1
    ds = jl.theorem1_bounds(jl.noise.Exponential(mean=20e-6) + 300e-6, n=n,
                            tau=values["one_way_latency"])
    assert float(ds["round_trip"][0]) == pytest.approx(values["latency_term_32_nodes"], rel=1e-12)


def test_fig2_arrival_offsets_are_the_trees(values):
    """a_i of §2.1 (in units of τ) are the depths jl.arrival_offsets gives the 7-process tree."""
    printed = [values[f"fig2_arrival_offset_{i}"] for i in range(1, 8)]
    assert printed == [0, 2, 1, 2, 2, 1, 2]
    assert sorted(jl.arrival_offsets(7, tau=1.0)) == sorted(printed)


def test_provenance_record_matches_the_table(table):
    csv_path = datasets.DATA_DIR / "garg_de_2006.csv"
    record = (datasets.DATA_DIR / "garg_de_2006.md").read_text(encoding="utf-8")
    digest = hashlib.sha256(csv_path.read_bytes()).hexdigest()
    assert re.search(r"\b[0-9a-f]{64}\b", record).group(0) == digest, \
        "update the checksum in data/garg_de_2006.md after editing the CSV"
    assert "Garg" in record and "HiPC" in record
    for unit in set(table["unit"]):
        assert f"`{unit}`" in record


def test_missing_table_names_the_path():
    with pytest.raises(FileNotFoundError, match=r"data.no_such_paper\.csv.*garg_de_2006"):
        load_paper_values("no_such_paper")


def test_missing_data_folder(monkeypatch, tmp_path):
    monkeypatch.setattr(datasets, "DATA_DIR", tmp_path / "data")
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "data"))):
        load_paper_values()


@pytest.mark.parametrize("name", ["../pyproject", "a/b", "", None, ".hidden"])
def test_bad_name(name):
    with pytest.raises(ValueError, match="plain table name"):
        load_paper_values(name)


def test_malformed_table(monkeypatch, tmp_path):
    monkeypatch.setattr(datasets, "DATA_DIR", tmp_path)
    (tmp_path / "twice.csv").write_text("quantity,value,unit,source,note\n"
                                        "a,1,s,x,y\na,2,s,x,y\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"more than once: \['a'\]"):
        load_paper_values("twice")
    (tmp_path / "short.csv").write_text("quantity,value\na,1\n", encoding="utf-8")
    with pytest.raises(ValueError, match="lacks the column"):
        load_paper_values("short")


# --------------------------------------------------------------------------------------
# measurements of this machine: data/measured/ (recorded by
# python -m jitterlab.recipes.record_measurements, until 2026-11-26 data/record_measurements.py)
# --------------------------------------------------------------------------------------
MEASURED = datasets.DATA_DIR / "measured"
FWQ_WORKS = (300e-6, 13e-3, 83e-3)
W = 300e-6
#: (ranks, variant, work [s]) of the shipped PB runs
PB_RUNS = [(2, "default", W), (2, "no_wait_no_bcast", W), (2, "no_bcast", W),
           (2, "no_wait", W), (2, "default", 13e-3), (2, "default", 83e-3),
           (4, "default", W), (8, "default", W)]
SESSION_RANKS = (1, 2, 4, 8)
PB_RUNS += [(ranks, "session", W) for ranks in SESSION_RANKS]
#: (random wait, broadcast) of each PB variant (Garg & De 2006, Algorithm 1 lines 2, 10)
PB_SETUP = {"default": (True, True), "no_wait_no_bcast": (False, False),
            "no_bcast": (True, False), "no_wait": (False, True), "session": (False, False)}
LATENCY_RANKS = (2, 4, 8)


@pytest.fixture(scope="module")
def measurements():
    return list_measurements()


@pytest.fixture(scope="module")
def manifest():
    return json.loads((MEASURED / "manifest.json").read_text(encoding="utf-8"))


def test_every_measurement_is_listed(measurements):
    assert tuple(measurements.columns) == datasets.MEASUREMENT_COLUMNS[1:]
    assert measurements.index.name == "file" and measurements.index.is_unique
    assert set(measurements["kind"]) == set(datasets.MEASUREMENT_KINDS)
    detour = measurements[measurements["kind"] == "detour"]
    n_cpus = int(measurements["n_cpus"].iloc[0])
    for variant in ("fixed_threshold", "default_threshold", "session"):
        cpus = sorted(detour.loc[detour["variant"] == variant, "cpu"].tolist())
        assert cpus == list(range(n_cpus)), f"a {variant} detour trace of every CPU"
    assert sorted(measurements.loc[measurements["kind"] == "fwq", "work"]) == \
        pytest.approx(sorted(FWQ_WORKS))
    pb = measurements[measurements["kind"] == "pb"]
    assert sorted(zip(pb["ranks"], pb["variant"], pb["work"].round(6), strict=True)) == \
        sorted(PB_RUNS)
    assert (pb["oversubscribed"] == (pb["ranks"] > pb["n_cpus"])).all()
    latency = measurements[measurements["kind"] == "latency"]
    assert sorted(latency["ranks"]) == list(LATENCY_RANKS)
    assert (latency["oversubscribed"] == (latency["ranks"] > latency["n_cpus"])).all()
    assert measurements["quick"].notna().all()
    ours = measurements["kind"] != "ross_phold"  # ROSS ran outside: see PROVENANCE.md
    assert measurements.loc[ours, "command"].str.startswith(("jitterlab measure ",
                                                             "mpiexec -n ")).all()
    # recorded by the script the program was then; a new recording names the program
    assert measurements.attrs["recorded_with"].startswith(datasets.RECORD_COMMANDS)


def test_recorded_commands_name_the_program_then_and_now(manifest):
    from jitterlab.recipes import measurement_manifest, record_measurements

    old, new = "python data/record_measurements.py", datasets.RECORD_COMMAND
    assert datasets.RECORD_COMMANDS == (new, old)
    assert new == "python -m jitterlab.recipes.record_measurements"
    # every recording of the shipped manifest started with the script of its time
    assert all(r["command"].startswith(old + " ") or r["command"] == old
               for r in manifest["recordings"])
    command = record_measurements.recorded_command(["--only", "pb", "--quick"])
    assert command == new + " --only pb --quick"
    assert command.startswith(datasets.RECORD_COMMANDS)
    assert not "python data/other.py --only pb".startswith(datasets.RECORD_COMMANDS)
    program = measurement_manifest.recording_program
    assert program(manifest["recorded_with"]) == "data/record_measurements.py"
    assert program(command) == new
    assert program(None) == new


def test_load_averages_are_the_manifests(measurements, manifest):
    for entry in manifest["files"]:
        row = measurements.loc[entry["file"]]
        assert row["load_before"] == entry["load_average_before"][0]
        assert row["load_after"] == entry["load_average_after"][0]


def test_files_match_their_checksums(measurements):
    for name, row in measurements.iterrows():
        data = (MEASURED / name).read_bytes()
        assert len(data) == row["bytes"], name
        assert hashlib.sha256(data).hexdigest() == row["sha256"], \
            f"{name} changed after it was recorded: re-record with " \
            f"{datasets.RECORD_COMMAND}"


def test_measured_folder_holds_only_listed_files(measurements):
    present = {p.name for p in MEASURED.iterdir() if not p.name.startswith(".")}
    assert present == set(measurements.index) | {"manifest.json", "PROVENANCE.md"}


def test_data_folder_stays_small():
    # 8 MB until 2026-11-25; then the recordings of issues #18 and #22 (kernel events of a
    # 60 s run, 30 pinning runs, 48 interleaved MPI runs: 14.5 MB) came in, and the
    # interleaved re-recordings of notebooks 06/07 (1.8 MB, files up to 0.72 MB). The bounds
    # catch an accidental large file (a trace at full resolution, an uncompressed store)
    # rather than fix a budget.
    sizes = {p: p.stat().st_size for p in datasets.DATA_DIR.rglob("*") if p.is_file()}
    total = sum(sizes.values())
    assert total < 25_000_000, f"data/ holds {total / 1e6:.1f} MB"
    largest = max(sizes, key=sizes.get)
    assert sizes[largest] < 2_000_000, f"{largest} holds {sizes[largest] / 1e6:.1f} MB"


def test_provenance_record_lists_every_file(measurements):
    record = (MEASURED / "PROVENANCE.md").read_text(encoding="utf-8")
    for name, row in measurements.iterrows():
        assert f"`{name}`" in record and row["sha256"] in record
        assert row["command"] in record
    assert ("Quick recording" in record) == bool(measurements["quick"].any())


def test_machine_in_the_manifest_is_the_files_own(measurements, manifest):
    machine = manifest["machine"]
    assert set(measurements["host"]) == {machine["host"]}
    for cpu in range(int(machine["n_cpus"])):
        attrs = load_detour(cpu).attrs
        assert (attrs["host"], attrs["cpu_model"], attrs["kernel"]) == \
            (machine["host"], machine["cpu_model"], machine["kernel"])


@pytest.mark.parametrize("variant", ["fixed_threshold", "default_threshold", "session"])
def test_load_detour(measurements, variant):
    rows = measurements[(measurements["kind"] == "detour")
                        & (measurements["variant"] == variant)]
    for _, row in rows.iterrows():
        trace = load_detour(cpu=int(row["cpu"]), variant=variant)
        assert isinstance(trace, jl.Trace)
        assert trace.unit == "cycles" and trace.frequency_hz > 1e8
        attrs = trace.attrs
        assert attrs["source"] == "jitterlab.bench.detour" and attrs["complete"]
        assert attrs["cpu"] == row["cpu"]
        # the run ends with the loop iteration that reaches the duration (a detour)
        assert row["duration"] <= attrs["measured_duration"] < row["duration"] * 1.01 + 0.5
        assert attrs["command"] == row["command"]
        threshold = attrs["threshold"]
        if variant != "default_threshold":
            assert threshold == pytest.approx(row["threshold"], rel=1e-3)
        else:
            default = max(10 * attrs["t_min"], 4 * attrs["median_loop_time"])
            assert threshold == pytest.approx(default, rel=0.01)
        # every event is a loop iteration longer than the threshold
        assert trace.jitter.min() > attrs["threshold_cycles"]
        assert trace.duration == pytest.approx(attrs["measured_duration"], rel=1e-9)


@pytest.mark.parametrize("work", FWQ_WORKS)
def test_load_fwq(measurements, work):
    law = load_fwq(work)
    assert isinstance(law, jl.noise.Empirical)
    row = measurements[(measurements["kind"] == "fwq")
                       & np.isclose(measurements["work"], work)].iloc[0]
    assert law.attrs["work"] == work and law.attrs["cpu"] == row["cpu"]
    assert law.attrs["samples"] == law.values.size == law.sequence.size
    assert law.values.size == round(row["duration"] / work)
    # the calibrated quantum is work within a few percent, noise only adds time
    assert law.lower == pytest.approx(work, rel=0.05)
    assert law.mean() >= law.lower


def test_fwq_files_store_whole_counter_cycles():
    import netCDF4

    law = load_fwq(300e-6)
    path = datasets.measurement_path(
        list_measurements().query("kind == 'fwq'").index[0])
    with netCDF4.Dataset(path) as handle:
        variable = handle["iteration_time"]
        assert variable.dtype.kind == "i"
        assert variable.scale_factor == pytest.approx(1 / law.attrs["frequency_hz"],
                                                      rel=1e-15)
    cycles = law.sequence * law.attrs["frequency_hz"]
    assert np.abs(cycles - np.round(cycles)).max() < 1e-6


@pytest.mark.parametrize(("ranks", "variant", "work"), PB_RUNS)
def test_load_pb(measurements, ranks, variant, work):
    ds = load_pb(ranks, variant, work)
    row = measurements[(measurements["kind"] == "pb") & (measurements["ranks"] == ranks)
                       & (measurements["variant"] == variant)
                       & np.isclose(measurements["work"], work)].iloc[0]
    assert ds.sizes["rank"] == ranks and ds.attrs["n_ranks"] == ranks
    assert (ds.attrs["random_wait"], ds.attrs["broadcast"]) == PB_SETUP[variant]
    assert ds.attrs["oversubscribed"] == row["oversubscribed"]
    assert ds.attrs["work"] == row["work"] == work
    assert ds.attrs["command"] == row["command"].removeprefix(f"mpiexec -n {ranks} ")
    for name in ("compute", "barrier", "iteration"):
        assert ds[name].dims == ("rank", "sample") and ds[name].attrs["units"] == "s"
        assert int(ds[f"{name}_hist"].sum("bin").min()) == ds.attrs["iterations"]
    # θ = (w + δ) + b per rank and iteration
    np.testing.assert_allclose(ds["iteration"], ds["compute"] + ds["barrier"], rtol=1e-12)


@pytest.mark.parametrize("ranks", LATENCY_RANKS)
def test_load_latency(measurements, ranks):
    ds = load_latency(ranks)
    row = measurements[(measurements["kind"] == "latency")
                       & (measurements["ranks"] == ranks)].iloc[0]
    assert ds.attrs["source"] == "jitterlab.bench.latency" and ds.attrs["complete"]
    assert ds.sizes["rank"] == ds.attrs["n_ranks"] == ranks
    assert ds.sizes["pair"] == ranks * (ranks - 1) // 2  # every pair of ranks
    assert ds.attrs["oversubscribed"] == row["oversubscribed"]
    assert ds.attrs["command"] == row["command"].removeprefix(f"mpiexec -n {ranks} ")
    for name in ("ping_pong", "barrier"):
        assert ds[name].attrs["units"] == "s"
        assert np.all(np.isfinite(ds[name])) and np.all(ds[name] > 0)
    summary = summarize_latency(ds)
    tau = float(summary["tau"])
    assert 0 < tau < 1e-3 and math.isfinite(float(summary["tau_se"]))
    # the key numbers of the manifest are those of the shipped file
    entry = next(e for e in json.loads((MEASURED / "manifest.json").read_text(
        encoding="utf-8"))["files"] if e["file"] == row.name)
    assert entry["summary"]["tau"] == pytest.approx(tau, rel=1e-12)


@pytest.fixture(scope="module")
def script():
    from jitterlab.recipes import record_measurements

    return record_measurements


def test_record_script_plans_the_shipped_latency_runs(measurements, script):
    jobs = script.plan(script.parse_args(["--only", "latency"]))
    assert [job["ranks"] for job in jobs] == list(LATENCY_RANKS)
    for job in jobs:
        row = measurements.loc[job["file"]]
        assert shlex.join(job["argv"]) == row["command"]
        assert job["oversubscribed"] == (job["ranks"] > os.cpu_count())
        assert job["argv"][:3] == ["mpiexec", "-n", str(job["ranks"])]


def test_record_script_plans_the_shipped_pb_runs(measurements, script):
    jobs = script.plan(script.parse_args(["--only", "pb"]))
    assert sorted((job["ranks"], job["variant"], job["work"]) for job in jobs) == \
        sorted(run for run in PB_RUNS if run[1] != "session")
    for job in jobs:
        assert shlex.join(job["argv"]) == measurements.loc[job["file"], "command"]
        wait, broadcast = PB_SETUP[job["variant"]]
        assert ("--no-random-wait" in job["argv"]) == (not wait)
        assert ("--no-broadcast" in job["argv"]) == (not broadcast)


def test_record_script_variants_select_files(script):
    jobs = script.plan(script.parse_args(["--only", "pb", "--variants", "no_bcast",
                                          "no_wait"]))
    assert [(job["ranks"], job["variant"]) for job in jobs] == [(2, "no_bcast"),
                                                                 (2, "no_wait")]
    # Fig. 4: the random wait stays on; Fig. 5: the broadcast stays on
    assert "--no-broadcast" in jobs[0]["argv"] and "--no-random-wait" not in jobs[0]["argv"]
    assert "--no-random-wait" in jobs[1]["argv"] and "--no-broadcast" not in jobs[1]["argv"]
    with pytest.raises(SystemExit, match="no measurement of latency has a variant"):
        script.plan(script.parse_args(["--only", "latency", "--variants", "no_bcast"]))
    larger = script.plan(script.parse_args(["--only", "pb", "--works", "0.013", "0.083"]))
    assert [(job["ranks"], job["variant"], job["work"]) for job in larger] == \
        [(2, "default", 13e-3), (2, "default", 83e-3)]


def test_record_script_plans_the_session_in_one_step(measurements, script):
    jobs = script.plan(script.parse_args(["--only", "session", "--cpus", "0,1"]))
    # the detour traces of every CPU first, then the loops at 1, 2, 4 and 8 ranks
    assert [(job["kind"], job.get("cpu"), job.get("ranks")) for job in jobs] == \
        [("detour", 0, None), ("detour", 1, None)] + [("pb", None, r) for r in SESSION_RANKS]
    for job in jobs:
        assert job["variant"] == "session"
        assert shlex.join(job["argv"]) == measurements.loc[job["file"], "command"]
        if job["kind"] == "pb":
            assert "--no-random-wait" in job["argv"] and "--no-broadcast" in job["argv"]
            assert job["oversubscribed"] == (job["ranks"] > os.cpu_count())


def test_session_was_recorded_in_one_sitting(measurements, manifest):
    # the session's files were recorded one right after the other, traces first, and
    # nothing else was recorded in between (De & Mann 2010, §4.1: same machine, same time)
    entries = sorted((e for e in manifest["files"]), key=lambda e: e["collected_at"])
    names = [e["file"] for e in entries]
    session = [i for i, e in enumerate(entries) if e["variant"] == "session"]
    assert session == list(range(session[0], session[0] + len(session))), names
    kinds = [entries[i]["kind"] for i in session]
    assert kinds == sorted(kinds, key=["detour", "pb"].index)
    assert [entries[i]["ranks"] for i in session if entries[i]["kind"] == "pb"] == \
        list(SESSION_RANKS)
    start = np.datetime64(entries[session[0]]["collected_at"][:19])
    end = np.datetime64(entries[session[-1]]["finished_at"][:19])
    planned = sum(entries[i]["duration"] for i in session)
    overhead = np.timedelta64(60 * len(session), "s")  # start-up, calibration, writing
    assert end - start < np.timedelta64(int(planned), "s") + overhead
    assert len({entries[i]["quick"] for i in session}) == 1


def test_missing_manifest_says_how_to_record(monkeypatch, tmp_path):
    monkeypatch.setattr(datasets, "DATA_DIR", tmp_path / "data")
    pattern = re.escape(str(tmp_path / "data" / "measured" / "manifest.json")) + \
        r".*python -m jitterlab\.recipes\.record_measurements"
    for load in (list_measurements, load_detour, lambda: load_fwq(300e-6), load_pb,
                 load_latency):
        with pytest.raises(FileNotFoundError, match=pattern):
            load()


def _copy_measured(tmp_path, names) -> dict:
    """A data/measured/ in tmp_path with the manifest and the named files."""
    target = tmp_path / "data" / "measured"
    target.mkdir(parents=True)
    shutil.copy(MEASURED / "manifest.json", target)
    for name in names:
        shutil.copy(MEASURED / name, target)
    return {"dir": target}


def test_missing_file_names_its_path(monkeypatch, tmp_path, measurements):
    name = measurements[measurements["kind"] == "pb"].index[0]
    _copy_measured(tmp_path, [])
    monkeypatch.setattr(datasets, "DATA_DIR", tmp_path / "data")
    ranks, variant, work = measurements.loc[name, ["ranks", "variant", "work"]]
    with pytest.raises(FileNotFoundError,
                       match=re.escape(str(tmp_path / "data" / "measured" / name))
                       + r".*jitterlab\.recipes\.record_measurements"):
        load_pb(int(ranks), variant, float(work))


def test_changed_file_fails_its_checksum(monkeypatch, tmp_path, measurements):
    name = measurements[(measurements["kind"] == "detour")
                        & (measurements["variant"] == "fixed_threshold")].index[0]
    copy = _copy_measured(tmp_path, [name])
    with open(copy["dir"] / name, "ab") as stream:
        stream.write(b"\0")
    monkeypatch.setattr(datasets, "DATA_DIR", tmp_path / "data")
    with pytest.raises(ValueError, match=f"{re.escape(name)}: its SHA-256 differs"):
        load_detour(int(measurements.loc[name, "cpu"]))
    assert datasets.measurement_path(name, verify=False) == copy["dir"] / name


def test_unknown_selection_lists_what_is_shipped():
    with pytest.raises(ValueError, match=r"no shipped detour trace with cpu=999.*cpu=0"):
        load_detour(cpu=999)
    with pytest.raises(ValueError, match=r"no shipped FWQ sample with work=0\.001.*work=0\.0003"):
        load_fwq(1e-3)
    with pytest.raises(ValueError, match=r"no shipped Parallel Benchmark run with ranks=3"):
        load_pb(3)
    with pytest.raises(ValueError, match=r"no shipped latency run with ranks=3.*ranks=2"):
        load_latency(3)
    with pytest.raises(ValueError, match="variant must be"):
        load_pb(2, "broadcast")
    with pytest.raises(ValueError, match="variant must be"):
        load_detour(0, "fixed")
    with pytest.raises(ValueError, match="not listed"):
        datasets.measurement_path("no_such_file.nc")


def test_sysjitter_back_to_back_table_and_its_provenance_record():
    path = datasets.DATA_DIR / "sysjitter_back_to_back.csv"
    record = (datasets.DATA_DIR / "sysjitter_back_to_back.md").read_text(encoding="utf-8")
    assert re.search(r"\b[0-9a-f]{64}\b", record).group(0) == \
        hashlib.sha256(path.read_bytes()).hexdigest(), "update the checksum after editing"
    table = pd.read_csv(path)
    assert set(table["pair"]) == {1, 2} and len(table) == 4
    assert table["tool"].str.startswith(("sysjitter 1.4", "jitterlab")).all()
    counts = table[["events", "detours_above_1us", "detours_above_10us",
                    "detours_above_100us", "detours_above_1ms"]].to_numpy()
    assert (np.diff(counts, axis=1) <= 0).all()  # fewer detours above each longer length
    assert (table["noise_s"] < table["duration_s"]).all()
    assert ((table["max_detour_s"] > 1e-3) == (table["detours_above_1ms"] > 0)).all()


def test_record_script_keeps_measurements_it_does_not_record(script, tmp_path):
    # the ROSS runs were recorded by hand: the program's manifest and PROVENANCE.md must
    # keep their entry and their section when it rewrites them
    shipped = json.loads((datasets.DATA_DIR / "measured" / "manifest.json").read_text())
    script.write_manifest(tmp_path, shipped)
    kept = json.loads((tmp_path / "manifest.json").read_text())
    assert [e["kind"] for e in kept["files"]] == [e["kind"] for e in shipped["files"]]
    assert kept["files"][-1]["kind"] == "ross_phold"
    provenance = (tmp_path / "PROVENANCE.md").read_text()
    assert "## ROSS PHOLD runs" in provenance
    shipped_text = (datasets.DATA_DIR / "measured" / "PROVENANCE.md").read_text()

    def without_date(text):
        return [line for line in text.splitlines() if "Last update" not in line]

    assert without_date(provenance) == without_date(shipped_text)


def test_interleaved_mpi_pairs_hold_together():
    # data/mpi_interleaved (issue #18, notebook 12): every pair has both arms of its
    # experiment, started A then B; every run's file is there and its time in phases is the
    # one in the table
    folder = datasets.DATA_DIR / "mpi_interleaved"
    table = pd.read_csv(folder / "runs.csv")
    arms = {"injection": ("clean", "injected"), "pinning": ("pinned", "unpinned"),
            "recording": ("plain", "kernel_events")}
    assert set(table["experiment"]) == set(arms)
    for experiment, part in table.groupby("experiment"):
        for _, pair in part.groupby("pair"):
            assert tuple(pair.sort_values("started_at")["arm"]) == arms[experiment]
    recorded = table[table["arm"] == "kernel_events"]
    assert (recorded["kernel_events"] > 0).all() and (recorded["kernel_events_lost"] == 0).all()
    for row in table.iloc[::7].itertuples():  # a sample of the files: reading is slow
        events = jl.bench.read_bsp(folder / row.file)
        assert events.attrs["measured_duration"] == pytest.approx(row.time_in_phases_s,
                                                                  abs=1e-6)
        assert events.attrs["injector"] == (row.arm == "injected")
        assert events.attrs["pinned"] == (row.arm != "unpinned")
