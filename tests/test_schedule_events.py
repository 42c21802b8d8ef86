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


# --------------------------------------------------------------------------------------
# receives of any source or any tag: each message event pairs the send that the receive
# really took (the kernel records it). Rank 0 takes two messages of any source and tag,
# 50 µs apart, then one of tag 3 from rank 1 and, 30 µs later, one of any tag from
# rank 1. LogGOPSim's list matching: rank 2's message (sent at 0) is first and goes to
# the first wildcard receive, rank 1's (sent after 20 µs) to the second; the receive of
# tag 3 skips the tag-7 message that waits before it, the any-tag receive takes that
# one. The 5000-byte messages are rendezvous (S < 5000), so a sender is done only when
# its message is matched: the ends show the matching. Reference: LogGOPSim commit
# 76451de (built as in tests/data/goal/PROVENANCE.md), `txt2bin -i wild.goal -o
# wild.bin; LogGOPSim -f wild.bin -L . -o . -g . -G . -O . -S .`, 2026-11-26; its
# "Host i" lines, for WILDCARDS and for it with the sources of the first two receives
# swapped (SWAPPED) or the tags of the last two (TAGS_SWAPPED).
WILDCARDS = """\
num_ranks 3
rank 0 {
a: recv 5000b from -1 tag -1
b: calc 50000
c: recv 5000b from -1 tag -1
d: recv 8b from 1 tag 3
e: calc 30000
f: recv 5000b from 1 tag -1
b requires a
c requires b
d requires c
e requires d
f requires e
}
rank 1 {
a: calc 20000
b: send 5000b to 0 tag 1
c: send 5000b to 0 tag 7
d: send 8b to 0 tag 3
e: calc 1000
b requires a
c requires b
d requires b
e requires c
}
rank 2 {
a: send 5000b to 0 tag 2
b: calc 1000
b requires a
}
"""
EXPLICIT = {"a: recv 5000b from -1 tag -1": "a: recv 5000b from 2 tag 2",
            "c: recv 5000b from -1 tag -1": "c: recv 5000b from 1 tag 1",
            "f: recv 5000b from 1 tag -1": "f: recv 5000b from 1 tag 7"}
SWAPPED = {"a: recv 5000b from -1 tag -1": "a: recv 5000b from 1 tag 1",
           "c: recv 5000b from -1 tag -1": "c: recv 5000b from 2 tag 2"}
TAGS_SWAPPED = {"d: recv 8b from 1 tag 3": "d: recv 5000b from 1 tag 7",
                "f: recv 5000b from 1 tag -1": "f: recv 8b from 1 tag 3"}
ONE_SIZE = {"d: recv 8b from 1 tag 3": "d: recv 5000b from 1 tag 3",
            "d: send 8b to 0 tag 3": "d: send 5000b to 0 tag 3"}
#: (L, o, g, G, O, S) [ns, B] -> LogGOPSim's ends of WILDCARDS (= EXPLICIT), SWAPPED,
#: TAGS_SWAPPED [ns]
WILDCARD_REFERENCE = [
    ((2500, 1500, 1000, 6, 1, 4096), [180024, 181024, 7499], [180024, 181024, 117988],
     [180024, 118995, 7499]),
    ((1000, 800, 100, 25, 10, 256), [460100, 461100, 51790], [460100, 461100, 304350],
     [460100, 304520, 51790]),
]


def goal_schedule(tmp_path, replace=None):
    text = WILDCARDS
    for old, new in (replace or {}).items():
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "wild.goal"
    path.write_text(text)
    return jl.read_goal(path)


def ends_ns(schedule, params):
    ends = jl.simulate_schedule(schedule, params)["end"].values[0]
    return np.rint(ends / NS).astype(np.int64).tolist()


@pytest.mark.parametrize("loggopsim, ends, swapped, tags_swapped", WILDCARD_REFERENCE)
def test_wildcard_matching_is_loggopsims(tmp_path, loggopsim, ends, swapped, tags_swapped):
    params = jl.LogGOPS.from_loggopsim(*loggopsim)
    assert ends_ns(goal_schedule(tmp_path), params) == ends
    assert ends_ns(goal_schedule(tmp_path, EXPLICIT), params) == ends
    assert ends_ns(goal_schedule(tmp_path, SWAPPED), params) == swapped
    assert ends_ns(goal_schedule(tmp_path, TAGS_SWAPPED), params) == tags_swapped


@pytest.mark.parametrize("loggopsim", [case[0] for case in WILDCARD_REFERENCE])
@pytest.mark.parametrize("noise", [None, jl.noise.Exponential(mean=2e-6)])
def test_wildcard_events_pair_the_messages_taken(tmp_path, loggopsim, noise):
    """The event trace of the wildcard schedule is that of the schedule with the matched
    sources and tags written out (same noise draws), and each receive names the sender
    and the trace tag of the message it took."""
    params = jl.LogGOPS.from_loggopsim(*loggopsim)
    wild = jl.simulate_schedule(goal_schedule(tmp_path), params, noise=noise, rng=5,
                                detail="events")
    explicit = jl.simulate_schedule(goal_schedule(tmp_path, EXPLICIT), params, noise=noise,
                                    rng=5, detail="events")
    columns = ["rank", "seq", "kind", "start", "end", "peer", "tag", "noise_combined"]
    assert wild.data[columns].equals(explicit.data[columns])
    received = wild.data[(wild.data["rank"] == 0) & (wild.data["kind"] == "recv")]
    assert list(zip(received["peer"], received["tag"], strict=True)) == \
        [(2, 2), (1, 1), (1, 3), (1, 7)]
    sent = wild.data[wild.data["kind"] == "send"]
    assert sorted(zip(sent["rank"], sent["tag"], strict=True)) == [(1, 1), (1, 3), (1, 7), (2, 2)]
    assert wild.attrs["matching"].startswith("wildcards")
    if noise is not None:
        assert wild.attrs["makespan"] > wild.attrs["noiseless_makespan"]


def test_wildcard_events_feed_the_estimate_and_replay(tmp_path):
    """3 µs of noise in rank 0's first calc (operation 1) delays rank 0 and rank 1 by
    3 µs: the timeline approximation of the wildcard run finds exactly that on rank 0
    (it follows messages from sender to receiver; rank 1 waits for its rendezvous
    message to be matched, which an event trace does not show, so it is not seen
    there). With eager messages (S above 5000 B) the trace replayed quiet
    (to_schedule: explicit receives, operations in trace order) runs as the schedule
    did; with rendezvous it would deadlock, as the trace puts rank 1's two sends in a
    row (tag 7 before tag 3) and rank 0 takes tag 3 first."""
    params = jl.LogGOPS.from_loggopsim(*WILDCARD_REFERENCE[0][0])
    schedule = goal_schedule(tmp_path)
    n = schedule.n_operations
    assert schedule.kind[1] == CALC and schedule.rank[1] == 0
    delta = np.zeros(2 * n)
    delta[1] = 3000 * NS
    events = jl.simulate_schedule(schedule, params, noise=FixedDraws(delta), detail="events")
    assert events.attrs["makespan"] - events.attrs["noiseless_makespan"] == \
        pytest.approx(3000 * NS)
    cost = jl.estimate.accumulated_noise(events).sel(source="combined")
    assert float(cost["accumulated"].sel(rank=0)) == pytest.approx(3000 * NS, abs=1e-15)
    assert round(float(cost["approximated_end"].sel(rank=0)) / NS) == \
        WILDCARD_REFERENCE[0][1][0]
    eager = jl.LogGOPS.from_loggopsim(*WILDCARD_REFERENCE[0][0][:5], S=None)
    schedule = goal_schedule(tmp_path, ONE_SIZE)  # to_schedule gives every message one size
    events = jl.simulate_schedule(schedule, eager, noise=FixedDraws(delta), detail="events")
    replay = events.to_schedule(message_size=5000)
    assert not np.any((replay.kind == RECV) & ((replay.peer < 0) | (replay.tag < 0)))
    quiet = jl.simulate_schedule(schedule, eager)["end"].values[0]
    again = jl.simulate_schedule(replay, eager)["end"].values[0]
    np.testing.assert_array_equal(np.rint(again / 1e-12), np.rint(quiet / 1e-12))


def test_pairs_from_the_kernel_are_checked(tmp_path):
    from jitterlab.sim.schedules.tracing import check_matches

    schedule = goal_schedule(tmp_path)
    receive = np.flatnonzero(schedule.kind == RECV)
    send = np.flatnonzero(schedule.kind == SEND)
    good = np.full(schedule.n_operations, -1)
    good[receive] = send[[3, 0, 2, 1]]  # a <- rank 2, c <- 1:b, d <- 1:d, f <- 1:c
    assert check_matches(schedule, good).tolist() == good.tolist()
    bad = good.copy()
    bad[receive[2]] = send[1]  # the receive of tag 3 cannot take tag 7
    with pytest.raises(ValueError, match="paired with"):
        check_matches(schedule, bad)
    twice = good.copy()
    twice[receive[1]] = send[3]
    with pytest.raises(ValueError, match="exactly one"):
        check_matches(schedule, twice)
