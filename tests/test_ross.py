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
    runs = load_ross_phold()
    assert len(runs) == 85
    assert set(runs["pes"]) == {1, 2, 4}
    assert runs["oversubscribed"].astype(bool).eq(runs["pes"] > 2).all()
    assert ((runs["efficiency_percent"] > 0) & (runs["efficiency_percent"] <= 100)).all()
    assert runs.attrs["provenance"]["kind"] == "ross_phold"


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
