"""Round-based collectives for :func:`jitterlab.simulate`: dissemination and recursive doubling.

Like :class:`jitterlab.TreeBarrier`, each is passed as ``barrier=`` and uses the one
message cost model :class:`jitterlab.Message`: sends and receives cost CPU time on the
task's trace (jitter can strike them), the wire time does not. Unlike the tree, they have
no root: every task sends and receives once per round, so the critical path is
⌈log2 N⌉ one-way hops (dissemination) or log2 N (recursive doubling), and no task waits
for a broadcast.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..base.checks import check_integer
from . import collective_kernels as _collkernels
from .message import Message

__all__ = ["Dissemination", "RecursiveDoubling"]


@dataclass(frozen=True)
class RoundCollective:
    """A collective of rounds in which every task sends once and receives once.

    Parameters
    ----------
    message : jitterlab.Message
        Cost of one message (send and receive CPU time, wire time).
    """

    message: Message = field(default_factory=Message)

    _kind = -1
    _name = ""

    def __post_init__(self):
        if not isinstance(self.message, Message):
            raise TypeError(f"message must be a jl.Message, got {type(self.message).__name__}")

    def rounds(self, n: int) -> int:
        """Rounds on n tasks (n >= 1). [-]"""
        return int(_collkernels.round_count(self._kind, check_integer("n", n, minimum=1)))

    def hop(self) -> float:
        """Noiseless time of one round: send + wire time + receive. [s]"""
        return self.message.one_way

    def noiseless_time(self, n: int) -> float:
        """Time of the collective entered by all n tasks at once, without noise. [s]"""
        return self.rounds(n) * self.hop()

    def describe(self) -> str:
        return f"{self._name}({self.message.describe()})"

    def noiseless_phases(self, n: int, work: float, phases: int):
        """Phase times [s] of n tasks computing ``work`` and meeting no noise, and the
        largest change of a task's phase time from the phase before to the last [s]
        (0 with fewer than three phases)."""
        no_trace = np.zeros((1, 3))  # one row: the kernel adds CPU times, reads no trace
        theta, _, ends, _ = self.run(no_trace, np.zeros(n), float(work), phases, True)
        if phases < 3:
            return theta, 0.0
        durations = ends[-2:] - ends[-3:-1]
        return theta, float(np.abs(durations[1] - durations[0]).max())

    def run(self, table, offsets, work, phases, detail, ops=False):
        """Phase times, compute times, end times and operation ends of one run [s].

        With ``ops`` the last is ``[phase, task, op]``: op 0 the compute, 1 + 2k the send
        of round k and 2 + 2k its receive, NaN where the task sits the round out.
        """
        shape = (phases, offsets.size) if detail else (0, 0)
        compute, ends = np.zeros(shape), np.zeros(shape)
        op_ends = np.full((phases, offsets.size, 1 + 2 * self.rounds(offsets.size))
                          if ops else (0, 0, 0), np.nan)
        phase_end = _collkernels.run_rounds(
            table, offsets, work, phases, self._kind, self.message.send, self.message.recv,
            self.message.wire_time(), compute, ends, op_ends)
        theta = np.diff(phase_end, prepend=0.0)
        return (theta, (compute if detail else None), (ends if detail else None),
                (op_ends if ops else None))


@dataclass(frozen=True)
class Dissemination(RoundCollective):
    """Dissemination barrier (Hensgen, Finkel & Manber): ⌈log2 N⌉ rounds, no root.

    In round k task r sends to (r + 2^k) mod N, then receives from (r − 2^k) mod N;
    ``message`` (a :class:`jitterlab.Message`) is the cost of one message.

    Examples
    --------
    >>> import jitterlab as jl
    >>> barrier = jl.Dissemination(jl.Message(send=1e-6, recv=1e-6, latency=5e-6))
    >>> barrier.rounds(1000), round(barrier.noiseless_time(1000) * 1e6, 6)  # [µs]
    (10, 70.0)
    """

    _kind = _collkernels.DISSEMINATION
    _name = "Dissemination"


@dataclass(frozen=True)
class RecursiveDoubling(RoundCollective):
    """Recursive-doubling all-reduce: log2 N rounds of pairwise exchange.

    In round k task r sends to r XOR 2^k, then receives from it. For N not a power of
    two, with P the largest power of two below N, a first round folds task P + e into
    task e and a last round sends the result back (two more rounds). ``message`` (a
    :class:`jitterlab.Message`) is the cost of one message.

    Examples
    --------
    >>> import jitterlab as jl
    >>> jl.RecursiveDoubling().rounds(1024), jl.RecursiveDoubling().rounds(1000)
    (10, 11)
    """

    _kind = _collkernels.RECURSIVE_DOUBLING
    _name = "RecursiveDoubling"
