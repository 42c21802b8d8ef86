"""LogGOPSim -V timelines read as event traces (jl.io.read_loggopsim_timeline).

Fixtures: real LogGOPSim output (tests/data/loggopsim_timelines.md says how it was made).
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import numpy as np
import pytest

import jitterlab as jl

DATA = Path(__file__).parent / "data"
LATENCY = 5e-6  # -L 5000 [s]
CASES = ("loggopsim_dissemination8", "loggopsim_ring8")


def read(stem: str, run: str) -> jl.EventTrace:
    return jl.io.read_loggopsim_timeline(DATA / f"{stem}_{run}.viz.gz",
                                         DATA / f"{stem}.goal.gz", latency=LATENCY)


def printed(stem: str, run: str) -> tuple[np.ndarray, np.ndarray | None]:
    """LogGOPSim's printed end per rank and noise per rank [ns]."""
    text = (DATA / f"{stem}_{run}.out").read_text()
    ends = np.array([int(v) for v in re.findall(r"Host \d+: (\d+)", text)])
    noise = re.search(r"noise per rank: ([\d,]+)", text)
    per_rank = (np.array([int(v) for v in noise.group(1).strip(",").split(",")])
                if noise else None)
    return ends, per_rank


@pytest.mark.parametrize("stem", CASES)
@pytest.mark.parametrize("run", ["quiet", "noisy"])
def test_ends_are_loggopsims(stem, run):
    events = read(stem, run)
    ends, _ = printed(stem, run)
    last = events.data.groupby("rank")["end"].max().to_numpy()
    np.testing.assert_array_equal(np.rint(last * 1e9).astype(np.int64), ends)
    assert round(events.attrs["makespan"] * 1e9) == ends.max()


@pytest.mark.parametrize("stem", CASES)
def test_noise_per_rank_is_what_loggopsim_injected(stem):
    events = read(stem, "noisy")
    _, injected = printed(stem, "noisy")
    held = events.data.groupby("rank")["noise_combined"].sum().to_numpy()
    absorbed = events.attrs["absorbed_noise"]
    assert injected is not None and injected.sum() > 0
    np.testing.assert_array_equal(np.rint(held * 1e9).astype(np.int64), injected)
    assert absorbed == 0.0  # in these two runs no noise fell while a rank waited


@pytest.mark.parametrize("stem", CASES)
def test_quiet_run_has_no_noise_and_nothing_to_remove(stem):
    events = read(stem, "quiet")
    assert events.noise("combined").max() == 0.0
    ds = jl.estimate.accumulated_noise(events, sources="combined")
    assert float(ds["run_accumulated"][0]) == 0.0


@pytest.mark.parametrize("stem", CASES)
def test_structure_follows_the_schedule(stem):
    events = read(stem, "noisy")
    goal = gzip.decompress((DATA / f"{stem}.goal.gz").read_bytes()).decode()
    rank0 = goal.split("rank 1 {")[0]
    written = re.findall(r"^l\d+: (calc|send|recv)", rank0, flags=re.M)
    data = events.data[events.data["rank"] == 0]
    # every noise after a send is a compute interval of its own: drop those
    after_send = (data["kind"].shift(1) == "send") & (data["kind"] == "compute")
    kinds = data.loc[~after_send, "kind"].astype(str).str.replace("compute", "calc")
    assert kinds.tolist() == written
    sends = events.data[events.data["kind"] == "send"]
    assert sends["tag"].is_unique and len(sends) == (events.data["kind"] == "recv").sum()


def test_estimate_is_close_to_loggopsims_cost():
    """Truth: noisy − noiseless makespan of LogGOPSim; the estimate misses only the
    overhead of messages taken up ahead of their receive (1 µs each, see the docstring)."""
    for stem in CASES:
        truth = read(stem, "noisy").attrs["makespan"] - read(stem, "quiet").attrs["makespan"]
        ds = jl.estimate.accumulated_noise(read(stem, "noisy"), sources="combined")
        estimate = float(ds["run_accumulated"][0])
        assert truth > 0
        assert 0 <= truth - estimate <= 0.05 * truth


def test_unexpected_message_is_refused():
    with pytest.raises(ValueError, match="unexpected message"):
        jl.io.read_loggopsim_timeline(DATA / "loggopsim_ring8_late_quiet.viz.gz",
                                      DATA / "loggopsim_ring8_late.goal.gz", latency=LATENCY)


def test_bad_input(tmp_path):
    goal = DATA / "loggopsim_ring8.goal.gz"
    viz = gzip.decompress((DATA / "loggopsim_ring8_noisy.viz.gz").read_bytes()).decode()
    bad = tmp_path / "bad.viz"
    bad.write_text(viz.replace("osend 3 0", "osend 3 1", 1))
    with pytest.raises(ValueError, match="CPU 1"):
        jl.io.read_loggopsim_timeline(bad, goal, latency=LATENCY)
    bad.write_text(viz + "garbage 1 2;\n")
    with pytest.raises(ValueError, match="expected a LogGOPSim -V line"):
        jl.io.read_loggopsim_timeline(bad, goal, latency=LATENCY)
    bad.write_text("\n".join(viz.split("\n")[:-40]))  # truncated: messages never received
    with pytest.raises(ValueError, match="bad.viz"):
        jl.io.read_loggopsim_timeline(bad, goal, latency=LATENCY)
    with pytest.raises(ValueError, match="took less than the latency"):
        jl.io.read_loggopsim_timeline(DATA / "loggopsim_ring8_noisy.viz.gz", goal, latency=1e-3)
    with pytest.raises(ValueError, match="latency"):
        jl.io.read_loggopsim_timeline(DATA / "loggopsim_ring8_noisy.viz.gz", goal,
                                      latency=-1.0)
    with pytest.raises(ValueError, match="ranks"):
        jl.io.read_loggopsim_timeline(DATA / "loggopsim_ring8_noisy.viz.gz",
                                      _other_size_goal(tmp_path), latency=LATENCY)


def _other_size_goal(tmp_path) -> Path:
    path = tmp_path / "four.goal"
    path.write_text("num_ranks 4\n" + "".join(f"rank {r} {{\nl1: calc 1\n}}\n" for r in range(4)))
    return path


# A timeline written by hand in LogGOPSim's -V format (not LogGOPSim output): rank 1's
# message reaches rank 0 during its computation; LogGOPSim takes it up when the CPU is free
# (at 100 ns), before rank 0's sends, and 50 ns of noise strike its processing.
HAND_VIZ = """numranks 2;
loclop 0 0 0 100 1 0 0;
osend 1 0 0 1 0 0 1;
noise 1 0 1 1 0 1 0;
loclop 1 0 1 201 1 0 0;
transmission 1 0 1 100 1 0 0 0 1;
orecv 0 0 100 101 0 0 1;
noise 0 0 101 151 0 1 0;
osend 0 0 151 152 0 0 1;
noise 0 0 152 152 0 1 0;
osend 0 0 152 153 0 0 1;
noise 0 0 153 153 0 1 0;
transmission 0 1 152 201 1 0 0 0 1;
orecv 1 0 201 202 0 0 1;
noise 1 0 202 202 0 1 0;
transmission 0 1 153 202 1 0 0 0 1;
orecv 1 0 202 203 0 0 1;
noise 1 0 203 203 0 1 0;
"""
HAND_GOAL = """num_ranks 2
rank 0 {
l1: calc 100
l2: send 1b to 1 tag 0
l2 requires l1
l3: send 1b to 1 tag 1
l3 requires l2
l4: recv 1b from 1 tag 0
}
rank 1 {
l1: send 1b to 0 tag 0
l2: calc 200
l2 requires l1
l3: recv 1b from 0 tag 0
l4: recv 1b from 0 tag 1
}
"""


def test_message_taken_up_early_keeps_its_noise_in_a_gap(tmp_path):
    (tmp_path / "hand.viz").write_text(HAND_VIZ)
    (tmp_path / "hand.goal").write_text(HAND_GOAL)
    events = jl.io.read_loggopsim_timeline(tmp_path / "hand.viz", tmp_path / "hand.goal",
                                           latency=5e-9)
    rank0 = events.data[events.data["rank"] == 0]
    assert rank0["kind"].astype(str).tolist() == ["compute", "compute", "send", "send", "recv"]
    gap = rank0.iloc[1]
    assert (gap["start"], gap["end"]) == pytest.approx((100e-9, 151e-9), abs=1e-15)
    assert gap["noise_combined"] == pytest.approx(50e-9, abs=1e-15)
    assert rank0.iloc[4]["start"] == rank0.iloc[4]["end"]  # taken up before it was reached
    assert events.attrs["absorbed_noise"] == 0.0
    assert events.noise("combined").sum() == pytest.approx(50e-9, abs=1e-15)
