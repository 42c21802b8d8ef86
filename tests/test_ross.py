"""ROSS's end-of-run statistics and the shipped PHOLD runs (seed 004, issue #12)."""

from __future__ import annotations

from pathlib import Path

import pytest

import jitterlab as jl
from jitterlab.datasets import load_ross_phold

DATA = Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize("name, run", [("ross_phold_seq.txt", 1), ("ross_phold_opt2.txt", 3)])
def test_real_output_gives_the_shipped_row(name, run):
    summary = jl.io.read_ross_summary(DATA / name)
    row = load_ross_phold().set_index("run").loc[run]
    for key in ("committed_events", "event_rate_per_s", "efficiency_percent", "rollbacks",
                "gvt_computations", "running_time_s", "pes", "gvt_interval", "batch",
                "end_time"):
        assert summary[key] == pytest.approx(row[key], rel=1e-9), key
    # the rate ROSS prints is committed events over its running time
    assert summary["event_rate_per_s"] == pytest.approx(
        summary["committed_events"] / summary["running_time_s"], rel=1e-4)


def test_the_shipped_runs_hold_together():
    table = load_ross_phold()
    assert table["run"].is_unique and (table["run"].diff().dropna() == 1).all()
    runs = table[table["run"] <= 85]  # issue #12
    assert len(runs) == 85
    assert set(runs["pes"]) == {1, 2, 4}
    assert runs["oversubscribed"].astype(bool).eq(runs["pes"] > 2).all()
    assert ((runs["efficiency_percent"] > 0) & (runs["efficiency_percent"] <= 100)).all()
    assert table.attrs["provenance"]["kind"] == "ross_phold"


@pytest.mark.parametrize("first, last", [(86, 140), (141, None)])
def test_the_appended_grid_holds_together(first, last):
    # issue #18: appended after run 85, on the loaded machine (runs 86-140, the last repeat
    # cut short) and again with the ranks boosted (from 141, complete repeats); every
    # configuration of the grid in every repeat (round robin), ROSS's rate = committed /
    # running time, efficiency = 1 - rolled back / committed as ROSS defines it (negative
    # when more roll back than commit)
    table = load_ross_phold()
    grid = table[(table["run"] >= first) & (table["run"] <= (last or table["run"].max()))]
    assert len(grid) >= 25 and set(grid["pes"]) == {1, 2}
    per_repeat = grid.groupby("repeat")["config"].agg(list)
    assert per_repeat.map(len).max() == grid["config"].nunique() == 25
    complete = per_repeat if last is None else per_repeat.iloc[:-1]
    assert (complete.map(len) == 25).all()  # only the loaded set's last is cut short
    rate = grid["committed_events"] / grid["running_time_s"]
    assert (abs(rate / grid["event_rate_per_s"] - 1) < 1e-3).all()
    efficiency = 100 * (1 - grid["events_rolled_back"] / grid["committed_events"])
    assert (abs(efficiency - grid["efficiency_percent"]) < 0.006).all()
    assert set(grid["start_events"]) == {1, 10}
    assert (grid["other_cpu_s"] >= -0.05).all()
    boosted = grid["command"].str.contains("/proc/$$/autogroup", regex=False)
    assert boosted.all() if last is None else not boosted.any()


def test_output_that_did_not_finish_is_refused(tmp_path):
    text = (DATA / "ross_phold_opt2.txt").read_text()
    cut = text[: text.index("Net Events Processed")]
    with pytest.raises(ValueError, match="committed_events"):
        jl.io.read_ross_summary(cut)
    broken = tmp_path / "broken.txt"
    broken.write_text(cut)
    with pytest.raises(ValueError, match="broken.txt"):
        jl.io.read_ross_summary(broken)
    with pytest.raises(TypeError, match="source"):
        jl.io.read_ross_summary(42)
