"""The ROSS PHOLD runner ``python -m jitterlab.recipes.run_ross_phold`` (issue #12; until
2026-11-26 ``data/run_ross_phold.py``), without ROSS.

``tests/data/ross_phold_output.txt`` is the unchanged output (stdout, then a
``--- stderr ---`` line) of a short run of the rebuilt ROSS 8.1.1 (commit dc3a6a0, built as
``data/measured/PROVENANCE.md`` says) on 2026-11-22: the ``opt2_r10`` configuration with
``--end=10`` (its first line is the command). ``ross_phold_seq.txt`` and
``ross_phold_opt2.txt`` are runs 1 and 3 of the shipped table (see ``ross_phold_files.md``).
"""

from __future__ import annotations

import csv
import dataclasses
import re
import subprocess
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest

from jitterlab import datasets

DATA = Path(__file__).resolve().parent / "data"
SHIPPED = datasets.DATA_DIR / "measured" / "ross_phold_runs.csv"
ROSS_BUILD = Path("/tmp/ross-build")  # as in the shipped commands
MPIEXEC = Path("/work/main/.venv/bin/mpiexec")
CONFIG_COLUMNS = ["config", "pes", "synch", "remote_percent", "gvt_interval", "batch", "nlp",
                  "nkp", "start_events", "mean", "end_time", "extramem", "bind_to_core",
                  "noise", "oversubscribed", "command"]


@pytest.fixture(scope="module")
def runner():
    from jitterlab.recipes import run_ross_phold

    return run_ross_phold


@pytest.fixture(scope="module")
def shipped():
    """The shipped table as text, exactly as written."""
    return pd.read_csv(SHIPPED, dtype=str, keep_default_na=False)


def _short_opt2(runner):
    return dataclasses.replace(runner.BY_NAME["opt2_r10"], end_time=10)


def test_parses_a_real_output(runner):
    text = (DATA / "ross_phold_output.txt").read_text()
    config = _short_opt2(runner)
    command = runner.ross_command(config, ROSS_BUILD, MPIEXEC)
    assert text.splitlines()[0].strip() == " ".join(command[3:])  # ROSS prints its argv
    stats = runner.parse_output(text, config)
    assert set(stats) == set(runner.STATISTICS)
    assert all(isinstance(stats[key], int) for key in stats if key not in (
        "event_rate_per_s", "efficiency_percent", "running_time_s"))
    assert stats["committed_events"] == 94901
    assert stats["total_events_processed"] == 94901
    assert stats["event_rate_per_s"] == pytest.approx(1000021.1)
    assert stats["efficiency_percent"] == pytest.approx(100.0)
    assert stats["rollbacks"] == 0 and stats["events_rolled_back"] == 0
    assert stats["remote_network_events"] == 3696
    assert stats["gvt_computations"] == 12
    assert stats["all_reduce_calls"] == 36
    assert stats["forced_gvt"] == 0
    assert stats["running_time_s"] == pytest.approx(0.0949)
    # the printed rate is committed events over the running time, printed to 0.1 ms
    assert stats["event_rate_per_s"] == pytest.approx(
        stats["committed_events"] / stats["running_time_s"], rel=0.00005 / 0.0949)
    # every remote event crossed the network once: as many sends as network events
    sends = re.search(r"Remote sends\s+([0-9]+)", text)
    assert int(sends.group(1)) == stats["remote_network_events"]


def test_refuses_an_unfinished_run_or_another_configuration(runner):
    text = (DATA / "ross_phold_output.txt").read_text()
    config = _short_opt2(runner)
    with pytest.raises(ValueError, match="committed_events"):
        runner.parse_output(text[: text.index("Net Events Processed")], config)
    with pytest.raises(ValueError, match="end_time = 10.0.*'opt2_r10' has 300"):
        runner.parse_output(text, runner.BY_NAME["opt2_r10"])
    with pytest.raises(ValueError, match="pes = 2.*'seq' has 1"):
        runner.parse_output(text, runner.BY_NAME["seq"])


@pytest.mark.parametrize("name, first, last, build, autogroup_nice", [
    ("issue12", 1, 85, ROSS_BUILD, None),
    ("issue18", 86, 140, Path("/work/ext/ross/build"), None),  # the loaded machine
    ("issue18", 141, None, Path("/work/ext/ross/build"), -20)])  # again, ranks boosted
def test_configurations_are_the_shipped_ones(runner, shipped, name, first, last, build,
                                             autogroup_nice):
    # each set's configurations in the shipped table's order of first appearance, their
    # columns and their commands as written, character for character
    run = shipped["run"].astype(int)
    rows = shipped[(run >= first) & (run <= (last or run.max()))]
    table = rows[CONFIG_COLUMNS].drop_duplicates().reset_index(drop=True)
    assert table["config"].is_unique and len(table) == len(runner.SETS[name])
    ours = []
    for config in runner.SETS[name]:
        command = runner.ross_command(config, build, MPIEXEC, autogroup_nice)
        row = runner.make_row(config, 1, 1, datetime.now().astimezone(),
                              dict.fromkeys(runner.STATISTICS, 0), dict.fromkeys(
                                  ("wall_s", "ross_cpu_s", "noise_cpu_s", "other_cpu_s",
                                   "load_before", "load_after"), 0.0), command)
        ours.append({key: row[key] for key in CONFIG_COLUMNS})
    pd.testing.assert_frame_equal(pd.DataFrame(ours), table)
    assert tuple(shipped.columns) == runner.COLUMNS


@pytest.mark.parametrize("name, run", [("ross_phold_seq.txt", 1), ("ross_phold_opt2.txt", 3)])
def test_rows_are_written_as_the_shipped_ones(runner, shipped, name, run):
    # from ROSS's output and the runner's measurements of a shipped run, the same CSV line
    line = shipped.set_index("run").loc[str(run)]
    config = runner.BY_NAME[line["config"]]
    stats = runner.parse_output((DATA / name).read_text(), config)
    measured = {key: float(line[key]) for key in ("wall_s", "ross_cpu_s", "noise_cpu_s",
                                                  "other_cpu_s", "load_before", "load_after")}
    row = runner.make_row(config, run, int(line["repeat"]),
                          datetime.fromisoformat(line["started_at"]), stats, measured,
                          runner.ross_command(config, ROSS_BUILD, MPIEXEC))
    assert row == {"run": str(run), **line.to_dict()}


def test_appending_keeps_earlier_rows(runner, shipped, tmp_path):
    path = tmp_path / "runs.csv"
    earlier = SHIPPED.read_text().splitlines(keepends=True)[:4]
    path.write_text("".join(earlier))
    rows = [shipped.iloc[i].to_dict() for i in (10, 20)]
    for row in rows:
        runner.append_row(path, row)
    text = path.read_text()
    assert text.startswith("".join(earlier))
    assert len(runner.read_done(path)) == 3 + 2
    # a new file gets the header once
    fresh = tmp_path / "fresh.csv"
    for row in rows:
        runner.append_row(fresh, row)
    with fresh.open(newline="") as f:
        assert list(csv.DictReader(f)) == rows
    assert fresh.read_text().count("run,config,") == 1


def test_refuses_a_table_with_other_columns(runner, tmp_path):
    other = tmp_path / "other.csv"
    other.write_text("run,config\n1,seq\n")
    with pytest.raises(ValueError, match="other.csv has the columns"):
        runner.read_done(other)
    assert runner.read_done(tmp_path / "missing.csv") == []


def _fake_ross(tmp_path, end_time: str, status: int = 0) -> Path:
    """A ROSS build whose phold prints the captured output with another end time."""
    build = tmp_path / "build"
    phold = build / "models" / "phold" / "phold"
    phold.parent.mkdir(parents=True)
    phold.write_text(f"#!/bin/sh\nsed 's/Simulation End Time  *10.00/Simulation End Time "
                     f"{end_time}/' {DATA / 'ross_phold_output.txt'}\nexit {status}\n")
    phold.chmod(0o755)
    mpiexec = tmp_path / "mpiexec"
    mpiexec.write_text('#!/bin/sh\nshift 2\nexec "$@"\n')  # drops "-n 2"
    mpiexec.chmod(0o755)
    return build


@pytest.mark.parametrize("end_time, status, recorded", [
    ("300.00", 0, True),
    ("10.00", 0, False),  # ran another configuration
    ("300.00", 1, False),  # ROSS failed
])
def test_main_records_finished_runs_only(runner, tmp_path, capsys, end_time, status,
                                         recorded):
    build = _fake_ross(tmp_path, end_time, status)
    output = tmp_path / "runs.csv"
    first = SHIPPED.read_text().splitlines(keepends=True)[:2]
    output.write_text("".join(first))
    code = runner.main([str(output), "--reps", "2", "--only", "opt2_r10", "--ross-build",
                        str(build), "--mpiexec", str(tmp_path / "mpiexec"), "--work-dir",
                        str(tmp_path / "work")])
    printed = capsys.readouterr()
    rows = runner.read_done(output)
    assert output.read_text().startswith("".join(first))
    assert (code == 0) == recorded
    assert len(rows) == 1 + 2 * recorded
    assert len(list((tmp_path / "work" / "outputs").iterdir())) == 2  # both outputs kept
    if recorded:
        assert [(r["run"], r["repeat"]) for r in rows[1:]] == [("2", "2"), ("3", "3")]
        assert {r["committed_events"] for r in rows[1:]} == {"94901"}
        assert printed.out.count("opt2_r10") == 2
    else:
        assert printed.err.count("NOT RECORDED") == 2


def test_the_issue18_grid(runner):
    grid = runner.SETS["issue18"]
    assert len(grid) == 25 and len({c.name for c in grid}) == 25
    assert runner.SETS["issue12"] == runner.CONFIGURATIONS
    two = [c for c in grid if c.pes == 2]
    # every axis of the grid is covered on 2 PEs, optimistic, without injected noise
    assert {c.gvt_interval for c in two} == set(runner.GRID_GVT_INTERVALS)
    assert {c.remote_percent for c in two} == set(runner.GRID_REMOTE_PERCENTS)
    assert {c.batch for c in two} == set(runner.GRID_BATCHES)
    assert all(c.synch == 3 and c.noise is None for c in two)
    # the remote axis at gvt_interval 512, batch 4: all five shares, 10 events per LP
    axis = [c.remote_percent for c in two if (c.gvt_interval, c.batch, c.start_events)
            == (512, 4, 10)]
    assert sorted(axis) == [5, 10, 25, 50, 75]
    # the other workload: a tenth of the events per LP, ten times the end time
    other = [c for c in grid if c.start_events == 1]
    assert {c.end_time for c in other} == {500} and len(other) == 3
    assert {c.end_time for c in grid if c.start_events == 10} == {50}
    command = runner.ross_command(runner.BY_NAME["g2_r25_i2048_b16"], ROSS_BUILD, MPIEXEC)
    assert command[:3] == [str(MPIEXEC), "-n", "2"]
    assert "--gvt-interval=2048" in command and "--batch=16" in command
    assert "--remote=0.25" in command and "--end=50" in command


def test_disturbed_runs_are_flagged(runner, tmp_path, capsys):
    build = _fake_ross(tmp_path, "300.00")
    output = tmp_path / "runs.csv"
    busy = iter([0.0, 1e6] * 4)  # /proc/stat: far more busy time than ROSS used
    original = runner.busy_cpu_seconds
    runner.busy_cpu_seconds = lambda: next(busy)
    try:
        code = runner.main([str(output), "--reps", "1", "--only", "opt2_r10",
                            "--ross-build", str(build), "--mpiexec",
                            str(tmp_path / "mpiexec"), "--work-dir", str(tmp_path / "work")])
    finally:
        runner.busy_cpu_seconds = original
    printed = capsys.readouterr()
    assert code == 0
    row = runner.read_done(output)[0]
    assert runner.other_share(row) > runner.DISTURBED_SHARE
    assert "DISTURBED" in printed.out and "1 runs disturbed" in printed.err


def test_autogroup_nice_wraps_every_rank(runner):
    # the wrapper sets the nice value of the rank's own autogroup, then runs the command
    config = runner.BY_NAME["g2_r10_i8_b4"]
    plain = runner.ross_command(config, ROSS_BUILD, MPIEXEC)
    boosted = runner.ross_command(config, ROSS_BUILD, MPIEXEC, autogroup_nice=-20)
    assert boosted[:3] == plain[:3] == [str(MPIEXEC), "-n", "2"]
    assert boosted[3:6] == runner.with_autogroup_nice([], -20)
    assert boosted[6:] == plain[3:]
    sequential = runner.ross_command(runner.BY_NAME["g1_seq"], ROSS_BUILD, MPIEXEC, 5)
    assert sequential[:3] == ["sh", "-c", 'echo 5 > /proc/$$/autogroup && exec "$0" "$@"']


@pytest.mark.skipif(not Path("/proc/self/autogroup").exists(), reason="no autogroups")
def test_autogroup_nice_takes_effect(runner):
    # in a session of its own, the command sees its autogroup at the nice value given
    # (a positive one: lowering it needs no privilege)
    shown = subprocess.run(runner.with_autogroup_nice(["cat", "/proc/self/autogroup"], 7),
                           capture_output=True, text=True, start_new_session=True, check=True)
    assert shown.stdout.strip().endswith("nice 7")
