"""Plain reference implementations, slow and simple, that the fast kernels are tested against.

Those of the GOAL schedule kernel's inputs are in :mod:`jitterlab.testing_layout`.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from .sim.barriers import TreeBarrier
from .sim.replay import draw_offsets

__all__ = ["simulate_reference", "walk", "walk_from_row", "wavefront_reference"]

_TIE = 16 * np.finfo(np.float64).eps  # relative rounding allowed in "ends exactly at"


def walk(jitter, gap, x: float, cpu: float) -> float:
    """Walk the trace event by event from time x until ``cpu`` of compute is done.

    Returns the finish time. A start inside a jitter waits out its remainder; a
    jitter that begins exactly when the compute is done is not counted (jitSim §3.4).
    """
    if cpu <= 0:
        return x
    period = float(np.sum(jitter) + np.sum(gap))
    row_start = np.floor(x / period) * period
    row = 0
    while row_start + jitter[row] + gap[row] <= x:  # find the row holding x
        row_start += jitter[row] + gap[row]
        row += 1
    return walk_from_row(jitter, gap, row, row_start, x, cpu)


def walk_from_row(jitter, gap, row: int, row_start: float, x: float, cpu: float) -> float:
    """The event walk of :func:`walk` from time x in ``row``, which starts at ``row_start``.

    Plain loops over arrays only, so ``numba.njit(walk_from_row)`` compiles it (the
    benchmark does, as its event-walking baseline).
    """
    now, needed = x, cpu
    while True:
        jitter_end = row_start + jitter[row]
        gap_end = jitter_end + gap[row]
        if now < jitter_end:
            now = jitter_end
        available = gap_end - now
        # within rounding of the gap's end counts as at its end (as in the kernel)
        if available >= needed - _TIE * max(abs(gap_end), needed):
            return now + needed
        needed -= available
        now = gap_end
        row_start = gap_end
        row += 1
        if row == len(jitter):
            row = 0


def _latency(barrier: TreeBarrier, child: int, parent: int) -> float:
    size = barrier.cores_per_node
    if size and child // size == parent // size:
        return barrier.latency if barrier.intra_node_latency is None \
            else barrier.intra_node_latency
    return barrier.latency


def _phase_with_tree(jitter, gap, offsets, begin, work, barrier):
    """One phase with a tree barrier; returns (compute time, end time) per task."""
    n, k = len(offsets), barrier.fanout

    def run(task, t, cpu):  # wall time after using cpu from wall time t
        return walk(jitter, gap, offsets[task] + t, cpu) - offsets[task]

    compute, ready, sent_up = np.zeros(n), np.zeros(n), np.zeros(n)
    for task in reversed(range(n)):  # children have larger numbers than their parent
        now = run(task, begin[task], work)
        compute[task] = now - begin[task]
        children = [c for c in range(k * task + 1, k * task + k + 1) if c < n]
        arrivals = sorted((sent_up[c] + _latency(barrier, c, task), c) for c in children)
        for arrival, _ in arrivals:
            now = run(task, max(now, arrival), barrier.recv)
        if task > 0:
            now = run(task, now, barrier.send)
            sent_up[task] = now
        ready[task] = now
    end, sent_down = np.zeros(n), np.zeros(n)
    for task in range(n):
        now = ready[task]
        if task > 0:
            arrival = sent_down[task] + _latency(barrier, task, (task - 1) // k)
            now = run(task, max(now, arrival), barrier.recv)
        for child in range(k * task + 1, k * task + k + 1):
            if child < n:
                now = run(task, now, barrier.send)
                sent_down[child] = now
        end[task] = now
    return compute, end


def simulate_reference(trace, n: int, work: float, phases: int = 1, start="random",
                       barrier: TreeBarrier | None = None, rng=None, detail: bool = False
                       ) -> xr.Dataset:
    """Event-walking twin of :func:`jitterlab.simulate` (one N; slow, for tests).

    Start points are drawn exactly as :func:`jitterlab.simulate` draws them for the
    same ``rng``; everything else is walked row by row.
    """
    from .base.rng import seed_from

    jitter = np.asarray(trace.jitter_seconds, dtype=float)
    gap = np.asarray(trace.gap_seconds, dtype=float)
    seed = seed_from(rng) if isinstance(start, str) else None
    offsets = draw_offsets(trace, int(n), start, rng=seed)
    period = float(jitter.sum() + gap.sum())
    n = len(offsets)

    def run_phases(jit, gp):
        compute = np.zeros((phases, n))
        ends = np.zeros((phases, n))
        begin = np.zeros(n)
        for phase in range(phases):
            if barrier is None:
                took = np.array([walk(jit, gp, o + begin[0], work) - (o + begin[0])
                                 for o in offsets])
                compute[phase] = took
                ends[phase] = begin + took.max()
            else:
                compute[phase], ends[phase] = _phase_with_tree(jit, gp, offsets, begin, work,
                                                               barrier)
            begin = ends[phase].copy()
        return compute, ends

    compute, ends = run_phases(jitter, gap)
    theta = np.diff(ends.max(axis=1), prepend=0.0)
    _, quiet_ends = run_phases(np.zeros(1), np.array([period]))
    quiet = np.diff(quiet_ends.max(axis=1), prepend=0.0)
    data = {"phase_time": ("phase", theta, {"units": "s"}),
            "slowdown": ((), theta.mean() / quiet.mean() - 1.0, {"units": "1"}),
            "coverage": ((), theta.sum() / period, {"units": "1"})}
    if detail:
        previous = np.vstack([np.zeros((1, n)), ends[:-1]])
        data["compute_time"] = (("phase", "task"), compute, {"units": "s"})
        data["wait_time"] = (("phase", "task"), ends - previous - compute, {"units": "s"})
    return xr.Dataset(data, coords={"phase": np.arange(phases), "n": int(n)})


def _wavefront_programs(workload):
    """Each rank's operations in program order, as LogGOPSim's GOAL schedule lists them:
    ("recv", source), ("calc", pass), ("send", target)."""
    px, py = workload.px, workload.py
    corners = [tuple(c) for c in workload.corners]
    programs = []
    for rank in range(workload.n):
        i, j = rank % px, rank // px
        ops = []
        for g in range(workload.iterations * len(corners) * workload.blocks):
            dx, dy = corners[(g // workload.blocks) % len(corners)]
            if 0 <= i - dx < px:
                ops.append(("recv", j * px + i - dx, g))
            if 0 <= j - dy < py:
                ops.append(("recv", (j - dy) * px + i, g))
            ops.append(("calc", rank, g))
            if 0 <= i + dx < px:
                ops.append(("send", j * px + i + dx, g))
            if 0 <= j + dy < py:
                ops.append(("send", (j + dy) * px + i, g))
        programs.append(ops)
    return programs


def wavefront_reference(workload, progress: str = "in_order", trace=None, offsets=None,
                        delta=None):
    """Plain twin of :func:`jitterlab.apps.wavefront_simulate` (slow, for tests).

    Walks every rank's operation list (the GOAL schedule of the LogGOPSim reference).
    ``trace`` with ``offsets`` [s]: CPU time walks the trace row by row; ``delta``
    (passes × ranks) [s]: added to each block's compute (in order only). Returns the
    total time and each rank's finish [s].
    """
    import heapq

    programs = _wavefront_programs(workload)
    message = workload.message
    wire_x, wire_y = workload.wire_times()
    n = workload.n
    if trace is not None:
        jitter = np.asarray(trace.jitter_seconds, dtype=float)
        gap = np.asarray(trace.gap_seconds, dtype=float)

    def busy(rank, t, cpu):
        if trace is None or cpu <= 0:
            return t + cpu
        return walk(jitter, gap, offsets[rank] + t, cpu) - offsets[rank]

    def compute(rank, g, t):
        if delta is not None:
            return t + workload.work + delta[g, rank]
        return busy(rank, t, workload.work)

    def along_x(source, target):
        return abs(source - target) == 1 and source // workload.px == target // workload.px

    def wire(source, target):
        return wire_x if along_x(source, target) else wire_y

    if progress == "in_order":  # every rank in pass order; arrivals keyed by message
        clock, arrival = np.zeros(n), {}
        position = [0] * n
        for g in range(workload.iterations * len(workload.corners) * workload.blocks):
            pending = list(range(n))
            while pending:  # ranks whose upstream messages of pass g are all sent
                waiting = []
                for rank in pending:
                    ops = programs[rank]
                    k = position[rank]
                    needs = [op for op in ops[k:] if op[2] == g and op[0] == "recv"]
                    if any((op[1], rank, g) not in arrival for op in needs):
                        waiting.append(rank)
                        continue
                    t = clock[rank]
                    while k < len(ops) and ops[k][2] == g:
                        kind, other, _ = ops[k]
                        if kind == "recv":
                            t = busy(rank, max(t, arrival.pop((other, rank, g))), message.recv)
                        elif kind == "calc":
                            t = compute(rank, g, t)
                        else:
                            t = busy(rank, t, message.send)
                            arrival[(rank, other, g)] = t + wire(rank, other)
                        k += 1
                    clock[rank], position[rank] = t, k
                pending = waiting
            if workload.allreduce and (g + 1) % (len(workload.corners) * workload.blocks) == 0:
                clock[:] = clock.max() + workload.allreduce_time()
        return float(clock.max()), clock
    if delta is not None or workload.allreduce:
        raise ValueError("progress='on_arrival' has no noise law and no all-reduce")
    # on arrival: events by time, then by creation; the CPU takes a message when free.
    # Times are whole picoseconds, so that simultaneous events are exactly simultaneous
    scale = 10**12
    costs = {name: round(value * scale) for name, value in
             (("send", message.send), ("recv", message.recv), ("work", workload.work),
              ("x", wire_x), ("y", wire_y))}

    def busy_ps(rank, t, cpu):
        if trace is None or cpu <= 0:
            return t + cpu
        return max(t + cpu, round(busy(rank, t / scale, cpu / scale) * scale))

    def wire_ps(source, target):
        return costs["x"] if along_x(source, target) else costs["y"]

    free = [0] * n
    position = [0] * n
    taken, posted = [set() for _ in range(n)], [None] * n
    events, stamp = [], 0

    def push(t, kind, rank, payload=None):
        nonlocal stamp
        heapq.heappush(events, (t, stamp, kind, rank, payload))
        stamp += 1

    def next_op(rank):
        position[rank] += 1
        if position[rank] < len(programs[rank]):
            push(free[rank], "op", rank)

    for rank in range(n):
        push(0, "op", rank)
    while events:
        t, old_stamp, kind, rank, payload = heapq.heappop(events)
        if kind == "msg":
            if free[rank] > t:
                heapq.heappush(events, (free[rank], old_stamp, kind, rank, payload))
                continue
            free[rank] = busy_ps(rank, t, costs["recv"])
            if posted[rank] == payload:
                posted[rank] = None
                next_op(rank)
            else:
                taken[rank].add(payload)
            continue
        op, other, g = programs[rank][position[rank]]
        if op == "recv":
            if (other, g) in taken[rank]:
                taken[rank].remove((other, g))
                next_op(rank)
            else:
                posted[rank] = (other, g)
        elif free[rank] > t:
            heapq.heappush(events, (free[rank], old_stamp, kind, rank, payload))
        elif op == "calc":
            free[rank] = busy_ps(rank, t, costs["work"])
            next_op(rank)
        else:
            free[rank] = busy_ps(rank, t, costs["send"])
            push(free[rank] + wire_ps(rank, other), "msg", other, (rank, g))
            next_op(rank)
    return max(free) / scale, np.array(free) / scale


def _approximate_arrival(i, j, start, end, a_start, a_end, latency):
    """(approximated arrival, own part of the receive) of recv row i sent by row j."""
    leave = max(min(end[j], end[i] - latency), start[j])
    d_send = end[j] - start[j]
    shortened = (a_end[j] - a_start[j]) / d_send if d_send > 0 else 0.0
    d = end[i] - start[i]
    wait = min(max(leave + latency - start[i], 0.0), d)
    return a_start[j] + (leave - start[j]) * shortened + latency, d - wait


def timeline_reference(events, source: str = "combined"):
    """Plain-Python twin of :func:`jitterlab.compare.estimate.approximate_timeline`.

    Matches messages and collectives with dictionaries straight from the rows and
    sweeps over the ranks again and again, advancing each as far as its dependencies
    allow, until nothing moves. Returns (approximated start, approximated end) per row
    of ``events.data``; raises ValueError if some rank can never finish.
    """
    data = events.data
    noise = events.noise(source)
    rank = data["rank"].tolist()
    kind = data["kind"].astype(str).tolist()
    start = data["start"].tolist()
    end = data["end"].tolist()
    peer = data["peer"].tolist()
    tag = data["tag"].tolist()
    any_order = events.any_order().tolist()
    latency = events.latency
    rows = {}
    for i, r in enumerate(rank):
        rows.setdefault(r, []).append(i)
    send_of, members = {}, {}
    for i in range(len(rank)):
        if kind[i] == "send":
            send_of[(rank[i], peer[i], tag[i])] = i
        elif kind[i] == "collective":
            members.setdefault(tag[i], []).append(i)
    a_start = [None] * len(rank)
    a_end = [None] * len(rank)
    position = {r: 0 for r in rows}
    moved = True
    while moved:
        moved = False
        for r, mine in rows.items():
            while position[r] < len(mine):
                i = mine[position[r]]
                p = position[r]
                a = start[i] if p == 0 else a_end[mine[p - 1]] + (start[i] - end[mine[p - 1]])
                d = end[i] - start[i]
                if kind[i] in ("compute", "send"):
                    b = a + max(d - noise[i], 0.0)
                elif kind[i] == "recv" and any_order[i]:
                    run = [mine[q] for q in range(p, len(mine))]
                    run = run[:next((q for q, x in enumerate(run)
                                     if kind[x] != "recv" or not any_order[x]), len(run))]
                    sends = [send_of[(peer[x], r, tag[x])] for x in run]
                    if any(a_end[j] is None for j in sends):
                        break
                    arrivals = [_approximate_arrival(x, j, start, end, a_start, a_end,
                                                     latency)[0]
                                for x, j in zip(run, sends, strict=True)]
                    t = a
                    for place, q in enumerate(sorted(range(len(run)),
                                                     key=lambda q: arrivals[q])):
                        if place > 0:
                            t += start[run[place]] - end[run[place - 1]]
                        x = run[q]
                        own = _approximate_arrival(x, sends[q], start, end, a_start, a_end,
                                                   latency)[1]
                        a_start[x] = t
                        t = max(t, arrivals[q]) + max(own - noise[x], 0.0)
                        a_end[x] = t
                    position[r] += len(run)
                    moved = True
                    continue
                elif kind[i] == "recv":
                    j = send_of[(peer[i], r, tag[i])]
                    if a_end[j] is None:
                        break
                    arrival, own = _approximate_arrival(i, j, start, end, a_start, a_end,
                                                        latency)
                    b = max(a, arrival) + max(own - noise[i], 0.0)
                else:
                    a_start[i] = a  # entered; leaves once every rank has entered
                    group = members[tag[i]]
                    if any(a_start[j] is None for j in group):
                        break
                    own = max(end[i] - max(start[j] for j in group), 0.0)
                    b = max(a_start[j] for j in group) + max(own - noise[i], 0.0)
                a_start[i], a_end[i] = a, b
                position[r] += 1
                moved = True
    stuck = [r for r in rows if position[r] < len(rows[r])]
    if stuck:
        raise ValueError(f"rank {stuck[0]} can never finish (a cycle of dependencies)")
    return np.array(a_start, dtype=float), np.array(a_end, dtype=float)


__all__ += ["timeline_reference"]


def random_events(seed, n_ranks: int = 4, steps: int = 12, latency: float = 0.0,
                  sources=("tick", "daemon"), present=None, irregular: bool = False):
    """A random valid event trace of a small program, with noise placed as the
    timeline approximation assumes (unless ``irregular``).

    The program has ``steps`` steps: first a compute on every rank, then each one of
    a compute on every rank, a round of messages (a random matching of the ranks, one
    or both ways per pair) or a collective; random gaps separate some intervals.

    Every interval draws a noise duration per source (0 with probability 0.3, else
    exponential); only the sources in ``present`` (default: all) lengthen the run, and
    the ``noise_<source>`` columns hold the noise that did (``noise_combined`` their
    sum). The noise of a send, a receive and a collective strikes after the message
    arrived or the last rank entered, so :func:`jitterlab.compare.estimate.accumulated_noise`
    recovers the same program run with fewer sources exactly: the run with
    ``present`` = all but X ends where removing X from the full run says. With
    ``irregular``, a receive's noise strikes while it waits and a send's after its
    message left (the estimate is then not exact). The same seed gives the same
    program, costs and noise whatever ``present`` is.
    """
    import pandas as pd

    from .traces.events import EventTrace

    rng = np.random.default_rng(seed)
    present = set(sources if present is None else present)
    clock = np.zeros(n_ranks)
    rows = {name: [] for name in ("rank", "seq", "kind", "start", "end", "peer", "tag")}
    noise_rows = {name: [] for name in sources}
    seq = [0] * n_ranks
    tag = [0]

    def draw():
        values = {name: (0.0 if rng.random() < 0.3 else float(rng.exponential(0.2)))
                  for name in sources}
        return values, sum(v for name, v in values.items() if name in present)

    def gap(rank):
        if rng.random() < 0.2:
            clock[rank] += float(rng.uniform(0.0, 0.1))

    def add(rank, kind, start, end, peer, t, noise):
        for name, value in (("rank", rank), ("seq", seq[rank]), ("kind", kind),
                            ("start", start), ("end", end), ("peer", peer), ("tag", t)):
            rows[name].append(value)
        for name in sources:
            noise_rows[name].append(noise[name] if name in present else 0.0)
        seq[rank] += 1
        clock[rank] = end

    for number in range(steps):
        step = "compute" if number == 0 else rng.choice(["compute", "messages", "collective"])
        if step == "compute":
            for rank in range(n_ranks):
                gap(rank)
                noise, total = draw()
                work = float(rng.uniform(0.5, 2.0))
                add(rank, "compute", clock[rank], clock[rank] + work + total, -1, 0, noise)
        elif step == "messages":
            order = rng.permutation(n_ranks)
            pairs = [(int(order[i]), int(order[i + 1])) for i in range(0, n_ranks - 1, 2)]
            messages = []
            for p, q in pairs:
                ways = [(p, q), (q, p)] if rng.random() < 0.5 else [(p, q)]
                for source, target in ways:
                    tag[0] += 1
                    messages.append((source, target, tag[0]))
            leaves = {}
            for source, target, t in messages:  # sends first, then receives
                gap(source)
                noise, total = draw()
                cost = float(rng.uniform(0.0, 0.05))
                begin = clock[source]
                leave = begin + cost + (0.0 if irregular else total)
                add(source, "send", begin, begin + cost + total, target, t, noise)
                leaves[t] = leave
            for source, target, t in messages:
                gap(target)
                noise, total = draw()
                cost = float(rng.uniform(0.0, 0.05))
                begin = clock[target]
                arrival = leaves[t] + latency
                if irregular:
                    end = max(begin + total, arrival) + cost
                else:
                    end = max(begin, arrival) + cost + total
                add(target, "recv", begin, end, source, t, noise)
        else:
            tag[0] += 1
            for rank in range(n_ranks):
                gap(rank)
            last = clock.max()
            for rank in range(n_ranks):
                noise, total = draw()
                cost = float(rng.uniform(0.0, 0.05))
                add(rank, "collective", clock[rank], last + cost + total, -1, tag[0], noise)
    frame = pd.DataFrame(rows)
    for name in sources:
        frame[f"noise_{name}"] = noise_rows[name]
    frame["noise_combined"] = sum(frame[f"noise_{name}"] for name in sources)
    return EventTrace(frame, latency=latency, source="jitterlab.testing.random_events",
                      seed=int(seed))


__all__ += ["random_events"]
