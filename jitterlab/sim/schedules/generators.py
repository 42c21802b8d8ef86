"""Schedules of common communication patterns, built as columns (no object per operation).

The collectives are those of LogGOPSim's Python generator Schedgen2 (spcl/LogGOPSim,
``src/Schedgen2``, its ``patterns.py``): each returns the operations and dependencies of
Schedgen2's schedule for the same arguments (tested against Schedgen2's own output in
``tests/data/goal``), so a schedule made here runs in LogGOPSim exactly as Schedgen2's:

=====================================  ==============================================
:func:`allreduce_ring`                 ``schedgen.py allreduce --ptrn ring``
:func:`allreduce_recursive_doubling`   ``schedgen.py allreduce --ptrn recdoub``
:func:`broadcast_binomial`             ``schedgen.py bcast --ptrn binomialtree``
:func:`reduce_binomial`                ``schedgen.py reduce --ptrn binomialtree``
:func:`alltoall_linear`                ``schedgen.py alltoall --ptrn linear``
=====================================  ==============================================

``size`` is Schedgen2's ``--datasize`` [B], ``compute`` its ``--compute_time_dependency``
(here in seconds; Schedgen2 and GOAL use whole nanoseconds) and ``tag`` its user tag.
Schedgen2 writes a message tag as ``user tag × 1000 + communicator`` (communicator 1 for
a whole-world collective); the same tags are written here. The all-reduces are a
reduce-scatter followed by an all-gather (the all-gather's tags start at ``tag + ranks``),
joined per rank by a ``calc 0`` that waits for the reduce-scatter's last operations and
that the all-gather's first operations wait for (Schedgen2's ``Append``).

:func:`halo_exchange` (nearest neighbours on a 2-D or 3-D grid) has no Schedgen2
counterpart; its rules are in its docstring.

Schedgen2 may write a dependency twice (a broadcast or reduce on a number of ranks that is
not a power of two); here each is written once, which LogGOPSim treats alike.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ...traces.schedule import CALC, RECV, SEND, Schedule, dependencies_from_pairs

__all__ = ["allreduce_ring", "allreduce_recursive_doubling", "broadcast_binomial",
           "reduce_binomial", "alltoall_linear", "halo_exchange"]

_NS = 1e-9


# ------------------------------------------------------------------ argument checks
def _count(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _collective_arguments(ranks, size, tag) -> tuple[int, int, int]:
    """ranks (>= 2), size [B] (>= 1) and tag (>= 0), checked."""
    return _count("ranks", ranks, 2), _count("size", size, 1), _count("tag", tag, 0)


def _compute_ns(compute) -> int:
    """The compute time [s] in whole nanoseconds (GOAL's unit)."""
    if isinstance(compute, bool) or not isinstance(compute, numbers.Real) \
            or not math.isfinite(compute) or compute < 0:
        raise ValueError(f"compute must be a finite number of seconds >= 0, got {compute!r}")
    ns = round(compute / _NS)
    if abs(ns * _NS - compute) > 1e-3 * _NS:
        raise ValueError(f"compute must be a whole number of nanoseconds (GOAL's unit), "
                         f"got {compute!r} s")
    return ns


def _goal_tag(tag: int, steps) -> np.ndarray:
    """Schedgen2's message tag: (user tag + step) × 1000 + communicator 1."""
    return (tag + np.asarray(steps, dtype=np.int64)) * 1000 + 1


def _message_size(size: int, divisor: int, ranks: int, what: str) -> None:
    if size // divisor < 1:
        raise ValueError(f"size {size} B gives {what} of {size // divisor} B at {ranks} "
                         f"ranks; give at least {divisor} B (LogGOPSim charges size - 1 "
                         f"bytes, which a 0-byte message underflows)")


# ------------------------------------------------------------------ assembly
class _Operations:
    """Operations collected in any order, each with its rank and position in the rank."""

    def __init__(self):
        self.columns: dict[str, list[np.ndarray]] = {
            k: [] for k in ("rank", "position", "kind", "peer", "size", "tag", "ns")}
        self.pairs: dict[str, list[np.ndarray]] = {"rank": [], "dependent": [],
                                                   "prerequisite": []}

    def add(self, rank, position, kind, peer=-1, size=0, tag=0, ns=0) -> None:
        rank, position = np.broadcast_arrays(np.asarray(rank), np.asarray(position))
        shape = rank.shape
        for name, value in (("rank", rank), ("position", position), ("kind", kind),
                            ("peer", peer), ("size", size), ("tag", tag), ("ns", ns)):
            self.columns[name].append(np.broadcast_to(np.asarray(value), shape).ravel())

    def requires(self, rank, dependent, prerequisite) -> None:
        """Operation ``dependent`` of ``rank`` requires ``prerequisite`` (positions)."""
        rank, dependent, prerequisite = np.broadcast_arrays(
            np.asarray(rank), np.asarray(dependent), np.asarray(prerequisite))
        for name, value in (("rank", rank), ("dependent", dependent),
                            ("prerequisite", prerequisite)):
            self.pairs[name].append(value.ravel())

    def schedule(self, num_ranks: int) -> Schedule:
        col = {k: (np.concatenate(v) if v else np.zeros(0, dtype=np.int64))
               for k, v in self.columns.items()}
        n = col["rank"].size
        counts = np.bincount(col["rank"], minlength=num_ranks)
        offsets = np.concatenate(([0], np.cumsum(counts)))
        where = offsets[col["rank"]] + col["position"]  # global index of each operation
        placed = np.bincount(where, minlength=n) if n else where
        if placed.size != n or (n and placed.min() != 1):
            raise AssertionError("positions of a rank must be 0, 1, 2, ... without gaps")
        columns = {}
        for name in ("rank", "kind", "peer", "size", "tag", "ns"):
            columns[name] = np.empty(n, dtype=np.int64)
            columns[name][where] = col[name]
        pairs = {k: (np.concatenate(v) if v else np.zeros(0, dtype=np.int64))
                 for k, v in self.pairs.items()}
        base = offsets[pairs["rank"]]
        dependent = base + pairs["dependent"]
        prerequisite = base + pairs["prerequisite"]
        # each operation's list in the order of its prerequisites (as Schedgen2 writes it)
        by = np.argsort(dependent * max(n, 1) + prerequisite)
        return Schedule(num_ranks, kind=columns["kind"], rank=columns["rank"],
                        peer=columns["peer"], size=columns["size"], tag=columns["tag"],
                        duration=columns["ns"] * _NS,
                        requires=dependencies_from_pairs(n, dependent[by], prerequisite[by]))


def _chain(ops: _Operations, ranks: int, first: int, send_peer, recv_peer, sizes, tags,
           compute_ns: int) -> tuple[int, np.ndarray, np.ndarray]:
    """Steps of send, receive (and a computation after the receive) per rank, at positions
    ``first`` …; the send of a step waits for the receive (or computation) of the step
    before (Schedgen2's ring and recdoub).

    ``send_peer`` and ``recv_peer`` are (ranks, steps) arrays, ``sizes`` and ``tags``
    (steps,). Returns the positions used per rank, the positions of the operations that
    nothing in the chain waits for, and of those that wait for nothing (in order).
    """
    steps = len(sizes)
    width = 3 if compute_ns else 2
    rank = np.arange(ranks)[:, None]
    start = first + width * np.arange(steps)[None, :]
    ops.add(rank, start, SEND, send_peer, np.asarray(sizes)[None, :], np.asarray(tags)[None, :])
    ops.add(rank, start + 1, RECV, recv_peer, np.asarray(sizes)[None, :],
            np.asarray(tags)[None, :])
    if compute_ns:
        ops.add(rank, start + 2, CALC, ns=compute_ns)
        ops.requires(rank, start + 2, start + 1)
    ops.requires(rank, start[:, 1:], start[:, :-1] + width - 1)
    local = np.arange(first, first + width * steps).reshape(steps, width)
    waited_for = {int(p) for p in (local[:-1, width - 1])} | (
        {int(p) for p in local[:, 1]} if compute_ns else set())
    waiting = {int(p) for p in local[1:, 0]} | (
        {int(p) for p in local[:, 2]} if compute_ns else set())
    positions = local.ravel()
    last = np.array([p for p in positions if p not in waited_for], dtype=np.int64)
    independent = np.array([p for p in positions if p not in waiting], dtype=np.int64)
    return width * steps, last, independent


def _join(ops: _Operations, ranks: int, at: int, last: np.ndarray,
          independent: np.ndarray) -> None:
    """Schedgen2's ``Append``: a ``calc 0`` at position ``at`` that waits for ``last``;
    the ``independent`` operations after it wait for it."""
    rank = np.arange(ranks)[:, None]
    ops.add(rank, at, CALC, ns=0)
    ops.requires(rank, at, last[None, :])
    ops.requires(rank, independent[None, :], at)


def _allreduce(ranks, compute, tag, peers) -> Schedule:
    compute_ns = _compute_ns(compute)
    ops = _Operations()
    (rs_send, rs_recv, rs_sizes), (ag_send, ag_recv, ag_sizes) = peers
    steps = len(rs_sizes)
    used, last, _ = _chain(ops, ranks, 0, rs_send, rs_recv, rs_sizes,
                           _goal_tag(tag, range(steps)), compute_ns)
    _, _, independent = _chain(ops, ranks, used + 1, ag_send, ag_recv, ag_sizes,
                               _goal_tag(tag + ranks, range(steps)), compute_ns)
    _join(ops, ranks, used, last, independent)
    return ops.schedule(ranks)


# ------------------------------------------------------------------ collectives
def allreduce_ring(ranks: int, size: int, *, compute: float = 0.0,
                   tag: int = 42) -> Schedule:
    """All-reduce on a ring: a reduce-scatter, then an all-gather, ``ranks - 1`` steps each.

    In step ``k`` rank ``r`` sends ``size // ranks`` bytes to ``r + 1`` and receives as
    much from ``r - 1`` (mod ``ranks``); the send of a step waits for the receive of the
    step before (and for a computation of ``compute`` after that receive, if given).

    Parameters
    ----------
    ranks : int
        Number of ranks (>= 2).
    size : int
        The reduced vector [B] (Schedgen2's ``--datasize``; each message is
        ``size // ranks``, so at least ``ranks``).
    compute : float, default 0
        Computation after each receive [s] (whole nanoseconds); 0 for none.
    tag : int, default 42
        Schedgen2's user tag of the first step.

    Returns
    -------
    Schedule
        As ``schedgen.py allreduce --ptrn ring --comm_size ranks --datasize size``.
    """
    ranks, size, tag = _collective_arguments(ranks, size, tag)
    _message_size(size, ranks, ranks, "ring messages")
    rank = np.arange(ranks)[:, None]
    steps = ranks - 1
    right = np.broadcast_to((rank + 1) % ranks, (ranks, steps))
    left = np.broadcast_to((rank - 1) % ranks, (ranks, steps))
    sizes = np.full(steps, size // ranks)
    return _allreduce(ranks, compute, tag, ((right, left, sizes), (right, left, sizes)))


def allreduce_recursive_doubling(ranks: int, size: int, *, compute: float = 0.0,
                                 tag: int = 42) -> Schedule:
    """All-reduce by recursive doubling (recursive halving, then doubling).

    Reduce-scatter step ``k`` (0 … log2(ranks) − 1): rank ``r`` exchanges
    ``size // 2**(k+1)`` bytes with ``r XOR 2**k``; the all-gather runs the steps back
    (partner ``r XOR 2**(n-1-k)``, ``size // 2**(n-k)`` bytes). The send of a step waits
    for the receive of the step before (and for a computation after it, if given).

    Parameters
    ----------
    ranks : int
        Number of ranks, a power of two (>= 2), as Schedgen2 requires.
    size : int
        The reduced vector [B] (Schedgen2's ``--datasize``; the smallest message is
        ``size // ranks``, so at least ``ranks``).
    compute, tag
        As :func:`allreduce_ring`.

    Returns
    -------
    Schedule
        As ``schedgen.py allreduce --ptrn recdoub --comm_size ranks --datasize size``.
    """
    ranks, size, tag = _collective_arguments(ranks, size, tag)
    if ranks & (ranks - 1):
        raise ValueError(f"ranks must be a power of two for recursive doubling, got {ranks}")
    _message_size(size, ranks, ranks, "messages in the last step")
    n = ranks.bit_length() - 1
    rank = np.arange(ranks)[:, None]
    k = np.arange(n)
    rs_peer = rank ^ (1 << k)[None, :]
    ag_peer = rank ^ (1 << (n - 1 - k))[None, :]
    rs_sizes = size // (2 ** (k + 1))
    ag_sizes = size // (2 ** (n - k))
    return _allreduce(ranks, compute, tag,
                      ((rs_peer, rs_peer, rs_sizes), (ag_peer, ag_peer, ag_sizes)))


def _binomial(ranks: int, size: int, tag: int, broadcast: bool) -> Schedule:
    """Schedgen2's ``binomialtree`` (root 0) without computations."""
    ranks, size, tag = _collective_arguments(ranks, size, tag)
    goal_tag = int(_goal_tag(tag, 0))
    ops = _Operations()
    rounds = math.ceil(math.log2(ranks))
    for r in range(ranks):
        position, send, receives, sends, pairs = 0, None, [], [], []
        for k in range(rounds):
            step = 1 << k
            if r < step and r + step < ranks:  # the parent side of round k
                kind = SEND if broadcast else RECV
                ops.add(r, position, kind, r + step, size, goal_tag)
                (sends if broadcast else receives).append(position)
                if broadcast:
                    send = position
                position += 1
            if send is not None and receives:
                pairs.append((send, receives[-1]))
            if step <= r < 2 * step:  # the child side of round k
                kind = RECV if broadcast else SEND
                ops.add(r, position, kind, r - step, size, goal_tag)
                if broadcast:
                    receives.append(position)
                else:
                    send = position
                position += 1
        for dependent, prerequisite in sorted(set(pairs)):
            ops.requires(r, dependent, prerequisite)
    return ops.schedule(ranks)


def broadcast_binomial(ranks: int, size: int, *, tag: int = 42) -> Schedule:
    """Broadcast from rank 0 on a binomial tree.

    In round ``k`` every rank ``r < 2**k`` sends ``size`` bytes to ``r + 2**k`` (if it
    exists); a rank's sends wait for its one receive.

    Parameters
    ----------
    ranks : int
        Number of ranks (>= 2).
    size : int
        Message size [B] (>= 1).
    tag : int, default 42
        Schedgen2's user tag.

    Returns
    -------
    Schedule
        As ``schedgen.py bcast --ptrn binomialtree --comm_size ranks --datasize size``.
    """
    return _binomial(ranks, size, tag, broadcast=True)


def reduce_binomial(ranks: int, size: int, *, tag: int = 42) -> Schedule:
    """Reduce to rank 0 on a binomial tree (the broadcast's messages reversed).

    Rank ``r`` receives from ``r + 2**k`` for every ``2**k > r`` (if it exists) and then
    sends ``size`` bytes to its parent ``r - 2**floor(log2 r)``; the send waits for all
    its receives. Parameters as :func:`broadcast_binomial`; the schedule is that of
    ``schedgen.py reduce --ptrn binomialtree --comm_size ranks --datasize size``.
    """
    return _binomial(ranks, size, tag, broadcast=False)


def alltoall_linear(ranks: int, size: int, *, compute: float = 0.0,
                    tag: int = 42) -> Schedule:
    """Linear all-to-all: every rank sends ``size`` bytes to every other rank.

    Rank ``q`` posts its receives from ranks ``0 … q−1``, then sends to every other rank in
    rank order (each send waiting for a computation of ``compute`` written right after
    it, if given: the computations run one after the other on the rank's CPU), then posts
    the receives from ``q+1 … ranks−1``. All messages carry the same tag.

    Parameters
    ----------
    ranks, size, tag
        As in :func:`broadcast_binomial`.
    compute : float, default 0
        Computation before each send [s] (whole nanoseconds); 0 for none.

    Returns
    -------
    Schedule
        As ``schedgen.py alltoall --ptrn linear --comm_size ranks --datasize size``
        (with ``--compute_time_dependency`` in ns).
    """
    ranks, size, tag = _collective_arguments(ranks, size, tag)
    compute_ns = _compute_ns(compute)
    goal_tag = int(_goal_tag(tag, 0))
    width = 2 if compute_ns else 1
    ops = _Operations()
    q = np.arange(ranks)[:, None]
    other = np.arange(ranks - 1)[None, :]  # the j-th other rank of q
    peer = other + (other >= q)
    # receives: from a < q at position a; from a > q after the sends
    receive_position = np.where(peer < q, peer, q + width * (ranks - 1) + peer - q - 1)
    ops.add(q, receive_position, RECV, peer, size, goal_tag)
    send_position = q + width * other
    ops.add(q, send_position, SEND, peer, size, goal_tag)
    if compute_ns:
        ops.add(q, send_position + 1, CALC, ns=compute_ns)
        ops.requires(q, send_position, send_position + 1)
    return ops.schedule(ranks)


# ------------------------------------------------------------------ halo exchange
def halo_exchange(grid, size: int, *, compute: float = 0.0, iterations: int = 1,
                  periodic: bool = True, tag: int = 0) -> Schedule:
    """Nearest-neighbour (halo) exchange on a 2-D or 3-D grid of ranks.

    Rank ``r`` has grid coordinates ``numpy.unravel_index(r, grid)`` (last axis fastest).
    Each iteration, on every rank: a computation of ``compute``, then one send of
    ``size`` bytes to each neighbour (axis by axis, the lower neighbour first); the
    receives from the neighbours are posted at the iteration's start. The computation
    and the receives of an iteration wait for all sends and receives of the one before.
    A message to the upper neighbour on axis ``a`` carries tag
    ``tag + 2 * axes * iteration + 2 * a + 1``, to the lower ``… + 2 * a``, so receives
    match their messages even where both neighbours are the same rank (an axis of
    length 2, periodic). A neighbour that is the rank itself (an axis of length 1,
    periodic) or outside the grid (not ``periodic``) is left out.

    Parameters
    ----------
    grid : tuple of int
        Ranks per axis, 2 or 3 axes (each >= 1; at least 2 ranks in all).
    size : int
        Halo message size [B] (>= 1).
    compute : float, default 0
        Computation per iteration [s] (whole nanoseconds); 0 writes a ``calc 0``.
    iterations : int, default 1
        Number of compute-and-exchange iterations.
    periodic : bool, default True
        Wrap around at the grid's edges (a torus).
    tag : int, default 0
        First tag.

    Returns
    -------
    Schedule
        Per rank and iteration: a calc, then the sends, then the receives (in the
        neighbour order above).
    """
    try:
        grid = tuple(_count("grid extent", g, 1) for g in grid)
    except TypeError:
        raise ValueError(f"grid must be a tuple of 2 or 3 integers, got {grid!r}") from None
    if len(grid) not in (2, 3):
        raise ValueError(f"grid must have 2 or 3 axes, got {len(grid)}")
    ranks = math.prod(grid)
    if ranks < 2:
        raise ValueError(f"grid {grid} has one rank; a halo exchange needs two")
    size, iterations = _count("size", size, 1), _count("iterations", iterations, 1)
    tag = _count("tag", tag, 0)
    if not isinstance(periodic, bool | np.bool_):
        raise ValueError(f"periodic must be True or False, got {periodic!r}")
    compute_ns = _compute_ns(compute)
    axes = len(grid)
    coords = np.stack(np.unravel_index(np.arange(ranks), grid), axis=1)
    neighbours, send_tags, recv_tags = [], [], []  # (ranks,) per direction
    for a in range(axes):
        for direction, offset in ((0, -1), (1, +1)):
            moved = coords.copy()
            moved[:, a] += offset
            inside = (moved[:, a] >= 0) & (moved[:, a] < grid[a])
            moved[:, a] %= grid[a]
            peer = np.ravel_multi_index(tuple(moved.T), grid)
            valid = (inside | periodic) & (peer != np.arange(ranks))
            neighbours.append(np.where(valid, peer, -1))
            send_tags.append(2 * a + direction)
            recv_tags.append(2 * a + (1 - direction))  # the neighbour sent it the other way
    peers = np.stack(neighbours, axis=1)  # (ranks, directions), -1 = none
    valid = peers >= 0
    degree = valid.sum(axis=1)
    # position of each valid direction among the rank's sends (and receives)
    slot = np.cumsum(valid, axis=1) - 1
    ops = _Operations()
    rank_of = np.broadcast_to(np.arange(ranks)[:, None], peers.shape)[valid]
    slot_of = slot[valid]
    peer_of = peers[valid]
    per_iteration = 1 + 2 * degree  # calc, sends, receives
    step = 2 * axes
    send_tag = np.broadcast_to(np.array(send_tags), peers.shape)[valid]
    recv_tag = np.broadcast_to(np.array(recv_tags), peers.shape)[valid]
    # for the dependencies on the previous iteration: each rank's 2 * degree operations
    previous_rank = np.repeat(np.arange(ranks), 2 * degree)
    previous_index = np.arange(previous_rank.size) - np.repeat(
        np.cumsum(2 * degree) - 2 * degree, 2 * degree)
    receives_rank = np.repeat(rank_of, 2 * degree[rank_of])
    receives_slot = np.repeat(slot_of, 2 * degree[rank_of])
    receives_index = np.arange(receives_rank.size) - np.repeat(
        np.cumsum(2 * degree[rank_of]) - 2 * degree[rank_of], 2 * degree[rank_of])
    for it in range(iterations):
        base = it * per_iteration  # (ranks,)
        ops.add(np.arange(ranks), base, CALC, ns=compute_ns)
        send_at = base[rank_of] + 1 + slot_of
        recv_at = base[rank_of] + 1 + degree[rank_of] + slot_of
        ops.add(rank_of, send_at, SEND, peer_of, size, tag + step * it + send_tag)
        ops.add(rank_of, recv_at, RECV, peer_of, size, tag + step * it + recv_tag)
        ops.requires(rank_of, send_at, base[rank_of])
        if it:
            before = (it - 1) * per_iteration + 1  # first send of the previous iteration
            ops.requires(previous_rank, base[previous_rank],
                         before[previous_rank] + previous_index)
            ops.requires(receives_rank,
                         base[receives_rank] + 1 + degree[receives_rank] + receives_slot,
                         before[receives_rank] + receives_index)
    return ops.schedule(ranks)
