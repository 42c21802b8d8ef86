"""GOAL schedules: the columnar Schedule, the GOAL reader and writer, the LogGOPS
parameters and the schedule simulator (checked against LogGOPSim's own outputs)."""

from __future__ import annotations

import pytest

import jitterlab as jl
from jitterlab.schedules import CALC, RECV, SEND, GoalSyntaxError, dependencies_from_pairs

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
