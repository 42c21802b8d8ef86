"""The schedule kernel's inputs: a schedule's columns laid out for the event loop.

:func:`schedule_arguments` is the one place that turns a :class:`Schedule` and its
:class:`LogGOPS` costs into the arguments of :func:`kernel.simulate_with_times`. Set-up
that depends on the schedule alone happens here (:func:`schedule_layout`), once per
schedule: the layout is kept with the schedule (whose arrays become read-only), so the
runs of a call and later calls on the same schedule (other costs, other noise) reuse it:

* on many ranks (:data:`STEP_MAJOR_FROM_RANKS`), the operations are renumbered
  *step-major*: the k-th operation of every rank, rank by rank, then the (k+1)-th, …
  A bulk-synchronous schedule handles the k-th operations of all ranks at about the
  same time, so the event loop then reads its arrays in order instead of one cache
  line per rank: on 65 536 ranks the loop took 0.97 instead of 1.39 s, set-up and loop
  1.53 instead of 1.70 s; on 512 ranks, whose rows stay in the cache, the copies cost
  more than they save (0.39 vs 0.29 s), on 4 096 they break even (0.044 vs 0.042 s;
  quiet.sh, same process). The renumbering changes no result (tests/test_schedules.py):
  the loop compares operations only by kind and by stamp, releases each operation's
  dependents in the order of their original indices, and starts each rank's ready
  operations in their original order (``placement``); per-operation times and δ noise
  stay indexed like the schedule (``origin``);
* the dependencies are reversed, and sends and receives get their channel (one id per
  receiver, sender and tag) when there is no wildcard.

The passes that do it are in :mod:`.layout`; :mod:`jitterlab.testing_layout` gives the
same inputs one by one, as the reference they are tested against.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from . import layout

__all__ = ["schedule_arguments", "prepare_arguments", "schedule_layout", "forget_layout",
           "KernelArguments", "ScheduleLayout", "KeptLayout", "LAYOUT_FIELDS", "COLUMNS",
           "ALL_EAGER", "STEP_MAJOR_FROM_RANKS"]

#: the eager limit [B] that makes every message eager (LogGOPS with S=None)
ALL_EAGER = 2**62
#: the number of ranks from which :func:`schedule_arguments` renumbers step-major
STEP_MAJOR_FROM_RANKS = 8192


#: the kernel's arguments that depend on the schedule alone (:class:`ScheduleLayout`)
LAYOUT_FIELDS = ("kind", "rank", "peer", "size", "tag", "calc", "cpu", "nic", "rank_offsets",
                 "placement", "origin", "succ_offsets", "succ", "isucc_offsets", "isucc",
                 "waits", "channel", "n_channels", "exact", "n_cpus", "n_nics")

KernelArguments = namedtuple("KernelArguments", LAYOUT_FIELDS + (
    "latency", "overhead", "gap", "gap_per_byte", "overhead_per_byte", "eager_limit"))
KernelArguments.__doc__ = """The arguments of :func:`kernel.simulate_with_times` from ``kind`` to
``eager_limit`` (pass them with ``*``); arrays by step-major index, times in ticks;
``placement``, ``origin``, ``succ``, ``isucc``, ``waits`` and ``channel`` int32 (fewer
than 2**31 operations); ``tag`` empty when ``exact`` (the channels replace it)."""


def schedule_arguments(schedule, params, resolution: float = 1e-12,
                       step_major: bool | None = None) -> KernelArguments:
    """The arguments of :func:`kernel.simulate_with_times` from ``kind`` to
    ``eager_limit``: :func:`prepare_arguments`'s first result, which see."""
    return prepare_arguments(schedule, params, resolution, step_major)[0]


def prepare_arguments(schedule, params, resolution: float = 1e-12,
                      step_major: bool | None = None):
    """The arguments of :func:`kernel.simulate_with_times` from ``kind`` to
    ``eager_limit``, the operations renumbered step-major (see the module's docstring),
    and the longest calc [ticks].

    The arrays come from :func:`schedule_layout` (kept with the schedule: a second call
    on the same schedule and resolution does not lay them out again); only the costs
    come from ``params``.

    Parameters
    ----------
    schedule : Schedule
        The schedule (its columns and CSR dependencies).
    params : LogGOPS
        Its costs [s]; ``S=None`` makes every message eager.
    resolution : float
        The tick: costs and calc durations are rounded to it. [s]
    step_major : bool or None
        Renumber the operations step-major (True) or keep the schedule's numbering
        (False, no copies of the columns); None: step-major from
        :data:`STEP_MAJOR_FROM_RANKS` ranks on. The results are the same.

    Returns
    -------
    (KernelArguments, int)

    Examples
    --------
    >>> import jitterlab as jl
    >>> from jitterlab.schedules import SEND, RECV, kernel
    >>> ping = jl.Schedule(2, kind=[SEND, RECV], rank=[0, 1], peer=[1, 0], size=[8, 8])
    >>> args, _ = prepare_arguments(ping, jl.LogGOPS.from_loggopsim())
    >>> times, end = kernel.new_operation_times(2), np.zeros(2, dtype=np.int64)
    >>> none = np.zeros(2, dtype=np.int64)
    >>> _ = kernel.simulate_with_times(*args, kernel.NO_NOISE, none, none, none, none[:0],
    ...                                times, end)
    >>> (times[kernel.CPU_END] // 1000).tolist()  # o; o + L + o + 7 G [ns]
    [1500, 5542]
    """
    laid = schedule_layout(schedule, resolution, step_major)
    ticks = [int(np.rint(getattr(params, name) / resolution))
             for name in ("L", "o", "g", "G", "O")]
    eager_limit = ALL_EAGER if params.S is None else int(params.S)
    return KernelArguments(*laid[:-1], *ticks, eager_limit), laid.longest_calc


ScheduleLayout = namedtuple("ScheduleLayout", LAYOUT_FIELDS + ("longest_calc",))
ScheduleLayout.__doc__ = """The part of :class:`KernelArguments` that depends on the
schedule alone (:data:`LAYOUT_FIELDS`), and the longest calc [ticks]."""


#: the schedule's arrays, in the order :func:`layout.lay_out` takes them
COLUMNS = ("kind", "rank", "peer", "size", "tag", "duration", "cpu", "nic",
           "requires_offsets", "requires", "irequires_offsets", "irequires")


class KeptLayout:
    """A schedule's layout kept for its next calls, in its :attr:`Schedule.kept_layout`.

    It holds the schedule's arrays it was made from (each made read-only), writable
    views of them (the array types numba compiled the passes for), the key
    ``(resolution, step_major)`` and the :class:`ScheduleLayout` (None after
    :func:`forget_layout`).
    """

    def __init__(self, schedule, previous=None):
        self.arrays = tuple(getattr(schedule, name) for name in COLUMNS)
        views = []
        for k, a in enumerate(self.arrays):
            if previous is not None and previous.arrays[k] is a:
                views.append(previous.views[k])  # a view taken before it became read-only
            else:
                views.append(a.view() if a.flags.writeable else a.copy())
        self.views = tuple(views)
        for a in self.arrays:
            a.flags.writeable = False
        self.key = None
        self.layout = None

    def holds(self, schedule) -> bool:
        """Whether the schedule still has these arrays, unchanged (still read-only)."""
        return all(getattr(schedule, name) is a and not a.flags.writeable
                   for name, a in zip(COLUMNS, self.arrays, strict=True))


def forget_layout(schedule) -> None:
    """Drop the layout kept with ``schedule`` (:func:`schedule_layout`): its memory is
    freed; the schedule's arrays stay read-only. The next call lays the arrays out
    again."""
    kept = schedule.kept_layout
    if kept is not None:
        kept.key = kept.layout = None


def schedule_layout(schedule, resolution: float = 1e-12,
                    step_major: bool | None = None) -> ScheduleLayout:
    """The kernel's arrays of ``schedule`` (see :func:`prepare_arguments`), laid out
    once and kept with the schedule (its :attr:`~Schedule.kept_layout`).

    The first call makes the schedule's arrays read-only (write to a copy, or build a
    new :class:`Schedule`) and keeps the layout (about 60 B per operation) as long as
    the schedule lives or until :func:`forget_layout`; later calls with the same
    ``resolution`` and ``step_major`` return it at once. A schedule whose arrays were
    replaced, or made writable again, is laid out anew.
    """
    resolution = float(resolution)
    if step_major is None:
        step_major = schedule.num_ranks >= STEP_MAJOR_FROM_RANKS
    key = (resolution, bool(step_major))
    kept = schedule.kept_layout
    if kept is None or not kept.holds(schedule):
        kept = schedule.kept_layout = KeptLayout(schedule, kept)
    if kept.key != key:
        kept.key, kept.layout = None, None  # the old layout's memory first
        kept.layout = _lay_out(schedule.num_ranks, dict(zip(COLUMNS, kept.views,
                                                            strict=True)),
                               resolution, bool(step_major))
        kept.key = key
    return kept.layout


def _lay_out(p, s, resolution, step_major) -> ScheduleLayout:
    """The layout of the columns ``s`` (a dict by :data:`COLUMNS`) on ``p`` ranks."""
    n = s["kind"].size
    if n >= 2**31:
        raise ValueError(f"the schedule has {n} operations; the simulation takes fewer "
                         f"than 2**31")
    offsets = layout.rank_offsets(s["rank"], p)
    shift = layout.TILE_SHIFT if step_major else 0  # without renumbering: in order
    exact, n_cpus, n_nics, filed_offsets, widest_tile = layout.scan(
        s["kind"], s["rank"], s["peer"], s["tag"], s["cpu"], s["nic"], p, shift)
    units = n_cpus > 1 or n_nics > 1  # else every cpu and nic is 0: not copied
    if step_major:
        kind, rank, peer, size = (np.empty_like(s[name]) for name in (
            "kind", "rank", "peer", "size"))
        cpu, nic = (np.empty_like(s["cpu"]), np.empty_like(s["nic"])) if units else (
            (np.zeros(n, dtype=np.uint8),) * 2)  # one array, its pages never written
        tag = np.empty(0 if exact else n, dtype=np.int64)
    else:
        kind, rank, peer, size, cpu, nic = (s[name] for name in (
            "kind", "rank", "peer", "size", "cpu", "nic"))
        tag = np.zeros(0, dtype=np.int64) if exact else s["tag"]
    placement, origin = np.empty(n, dtype=np.int32), np.empty(n, dtype=np.int32)
    calc = np.empty(n, dtype=np.int64)
    waits, channel = np.empty(n, dtype=np.int32), np.empty(n, dtype=np.int32)
    succ_offsets = np.empty(n + 1, dtype=np.int64)
    isucc_offsets = (np.empty if s["irequires"].size else np.zeros)(n + 1, dtype=np.int64)
    succ = np.empty(s["requires"].size, dtype=np.int32)
    isucc = np.empty(s["irequires"].size, dtype=np.int32)
    filed = int(filed_offsets[-1]) if exact else 0
    filed_index, filed_receiver = np.empty(filed, np.int32), np.empty(filed, np.int32)
    filed_key = np.empty(filed, np.int64)
    columns = [s[name] for name in COLUMNS]
    longest_calc = layout.lay_out(
        offsets, step_major, step_major, units, exact, *columns, resolution, shift,
        filed_offsets, placement, origin, kind, rank, peer, size, tag, cpu, nic, calc, waits,
        succ_offsets, succ, isucc_offsets, isucc, channel, filed_index, filed_receiver,
        filed_key)
    n_channels = layout.link(offsets, exact, s["kind"], s["peer"], s["tag"], shift,
                             filed_offsets, widest_tile, placement, channel, filed_index,
                             filed_receiver, filed_key)
    return ScheduleLayout(
        kind, rank, peer, size, tag, calc, cpu, nic, offsets, placement, origin,
        succ_offsets, succ, isucc_offsets, isucc, waits, channel,
        int(n_channels), bool(exact), int(n_cpus), int(n_nics), int(longest_calc))
