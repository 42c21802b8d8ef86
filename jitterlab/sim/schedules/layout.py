"""The schedule kernel's inputs built in a few passes over a schedule's columns.

:func:`jitterlab.sim.schedules.arguments.prepare_arguments` calls these numba passes;
together they give what :func:`~.arguments.step_major_order`, the column copies,
:func:`~.arguments.successors` (twice) and :func:`~.arguments.channels` give one by one,
with less memory traffic:

* :func:`rank_offsets` finds where each rank's operations begin (a galloping search in
  the rank column, which never decreases);
* :func:`scan` reads kind, peer, tag, cpu and nic once: wildcards, CPUs and NICs per
  host, and the sends and receives of each tile of receiving ranks;
* :func:`lay_out` walks the ranks a *tile* of 2**``shift`` ranks at a time, step by
  step inside a tile: it numbers the operations, copies their columns, counts waits
  and dependents, and files each send under its receiver's tile;
* :func:`link` walks the tiles again: it fills the reversed dependencies and numbers
  the channels, one small hash table per tile of receivers (their receives, then the
  sends filed under the tile).

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
            tag_, cpu_, nic_, calc, waits, succ_offsets, isucc_offsets, channel, filed_index,
            filed_receiver, filed_key):
    """Number the operations, copy their columns, count waits and dependents, file the
    sends; returns the longest calc [ticks].

    ``step_major``: new index of the k-th operation of rank r = the operations of every
    rank's earlier steps, then of the lower ranks at step k (else the schedule's own
    index; use ``shift`` = 0 then, to read the operations in order). ``copy``: write
    the columns into ``kind_`` … ``size_`` (``tag_`` only when not ``exact``), and
    ``cpu_``, ``nic_`` when ``copy_units`` (else they are all 0, as given).
    ``succ_offsets``/``isucc_offsets`` (n + 2, zeros): the dependents of new index j
    are counted at j + 2 (:func:`link` turns the counts into offsets). Without
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
    longest = 0
    for r0 in range(0, p, 1 << shift):
        ranks, steps = _tile(offsets, r0, shift, first, stop)
        for k in range(steps):
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
        # the tile's dependencies (inside a rank, so all of them are numbered now)
        for k in range(steps):
            for q in range(ranks):
                i = first[q] + k
                if i >= stop[q]:
                    continue
                for e in range(requires_offsets[i], requires_offsets[i + 1]):
                    succ_offsets[placement[requires[e]] + 2] += 1
                if has_irequires:
                    for e in range(irequires_offsets[i], irequires_offsets[i + 1]):
                        isucc_offsets[placement[irequires[e]] + 2] += 1
    return longest


@numba.njit(cache=True, inline="always")
def _channel_id(receiver, key, mask, slot_receiver, slot_key, slot_id, used, n_used, count):
    """The channel of (receiver, key = sender << 32 | tag) in a tile's hash table (open
    addressing), a new one numbered ``count`` if absent; returns (id, n_used, count)."""
    mix = receiver * 0x9E3779B1 + (key >> 32) * 0x85EBCA77 + (key & 0xFFFFFFFF) * 0xC2B2AE3D
    slot = (mix ^ (mix >> 17)) & mask
    while True:
        if slot_id[slot] < 0:
            slot_receiver[slot], slot_key[slot], slot_id[slot] = receiver, key, count
            used[n_used] = slot
            return count, n_used + 1, count + 1
        if slot_receiver[slot] == receiver and slot_key[slot] == key:
            return slot_id[slot], n_used, count
        slot = (slot + 1) & mask


@numba.njit(cache=True)
def _prefix(counts):
    """counts[j + 2] (dependents of j) -> counts[j + 1] = first slot of j."""
    total = 0
    for j in range(2, counts.size):
        total += counts[j]
        counts[j] = total


@numba.njit(cache=True)
def link(offsets, exact, kind, peer, tag, requires_offsets, requires, irequires_offsets,
         irequires, shift, filed_offsets, widest_tile, placement, succ_offsets, succ,
         isucc_offsets, isucc, channel, filed_index, filed_receiver, filed_key):
    """Fill the reversed dependencies and the channels; returns the number of channels.

    ``succ_offsets``/``isucc_offsets`` hold :func:`lay_out`'s counts and become the CSR
    offsets of ``succ``/``isucc`` (the dependents of new index j, in increasing
    schedule index, in new indices; read them as ``[:n + 1]``). With ``exact``, each
    (receiver, sender, tag) gets a channel id: per tile of 2**``shift`` receivers,
    their receives, then the sends filed under the tile, in a hash table of
    ``widest_tile`` entries at most.
    """
    p = offsets.size - 1
    has_irequires = irequires.size > 0
    _prefix(succ_offsets)
    if has_irequires:
        _prefix(isucc_offsets)
    capacity = 4
    while capacity < 2 * widest_tile:
        capacity *= 2
    slot_receiver = np.empty(capacity if exact else 0, dtype=np.int64)
    slot_key = np.empty(capacity if exact else 0, dtype=np.int64)
    slot_id = np.full(capacity if exact else 0, -1, dtype=np.int64)
    used = np.empty(capacity if exact else 0, dtype=np.int64)
    mask = capacity - 1
    count = 0
    first = np.empty(1 << shift, dtype=np.int64)
    stop = np.empty(1 << shift, dtype=np.int64)
    for r0 in range(0, p, 1 << shift):
        ranks, steps = _tile(offsets, r0, shift, first, stop)
        n_used = 0
        for k in range(steps):
            for q in range(ranks):
                i = first[q] + k
                if i >= stop[q]:
                    continue
                j = placement[i]
                for e in range(requires_offsets[i], requires_offsets[i + 1]):
                    b = placement[requires[e]] + 1
                    f = succ_offsets[b]
                    succ[f] = j
                    succ_offsets[b] = f + 1
                if has_irequires:
                    for e in range(irequires_offsets[i], irequires_offsets[i + 1]):
                        b = placement[irequires[e]] + 1
                        f = isucc_offsets[b]
                        isucc[f] = j
                        isucc_offsets[b] = f + 1
                if exact and kind[i] == _RECV:
                    key = (np.int64(peer[i]) << 32) | tag[i]
                    channel[j], n_used, count = _channel_id(
                        r0 + q, key, mask, slot_receiver, slot_key, slot_id, used, n_used,
                        count)
        if not exact:
            continue
        for f in range(filed_offsets[r0 >> shift], filed_offsets[(r0 >> shift) + 1]):
            channel[filed_index[f]], n_used, count = _channel_id(
                filed_receiver[f], filed_key[f], mask, slot_receiver, slot_key, slot_id, used,
                n_used, count)
        for q in range(n_used):
            slot_id[used[q]] = -1
    return count if exact else p
