"""Event traces of parallel runs: per rank, intervals with the local noise inside each.

An :class:`EventTrace` is the input of the timeline approximation of Nataraj et al.
(seed 003, see :mod:`jitterlab.compare.estimate`). It wraps one tidy :class:`pandas.DataFrame`,
one row per interval, sorted by rank and then by ``seq``:

========== ======= =====================================================================
column     type    meaning
========== ======= =====================================================================
rank       int     the process
seq        int     the interval's place on its rank: 0, 1, 2, ...
kind       str     "compute", "send", "recv" or "collective"
start, end float   when the interval begins and ends [s]
peer       int     the other rank of a send or recv; -1 otherwise
tag        int     message tag; for a collective its instance number (the same on all ranks)
any_order  bool    optional: a recv of a run that completes in any order (a wait-any loop)
noise_<x>  float   local noise of source <x> inside the interval [s] (``noise_combined``,
                   ``noise_tick``, ...)
========== ======= =====================================================================

A send from rank r to rank p with tag t is matched by exactly one recv on rank p with
peer r and tag t. Every collective instance appears once on every rank (collectives span
all ranks) and is barrier-like: no rank leaves it before the last rank has entered (a
rooted one-way collective such as MPI_Bcast is recorded as its messages). ``latency`` is
the least wire time of a message [s].
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..base.checks import check_positive
from .schedule import CALC, Schedule, dependencies_from_pairs
from .schedule import RECV as GOAL_RECV
from .schedule import SEND as GOAL_SEND

__all__ = ["EventTrace", "KINDS"]

#: the interval kinds, in the order of their integer codes
KINDS = ("compute", "send", "recv", "collective")
COMPUTE, SEND, RECV, COLLECTIVE = range(4)
NOISE_PREFIX = "noise_"
_BASE_COLUMNS = ("rank", "seq", "kind", "start", "end", "peer", "tag")
_INT_COLUMNS = {"rank": np.int64, "seq": np.int64, "peer": np.int64, "tag": np.int64}
#: rounding allowed when comparing noise with its interval, relative to the timestamps
_ROUNDING = 8 * np.finfo(np.float64).eps


def _seconds(value) -> str:
    return f"{float(value):.12g} s"


class EventTrace:
    """Intervals of a parallel run, per rank, with the local noise inside each.

    Parameters
    ----------
    data : pandas.DataFrame
        One row per interval with the columns of the module docstring (any row order;
        it is sorted by rank and seq) and at least one ``noise_<source>`` column.
    latency : float, optional
        Least wire time of a message; a receive never completes earlier than its send
        plus this. [s]
    file : str or path, optional
        The file the trace was read from, named in error messages.
    **attrs
        Metadata: ``source``, ``machine``, ... (``units`` is always "s").

    Raises
    ------
    ValueError
        For a malformed trace, naming the rank, the interval (``seq``) and the file:
        unmatched or duplicated messages, intervals out of order, negative durations,
        noise negative or longer than its interval, a collective instance missing on
        some rank.

    Examples
    --------
    >>> import pandas as pd
    >>> import jitterlab as jl
    >>> rows = pd.DataFrame({"rank": [0, 0, 1], "seq": [0, 1, 0],
    ...                      "kind": ["compute", "send", "recv"],
    ...                      "start": [0.0, 2.0, 0.0], "end": [2.0, 2.0, 2.5],
    ...                      "peer": [-1, 1, 0], "tag": [0, 7, 7],
    ...                      "noise_combined": [1.0, 0.0, 0.0]})
    >>> trace = jl.EventTrace(rows, source="example")
    >>> trace.n_ranks, trace.sources
    (2, ['combined'])
    """

    def __init__(self, data: pd.DataFrame, latency: float = 0.0, *, file=None, **attrs):
        if not isinstance(data, pd.DataFrame):
            raise TypeError(f"data must be a pandas DataFrame, got {type(data).__name__}")
        self.file = None if file is None else str(file)
        self.latency = check_positive("latency", latency, allow_zero=True)
        self.attrs = {**attrs, "units": "s"}
        self.data = self._normalise(data)
        self._validate()

    # ------------------------------------------------------------------ properties
    @property
    def sources(self) -> list[str]:
        """The noise sources, from the ``noise_<source>`` columns."""
        return [c[len(NOISE_PREFIX):] for c in self.data.columns if c.startswith(NOISE_PREFIX)]

    @property
    def n_ranks(self) -> int:
        return int(self.data["rank"].iat[-1]) + 1 if len(self.data) else 0

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        return (f"EventTrace({len(self)} intervals, {self.n_ranks} ranks, sources "
                f"{self.sources}, latency={self.latency:g} s)")

    def noise(self, source: str) -> np.ndarray:
        """Local noise of ``source`` per interval (``combined``: the column, or the sum
        of all sources when there is no such column). [s]"""
        column = NOISE_PREFIX + source
        if column in self.data:
            return self.data[column].to_numpy(dtype=np.float64)
        if source == "combined":
            total = np.zeros(len(self.data))
            for name in self.sources:
                total += self.data[NOISE_PREFIX + name].to_numpy(dtype=np.float64)
            self._check_noise(total, "combined (sum of the sources)")
            return total
        raise ValueError(f"no noise source {source!r} in the trace; it has {self.sources}")

    def any_order(self) -> np.ndarray:
        """Per interval: a receive of a run that may complete in any order (all False
        when the trace has no ``any_order`` column)."""
        if "any_order" in self.data:
            return self.data["any_order"].to_numpy(dtype=np.bool_)
        return np.zeros(len(self.data), dtype=np.bool_)

    def kind_codes(self) -> np.ndarray:
        """``kind`` as int8 codes, in the order of :data:`KINDS`."""
        return self.data["kind"].cat.codes.to_numpy().astype(np.int8)

    def rank_offsets(self) -> np.ndarray:
        """Row where each rank starts, plus the number of rows (length n_ranks + 1)."""
        ranks = self.data["rank"].to_numpy()
        return np.searchsorted(ranks, np.arange(self.n_ranks + 1)).astype(np.int64)

    def to_schedule(self, message_size: int = 1, source: str = "combined"):
        """The traced run as a GOAL schedule, to replay it under other noise.

        Every rank becomes a chain of operations in the order of its intervals, each
        waiting for the one before it to finish: a compute interval becomes a ``calc``
        of its duration minus its recorded noise of ``source`` (the compute the program
        did, without what the noise took), a send a ``send`` and a recv a ``recv`` of
        ``message_size`` bytes to or from its peer, with tag ``tag % 2**32`` (the MPI
        tag of a trace read by :func:`jitterlab.io.read_otf2_events`; the messages are
        matched again in posting order). A run of receives marked ``any_order`` waits
        for the operation before the run, and the operation after it for all of them,
        so they complete in the order their messages arrive. A collective instance
        becomes a dissemination barrier of ``message_size``-byte messages
        (⌈log₂ P⌉ rounds, tags above every message tag of the trace).

        What is lost: the time between intervals (gaps: no operation), the measured cost
        of the sends, receives and collectives (a simulation charges its own, e.g.
        LogGOPS's o, L, g, G), the noise inside them, and anything the noise column does
        not hold (noise not recorded stays in the calc times). The noise is removed by
        subtraction, so the calc time is exact only if the recorded noise is.

        Parameters
        ----------
        message_size : int
            Size given to every message (an event trace records none). [B]
        source : str
            The noise source removed from compute ("combined": all of them).

        Returns
        -------
        jitterlab.Schedule
        """
        if isinstance(message_size, bool) or not isinstance(message_size, int | np.integer) \
                or message_size < 0:
            raise ValueError(f"message_size must be an integer >= 0 [B], got {message_size!r}")
        data = self.data
        codes = self.kind_codes()
        rank = data["rank"].to_numpy()
        noise = self.noise(source)
        duration = np.maximum(data["end"].to_numpy() - data["start"].to_numpy() - noise, 0.0)
        tags = data["tag"].to_numpy() % 2**32
        message = (codes == SEND) | (codes == RECV)
        next_tag = int(tags[message].max()) + 1 if message.any() else 0
        p = self.n_ranks
        rounds = max(1, math.ceil(math.log2(p))) if p > 1 else 0
        collective = codes == COLLECTIVE
        instance, _ = self.collective_instances()
        # operations per interval: 1, or 2 per round for a collective
        width = np.where(collective, 2 * rounds, 1)
        first_op = np.r_[0, np.cumsum(width)[:-1]]
        n = int(width.sum())
        owner = np.repeat(np.arange(len(data)), width)  # interval of each operation
        within = np.arange(n) - first_op[owner]
        kind = np.full(n, CALC, dtype=np.int8)
        kind[np.isin(codes[owner], (SEND,))] = GOAL_SEND
        kind[np.isin(codes[owner], (RECV,))] = GOAL_RECV
        op_rank = rank[owner]
        peer = np.where(message[owner], data["peer"].to_numpy()[owner], -1)
        tag = np.where(message[owner], tags[owner], 0)
        size = np.where(message[owner], message_size, 0)
        op_duration = np.where(codes[owner] == COMPUTE, duration[owner], 0.0)
        barrier = collective[owner]
        step = 1 << (within[barrier] // 2)
        sending = within[barrier] % 2 == 0
        kind[barrier] = np.where(sending, GOAL_SEND, GOAL_RECV)
        peer[barrier] = np.where(sending, (op_rank[barrier] + step) % max(p, 1),
                                 (op_rank[barrier] - step) % max(p, 1))
        tag[barrier] = next_tag + instance[owner[barrier]] * rounds + within[barrier] // 2
        size[barrier] = message_size
        if tag.size and tag.max() >= 2**32 - 1:
            raise ValueError("too many collective instances for GOAL's 32-bit tags")
        # dependencies: a chain per rank; runs of any_order receives side by side
        same_rank = np.r_[False, op_rank[1:] == op_rank[:-1]]
        loose = self.any_order()[owner] & ~barrier
        run_start = loose & ~np.r_[False, loose[:-1] & same_rank[1:]]
        run_id = np.cumsum(run_start) - 1
        dependent, prerequisite = [], []
        index = np.arange(n)
        # plain chain: i requires i - 1, except inside a run (its members require the
        # operation before the run) and right after a run (it requires every member)
        plain = same_rank & ~loose & ~np.r_[False, loose[:-1]]
        dependent.append(index[plain])
        prerequisite.append(index[plain] - 1)
        if loose.any():
            first_of_run = np.flatnonzero(run_start)
            head = first_of_run[run_id[loose]]
            members = index[loose]
            has_before = same_rank[head]
            dependent.append(members[has_before])
            prerequisite.append(head[has_before] - 1)
            after = index[~loose & np.r_[False, loose[:-1]] & same_rank]
            last_run = run_id[after - 1]
            for op, run in zip(after.tolist(), last_run.tolist(), strict=True):
                group = index[loose & (run_id == run)]
                dependent.append(np.full(group.size, op))
                prerequisite.append(group)
        requires = dependencies_from_pairs(n, np.concatenate(dependent),
                                           np.concatenate(prerequisite))
        return Schedule(max(p, 1), kind=kind, rank=op_rank, peer=peer, size=size, tag=tag,
                        duration=op_duration, requires=requires)

    def opaque_collectives(self) -> EventTrace:
        """The trace as a tracer that sees each collective as one call would record it.

        Every run of consecutive send and recv intervals on a rank becomes one
        "collective" interval from the run's first start to its last end, whose noise
        (per source) is the sum of the run's; the k-th run of every rank is collective
        instance k. Other intervals are kept. Use it on a simulated run whose barrier is
        written as messages (``jl.simulate(..., barrier=..., detail="events")``) to see
        what the collective rule of :func:`jitterlab.compare.estimate.accumulated_noise` makes of
        the same run.

        Raises
        ------
        ValueError
            If the ranks do not have the same number of runs of messages.
        """
        data = self.data
        codes = self.kind_codes()
        rank = data["rank"].to_numpy()
        message = (codes == SEND) | (codes == RECV)
        new_rank = np.ones(len(data), dtype=bool)
        new_rank[1:] = rank[1:] != rank[:-1]
        previous_message = np.zeros(len(data), dtype=bool)
        previous_message[1:] = message[:-1]
        opens = message & (new_rank | ~previous_message)
        # a group per interval: runs of messages share one, other rows have their own
        group = np.cumsum(opens | ~message) - 1
        runs = np.bincount(rank[opens], minlength=self.n_ranks)
        if runs.size and runs.min() != runs.max():
            lacking = int(np.argmin(runs))
            raise ValueError(f"{self._where()}rank {lacking} has {runs[lacking]} runs of "
                             f"messages, rank {int(np.argmax(runs))} has {runs.max()}: the "
                             f"runs cannot be collectives spanning all ranks")
        noise = [c for c in data.columns if c.startswith(NOISE_PREFIX)]
        grouped = data.groupby(group, sort=False)
        out = grouped.agg({"rank": "first", "kind": "first", "start": "first", "end": "last",
                           "peer": "first", "tag": "first", **dict.fromkeys(noise, "sum")})
        first = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
        collective = opens[first]
        instance = np.cumsum(opens) - 1  # global run number, per rank below
        rank_first_run = np.r_[0, np.cumsum(runs)[:-1]]
        kinds = out["kind"].cat.codes.to_numpy().copy()
        kinds[collective] = COLLECTIVE
        out["kind"] = pd.Categorical.from_codes(kinds, categories=KINDS)
        out["peer"] = np.where(collective, -1, out["peer"].to_numpy())
        out["tag"] = np.where(collective, instance[first] - rank_first_run[rank[first]],
                              out["tag"].to_numpy())
        out["seq"] = out.groupby("rank").cumcount()
        return EventTrace(out.reset_index(drop=True), latency=self.latency, file=self.file,
                          **{**self.attrs, "collectives": "opaque (runs of messages merged)"})

    # ------------------------------------------------------------------ checks
    def _where(self) -> str:
        return f"{Path(self.file).name}: " if self.file else ""

    def _fail(self, message: str, rows=None):
        if rows is not None:
            row = int(np.asarray(rows).flat[0])
            rank, seq = (int(self.data[c].iat[row]) for c in ("rank", "seq"))
            message = f"rank {rank}, interval seq {seq}: {message}"
        raise ValueError(self._where() + message)

    def _normalise(self, data: pd.DataFrame) -> pd.DataFrame:
        missing = [c for c in _BASE_COLUMNS if c not in data.columns]
        if missing:
            raise ValueError(f"{self._where()}the event trace lacks the columns {missing} "
                             f"(it has {list(data.columns)})")
        noise = [c for c in data.columns if str(c).startswith(NOISE_PREFIX)]
        if not noise:
            raise ValueError(f"{self._where()}the event trace has no noise column "
                             f"(noise_<source>, e.g. noise_combined)")
        columns = {}
        for name, dtype in _INT_COLUMNS.items():
            values = data[name].to_numpy()
            if not (np.issubdtype(values.dtype, np.integer)
                    or (np.issubdtype(values.dtype, np.floating)
                        and np.all(np.isfinite(values)) and np.all(values == np.round(values)))):
                raise ValueError(f"{self._where()}column {name!r} must hold integers, got "
                                 f"{values.dtype}")
            columns[name] = values.astype(dtype)
        kind = data["kind"]
        known = pd.Index(KINDS)
        if isinstance(kind.dtype, pd.CategoricalDtype):
            raw = kind.cat.codes.to_numpy()
            mapping = known.get_indexer(kind.cat.categories.astype(str))
            codes = np.where(raw >= 0, mapping[np.maximum(raw, 0)], -1)
        else:
            codes = known.get_indexer(kind.astype(str))
        if np.any(codes < 0):
            bad = np.flatnonzero(codes < 0)[0]
            raise ValueError(f"{self._where()}rank {columns['rank'][bad]}, interval seq "
                             f"{columns['seq'][bad]}: kind {data['kind'].iat[bad]!r} is not "
                             f"one of {KINDS}")
        columns["kind"] = pd.Categorical.from_codes(codes.astype(np.int8), categories=KINDS)
        for name in ("start", "end", *noise):
            try:
                columns[name] = data[name].to_numpy(dtype=np.float64)
            except (TypeError, ValueError) as err:
                raise ValueError(f"{self._where()}column {name!r} must be numbers [s] "
                                 f"({err})") from None
        if "any_order" in data.columns:
            flags = data["any_order"].to_numpy()
            if not (flags.dtype == np.bool_ or (np.issubdtype(flags.dtype, np.integer)
                                                and np.isin(flags, (0, 1)).all())):
                raise ValueError(f"{self._where()}column 'any_order' must hold booleans, "
                                 f"got {flags.dtype}")
            columns["any_order"] = flags.astype(np.bool_)
        frame = pd.DataFrame(columns)
        ranks, seqs = columns["rank"], columns["seq"]
        if len(frame) and not (np.all(np.diff(ranks) >= 0) and np.all(
                (np.diff(ranks) > 0) | (np.diff(seqs) > 0))):
            frame = frame.iloc[np.lexsort((seqs, ranks))].reset_index(drop=True)
        return frame

    def _validate(self):
        data = self.data
        if len(data) == 0:
            raise ValueError(f"{self._where()}the event trace has no intervals")
        rank = data["rank"].to_numpy()
        seq = data["seq"].to_numpy()
        start = data["start"].to_numpy()
        end = data["end"].to_numpy()
        if rank[0] < 0:
            self._fail("rank numbers must be >= 0", [0])
        offsets = self.rank_offsets()
        empty = np.flatnonzero(np.diff(offsets) == 0)
        if empty.size:
            raise ValueError(f"{self._where()}ranks must be numbered 0 to {self.n_ranks - 1}; "
                             f"rank {empty[0]} has no intervals")
        # seq: 0, 1, 2, ... on every rank
        expected = np.arange(len(data)) - np.repeat(offsets[:-1], np.diff(offsets))
        bad = np.flatnonzero(seq != expected)
        if bad.size:
            row = bad[0]
            what = "is duplicated" if row > 0 and seq[row] == seq[row - 1] and \
                rank[row] == rank[row - 1] else f"should be {expected[row]}"
            self._fail(f"seq {what}: the intervals of a rank are numbered 0, 1, 2, ... "
                       f"without gaps", [row])
        bad = np.flatnonzero(~(np.isfinite(start) & np.isfinite(end)))
        if bad.size:
            self._fail("start and end must be finite", bad)
        bad = np.flatnonzero(end < start)
        if bad.size:
            row = bad[0]
            self._fail(f"negative duration (start {_seconds(start[row])}, end "
                       f"{_seconds(end[row])})", bad)
        same_rank = rank[1:] == rank[:-1]
        bad = np.flatnonzero(same_rank & (start[1:] < end[:-1]))
        if bad.size:
            row = bad[0] + 1
            self._fail(f"out of order: it starts at {_seconds(start[row])}, before the previous "
                       f"interval (seq {seq[row - 1]}) ends at {_seconds(end[row - 1])}", [row])
        for source in self.sources:
            self._check_noise(data[NOISE_PREFIX + source].to_numpy(), source)
        bad = np.flatnonzero(self.any_order() & (self.kind_codes() != RECV))
        if bad.size:
            self._fail("any_order is set on a non-recv interval (it marks receives that "
                       "may complete in any order)", bad)
        self._check_messages()
        self._check_collectives()

    def _check_noise(self, noise: np.ndarray, source: str):
        start = self.data["start"].to_numpy()
        end = self.data["end"].to_numpy()
        bad = np.flatnonzero(~np.isfinite(noise) | (noise < 0))
        if bad.size:
            self._fail(f"noise {source!r} must be finite and >= 0, got "
                       f"{_seconds(noise[bad[0]])}", bad)
        slack = _ROUNDING * np.maximum(np.abs(start), np.abs(end))
        bad = np.flatnonzero(noise > end - start + slack)
        if bad.size:
            row = bad[0]
            self._fail(f"noise {source!r} of {_seconds(noise[row])} is longer than the interval "
                       f"({_seconds(end[row] - start[row])})", [row])

    def _check_messages(self):
        kind = self.kind_codes()
        rank = self.data["rank"].to_numpy()
        peer = self.data["peer"].to_numpy()
        n_ranks = self.n_ranks
        message = (kind == SEND) | (kind == RECV)
        bad = np.flatnonzero(message & ((peer < 0) | (peer >= n_ranks) | (peer == rank)))
        if bad.size:
            self._fail(f"{KINDS[kind[bad[0]]]} with peer {peer[bad[0]]}: the peer must be "
                       f"another rank in 0 to {n_ranks - 1}", bad)
        bad = np.flatnonzero(~message & (peer != -1))
        if bad.size:
            self._fail(f"a {KINDS[kind[bad[0]]]} interval has peer {peer[bad[0]]}; only send "
                       f"and recv have a peer (use -1)", bad)
        sends, recvs = self.message_pairs(check=True)
        end = self.data["end"].to_numpy()
        start = self.data["start"].to_numpy()
        tolerance = _ROUNDING * np.maximum(np.abs(start[sends]), np.abs(end[recvs]))
        bad = np.flatnonzero(end[recvs] < start[sends] + self.latency - tolerance)
        if bad.size:
            i, j = sends[bad[0]], recvs[bad[0]]
            self._fail(f"recv from rank {rank[i]} (tag {self.data['tag'].iat[j]}) ends at "
                       f"{_seconds(end[j])}, before its send starts ({_seconds(start[i])}) "
                       f"plus the "
                       f"latency {_seconds(self.latency)}: the clocks disagree or the latency is "
                       f"too large", [j])

    def message_pairs(self, check: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Rows of the sends and of their matching recvs, pair by pair."""
        kind = self.kind_codes()
        rank = self.data["rank"].to_numpy()
        peer = self.data["peer"].to_numpy()
        tag = self.data["tag"].to_numpy()
        rows = np.flatnonzero((kind == SEND) | (kind == RECV))
        is_send = kind[rows] == SEND
        source = np.where(is_send, rank[rows], peer[rows])
        target = np.where(is_send, peer[rows], rank[rows])
        order = np.lexsort((~is_send, tag[rows], target, source))  # per key: send, then recv
        rows, is_send = rows[order], is_send[order]
        key = np.stack([source[order], target[order], tag[rows]])
        new = np.ones(rows.size, dtype=bool)
        new[1:] = np.any(key[:, 1:] != key[:, :-1], axis=0)
        first = np.flatnonzero(new)
        count = np.diff(np.append(first, rows.size))
        if check:
            sends = np.add.reduceat(is_send.astype(np.int64), first) if rows.size else first
            for problem in np.flatnonzero((count != 2) | (sends != 1)):
                lo = first[problem]
                s, t, g = key[:, lo]
                n_send = int(sends[problem])
                n_recv = int(count[problem] - n_send)
                if n_send == 0:
                    what = f"recv from rank {s} with tag {g} has no matching send on rank {s}"
                elif n_send == 1 and n_recv == 0:
                    what = f"send to rank {t} with tag {g} has no matching recv on rank {t}"
                else:
                    what = (f"message rank {s} -> rank {t} with tag {g} is duplicated "
                            f"({n_send} sends, {n_recv} recvs; each (source, destination, "
                            f"tag) must be used by exactly one send and one recv)")
                self._fail(what, [rows[lo]])
        return rows[first], rows[first + 1]

    def collective_instances(self) -> tuple[np.ndarray, np.ndarray]:
        """The instance number of each collective row (dense: 0, 1, ...) and the tags."""
        kind = self.kind_codes()
        rows = np.flatnonzero(kind == COLLECTIVE)
        tags, dense = np.unique(self.data["tag"].to_numpy()[rows], return_inverse=True)
        instance = np.full(len(self.data), -1, dtype=np.int64)
        instance[rows] = dense
        return instance, tags

    def _check_collectives(self):
        instance, tags = self.collective_instances()
        rows = np.flatnonzero(instance >= 0)
        if not rows.size:
            return
        rank = self.data["rank"].to_numpy()
        n_ranks = self.n_ranks
        # each (instance, rank) once
        pair = instance[rows] * n_ranks + rank[rows]
        order = np.argsort(pair, kind="stable")
        repeated = np.flatnonzero(pair[order][1:] == pair[order][:-1])
        if repeated.size:
            row = rows[order][repeated[0] + 1]
            self._fail(f"collective instance (tag) {tags[instance[row]]} appears twice on "
                       f"this rank", [row])
        counts = np.bincount(instance[rows], minlength=tags.size)
        short = np.flatnonzero(counts < n_ranks)
        if short.size:
            k = short[0]
            present = np.zeros(n_ranks, dtype=bool)
            present[rank[rows[instance[rows] == k]]] = True
            missing = np.flatnonzero(~present)
            raise ValueError(f"{self._where()}collective instance (tag) {tags[k]} is missing "
                             f"on rank {missing[0]} ({missing.size} of {n_ranks} ranks lack "
                             f"it; a collective spans all ranks)")
        # barrier-like: no rank leaves before the last rank has entered
        start = self.data["start"].to_numpy()
        end = self.data["end"].to_numpy()
        last_entry = np.full(tags.size, -np.inf)
        np.maximum.at(last_entry, instance[rows], start[rows])
        slack = _ROUNDING * np.maximum(np.abs(end[rows]), np.abs(last_entry[instance[rows]]))
        early = np.flatnonzero(end[rows] < last_entry[instance[rows]] - slack)
        if early.size:
            row = rows[early[0]]
            k = instance[row]
            latest = rows[(instance[rows] == k) & (start[rows] == last_entry[k])][0]
            self._fail(f"collective instance (tag) {tags[k]} ends at {_seconds(end[row])}, "
                       f"before rank {int(rank[latest])} enters it at "
                       f"{_seconds(last_entry[k])}: it does not synchronise. The "
                       f"'collective' kind means barrier-like dependence (MPI_Barrier, "
                       f"MPI_Allreduce, MPI_Alltoall); a rooted one-way collective "
                       f"(MPI_Bcast, MPI_Reduce, MPI_Gather, ...) must be recorded as its "
                       f"messages (send/recv), or the estimate would charge ranks for waits "
                       f"that never happened", [row])

    # ------------------------------------------------------------------ equality
    def equals(self, other: EventTrace) -> bool:
        """Same intervals, latency and metadata."""
        return (isinstance(other, EventTrace) and self.latency == other.latency
                and self.attrs == other.attrs and self.data.equals(other.data))








