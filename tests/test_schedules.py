"""GOAL schedules: the columnar Schedule, the GOAL reader and writer, the LogGOPS
parameters and the schedule simulator (checked against LogGOPSim's own outputs)."""

from __future__ import annotations

import numpy as np
import pytest

import jitterlab as jl
from jitterlab.sim.schedules import (
    CALC,
    RECV,
    SEND,
    DeadlockError,
    GoalSyntaxError,
    LogGOPS,
    dependencies_from_pairs,
    simulate_schedule,
)

SMALL = """\
num_ranks 3
// a comment line
rank 0 {
a: send 8b to 1 tag 5
b: calc 100 cpu 1
c: recv 16b from -1 tag -1 cpu 1 nic 2
/* a block
   comment */ d: send 70000b to 2
b requires a
c irequires b
d requires a
d requires b
}
rank 1 {
x: recv 8b from 0 tag 5
y: send 16b to 0 tag 7
y requires x
}
rank 2 {
recv 70000b from 0
}
"""


def write(tmp_path, text, name="s.goal"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_read_goal_columns(tmp_path):
    s = jl.read_goal(write(tmp_path, SMALL))
    assert s.num_ranks == 3 and s.n_operations == 7
    assert s.kind.tolist() == [SEND, CALC, RECV, SEND, RECV, SEND, RECV]
    assert s.rank.tolist() == [0, 0, 0, 0, 1, 1, 2]
    assert s.peer.tolist() == [1, -1, -1, 2, 0, 0, 0]
    assert s.size.tolist() == [8, 0, 16, 70000, 8, 16, 70000]
    assert s.tag.tolist() == [5, 0, -1, 0, 5, 7, 0]
    assert s.duration[1] == pytest.approx(100e-9, rel=1e-15)
    assert s.cpu.tolist() == [0, 1, 1, 0, 0, 0, 0]
    assert s.nic.tolist() == [0, 0, 2, 0, 0, 0, 0]
    assert s.requires_offsets.tolist() == [0, 0, 1, 1, 3, 3, 4, 4]
    assert s.requires.tolist() == [0, 0, 1, 4]
    assert s.irequires_offsets.tolist() == [0, 0, 0, 1, 1, 1, 1, 1]
    assert s.irequires.tolist() == [1]
    assert s.rank_offsets.tolist() == [0, 4, 6, 7]
    assert s.counts() == {"send": 3, "recv": 3, "calc": 1}


def test_goal_round_trip_and_refusal(tmp_path):
    s = jl.read_goal(write(tmp_path, SMALL))
    out = tmp_path / "out.goal.gz"
    s.to_goal(out)
    assert jl.read_goal(out) == s
    with pytest.raises(FileExistsError):
        s.to_goal(out)
    s.to_goal(out, overwrite=True)
    assert jl.read_goal(out) == s


@pytest.mark.parametrize("text, message", [
    ("num_ranks 2\nrank 0 {\nsend 8b to 5\n}\nrank 1 {\n}\n", "line 3, rank 0"),
    ("num_ranks 2\nrank 0 {\n}\nrank 1 {\na requires b\n}\n", "line 5, rank 1"),
    ("num_ranks 2\nrank 1 {\n}\n", "line 2: rank 1 where rank 0"),
    ("num_ranks 1\nrank 0 {\nl1: send 8 to 0\n}\n", "expected 'b'"),
    ("num_ranks 1\nrank 0 {\nl1: calc 5 nic 1\n}\n", "line 3, rank 0"),
    ("num_ranks 2\nrank 0 {\n}\n", "ends after rank 0"),
    ("num_ranks 1\nrank 0 {\nl1: send 1b to -1\n}\n", "destination"),
])
def test_read_goal_errors_name_file_line_rank(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(GoalSyntaxError, match=message) as info:
        jl.read_goal(path)
    assert str(path) in str(info.value)


def test_schedule_checks():
    with pytest.raises(ValueError, match="ranks must not decrease"):
        jl.Schedule(2, kind=[CALC, CALC], rank=[1, 0])
    with pytest.raises(ValueError, match="another rank"):
        jl.Schedule(2, kind=[CALC, CALC], rank=[0, 1],
                    requires=dependencies_from_pairs(2, [1], [0]))
    with pytest.raises(ValueError, match="sends to rank 4"):
        jl.Schedule(2, kind=[SEND], rank=[0], peer=[4])


# --------------------------------------------------------------------------------------
# the simulator against LogGOPSim on a schedule that the shipped references do not cover:
# wildcard source and tag (LogGOPSim's list matching), two CPUs and two NICs, irequires,
# rendezvous and eager messages, calcs. Reference: LogGOPSim commit 76451de (built as in
# tests/data/goal/PROVENANCE.md), `txt2bin -i wild.goal -o wild.bin; LogGOPSim -f
# wild.bin <set>`, 2026-11-25; its "Host i" lines for the two parameter sets below.
WILDCARDS = """\
num_ranks 4
rank 0 {
a: recv 8b from -1 tag -1
b: recv 100b from -1 tag 3
c: recv 5000b from 2 tag -1 cpu 1 nic 1
d: calc 700 cpu 1
e: send 5000b to 3 tag 9 cpu 1 nic 1
f: calc 250
g: recv 8b from 1 tag -1
g requires f
d requires c
e irequires d
f requires a
f requires b
}
rank 1 {
a: send 8b to 0 tag 1
b: send 100b to 0 tag 3
c: calc 1200
d: send 8b to 0 tag 4
c requires a
d requires c
}
rank 2 {
a: calc 400
b: send 5000b to 0 tag 7
c: recv 8b from -1 tag -1
b requires a
}
rank 3 {
a: recv 5000b from 0 tag 9
b: send 8b to 2 tag 0
b irequires a
}
"""
WILDCARD_REFERENCE = [
    ((2500, 1500, 1000, 6, 1, 4096), [40922, 5813, 8441, 36194]),
    ((1000, 800, 100, 25, 10, 256), [133050, 4730, 52165, 128275]),
]


@pytest.mark.parametrize("loggopsim, ends", WILDCARD_REFERENCE)
def test_wildcards_cpus_nics_equal_loggopsim(tmp_path, loggopsim, ends):
    schedule = jl.read_goal(write(tmp_path, WILDCARDS))
    ds = simulate_schedule(schedule, LogGOPS.from_loggopsim(*loggopsim))
    assert ds.attrs["matching"].startswith("wildcards")
    assert np.rint(ds["end"].values[0] * 1e9).astype(np.int64).tolist() == ends
    assert int(np.rint(float(ds["makespan"][0]) * 1e9)) == max(ends)


def ping(size, **options):
    return jl.Schedule(2, kind=[SEND, RECV], rank=[0, 1], peer=[1, 0], size=[size, size],
                       **options)


@pytest.mark.parametrize("size", [1, 8, 5000, 100_000])
def test_ping_is_one_way_time(size):
    params = LogGOPS(L=3e-6, o=1e-6, g=2e-6, G=2e-9, O=5e-10, S=4096)
    ds = simulate_schedule(ping(size), params)
    receiver_end = float(ds["end"].sel(rank=1)[0])
    assert receiver_end == pytest.approx(params.one_way(size), rel=1e-12)
    sender_end = float(ds["end"].sel(rank=0)[0])
    # eager: the sender's CPU is free after o + (s−1)O; rendezvous: held until the match
    expected = params.o + (size - 1) * params.O if params.eager(size) else \
        max(params.o + (size - 1) * params.O, params.o + params.L)
    assert sender_end == pytest.approx(expected, rel=1e-12)


def test_loggops_and_message_one_vocabulary():
    params = LogGOPS(L=5e-6, o=1e-6, g=3e-6, G=1e-9, S=1024)
    message = params.to_message(size=64)
    assert (message.send, message.recv, message.latency, message.per_byte,
            message.eager_limit) == (params.o, params.o, params.L, params.G, params.S)
    back = LogGOPS.from_message(message, g=params.g)
    assert back == params
    assert LogGOPS.from_message(message).g == 0.0
    assert LogGOPS.from_message(back.to_message()).to_message() == back.to_message()
    # the one difference: LogGOPSim charges (s − 1)·G per message, Message s·G
    assert message.one_way - params.one_way(64) == pytest.approx(params.G, rel=1e-9)
    # a Message passed to the simulator is its LogGOPS point with g = 0
    by_message = simulate_schedule(ping(64), message)
    by_params = simulate_schedule(ping(64), LogGOPS.from_message(message))
    assert by_message["end"].equals(by_params["end"])
    with pytest.raises(ValueError, match="per byte"):
        LogGOPS(L=1e-6, o=1e-6, g=0, G=0, O=1e-9).to_message()
    with pytest.raises(ValueError, match="one overhead"):
        LogGOPS.from_message(jl.Message(send=1e-6, recv=2e-6))


def test_loggopsim_command_line_round_trip():
    params = LogGOPS.from_loggopsim(L=2500, o=1500, g=1000, G=6, O=1, S=4096)
    assert params.loggopsim_arguments() == ["-L", "2500", "-o", "1500", "-g", "1000",
                                            "-G", "6", "-O", "1", "-S", "4096"]
    with pytest.raises(ValueError, match="whole number of nanoseconds"):
        LogGOPS(L=1.5e-10, o=0, g=0, G=0).loggopsim_arguments()


def test_receive_without_send_is_a_deadlock():
    lonely = jl.Schedule(2, kind=[RECV, CALC], rank=[0, 1], peer=[1, -1], size=[8, 0],
                         duration=[0, 1e-6])
    with pytest.raises(DeadlockError, match="rank 0, operation 0, a recv"):
        simulate_schedule(lonely, LogGOPS(L=1e-6, o=1e-6, g=0, G=0))


def test_noise_law_and_trace_only_lengthen():
    schedule = jl.Schedule(2, kind=[CALC, SEND, RECV, CALC], rank=[0, 0, 1, 1],
                           peer=[-1, 1, 0, -1], size=[0, 8, 8, 0],
                           duration=[5e-6, 0, 0, 2e-6],
                           requires=dependencies_from_pairs(4, [1, 3], [0, 2]))
    params = LogGOPS.from_loggopsim()
    quiet = float(simulate_schedule(schedule, params)["makespan"][0])
    law = jl.noise.Exponential(mean=1e-6)
    noisy = simulate_schedule(schedule, params, noise=law, runs=200, rng=5)
    assert noisy["noiseless_makespan"] == pytest.approx(quiet)
    assert np.all(noisy["makespan"].values >= quiet)
    # the critical path meets three draws: the 5 µs calc, the receive's o and the 2 µs
    # calc (the send's o does not delay the message: it leaves o + L after the send
    # starts); so the mean extra time is 3 × 1 µs, within 5 Monte Carlo standard errors
    extra = noisy["makespan"].values - quiet
    assert abs(extra.mean() - 3e-6) < 5 * extra.std() / np.sqrt(extra.size)
    again = simulate_schedule(schedule, params, noise=law, runs=200, rng=5)
    assert again["makespan"].equals(noisy["makespan"])
    trace = jl.Trace(jitter=[3e-6] * 50, gap=[97e-6] * 50)
    traced = simulate_schedule(schedule, params, noise=trace, runs=100, rng=1)
    assert np.all(traced["makespan"].values >= quiet)
    assert traced["makespan"].values.max() > quiet


STEP_MAJOR_CASES = ["allreduce_recdoub_compute_64_8b", "alltoall_linear_compute_16_32768b",
                    "bcast_binomialtree_1024_4096b", "allreduce_ring_16_32768b"]


@pytest.mark.parametrize("name", STEP_MAJOR_CASES + ["wildcards"])
def test_step_major_numbering_changes_no_time(tmp_path, name):
    """The kernel's step-major renumbering (used from STEP_MAJOR_FROM_RANKS ranks on)
    gives every operation's times and every rank's end exactly as the schedule's own
    numbering, without noise, with δ noise (indexed like the schedule) and with a noise
    trace; eager and rendezvous messages, wildcards, several CPUs and NICs."""
    from pathlib import Path

    from jitterlab.sim.schedules import kernel
    if name == "wildcards":
        schedule = jl.read_goal(write(tmp_path, WILDCARDS))
    else:
        schedule = jl.read_goal(Path(__file__).parent / "data" / "goal" / f"{name}.goal.gz")
    params = LogGOPS.from_loggopsim(S=256, O=1)
    n, p = schedule.n_operations, schedule.num_ranks
    rng = np.random.default_rng(7)
    trace_start = np.cumsum(rng.integers(50_000, 150_000, 400) * 1000).astype(np.int64)
    trace_duration = rng.integers(1_000, 20_000, 400).astype(np.int64) * 1000
    rank_time = rng.integers(0, int(trace_start[-1]), p).astype(np.int64)
    delta = rng.integers(0, 3_000_000, 2 * n).astype(np.int64)
    none = np.zeros(2, dtype=np.int64)
    for mode, trace, offsets, draws in (
            (kernel.NO_NOISE, (none, none), np.zeros(p, np.int64), delta[:0]),
            (kernel.DELTA, (none, none), np.zeros(p, np.int64), delta),
            (kernel.TRACE, (trace_start, trace_duration), rank_time, delta[:0])):
        found = []
        for step_major in (True, False):
            args = kernel.schedule_arguments(schedule, params, step_major=step_major)
            times, end = kernel.new_operation_times(n), np.zeros(p, dtype=np.int64)
            done, _, left = kernel.simulate_with_times(*args, mode, *trace, offsets, draws,
                                                       times, end)
            assert done == n and left == 0
            found.append((times, end))
        np.testing.assert_array_equal(found[0][0], found[1][0])
        np.testing.assert_array_equal(found[0][1], found[1][1])
