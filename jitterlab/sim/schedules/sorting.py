"""libstdc++'s std::sort (GCC 12, bits/stl_algo.h and stl_heap.h) in numba.

LogGOPSim sorts the operations of one host that became ready while one event was
handled by kind (send, recv, calc) with ``std::sort``, which is not stable: the order it
leaves equal kinds in is part of LogGOPSim's semantics, so :func:`std_sort` repeats it
step by step (introsort with median-of-three pivots, heap sort below the depth limit,
insertion sort of the first 16 and linear insertion of the rest).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["std_sort", "std_sort_with", "new_sort_stack"]

_THRESHOLD = 16  # libstdc++ std::sort: _S_threshold

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
def _introsort_loop(buf, first, last, depth, kind, stack):
    """libstdc++'s __introsort_loop; its recursion into the right part becomes a stack
    (the parts are disjoint, so the order they are sorted in changes nothing): ``stack``
    from :func:`new_sort_stack` (128 rows: one per level of at most 2·63 levels)."""
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
def new_sort_stack():
    """The work array of :func:`std_sort_with` (make it once, outside a loop)."""
    return np.empty((128, 3), dtype=np.int64)


@numba.njit(cache=True)
def std_sort(buf, first, last, kind):
    """Sort ``buf[first:last]`` by ``kind[buf[i]]`` exactly as libstdc++'s std::sort."""
    std_sort_with(buf, first, last, kind, new_sort_stack())


@numba.njit(cache=True)
def std_sort_with(buf, first, last, kind, stack):
    """:func:`std_sort` with its work array ``stack`` (:func:`new_sort_stack`) given, so
    that a loop sorting many small sets allocates nothing (an allocation per sort of 17
    operations was 1.2 % of a first call on recursive doubling, 65 536 ranks)."""
    n = last - first
    if n < 2:
        return
    if n > _THRESHOLD:  # else the introsort loop does nothing
        depth = 0
        while (1 << (depth + 1)) <= n:
            depth += 1
        _introsort_loop(buf, first, last, 2 * depth, kind, stack)
        _insertion_sort(buf, first, first + _THRESHOLD, kind)
        for i in range(first + _THRESHOLD, last):
            _linear_insert(buf, i, kind)
    else:
        _insertion_sort(buf, first, last, kind)

