"""Per-operation times of the schedule kernel (kernel.simulate_with_times).

Hand-computed times of two small schedules, with LogGOPSim's default costs
(L = 2500, o = 1500, g = 1000, G = 6 ns, O = 0, S = 65 535 B), and, on a Schedgen2
schedule of tests/data/goal under noise, the times' own consistency: recording them
changes no rank's end, each rank's end is its latest CPU end, and the CPU intervals of
one CPU never overlap.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import jitterlab as jl
from jitterlab.schedules import CALC, RECV, SEND, kernel
from jitterlab.sim.event_queue import CHUNKS_FULL, FIFO_FULL
from jitterlab.sim.schedules.event_loop import HEAP_FULL, run_in_room, simulate_with_matches
from jitterlab.sim.schedules.parking import parking_allowed

NS = 1000  # ticks per ns at the default 1 ps resolution
DATA = Path(__file__).parent / "data" / "goal"


def run(schedule, params, mode=kernel.NO_NOISE, delta=None, times=True):
    n, p = schedule.n_operations, schedule.num_ranks
    out = kernel.new_operation_times(n if times else 0)
    end = np.zeros(p, dtype=np.int64)
    zeros = np.zeros(max(p, 2), dtype=np.int64)
    delta = np.zeros(0, dtype=np.int64) if delta is None else delta
    done, _, left = kernel.simulate_with_times(
        *kernel.schedule_arguments(schedule, params), mode, zeros[:2], zeros[:2],
        zeros[:p], delta, out, end)
    assert done == n and left == 0
    return out, end


def test_ping_times():
    ping = jl.Schedule(2, kind=[SEND, RECV], rank=[0, 1], peer=[1, 0], size=[8, 8])
    times, end = run(ping, jl.LogGOPS.from_loggopsim())
    arrival = (1500 + 2500) * NS
    assert times[kernel.START].tolist() == [0, 0]
    assert times[kernel.CPU_START].tolist() == [0, arrival]
    assert times[kernel.CPU_END].tolist() == [1500 * NS, arrival + (1500 + 7 * 6) * NS]
    assert times[kernel.NOISE].tolist() == [0, 0]
    assert times[kernel.COMPLETE].tolist() == times[kernel.CPU_END].tolist()
    assert end.tolist() == times[kernel.CPU_END].tolist()


def test_message_before_its_receive():
    """Rank 1 computes 10 µs, then posts its receive: the message (there at 4 µs) is
    taken when the CPU frees, and the receive completes when posted."""
    s = jl.Schedule(2, kind=[SEND, CALC, RECV], rank=[0, 1, 1], peer=[1, -1, 0],
                    size=[8, 0, 8], duration=[0.0, 10e-6, 0.0],
                    requires=jl.schedules.dependencies_from_pairs(3, [2], [1]))
    times, _ = run(s, jl.LogGOPS.from_loggopsim())
    free = 10_000 * NS
    assert times[:, 2].tolist() == [free, free, free + 1542 * NS, 0, free]
    assert times[:, 1].tolist() == [0, 0, free, 0, free]


def test_delta_noise_is_recorded():
    ping = jl.Schedule(2, kind=[SEND, RECV], rank=[0, 1], peer=[1, 0], size=[8, 8])
    delta = np.array([7, 0, 0, 0], dtype=np.int64) * NS  # the send's own CPU use
    times, _ = run(ping, jl.LogGOPS.from_loggopsim(), kernel.DELTA, delta)
    assert times[kernel.NOISE].tolist() == [7 * NS, 0]
    assert times[kernel.CPU_END, 0] == (1500 + 7) * NS


def test_times_are_consistent_under_noise():
    schedule = jl.read_goal(DATA / "allreduce_recdoub_compute_64_8b.goal.gz")
    params = jl.LogGOPS.from_loggopsim(S=256)
    n = schedule.n_operations
    delta = np.random.default_rng(23).integers(0, 5_000 * NS, 2 * n)
    times, end = run(schedule, params, kernel.DELTA, delta)
    _, plain_end = run(schedule, params, kernel.DELTA, delta, times=False)
    np.testing.assert_array_equal(end, plain_end)
    assert np.all(times >= 0)
    cpu_end = times[kernel.CPU_END]
    np.testing.assert_array_equal(np.maximum.reduceat(cpu_end, schedule.rank_offsets[:-1]),
                                  end)
    assert np.all(times[kernel.CPU_END] - times[kernel.CPU_START] >= times[kernel.NOISE])
    for r in range(schedule.num_ranks):
        mine = slice(schedule.rank_offsets[r], schedule.rank_offsets[r + 1])
        order = np.argsort(times[kernel.CPU_START, mine], kind="stable")
        begin, finish = times[kernel.CPU_START, mine][order], cpu_end[mine][order]
        assert np.all(begin[1:] >= finish[:-1]), f"rank {r}: CPU intervals overlap"


def test_matched_send_of_each_receive():
    """Two wildcard receives on rank 0: the first takes rank 1's message (sent at 0),
    the second rank 2's (sent after a 10 µs calc); the kernel names the matched send of
    each receive in the schedule's numbering (also when renumbered step-major)."""
    from jitterlab.sim.schedules import ANY_SOURCE, ANY_TAG
    s = jl.Schedule(3, kind=[RECV, RECV, SEND, CALC, SEND], rank=[0, 0, 1, 2, 2],
                    peer=[ANY_SOURCE, ANY_SOURCE, 0, -1, 0], size=[8, 8, 8, 0, 8],
                    tag=[ANY_TAG, ANY_TAG, 0, 0, 0], duration=[0, 0, 0, 10e-6, 0],
                    requires=jl.schedules.dependencies_from_pairs(5, [4], [3]))
    for step_major in (False, True):
        args = kernel.schedule_arguments(s, jl.LogGOPS.from_loggopsim(),
                                         step_major=step_major)
        matched = np.zeros(5, dtype=np.int64)
        zeros = np.zeros(3, dtype=np.int64)
        done, _, left = kernel.simulate_with_matches(
            *args, kernel.NO_NOISE, zeros[:2], zeros[:2], zeros, zeros[:0],
            kernel.new_operation_times(0), matched, zeros.copy(), True)
        assert done == 5 and left == 0
        assert matched.tolist() == [2, 4, -1, -1, -1]


#: the all-to-alls are retry storms (16 ranks: about 500 retries per host, up to 15
#: parked at once; the 64-rank storm, 620 928 retries, checked the same but took most
#: of this test's 24-30 s in CI)
PARKING_CASES = ["alltoall_linear_compute_16_8b", "alltoall_linear_compute_16_32768b",
                 "allreduce_recdoub_compute_64_8b", "bcast_binomialtree_64_4096b"]


@pytest.mark.parametrize("case", PARKING_CASES)
def test_parked_retries_change_nothing(case):
    """Retries parked per host (event_loop's ``park``, the default) give the same times,
    matches, ends and event count as retries queued one by one as in LogGOPSim, without
    noise, under a noise trace and under δ noise, with LogGOPSim's default costs and
    with parameter set C of the references (O = 10 ns/B, S = 256 B)."""
    schedule = jl.read_goal(DATA / f"{case}.goal.gz")
    n, p = schedule.n_operations, schedule.num_ranks
    rng = np.random.default_rng(610)
    none = np.zeros(2, dtype=np.int64)
    trace_start = np.arange(101, dtype=np.int64) * 37_000 * NS
    trace_duration = np.full(101, 3_000 * NS, dtype=np.int64)
    noises = [(kernel.NO_NOISE, none, none, np.zeros(p, dtype=np.int64), none[:0]),
              (kernel.TRACE, trace_start, trace_duration,
               rng.integers(0, trace_start[-1], p), none[:0]),
              (kernel.DELTA, none, none, np.zeros(p, dtype=np.int64),
               rng.integers(0, 4_000 * NS, 2 * n))]
    sends = int(np.count_nonzero(schedule.kind == SEND))
    for params in (jl.LogGOPS.from_loggopsim(),
                   jl.LogGOPS.from_loggopsim(L=1000, o=800, g=100, G=25, O=10, S=256)):
        args = kernel.schedule_arguments(params=params, schedule=schedule)
        assert parking_allowed(args.kind, args.size, args.calc, args.n_cpus, args.overhead,
                               args.gap, args.gap_per_byte, args.overhead_per_byte,
                               kernel.DELTA, none, noises[2][4])
        for mode, trace_start_, trace_duration_, rank_time, delta in noises:
            found = []
            for park in (True, False):
                times = kernel.new_operation_times(n)
                matched = np.zeros(n, dtype=np.int64)
                end = np.zeros(p, dtype=np.int64)
                result = simulate_with_matches(*args, mode, trace_start_, trace_duration_,
                                               rank_time, delta, times, matched, end, park)
                found.append((result, times, matched, end))
            (parked, *arrays), (queued, *reference) = found
            assert parked == queued and parked[0] == n and parked[2] == 0
            for mine, theirs in zip(arrays, reference, strict=True):
                np.testing.assert_array_equal(mine, theirs)
            if case.startswith("alltoall"):  # there were retries to park, many per host
                assert parked[1] > n + sends + 100 * p


def zero_byte_ring(p):
    """Each rank sends 0 B to the next, receives from the previous and computes 1 µs
    after its send: under O > o a 0-byte send frees its CPU before it began (LogGOPSim's
    unsigned arithmetic), so the calc is an event dated in the past (the heap)."""
    ranks = np.repeat(np.arange(p), 3)
    kind = np.tile([SEND, RECV, CALC], p)
    peer = np.stack([(np.arange(p) + 1) % p, (np.arange(p) - 1) % p,
                     np.full(p, -1)], axis=1).ravel()
    sends = np.arange(p) * 3
    return jl.Schedule(p, kind=kind, rank=ranks, peer=peer, size=np.zeros(3 * p, dtype=int),
                       duration=np.tile([0.0, 0.0, 1e-6], p),
                       requires=jl.schedules.dependencies_from_pairs(3 * p, sends + 2, sends))


@pytest.mark.parametrize("case", ["allreduce_recdoub_compute_64_8b", "zero_byte_ring"])
def test_full_queue_room_is_reported_and_more_changes_nothing(case):
    """The event loop's queue arrays have fixed sizes (``run_in_room``): a run that fills
    one stops with its code, and runs with more of it (doubled, as
    ``simulate_with_matches`` does) give the same times, matches, ends and event count
    as the bounds ``simulate_with_matches`` starts from."""
    if case == "zero_byte_ring":
        schedule, params = zero_byte_ring(40), jl.LogGOPS.from_loggopsim(O=2000)
    else:
        schedule, params = jl.read_goal(DATA / f"{case}.goal.gz"), jl.LogGOPS.from_loggopsim()
    n, p = schedule.n_operations, schedule.num_ranks
    args = kernel.schedule_arguments(schedule, params)
    none = np.zeros(2, dtype=np.int64)
    noise = (kernel.DELTA, none, none, np.zeros(p, dtype=np.int64),
             np.random.default_rng(23).integers(0, 2_000 * NS, 2 * n))

    def outputs():
        return kernel.new_operation_times(n), np.zeros(n, dtype=np.int64), np.zeros(
            p, dtype=np.int64)

    reference = outputs()
    expected = simulate_with_matches(*args, *noise, *reference, True)
    assert expected[0] == n and expected[2] == 0
    room = np.array([1, 1, 1, 0])  # park; fifo entries, chunk rows, heap entries
    full = []
    while True:
        found = outputs()
        result = run_in_room(*args, *noise, *found, room)
        if result[3] == 0:
            break
        full.append(result[3])
        where = {FIFO_FULL: 1, CHUNKS_FULL: 2, HEAP_FULL: 3}[result[3]]
        room[where] = max(2 * room[where], 1)
    assert result[:3] == expected
    for mine, theirs in zip(found, reference, strict=True):
        np.testing.assert_array_equal(mine, theirs)
    assert FIFO_FULL in full and CHUNKS_FULL in full
    if case == "zero_byte_ring":
        assert HEAP_FULL in full


def test_written_out_sorts_keep_their_order():
    """The event queue's heapsort (sort_keys: radix_take's fifo when a bucket's keys came
    out of stamp order) sorts exactly like NumPy and leaves the rest of the array alone;
    std_sort_with (libstdc++'s std::sort with its work array given) puts equal kinds in
    the same order as std_sort, also when the array is reused for many sorts."""
    from jitterlab.sim.event_queue import sort_keys
    from jitterlab.sim.schedules.sorting import new_sort_stack, std_sort, std_sort_with
    rng = np.random.default_rng(11)
    stack = new_sort_stack()
    for n in [0, 1, 2, 3, 16, 17, 18, 33, 100, 1000]:
        keys = rng.integers(0, 40, n + 3)
        if n % 2:
            keys[:n].sort()
        got = keys.copy()
        sort_keys(got, n)
        np.testing.assert_array_equal(got[:n], np.sort(keys[:n]))
        np.testing.assert_array_equal(got[n:], keys[n:])
        kind = rng.integers(1, 4, 2000).astype(np.int8)
        buf = rng.permutation(2000)[:n + 4].astype(np.int64)
        expected, got = buf.copy(), buf.copy()
        std_sort(expected, 2, 2 + n, kind)
        std_sort_with(got, 2, 2 + n, kind, stack)
        np.testing.assert_array_equal(got, expected)
        assert np.all(np.diff(kind[got[2:2 + n]]) >= 0)
