"""jitterlab's own programs as GOAL schedules: the tree barrier, the round collectives and
the wavefront, so that one engine (:func:`~jitterlab.schedules.simulate_schedule`) checks
the dedicated kernels (:func:`jitterlab.simulate`, :func:`jitterlab.apps.wavefront_simulate`).

Each function writes, per rank, the operations the dedicated kernel performs, in its
order (blocking program order: an operation requires the one before it, except where
said). With ``jl.LogGOPS(L=latency, o=send=recv, g=0, G=0)`` and no noise a schedule
gives the kernel's times exactly (tests/test_schedule_programs.py) wherever no message
reaches a rank before the rank's program reaches its receive. The engines differ

* in when a message is taken: LogGOPSim's CPU takes an arriving message (its receive
  overhead o) as soon as the CPU is free, before the program reaches the receive; the
  round collectives and the in-order wavefront take it when the program reaches the
  receive. The two agree when no message arrives early. That holds for the tree, the
  dissemination barrier and recursive doubling on a power of two, but not for recursive
  doubling on other N: a rank that sits out the fold-in round sends its next message at
  once, and it reaches a partner that still waits for its fold-in message (N = 3, o =
  1 µs, L = 5 µs, 100 µs of work: ranks 1 and 2 send at 100–101 µs, both messages reach
  rank 0 at 106 µs; LogGOPSim takes both, 106–108, sends to rank 1 at 108–109, rank 1
  ends at 115 µs; the kernel takes rank 2's, sends at 107–108, takes rank 1's at 108–109,
  rank 1 ends at 114 µs). LogGOPSim itself gives the schedule engine's times
  (tests/data/loggopsim_round_collectives.csv). The wavefront's
  ``progress="on_arrival"`` is LogGOPSim's rule;
* under noise: a message leaves at its send's start + o in LogGOPSim, at the end of its
  (noisy) send in the dedicated kernels; LogGOPSim's ``--noise-trace`` rule lengthens a
  CPU use by the detours that begin inside it, not by those that begin in the lengthened
  part (jitSim's rule, which the dedicated kernels use, consumes CPU time on the trace).

:func:`round_collective` with ``message=`` writes the CPU costs of a send and of a receive
as ``calc`` operations in program order around messages that cost no CPU (run it with
:func:`program_order_parameters`): a message is then taken when the program reaches its
receive and leaves at the end of its noisy send, as in the dedicated kernel, so the two
agree on every N without noise (only the noise-trace rule still differs under noise).
"""

from __future__ import annotations

import numpy as np

from ...base.checks import check_integer, check_positive
from ...traces.schedule import CALC, RECV, SEND, Schedule, dependencies_from_pairs
from ..collective_kernels import DISSEMINATION, RECURSIVE_DOUBLING, partner, round_count
from ..message import Message
from .loggops import LogGOPS

__all__ = ["chain_schedule", "tree_barrier", "round_collective", "program_order_parameters",
           "wavefront"]

#: the corner sweeps of the wavefront's "reference" order (+x+y, −x+y, +x−y, −x−y)
REFERENCE_CORNERS = ((1, 1), (-1, 1), (1, -1), (-1, -1))


def chain_schedule(num_ranks: int, rank, kind, peer, size, tag, duration, *,
                   requires=None) -> Schedule:
    """A schedule from operations in program order (``rank`` not decreasing).

    Without ``requires`` each operation requires the operation before it on its rank;
    ``requires`` = (dependent, prerequisite), global operation indices, gives the pairs
    instead."""
    rank = np.asarray(rank, dtype=np.int64)
    n = rank.size
    if requires is None:
        index = np.arange(n)
        chained = np.r_[False, rank[1:] == rank[:-1]] if n else np.zeros(0, dtype=bool)
        requires = (index[chained], index[chained] - 1)
    dependent = np.asarray(requires[0], dtype=np.int64)
    prerequisite = np.asarray(requires[1], dtype=np.int64)
    order = np.lexsort((prerequisite, dependent))
    return Schedule(num_ranks, kind=kind, rank=rank, peer=peer, size=size, tag=tag,
                    duration=duration,
                    requires=dependencies_from_pairs(n, dependent[order],
                                                     prerequisite[order]))


def _arguments(ranks, work, phases, size):
    return (check_integer("ranks", ranks, 1), check_positive("work", work, allow_zero=True),
            check_integer("phases", phases, 1), check_integer("size", size, 0))


def tree_barrier(ranks: int, fanout: int, work: float, phases: int = 1,
                 size: int = 1) -> Schedule:
    """Phases of ``work``, each closed by :class:`jitterlab.TreeBarrier`'s reduce and
    broadcast on the complete tree (children of r: fanout·r + 1 … fanout·r + fanout).

    Per rank and phase: calc ``work``; a receive from each child (all posted when the
    calc ends, taken in order of arrival); the send to the parent (after every child's
    receive); the receive from the parent; the sends to the children in index order. The
    next phase's calc follows the last of these. Reduce messages carry tag 2·phase,
    broadcast messages 2·phase + 1.

    Parameters
    ----------
    ranks, fanout : int
        Tasks and children per task. [-]
    work : float
        Compute per rank and phase. [s]
    phases : int
        Number of phases. [-]
    size : int
        Message size. [B]
    """
    ranks, work, phases, size = _arguments(ranks, work, phases, size)
    fanout = check_integer("fanout", fanout, 2)
    rows, pairs = [], []  # (rank, kind, peer, tag, duration); (dependent, prerequisite)

    def add(rank, kind, peer, tag, duration, after):
        rows.append((rank, kind, peer, tag, duration))
        pairs.extend((len(rows) - 1, a) for a in after)
        return len(rows) - 1

    for r in range(ranks):
        children = [c for c in range(fanout * r + 1, fanout * r + fanout + 1) if c < ranks]
        parent = (r - 1) // fanout
        last = []
        for phase in range(phases):
            calc = add(r, CALC, -1, 0, work, last)
            last = [add(r, RECV, c, 2 * phase, 0.0, [calc]) for c in children] or [calc]
            if r:
                last = [add(r, SEND, parent, 2 * phase, 0.0, last)]
                last = [add(r, RECV, parent, 2 * phase + 1, 0.0, last)]
            for c in children:
                last = [add(r, SEND, c, 2 * phase + 1, 0.0, last)]
    rank, kind, peer, tag, duration = (np.array(c) for c in zip(*rows, strict=True))
    dependent, prerequisite = (np.array(c, dtype=np.int64).reshape(-1)
                               for c in zip(*pairs, strict=True)) if pairs else (
        np.zeros(0, np.int64), np.zeros(0, np.int64))
    return chain_schedule(ranks, rank, kind, peer, np.where(kind == CALC, 0, size), tag,
                          duration, requires=(dependent, prerequisite))


def round_collective(ranks: int, work: float, phases: int = 1, size: int = 1,
                     kind: str = "dissemination", message: Message | None = None) -> Schedule:
    """Phases of ``work``, each closed by :class:`jitterlab.Dissemination` or
    :class:`jitterlab.RecursiveDoubling` (``kind="recursive_doubling"``).

    Per round a send to the round's partner, then a receive from it (a rank that sits a
    round out skips it), all in program order; round k of phase q has tag q·rounds + k.

    Parameters
    ----------
    ranks, work, phases, size
        As in :func:`tree_barrier`.
    kind : str
        ``"dissemination"`` or ``"recursive_doubling"``.
    message : jitterlab.Message, optional
        When given, each send is preceded by a ``calc`` of ``message.send`` and each
        receive followed by a ``calc`` of ``message.recv``: run the schedule with
        :func:`program_order_parameters` (o = 0), and a message is taken when the program
        reaches its receive, as :func:`jitterlab.simulate` takes it (the module docstring
        says why that matters for recursive doubling on N not a power of two). None: the
        engine charges o on each send and on each message's arrival (LogGOPSim's rule).
    """
    ranks, work, phases, size = _arguments(ranks, work, phases, size)
    codes = {"dissemination": DISSEMINATION, "recursive_doubling": RECURSIVE_DOUBLING}
    if kind not in codes:
        raise ValueError(f"kind must be 'dissemination' or 'recursive_doubling', got {kind!r}")
    if message is not None and not isinstance(message, Message):
        raise TypeError(f"message must be a jl.Message or None, got {type(message).__name__}")
    code = codes[kind]
    rounds = int(round_count(code, ranks))
    rows = []  # (rank, kind, peer, tag, duration)
    for r in range(ranks):
        for phase in range(phases):
            rows.append((r, CALC, -1, 0, work))
            for k in range(rounds):
                to, source = (int(x) for x in partner(code, ranks, k, r))
                tag = phase * rounds + k
                if to >= 0:
                    if message is not None:
                        rows.append((r, CALC, -1, 0, message.send))
                    rows.append((r, SEND, to, tag, 0.0))
                if source >= 0:
                    rows.append((r, RECV, source, tag, 0.0))
                    if message is not None:
                        rows.append((r, CALC, -1, 0, message.recv))
    rank, kinds, peer, tag, duration = (np.array(c) for c in zip(*rows, strict=True))
    return chain_schedule(ranks, rank, kinds, peer, np.where(kinds == CALC, 0, size), tag,
                          duration)


def program_order_parameters(message: Message) -> LogGOPS:
    """The LogGOPS point that runs a schedule written with ``message=`` (whose CPU costs
    are ``calc`` operations): L = the message's wire time, o = g = G = 0."""
    if not isinstance(message, Message):
        raise TypeError(f"message must be a jl.Message, got {type(message).__name__}")
    return LogGOPS(L=message.wire_time(), o=0.0, g=0.0, G=0.0)


def wavefront(px: int, py: int, blocks: int, work: float, iterations: int = 1,
              corners=REFERENCE_CORNERS, size: int = 1) -> Schedule:
    """The wavefront of :class:`jitterlab.apps.Wavefront` (LogGOPSim's schedule of
    ``make_wavefront_schedule.py``): rank = j·px + i; each iteration runs the corner
    sweeps in order, each pipelining ``blocks`` blocks; per block a rank receives from
    its upstream x neighbour, then its upstream y neighbour, computes ``work``, sends
    downstream x, then y (blocking program order). Block b of sweep s of iteration it has
    tag (it·sweeps + s)·blocks + b."""
    px, py = check_integer("px", px, 1), check_integer("py", py, 1)
    blocks = check_integer("blocks", blocks, 1)
    iterations = check_integer("iterations", iterations, 1)
    work = check_positive("work", work, allow_zero=True)
    size = check_integer("size", size, 0)
    corners = np.asarray(corners, dtype=np.int64).reshape(-1, 2)
    n = px * py
    r = np.arange(n)
    i, j = r % px, r // px
    sweeps = corners.shape[0]
    n_passes = iterations * sweeps * blocks
    sweep_of = (np.arange(n_passes) // blocks) % sweeps
    dx, dy = corners[sweep_of, 0][None, :], corners[sweep_of, 1][None, :]  # (1, passes)
    ii, jj = i[:, None], j[:, None]
    slots = [  # (kind, peer, valid) per (rank, pass)
        (RECV, jj * px + ii - dx, (ii - dx >= 0) & (ii - dx < px)),
        (RECV, (jj - dy) * px + ii, (jj - dy >= 0) & (jj - dy < py)),
        (CALC, np.full((n, n_passes), -1), np.ones((n, n_passes), dtype=bool)),
        (SEND, jj * px + ii + dx, (ii + dx >= 0) & (ii + dx < px)),
        (SEND, (jj + dy) * px + ii, (jj + dy >= 0) & (jj + dy < py)),
    ]
    shape = (n, n_passes, len(slots))
    valid = np.stack([np.broadcast_to(v, shape[:2]) for _, _, v in slots], axis=2)
    peer = np.stack([np.broadcast_to(p, shape[:2]) for _, p, _ in slots], axis=2)[valid]
    kind = np.broadcast_to(np.array([k for k, _, _ in slots], dtype=np.int8), shape)[valid]
    tag = np.broadcast_to(np.arange(n_passes)[None, :, None], shape)[valid]
    rank = np.broadcast_to(r[:, None, None], shape)[valid]
    calc = kind == CALC
    return chain_schedule(n, rank, kind, np.where(calc, -1, peer), np.where(calc, 0, size),
                          np.where(calc, 0, tag), np.where(calc, work, 0.0))
