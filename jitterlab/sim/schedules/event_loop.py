"""The schedule kernel's event loop: LogGOPSim's, in numba, on columnar arrays.

Arrays in, arrays out; times are integers in ticks (1 tick = ``resolution`` seconds,
chosen by the caller), so that simultaneous events are exactly simultaneous, as in
LogGOPSim's integer nanoseconds. The loop follows LogGOPSim (Hoefler, Schneider &
Lumsdaine, HPDC 2010; its ``LogGOPSim.cpp`` built with ``STRICT_ORDER`` and
``LIST_MATCH``) step by step:

* one event queue ordered by (time, creation stamp); a retried event keeps its stamp
  (here a radix queue on the integer times with a stamp-sorted list per time, O(1)
  amortized per event, and a binary heap for the rare event dated before the latest
  one; any exact priority queue gives the same order, as the stamps are unique);
* an operation becomes ready when its requires (finished) and irequires (started)
  are met; the ready operations of one host, gathered while one event is handled,
  are ordered by kind (send, recv, calc) with the same unstable sort as libstdc++'s
  ``std::sort``, so equal kinds keep LogGOPSim's order;
* per host: a next-free time of each CPU (o, O, calc) and, per NIC, of sending and of
  receiving (g, G); a send needs its CPU and NIC free, costs o + (s−1)·O of CPU and
  g + (s−1)·G of NIC, and puts a message on the wire that arrives o + L after the send
  began; the receiver takes the message when its CPU and NIC are free, for
  o + max((s−1)·O, (s−1)·G) of CPU and g + (s−1)·G of NIC (progress on arrival);
* matching by source and tag in posting order (unexpected and posted queues); a send
  of s <= S bytes is done once sent (eager), a larger one when matched (rendezvous);
* noise: mode 1 LogGOPSim's ``--noise-trace`` rule (``Noise::get_noise``: the rest of
  a detour under way at the start of the CPU time, plus every detour that begins
  inside it, with no detour counted within a detour), mode 2 one δ per CPU use.

Its reference implementation is LogGOPSim itself: tests/test_goal_exactness.py and
tests/test_schedules.py compare every rank's end with LogGOPSim's printed times.
"""

from __future__ import annotations

import numba
import numpy as np

from ..event_queue import (
    CHUNK,
    CHUNKS_FULL,
    FIFO_FULL,
    FILL,
    NEXT,
    bit_length,
    compact,
    heap_pop,
    heap_push,
    new_fixed_chunks,
    radix_take,
)
from .costs import DELTA, TRACE, per_byte, receive_bytes, trace_noise
from .parking import parking_allowed, rescan
from .sorting import new_sort_stack, std_sort_with

__all__ = ["simulate_with_matches", "run_in_room", "HEAP_FULL", "TIME_FIELDS", "START",
           "CPU_START", "CPU_END", "NOISE", "COMPLETE"]

_SEND, _RECV, _CALC = 1, 2, 3
#: :func:`run_in_room`'s answer when the past-event heap is full
HEAP_FULL = -4

#: rows of the per-operation times of :func:`simulate_with_matches`
TIME_FIELDS = ("start", "cpu_start", "cpu_end", "noise", "complete")
START, CPU_START, CPU_END, NOISE, COMPLETE = range(len(TIME_FIELDS))


# --------------------------------------------------------------------------------------
# the event loop

@numba.njit(cache=True)
def simulate_with_matches(kind, rank, peer, size, tag, calc, cpu, nic, rank_offsets,
                          placement, origin, succ_offsets, succ, isucc_offsets, isucc, waits,
                          channel, n_channels, exact, n_cpus, n_nics, latency, overhead, gap,
                          gap_per_byte, overhead_per_byte, eager_limit, mode, trc_start,
                          trc_dur, rank_time, delta, times, matched, end_out, park=True):
    """:func:`jitterlab.sim.schedules.kernel.simulate_with_times`, which see, and also,
    when ``matched`` has one entry per operation (else size 0), the send each receive
    matched: ``matched[r] = s`` (schedule indices; −1 where no message was taken).
    ``park``: park retried events per host where that is exact (:mod:`.parking`; the
    same results and event count); False queues every retry as LogGOPSim does.

    No array is passed to an inlined helper or reassigned inside the loop: numba then
    counts references (two atomic instructions per array per event), which took 2/3 of
    the loop's time (perf on recursive doubling, 65 536 ranks: 90 -> 40 ns/event without;
    :mod:`jitterlab.sim.event_queue`). So the queue's arrays have a fixed size (a bound,
    touched only where used; a queue that overflows it makes :func:`run_in_room` return
    and run again with more room), the releases of an event's operations are gathered and
    done in one loop at the end of the event, and the queue's push, the unlinking from
    the matching queues and the rendezvous completion are written out.
    """
    # (an array, not scalars: numba would compile the loop once more for each literal)
    room = np.empty(4, dtype=np.int64)
    room[0] = 1 if park else 0
    room[1] = 2 * kind.size + rank_offsets.size + 1  # each operation, message, token once
    room[2] = room[1] // CHUNK + 66  # and a partly filled chunk per bucket
    room[3] = 1024
    while True:
        done, events, left, full = run_in_room(
            kind, rank, peer, size, tag, calc, cpu, nic, rank_offsets, placement, origin,
            succ_offsets, succ, isucc_offsets, isucc, waits, channel, n_channels, exact,
            n_cpus, n_nics, latency, overhead, gap, gap_per_byte, overhead_per_byte,
            eager_limit, mode, trc_start, trc_dur, rank_time, delta, times, matched, end_out,
            room)
        if full == 0:
            return done, events, left
        room[1 if full == FIFO_FULL else 2 if full == CHUNKS_FULL else 3] *= 2


@numba.njit(cache=True)
def run_in_room(kind, rank, peer, size, tag, calc, cpu, nic, rank_offsets, placement,
                origin, succ_offsets, succ, isucc_offsets, isucc, waits, channel, n_channels,
                exact, n_cpus, n_nics, latency, overhead, gap, gap_per_byte,
                overhead_per_byte, eager_limit, mode, trc_start, trc_dur, rank_time, delta,
                times, matched, end_out, room):
    """:func:`simulate_with_matches` with ``room`` = (park 1 or 0, entries of the fifo,
    rows of chunks, entries of the past-event heap). Returns (done, events, left, 0),
    or (0, 0, 0, what was full: :data:`FIFO_FULL`, :data:`CHUNKS_FULL` or
    :data:`HEAP_FULL`); then run it again with more of that room."""
    park = room[0] != 0
    fifo_size, chunk_rows, heap_size = room[1], room[2], room[3]
    n = kind.size
    p = rank_offsets.size - 1
    keep = times.shape[1] == n and n > 0
    keep_match = matched.size == n and n > 0
    if keep_match:
        matched[:] = -1
    # the times by new index (``placement``), copied to ``times`` at the end
    record = np.full((len(TIME_FIELDS), n if keep else 0), -1, dtype=np.int64)
    # the receive CPU time of a message that waits unexpected, for its recv [ticks]
    m_cpu_start = np.empty(n if keep else 0, dtype=np.int64)
    m_cpu_end = np.empty(n if keep else 0, dtype=np.int64)
    m_noise = np.empty(n if keep else 0, dtype=np.int64)
    remaining = waits.copy()
    # the δ noise by new index: read as delta[origin[i]] in the loop, a cache miss per
    # CPU use once noise breaks the step-major lockstep (a quarter of a noisy run's
    # loop); permuted here in one pass (sequential reads, scattered writes)
    noise_by_index = np.empty(2 * n if mode == DELTA else 0, dtype=np.int64)
    if mode == DELTA:
        for i in range(n):
            j = placement[i]
            noise_by_index[j] = delta[i]
            noise_by_index[n + j] = delta[n + i]
    nexto = np.zeros(p * n_cpus, dtype=np.int64)
    nextgr = np.zeros(p * n_nics, dtype=np.int64)
    nextgs = np.zeros(p * n_nics, dtype=np.int64)
    rq_head = np.full(n_channels, -1, dtype=np.int32)
    rq_tail = np.full(n_channels, -1, dtype=np.int32)
    uq_head = np.full(n_channels, -1, dtype=np.int32)
    uq_tail = np.full(n_channels, -1, dtype=np.int32)
    q_next = np.empty(n, dtype=np.int32)  # queue links (n < 2**31)
    # The event queue, in (time, stamp) order (:mod:`jitterlab.sim.event_queue`). Times
    # handed out are monotone except rarely (a CPU of a host other than the one just
    # handled, a 0-byte message with O > o): those "past" events go to a binary heap
    # (ht, hs, hc; size_q) that is served first. All other events are in a radix queue
    # keyed by time (``last``, ``fifo``, buckets of chunks), O(1) amortized per event.
    ht = np.empty(heap_size, dtype=np.int64)
    hs = np.empty(heap_size, dtype=np.int64)
    hc = np.empty(heap_size, dtype=np.int64)
    size_q = 0
    code_bits = 1
    while (1 << code_bits) < 2 * n + p + 2:  # operations, messages, parking tokens
        code_bits += 1
    if 2 * code_bits > 62:
        raise ValueError("the schedule has too many operations for the event queue")
    code_mask = (1 << code_bits) - 1
    last = 0
    fifo = np.empty(fifo_size, dtype=np.int64)
    f_head = 0
    f_tail = 0
    bucket_head, bucket_tail, bucket_min, chunks = new_fixed_chunks(chunk_rows)
    free_chunk = -1  # the free list of chunk rows; past it, row ``fresh``
    fresh = 0
    releases = np.empty(4, dtype=np.int64)  # of one event: x (succ), ~x (isucc)
    trc_last = trc_start[trc_start.size - 1] if mode == TRACE else 0
    has_isucc = isucc.size > 0
    widest = 1
    for r in range(p):
        widest = max(widest, rank_offsets[r + 1] - rank_offsets[r])
    most = 0  # dependents of an operation, at most
    for i in range(n):
        most = max(most, succ_offsets[i + 1] - succ_offsets[i])
    if has_isucc:
        more = 0
        for i in range(n):
            more = max(more, isucc_offsets[i + 1] - isucc_offsets[i])
        most += more
    ready = np.empty(max(widest, 3 * most + 1), dtype=np.int64)
    order = np.empty(ready.size, dtype=np.int64)
    sort_stack = new_sort_stack()  # std_sort's work array, made once
    pend_t = np.empty(ready.size + 2, dtype=np.int64)  # pushes of one event
    pend_s = np.empty(ready.size + 2, dtype=np.int64)
    pend_c = np.empty(ready.size + 2, dtype=np.int64)
    # parked retries (.parking): per host a list (head ``park_head``, links ``link``)
    # and its token's key and code; the pages are touched only from the first retry
    # (``listed`` set then, not here: 2n bytes written every run for nothing)
    parking = -1 if park else 0  # 1 yes, 0 no, -1 not decided yet
    park_head = np.full(p, -1, dtype=np.int64)
    tok_t = np.full(p, -1, dtype=np.int64)
    tok_s, tok_code = np.empty(p, dtype=np.int64), np.empty(p, dtype=np.int64)
    slots = 2 * n if park else 0
    link, park_time = np.empty(slots, dtype=np.int64), np.empty(slots, dtype=np.int64)
    park_stamp, listed = np.empty(slots, dtype=np.int64), np.empty(slots, dtype=np.bool_)
    stamp = 0
    done = 0
    events = 0

    # the ready operations of every host at time 0, host by host, sorted by kind
    for r in range(p):
        count = 0
        for i in range(rank_offsets[r], rank_offsets[r + 1]):
            j = placement[i]  # the rank's operations in their original order
            if remaining[j] == 0:
                order[count] = j
                count += 1
        std_sort_with(order, 0, count, kind, sort_stack)
        for k in range(count):  # all at time 0 = last, in stamp order
            if f_tail == fifo.size:
                return 0, 0, 0, FIFO_FULL
            fifo[f_tail] = (stamp << code_bits) | order[k]
            f_tail += 1
            stamp += 1

    while True:
        if size_q == 0:  # the radix queue
            if f_head == f_tail:  # spread the lowest non-empty bucket
                least, f_tail, free_chunk, fresh = radix_take(
                    bucket_head, bucket_tail, bucket_min, chunks, free_chunk, fresh, fifo)
                if least == FIFO_FULL or least == CHUNKS_FULL:
                    return 0, 0, 0, least
                if least < 0:
                    break
                last = least
                f_head = 0
            t = last
            key = fifo[f_head]
            f_head += 1
            st = key >> code_bits
            code = key & code_mask
            events += 1
        else:  # a past event: the binary heap
            t, st, code = ht[0], hs[0], hc[0]
            size_q = heap_pop(ht, hs, hc, size_q)
            events += 1
        taken = False
        if code >= 2 * n:  # a host's token: its least parked event, unless outdated
            h = code - 2 * n
            if tok_t[h] != t or tok_s[h] != st:
                events -= 1
                continue
            code = tok_code[h]
            park_time[code] = -1  # unlinked by the next rescan
            tok_t[h] = -1
            taken = True
        n_push = 0
        n_ready = 0
        n_releases = 0
        host_a = -1  # the (at most two) hosts that completed something
        host_b = -1
        retry = -1
        if code < n:
            i = code
            host = rank[i]
            k = kind[i]
            c = host * n_cpus + cpu[i]
            cpu_before = nexto[c]
            if k == _CALC:
                if nexto[c] <= t:
                    noise = 0  # costs.operation_noise written out (no reference counts)
                    if mode == DELTA:
                        noise = noise_by_index[i]
                    elif mode == TRACE:
                        noise = trace_noise(trc_start, trc_dur, trc_last, rank_time[host], t,
                                            calc[i])
                    nexto[c] = t + calc[i] + noise
                    if keep:
                        record[START, i] = t
                        record[CPU_START, i] = t
                        record[CPU_END, i] = nexto[c]
                        record[NOISE, i] = noise
                        record[COMPLETE, i] = nexto[c]
                    releases[n_releases] = ~i
                    n_releases += 1
                    releases[n_releases] = i
                    n_releases += 1
                    done += 1
                    host_a = host
                else:
                    retry = nexto[c]
            elif k == _SEND:
                nc = host * n_nics + nic[i]
                free = max(nexto[c], nextgs[nc])
                if free <= t:
                    releases[n_releases] = ~i
                    n_releases += 1
                    host_a = host
                    noise = 0
                    if mode == DELTA:
                        noise = noise_by_index[i]
                    elif mode == TRACE:
                        noise = trace_noise(trc_start, trc_dur, trc_last, rank_time[host], t,
                                            overhead)
                    nexto[c] = t + overhead + per_byte(size[i], overhead_per_byte) + noise
                    nextgs[nc] = t + gap + per_byte(size[i], gap_per_byte)
                    if keep:
                        record[START, i] = t
                        record[CPU_START, i] = t
                        record[CPU_END, i] = nexto[c]
                        record[NOISE, i] = noise
                    pend_t[n_push], pend_s[n_push], pend_c[n_push] = (
                        t + overhead + latency, stamp, n + i)
                    n_push += 1
                    stamp += 1
                    if size[i] <= eager_limit:
                        if keep:
                            record[COMPLETE, i] = nexto[c]
                        releases[n_releases] = i
                        n_releases += 1
                        done += 1
                else:
                    retry = free
            else:  # a receive is posted: irequires met, then the unexpected queue
                releases[n_releases] = ~i
                n_releases += 1
                host_a = host
                if keep:
                    record[START, i] = t
                ch = channel[i]
                m = uq_head[ch]
                before = -1
                if not exact:
                    while m >= 0:
                        if (peer[i] == -1 or peer[i] == rank[m]) and (
                                tag[i] == -1 or tag[m] == -1 or tag[i] == tag[m]):
                            break
                        before = m
                        m = q_next[m]
                if m >= 0:  # found: unlink the message
                    if keep_match:
                        matched[origin[i]] = origin[m]
                    after = q_next[m]
                    if before >= 0:
                        q_next[before] = after
                    else:
                        uq_head[ch] = after
                    if after < 0:
                        uq_tail[ch] = before
                    if size[i] > eager_limit:  # rendezvous: the sender is done now
                        src = rank[m]
                        sc = src * n_cpus + cpu[i]
                        sn = src * n_nics + nic[i]
                        if nexto[sc] < t:
                            nexto[sc] = t
                        if nextgs[sn] < t:
                            nextgs[sn] = t
                        if keep:
                            record[COMPLETE, m] = t
                        releases[n_releases] = m
                        n_releases += 1
                        done += 1
                        host_b = src
                    if keep:
                        record[CPU_START, i] = m_cpu_start[m]
                        record[CPU_END, i] = m_cpu_end[m]
                        record[NOISE, i] = m_noise[m]
                        record[COMPLETE, i] = t
                    releases[n_releases] = i
                    n_releases += 1
                    done += 1
                else:  # post it
                    q_next[i] = -1
                    if rq_tail[ch] >= 0:
                        q_next[rq_tail[ch]] = i
                    else:
                        rq_head[ch] = i
                    rq_tail[ch] = i
        else:  # a message (of send code − n) reaches its receiver
            s = code - n
            host = peer[s]
            c = host * n_cpus + cpu[s]
            nc = host * n_nics + nic[s]
            cpu_before = nexto[c]
            free = max(nexto[c], nextgr[nc])
            if free <= t:
                noise = 0
                if mode == DELTA:
                    noise = noise_by_index[n + s]
                elif mode == TRACE:
                    noise = trace_noise(trc_start, trc_dur, trc_last, rank_time[host], t,
                                        overhead)
                nexto[c] = t + overhead + noise + receive_bytes(size[s], overhead_per_byte,
                                                                 gap_per_byte)
                nextgr[nc] = t + gap + per_byte(size[s], gap_per_byte)
                ch = channel[s]
                m = rq_head[ch]
                before = -1
                if not exact:
                    while m >= 0:
                        if (peer[m] == -1 or peer[m] == rank[s]) and (
                                tag[m] == -1 or tag[s] == -1 or tag[m] == tag[s]):
                            break
                        before = m
                        m = q_next[m]
                if m >= 0:  # a posted receive matches: unlink it
                    if keep_match:
                        matched[origin[m]] = origin[s]
                    after = q_next[m]
                    if before >= 0:
                        q_next[before] = after
                    else:
                        rq_head[ch] = after
                    if after < 0:
                        rq_tail[ch] = before
                    if size[s] > eager_limit:  # rendezvous: the sender is done now
                        src = rank[s]
                        sc = src * n_cpus + cpu[s]
                        sn = src * n_nics + nic[s]
                        if nexto[sc] < t:
                            nexto[sc] = t
                        if nextgs[sn] < t:
                            nextgs[sn] = t
                        if keep:
                            record[COMPLETE, s] = t
                        releases[n_releases] = s
                        n_releases += 1
                        done += 1
                        host_b = src
                    if keep:
                        record[CPU_START, m] = t
                        record[CPU_END, m] = nexto[c]
                        record[NOISE, m] = noise
                        record[COMPLETE, m] = nexto[c]
                    releases[n_releases] = m
                    n_releases += 1
                    done += 1
                    host_a = host
                else:  # unexpected
                    if keep:
                        m_cpu_start[s], m_cpu_end[s], m_noise[s] = t, nexto[c], noise
                    q_next[s] = -1
                    if uq_tail[ch] >= 0:
                        q_next[uq_tail[ch]] = s
                    else:
                        uq_head[ch] = s
                    uq_tail[ch] = s
            else:
                retry = free
        for q in range(n_releases):  # count down the waits of their dependents
            x = releases[q]
            if x >= 0:
                for j in range(succ_offsets[x], succ_offsets[x + 1]):
                    b = succ[j]
                    remaining[b] -= 1
                    if remaining[b] == 0:
                        ready[n_ready] = b
                        n_ready += 1
            elif has_isucc:
                for j in range(isucc_offsets[~x], isucc_offsets[~x + 1]):
                    b = isucc[j]
                    remaining[b] -= 1
                    if remaining[b] == 0:
                        ready[n_ready] = b
                        n_ready += 1
        if retry >= 0 and parking < 0:
            parking = 0
            if parking_allowed(kind, size, calc, n_cpus, overhead, gap, gap_per_byte,
                               overhead_per_byte, mode, trc_dur, delta):
                parking = 1
                for j in range(slots):
                    listed[j] = False
        if retry >= 0 and parking == 1:  # parked, with its stamp
            park_time[code], park_stamp[code] = retry, st
            if not listed[code]:
                listed[code] = True
                link[code] = park_head[host]
                park_head[host] = code
            if not taken and (tok_t[host] < 0 or retry < tok_t[host] or (
                    retry == tok_t[host] and st < tok_s[host])):
                tok_t[host], tok_s[host], tok_code[host] = retry, st, code
                pend_t[0], pend_s[0], pend_c[0] = retry, st, 2 * n + host
                n_push = 1
        elif retry >= 0:  # same stamp: the event keeps its place among equal times
            pend_t[0], pend_s[0], pend_c[0] = retry, st, code
            n_push = 1
        elif n_ready > 0:
            # the hosts in increasing order, each with its ready operations sorted by kind
            if host_b >= 0 and host_b < host_a:
                host_a, host_b = host_b, host_a
            for pass_ in range(2):
                h = host_a if pass_ == 0 else host_b
                if h < 0 or (pass_ == 1 and h == host_a):
                    continue
                count = 0
                for k in range(n_ready):
                    if rank[ready[k]] == h:
                        order[count] = ready[k]
                        count += 1
                if count > 16:
                    std_sort_with(order, 0, count, kind, sort_stack)
                else:  # libstdc++ sorts up to 16 by insertion, i.e. stably, and no call
                    for q in range(1, count):
                        b = order[q]
                        w = q
                        while w > 0 and kind[order[w - 1]] > kind[b]:
                            order[w] = order[w - 1]
                            w -= 1
                        order[w] = b
                for k in range(count):
                    b = order[k]
                    when = nexto[h * n_cpus + cpu[b]]
                    if kind[b] == _SEND:
                        when = max(when, nextgs[h * n_nics + nic[b]])
                    pend_t[n_push], pend_s[n_push], pend_c[n_push] = when, stamp, b
                    n_push += 1
                    stamp += 1
        if parking == 1 and park_head[host] >= 0 and (taken or nexto[c] != cpu_before):
            head, parked, when, first, j, retries = rescan(
                park_head[host], link, park_time, park_stamp, listed, kind, nic, n, n_nics,
                host, nexto[c], nextgs, nextgr)
            park_head[host] = head
            events += retries
            if parked == 0:
                tok_t[host] = -1
            elif when != tok_t[host] or first != tok_s[host]:
                tok_t[host], tok_s[host], tok_code[host] = when, first, j
                pend_t[n_push], pend_s[n_push], pend_c[n_push] = when, first, 2 * n + host
                n_push += 1
        for q in range(n_push):
            time_, stamp_, code_ = pend_t[q], pend_s[q], pend_c[q]
            if time_ == last:  # into the fifo, at its place by stamp (a retry's is old)
                if f_tail == fifo.size:
                    if f_head == 0:
                        return 0, 0, 0, FIFO_FULL
                    f_tail = compact(fifo, f_head, f_tail)
                    f_head = 0
                key = (stamp_ << code_bits) | code_
                place = f_tail
                while place > f_head and fifo[place - 1] > key:
                    fifo[place] = fifo[place - 1]
                    place -= 1
                fifo[place] = key
                f_tail += 1
            elif time_ > last:  # into its bucket (event_queue.radix_take reads them)
                nb = bit_length(time_ ^ last)
                tail = bucket_tail[nb]
                if tail < 0 or chunks[tail, FILL] == CHUNK:
                    if free_chunk >= 0:
                        node = free_chunk
                        free_chunk = chunks[node, NEXT]
                    elif fresh < chunks.shape[0]:
                        node = fresh
                        fresh += 1
                    else:
                        return 0, 0, 0, CHUNKS_FULL
                    chunks[node, NEXT] = -1
                    chunks[node, FILL] = 0
                    if tail < 0:
                        bucket_head[nb] = node
                    else:
                        chunks[tail, NEXT] = node
                    bucket_tail[nb] = node
                    tail = node
                j = chunks[tail, FILL]
                chunks[tail, j] = time_
                chunks[tail, CHUNK + j] = (stamp_ << code_bits) | code_
                chunks[tail, FILL] = j + 1
                if time_ < bucket_min[nb]:
                    bucket_min[nb] = time_
            else:  # a past event: into the binary heap
                if size_q == ht.size:
                    return 0, 0, 0, HEAP_FULL
                size_q = heap_push(ht, hs, hc, size_q, time_, stamp_, code_)
    left = 0
    for ch in range(n_channels):
        if rq_head[ch] >= 0 or uq_head[ch] >= 0:
            left += 1
    for r in range(p):
        latest = nexto[r * n_cpus]
        for c in range(1, n_cpus):
            latest = max(latest, nexto[r * n_cpus + c])
        end_out[r] = latest
    if keep:
        for j in range(n):
            times[:, origin[j]] = record[:, j]
    return done, events, left, 0
