"""jitterlab.sim.schedules.generators against LogGOPSim's generator Schedgen2.

Each case of tests/data/goal/cases.csv was written by Schedgen2 (see PROVENANCE.md there).
A shipped case is read with read_goal and compared with the generator's schedule field by
field (dependencies as sorted sets); a case too large to ship is compared by the SHA-256
of its canonical text, which jitterlab.recipes.make_goal_references computed from Schedgen2's file.
Cases above 300 000 operations run only with JITTERLAB_GOAL_LARGE=1 (they take minutes).
"""

from __future__ import annotations

import csv
import hashlib
import os
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from jitterlab.sim.schedules import CALC, RECV, SEND, read_goal
from jitterlab.sim.schedules import generators as gen

DATA = Path(__file__).parent / "data" / "goal"
with open(DATA / "cases.csv", newline="") as _f:
    CASES = list(csv.DictReader(_f))
SCHEDGEN2 = [c for c in CASES if c["generator"] == "Schedgen2"]
LARGE = os.environ.get("JITTERLAB_GOAL_LARGE") == "1"
MAX_OPERATIONS = 300_000
NAMES = {SEND: "send", RECV: "recv", CALC: "calc"}


def generate(case: dict):
    """The generator's schedule for the Schedgen2 arguments of a case."""
    ranks, datasize = int(case["ranks"]), int(case["datasize"])
    compute = int(case["compute_ns"]) * 1e-9
    which = (case["collective"], case["pattern"])
    if which == ("allreduce", "ring"):
        return gen.allreduce_ring(ranks, datasize, compute=compute)
    if which == ("allreduce", "recdoub"):
        return gen.allreduce_recursive_doubling(ranks, datasize, compute=compute)
    if which == ("bcast", "binomialtree"):
        return gen.broadcast_binomial(ranks, datasize)
    if which == ("reduce", "binomialtree"):
        return gen.reduce_binomial(ranks, datasize)
    if which == ("alltoall", "linear"):
        return gen.alltoall_linear(ranks, datasize, compute=compute)
    raise KeyError(which)


def dependency_set(offsets, targets) -> np.ndarray:
    """Sorted unique (dependent, prerequisite) pairs, shape (m, 2)."""
    owner = np.repeat(np.arange(offsets.size - 1), np.diff(offsets))
    return np.unique(np.stack([owner, targets], axis=1), axis=0)


def assert_same(found, expected):
    assert found.num_ranks == expected.num_ranks
    for field in ("kind", "rank", "peer", "size", "tag", "cpu", "nic"):
        np.testing.assert_array_equal(getattr(found, field), getattr(expected, field),
                                      err_msg=field)
    np.testing.assert_array_equal(np.rint(found.duration * 1e9),
                                  np.rint(expected.duration * 1e9), err_msg="duration")
    for name in ("requires", "irequires"):
        np.testing.assert_array_equal(
            dependency_set(getattr(found, f"{name}_offsets"), getattr(found, name)),
            dependency_set(getattr(expected, f"{name}_offsets"), getattr(expected, name)),
            err_msg=name)


def canonical_sha256(schedule) -> str:
    """SHA-256 of the canonical text (jitterlab.recipes.make_goal_references.canonical_text)."""
    offsets = schedule.rank_offsets
    local = np.arange(schedule.n_operations) - offsets[schedule.rank]
    ns = np.rint(schedule.duration * 1e9).astype(np.int64)
    edges = [[] for _ in range(schedule.num_ranks)]
    for name in ("irequires", "requires"):
        pairs = dependency_set(getattr(schedule, f"{name}_offsets"), getattr(schedule, name))
        for a, b in pairs.tolist():
            edges[int(schedule.rank[a])].append((int(local[a]), name, int(local[b])))
    lines = []
    kind, peer, size, tag = (schedule.kind.tolist(), schedule.peer.tolist(),
                             schedule.size.tolist(), schedule.tag.tolist())
    cpu, nic = schedule.cpu.tolist(), schedule.nic.tolist()
    for r in range(schedule.num_ranks):
        lines.append(f"rank {r}")
        for i in range(offsets[r], offsets[r + 1]):
            name = NAMES[kind[i]]
            text = (f"{i - offsets[r]} calc {ns[i]}" if name == "calc" else
                    f"{i - offsets[r]} {name} {size[i]} {peer[i]} {tag[i]}")
            lines.append(text + (f" cpu {cpu[i]}" if cpu[i] else "")
                         + (f" nic {nic[i]}" if nic[i] else ""))
        lines.extend(f"{a} {k} {b}" for a, k, b in sorted(edges[r]))
    return hashlib.sha256(("\n".join(lines) + "\n").encode()).hexdigest()


def assert_messages_match(schedule):
    """Every send has a receive on its destination from its source with tag and size."""
    send = schedule.kind == SEND
    recv = schedule.kind == RECV
    sent = Counter(zip(schedule.rank[send].tolist(), schedule.peer[send].tolist(),
                       schedule.tag[send].tolist(), schedule.size[send].tolist(),
                       strict=True))
    received = Counter(zip(schedule.peer[recv].tolist(), schedule.rank[recv].tolist(),
                           schedule.tag[recv].tolist(), schedule.size[recv].tolist(),
                           strict=True))
    assert sent == received


SHIPPED = [c for c in SCHEDGEN2 if c["file"]]
REGENERATED = [c for c in SCHEDGEN2 if not c["file"]]


def test_references_cover_the_issue():
    """All patterns at 16 … 4096 ranks (the ranks² ones fewer), sizes around S."""
    patterns = {(c["collective"], c["pattern"], c["compute_ns"] != "0") for c in SCHEDGEN2}
    assert {("allreduce", "ring", False), ("allreduce", "recdoub", False),
            ("alltoall", "linear", False), ("alltoall", "linear", True),
            ("bcast", "binomialtree", False), ("reduce", "binomialtree", False)} <= patterns
    assert {int(c["ranks"]) for c in SCHEDGEN2} == {16, 64, 256, 1024, 4096}
    assert {int(c["message_bytes"]) for c in SCHEDGEN2} >= {8, 4096, 32768}


@pytest.mark.parametrize("case", SHIPPED, ids=[c["case"] for c in SHIPPED])
def test_same_as_schedgen2_file(case):
    expected = read_goal(DATA / case["file"])
    found = generate(case)
    assert_same(found, expected)
    assert_messages_match(found)
    # the canonical text rule agrees with the script that hashed Schedgen2's file
    assert canonical_sha256(expected) == case["canonical_sha256"]


@pytest.mark.parametrize("case", REGENERATED, ids=[c["case"] for c in REGENERATED])
def test_same_as_schedgen2_fingerprint(case):
    if int(case["operations"]) > MAX_OPERATIONS and not LARGE:
        pytest.skip(f"{case['operations']} operations: set JITTERLAB_GOAL_LARGE=1")
    found = generate(case)
    assert found.n_operations == int(case["operations"])
    assert canonical_sha256(found) == case["canonical_sha256"]


def test_loggopsim_example_is_the_binomial_broadcast():
    """binary_tree_32.goal (LogGOPSim's source tree) is broadcast_binomial(32, 1) with tag 0."""
    example = read_goal(DATA / "binary_tree_32.goal.gz")
    found = gen.broadcast_binomial(32, 1)
    assert set(example.tag.tolist()) == {0}
    found.tag[:] = 0
    assert_same(found, example)


def test_binomial_on_any_number_of_ranks():
    for ranks in (2, 3, 5, 20, 33):
        for make in (gen.broadcast_binomial, gen.reduce_binomial):
            s = make(ranks, 8)
            assert_messages_match(s)
            assert s.counts() == {"send": ranks - 1, "recv": ranks - 1, "calc": 0}
    # reduce on 20 ranks: rank 3 sends to its parent 1 after receiving from 3 + 2**k,
    # 2**k > 3 (7, 11, 19); the send waits for all three
    s = gen.reduce_binomial(20, 8)
    first, last = s.rank_offsets[3], s.rank_offsets[4]
    assert s.kind[first:last].tolist() == [SEND, RECV, RECV, RECV]
    assert s.peer[first:last].tolist() == [1, 7, 11, 19]
    waits = s.requires[s.requires_offsets[first]:s.requires_offsets[first + 1]]
    assert waits.tolist() == [first + 1, first + 2, first + 3]


def test_halo_exchange_2d_and_3d():
    s = gen.halo_exchange((4, 3), 64, compute=1e-6, iterations=3)
    assert_messages_match(s)
    assert s.counts() == {"send": 12 * 4 * 3, "recv": 12 * 4 * 3, "calc": 12 * 3}
    # rank 5 = (1, 2): neighbours (0, 2) = 2, (2, 2) = 8, (1, 1) = 4, (1, 0) = 3 (wrapped)
    first = s.rank_offsets[5]
    assert s.peer[first + 1:first + 5].tolist() == [2, 8, 4, 3]
    assert s.duration[first] == pytest.approx(1e-6)
    t = gen.halo_exchange((2, 2, 2), 8, periodic=False, iterations=2)
    assert_messages_match(t)
    assert t.counts()["send"] == 8 * 3 * 2
    # an axis of length 2, periodic: both neighbours are one rank, told apart by the tag
    u = gen.halo_exchange((2, 1), 8)
    assert u.counts() == {"send": 4, "recv": 4, "calc": 2}
    assert_messages_match(u)


def test_halo_iterations_wait_for_the_previous_exchange():
    s = gen.halo_exchange((3, 3), 8, iterations=2)
    first = s.rank_offsets[0]
    # rank 0: calc, 4 sends, 4 receives; then the second calc at position 9
    calc = first + 9
    waits = s.requires[s.requires_offsets[calc]:s.requires_offsets[calc + 1]]
    assert waits.tolist() == list(range(first + 1, first + 9))


@pytest.mark.parametrize("call, message", [
    (lambda: gen.allreduce_recursive_doubling(12, 1024), "power of two"),
    (lambda: gen.allreduce_ring(64, 32), "0 B"),
    (lambda: gen.allreduce_ring(1, 32), "ranks must be an integer >= 2"),
    (lambda: gen.alltoall_linear(4, 8, compute=-1e-6), "compute"),
    (lambda: gen.alltoall_linear(4, 8, compute=1.5e-9), "whole number of nanoseconds"),
    (lambda: gen.broadcast_binomial(4.0, 8), "ranks"),
    (lambda: gen.reduce_binomial(4, 0), "size"),
    (lambda: gen.halo_exchange((4,), 8), "2 or 3 axes"),
    (lambda: gen.halo_exchange(4, 8), "tuple"),
    (lambda: gen.halo_exchange((1, 1), 8), "one rank"),
    (lambda: gen.halo_exchange((2, 2), 8, periodic="yes"), "periodic"),
])
def test_bad_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call()
