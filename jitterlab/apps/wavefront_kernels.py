"""numba kernel of the wavefront (pipelined sweep) application model.

Arrays in, arrays out. Ranks form a px × py grid (rank = j·px + i). A *pass* is one
block of one sweep on every rank: passes run in program order (iteration, sweep,
block) and, inside a pass, ranks are visited from the sweep's origin corner outwards,
so every upstream rank has sent before its downstream neighbour receives. Per block a
rank receives from its upstream x neighbour, then from its upstream y neighbour,
computes, sends downstream x, then downstream y; each step waits for the one before.

Noise: ``mode`` 0 none, 1 a trace (packed as in :mod:`jitterlab.sim.replay_kernels`, each
rank at its own offset; compute, send and receive CPU time all meet the trace's
jitter), 2 a δ per rank and block added to the compute (``delta[pass, rank]``).
The plain-Python twin is :func:`jitterlab.testing.wavefront_reference`.
"""

from __future__ import annotations

import numba
import numpy as np

from ..sim.event_queue import bit_length
from ..sim.replay_kernels import (
    ARRIVE_X,
    ARRIVE_Y,
    CLOCK,
    NEXT,
    PREV_END,
    busy,
    new_state,
    quick,
)

__all__ = ["run_passes", "new_state"]

NO_NOISE, TRACE, DELTA = 0, 1, 2


@numba.njit(cache=True, inline="always")
def sweep_rank(ii, jj, dx, dy, px, py):
    """The rank met ``ii``-th along x and ``jj``-th along y by a sweep in direction (dx, dy)
    of a px × py grid numbered row by row: the order of a pipelined sweep's cells."""
    i = ii if dx > 0 else px - 1 - ii
    j = jj if dy > 0 else py - 1 - jj
    return j * px + i


@numba.njit(cache=True)
def run_passes(state, first, count, px, py, corners, blocks, work, send, recv,
               wire_x, wire_y, allreduce, mode, table, offsets, delta, iteration_end,
               ops_out):
    """Run passes ``first`` … ``first + count − 1`` (global pass numbers).

    ``delta[k, rank]`` is the noise of pass ``first + k`` (mode 2). After the last pass
    of an iteration every rank waits for the slowest, plus ``allreduce`` [s] if that is
    >= 0 (a negative value: no synchronisation); ``iteration_end[it]`` receives the
    end of iteration ``it``: the slowest rank's finish, plus the all-reduce. When
    ``ops_out`` is not empty, ``ops_out[g, rank, step]`` receives the end of each step
    of global pass g (receive x, receive y, compute, send x, send y; untouched where a
    rank has no such step).
    """
    keep_ops = ops_out.shape[0] > 0
    n_sweeps = corners.shape[0]
    per_iteration = n_sweeps * blocks
    for k in range(count):
        g = first + k
        sweep = (g // blocks) % n_sweeps
        dx = corners[sweep, 0]
        dy = corners[sweep, 1]
        for jj in range(py):
            for ii in range(px):
                rank = sweep_rank(ii, jj, dx, dy, px, py)
                t = state[rank, CLOCK]
                for step in range(5):  # receive x, receive y, compute, send x, send y
                    if step == 0:
                        if ii == 0:
                            continue
                        t = max(t, state[rank, ARRIVE_X])
                        cpu = recv
                    elif step == 1:
                        if jj == 0:
                            continue
                        t = max(t, state[rank, ARRIVE_Y])
                        cpu = recv
                    elif step == 2:
                        cpu = work
                        if mode == 2:
                            cpu += delta[k, rank]
                    elif step == 3:
                        if ii == px - 1:
                            continue
                        cpu = send
                    else:
                        if jj == py - 1:
                            continue
                        cpu = send
                    if mode == 1 and cpu > 0.0:
                        end = quick(t, cpu, state[rank, PREV_END], state[rank, NEXT])
                        t = end if end >= 0.0 else busy(state, rank, t, cpu, table, offsets)
                    else:
                        t = t + cpu
                    if keep_ops:
                        ops_out[g, rank, step] = t
                    if step == 3:
                        state[rank + dx, ARRIVE_X] = t + wire_x
                    elif step == 4:
                        state[rank + dy * px, ARRIVE_Y] = t + wire_y
                state[rank, CLOCK] = t
        if (g + 1) % per_iteration == 0:
            end = state[:, CLOCK].max()
            if allreduce >= 0.0:
                end += allreduce
                state[:, CLOCK] = end
            iteration_end[(g + 1) // per_iteration - 1] = end
    return state


@numba.njit(cache=True)
def pipeline_pieces(px, py, corners, blocks, iterations, work, send, recv, wire_x, wire_y,
                    allreduce, slopes, finish, iteration_end, level_count, node_size=1,
                    intra_wire_x=0.0, intra_wire_y=0.0):
    """Noiseless finish of every rank, with the blocks summed in closed form.

    Without noise a rank's block b ends at E_b = max(E_{b-1} + c, X_b + c,
    Y_b + c − o_recv·[x upstream]) where c is the rank's cost per block and X_b, Y_b
    the arrivals. Every arrival and finish is a maximum of lines α + b·σ whose slopes
    σ are block costs (``slopes``, sorted); a rank keeps one offset per slope, and the
    recurrence turns a line of slope σ into one of slope max(σ, c). So a sweep costs
    O(ranks × slopes) whatever the number of blocks.

    ``finish[rank]`` receives each rank's last finish; ``iteration_end[it]`` the
    slowest rank's finish of iteration ``it``. ``level_count`` (if not empty) receives
    how many blocks sit at each level of the block dependency graph (a block's level is
    the number of blocks before it on the longest chain of dependencies ending at it),
    so that no chain holds two blocks of one level.

    Ranks ``node_size`` at a time share a node (rank // node_size); a message between
    two ranks of one node spends ``intra_wire_x`` or ``intra_wire_y`` on the wire
    instead of ``wire_x`` or ``wire_y``.
    """
    n_ranks = px * py
    n_slopes = slopes.size
    n_sweeps = corners.shape[0]
    minus_inf = -np.inf
    pieces = np.full((n_ranks, n_slopes), minus_inf)  # finish lines of the current sweep
    start = np.zeros(n_ranks)                          # end of the previous sweep per rank
    depth = np.zeros(n_ranks, dtype=np.int64)          # first free level after it
    depth_pieces = np.zeros(n_ranks, dtype=np.int64)   # level of the sweep's first block
    incoming = np.empty(n_slopes)
    counting = level_count.size > 0
    last_block = blocks - 1.0
    for it in range(iterations):
        for sweep in range(n_sweeps):
            dx = corners[sweep, 0]
            dy = corners[sweep, 1]
            for jj in range(py):
                for ii in range(px):
                    rank = sweep_rank(ii, jj, dx, dy, px, py)
                    ux, uy = ii > 0, jj > 0
                    vx, vy = ii < px - 1, jj < py - 1
                    cost = work + (ux + uy) * recv + (vx + vy) * send
                    for k in range(n_slopes):
                        incoming[k] = minus_inf
                    first_depth = depth[rank]
                    if ux:  # x arrival: upstream finish − its y send + wire, then c
                        up = rank - dx
                        wire = intra_wire_x if up // node_size == rank // node_size else wire_x
                        shift = wire - (jj < py - 1) * send + cost
                        for k in range(n_slopes):
                            incoming[k] = max(incoming[k], pieces[up, k] + shift)
                        first_depth = max(first_depth, depth_pieces[up] + 1)
                    if uy:
                        up = rank - dy * px
                        wire = intra_wire_y if up // node_size == rank // node_size else wire_y
                        shift = wire + cost - ux * recv
                        for k in range(n_slopes):
                            incoming[k] = max(incoming[k], pieces[up, k] + shift)
                        first_depth = max(first_depth, depth_pieces[up] + 1)
                    own = 0
                    while slopes[own] < cost:
                        own += 1
                    pieces[rank, own] = start[rank] + cost
                    for k in range(n_slopes):
                        if k < own:
                            pieces[rank, own] = max(pieces[rank, own], incoming[k])
                            pieces[rank, k] = minus_inf
                        elif k > own:
                            pieces[rank, k] = incoming[k]
                        else:
                            pieces[rank, own] = max(pieces[rank, own], incoming[k])
                    depth_pieces[rank] = first_depth
                    if counting:
                        level_count[first_depth] += 1
                        level_count[first_depth + blocks] -= 1
            for rank in range(n_ranks):  # each rank's last block
                end = minus_inf
                for k in range(n_slopes):
                    end = max(end, pieces[rank, k] + last_block * slopes[k])
                start[rank] = end
                depth[rank] = depth_pieces[rank] + blocks
        end = start.max()
        if allreduce >= 0.0:
            end += allreduce
            start[:] = end
            deepest = depth.max()
            depth[:] = deepest
        iteration_end[it] = end
    for rank in range(n_ranks):
        finish[rank] = start[rank]
    if counting:
        for level in range(1, level_count.size):
            level_count[level] += level_count[level - 1]


# ---------------------------------------------------------------------------------------
# progress="on_arrival": a discrete-event run in which each rank's CPU takes a message
# as soon as it is free after the message arrives (LogGOPSim's rule), not when the
# program reaches the receive. Events are ordered by time, then by creation (a retried
# event keeps its place), as in LogGOPSim built with strict ordering.
#
# An event is a time and a key = stamp << what bits | what, ``what`` = rank·8 + kind·4 +
# slot (kind 0: the rank's current operation, 1: a message into face ``slot``), so it
# needs no record of its own. No event is dated before the latest (``last``): the events
# at ``last`` wait in ``fifo``, sorted by key; a later one in a bucket, a list of rows of
# ``_ROW`` events (times in ``row_time``, keys in ``row_key``). Without noise every time
# is a sum of costs, so times count in the costs' greatest common divisor, and no event
# is dated more than ``ahead`` = max(work, recv, send + wire) after ``last``: then, if
# that is below ``_MOST_SLOTS``, bucket t mod ``slots`` (a power of two > ``ahead``)
# holds the events at time t only (a calendar), and the next time's bucket is sorted
# into the fifo. Otherwise (a trace) the buckets are radix buckets: b = bit length of
# (time ^ last); when the fifo is empty, the lowest non-empty bucket is copied out to
# ``moving`` and its events pushed again after ``last`` moved to their least time
# (an event moves 1.7 times on average on the 64 × 64 benchmark grid).
#
# Speed: numba counts references (an atomic add and subtract) on every array variable
# that is assigned again inside a loop, and on every array passed to an inlined
# helper; in the event loop that was 3/4 of the time (perf: NRT_incref/NRT_decref; 64 × 64
# grid: 127 ns per event with them, 24 without, 14 with the calendar). So the loop
# (:func:`_advance`) never replaces an array and calls no helper with arrays: when an
# array is full it returns, the caller (:func:`run_on_arrival`) grows it and calls it
# again; the loop's scalars wait in ``registers`` between calls. Every push, of an event
# or of a moved one, goes through the one push code at the end of the loop.
# The hottest indices are cast to np.uint64: numba then skips the negative-index fix-up
# of each access (64 × 64: 33.5 -> 30.3 ms, same batch).

_MSG_BIT = 4
_ROW = 128  # events per row of a bucket
_EMPTY = np.iinfo(np.int64).max
# ``registers``: the latest time, the fifo's head and tail, the next stamp, the events
# handled, the first free row, the free rows, the moved events not yet pushed again
_LAST, _HEAD, _TAIL, _STAMP, _EVENTS, _FREE, _N_FREE, _MOVED = range(8)
# what _advance returns: all events handled, or the array to grow first
_DONE, _MORE_FIFO, _MORE_ROWS = 0, 1, 2
_MOST_SLOTS = 4096  # a calendar longer than this: radix buckets instead


@numba.njit(cache=True, inline="always")
def _step_exists(step, i, j, px, py, dx, dy):
    if step == 0:
        return 0 <= i - dx < px
    if step == 1:
        return 0 <= j - dy < py
    if step == 2:
        return True
    if step == 3:
        return 0 <= i + dx < px
    return 0 <= j + dy < py


@numba.njit(cache=True)
def _cpu(state, rank, t, cpu, table, offsets, scale):
    """End of ``cpu`` > 0 of CPU time started at t on the rank's trace [integer 1/scale s]."""
    end = busy(state, rank, t / scale, cpu / scale, table, offsets)
    return max(np.int64(np.round(end * scale)), t + cpu)


@numba.njit(cache=True)
def _advance(registers, px, py, n_passes, work, send, recv, wire_x, wire_y, mode, table,
             offsets, scale, what_bits, slots, cpu_free, pass_of, step_of, waiting, unmatched,
             pass_end, pass_dx, pass_dy, column, row, state, fifo, moving, bucket_first,
             bucket_last, bucket_least, bucket_size, row_next, row_fill,
             row_time, row_key):
    """Handle events until the queue is empty (returns ``_DONE``) or an array is too
    small for the next step (returns ``_MORE_FIFO`` for ``fifo`` and ``moving``,
    ``_MORE_ROWS`` for the rows); nothing is half done when it returns."""
    what_mask = (1 << what_bits) - 1
    last, f_head, f_tail = registers[_LAST], registers[_HEAD], registers[_TAIL]
    stamp, events = registers[_STAMP], registers[_EVENTS]
    free_row, n_free, n_moving = registers[_FREE], registers[_N_FREE], registers[_MOVED]
    moved = registers[_MOVED + 1]  # moving[moved:n_moving] wait to be pushed again
    status = _DONE
    while True:
        if moved == n_moving and f_tail + 2 > fifo.size:  # room for two pushes at last
            for q in range(f_tail - f_head):
                fifo[q] = fifo[f_head + q]
            f_tail -= f_head
            f_head = 0
            if f_tail + 2 > fifo.size:  # handled events made no room: grow
                status = _MORE_FIFO
                break
        if n_free < 66:  # two pushes, or the 64 buckets a moved bucket may start
            status = _MORE_ROWS
            break
        time_a = key_a = time_b = key_b = -1  # the pushes of this step (time -1: none)
        if moved < n_moving:  # re-push the next moved event
            time_a, key_a = moving[2 * moved], moving[2 * moved + 1]
            moved += 1
        elif f_head == f_tail:  # the next time's events
            if slots > 0:  # a calendar: slot t mod slots holds time t only
                b = -1
                later = 0
                for ahead in range(1, slots):
                    if bucket_first[(last + ahead) & (slots - 1)] >= 0:
                        b, later = (last + ahead) & (slots - 1), ahead
                        break
                if b < 0:
                    break
                if bucket_size[b] + 2 > fifo.size:
                    status = _MORE_FIFO
                    break
                last += later
            else:  # radix buckets: the lowest non-empty one
                b = 1
                while b < 65 and bucket_first[b] < 0:
                    b += 1
                if b == 65:
                    break
                if 2 * bucket_size[b] > moving.size or bucket_size[b] + 2 > fifo.size:
                    status = _MORE_FIFO
                    break
                last = bucket_least[b]
            f_head = f_tail = 0
            n_moving = moved = 0
            r = bucket_first[b]
            while r >= 0:
                for k in range(row_fill[r]):
                    if slots > 0:  # into the fifo in key order (mostly push order)
                        key = row_key[r, k]
                        place = f_tail
                        while place > 0 and fifo[place - 1] > key:
                            fifo[place] = fifo[place - 1]
                            place -= 1
                        fifo[place] = key
                        f_tail += 1
                    else:  # pushed again after last
                        moving[2 * n_moving] = row_time[r, k]
                        moving[2 * n_moving + 1] = row_key[r, k]
                        n_moving += 1
                following = row_next[r]
                row_next[r] = free_row
                free_row = r
                n_free += 1
                r = following
            bucket_first[b] = bucket_last[b] = -1
            bucket_least[b] = _EMPTY
            bucket_size[b] = 0
            continue
        else:  # handle the next event at last
            t = last
            key = fifo[np.uint64(f_head)]
            f_head += 1
            events += 1
            what = key & what_mask
            rank = what >> 3
            ur = np.uint64(rank)
            g = pass_of[ur]
            dx, dy = pass_dx[np.uint64(g)], pass_dy[np.uint64(g)]
            ready = False  # the rank's current operation completed
            if what & _MSG_BIT:
                if cpu_free[ur] > t:  # the CPU is busy: the event waits, keeping its stamp
                    time_a, key_a = cpu_free[ur], key
                else:
                    slot = what & 3
                    if mode == 1 and recv > 0:
                        cpu_free[ur] = _cpu(state, rank, t, recv, table, offsets, scale)
                    else:
                        cpu_free[ur] = t + recv
                    if waiting[ur] == slot:
                        waiting[ur] = -1
                        ready = True
                    else:
                        unmatched[np.uint64(4 * rank + slot)] += 1
            else:
                step = step_of[ur]
                if step <= 1:  # a receive, from the x upstream then the y upstream
                    wanted = (0 if dx > 0 else 1) if step == 0 else (2 if dy > 0 else 3)
                    if unmatched[np.uint64(4 * rank + wanted)] > 0:
                        unmatched[np.uint64(4 * rank + wanted)] -= 1
                        ready = True
                    else:
                        waiting[ur] = wanted
                elif cpu_free[ur] > t:
                    time_a, key_a = cpu_free[ur], key
                else:
                    cpu = work if step == 2 else send
                    if mode == 1 and cpu > 0:
                        cpu_free[ur] = _cpu(state, rank, t, cpu, table, offsets, scale)
                    else:
                        cpu_free[ur] = t + cpu
                    if step >= 3:  # a send: the message's arrival
                        if step == 3:
                            target, target_slot, wire = rank + dx, (0 if dx > 0 else 1), wire_x
                        else:
                            target, target_slot, wire = (rank + dy * px, (2 if dy > 0 else 3),
                                                         wire_y)
                        time_a = cpu_free[ur] + wire
                        key_a = (stamp << what_bits) | (target << 3) | _MSG_BIT | target_slot
                        stamp += 1
                    ready = True
            if ready:
                i, j = column[ur], row[ur]
                step = step_of[ur] + 1
                while True:  # the rank's next operation in program order
                    if step == 5:
                        if cpu_free[ur] > pass_end[np.uint64(g)]:
                            pass_end[np.uint64(g)] = cpu_free[ur]
                        g += 1
                        step = 0
                        if g == n_passes:
                            break
                        dx, dy = pass_dx[np.uint64(g)], pass_dy[np.uint64(g)]
                    if _step_exists(step, i, j, px, py, dx, dy):
                        break
                    step += 1
                pass_of[ur], step_of[ur] = g, step
                if g < n_passes:
                    time_b, key_b = cpu_free[ur], (stamp << what_bits) | (rank << 3)
                    stamp += 1
        for q in range(2):  # the pushes
            when, key = (time_a, key_a) if q == 0 else (time_b, key_b)
            if when < 0:
                continue
            if when == last:  # into the fifo at its place (a retry's stamp is old)
                place = f_tail
                while place > f_head and fifo[place - 1] > key:
                    fifo[place] = fifo[place - 1]
                    place -= 1
                fifo[place] = key
                f_tail += 1
                continue
            b = when & (slots - 1) if slots > 0 else bit_length(when ^ last)
            r = bucket_last[np.uint64(b)]
            if r < 0 or row_fill[np.uint64(r)] == _ROW:  # a new row at the bucket's end
                new = free_row
                free_row = row_next[new]
                n_free -= 1
                row_next[new] = -1
                row_fill[new] = 0
                if r < 0:
                    bucket_first[b] = new
                else:
                    row_next[r] = new
                bucket_last[b] = r = new
            ur = np.uint64(r)
            ub = np.uint64(b)
            k = row_fill[ur]
            row_time[ur, np.uint64(k)] = when
            row_key[ur, np.uint64(k)] = key
            row_fill[ur] = k + 1
            bucket_size[ub] += 1
            if when < bucket_least[ub]:
                bucket_least[ub] = when
    registers[_LAST], registers[_HEAD], registers[_TAIL] = last, f_head, f_tail
    registers[_STAMP], registers[_EVENTS] = stamp, events
    registers[_FREE], registers[_N_FREE], registers[_MOVED] = free_row, n_free, n_moving
    registers[_MOVED + 1] = moved
    return status


@numba.njit(cache=True)
def _more_rows(row_next, row_fill, row_time, row_key, free_row):
    """The rows doubled, the new ones in front of the free list ``free_row``."""
    rows = row_next.size
    bigger_next = np.empty(2 * rows, dtype=np.int64)
    bigger_next[:rows] = row_next
    for r in range(rows, 2 * rows - 1):
        bigger_next[r] = r + 1
    bigger_next[2 * rows - 1] = free_row
    bigger_fill = np.zeros(2 * rows, dtype=np.int64)
    bigger_fill[:rows] = row_fill
    bigger_time = np.empty((2 * rows, _ROW), dtype=np.int64)
    bigger_time[:rows] = row_time
    bigger_key = np.empty((2 * rows, _ROW), dtype=np.int64)
    bigger_key[:rows] = row_key
    return bigger_next, bigger_fill, bigger_time, bigger_key


@numba.njit(cache=True)
def run_on_arrival(px, py, corners, blocks, iterations, work, send, recv, wire_x, wire_y,
                   mode, table, offsets, scale, finish, iteration_end):
    """All passes in event order (``progress="on_arrival"``), noiseless or on a trace.

    Times and costs are integers, in units of 1/``scale`` s (the trace stays in
    seconds; a finish on it is rounded to the unit), so that simultaneous events are
    exactly simultaneous, as in LogGOPSim's integer nanoseconds. Fills
    ``finish[rank]`` and ``iteration_end[it]`` [1/scale s]. Returns the events handled.
    """
    n_ranks = px * py
    n_sweeps = corners.shape[0]
    per_iteration = n_sweeps * blocks
    n_passes = iterations * per_iteration
    what_bits = 3
    while (1 << what_bits) < 8 * n_ranks:
        what_bits += 1
    if what_bits + np.log2(7.0 * n_ranks * (n_passes + 1)) > 62:  # stamps: below 7 a pass
        raise ValueError("the wavefront has too many ranks × passes for the event queue")
    unit = 1  # without noise every time is a sum of costs: count in their common divisor
    if mode != 1:
        unit = 0
        for cost in (work, send, recv, wire_x, wire_y):
            while cost > 0:
                unit, cost = cost, unit % cost
        unit = max(unit, 1)
        work, send, recv = work // unit, send // unit, recv // unit
        wire_x, wire_y = wire_x // unit, wire_y // unit
    # every event is dated at most ``ahead`` after the latest: with a few slots more
    # than that, a calendar of slots replaces the radix buckets (no event moves)
    ahead = max(work, recv, send + max(wire_x, wire_y))
    slots = 2
    while slots <= ahead:
        slots *= 2
    if mode == 1 or slots > _MOST_SLOTS:
        slots = 0
    cpu_free = np.zeros(n_ranks, dtype=np.int64)
    pass_of = np.zeros(n_ranks, dtype=np.int64)
    step_of = np.zeros(n_ranks, dtype=np.int64)
    waiting = np.full(n_ranks, -1, dtype=np.int64)     # neighbour slot of a posted receive
    unmatched = np.zeros(4 * n_ranks, dtype=np.int64)  # messages taken, not yet received
    pass_end = np.zeros(n_passes, dtype=np.int64)
    pass_dx = np.empty(n_passes + 1, dtype=np.int64)  # each pass's sweep direction
    pass_dy = np.empty(n_passes + 1, dtype=np.int64)
    for g in range(n_passes + 1):
        sweep = (g // blocks) % n_sweeps
        pass_dx[g], pass_dy[g] = corners[sweep, 0], corners[sweep, 1]
    column = np.empty(n_ranks, dtype=np.int64)  # each rank's place on the grid
    row = np.empty(n_ranks, dtype=np.int64)
    for rank in range(n_ranks):
        column[rank], row[rank] = rank % px, rank // px
    state = np.zeros((n_ranks if mode == 1 else 0, 8))
    if mode == 1:
        state[:, NEXT] = -np.inf
    fifo = np.empty(max(n_ranks, 16) + 2, dtype=np.int64)  # the events at the latest time
    moving = np.empty(2 * fifo.size, dtype=np.int64)       # a bucket's (time, key) pairs
    buckets = max(65, slots)
    bucket_first = np.full(buckets, -1, dtype=np.int64)
    bucket_last = np.full(buckets, -1, dtype=np.int64)
    bucket_least = np.full(buckets, _EMPTY, dtype=np.int64)
    bucket_size = np.zeros(buckets, dtype=np.int64)
    rows = max(128, 4 * n_ranks // _ROW)
    row_next = np.arange(1, rows + 1, dtype=np.int64)
    row_next[rows - 1] = -1
    row_fill = np.zeros(rows, dtype=np.int64)
    row_time = np.empty((rows, _ROW), dtype=np.int64)
    row_key = np.empty((rows, _ROW), dtype=np.int64)
    registers = np.zeros(_MOVED + 2, dtype=np.int64)
    registers[_FREE], registers[_N_FREE] = 0, rows
    stamp = 0
    for rank in range(n_ranks):  # every rank's first operation at time 0
        i, j = rank % px, rank // px
        step = 0
        while not _step_exists(step, i, j, px, py, corners[0, 0], corners[0, 1]):
            step += 1
        step_of[rank] = step
        fifo[rank] = (stamp << what_bits) | (rank << 3)
        stamp += 1
    registers[_TAIL], registers[_STAMP] = n_ranks, stamp
    while True:
        status = _advance(registers, px, py, n_passes, work, send, recv, wire_x, wire_y,
                          mode, table, offsets, scale, what_bits, slots, cpu_free, pass_of, step_of,
                          waiting, unmatched, pass_end, pass_dx, pass_dy, column, row, state,
                          fifo, moving, bucket_first, bucket_last, bucket_least, bucket_size,
                          row_next, row_fill, row_time, row_key)
        if status == _DONE:
            break
        if status == _MORE_FIFO:
            bigger = np.empty(2 * fifo.size, dtype=np.int64)
            bigger[:fifo.size] = fifo
            fifo = bigger
            bigger = np.empty(2 * fifo.size, dtype=np.int64)
            bigger[:moving.size] = moving
            moving = bigger
        else:
            row_next, row_fill, row_time, row_key = _more_rows(
                row_next, row_fill, row_time, row_key, registers[_FREE])
            registers[_FREE] = row_next.size // 2
            registers[_N_FREE] += row_next.size // 2
    for rank in range(n_ranks):
        finish[rank] = cpu_free[rank] * unit
    for it in range(iterations):
        end = 0
        for g in range(it * per_iteration, (it + 1) * per_iteration):
            end = max(end, pass_end[g])
        iteration_end[it] = end * unit
    return registers[_EVENTS]
