"""simulate_schedule(..., detail="events") and EventTrace.to_schedule (issue #23).

The event traces of small schedules are computed by hand under LogGOPSim's default costs
(L = 2500, o = 1500, g = 1000, G = 6 ns, O = 0): a message of s bytes whose send starts
at t reaches its receiver at t + o + L and takes o + (s − 1)·G of the receiver's CPU.
"""

from __future__ import annotations

import numpy as np
import pytest

import jitterlab as jl
from jitterlab.schedules import CALC, RECV, SEND, dependencies_from_pairs, programs

NS = 1e-9
PARAMS = jl.LogGOPS.from_loggopsim()


class FixedDraws:
    """A noise 'law' that hands out given δ [s] (the first n: each operation's own CPU
    use, the next n: the taking of send i's message), to place noise by hand."""

    def __init__(self, values):
        self.values = np.asarray(values, dtype=float)

    def sample(self, count, rng=None):
        assert count == self.values.size
        return self.values


def ping_pong():
    """Rank 0: calc 10 µs, send 8 B to 1, receive 8 B from 1; rank 1: receive, calc
    5 µs, send back."""
    return jl.Schedule(2, kind=[CALC, SEND, RECV, RECV, CALC, SEND],
                       rank=[0, 0, 0, 1, 1, 1], peer=[-1, 1, 1, 0, -1, 0],
                       size=[0, 8, 8, 8, 0, 8], duration=[10e-6, 0, 0, 0, 5e-6, 0],
                       requires=dependencies_from_pairs(6, [1, 2, 4, 5], [0, 1, 3, 4]))


def rows(events):
    data = events.data
    return [(int(r.rank), r.kind, round(r.start / NS), round(r.end / NS), int(r.peer),
             round(r.noise_combined / NS)) for r in data.itertuples()]


def test_ping_pong_by_hand():
    events = jl.simulate_schedule(ping_pong(), PARAMS, detail="events")
    assert isinstance(events, jl.EventTrace)
    # rank 1 takes the message at 10 000 + 1 500 + 2 500 = 14 000 for 1 500 + 7·6 ns,
    # computes to 20 542, sends until 22 042; the reply arrives at 24 542
    assert rows(events) == [
        (0, "compute", 0, 10_000, -1, 0), (0, "send", 10_000, 11_500, 1, 0),
        (0, "recv", 11_500, 26_084, 1, 0),
        (1, "recv", 0, 15_542, 0, 0), (1, "compute", 15_542, 20_542, -1, 0),
        (1, "send", 20_542, 22_042, 0, 0)]
    assert events.latency == pytest.approx(2500 * NS)
    assert events.attrs["makespan"] == pytest.approx(26_084 * NS)


def test_noise_by_hand_and_the_estimate():
    """3 µs of noise in rank 1's calc delays everything after it by 3 µs; the timeline
    approximation (seed 003) must find exactly that cost."""
    delta = np.zeros(12)
    delta[4] = 3000 * NS
    events = jl.simulate_schedule(ping_pong(), PARAMS, noise=FixedDraws(delta),
                                  detail="events")
    assert rows(events)[4] == (1, "compute", 15_542, 23_542, -1, 3000)
    assert rows(events)[2] == (0, "recv", 11_500, 29_084, 1, 0)
    assert events.attrs["makespan"] - events.attrs["noiseless_makespan"] == \
        pytest.approx(3000 * NS)
    cost = jl.estimate.accumulated_noise(events)["run_accumulated"].values[0]
    assert cost == pytest.approx(3000 * NS, abs=1e-15)


def test_noise_in_taking_a_message():
    """δ of the taking of send 1's message (index n + 1) is the receive's noise."""
    delta = np.zeros(12)
    delta[6 + 1] = 700 * NS
    events = jl.simulate_schedule(ping_pong(), PARAMS, noise=FixedDraws(delta),
                                  detail="events")
    assert rows(events)[3] == (1, "recv", 0, 15_542 + 700, 0, 700)


def test_repeated_tags_get_one_trace_tag_per_message():
    """Two messages 0 -> 1 with GOAL tag 5: trace tags 5 and 5 + 2**32, as
    jl.io.read_otf2_events numbers them."""
    s = jl.Schedule(2, kind=[SEND, SEND, RECV, RECV], rank=[0, 0, 1, 1], peer=[1, 1, 0, 0],
                    size=8, tag=5, requires=dependencies_from_pairs(4, [1, 3], [0, 2]))
    events = jl.simulate_schedule(s, PARAMS, detail="events")
    assert events.data["tag"].tolist() == [5, 5 + 2**32, 5, 5 + 2**32]


@pytest.mark.parametrize("make", [
    lambda: programs.round_collective(6, 20e-6, 3),
    lambda: programs.round_collective(5, 20e-6, 2, kind="recursive_doubling"),
    lambda: programs.tree_barrier(7, 2, 20e-6, 2),
    lambda: programs.wavefront(3, 2, 2, 20e-6),
    ping_pong,
])
def test_round_trip(make):
    """schedule -> noisy run as events -> to_schedule -> quiet run == the quiet run."""
    schedule = make()
    quiet = jl.simulate_schedule(schedule, PARAMS)["end"].values[0]
    events = jl.simulate_schedule(schedule, PARAMS, noise=jl.noise.Exponential(mean=2e-6),
                                  rng=3, detail="events")
    assert events.attrs["makespan"] > events.attrs["noiseless_makespan"]
    size = int(schedule.size.max())
    replay = events.to_schedule(message_size=size)
    again = jl.simulate_schedule(replay, PARAMS)["end"].values[0]
    np.testing.assert_array_equal(np.rint(again / 1e-12), np.rint(quiet / 1e-12))


def test_events_refuse_what_a_trace_cannot_hold():
    wildcard = jl.Schedule(2, kind=[SEND, RECV], rank=[0, 1], peer=[1, -1], size=[8, 8])
    with pytest.raises(ValueError, match="wildcard"):
        jl.simulate_schedule(wildcard, PARAMS, detail="events")
    two_cpus = jl.Schedule(1, kind=[CALC, CALC], rank=[0, 0], duration=[1e-6, 1e-6],
                           cpu=[0, 1])
    with pytest.raises(ValueError, match="cpu 0"):
        jl.simulate_schedule(two_cpus, PARAMS, detail="events")
    with pytest.raises(ValueError, match="runs=1"):
        jl.simulate_schedule(ping_pong(), PARAMS, runs=2, detail="events")


def test_to_schedule_of_an_otf2_trace():
    """The shipped OTF2 test trace: compute becomes calc without its noise, the two
    messages 0 -> 1 with MPI tag 5 keep tag 5, the collective a dissemination barrier."""
    from pathlib import Path

    events = jl.io.read_otf2_events(Path(__file__).parent / "data" / "events_small.otf2")
    schedule = events.to_schedule(message_size=8)
    first = events.data.iloc[0]
    calc = schedule.duration[0]
    assert calc == pytest.approx(first.end - first.start - first.noise_tick
                                 - first.noise_daemon)
    rank0 = schedule.rank == 0
    assert schedule.tag[rank0 & (schedule.kind == SEND)][:2].tolist() == [5, 5]
    # 3 ranks: a dissemination barrier of 2 rounds, a send and a receive each
    assert schedule.counts()["send"] == 3 + 3 * 2
    ds = jl.simulate_schedule(schedule, PARAMS)
    assert float(ds["makespan"][0]) > float(schedule.duration[schedule.rank == 2].sum())
    with pytest.raises(ValueError, match="message_size"):
        events.to_schedule(message_size=-1)


def test_any_order_receives_wait_side_by_side():
    import pandas as pd

    frame = pd.DataFrame({
        "rank": [0, 0, 0, 1, 2], "seq": [0, 1, 2, 0, 0],
        "kind": ["recv", "recv", "compute", "send", "send"],
        "start": [0.0, 1.0, 2.0, 0.0, 0.0], "end": [1.0, 2.0, 3.0, 0.5, 0.5],
        "peer": [1, 2, -1, 0, 0], "tag": [0, 0, 0, 0, 0],
        "any_order": [True, True, False, False, False],
        "noise_combined": 0.0})
    schedule = jl.EventTrace(frame).to_schedule()
    # the receives wait for nothing, the compute for both
    offsets, targets = schedule.requires_offsets, schedule.requires
    assert offsets[:4].tolist() == [0, 0, 0, 2]
    assert sorted(targets[:2].tolist()) == [0, 1]
