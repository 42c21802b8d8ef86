"""The event trace of a simulated run: ``jl.simulate(..., detail="events")``.

Without a barrier model every task has, per phase, a "compute" interval and a
"collective" interval to the end of the phase (every task waits for the slowest). With a
barrier model the barrier is written as what it is, the point-to-point messages of the
tree or of the rounds: each send and receive an interval of its own, with the jitter it
met as its noise. Every interval of a task starts when the previous one ends, and the
local noise of each is exact:

* compute: end − start − work; send: end − start − send cost;
* recv: end − max(start, arrival) − receive cost, the arrival being the matching send's
  end plus the wire time (jitter met while waiting for the message is not noise: it
  cost nothing).

A tree barrier's reduce receives its children's messages in order of arrival: the
trace lists them in the order the task took them and marks them ``any_order``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..traces.events import COLLECTIVE, COMPUTE, KINDS, RECV, SEND, EventTrace

__all__ = ["barrier_free_events", "tree_events", "round_events", "wavefront_events"]


def barrier_free_events(compute, end_times, work, /, **attrs) -> EventTrace:
    """Per task and phase a compute interval, then a collective interval (tag = phase).

    ``compute`` and ``end_times`` are ``[phase, task]`` [s]; ``noise_combined`` of a
    compute interval is compute − work (rounding below 0 cut).
    """
    phases, n = compute.shape
    begin = np.vstack([np.zeros((1, n)), end_times[:-1]])
    compute_end = np.minimum(begin + compute, end_times)
    noise = np.clip(compute - work, 0.0, compute_end - begin)

    def interleave(first, second):  # (phase, task) pairs -> rank-major rows
        return np.stack([first.T, second.T], axis=-1).ravel()

    codes = np.tile(np.array([COMPUTE, COLLECTIVE], dtype=np.int8), n * phases)
    rows = pd.DataFrame({
        "rank": np.repeat(np.arange(n, dtype=np.int64), 2 * phases),
        "seq": np.tile(np.arange(2 * phases, dtype=np.int64), n),
        "kind": pd.Categorical.from_codes(codes, categories=KINDS),
        "start": interleave(begin, compute_end),
        "end": interleave(compute_end, end_times),
        "peer": np.full(2 * n * phases, -1, dtype=np.int64),
        "tag": np.tile(np.repeat(np.arange(phases, dtype=np.int64), 2), n),
        "noise_combined": interleave(noise, np.zeros_like(noise)),
    })
    return EventTrace(rows, **attrs)


def tree_events(op_ends, work, fanout, send, recv, latency, /, **attrs) -> EventTrace:
    """The event trace of a run closed by a tree barrier.

    ``op_ends[phase, task, op]`` in the layout of
    :func:`jitterlab.sim.replay_kernels.run_tree_barrier` (NaN where a task has no such
    operation). Reduce messages have tag 2·phase, broadcast messages 2·phase + 1.
    """
    phases, n, _ = op_ends.shape
    task = np.arange(n)[:, None]
    q = np.arange(fanout)[None, :]
    child = fanout * task + 1 + q  # (n, fanout)
    parent = (np.arange(n) - 1) // fanout
    kind = np.concatenate([[COMPUTE], np.full(fanout, RECV), [SEND, RECV],
                           np.full(fanout, SEND)]).astype(np.int8)
    peer = np.concatenate([np.full((n, 1), -1), child, parent[:, None], parent[:, None],
                           child], axis=1)
    tag = np.concatenate([[0], np.zeros(fanout), [0, 1], np.ones(fanout)]).astype(np.int64)
    cost = np.concatenate([[work], np.full(fanout, recv), [send, recv],
                           np.full(fanout, send)])
    peer = np.broadcast_to(peer, op_ends.shape).copy()
    # the children's messages in the order the task took them (their receive ends)
    received = op_ends[:, :, 1:1 + fanout]
    order = np.argsort(np.where(np.isnan(received), np.inf, received), axis=2, kind="stable")
    op_ends = op_ends.copy()
    op_ends[:, :, 1:1 + fanout] = np.take_along_axis(received, order, axis=2)
    peer[:, :, 1:1 + fanout] = np.take_along_axis(peer[:, :, 1:1 + fanout], order, axis=2)
    any_order = np.zeros(kind.size, dtype=bool)
    any_order[1:1 + fanout] = True  # the reduce takes its children in order of arrival
    return _message_events(op_ends, kind, peer, _tags(op_ends.shape, tag, 2), cost, latency,
                           attrs, any_order)


def round_events(op_ends, work, partners, send, recv, latency, /, **attrs) -> EventTrace:
    """The event trace of a run closed by a round-based collective.

    ``op_ends[phase, task, op]`` as filled by :func:`jitterlab.sim.collective_kernels.run_rounds`;
    ``partners[k, task]`` = (send target, receive source) of round k (−1: none). The
    messages of round k of a phase have tag phase·rounds + k.
    """
    phases, n, width = op_ends.shape
    rounds = (width - 1) // 2
    kind = np.concatenate([[COMPUTE], np.tile([SEND, RECV], rounds)]).astype(np.int8)
    peer = np.full((n, width), -1, dtype=np.int64)
    peer[:, 1::2] = partners[:, :, 0].T
    peer[:, 2::2] = partners[:, :, 1].T
    tag = np.concatenate([[0], np.repeat(np.arange(rounds), 2)]).astype(np.int64)
    cost = np.concatenate([[work], np.tile([send, recv], rounds)])
    return _message_events(op_ends, kind, np.broadcast_to(peer, op_ends.shape),
                           _tags(op_ends.shape, tag, max(rounds, 1)), cost, latency, attrs)


def wavefront_events(op_ends, iteration_end, corners, px, blocks, costs, latency, allreduce,
                     /, **attrs) -> EventTrace:
    """The event trace of a wavefront run (:func:`jitterlab.apps.wavefront_simulate`).

    ``op_ends[pass, rank, step]`` as filled by :func:`jitterlab.apps.wavefront_kernels.run_passes`
    (receive x, receive y, compute, send x, send y; NaN where a rank has no such step),
    ``iteration_end[it]`` the end of each iteration, ``costs`` = (work, send, recv) [s].
    Messages in x of pass g have tag 2g, in y 2g + 1. With ``allreduce`` every rank ends
    each iteration with a collective interval (tag = iteration) to ``iteration_end``.
    """
    passes, n, _ = op_ends.shape
    work, send, recv = costs
    sweep = (np.arange(passes) // blocks) % len(corners)
    dx = corners[sweep, 0][:, None]
    dy = corners[sweep, 1][:, None] * px
    rank = np.arange(n)[None, :]
    peer = np.stack(np.broadcast_arrays(rank - dx, rank - dy, np.full((1, n), -1), rank + dx,
                                        rank + dy), axis=-1)
    kind = np.array([RECV, RECV, COMPUTE, SEND, SEND], dtype=np.int8)
    tags = (2 * np.arange(passes)[:, None, None] + np.array([0, 1, 0, 0, 1])
            + np.zeros((1, n, 1), dtype=np.int64))
    tags[:, :, 2] = np.arange(passes)[:, None]
    cost = np.array([recv, recv, work, send, send])
    if allreduce:
        per_iteration = passes // iteration_end.size
        closing = np.full((passes, n, 1), np.nan)
        closing[per_iteration - 1::per_iteration, :, 0] = iteration_end[:, None]
        op_ends = np.concatenate([op_ends, closing], axis=2)
        kind = np.append(kind, COLLECTIVE).astype(np.int8)
        peer = np.concatenate([peer, np.full((passes, n, 1), -1)], axis=2)
        iteration = np.arange(passes) // per_iteration
        tags = np.concatenate([tags, np.broadcast_to(iteration[:, None, None],
                                                     (passes, n, 1))], axis=2)
        cost = np.append(cost, 0.0)
    return _message_events(op_ends, kind, peer, tags, cost, latency, attrs)


def _tags(shape, tag, tags_per_phase):
    """Tags ``[phase, task, op]``: phase·tags_per_phase + tag[op]; op 0, the compute,
    has the phase."""
    phase = np.arange(shape[0])[:, None, None]
    tags = np.broadcast_to(phase * tags_per_phase + tag, shape).copy()
    tags[:, :, 0] = phase[:, :, 0]
    return tags


def _message_events(op_ends, kind, peer, tags, cost, latency, attrs, any_order=None):
    """Rows of the event trace from operation ends ``[phase, task, op]`` (NaN: none).

    ``kind`` and ``cost`` are per op; ``peer`` and ``tags`` are ``[phase, task, op]``
    (a compute's tag is its phase). Each task's operations run back to back from time
    0; a collective carries no noise.
    """
    phases, n, width = op_ends.shape
    by_rank = np.ascontiguousarray(op_ends.transpose(1, 0, 2)).reshape(-1)
    present = ~np.isnan(by_rank)
    end = by_rank[present]
    rank = np.repeat(np.arange(n, dtype=np.int64), phases * width)[present]
    slot = np.tile(np.arange(width), n * phases)[present]
    peers = np.ascontiguousarray(peer.transpose(1, 0, 2)).reshape(-1)[present].astype(np.int64)
    tags = np.ascontiguousarray(tags.transpose(1, 0, 2)).reshape(-1)[present].astype(np.int64)
    codes = kind[slot]
    first = np.ones(end.size, dtype=bool)
    first[1:] = rank[1:] != rank[:-1]
    seq = np.arange(end.size) - np.flatnonzero(first).repeat(np.diff(np.append(
        np.flatnonzero(first), end.size)))
    is_send, is_recv = codes == SEND, codes == RECV
    sender = np.zeros(0, dtype=np.int64)
    if is_recv.any():
        span = int(tags.max()) + 1
        send_key = (rank[is_send] * n + peers[is_send]) * span + tags[is_send]
        recv_key = (peers[is_recv] * n + rank[is_recv]) * span + tags[is_recv]
        order = np.argsort(send_key)
        sender = np.flatnonzero(is_send)[order[np.searchsorted(send_key, recv_key,
                                                               sorter=order)]]
    # The kernels keep times relative to each task's start in the trace, so an end can
    # be off by the rounding of the trace time (~1e-16 s): a free receive may end an ulp
    # before its free send. Lift such receives to the arrival, keep each rank's ends
    # non-decreasing, until nothing moves. A pass settles at least one more link of the
    # longest chain of messages, so there are at most as many passes as rows.
    for _ in range(end.size + 1):
        lifted = end.copy()
        if sender.size:
            lifted[is_recv] = np.maximum(end[is_recv], end[sender] + latency)
        lifted = pd.Series(lifted).groupby(rank).cummax().to_numpy()
        if np.array_equal(lifted, end):
            break
        end = lifted
    else:
        raise RuntimeError("event trace: lifting receives to their arrivals did not settle")
    start = np.empty_like(end)
    start[0] = 0.0
    start[1:] = end[:-1]
    start[first] = 0.0
    begin = start.copy()
    if sender.size:
        begin[is_recv] = np.maximum(start[is_recv], end[sender] + latency)
    noise = np.clip(end - begin - cost[slot], 0.0, end - start)
    noise[codes == COLLECTIVE] = 0.0
    rows = pd.DataFrame({
        "rank": rank, "seq": seq.astype(np.int64),
        "kind": pd.Categorical.from_codes(codes, categories=KINDS),
        "start": start, "end": end, "peer": peers, "tag": tags,
        "noise_combined": noise})
    if any_order is not None:
        rows["any_order"] = any_order[slot]
    return EventTrace(rows, latency=latency, **attrs)
