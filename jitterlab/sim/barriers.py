"""The tree barrier: a reduce up and a broadcast down a complete tree (jitSim §3.6).

:class:`TreeBarrier` describes the barrier (fanout, message costs) and runs it on the
replay engine (:mod:`jitterlab.sim.replay`); :func:`tree_depth` and :func:`tree_levels`
give the shape of its breadth-first complete tree, which Theorem 1
(:func:`jitterlab.theorem1_bounds`) needs too.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass

import numpy as np

from ..base.checks import as_process_counts, check_integer
from ..base.threads import kernel_threads
from . import replay_kernels
from .message import Message
from .replay import one_thread_or
from .replay_kernels import PARALLEL_MIN_TASKS
from .tree_kernels import WORKSPACE_PER_TASK

__all__ = ["TreeBarrier", "tree_depth", "tree_levels", "check_fanout", "tree_workspace"]


def check_fanout(fanout) -> int:
    if isinstance(fanout, bool) or int(fanout) != fanout or fanout < 2:
        raise ValueError(f"fanout must be an integer >= 2, got {fanout!r}")
    return int(fanout)


def tree_depth(n, fanout: int = 2):
    """Depth D of a complete ``fanout``-ary tree of ``n`` nodes numbered breadth-first.

    The root has depth 0; D is the depth of the last node. For a binary tree with
    N = 2^k − 1 nodes, D = k − 1 = log2((N + 1)/2) exactly; for other N the last
    level is partly filled and D = ceil(log_k(N(k − 1) + 1)) − 1.

    Parameters
    ----------
    n : int or array_like of int
        Number of processes N (tree nodes). [-]
    fanout : int
        Children per node k. [-]

    Examples
    --------
    >>> tree_depth([1, 3, 7, 8, 31, 10**9])
    array([ 0,  1,  2,  3,  4, 29])
    """
    fanout = check_fanout(fanout)
    values = as_process_counts(n, 1)
    depths = np.empty(values.size, dtype=np.int64)
    for i, count in enumerate(values.tolist()):
        depth, level_size, filled = 0, 1, 1  # integers: exact for any N
        while filled < count:
            level_size *= fanout
            filled += level_size
            depth += 1
        depths[i] = depth
    return depths if np.ndim(n) else depths[0]


@dataclass(frozen=True)
class TreeBarrier:
    """A barrier as a reduce up and a broadcast down a complete tree.

    Parameters
    ----------
    fanout : int
        Children per task; tasks are numbered breadth-first. [-]
    send, recv : float
        CPU time of one send and of one receive, consumed on the task's trace. [s]
    latency : float
        Wire latency of one message between nodes, not subject to jitter (the one-hop
        time τ of Theorem 1 is ``send + latency + recv``, see :attr:`tau`). [s]
    cores_per_node : int, optional
        Tasks per node: tasks i and j share a node when i // cores_per_node ==
        j // cores_per_node.
    intra_node_latency : float, optional
        Wire latency of a message inside a node; default ``latency``. [s]
    message : jitterlab.Message, optional
        The message cost model (the same one :mod:`jitterlab.apps` uses), instead of
        ``send``, ``recv``, ``latency`` and ``intra_node_latency``; its wire time
        (latency, per-byte cost, rendezvous handshake) is the hop's latency.
    """

    fanout: int = 2
    send: float = 0.0
    recv: float = 0.0
    latency: float = 0.0
    cores_per_node: int | None = None
    intra_node_latency: float | None = None
    message: Message | None = None

    def __post_init__(self):
        fanout = check_integer("fanout", self.fanout, 2)
        if fanout > 63:
            raise ValueError(f"fanout must be at most 63, got {fanout}")
        object.__setattr__(self, "fanout", fanout)
        if self.message is None:
            object.__setattr__(self, "message", Message(
                send=self.send, recv=self.recv, latency=self.latency,
                intra_node_latency=self.intra_node_latency))
        elif not isinstance(self.message, Message):
            raise TypeError(f"message must be a jl.Message, got {type(self.message).__name__}")
        elif (self.send, self.recv, self.latency, self.intra_node_latency) != (0, 0, 0, None):
            raise TypeError("give the message costs once: message=jl.Message(...) or "
                            "send/recv/latency/intra_node_latency, not both")
        message = self.message
        # the fields read by the simulation: CPU costs and the hop's whole wire time
        object.__setattr__(self, "send", message.send)
        object.__setattr__(self, "recv", message.recv)
        object.__setattr__(self, "latency", message.wire_time())
        if message.intra_node_latency is not None:
            object.__setattr__(self, "intra_node_latency",
                               message.wire_time(intra_node=True))
        if self.cores_per_node is not None:
            object.__setattr__(self, "cores_per_node",
                               check_integer("cores_per_node", self.cores_per_node, 1))

    @property
    def tau(self) -> float:
        """Effective one-hop time τ of this barrier without jitter. [s]

        τ = latency + (fanout + 1)/2 · (send + recv): a level of the reduce costs a
        send, the wire latency and ``fanout`` receives, a level of the broadcast a
        receive, the latency and ``fanout`` sends, so a barrier entered by every task at
        once on a full tree of depth D takes exactly 2τ·D. This is the τ to give
        :func:`jitterlab.theorem1_bounds` for this barrier (inter-node latency).
        """
        return self.latency + 0.5 * (self.fanout + 1) * (self.send + self.recv)

    def noiseless_time(self, n: int) -> float:
        """Time of the barrier entered by all n tasks at once, without noise: 2τ·D, with D
        the depth of the complete tree (:func:`jitterlab.tree_depth`). [s]"""
        return 2.0 * self.tau * int(tree_depth(n, self.fanout))

    def describe(self) -> str:
        fields = {k: v for k, v in asdict(self).items() if k != "message" and v is not None}
        inner = ", ".join(f"{k}={v}" for k, v in fields.items())
        return f"TreeBarrier({inner})"

    def noiseless_phases(self, n: int, work: float, phases: int):
        """Phase times [s] of n tasks computing ``work`` and meeting no noise, and the
        largest change of a task's phase time from the phase before to the last [s]
        (0 with fewer than three phases)."""
        intra = self.latency if self.intra_node_latency is None else self.intra_node_latency
        with kernel_threads(n, PARALLEL_MIN_TASKS):
            kernel = one_thread_or(replay_kernels.noiseless_tree,
                                    replay_kernels.noiseless_tree_one_thread)
            phase_end, change = kernel(
                n, float(work), phases, int(self.fanout), float(self.send), float(self.recv),
                float(self.latency), float(intra), int(self.cores_per_node or 0),
                tree_levels(n, int(self.fanout)), np.zeros((0, 0)))
        return np.diff(phase_end, prepend=0.0), change

    def run(self, table, offsets, work, phases, detail, ops=False):
        """Phase times, compute times, end times and operation ends of one run [s].

        With ``ops`` the last is ``[phase, task, op]`` in the layout of
        :func:`jitterlab.replay_kernels.run_tree_barrier`, NaN where a task has no such
        operation.
        """
        n_tasks = offsets.size
        shape = (phases, n_tasks) if detail else (0, 0)
        compute, end_times = np.zeros(shape), np.zeros(shape)
        fanout = int(self.fanout)
        op_ends = np.full((phases, n_tasks, 2 * fanout + 3) if ops else (0, 0, 0), np.nan)
        intra = self.latency if self.intra_node_latency is None else self.intra_node_latency
        with kernel_threads(n_tasks, PARALLEL_MIN_TASKS):
            kernel = one_thread_or(replay_kernels.run_tree_barrier,
                                    replay_kernels.run_tree_barrier_one_thread)
            phase_end = kernel(
                table, offsets, work, phases, fanout, float(self.send), float(self.recv),
                float(self.latency), float(intra), int(self.cores_per_node or 0),
                tree_levels(n_tasks, fanout), compute, end_times, op_ends,
                tree_workspace(n_tasks))
        theta = np.diff(phase_end, prepend=0.0)
        return (theta, (compute if detail else None), (end_times if detail else None),
                (op_ends if ops else None))


#: most float64 values of tree-kernel state kept per thread between calls (64 MB: runs of up
#: to about 1.6 million tasks reuse it)
_KEPT_WORKSPACE = 2**23
_workspaces = threading.local()


def tree_workspace(n_tasks: int) -> np.ndarray:
    """Memory for the tree kernel's state of ``n_tasks`` tasks, kept per thread for the next
    call: a call of 65 535 tasks otherwise asks the system for 2.6 MB of fresh memory, about
    640 page faults (issue #20). Runs too large to keep get memory of their own."""
    needed = WORKSPACE_PER_TASK * n_tasks
    kept = getattr(_workspaces, "buffer", None)
    if kept is not None and kept.size >= needed:
        return kept
    if needed > _KEPT_WORKSPACE:
        return np.empty(0)
    _workspaces.buffer = np.empty(min(max(needed, 2 * (0 if kept is None else kept.size)),
                                      _KEPT_WORKSPACE))
    return _workspaces.buffer


def tree_levels(n: int, fanout: int) -> np.ndarray:
    """First task index of every level of a breadth-first complete tree, plus n."""
    bounds, first, size = [0], 0, 1
    while first + size < n:
        first += size
        size *= fanout
        bounds.append(first)
    bounds.append(n)
    return np.array(bounds, dtype=np.int64)
