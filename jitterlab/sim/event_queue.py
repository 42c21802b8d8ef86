"""Event queues of the discrete-event kernels, ordered by (time, stamp), in numba.

Times are integers and no event is ever dated before the latest one taken (except in
the schedule engine's rare "past" events, which go to the binary heap). An event is a
time and a *key* = stamp << code bits | code, so comparing keys compares stamps.

* The radix queue: ``last`` is the time of the latest event taken; the events at
  ``last`` wait in a *fifo*, kept sorted by key (so in stamp order); an event at a
  later time waits in bucket b = bit length of (time ^ last). A bucket is a list of
  *chunks* (rows of ``chunks``: :data:`CHUNK` times, :data:`CHUNK` keys, the next
  chunk, the fill), appended to in push order, so a bucket is read and written
  sequentially, not node by node. When the fifo is empty, :func:`radix_take` empties
  the lowest non-empty bucket: its least time becomes ``last``, its events at that time
  fill the fifo and the others move to lower buckets. Each event costs O(1) amortized
  and the order is exactly a heap's on (time, stamp).
* The binary heap: three arrays (time, stamp, code) side by side, so a comparison
  reads no other array.

Reference counting: numba increfs and decrefs (atomic instructions, ~20 cycles each,
which also wait for every pending store) an array variable that is *reassigned* inside
a loop on every iteration, and an array passed to an ``inline="always"`` helper on every
inlined call; a call to a compiled helper that calls nothing else costs none. In the
schedule loop the first two were 2/3 of its time (perf, recursive doubling on 65 536
ranks). Hence: :func:`new_fixed_chunks` allocates the arrays once at a bound (pages are
touched only when used), chunk rows are taken from a free list or, past it, the next
untouched row (``fresh``), and :func:`radix_take` and :func:`compact` never replace an
array; a kernel that finds an array full returns and is run again with more room
(:data:`FIFO_FULL`, :data:`CHUNKS_FULL`). The kernel writes the push and the fifo's
insertion out in its loop; the rare operations (spreading a bucket, the heap of past
events) are calls.
"""

from __future__ import annotations

import numba
import numpy as np
from numba.cpython.unsafe.numbers import leading_zeros

__all__ = ["CHUNK", "NEXT", "FILL", "FIFO_FULL", "CHUNKS_FULL", "bit_length", "new_fixed_chunks",
           "radix_take", "sort_keys", "compact", "heap_push", "heap_pop"]

#: events per chunk of a radix bucket
CHUNK = 128
#: the columns of a chunk's row after its times and keys: the next chunk, the fill
NEXT, FILL = 2 * CHUNK, 2 * CHUNK + 1
_NONE = np.iinfo(np.int64).max
#: :func:`radix_take`'s answers when the fifo or the chunks are full
FIFO_FULL, CHUNKS_FULL = -2, -3


@numba.njit(cache=True, inline="always")
def bit_length(x):
    """Number of bits of x > 0 (the radix queue's bucket of a time x = t ^ last): one
    instruction (LLVM's ctlz)."""
    return 64 - leading_zeros(np.int64(x))


@numba.njit(cache=True)
def heap_push(heap_t, heap_s, heap_c, size, t, s, c):
    """Put (t, s, c) into the heap of ``size`` entries (room checked by the caller).
    Returns the new size."""
    child = size
    while child > 0:
        parent = (child - 1) >> 1
        pt = heap_t[parent]
        if t < pt or (t == pt and s < heap_s[parent]):
            heap_t[child], heap_s[child], heap_c[child] = pt, heap_s[parent], heap_c[parent]
            child = parent
        else:
            break
    heap_t[child], heap_s[child], heap_c[child] = t, s, c
    return size + 1


@numba.njit(cache=True)
def heap_pop(heap_t, heap_s, heap_c, size):
    """Remove the least entry (read it from index 0 first). Returns the new size."""
    size -= 1
    t, s, c = heap_t[size], heap_s[size], heap_c[size]
    parent = 0
    while True:
        child = 2 * parent + 1
        if child >= size:
            break
        right = child + 1
        if right < size and (heap_t[right] < heap_t[child] or (
                heap_t[right] == heap_t[child] and heap_s[right] < heap_s[child])):
            child = right
        ct = heap_t[child]
        if ct < t or (ct == t and heap_s[child] < s):
            heap_t[parent], heap_s[parent], heap_c[parent] = ct, heap_s[child], heap_c[child]
            parent = child
        else:
            break
    heap_t[parent], heap_s[parent], heap_c[parent] = t, s, c
    return size


@numba.njit(cache=True)
def new_fixed_chunks(rows):
    """An empty radix queue of at most ``rows`` chunks: (bucket_head, bucket_tail,
    bucket_min, chunks); no row is touched (the free list starts empty, ``fresh`` at 0)."""
    return (np.full(65, -1, dtype=np.int64), np.full(65, -1, dtype=np.int64),
            np.full(65, _NONE, dtype=np.int64),
            np.empty((rows, 2 * CHUNK + 2), dtype=np.int64))


@numba.njit(cache=True)
def radix_take(bucket_head, bucket_tail, bucket_min, chunks, free_chunk, fresh, fifo):
    """Empty the lowest non-empty bucket: its least time's keys into ``fifo[:count]``,
    sorted, the others into lower buckets (a new chunk is the free list's first, else row
    ``fresh``). Returns (least time, or −1 when the queue is empty, or :data:`FIFO_FULL`
    / :data:`CHUNKS_FULL`, count, free_chunk, fresh); after a FULL the queue is spoilt
    (run again with more room)."""
    b = 1
    while b < 65 and bucket_head[b] < 0:
        b += 1
    # One path for every call, no ``break``, no early return: with any of them numba
    # counts the references of the array arguments at every call (perf: 12 % of a
    # noisy run's samples were NRT_incref/decref; radix_take runs once per distinct
    # time). So an empty queue takes the empty bucket 64, and the sort always runs.
    least = bucket_min[min(b, 64)]
    c = bucket_head[min(b, 64)]
    bucket_head[min(b, 64)] = -1
    bucket_tail[min(b, 64)] = -1
    bucket_min[min(b, 64)] = _NONE
    count = 0
    full = 0
    while c >= 0 and full == 0:
        following = chunks[c, NEXT]
        stop = chunks[c, FILL]
        j = 0
        while j < stop and full == 0:
            when = chunks[c, j]
            key = chunks[c, CHUNK + j]
            j += 1
            if when == least:
                if count == fifo.size:
                    full = FIFO_FULL
                else:
                    fifo[count] = key
                    count += 1
            else:  # radix_push written out (no reference counts)
                nb = bit_length(when ^ least)
                tail = bucket_tail[nb]
                if tail < 0 or chunks[tail, FILL] == CHUNK:
                    node = -1
                    if free_chunk >= 0:
                        node = free_chunk
                        free_chunk = chunks[node, NEXT]
                    elif fresh < chunks.shape[0]:
                        node = fresh
                        fresh += 1
                    else:
                        full = CHUNKS_FULL
                    if node >= 0:
                        chunks[node, NEXT] = -1
                        chunks[node, FILL] = 0
                        if tail < 0:
                            bucket_head[nb] = node
                        else:
                            chunks[tail, NEXT] = node
                        bucket_tail[nb] = node
                    tail = node
                if full == 0:
                    k = chunks[tail, FILL]
                    chunks[tail, k] = when
                    chunks[tail, CHUNK + k] = key
                    chunks[tail, FILL] = k + 1
                    if when < bucket_min[nb]:
                        bucket_min[nb] = when
        if full == 0:
            chunks[c, NEXT] = free_chunk
            free_chunk = c
            c = following
    if b == 65:
        least = -1
    elif full != 0:
        least = full
        count = 0
    sort_keys(fifo, count)  # in push order, so mostly in stamp order already
    return least, count, free_chunk, fresh


@numba.njit(cache=True)
def sort_keys(keys, count):
    """Sort ``keys[:count]`` in place, unless sorted already: a heapsort written out,
    calling nothing and with no ``break`` (see :func:`radix_take`)."""
    q = 1
    while q < count and keys[q] >= keys[q - 1]:
        q += 1
    if q >= count:
        return
    # phase 1 builds a max-heap (root = start, heap = keys[:count]); phase 2 moves the
    # largest key behind the heap and sifts the new root down (heap = keys[:end])
    start = count // 2
    end = count
    while end > 1:
        if start > 0:
            start -= 1
            root = start
        else:
            end -= 1
            keys[0], keys[end] = keys[end], keys[0]
            root = 0
        value = keys[root]
        child = 2 * root + 1
        while child < end:
            if child + 1 < end and keys[child + 1] > keys[child]:
                child += 1
            if keys[child] <= value:
                child = end  # in place: stop
            else:
                keys[root] = keys[child]
                root = child
                child = 2 * root + 1
        keys[root] = value


@numba.njit(cache=True)
def compact(fifo, f_head, f_tail):
    """Move the fifo's keys ``fifo[f_head:f_tail]`` to its front; returns the new
    ``f_tail`` (``f_head`` becomes 0)."""
    for q in range(f_tail - f_head):
        fifo[q] = fifo[f_head + q]
    return f_tail - f_head
