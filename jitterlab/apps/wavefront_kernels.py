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

from ..sim.event_queue import (
    CHUNK,
    FILL,
    bit_length,
    fifo_room,
    more_chunks,
    new_chunks,
    radix_spread,
)
from ..sim.event_queue import NEXT as CHUNK_NEXT
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
# needs no record of its own. No event is dated before the latest, so the queue is
# :mod:`jitterlab.sim.event_queue`'s radix queue, its push written out in the loop (a
# call passing arrays pays reference counting on every event).

_MSG_BIT = 4


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


@numba.njit(cache=True, inline="always")
def _cpu(mode, state, rank, t, cpu, table, offsets, scale):
    """End of ``cpu`` of CPU time started at t on the rank's trace [integer 1/scale s]."""
    if mode == 1 and cpu > 0:
        end = busy(state, rank, t / scale, cpu / scale, table, offsets)
        return max(np.int64(np.round(end * scale)), t + cpu)
    return t + cpu


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
    what_mask = (1 << what_bits) - 1
    if what_bits + np.log2(7.0 * n_ranks * (n_passes + 1)) > 62:  # stamps: below 7 a pass
        raise ValueError("the wavefront has too many ranks × passes for the event queue")
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
    bucket_head, bucket_tail, bucket_min, chunks, free_chunk = new_chunks()
    fifo = np.empty(max(n_ranks, 16), dtype=np.int64)  # the events at ``last``
    last = 0
    f_head = 0
    f_tail = 0
    stamp = 0
    events = 0
    for rank in range(n_ranks):  # every rank's first operation at time 0
        i, j = rank % px, rank // px
        step = 0
        while not _step_exists(step, i, j, px, py, corners[0, 0], corners[0, 1]):
            step += 1
        step_of[rank] = step
        fifo[f_tail] = (stamp << what_bits) | (rank << 3)
        f_tail += 1
        stamp += 1
    while True:
        if f_head == f_tail:
            least, f_tail, fifo, chunks, free_chunk = radix_spread(
                bucket_head, bucket_tail, bucket_min, chunks, free_chunk, fifo)
            if least < 0:
                break
            last = least
            f_head = 0
        t = last
        key = fifo[f_head]
        f_head += 1
        events += 1
        what = key & what_mask
        rank = what >> 3
        g = pass_of[rank]
        dx, dy = pass_dx[g], pass_dy[g]
        ready = False  # the rank's current operation completed
        push_a = push_b = False  # pushes: (time_a, key_a), then (time_b, key_b)
        time_a = key_a = time_b = key_b = 0
        if what & _MSG_BIT:
            if cpu_free[rank] > t:  # the CPU is busy: the event waits, keeping its stamp
                time_a, key_a, push_a = cpu_free[rank], key, True
            else:
                slot = what & 3
                cpu_free[rank] = (t + recv if mode != 1 else
                                  _cpu(mode, state, rank, t, recv, table, offsets, scale))
                if waiting[rank] == slot:
                    waiting[rank] = -1
                    ready = True
                else:
                    unmatched[4 * rank + slot] += 1
        else:
            step = step_of[rank]
            if step <= 1:  # a receive, from the x upstream then the y upstream
                wanted = (0 if dx > 0 else 1) if step == 0 else (2 if dy > 0 else 3)
                if unmatched[4 * rank + wanted] > 0:
                    unmatched[4 * rank + wanted] -= 1
                    ready = True
                else:
                    waiting[rank] = wanted
            elif cpu_free[rank] > t:
                time_a, key_a, push_a = cpu_free[rank], key, True
            elif step == 2:
                cpu_free[rank] = (t + work if mode != 1 else
                                  _cpu(mode, state, rank, t, work, table, offsets, scale))
                ready = True
            else:
                cpu_free[rank] = (t + send if mode != 1 else
                                  _cpu(mode, state, rank, t, send, table, offsets, scale))
                if step == 3:
                    target, target_slot, wire = rank + dx, (0 if dx > 0 else 1), wire_x
                else:
                    target, target_slot, wire = rank + dy * px, (2 if dy > 0 else 3), wire_y
                time_a = cpu_free[rank] + wire
                key_a = (stamp << what_bits) | (target << 3) | _MSG_BIT | target_slot
                push_a = True
                stamp += 1
                ready = True
        if ready:
            i, j = column[rank], row[rank]
            step = step_of[rank] + 1
            while True:  # the rank's next operation in program order
                if step == 5:
                    if cpu_free[rank] > pass_end[g]:
                        pass_end[g] = cpu_free[rank]
                    g += 1
                    step = 0
                    if g == n_passes:
                        break
                    dx, dy = pass_dx[g], pass_dy[g]
                if _step_exists(step, i, j, px, py, dx, dy):
                    break
                step += 1
            pass_of[rank], step_of[rank] = g, step
            if g < n_passes:
                time_b, key_b = cpu_free[rank], (stamp << what_bits) | (rank << 3)
                push_b = True
                stamp += 1
        for q in range(2):
            if q == 0:
                if not push_a:
                    continue
                when, key = time_a, key_a
            else:
                if not push_b:
                    continue
                when, key = time_b, key_b
            if when == last:  # into the fifo at its place (a retry's stamp is old)
                if f_tail == fifo.size:
                    fifo, f_head, f_tail = fifo_room(fifo, f_head, f_tail)
                place = f_tail
                while place > f_head and fifo[place - 1] > key:
                    fifo[place] = fifo[place - 1]
                    place -= 1
                fifo[place] = key
                f_tail += 1
            else:  # event_queue.radix_push, written out
                nb = bit_length(when ^ last)
                tail = bucket_tail[nb]
                if tail < 0 or chunks[tail, FILL] == CHUNK:
                    if free_chunk < 0:
                        chunks, free_chunk = more_chunks(chunks)
                    node = free_chunk
                    free_chunk = chunks[node, CHUNK_NEXT]
                    chunks[node, CHUNK_NEXT] = -1
                    chunks[node, FILL] = 0
                    if tail < 0:
                        bucket_head[nb] = node
                    else:
                        chunks[tail, CHUNK_NEXT] = node
                    bucket_tail[nb] = node
                    tail = node
                place = chunks[tail, FILL]
                chunks[tail, place] = when
                chunks[tail, CHUNK + place] = key
                chunks[tail, FILL] = place + 1
                if when < bucket_min[nb]:
                    bucket_min[nb] = when
    for rank in range(n_ranks):
        finish[rank] = cpu_free[rank]
    for it in range(iterations):
        end = 0
        for g in range(it * per_iteration, (it + 1) * per_iteration):
            end = max(end, pass_end[g])
        iteration_end[it] = end
    return events
