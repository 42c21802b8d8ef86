"""The interleaved recordings of notebooks 06 and 07 (data/interleaved_06_07, recorded by
``python -m jitterlab.recipes.interleaved_06_07``): recorded as declared in
data/interleaved_06_07.md, complete and readable."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import jitterlab as jl
from jitterlab.recipes.interleaved_06_07 import EXPERIMENTS, batch_order

DATA = Path(__file__).resolve().parents[1] / "data"
FOLDER = DATA / "interleaved_06_07"

RUNS = pd.read_csv(FOLDER / "runs.csv")


def test_batch_orders_are_mirrored():
    assert batch_order("setups") == ["wait_bcast", "neither", "no_bcast", "no_wait",
                                     "no_wait", "no_bcast", "neither", "wait_bcast"]
    assert batch_order("quanta") == ["w300us", "w83ms", "w83ms", "w300us"]
    assert batch_order("tools") == ["sysjitter", "jitterlab", "jitterlab", "sysjitter"] * 2


@pytest.mark.parametrize(("experiment", "batches", "per_arm"),
                         [("setups", 2, 4), ("quanta", 2, 4), ("tools", 1, 4)])
def test_every_declared_run_was_recorded_in_its_order(experiment, batches, per_arm):
    rows = RUNS[RUNS["experiment"] == experiment]
    assert sorted(rows["batch"].unique()) == list(range(1, batches + 1))
    for _, batch in rows.groupby("batch"):
        assert list(batch.sort_values("position")["arm"]) == batch_order(experiment)
    assert rows["arm"].value_counts().to_dict() == dict.fromkeys(EXPERIMENTS[experiment],
                                                                 per_arm)
    # each batch under the lock took less than 3 min 15 s, and its load was recorded
    for _, batch in rows.groupby("batch"):
        start, end = (pd.to_datetime(batch[c], format="%H:%M:%S") for c in
                      ("start_utc", "end_utc"))
        assert (end.max() - start.min()).total_seconds() < 195
    assert rows[["load_before", "load_after", "other_cpu_s"]].notna().all().all()


def test_files_are_small():
    sizes = {f.name: f.stat().st_size for f in FOLDER.iterdir()}
    assert sizes and max(sizes.values()) < 2_000_000, sizes


@pytest.mark.parametrize("experiment", ["setups", "quanta"])
def test_pb_runs_are_whole_and_match_the_table(experiment):
    ds = xr.open_dataset(FOLDER / f"{experiment}.nc")
    rows = RUNS[RUNS["experiment"] == experiment]
    assert list(ds["run"].values) == list(rows["file"])
    assert ds.sizes["rank"] == 2
    for name in ds["run"].values:
        run = ds.sel(run=name)
        counts = run["iteration_hist"].values
        assert counts[:, -1].sum() == 0  # nothing beyond the last finite bin edge
        assert counts.sum(axis=1)[0] == counts.sum(axis=1)[1] > 50  # both ranks, same count
        raw = run["iteration"].sel(rank=0).dropna("sample").values
        assert 0 < raw.size <= 1000 and np.all(raw > 0)
        if name.endswith("w83ms.nc"):  # all raw samples kept: the raw samples are the run
            assert raw.size == counts[0].sum()
        compute = run["compute"].sel(rank=0).dropna("sample").values
        assert compute.size == raw.size and np.all(compute > 0)


def test_detour_runs_read_back_with_page_first_rows():
    for _, row in RUNS[RUNS["experiment"] == "tools"].iterrows():
        trace = jl.read_trace(FOLDER / row["file"])
        assert 9.5 < trace.duration < 12 and trace.n_events > 1000
        assert np.all(trace.jitter_seconds >= 300e-9 * 0.99)
        if row["arm"] == "sysjitter":
            rows = np.asarray(trace.attrs["page_first_rows"], dtype=int)
            assert np.all(rows >= 8521) and np.all((rows - 73) % 256 == 0)
