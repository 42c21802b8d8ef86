"""The kernel's inputs from the tiled passes (jitterlab.sim.schedules.layout) equal those
laid out one by one (jitterlab.testing_layout: step_major_order, column copies,
successors, channels); the layout is kept with its schedule.

Checked on shipped Schedgen2 schedules, a generated 1 024-rank recursive doubling, a
schedule with wildcards, and a hand schedule with irequires, a dependency on a later
operation, ranks without operations, several CPUs and NICs and tags; both numberings
(step-major and the schedule's own).
"""

from __future__ import annotations

import copy
import gc
import pickle
import weakref
from pathlib import Path

import numpy as np
import pytest

import jitterlab as jl
from jitterlab.sim.schedules import (
    CALC,
    RECV,
    SEND,
    arguments,
    dependencies_from_pairs,
    generators,
)
from jitterlab.testing_layout import layout_reference

DATA = Path(__file__).parent / "data" / "goal"
PARAMS = jl.LogGOPS.from_loggopsim()


def hand_schedule():
    """Irequires, a requires of a later operation, ranks 2 and 5 without operations,
    two CPUs and NICs, several tags between the same ranks."""
    kind = [SEND, SEND, CALC, CALC, RECV, RECV, CALC, SEND, SEND, CALC, RECV, RECV]
    rank = [0, 0, 0, 0, 1, 1, 1, 3, 3, 4, 4, 4]
    peer = [1, 1, -1, -1, 0, 0, -1, 4, 4, -1, 3, 3]
    tag = [5, 7, 0, 0, 7, 5, 0, 1, 1, 0, 1, 1]
    size = [8, 100_000, 8, 0, 100_000, 8, 0, 64, 64, 0, 64, 64]
    cpu = [0, 1, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0]
    nic = [0, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1]
    duration = [0, 0, 0.5e-6, 3e-6, 0, 0, 2.5e-6, 0, 0, 1e-6, 0, 0]
    # 0 requires 3 (later), 4 requires 6 (later), 11 requires 10; 1 irequires 0,
    # 8 irequires 7, 9 is required by 10 and 11
    requires = dependencies_from_pairs(12, [0, 4, 11, 10, 11], [3, 6, 10, 9, 9])
    irequires = dependencies_from_pairs(12, [1, 8], [0, 7])
    return jl.Schedule(6, kind=kind, rank=rank, peer=peer, size=size, tag=tag,
                       duration=duration, cpu=cpu, nic=nic, requires=requires,
                       irequires=irequires)


def wildcard_schedule():
    return jl.Schedule(3, kind=[RECV, RECV, SEND, CALC, SEND], rank=[0, 0, 1, 2, 2],
                       peer=[-1, 2, 0, -1, 0], size=[8, 8, 8, 0, 8], tag=[-1, 3, 0, 0, 3],
                       duration=[0, 0, 0, 1e-6, 0],
                       requires=dependencies_from_pairs(5, [4], [3]))


CASES = {
    "recdoub_64": lambda: jl.read_goal(DATA / "allreduce_recdoub_compute_64_8b.goal.gz"),
    "alltoall_16": lambda: jl.read_goal(DATA / "alltoall_linear_compute_16_32768b.goal.gz"),
    "bcast_1024": lambda: jl.read_goal(DATA / "bcast_binomialtree_1024_4096b.goal.gz"),
    "ring_16": lambda: jl.read_goal(DATA / "allreduce_ring_16_32768b.goal.gz"),
    "recdoub_1024": lambda: generators.allreduce_recursive_doubling(1024, 8 * 1024),
    "hand": hand_schedule,
    "wildcards": wildcard_schedule,
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("step_major", [True, False])
def test_tiled_inputs_equal_the_one_by_one_functions(name, step_major):
    schedule = CASES[name]()
    args, longest = arguments.prepare_arguments(schedule, PARAMS, step_major=step_major)
    (offsets, placement, origin, columns, calc, waits, succ, isucc, channel,
     n_channels) = layout_reference(schedule, step_major)
    np.testing.assert_array_equal(args.rank_offsets, offsets)
    np.testing.assert_array_equal(args.placement, placement)
    np.testing.assert_array_equal(args.origin, origin)
    for field in ("kind", "rank", "peer", "size", "cpu", "nic"):
        np.testing.assert_array_equal(getattr(args, field), columns[field], err_msg=field)
        assert getattr(args, field).dtype == columns[field].dtype
    np.testing.assert_array_equal(args.calc, calc)
    assert longest == (int(calc.max()) if calc.size else 0)
    np.testing.assert_array_equal(args.waits, waits)
    for (offsets_, targets), (ref_offsets, ref_targets) in (
            ((args.succ_offsets, args.succ), succ), ((args.isucc_offsets, args.isucc), isucc)):
        np.testing.assert_array_equal(offsets_, ref_offsets)
        np.testing.assert_array_equal(targets, ref_targets)
    comm = columns["kind"] != CALC
    wildcard = np.any(comm & (columns["tag"] == -1)) or np.any(
        (columns["kind"] == RECV) & (columns["peer"] == -1))
    assert args.exact == (not wildcard)
    assert args.n_cpus == int(schedule.cpu.max()) + 1
    assert args.n_nics == int(schedule.nic.max()) + 1
    if args.exact:
        assert args.tag.size == 0
        assert np.all(args.channel[~comm] == -1)
        assert args.n_channels == n_channels
        # one channel id per (receiver, sender, tag): the same partition as channels()
        pairs = set(zip(args.channel[comm].tolist(), channel[comm].tolist(), strict=True))
        assert len(pairs) == n_channels
        assert len({mine for mine, _ in pairs}) == n_channels
    else:
        np.testing.assert_array_equal(args.tag, columns["tag"])
        receiver = np.where(columns["kind"] == SEND, columns["peer"], columns["rank"])
        np.testing.assert_array_equal(args.channel, receiver)
        assert args.n_channels == schedule.num_ranks


def test_hand_schedule_runs_the_same_in_both_numberings():
    """The hand schedule (later requires, irequires, empty ranks, two CPUs and NICs,
    a rendezvous message) gives every operation's times alike in both numberings."""
    from jitterlab.sim.schedules import kernel
    schedule = hand_schedule()
    n, p = schedule.n_operations, schedule.num_ranks
    params = jl.LogGOPS.from_loggopsim(S=256, O=1)
    none = np.zeros(2, dtype=np.int64)
    found = []
    for step_major in (True, False):
        args = kernel.schedule_arguments(schedule, params, step_major=step_major)
        times, end = kernel.new_operation_times(n), np.zeros(p, dtype=np.int64)
        done, _, left = kernel.simulate_with_times(*args, kernel.NO_NOISE, none, none,
                                                   np.zeros(p, np.int64), none[:0], times,
                                                   end)
        assert done == n and left == 0
        found.append((times, end))
    np.testing.assert_array_equal(found[0][0], found[1][0])
    np.testing.assert_array_equal(found[0][1], found[1][1])


def test_layout_is_kept_with_the_schedule_and_renewed_when_it_changes():
    """A second call on the same schedule reuses the layout (no second lay-out; the
    schedule's arrays are read-only); another resolution, a replaced array or
    forget_layout lays it out anew; simulation results do not change."""
    schedule = generators.allreduce_recursive_doubling(16, 8 * 16, compute=1e-6)
    first = jl.simulate_schedule(schedule, PARAMS)
    laid = arguments.schedule_layout(schedule)
    assert arguments.schedule_layout(schedule) is laid
    assert arguments.prepare_arguments(schedule, jl.LogGOPS.from_loggopsim(L=1000))[0].calc \
        is laid.calc
    for name in arguments.COLUMNS:
        assert not getattr(schedule, name).flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        schedule.duration[0] = 1.0
    again = jl.simulate_schedule(schedule, PARAMS)
    np.testing.assert_array_equal(again["end"], first["end"])
    assert arguments.schedule_layout(schedule, resolution=1e-9) is not laid
    arguments.forget_layout(schedule)
    fresh = arguments.schedule_layout(schedule)
    assert fresh is not laid
    np.testing.assert_array_equal(fresh.calc, laid.calc)
    longer = schedule.duration.copy()
    longer[longer > 0] *= 2
    schedule.duration = longer  # a replaced array: laid out again, with the new times
    assert arguments.schedule_layout(schedule).longest_calc == 2 * laid.longest_calc
    slower = jl.simulate_schedule(schedule, PARAMS)
    assert float(slower.makespan[0]) > float(first.makespan[0])
    copy = jl.Schedule(16, kind=schedule.kind, rank=schedule.rank, peer=schedule.peer,
                       size=schedule.size, tag=schedule.tag, duration=schedule.duration)
    assert copy.duration.flags.writeable  # a new schedule's arrays are its own, writable


def test_kept_layout_goes_with_its_schedule():
    """The layout is the schedule's own (``kept_layout``): freed by forget_layout and
    when the schedule is collected; pickles and copies leave it out (the pickle is as
    long as before the first call) and lay their arrays out again, to the same arrays."""
    schedule = generators.allreduce_recursive_doubling(16, 8 * 16, compute=1e-6)
    pickled = len(pickle.dumps(schedule))
    laid = arguments.schedule_layout(schedule)
    assert schedule.kept_layout.layout is laid
    assert len(pickle.dumps(schedule)) == pickled
    for other in (copy.copy(schedule), copy.deepcopy(schedule),
                  pickle.loads(pickle.dumps(schedule))):
        assert "kept_layout" not in vars(other) and other.kept_layout is None
        assert other == schedule
        again = arguments.schedule_layout(other)
        assert other.kept_layout.layout is again and again is not laid
        for field in arguments.LAYOUT_FIELDS:
            np.testing.assert_array_equal(getattr(again, field), getattr(laid, field))
    assert schedule.kept_layout.layout is laid  # the copies' calls left it alone
    calc = weakref.ref(laid.calc)
    del laid, again
    gc.collect()
    assert calc() is not None  # kept by the schedule
    arguments.forget_layout(schedule)
    gc.collect()
    assert calc() is None
    calc = weakref.ref(arguments.schedule_layout(schedule).calc)
    kept = weakref.ref(schedule.kept_layout)
    del schedule
    gc.collect()
    assert calc() is None and kept() is None
