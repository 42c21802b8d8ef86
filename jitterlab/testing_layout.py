"""The schedule kernel's inputs laid out one by one, in plain NumPy: the reference that
the tiled passes of :mod:`jitterlab.sim.schedules.layout` are tested against
(tests/test_schedule_layout.py).

Each input comes from its own short, whole-array computation (a sort, a ``bincount``,
``np.unique``), none of which the passes use, so a mistake in the passes cannot hide
in the reference too. The other plain references are in :mod:`jitterlab.testing`.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .traces.schedule import CALC, SEND

__all__ = ["step_major_order", "successors", "channels", "layout_reference",
           "LayoutReference"]

LayoutReference = namedtuple("LayoutReference", (
    "rank_offsets", "placement", "origin", "columns", "calc", "waits", "succ", "isucc",
    "channel", "n_channels"))
LayoutReference.__doc__ = """The kernel's inputs of :func:`layout_reference`: ``columns``
a dict of kind, rank, peer, size, tag, cpu and nic by new index; ``succ`` and ``isucc``
pairs (offsets, dependents) as :func:`successors` gives them."""


def step_major_order(rank_offsets):
    """The step-major numbering of a schedule's operations.

    Returns ``(placement, origin)`` (int32): ``placement[i]`` is the new index of
    operation ``i``, ``origin[j]`` the operation at new index ``j``; new indices hold
    the first operation of every rank (rank by rank), then the second of every rank
    that has one, and so on.
    """
    rank_offsets = np.asarray(rank_offsets, dtype=np.int64)
    lengths = np.diff(rank_offsets)
    rank = np.repeat(np.arange(lengths.size), lengths)
    step = np.arange(rank_offsets[-1]) - rank_offsets[rank]  # position inside the rank
    origin = np.lexsort((rank, step)).astype(np.int32)  # by step, then by rank
    placement = np.empty_like(origin)
    placement[origin] = np.arange(origin.size, dtype=np.int32)
    return placement, origin


def successors(n, offsets, targets, placement):
    """Reverse a CSR of "i waits for targets", in the numbering ``placement``.

    Returns ``(counts, dependents)``: the operations that wait for new index b are
    ``dependents[counts[b]:counts[b + 1]]`` (new indices, in increasing *original*
    index order).
    """
    dependent = np.repeat(np.arange(n), np.diff(offsets))  # increasing original index
    waited = placement[np.asarray(targets, dtype=np.int64)]
    counts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(waited, minlength=n), out=counts[1:])
    order = np.argsort(waited, kind="stable")
    return counts, placement[dependent[order]].astype(np.int32)


def channels(kind, rank, peer, tag):
    """Channel of every send and receive: one id per (receiver, sender, tag) [−1 for a
    calc], and the number of channels. Ids follow the receivers."""
    comm = kind != CALC
    send = kind == SEND
    receiver = np.where(send, peer, rank)[comm]
    sender = np.where(send, rank, peer)[comm]
    keys = np.stack([receiver, sender, tag[comm]]).astype(np.int64)
    found, ids = np.unique(keys, axis=1, return_inverse=True)
    out = np.full(kind.size, -1, dtype=np.int32)
    out[comm] = ids.reshape(-1)
    return out, found.shape[1]


def layout_reference(schedule, step_major: bool, resolution: float = 1e-12):
    """The kernel's inputs of ``schedule`` (what
    :func:`jitterlab.sim.schedules.arguments.prepare_arguments` lays out), one by one.

    Parameters
    ----------
    schedule : Schedule
        The schedule.
    step_major : bool
        Renumber step-major (:func:`step_major_order`) or keep the schedule's order.
    resolution : float
        The tick calc durations are rounded to. [s]

    Returns
    -------
    LayoutReference
    """
    s = schedule
    n = s.n_operations
    offsets = s.rank_offsets
    if step_major:
        placement, origin = step_major_order(offsets)
    else:
        placement = origin = np.arange(n, dtype=np.int32)
    columns = {}
    for name in ("kind", "rank", "peer", "size", "tag", "cpu", "nic"):
        column = np.empty_like(getattr(s, name))
        column[placement] = getattr(s, name)
        columns[name] = column
    calc = np.empty(n, dtype=np.int64)
    calc[placement] = np.rint(s.duration / resolution).astype(np.int64)
    waits = np.empty(n, dtype=np.int64)
    waits[placement] = np.diff(s.requires_offsets) + np.diff(s.irequires_offsets)
    succ = successors(n, s.requires_offsets, s.requires, placement)
    isucc = successors(n, s.irequires_offsets, s.irequires, placement)
    channel, n_channels = channels(columns["kind"], columns["rank"], columns["peer"],
                                   columns["tag"])
    return LayoutReference(offsets, placement, origin, columns, calc, waits, succ, isucc,
                           channel, n_channels)
