"""numba kernel of the schedule simulator: LogGOPSim's event loop on columnar arrays.

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

from ...traces.schedule import ANY_SOURCE, ANY_TAG

__all__ = ["simulate_arrays", "simulate_with_times", "new_operation_times", "TIME_FIELDS",
           "START", "CPU_START", "CPU_END", "NOISE", "COMPLETE", "channels", "successors",
           "schedule_arguments", "NO_NOISE", "TRACE", "DELTA"]

NO_NOISE, TRACE, DELTA = 0, 1, 2
_SEND, _RECV, _CALC = 1, 2, 3
_THRESHOLD = 16  # libstdc++ std::sort: _S_threshold

#: rows of the per-operation times of :func:`simulate_with_times` (see its docstring)
TIME_FIELDS = ("start", "cpu_start", "cpu_end", "noise", "complete")
START, CPU_START, CPU_END, NOISE, COMPLETE = range(len(TIME_FIELDS))


def new_operation_times(n_operations: int) -> np.ndarray:
    """An int64 array (len(TIME_FIELDS), n_operations) of −1 for :func:`simulate_with_times`
    to fill (−1 stays where an operation never got there)."""
    return np.full((len(TIME_FIELDS), n_operations), -1, dtype=np.int64)


# --------------------------------------------------------------------------------------
# libstdc++'s std::sort (GCC 12, bits/stl_algo.h and stl_heap.h) on buf[lo:hi], key
# kind[buf[i]]: the order it leaves equal kinds in is part of LogGOPSim's semantics.

@numba.njit(cache=True, inline="always")
def _less(kind, a, b):
    return kind[a] < kind[b]


@numba.njit(cache=True)
def _adjust_heap(buf, first, hole, length, value, kind):
    top = hole
    second = hole
    while second < (length - 1) // 2:
        second = 2 * (second + 1)
        if _less(kind, buf[first + second], buf[first + second - 1]):
            second -= 1
        buf[first + hole] = buf[first + second]
        hole = second
    if (length & 1) == 0 and second == (length - 2) // 2:
        second = 2 * (second + 1)
        buf[first + hole] = buf[first + second - 1]
        hole = second - 1
    parent = (hole - 1) // 2
    while hole > top and _less(kind, buf[first + parent], value):
        buf[first + hole] = buf[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    buf[first + hole] = value


@numba.njit(cache=True)
def _heap_sort(buf, first, last, kind):
    length = last - first
    if length >= 2:
        parent = (length - 2) // 2
        while True:
            _adjust_heap(buf, first, parent, length, buf[first + parent], kind)
            if parent == 0:
                break
            parent -= 1
    while last - first > 1:
        last -= 1
        value = buf[last]
        buf[last] = buf[first]
        _adjust_heap(buf, first, 0, last - first, value, kind)


@numba.njit(cache=True)
def _introsort_loop(buf, first, last, depth, kind):
    """libstdc++'s __introsort_loop; its recursion into the right part becomes a stack
    (the parts are disjoint, so the order they are sorted in changes nothing)."""
    stack = np.empty((128, 3), dtype=np.int64)
    top = 0
    stack[0, 0], stack[0, 1], stack[0, 2] = first, last, depth
    top = 1
    while top > 0:
        top -= 1
        first, last, depth = stack[top, 0], stack[top, 1], stack[top, 2]
        while last - first > _THRESHOLD:
            if depth == 0:
                _heap_sort(buf, first, last, kind)
                break
            depth -= 1
            a, b, c = first + 1, first + (last - first) // 2, last - 1
            if _less(kind, buf[a], buf[b]):
                if _less(kind, buf[b], buf[c]):
                    pick = b
                elif _less(kind, buf[a], buf[c]):
                    pick = c
                else:
                    pick = a
            elif _less(kind, buf[a], buf[c]):
                pick = a
            elif _less(kind, buf[b], buf[c]):
                pick = c
            else:
                pick = b
            buf[first], buf[pick] = buf[pick], buf[first]
            lo, hi = first + 1, last
            while True:
                while _less(kind, buf[lo], buf[first]):
                    lo += 1
                hi -= 1
                while _less(kind, buf[first], buf[hi]):
                    hi -= 1
                if not lo < hi:
                    break
                buf[lo], buf[hi] = buf[hi], buf[lo]
                lo += 1
            stack[top, 0], stack[top, 1], stack[top, 2] = lo, last, depth
            top += 1
            last = lo


@numba.njit(cache=True)
def _linear_insert(buf, i, kind):
    value = buf[i]
    j = i - 1
    while _less(kind, value, buf[j]):
        buf[j + 1] = buf[j]
        j -= 1
    buf[j + 1] = value


@numba.njit(cache=True)
def _insertion_sort(buf, first, last, kind):
    for i in range(first + 1, last):
        if _less(kind, buf[i], buf[first]):
            value = buf[i]
            for j in range(i, first, -1):
                buf[j] = buf[j - 1]
            buf[first] = value
        else:
            _linear_insert(buf, i, kind)


@numba.njit(cache=True)
def std_sort(buf, first, last, kind):
    """Sort ``buf[first:last]`` by ``kind[buf[i]]`` exactly as libstdc++'s std::sort."""
    n = last - first
    if n < 2:
        return
    depth = 0
    while (1 << (depth + 1)) <= n:
        depth += 1
    _introsort_loop(buf, first, last, 2 * depth, kind)
    if n > _THRESHOLD:
        _insertion_sort(buf, first, first + _THRESHOLD, kind)
        for i in range(first + _THRESHOLD, last):
            _linear_insert(buf, i, kind)
    else:
        _insertion_sort(buf, first, last, kind)


# --------------------------------------------------------------------------------------
# the event queue (written out in simulate_with_times): a radix queue, and a binary heap
# for past events

@numba.njit(cache=True, inline="always")
def _bit_length(x):
    """Number of bits of x > 0 (the radix queue's bucket of a time x = t ^ last)."""
    b = 1
    shift = 32
    while shift > 0:  # binary search of the highest bit
        if x >> shift:
            x >>= shift
            b += shift
        shift >>= 1
    return b


@numba.njit(cache=True)
def _resized(array, capacity):
    bigger = np.empty(capacity, dtype=array.dtype)
    bigger[:array.size] = array
    return bigger


# --------------------------------------------------------------------------------------
# set-up helpers

@numba.njit(cache=True)
def _mix(a, b, c):
    h = np.uint64(a) * np.uint64(0x9E3779B97F4A7C15)
    h ^= np.uint64(b) + np.uint64(0x632BE59BD9B4E019) + (h << np.uint64(6)) + (h >> np.uint64(2))
    h ^= np.uint64(c) * np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(31)
    return h


@numba.njit(cache=True)
def channels(kind, rank, peer, tag):
    """Channel of every send and receive: one id per (receiver, sender, tag) [−1 for a
    calc], and the number of channels (an open-addressing hash table)."""
    n = kind.size
    comm = 0
    for i in range(n):
        if kind[i] != _CALC:
            comm += 1
    capacity = 16  # more slots than channels (at most comm; comm / 2 when all match)
    while capacity <= comm:
        capacity *= 2
    mask = np.uint64(capacity - 1)
    table = np.empty((capacity, 3), dtype=np.int64)  # receiver·2^32 + sender, tag, id
    table[:, 2] = -1
    out = np.full(n, -1, dtype=np.int64)
    count = 0
    for i in range(n):
        if kind[i] == _CALC:
            continue
        if kind[i] == _SEND:
            receiver, sender = np.int64(peer[i]), np.int64(rank[i])
        else:
            receiver, sender = np.int64(rank[i]), np.int64(peer[i])
        t = tag[i]
        pair = (receiver << 32) | sender  # ranks < 2^31
        slot = _mix(receiver, sender, t) & mask
        while True:
            s = np.int64(slot)
            if table[s, 2] < 0:
                table[s, 0], table[s, 1], table[s, 2] = pair, t, count
                out[i] = count
                count += 1
                break
            if table[s, 0] == pair and table[s, 1] == t:
                out[i] = table[s, 2]
                break
            slot = (slot + np.uint64(1)) & mask
    return out, count


@numba.njit(cache=True)
def successors(n, offsets, targets):
    """Reverse a CSR of "i waits for targets": for every operation b the operations that
    wait for it, in increasing index order; and each operation's number of waits."""
    counts = np.zeros(n + 1, dtype=np.int64)
    for k in range(targets.size):
        counts[targets[k] + 1] += 1
    for i in range(n):
        counts[i + 1] += counts[i]
    out = np.empty(targets.size, dtype=np.int64)
    fill = counts[:n].copy()
    for i in range(n):
        for k in range(offsets[i], offsets[i + 1]):
            b = targets[k]
            out[fill[b]] = i
            fill[b] += 1
    return counts, out


def schedule_arguments(schedule, params, resolution: float = 1e-12) -> tuple:
    """The arguments of :func:`simulate_with_times` from ``kind`` to ``eager_limit``.

    Parameters
    ----------
    schedule : Schedule
        The schedule (its columns and CSR dependencies).
    params : LogGOPS
        Its costs [s]; ``S=None`` makes every message eager.
    resolution : float
        The tick: costs and calc durations are rounded to it. [s]

    Examples
    --------
    >>> import jitterlab as jl
    >>> from jitterlab.schedules import SEND, RECV, kernel
    >>> ping = jl.Schedule(2, kind=[SEND, RECV], rank=[0, 1], peer=[1, 0], size=[8, 8])
    >>> args = kernel.schedule_arguments(ping, jl.LogGOPS.from_loggopsim())
    >>> times, end = kernel.new_operation_times(2), np.zeros(2, dtype=np.int64)
    >>> none = np.zeros(2, dtype=np.int64)
    >>> _ = kernel.simulate_with_times(*args, kernel.NO_NOISE, none, none, none, none[:0],
    ...                                times, end)
    >>> (times[kernel.CPU_END] // 1000).tolist()  # o; o + L + o + 7 G [ns]
    [1500, 5542]
    """
    s = schedule
    n = s.n_operations
    calc = np.rint(s.duration / resolution).astype(np.int64)
    succ_offsets, succ = successors(n, s.requires_offsets, s.requires)
    isucc_offsets, isucc = successors(n, s.irequires_offsets, s.irequires)
    waits = (np.diff(s.requires_offsets) + np.diff(s.irequires_offsets)).astype(np.int64)
    comm = s.kind != _CALC
    exact = not bool(np.any(comm & (s.tag == ANY_TAG))
                     or np.any((s.kind == _RECV) & (s.peer == ANY_SOURCE)))
    if exact:
        channel, n_channels = channels(s.kind, s.rank, s.peer, s.tag)
    else:  # one queue per receiving host, searched in posting order
        channel = np.where(s.kind == _SEND, s.peer, s.rank).astype(np.int64)
        n_channels = s.num_ranks
    n_cpus = int(s.cpu.max()) + 1 if n else 1
    n_nics = int(s.nic.max()) + 1 if n else 1
    ticks = [int(np.rint(getattr(params, name) / resolution))
             for name in ("L", "o", "g", "G", "O")]
    eager_limit = 2**62 if params.S is None else int(params.S)
    return (s.kind, s.rank, s.peer, s.size, s.tag, calc, s.cpu, s.nic, s.rank_offsets,
            succ_offsets, succ, isucc_offsets, isucc, waits, channel, n_channels, exact,
            n_cpus, n_nics, *ticks, eager_limit)


# --------------------------------------------------------------------------------------
# noise

@numba.njit(cache=True)
def _trace_noise(trc_start, trc_dur, trctime, rank_time, start, length):
    """LogGOPSim's Noise::get_noise for CPU time [start, start + length) of one rank."""
    n = trc_start.size
    modulus = trc_start[n - 1] - length
    x = (start + rank_time) % modulus
    pos = 0
    end_last = 0
    if x > trc_start[0]:
        lo, hi = 0, n - 1  # last index with trc_start <= x (x < trc_start[n-1])
        while hi - lo > 1:
            mid = (lo + hi) >> 1
            if trc_start[mid] <= x:
                lo = mid
            else:
                hi = mid
        pos = lo
        end_last = trc_start[pos] + trc_dur[pos]
    noise = 0
    if end_last > x:
        noise = end_last - x
    end = x + length
    if pos == n - 1:
        end -= trctime
        pos = 0
    while end > trc_start[pos + 1]:
        pos += 1
        noise += trc_dur[pos]
        if pos == n - 1:
            end -= trctime
            pos = 0
    return noise


@numba.njit(cache=True, inline="always")
def _noise(mode, index, host, start, length, trc_start, trc_dur, rank_time, delta):
    if mode == TRACE:
        return _trace_noise(trc_start, trc_dur, trc_start[trc_start.size - 1],
                            rank_time[host], start, length)
    if mode == DELTA:
        return delta[index]
    return 0


@numba.njit(cache=True, inline="always")
def _per_byte(size, cost):
    """(size − 1)·cost in LogGOPSim's unsigned arithmetic: −cost for a 0-byte message."""
    return (size - 1) * cost


@numba.njit(cache=True, inline="always")
def _receive_bytes(size, big_o, big_g):
    """LogGOPSim's max((s−1)·O, (s−1)·G), compared as unsigned 64-bit numbers."""
    a = (size - 1) * big_o
    b = (size - 1) * big_g
    if size >= 1:
        return max(a, b)
    # s = 0: the products are −O and −G wrapped to 2**64 − O and 2**64 − G; a zero
    # product is the smallest unsigned number
    if big_o == 0:
        return b
    if big_g == 0:
        return a
    return max(a, b)


# --------------------------------------------------------------------------------------
# the event loop

@numba.njit(cache=True)
def simulate_arrays(kind, rank, peer, size, tag, calc, cpu, nic, rank_offsets,
                    succ_offsets, succ, isucc_offsets, isucc, waits, channel, n_channels,
                    exact, n_cpus, n_nics, latency, overhead, gap, gap_per_byte,
                    overhead_per_byte, eager_limit, mode, trc_start, trc_dur, rank_time,
                    delta, op_start, op_end, end_out):
    """Run the schedule once; fill ``end_out[host]`` (the latest CPU free time [ticks]).

    The arguments up to ``delta`` are those of :func:`simulate_with_times`.
    ``op_start``/``op_end`` (when of size n, else of size 0): the rows ``START`` and
    ``COMPLETE`` of its per-operation times [ticks] are written there.

    Returns (operations finished, events handled, entries left in the queues).
    """
    n = kind.size
    keep = op_start.size == n
    times = np.full((len(TIME_FIELDS), n if keep else 0), -1, dtype=np.int64)
    result = simulate_with_times(
        kind, rank, peer, size, tag, calc, cpu, nic, rank_offsets, succ_offsets, succ,
        isucc_offsets, isucc, waits, channel, n_channels, exact, n_cpus, n_nics, latency,
        overhead, gap, gap_per_byte, overhead_per_byte, eager_limit, mode, trc_start,
        trc_dur, rank_time, delta, times, end_out)
    if keep:
        op_start[:] = times[START]
        op_end[:] = times[COMPLETE]
    return result


@numba.njit(cache=True)
def simulate_with_times(kind, rank, peer, size, tag, calc, cpu, nic, rank_offsets,
                        succ_offsets, succ, isucc_offsets, isucc, waits, channel,
                        n_channels, exact, n_cpus, n_nics, latency, overhead, gap,
                        gap_per_byte, overhead_per_byte, eager_limit, mode, trc_start,
                        trc_dur, rank_time, delta, times, end_out):
    """Run the schedule once; fill ``end_out[host]`` (the latest CPU free time [ticks])
    and, when requested, every operation's times.

    Per-operation times: pass ``times = new_operation_times(n)`` (shape
    (len(TIME_FIELDS), n), int64, −1) to have them filled, or an array of shape
    (len(TIME_FIELDS), 0) for none (then nothing is recorded and nothing costs). Row
    ``times[F]`` is indexed like the schedule's operations, in ticks:

    * ``START``: a calc or send takes its CPU (= ``CPU_START``); a recv is posted;
    * ``CPU_START``, ``CPU_END``: the CPU time the operation charges, noise included:
      a calc's duration, a send's o + (s−1)·O, a recv's o + max((s−1)·O, (s−1)·G) when
      its message is taken off the network (progress on arrival: for a message that
      came before its recv was posted, this lies before ``START``);
    * ``NOISE``: the noise inside [``CPU_START``, ``CPU_END``);
    * ``COMPLETE``: when the operation releases its requires-successors: a calc at
      ``CPU_END``, an eager send at ``CPU_END``, a rendezvous send (s > S) when its
      receive matches, a recv at ``CPU_END`` when its message came after it was posted,
      at ``START`` when the message was waiting (LogGOPSim's times).

    −1 is left where an operation never got there (a deadlock).

    ``waits[i]``: number of requires + irequires of operation i (copied, not changed).
    ``channel``: from :func:`channels` when ``exact`` (no wildcard: the first queued
    entry of a channel always matches), else the receiving host (wildcards: the queue
    of the host is searched in posting order). ``delta`` (mode 2): the noise [ticks] of
    operation i's own CPU use at ``delta[i]`` and of receiving send i's message at
    ``delta[n + i]``.

    Returns (operations finished, events handled, entries left in the queues).

    The loops that release waiting operations and the event queue's operations are
    written out where they are used, not called: a numba call that passes arrays pays
    reference counting on every event (3x slower for a heap in a micro-benchmark).
    """
    n = kind.size
    p = rank_offsets.size - 1
    keep = times.shape[1] == n and n > 0
    # the receive CPU time of a message that waits unexpected, for its recv [ticks]
    m_cpu_start = np.empty(n if keep else 0, dtype=np.int64)
    m_cpu_end = np.empty(n if keep else 0, dtype=np.int64)
    m_noise = np.empty(n if keep else 0, dtype=np.int64)
    remaining = waits.copy()
    nexto = np.zeros(p * n_cpus, dtype=np.int64)
    nextgr = np.zeros(p * n_nics, dtype=np.int64)
    nextgs = np.zeros(p * n_nics, dtype=np.int64)
    rq_head = np.full(n_channels, -1, dtype=np.int64)
    rq_tail = np.full(n_channels, -1, dtype=np.int64)
    uq_head = np.full(n_channels, -1, dtype=np.int64)
    uq_tail = np.full(n_channels, -1, dtype=np.int64)
    q_next = np.empty(n, dtype=np.int64)
    q_prev = np.empty(n, dtype=np.int64)
    # The event queue, in (time, stamp) order. Times handed out are monotone except
    # rarely (a CPU of a host other than the one just handled, a 0-byte message with
    # O > o): those "past" events go to a binary heap (ht, hs, hc; size_q) that is
    # served first. All other events are in a radix queue keyed by time: ``last`` is
    # the time of the latest event taken from it; events at ``last`` wait in ``fifo``
    # (key = stamp << code_bits | code, kept sorted, so in stamp order), an event at
    # a later time in bucket b = bit length of (time ^ last), a linked list through
    # the node pool (pool_t, pool_k, pool_next). When the fifo is empty, the lowest
    # non-empty bucket is spread: its least time becomes ``last``, its events at that
    # time fill the fifo (sorted) and the others move to lower buckets. Each event is
    # handled in O(1) amortized, and the order is exactly the heap's.
    capacity = 64
    ht = np.empty(capacity, dtype=np.int64)
    hs = np.empty(capacity, dtype=np.int64)
    hc = np.empty(capacity, dtype=np.int64)
    size_q = 0
    code_bits = 1
    while (1 << code_bits) < 2 * n + 2:
        code_bits += 1
    if 2 * code_bits > 62:
        raise ValueError("the schedule has too many operations for the event queue")
    code_mask = (1 << code_bits) - 1
    last = 0
    fifo = np.empty(1024, dtype=np.int64)
    f_head = 0
    f_tail = 0
    bucket_head = np.full(65, -1, dtype=np.int64)
    bucket_min = np.full(65, np.iinfo(np.int64).max, dtype=np.int64)
    pool_t = np.empty(1024, dtype=np.int64)
    pool_k = np.empty(1024, dtype=np.int64)
    pool_next = np.empty(1024, dtype=np.int64)
    for q in range(pool_next.size - 1):
        pool_next[q] = q + 1
    pool_next[pool_next.size - 1] = -1
    free_node = 0
    widest = 1
    for r in range(p):
        widest = max(widest, rank_offsets[r + 1] - rank_offsets[r])
    most = 0
    for i in range(n):
        most = max(most, succ_offsets[i + 1] - succ_offsets[i]
                   + isucc_offsets[i + 1] - isucc_offsets[i])
    ready = np.empty(max(widest, 3 * most + 1), dtype=np.int64)
    order = np.empty(ready.size, dtype=np.int64)
    pend_t = np.empty(ready.size + 1, dtype=np.int64)  # pushes of one event
    pend_s = np.empty(ready.size + 1, dtype=np.int64)
    pend_c = np.empty(ready.size + 1, dtype=np.int64)
    stamp = 0
    done = 0
    events = 0

    # the ready operations of every host at time 0, host by host, sorted by kind
    for r in range(p):
        count = 0
        for i in range(rank_offsets[r], rank_offsets[r + 1]):
            if remaining[i] == 0:
                order[count] = i
                count += 1
        std_sort(order, 0, count, kind)
        for k in range(count):  # all at time 0 = last, in stamp order
            if f_tail == fifo.size:
                fifo = _resized(fifo, 2 * fifo.size)
            fifo[f_tail] = (stamp << code_bits) | order[k]
            f_tail += 1
            stamp += 1

    while True:
        if size_q == 0:  # the radix queue
            if f_head == f_tail:  # spread the lowest non-empty bucket
                b = 1
                while b < 65 and bucket_head[b] < 0:
                    b += 1
                if b == 65:
                    break
                least = bucket_min[b]
                node = bucket_head[b]
                bucket_head[b] = -1
                bucket_min[b] = np.iinfo(np.int64).max
                f_head = 0
                f_tail = 0
                while node >= 0:
                    following = pool_next[node]
                    when = pool_t[node]
                    if when == least:
                        if f_tail == fifo.size:
                            fifo = _resized(fifo, 2 * fifo.size)
                        fifo[f_tail] = pool_k[node]
                        f_tail += 1
                        pool_next[node] = free_node
                        free_node = node
                    else:
                        nb = _bit_length(when ^ least)
                        pool_next[node] = bucket_head[nb]
                        bucket_head[nb] = node
                        if when < bucket_min[nb]:
                            bucket_min[nb] = when
                    node = following
                last = least
                if f_tail > 1:
                    fifo[:f_tail].sort()
            t = last
            key = fifo[f_head]
            f_head += 1
            st = key >> code_bits
            code = key & code_mask
            events += 1
        else:  # a past event: the binary heap
            t, st, code = ht[0], hs[0], hc[0]
            size_q -= 1
            events += 1
        if size_q > 0:  # the heap's last entry sifts down from the top (inlined: a call
            lt, ls, lc = ht[size_q], hs[size_q], hc[size_q]  # per event costs 3x)
            parent = 0
            while True:
                child = 2 * parent + 1
                if child >= size_q:
                    break
                if child + 1 < size_q and (ht[child + 1] < ht[child] or (
                        ht[child + 1] == ht[child] and hs[child + 1] < hs[child])):
                    child += 1
                ct = ht[child]
                if ct < lt or (ct == lt and hs[child] < ls):
                    ht[parent], hs[parent], hc[parent] = ct, hs[child], hc[child]
                    parent = child
                else:
                    break
            ht[parent], hs[parent], hc[parent] = lt, ls, lc
        n_push = 0
        n_ready = 0
        host_a = -1  # the (at most two) hosts that completed something
        host_b = -1
        retry = -1
        if code < n:
            i = code
            host = rank[i]
            k = kind[i]
            c = host * n_cpus + cpu[i]
            if k == _CALC:
                if nexto[c] <= t:
                    noise = 0
                    if mode != NO_NOISE:
                        noise = _noise(mode, i, host, t, calc[i], trc_start, trc_dur,
                                       rank_time, delta)
                    nexto[c] = t + calc[i] + noise
                    if keep:
                        times[START, i] = t
                        times[CPU_START, i] = t
                        times[CPU_END, i] = nexto[c]
                        times[NOISE, i] = noise
                        times[COMPLETE, i] = nexto[c]
                    for j in range(isucc_offsets[i], isucc_offsets[i + 1]):
                        b = isucc[j]
                        remaining[b] -= 1
                        if remaining[b] == 0:
                            ready[n_ready] = b
                            n_ready += 1
                    for j in range(succ_offsets[i], succ_offsets[i + 1]):
                        b = succ[j]
                        remaining[b] -= 1
                        if remaining[b] == 0:
                            ready[n_ready] = b
                            n_ready += 1
                    done += 1
                    host_a = host
                else:
                    retry = nexto[c]
            elif k == _SEND:
                nc = host * n_nics + nic[i]
                free = max(nexto[c], nextgs[nc])
                if free <= t:
                    for j in range(isucc_offsets[i], isucc_offsets[i + 1]):
                        b = isucc[j]
                        remaining[b] -= 1
                        if remaining[b] == 0:
                            ready[n_ready] = b
                            n_ready += 1
                    host_a = host
                    noise = 0
                    if mode != NO_NOISE:
                        noise = _noise(mode, i, host, t, overhead, trc_start, trc_dur,
                                       rank_time, delta)
                    nexto[c] = t + overhead + _per_byte(size[i], overhead_per_byte) + noise
                    nextgs[nc] = t + gap + _per_byte(size[i], gap_per_byte)
                    if keep:
                        times[START, i] = t
                        times[CPU_START, i] = t
                        times[CPU_END, i] = nexto[c]
                        times[NOISE, i] = noise
                    pend_t[n_push], pend_s[n_push], pend_c[n_push] = (
                        t + overhead + latency, stamp, n + i)
                    n_push += 1
                    stamp += 1
                    if size[i] <= eager_limit:
                        if keep:
                            times[COMPLETE, i] = nexto[c]
                        for j in range(succ_offsets[i], succ_offsets[i + 1]):
                            b = succ[j]
                            remaining[b] -= 1
                            if remaining[b] == 0:
                                ready[n_ready] = b
                                n_ready += 1
                        done += 1
                else:
                    retry = free
            else:  # a receive is posted: irequires met, then the unexpected queue
                for j in range(isucc_offsets[i], isucc_offsets[i + 1]):
                    b = isucc[j]
                    remaining[b] -= 1
                    if remaining[b] == 0:
                        ready[n_ready] = b
                        n_ready += 1
                host_a = host
                if keep:
                    times[START, i] = t
                ch = channel[i]
                m = uq_head[ch]
                if not exact:
                    while m >= 0:
                        if (peer[i] == -1 or peer[i] == rank[m]) and (
                                tag[i] == -1 or tag[m] == -1 or tag[i] == tag[m]):
                            break
                        m = q_next[m]
                if m >= 0:  # found: unlink the message
                    before, after = q_prev[m], q_next[m]
                    if before >= 0:
                        q_next[before] = after
                    else:
                        uq_head[ch] = after
                    if after >= 0:
                        q_prev[after] = before
                    else:
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
                            times[COMPLETE, m] = t
                        for j in range(succ_offsets[m], succ_offsets[m + 1]):
                            b = succ[j]
                            remaining[b] -= 1
                            if remaining[b] == 0:
                                ready[n_ready] = b
                                n_ready += 1
                        done += 1
                        host_b = src
                    if keep:
                        times[CPU_START, i] = m_cpu_start[m]
                        times[CPU_END, i] = m_cpu_end[m]
                        times[NOISE, i] = m_noise[m]
                        times[COMPLETE, i] = t
                    for j in range(succ_offsets[i], succ_offsets[i + 1]):
                        b = succ[j]
                        remaining[b] -= 1
                        if remaining[b] == 0:
                            ready[n_ready] = b
                            n_ready += 1
                    done += 1
                else:  # post it
                    q_next[i] = -1
                    q_prev[i] = rq_tail[ch]
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
            free = max(nexto[c], nextgr[nc])
            if free <= t:
                noise = 0
                if mode != NO_NOISE:
                    noise = _noise(mode, n + s, host, t, overhead, trc_start, trc_dur,
                                   rank_time, delta)
                nexto[c] = t + overhead + noise + _receive_bytes(size[s], overhead_per_byte,
                                                                 gap_per_byte)
                nextgr[nc] = t + gap + _per_byte(size[s], gap_per_byte)
                ch = channel[s]
                m = rq_head[ch]
                if not exact:
                    while m >= 0:
                        if (peer[m] == -1 or peer[m] == rank[s]) and (
                                tag[m] == -1 or tag[s] == -1 or tag[m] == tag[s]):
                            break
                        m = q_next[m]
                if m >= 0:  # a posted receive matches: unlink it
                    before, after = q_prev[m], q_next[m]
                    if before >= 0:
                        q_next[before] = after
                    else:
                        rq_head[ch] = after
                    if after >= 0:
                        q_prev[after] = before
                    else:
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
                            times[COMPLETE, s] = t
                        for j in range(succ_offsets[s], succ_offsets[s + 1]):
                            b = succ[j]
                            remaining[b] -= 1
                            if remaining[b] == 0:
                                ready[n_ready] = b
                                n_ready += 1
                        done += 1
                        host_b = src
                    if keep:
                        times[CPU_START, m] = t
                        times[CPU_END, m] = nexto[c]
                        times[NOISE, m] = noise
                        times[COMPLETE, m] = nexto[c]
                    for j in range(succ_offsets[m], succ_offsets[m + 1]):
                        b = succ[j]
                        remaining[b] -= 1
                        if remaining[b] == 0:
                            ready[n_ready] = b
                            n_ready += 1
                    done += 1
                    host_a = host
                else:  # unexpected
                    if keep:
                        m_cpu_start[s], m_cpu_end[s], m_noise[s] = t, nexto[c], noise
                    q_next[s] = -1
                    q_prev[s] = uq_tail[ch]
                    if uq_tail[ch] >= 0:
                        q_next[uq_tail[ch]] = s
                    else:
                        uq_head[ch] = s
                    uq_tail[ch] = s
            else:
                retry = free
        if retry >= 0:  # same stamp: the event keeps its place among equal times
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
                if count > 1:
                    std_sort(order, 0, count, kind)
                for k in range(count):
                    b = order[k]
                    when = nexto[h * n_cpus + cpu[b]]
                    if kind[b] == _SEND:
                        when = max(when, nextgs[h * n_nics + nic[b]])
                    pend_t[n_push], pend_s[n_push], pend_c[n_push] = when, stamp, b
                    n_push += 1
                    stamp += 1
        for q in range(n_push):
            time_, stamp_, code_ = pend_t[q], pend_s[q], pend_c[q]
            if time_ == last:  # into the fifo, at its place by stamp (a retry's is old)
                if f_tail == fifo.size:
                    if f_head > 0:
                        fifo[:f_tail - f_head] = fifo[f_head:f_tail].copy()
                        f_tail -= f_head
                        f_head = 0
                    else:
                        fifo = _resized(fifo, 2 * fifo.size)
                key = (stamp_ << code_bits) | code_
                place = f_tail
                while place > f_head and fifo[place - 1] > key:
                    fifo[place] = fifo[place - 1]
                    place -= 1
                fifo[place] = key
                f_tail += 1
                continue
            if time_ > last:  # into bucket bit_length(time ^ last)
                if free_node < 0:
                    old = pool_t.size
                    pool_t = _resized(pool_t, 2 * old)
                    pool_k = _resized(pool_k, 2 * old)
                    pool_next = _resized(pool_next, 2 * old)
                    for node in range(old, 2 * old - 1):
                        pool_next[node] = node + 1
                    pool_next[2 * old - 1] = -1
                    free_node = old
                node = free_node
                free_node = pool_next[node]
                nb = _bit_length(time_ ^ last)
                pool_t[node] = time_
                pool_k[node] = (stamp_ << code_bits) | code_
                pool_next[node] = bucket_head[nb]
                bucket_head[nb] = node
                if time_ < bucket_min[nb]:
                    bucket_min[nb] = time_
                continue
            if size_q == capacity:  # a past event: sift up in the binary heap (inlined)
                capacity *= 2
                ht, hs = _resized(ht, capacity), _resized(hs, capacity)
                hc = _resized(hc, capacity)
            child = size_q
            while child > 0:
                parent = (child - 1) >> 1
                pt = ht[parent]
                if time_ < pt or (time_ == pt and stamp_ < hs[parent]):
                    ht[child], hs[child], hc[child] = pt, hs[parent], hc[parent]
                    child = parent
                else:
                    break
            ht[child], hs[child], hc[child] = time_, stamp_, code_
            size_q += 1
    left = 0
    for ch in range(n_channels):
        if rq_head[ch] >= 0 or uq_head[ch] >= 0:
            left += 1
    for r in range(p):
        latest = nexto[r * n_cpus]
        for c in range(1, n_cpus):
            latest = max(latest, nexto[r * n_cpus + c])
        end_out[r] = latest
    return done, events, left
