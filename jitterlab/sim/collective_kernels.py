"""numba kernel of compute phases closed by a round-based collective (arrays in, arrays out).

Each phase: every task computes ``work`` on its own trace, then runs the collective's
rounds; in a round a task sends to one partner and then receives from one partner (see
:func:`partner`; −1 where a task sits a round out). A send
and a receive cost CPU time on the task's trace; a message arrives ``wire`` after its
send is done, and the receive starts when both the task and the message are there. A
task starts its next phase as soon as its own last round is done. The trace is packed
as in :mod:`jitterlab.sim.replay_kernels`; per-task state too.
The plain twin is ``reference_rounds`` in tests/test_collectives.py.
"""

from __future__ import annotations

import numba
import numpy as np

from .replay_kernels import CLOCK, NEXT, PREV_END, busy, quick

__all__ = ["run_rounds", "partner", "round_count", "DISSEMINATION", "RECURSIVE_DOUBLING"]

DISSEMINATION, RECURSIVE_DOUBLING = 0, 1


@numba.njit(cache=True)
def round_count(kind, n):
    """Rounds of the collective on n tasks."""
    if n <= 1:
        return 0
    if kind == DISSEMINATION:
        rounds = 0
        while (1 << rounds) < n:
            rounds += 1
        return rounds
    power, doublings = _power_below(n)
    return doublings + (2 if power < n else 0)


@numba.njit(cache=True)
def _power_below(n):
    """(P, log2 P) for P the largest power of two <= n."""
    power = 1
    doublings = 0
    while power * 2 <= n:
        power *= 2
        doublings += 1
    return power, doublings


@numba.njit(cache=True, inline="always")
def _partner(kind, n, power, doublings, k, task):
    """:func:`partner` with P and log2 P computed once by the caller."""
    if kind == DISSEMINATION:
        step = 1 << k
        return (task + step) % n, (task - step) % n
    extra = n - power
    if extra > 0:
        if k == 0:  # fold in: task power + e sends to task e
            if task >= power:
                return task - power, -1
            return -1, (task + power if task < extra else -1)
        if k == doublings + 1:  # fold out: task e sends the result to power + e
            if task >= power:
                return -1, task - power
            return (task + power if task < extra else -1), -1
        k -= 1
    if task >= power:
        return -1, -1
    other = task ^ (1 << k)
    return other, other


@numba.njit(cache=True)
def partner(kind, n, k, task):
    """(task it sends to, task it receives from) in round k; −1 for none.

    Dissemination: to (task + 2^k) mod n, from (task − 2^k) mod n. Recursive doubling
    with P the largest power of two <= n: if P < n, round 0 folds each task P + e into
    task e (it sends, e receives) and the last round sends the result back; the rounds
    between pair task r < P with r XOR 2^j.
    """
    power, doublings = _power_below(n)
    return _partner(kind, n, power, doublings, k, task)


@numba.njit(cache=True, inline="always")
def _cpu_time(trace_mode, state, task, t, cpu, table, offsets):
    """Scalar fast path: t + cpu when no jitter can meet it, else −1."""
    if cpu <= 0.0:
        return t
    if not trace_mode:
        return t + cpu
    return quick(t, cpu, state[task, PREV_END], state[task, NEXT])


@numba.njit(cache=True, nogil=True)  # no parallel loop: runs side by side on threads
def run_rounds(table, offsets, work, phases, kind, send, recv, wire, compute_out, end_out,
               ops_out):
    """Phase end times (the slowest task's end of the collective) [s].

    ``compute_out[phase, task]`` and ``end_out[phase, task]`` are filled when not empty,
    and ``ops_out[phase, task, op]`` (when not empty) with the end of each operation: op 0
    the compute, 1 + 2k the send of round k, 2 + 2k its receive (untouched where the task
    sits that round out).
    """
    n_tasks = offsets.size
    n_rounds = round_count(kind, n_tasks)
    power, doublings = _power_below(n_tasks)
    trace_mode = table.shape[0] > 1
    state = np.zeros((n_tasks, 8))
    state[:, NEXT] = -np.inf
    arrival = np.zeros(n_tasks)
    phase_end = np.zeros(phases)
    keep = compute_out.shape[0] > 0
    keep_ops = ops_out.shape[0] > 0
    for phase in range(phases):
        for task in range(n_tasks):
            t = state[task, CLOCK]
            end = _cpu_time(trace_mode, state, task, t, work, table, offsets)
            if end < 0.0:
                end = busy(state, task, t, work, table, offsets)
            if keep:
                compute_out[phase, task] = end - t
            if keep_ops:
                ops_out[phase, task, 0] = end
            state[task, CLOCK] = end
        for k in range(n_rounds):
            for task in range(n_tasks):  # every send of the round
                target = _partner(kind, n_tasks, power, doublings, k, task)[0]
                if target < 0:
                    continue
                t = state[task, CLOCK]
                end = _cpu_time(trace_mode, state, task, t, send, table, offsets)
                if end < 0.0:
                    end = busy(state, task, t, send, table, offsets)
                state[task, CLOCK] = end
                arrival[target] = end + wire
                if keep_ops:
                    ops_out[phase, task, 1 + 2 * k] = end
            for task in range(n_tasks):  # then every receive
                if _partner(kind, n_tasks, power, doublings, k, task)[1] < 0:
                    continue
                t = max(state[task, CLOCK], arrival[task])
                end = _cpu_time(trace_mode, state, task, t, recv, table, offsets)
                if end < 0.0:
                    end = busy(state, task, t, recv, table, offsets)
                state[task, CLOCK] = end
                if keep_ops:
                    ops_out[phase, task, 2 + 2 * k] = end
        slowest = 0.0
        for task in range(n_tasks):
            slowest = max(slowest, state[task, CLOCK])
            if keep:
                end_out[phase, task] = state[task, CLOCK]
        phase_end[phase] = slowest
    return phase_end
