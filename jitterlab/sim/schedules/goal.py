"""GOAL text (LogGOPSim's schedule language) into a :class:`Schedule` and back.

The grammar is the one LogGOPSim's ``txt2bin`` accepts (Hoefler, Schneider & Lumsdaine,
LogGOPSim, HPDC 2010; its ``txt2bin.re``)::

    num_ranks <n>
    rank <r> {
      <label>: send <size>b to <dest> [tag <t>] [cpu <c>] [nic <n>]
      <label>: recv <size>b from <src | -1> [tag <t | -1>] [cpu <c>] [nic <n>]
      <label>: calc <nanoseconds> [cpu <c>]
      <label> requires <label>
      <label> irequires <label>
    }

one item per line, the label optional on an operation, ``//`` and ``/* … */`` comments,
ranks 0 … n−1 in order. Labels belong to their rank; a dependency names labels defined
above it; a label defined twice keeps its first operation (as ``txt2bin``). Sizes are
bytes, calc times nanoseconds (stored in seconds). A file ending in ``.gz`` is read and
written gzip-compressed.
"""

from __future__ import annotations

import gzip
import re
from array import array
from pathlib import Path

import numpy as np

from ...traces.schedule import CALC, RECV, SEND, Schedule, dependencies_from_pairs

__all__ = ["read_goal", "write_goal", "GoalSyntaxError"]

_TOKEN = re.compile(r"/\*|\*/|//|[A-Za-z][A-Za-z0-9_]*|-1(?![0-9])|[0-9]+|[:{}]|\S")
_OPERATIONS = {"send": SEND, "recv": RECV, "calc": CALC}
_NOT_LABELS = {"send", "recv", "calc", "rank", "num_ranks"}
_NS = 1e-9
_UINT8, _UINT32 = 255, 2**32 - 1


class GoalSyntaxError(ValueError):
    """GOAL text that LogGOPSim's txt2bin would not accept (the message names the file,
    line and rank)."""


def _open_text(path):
    with open(path, "rb") as probe:
        gz = probe.read(2) == b"\x1f\x8b"
    if gz:
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def read_goal(path) -> Schedule:
    """Read a GOAL text schedule (as LogGOPSim's ``txt2bin`` parses it).

    Parameters
    ----------
    path : str or path-like
        GOAL text file, optionally gzip-compressed.

    Returns
    -------
    Schedule
        calc times converted from nanoseconds to seconds.

    Raises
    ------
    GoalSyntaxError
        (a ValueError) naming the file, the line and the rank of the first problem.
    """
    reader = _Reader(Path(path))
    with _open_text(path) as handle:
        for line_number, line in enumerate(handle, start=1):
            reader.line(line_number, line)
    return reader.finish()


class _Reader:
    def __init__(self, path: Path):
        self.path = path
        self.line_number = 0
        self.num_ranks = None
        self.rank = None          # rank whose block is open
        self.next_rank = 0
        self.in_comment = False
        self.labels = {}
        self.first = 0            # global index of the open rank's first operation
        self.kind = array("b")
        self.ranks = array("i")
        self.peer = array("i")
        self.size = array("q")
        self.tag = array("q")
        self.duration = array("d")
        self.cpu = array("B")
        self.nic = array("B")
        self.requires = (array("q"), array("q"))
        self.irequires = (array("q"), array("q"))

    def fail(self, message):
        where = f"{self.path}, line {self.line_number}"
        if self.rank is not None:
            where += f", rank {self.rank}"
        raise GoalSyntaxError(f"{where}: {message}")

    def number(self, tokens, k, what, limit, allow_any=False):
        if k >= len(tokens):
            self.fail(f"expected {what} (an integer), found the end of the line")
        token = tokens[k]
        if allow_any and token == "-1":
            return -1
        if not token.isdigit():
            self.fail(f"expected {what} (an integer{' or -1' if allow_any else ''}), "
                      f"found {token!r}")
        value = int(token)
        if value > limit:
            self.fail(f"{what} {value} is larger than {limit}")
        return value

    def line(self, line_number, text):
        self.line_number = line_number
        tokens = _TOKEN.findall(text)
        if self.in_comment or "/*" in tokens:
            tokens = self.strip_block_comments(tokens)
        if "//" in tokens:
            tokens = tokens[:tokens.index("//")]
        k = 0
        while k < len(tokens):
            k = self.item(tokens, k)

    def strip_block_comments(self, tokens):
        kept = []
        for token in tokens:
            if self.in_comment:
                if token == "*/":
                    self.in_comment = False
            elif token == "/*":
                self.in_comment = True
            else:
                kept.append(token)
        return kept

    def item(self, tokens, k):
        """Parse the item at ``tokens[k]``; return the index after it."""
        token = tokens[k]
        if token == "num_ranks":
            if self.num_ranks is not None:
                self.fail("num_ranks given twice")
            self.num_ranks = self.number(tokens, k + 1, "num_ranks", _UINT32)
            if self.num_ranks < 1:
                self.fail("num_ranks must be at least 1")
            return k + 2
        if token == "rank":
            if self.rank is not None:
                self.fail(f"'rank' inside the block of rank {self.rank} (missing '}}'?)")
            if self.num_ranks is None:
                self.fail("a rank block before 'num_ranks'")
            rank = self.number(tokens, k + 1, "rank", _UINT32)
            if rank != self.next_rank:
                self.fail(f"rank {rank} where rank {self.next_rank} was expected (ranks "
                          f"come in order 0 … {self.num_ranks - 1})")
            if k + 2 >= len(tokens) or tokens[k + 2] != "{":
                self.fail("expected '{' after the rank number, on the same line")
            self.rank = rank
            self.labels = {}
            self.first = len(self.kind)
            return k + 3
        if token == "}":
            if self.rank is None:
                self.fail("'}' outside a rank block")
            self.rank = None
            self.next_rank += 1
            return k + 1
        if self.rank is None:
            self.fail(f"{token!r} outside a rank block (expected 'num_ranks' or 'rank')")
        if token in _OPERATIONS:
            return self.operation(tokens, k, None)
        if token in _NOT_LABELS or not token[0].isalpha():
            self.fail(f"unexpected {token!r}; expected an operation, a label or '}}'")
        if k + 1 >= len(tokens):
            self.fail(f"expected ':', 'requires' or 'irequires' after label {token!r}")
        follow = tokens[k + 1]
        if follow == ":":
            if k + 2 >= len(tokens) or tokens[k + 2] not in _OPERATIONS:
                self.fail(f"expected 'send', 'recv' or 'calc' after '{token}:'")
            return self.operation(tokens, k + 2, token)
        if follow in ("requires", "irequires"):
            if k + 2 >= len(tokens) or not tokens[k + 2][0].isalpha():
                self.fail(f"expected a label after '{follow}'")
            if k + 3 < len(tokens):
                self.fail(f"unexpected {tokens[k + 3]!r} after the dependency")
            dependent, prerequisite = self.label(token), self.label(tokens[k + 2])
            pairs = self.requires if follow == "requires" else self.irequires
            pairs[0].append(dependent)
            pairs[1].append(prerequisite)
            return len(tokens)
        self.fail(f"expected ':', 'requires' or 'irequires' after label {token!r}, "
                  f"found {follow!r}")

    def label(self, name):
        if name not in self.labels:
            self.fail(f"a dependency names label {name!r}, which is not defined above it "
                      f"in this rank")
        return self.labels[name]

    def operation(self, tokens, k, label):
        kind = _OPERATIONS[tokens[k]]
        peer, tag, nic, size, duration = -1, 0, 0, 0, 0.0
        if kind == CALC:
            duration = self.number(tokens, k + 1, "calc time [ns]", 2**63 - 1) * _NS
            k += 2
            options = ("cpu",)
        else:
            size = self.number(tokens, k + 1, "size [B]", 2**63 - 1)
            if k + 2 >= len(tokens) or tokens[k + 2] != "b":
                self.fail("expected 'b' after the message size")
            direction = "to" if kind == SEND else "from"
            if k + 3 >= len(tokens) or tokens[k + 3] != direction:
                self.fail(f"expected '{direction}' after the size")
            peer = self.number(tokens, k + 4, "source" if kind == RECV else "destination",
                               _UINT32, allow_any=kind == RECV)
            if peer >= self.num_ranks:
                self.fail(f"{tokens[k]} names rank {peer}; num_ranks is {self.num_ranks}")
            k += 5
            options = ("tag", "cpu", "nic")
        values = {"tag": 0, "cpu": 0, "nic": 0}
        for option in options:
            if k < len(tokens) and tokens[k] == option:
                limit = _UINT32 - 1 if option == "tag" else _UINT8
                values[option] = self.number(tokens, k + 1, option, limit,
                                             allow_any=option == "tag")
                k += 2
        if k < len(tokens):
            allowed = ", ".join(repr(o) for o in options)
            self.fail(f"unexpected {tokens[k]!r}; expected {allowed} (in this order) or "
                      f"the end of the line")
        tag, cpu, nic = values["tag"], values["cpu"], values["nic"]
        if label is not None and label not in self.labels:
            self.labels[label] = len(self.kind)
        self.kind.append(kind)
        self.ranks.append(self.rank)
        self.peer.append(peer)
        self.size.append(size)
        self.tag.append(tag if kind != CALC else 0)
        self.duration.append(duration)
        self.cpu.append(cpu)
        self.nic.append(nic)
        return k

    def finish(self) -> Schedule:
        self.line_number += 1
        if self.in_comment:
            self.fail("a '/*' comment is not closed at the end of the file")
        if self.num_ranks is None:
            self.fail("no 'num_ranks' line")
        if self.rank is not None:
            self.fail("the file ends inside the block (missing '}')")
        if self.next_rank != self.num_ranks:
            self.fail(f"the file ends after rank {self.next_rank - 1}; num_ranks is "
                      f"{self.num_ranks}")
        n = len(self.kind)

        def column(values, dtype):
            return np.frombuffer(values, dtype=dtype).copy() if len(values) else \
                np.zeros(0, dtype=dtype)

        requires = dependencies_from_pairs(n, column(self.requires[0], np.int64),
                                           column(self.requires[1], np.int64))
        irequires = dependencies_from_pairs(n, column(self.irequires[0], np.int64),
                                            column(self.irequires[1], np.int64))
        try:
            return Schedule(self.num_ranks, kind=column(self.kind, np.int8),
                            rank=column(self.ranks, np.int32),
                            peer=column(self.peer, np.int32),
                            size=column(self.size, np.int64), tag=column(self.tag, np.int64),
                            duration=column(self.duration, np.float64),
                            cpu=column(self.cpu, np.uint8), nic=column(self.nic, np.uint8),
                            requires=requires, irequires=irequires)
        except ValueError as error:
            raise GoalSyntaxError(f"{self.path}: {error}") from None


def write_goal(schedule: Schedule, path, *, overwrite: bool = False) -> Path:
    """Write ``schedule`` as GOAL text (see :meth:`Schedule.to_goal`)."""
    if not isinstance(schedule, Schedule):
        raise TypeError(f"expected a Schedule, got {type(schedule).__name__}")
    return schedule.to_goal(path, overwrite=overwrite)
