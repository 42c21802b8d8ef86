"""The schedule kernel's inputs built in a few passes over a schedule's columns.

:func:`jitterlab.sim.schedules.arguments.prepare_arguments` calls these numba passes;
together they give what :func:`jitterlab.testing_layout.step_major_order`, the column
copies, :func:`jitterlab.testing_layout.successors` (twice) and
:func:`jitterlab.testing_layout.channels` give one by one (the tests' plain references),
with less memory traffic:

* :func:`rank_offsets` finds where each rank's operations begin (a galloping search in
  the rank column, which never decreases);
* :func:`scan` reads kind, peer, tag, cpu and nic once: wildcards, CPUs and NICs per
  host, and the sends and receives of each tile of receiving ranks;
* :func:`lay_out` walks the ranks a *tile* of 2**``shift`` ranks at a time, step by
  step inside a tile: it numbers the operations, copies their columns, counts waits,
  reverses the dependencies and files each send under its receiver's tile. A
  dependency stays inside its rank, so a tile holds both ends of all of its own: the
  dependents are counted and filed per tile, while its operations are in the cache;
  where each operation's dependents go is the number of dependents of the earlier
  steps (one short pre-pass, :func:`_step_starts`) plus those of the same step
  already laid out;
* :func:`link` walks the tiles again when there are no wildcards and numbers the
  channels, one small hash table per tile of receivers (their receives, rank by rank,
  then the sends filed under the tile).

Why tiles: in the step-major numbering the k-th operations of consecutive ranks are
neighbours, and the steps lie (number of ranks) entries apart, a power of two on the
usual 2**m ranks. Read rank after rank, the writes go to as many places as there are
steps, all in the same cache sets; read step after step over a tile of
:data:`TILE_SHIFT` ranks, each write fills whole cache lines one after the other (on
65 536 ranks: 0.06 instead of 0.25 s for numbering and six columns).

The results equal those of the one-by-one functions (tests/test_schedule_layout.py),
except that channel ids are numbered in another order (any numbering that gives one id
per (receiver, sender, tag) gives the same matches).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["rank_offsets", "scan", "lay_out", "link", "TILE_SHIFT"]

_SEND, _RECV, _CALC = 1, 2, 3
#: log2 of the ranks walked together in the step-major numbering
TILE_SHIFT = 7


@numba.njit(cache=True)
def rank_offsets(rank, num_ranks):
    """int64 (num_ranks + 1): where the operations of each rank begin (``rank`` never
    decreases); a galloping search from the previous rank's start."""
    n = rank.size
    out = np.empty(num_ranks + 1, dtype=np.int64)
    out[0] = 0
    low = 0
    for r in range(1, num_ranks + 1):
        if low >= n or rank[low] >= r:
            out[r] = low
            continue
        step = 1  # rank[low] < r: gallop, then bisect (rank[a] < r <= rank[b])
        a = low
        b = low + 1
        while b < n and rank[b] < r:
            a = b
            step *= 2
            b = a + step
        b = min(b, n)
        while b - a > 1:
            middle = (a + b) >> 1
            if rank[middle] < r:
                a = middle
            else:
                b = middle
        out[r] = b
        low = b
    return out


@numba.njit(cache=True)
def scan(kind, rank, peer, tag, cpu, nic, num_ranks, shift):
    """One pass over the columns: ``(exact, n_cpus, n_nics, filed_offsets, widest_tile)``.

    ``exact``: no wildcard (no send or receive with tag −1, no receive from −1);
    ``n_cpus``/``n_nics``: the highest cpu/nic + 1 (1 without operations);
    ``filed_offsets`` (tiles + 1): where the sends to each tile of 2**``shift``
    receiving ranks are filed (a CSR of the sends by their receiver's tile);
    ``widest_tile``: the most sends and receives of one tile of receivers.
    """
    n = kind.size
    tiles = ((num_ranks - 1) >> shift) + 1
    filed = np.zeros(tiles + 1, dtype=np.int64)
    received = np.zeros(tiles, dtype=np.int64)
    exact = True
    top_cpu = 0
    top_nic = 0
    for i in range(n):
        k = kind[i]
        top_cpu = max(top_cpu, cpu[i])
        top_nic = max(top_nic, nic[i])
        if k == _CALC:
            continue
        if tag[i] == -1 or (k == _RECV and peer[i] == -1):
            exact = False
        if k == _SEND:
            filed[(peer[i] >> shift) + 1] += 1
        else:
            received[rank[i] >> shift] += 1
    widest = 0
    for b in range(tiles):
        widest = max(widest, filed[b + 1] + received[b])
        filed[b + 1] += filed[b]
    return exact, np.int64(top_cpu) + 1, np.int64(top_nic) + 1, filed, widest


@numba.njit(cache=True)
def _tile(offsets, r0, shift, first, stop):
    """The operations of the tile of ranks from ``r0``: ``first[q]``, ``stop[q]`` of
    rank r0 + q; returns (ranks, steps)."""
    ranks = min(offsets.size - 1 - r0, 1 << shift)
    steps = 0
    for q in range(ranks):
        first[q] = offsets[r0 + q]
        stop[q] = offsets[r0 + q + 1]
        steps = max(steps, stop[q] - first[q])
    return ranks, steps


@numba.njit(cache=True)
def lay_out(offsets, step_major, copy, copy_units, exact, kind, rank, peer, size, tag,
            duration, cpu, nic, requires_offsets, requires, irequires_offsets, irequires,
            resolution, shift, filed_offsets, placement, origin, kind_, rank_, peer_, size_,
            tag_, cpu_, nic_, calc, waits, succ_offsets, succ, isucc_offsets, isucc, channel,
            filed_index, filed_receiver, filed_key):
    """Number the operations, copy their columns, count their waits, reverse their
    dependencies, file the sends; returns the longest calc [ticks].

    ``step_major``: new index of the k-th operation of rank r = the operations of every
    rank's earlier steps, then of the lower ranks at step k (else the schedule's own
    index; use ``shift`` = 0 then, to read the operations in order). ``copy``: write
    the columns into ``kind_`` … ``size_`` (``tag_`` only when not ``exact``), and
    ``cpu_``, ``nic_`` when ``copy_units`` (else they are all 0, as given).
    ``succ_offsets``, ``succ`` (n + 1; requires.size): the CSR of the operations that
    wait for new index j (in increasing schedule index, as new indices); ``isucc_*``
    the same of irequires (untouched without irequires). Without
    ``exact``, ``channel`` is the receiving host; with it, −1 here and each send is
    filed under its receiver's tile (``filed_*``: new index, receiver, sender << 32 |
    tag) for :func:`link`.
    """
    p = offsets.size - 1
    widest = 0
    for r in range(p):
        widest = max(widest, offsets[r + 1] - offsets[r])
    cursor = np.zeros(widest + 1, dtype=np.int64)  # next new index of each step
    if step_major:
        longer = np.zeros(widest + 1, dtype=np.int64)  # ranks with exactly k operations
        for r in range(p):
            longer[offsets[r + 1] - offsets[r]] += 1
        ranks_left = p - longer[0]
        for k in range(widest):
            cursor[k + 1] = cursor[k] + ranks_left
            ranks_left -= longer[k + 1]
    fill = filed_offsets[:-1].copy()
    has_irequires = irequires.size > 0
    first = np.empty(1 << shift, dtype=np.int64)
    stop = np.empty(1 << shift, dtype=np.int64)
    # where the dependents of the next operation of each step go (step-major: the
    # dependents of all earlier steps first; else one running position)
    succ_next = _step_starts(offsets, requires_offsets, requires, widest, step_major)
    isucc_next = _step_starts(offsets, irequires_offsets, irequires,
                              widest if has_irequires else 0, step_major)
    most = 0  # the most operations of a tile
    for r0 in range(0, p, 1 << shift):
        most = max(most, offsets[min(r0 + (1 << shift), p)] - offsets[r0])
    succ_fill = np.empty(most, dtype=np.int64)  # by operation - the tile's first
    isucc_fill = np.empty(most if has_irequires else 0, dtype=np.int64)
    longest = 0
    for r0 in range(0, p, 1 << shift):
        ranks, steps = _tile(offsets, r0, shift, first, stop)
        base, top = offsets[r0], offsets[r0 + ranks]
        # the dependents of each of the tile's operations (inside a rank: in the tile)
        _count_dependents(requires_offsets, requires, base, top, succ_fill)
        if has_irequires:
            _count_dependents(irequires_offsets, irequires, base, top, isucc_fill)
        for k in range(steps):
            s = k if step_major else 0
            j = cursor[k]
            for q in range(ranks):
                i = first[q] + k
                if i >= stop[q]:
                    continue
                if not step_major:
                    j = i
                placement[i] = j
                origin[j] = i
                kd = kind[i]
                if copy:
                    kind_[j], rank_[j], peer_[j], size_[j] = kd, rank[i], peer[i], size[i]
                    if copy_units:
                        cpu_[j], nic_[j] = cpu[i], nic[i]
                    if not exact:
                        tag_[j] = tag[i]
                ticks = np.int64(0)  # sends and receives: no division (13 % of the pass)
                if duration[i] != 0.0:
                    ticks = np.int64(np.rint(duration[i] / resolution))
                calc[j] = ticks
                longest = max(longest, ticks)
                w = requires_offsets[i + 1] - requires_offsets[i]
                if has_irequires:
                    w += irequires_offsets[i + 1] - irequires_offsets[i]
                waits[j] = w
                f = succ_next[s]
                succ_offsets[j] = f
                succ_next[s] = f + succ_fill[i - base]
                succ_fill[i - base] = f  # now where its next dependent goes
                if has_irequires:
                    f = isucc_next[s]
                    isucc_offsets[j] = f
                    isucc_next[s] = f + isucc_fill[i - base]
                    isucc_fill[i - base] = f
                if not exact:
                    channel[j] = peer[i] if kd == _SEND else r0 + q
                else:
                    channel[j] = -1
                    if kd == _SEND:
                        receiver = peer[i]
                        f = fill[receiver >> shift]
                        fill[receiver >> shift] = f + 1
                        filed_index[f] = j
                        filed_receiver[f] = receiver
                        filed_key[f] = (np.int64(r0 + q) << 32) | tag[i]
                j += 1
            cursor[k] = j
        # each dependent, in increasing schedule index, under what it waits for
        _file_dependents(requires_offsets, requires, base, top, placement, succ_fill, succ)
        if has_irequires:
            _file_dependents(irequires_offsets, irequires, base, top, placement, isucc_fill,
                             isucc)
    succ_offsets[succ_offsets.size - 1] = requires.size
    if has_irequires:
        isucc_offsets[isucc_offsets.size - 1] = irequires.size
    return longest


@numba.njit(cache=True)
def _step_starts(offsets, csr_offsets, targets, widest, step_major):
    """Where the dependents of step k's first operation go (step-major: the number of
    dependents of all operations of earlier steps; else [0])"""
    starts = np.zeros(widest + 1, dtype=np.int64)
    if not step_major or widest == 0:
        return starts
    for r in range(offsets.size - 1):
        first = offsets[r]
        for e in range(csr_offsets[first], csr_offsets[offsets[r + 1]]):
            starts[targets[e] - first + 1] += 1
    for k in range(widest):
        starts[k + 1] += starts[k]
    return starts


@numba.njit(cache=True, inline="always")
def _count_dependents(csr_offsets, targets, base, top, count):
    """``count[b - base]``: the operations of [base, top) that wait for b."""
    for t in range(top - base):
        count[t] = 0
    for e in range(csr_offsets[base], csr_offsets[top]):
        count[targets[e] - base] += 1


@numba.njit(cache=True, inline="always")
def _file_dependents(csr_offsets, targets, base, top, placement, fill, out):
    """Each operation i of [base, top) (new index ``placement[i]``) into ``out`` at
    ``fill[b - base]`` of each b it waits for, in increasing i."""
    for i in range(base, top):
        j = placement[i]
        for e in range(csr_offsets[i], csr_offsets[i + 1]):
            b = targets[e] - base
            f = fill[b]
            out[f] = j
            fill[b] = f + 1


@numba.njit(cache=True, inline="always")
def _channel_id(receiver, key, mask, slots, used, n_used, count):
    """The channel of (receiver, key = sender << 32 | tag) in a tile's hash table (open
    addressing; a slot is a row of ``slots``: receiver, key, id, so that a probe reads
    one cache line), a new one numbered ``count`` if absent; returns (id, n_used,
    count)."""
    mix = receiver * 0x9E3779B1 + (key >> 32) * 0x85EBCA77 + (key & 0xFFFFFFFF) * 0xC2B2AE3D
    slot = (mix ^ (mix >> 17)) & mask
    while True:
        if slots[slot, 2] < 0:
            slots[slot, 0], slots[slot, 1], slots[slot, 2] = receiver, key, count
            used[n_used] = slot
            return count, n_used + 1, count + 1
        if slots[slot, 0] == receiver and slots[slot, 1] == key:
            return slots[slot, 2], n_used, count
        slot = (slot + 1) & mask


@numba.njit(cache=True)
def link(offsets, exact, kind, peer, tag, shift, filed_offsets, widest_tile, placement,
         channel, filed_index, filed_receiver, filed_key):
    """Number the channels; returns their number.

    With ``exact``, each (receiver, sender, tag) gets a channel id: per tile of
    2**``shift`` receivers, their receives, then the sends filed under the tile, in a
    hash table of ``widest_tile`` entries at most. Without, the channels are the
    receiving hosts (:func:`lay_out` wrote them).
    """
    p = offsets.size - 1
    if not exact:
        return p
    capacity = 4
    while capacity < 2 * widest_tile:
        capacity *= 2
    slots = np.empty((capacity, 4), dtype=np.int64)  # receiver, key, id, (padding)
    slots[:, 2] = -1
    used = np.empty(capacity, dtype=np.int64)
    mask = capacity - 1
    count = 0
    first = np.empty(1 << shift, dtype=np.int64)
    stop = np.empty(1 << shift, dtype=np.int64)
    for r0 in range(0, p, 1 << shift):
        ranks, _ = _tile(offsets, r0, shift, first, stop)
        n_used = 0
        for q in range(ranks):  # rank by rank: the schedule's order
            for i in range(first[q], stop[q]):
                if kind[i] == _RECV:
                    key = (np.int64(peer[i]) << 32) | tag[i]
                    channel[placement[i]], n_used, count = _channel_id(
                        r0 + q, key, mask, slots, used, n_used, count)
        for f in range(filed_offsets[r0 >> shift], filed_offsets[(r0 >> shift) + 1]):
            channel[filed_index[f]], n_used, count = _channel_id(
                filed_receiver[f], filed_key[f], mask, slots, used, n_used, count)
        for q in range(n_used):
            slots[used[q], 2] = -1
    return count if exact else p
