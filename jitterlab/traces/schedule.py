"""A communication schedule in columns: one numpy array per field, one row per operation.

The arrays of a :class:`Schedule` with ``n`` operations (row ``i`` is operation ``i``;
the operations of one rank are contiguous and ranks come in order, so ``rank`` never
decreases; ``i`` is the operation's global index, its position inside its rank is
``i - rank_offsets[rank[i]]``, the order of the GOAL text):

``kind``      int8     :data:`SEND` (1), :data:`RECV` (2) or :data:`CALC` (3)
``rank``      int32    the rank that runs the operation
``peer``      int32    send: destination; recv: source, or :data:`ANY_SOURCE` (−1);
                       calc: −1
``size``      int64    message size [B] (send, recv); 0 for calc
``tag``       int64    message tag, or :data:`ANY_TAG` (−1); 0 for calc
``duration``  float64  calc: compute time [s]; 0 for send and recv
``cpu``       uint8    the CPU of the rank that runs the operation (GOAL ``cpu``)
``nic``       uint8    the network interface it uses (GOAL ``nic``)
``requires_offsets``, ``requires``    int64, CSR: the operations operation ``i`` waits
                       to be *finished*, ``requires[requires_offsets[i]:requires_offsets[i+1]]``
                       (global indices, same rank; GOAL ``a requires b``)
``irequires_offsets``, ``irequires``  int64, CSR: the operations ``i`` waits to be
                       *started* (GOAL ``a irequires b``)

About 31 bytes per operation plus 8 per dependency, so 10⁷ operations fit in memory.
Dependencies that an operation's list holds are released, when the operation they wait
for finishes (or starts), in the order of the dependent operations' indices, which is
the order of the dependency lines in a GOAL file that lists them operation by operation
(as Schedgen and Schedgen2 write them).
"""

from __future__ import annotations

import numpy as np

from ..base.files import atomic_write

__all__ = ["Schedule", "SEND", "RECV", "CALC", "ANY_SOURCE", "ANY_TAG",
           "dependencies_from_pairs"]

SEND, RECV, CALC = 1, 2, 3
ANY_SOURCE = -1
ANY_TAG = -1
KIND_NAMES = {SEND: "send", RECV: "recv", CALC: "calc"}


def dependencies_from_pairs(n_operations: int, dependent, prerequisite):
    """CSR arrays ``(offsets, targets)`` from pairs "``dependent[k]`` requires
    ``prerequisite[k]``" (global operation indices); each operation's list keeps the
    order of the pairs."""
    dependent = np.asarray(dependent, dtype=np.int64).ravel()
    prerequisite = np.asarray(prerequisite, dtype=np.int64).ravel()
    if dependent.shape != prerequisite.shape:
        raise ValueError(f"dependent and prerequisite differ in length "
                         f"({dependent.size} and {prerequisite.size})")
    if dependent.size and (dependent.min() < 0 or dependent.max() >= n_operations):
        raise ValueError(f"a dependent operation index is outside 0 … {n_operations - 1}")
    order = np.argsort(dependent, kind="stable")
    counts = np.bincount(dependent, minlength=n_operations)
    offsets = np.zeros(n_operations + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return offsets, prerequisite[order]


def _column(name, values, n, dtype, default):
    if values is None:
        return np.full(n, default, dtype=dtype)
    array = np.asarray(values)
    if array.ndim == 0:
        array = np.full(n, array)
    if array.shape != (n,):
        raise ValueError(f"{name} has shape {array.shape}; expected ({n},), one value "
                         f"per operation")
    if dtype is not np.float64 and array.size and not np.issubdtype(array.dtype, np.integer):
        if not np.all(np.isfinite(array)) or np.any(array != np.round(array)):
            raise ValueError(f"{name} must hold whole numbers")
    converted = array.astype(dtype)
    if array.size and np.issubdtype(array.dtype, np.number) and \
            np.any(converted.astype(np.float64) != array.astype(np.float64)):
        raise ValueError(f"{name} holds values outside the range of {np.dtype(dtype).name}")
    return np.ascontiguousarray(converted)


def _csr(name, value, n):
    if value is None:
        return np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if not isinstance(value, tuple) or len(value) != 2:
        raise TypeError(f"{name} must be a pair (offsets, indices) of CSR arrays; "
                        f"see dependencies_from_pairs")
    offsets = np.ascontiguousarray(value[0], dtype=np.int64)
    indices = np.ascontiguousarray(value[1], dtype=np.int64)
    if offsets.shape != (n + 1,):
        raise ValueError(f"{name} offsets have shape {offsets.shape}; expected ({n + 1},)")
    if offsets[0] != 0 or offsets[-1] != indices.size or np.any(np.diff(offsets) < 0):
        raise ValueError(f"{name} offsets must start at 0, never decrease and end at the "
                         f"number of indices ({indices.size})")
    return offsets, indices


class Schedule:
    """A GOAL communication schedule, one numpy array per field (see the module
    docstring for the arrays and their units).

    Parameters
    ----------
    num_ranks : int
        Number of ranks (a rank may have no operation).
    kind, rank, peer, size, tag, duration, cpu, nic : array_like
        One value per operation (``tag``, ``duration``, ``cpu``, ``nic`` default to 0;
        ``peer`` to −1, ``size`` to 0). ``duration`` [s], ``size`` [B].
    requires, irequires : tuple of arrays, optional
        CSR pairs ``(offsets, indices)`` of the operations each operation waits to be
        finished (``requires``) or started (``irequires``); build them from pairs with
        :func:`dependencies_from_pairs`.

    Attributes
    ----------
    kept_layout : object or None
        The simulator's layout of the schedule, kept for its next calls (see Notes;
        a :class:`~jitterlab.sim.schedules.arguments.KeptLayout` that
        :func:`~jitterlab.sim.schedules.arguments.schedule_layout` sets), None before
        the first call. A cache: not part of equality, ``repr``, pickling or copies, and
        freed with the schedule.

    Notes
    -----
    :func:`jitterlab.simulate_schedule` lays the schedule out for its kernel once and
    keeps that layout with the schedule (:attr:`kept_layout`) for later calls with the
    same resolution; from then on the schedule's arrays are read-only. A schedule whose
    arrays were replaced, or made writable again, is laid out anew.
    :func:`jitterlab.sim.schedules.arguments.forget_layout` frees the layout. To change
    a schedule, build a new one from (copies of) its arrays.

    Examples
    --------
    >>> import jitterlab as jl
    >>> from jitterlab.sim.schedules import SEND, RECV
    >>> s = jl.Schedule(2, kind=[SEND, RECV], rank=[0, 1], peer=[1, 0], size=[8, 8])
    >>> s.n_operations, s.counts()
    (2, {'send': 1, 'recv': 1, 'calc': 0})
    """

    kept_layout = None

    def __init__(self, num_ranks, kind, rank, peer=None, size=None, tag=None,
                 duration=None, cpu=None, nic=None, requires=None, irequires=None):
        if isinstance(num_ranks, bool) or not isinstance(num_ranks, int | np.integer) \
                or num_ranks < 1:
            raise ValueError(f"num_ranks must be a positive integer, got {num_ranks!r}")
        self.num_ranks = int(num_ranks)
        kind = np.asarray(kind)
        if kind.ndim != 1:
            raise ValueError(f"kind must be one-dimensional, got shape {kind.shape}")
        n = kind.size
        self.kind = _column("kind", kind, n, np.int8, 0)
        self.rank = _column("rank", rank, n, np.int32, 0)
        self.peer = _column("peer", peer, n, np.int32, -1)
        self.size = _column("size", size, n, np.int64, 0)
        self.tag = _column("tag", tag, n, np.int64, 0)
        self.duration = _column("duration", duration, n, np.float64, 0.0)
        self.cpu = _column("cpu", cpu, n, np.uint8, 0)
        self.nic = _column("nic", nic, n, np.uint8, 0)
        self.requires_offsets, self.requires = _csr("requires", requires, n)
        self.irequires_offsets, self.irequires = _csr("irequires", irequires, n)
        self._check()

    # ------------------------------------------------------------------ checks
    def _check(self):
        n, p = self.n_operations, self.num_ranks
        bad = ~np.isin(self.kind, (SEND, RECV, CALC))
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"operation {i}: kind {self.kind[i]} is not SEND (1), RECV (2) "
                             f"or CALC (3)")
        if n and (self.rank.min() < 0 or self.rank.max() >= p):
            i = int(np.argmax((self.rank < 0) | (self.rank >= p)))
            raise ValueError(f"operation {i}: rank {self.rank[i]} is outside 0 … {p - 1}")
        if n > 1 and np.any(np.diff(self.rank) < 0):
            i = int(np.argmax(np.diff(self.rank) < 0)) + 1
            raise ValueError(f"operation {i}: ranks must not decrease (the operations of a "
                             f"rank are contiguous, ranks in order); rank {self.rank[i]} "
                             f"follows rank {self.rank[i - 1]}")
        send, recv, calc = self.kind == SEND, self.kind == RECV, self.kind == CALC
        self._first_bad(send & ((self.peer < 0) | (self.peer >= p)),
                        "sends to rank {peer}, outside 0 … " + str(p - 1))
        self._first_bad(recv & ((self.peer < -1) | (self.peer >= p)),
                        "receives from rank {peer}, neither -1 (any) nor in 0 … " + str(p - 1))
        self._first_bad(~calc & (self.size < 0), "has a negative size {size}")
        self._first_bad(~calc & (self.tag < -1), "has tag {tag}; tags are >= 0 or -1 (any)")
        self._first_bad(~calc & (self.tag >= 2**32 - 1),
                        "has tag {tag}; GOAL tags are below 2**32 - 1")
        durations_ok = np.isfinite(self.duration) & (self.duration >= 0)
        self._first_bad(~durations_ok, "has duration {duration}; durations are finite and >= 0")
        for name in ("requires", "irequires"):
            offsets, targets = getattr(self, f"{name}_offsets"), getattr(self, name)
            if targets.size == 0:
                continue
            if targets.min() < 0 or targets.max() >= n:
                k = int(np.argmax((targets < 0) | (targets >= n)))
                raise ValueError(f"{name}[{k}] = {targets[k]} is not an operation index "
                                 f"(0 … {n - 1})")
            owner = np.repeat(np.arange(n), np.diff(offsets))
            self._first_edge_bad(name, owner, targets, self.rank[owner] != self.rank[targets],
                                 "on another rank")
            self._first_edge_bad(name, owner, targets, owner == targets, "itself")

    def _first_bad(self, mask, message):
        if mask.any():
            i = int(np.argmax(mask))
            fields = {f: getattr(self, f)[i] for f in ("peer", "size", "tag", "duration")}
            raise ValueError(f"operation {i} (rank {self.rank[i]}, "
                             f"{KIND_NAMES.get(int(self.kind[i]), '?')}) "
                             + message.format(**fields))

    def _first_edge_bad(self, name, owner, targets, mask, what):
        if mask.any():
            k = int(np.argmax(mask))
            raise ValueError(f"operation {owner[k]} (rank {self.rank[owner[k]]}) {name} "
                             f"operation {targets[k]}, {what}; dependencies stay inside a rank")

    # ------------------------------------------------------------------ views
    @property
    def n_operations(self) -> int:
        """Number of operations."""
        return int(self.kind.size)

    def __len__(self) -> int:
        return self.n_operations

    @property
    def rank_offsets(self) -> np.ndarray:
        """int64 (num_ranks + 1): the operations of rank r are
        ``rank_offsets[r]`` … ``rank_offsets[r+1] − 1``."""
        return np.searchsorted(self.rank, np.arange(self.num_ranks + 1)).astype(np.int64)

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays. [B]"""
        return sum(getattr(self, f).nbytes for f in (
            "kind", "rank", "peer", "size", "tag", "duration", "cpu", "nic",
            "requires_offsets", "requires", "irequires_offsets", "irequires"))

    def counts(self) -> dict:
        """Number of sends, receives and calcs."""
        found = np.bincount(self.kind, minlength=4)
        return {name: int(found[code]) for code, name in KIND_NAMES.items()}

    def __repr__(self) -> str:
        c = self.counts()
        return (f"Schedule(num_ranks={self.num_ranks}, operations={self.n_operations}: "
                f"{c['send']} send, {c['recv']} recv, {c['calc']} calc; "
                f"{self.requires.size} requires, {self.irequires.size} irequires)")

    def __eq__(self, other) -> bool:
        if not isinstance(other, Schedule):
            return NotImplemented
        return self.num_ranks == other.num_ranks and all(
            np.array_equal(getattr(self, f), getattr(other, f)) for f in (
                "kind", "rank", "peer", "size", "tag", "duration", "cpu", "nic",
                "requires_offsets", "requires", "irequires_offsets", "irequires"))

    __hash__ = None

    def __getstate__(self) -> dict:
        """The attributes that pickling and copying keep: all but :attr:`kept_layout`
        (a cache, laid out again when needed)."""
        state = dict(self.__dict__)
        state.pop("kept_layout", None)
        return state

    def to_goal(self, path, *, overwrite: bool = False):
        """Write the schedule as GOAL text (LogGOPSim's ``txt2bin`` input), atomically.

        Labels are ``l<position in the rank>``; calc durations are written in whole
        nanoseconds (a duration that is not one raises ValueError). A path ending in
        ``.gz`` is gzip-compressed. An existing file is refused unless ``overwrite``.
        """
        goal_nanoseconds(self)  # a duration GOAL cannot hold fails before any file exists
        lines = goal_lines(self)

        def write(temp):
            with open(temp, "w", encoding="utf-8") as handle:
                for line in lines:
                    handle.write(line)
                    handle.write("\n")

        return atomic_write(path, write, overwrite=overwrite)


def goal_nanoseconds(schedule: Schedule) -> np.ndarray:
    """The calc durations in whole nanoseconds, as GOAL stores them (ValueError if not)."""
    ns = schedule.duration * 1e9
    whole = np.round(ns)
    bad = np.abs(ns - whole) > 1e-6 * np.maximum(1.0, whole)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"operation {i}: calc duration {schedule.duration[i]!r} s is not a "
                         f"whole number of nanoseconds, which GOAL stores")
    return whole.astype(np.int64)


def goal_lines(schedule: Schedule):
    """The GOAL text of ``schedule``, line by line (without newlines)."""
    ns = goal_nanoseconds(schedule)
    offsets = schedule.rank_offsets
    yield f"num_ranks {schedule.num_ranks}"
    for r in range(schedule.num_ranks):
        first, last = int(offsets[r]), int(offsets[r + 1])
        yield ""
        yield f"rank {r} {{"
        kinds = schedule.kind[first:last].tolist()
        peers = schedule.peer[first:last].tolist()
        sizes = schedule.size[first:last].tolist()
        tags = schedule.tag[first:last].tolist()
        cpus = schedule.cpu[first:last].tolist()
        nics = schedule.nic[first:last].tolist()
        times = ns[first:last].tolist()
        for i, kind in enumerate(kinds):
            cpu = f" cpu {cpus[i]}" if cpus[i] else ""
            if kind == CALC:
                if nics[i]:
                    raise ValueError(f"operation {first + i}: a calc on nic {nics[i]}; GOAL "
                                     f"gives a calc no nic")
                yield f"l{i}: calc {times[i]}{cpu}"
                continue
            nic = f" nic {nics[i]}" if nics[i] else ""
            if kind == SEND:
                text = f"l{i}: send {sizes[i]}b to {peers[i]}"
            else:
                source = ANY_SOURCE if peers[i] == ANY_SOURCE else peers[i]
                text = f"l{i}: recv {sizes[i]}b from {source}"
            tag = -1 if tags[i] == ANY_TAG else tags[i]
            yield f"{text} tag {tag}{cpu}{nic}"
        for word in ("requires", "irequires"):
            starts = getattr(schedule, f"{word}_offsets")
            targets = getattr(schedule, word)
            lo, hi = int(starts[first]), int(starts[last])
            if lo == hi:
                continue
            owners = np.repeat(np.arange(first, last), np.diff(starts[first:last + 1]))
            for a, b in zip((owners - first).tolist(), (targets[lo:hi] - first).tolist(),
                            strict=True):
                yield f"l{a} {word} l{b}"
        yield "}"
