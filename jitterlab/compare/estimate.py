"""How much did noise cost this run? The timeline approximation of Nataraj et al. (seed 003).

Given an :class:`~jitterlab.traces.events.EventTrace` (intervals per rank with the local noise
inside each), :func:`accumulated_noise` removes the noise of one source from every
interval and moves later events earlier, keeping the order that messages and
collectives impose. The difference between the measured and the approximated end is
the *accumulated noise*: what noise cost the run, including the noise other ranks passed
on through messages and collectives. Divided by a rank's own (*local*) noise it gives
the *amplification ratio*: above 1 the rank was delayed by more than its own noise
(propagation), below 1 part of its noise was hidden in waiting (absorption).

The rules (a, b: approximated start and end of an interval; s, e, d = e − s, n: its
measured start, end, duration and local noise):

* Every interval starts when the previous interval of its rank ends in the approximated
  timeline, plus the measured gap between the two (time outside any interval is kept);
  a rank's first interval starts at its measured start.
* compute, send: b = a + d − n.
* A message leaves at the measured time D = min(e_send, e_recv − latency) (the send's
  end, or earlier if the receive completed sooner) and arrives ``latency`` later. In the
  approximated timeline it leaves at the same relative place of the shortened send,
  D' = a_send + (D − s_send)·(1 − n_send/d_send).
* recv: the measured receive is split at the measured arrival A = D + latency into a wait
  W = clip(A − s, 0, d) and its own part P = d − W (transfer and processing). Then
  b = max(a, D' + latency) + P − min(n, P): the noise is removed from the own part (noise
  beyond P struck while waiting and was absorbed). A receive therefore never completes
  before its send's approximated departure plus latency.
* A run of consecutive receives marked ``any_order`` (a wait-any loop, receives from
  any source) completes in the order of the approximated arrivals, not in the measured
  order: each receive of the run starts when the one before it ends, with the rule
  above.
* collective (spanning all ranks, barrier-like): with S the last measured entry of the
  instance and S' the last approximated entry, each rank's own cost after the last entry
  is c = max(e − S, 0) and b = S' + c − min(n, c). No rank leaves before the last rank
  has entered.

With no noise the approximated timeline is the measured one; every approximated time
is at most its measured time.

References
----------
.. [1] A. Nataraj, A. Morris, A. Malony, M. Sottile, P. Beckman, "The Ghost in the
   Machine: Observing the Effects of Kernel Operation on Parallel Application
   Performance", SC07 (seed 003): timeline approximation, accumulated noise,
   amplification ratio, the propagation and absorption cases.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pandas as pd
import xarray as xr

from ..base.provenance import provenance_attrs
from ..traces.events import COLLECTIVE, COMPUTE, KINDS, RECV, SEND, EventTrace

__all__ = ["accumulated_noise", "approximate_timeline", "against_simulation", "split_noise"]

_RUNNABLE, _WAIT_MESSAGE, _WAIT_COLLECTIVE, _DONE = range(4)
_COMPUTE, _SEND, _RECV = COMPUTE, SEND, RECV


@numba.njit(cache=True)
def _timeline_kernel(offsets, kind, start, end, noise, link, departure, receiver,
                     last_entry, any_order, latency, approx_start, approx_end):
    """The approximated timeline of one noise source (arrays in, arrays out).

    ``link`` holds the message number of a send or recv row and the instance number of
    a collective row (-1 for compute); ``departure[m]`` is message m's measured
    departure D and ``receiver[m]`` its receiving rank; ``last_entry[q]`` is the last
    measured entry of collective instance q; ``any_order`` marks receives whose runs
    may complete in any order. ``approx_start`` and ``approx_end`` are filled when they
    are not empty.

    Returns (approximated end of every rank, row where a rank is stuck or -1). Ranks are
    run one at a time until they block on a message not yet sent or a collective not yet
    entered by all; a rank that unblocks another puts it on a stack, so every interval
    is visited once (plus one visit per rank and collective instance).
    """
    n_ranks = offsets.size - 1
    keep = approx_start.size > 0
    position = offsets[:-1].copy()
    now = np.zeros(n_ranks)
    state = np.full(n_ranks, _RUNNABLE, dtype=np.int8)
    entered = np.zeros(n_ranks, dtype=np.bool_)
    ready = np.full(departure.size, np.nan)
    n_instances = last_entry.size
    entry_max = np.full(n_instances, -np.inf)
    entry_count = np.zeros(n_instances, dtype=np.int64)
    waiting_on = np.full(n_ranks, -1, dtype=np.int64)  # the message a rank waits for
    stack = np.empty(n_ranks, dtype=np.int64)
    for r in range(n_ranks):
        stack[r] = n_ranks - 1 - r
    top = n_ranks
    while top > 0:
        top -= 1
        r = stack[top]
        state[r] = _RUNNABLE
        i = position[r]
        stop = offsets[r + 1]
        while i < stop:
            if i == offsets[r]:
                a = start[i]
            else:
                a = now[r] + (start[i] - end[i - 1])
            duration = end[i] - start[i]
            lost = noise[i]
            k = kind[i]
            if k == _COMPUTE or k == _SEND:
                b = a + max(duration - lost, 0.0)
                if k == _SEND:
                    m = link[i]
                    if duration > 0.0:
                        leave = a + (departure[m] - start[i]) * ((b - a) / duration)
                    else:
                        leave = a
                    ready[m] = leave + latency
                    other = receiver[m]
                    if state[other] == _WAIT_MESSAGE and waiting_on[other] == m:
                        state[other] = _RUNNABLE
                        stack[top] = other
                        top += 1
            elif k == _RECV and any_order[i]:
                # a run of receives that complete in any order: once every message is
                # sent, take them by approximated arrival, each from when the one before
                # is done (plus its own measured gap)
                j = i
                missing = -1
                while j < stop and kind[j] == _RECV and any_order[j]:
                    if missing < 0 and np.isnan(ready[link[j]]):
                        missing = link[j]
                    j += 1
                if missing >= 0:
                    state[r] = _WAIT_MESSAGE
                    waiting_on[r] = missing
                    break
                size = j - i
                order = np.argsort(ready[link[i:j]], kind="mergesort")
                t = a
                for g in range(size):
                    if g > 0:  # the measured gap at this place of the run
                        t += start[i + g] - end[i + g - 1]
                    row = i + order[g]
                    m = link[row]
                    duration = end[row] - start[row]
                    wait = min(max(departure[m] + latency - start[row], 0.0), duration)
                    own = duration - wait
                    if keep:
                        approx_start[row] = t
                    t = max(t, ready[m]) + max(own - noise[row], 0.0)
                    if keep:
                        approx_end[row] = t
                now[r] = t
                i = j
                continue
            elif k == _RECV:
                m = link[i]
                arrival = ready[m]
                if np.isnan(arrival):
                    state[r] = _WAIT_MESSAGE
                    waiting_on[r] = m
                    break
                wait = min(max(departure[m] + latency - start[i], 0.0), duration)
                own = duration - wait
                b = max(a, arrival) + max(own - lost, 0.0)
            else:  # collective
                q = link[i]
                if not entered[r]:
                    entered[r] = True
                    if a > entry_max[q]:
                        entry_max[q] = a
                    entry_count[q] += 1
                    if entry_count[q] < n_ranks:
                        state[r] = _WAIT_COLLECTIVE
                        break
                    for other in range(n_ranks):  # the last to enter releases the others
                        if other != r and state[other] == _WAIT_COLLECTIVE:
                            state[other] = _RUNNABLE
                            stack[top] = other
                            top += 1
                entered[r] = False
                own = max(end[i] - last_entry[q], 0.0)
                b = entry_max[q] + max(own - lost, 0.0)
            if keep:
                approx_start[i] = a
                approx_end[i] = b
            now[r] = b
            i += 1
        position[r] = i
        if i == stop:
            state[r] = _DONE
    for r in range(n_ranks):
        if state[r] != _DONE:
            return now, position[r]
    return now, -1


@numba.njit(cache=True)
def _group_max(values, group, n_groups):
    out = np.full(n_groups, -np.inf)
    for i in range(values.size):
        g = group[i]
        if g >= 0 and values[i] > out[g]:
            out[g] = values[i]
    return out


def _prepare(events: EventTrace) -> dict:
    """The kernel's inputs that do not depend on the noise source."""
    data = events.data
    kind = events.kind_codes()
    start = data["start"].to_numpy(dtype=np.float64)
    end = data["end"].to_numpy(dtype=np.float64)
    sends, recvs = events.message_pairs()
    instance, _ = events.collective_instances()
    link = np.where(kind == COLLECTIVE, instance, -1)
    messages = np.arange(sends.size, dtype=np.int64)
    link[sends] = messages
    link[recvs] = messages
    # the message leaves at the send's end, or earlier if its receive completed sooner;
    # never before the send starts (checked by EventTrace up to rounding)
    departure = np.maximum(np.minimum(end[sends], end[recvs] - events.latency), start[sends])
    receiver = data["rank"].to_numpy()[recvs].astype(np.int64)
    n_instances = int(instance.max()) + 1 if instance.size else 0
    last_entry = _group_max(start, np.where(kind == COLLECTIVE, instance, -1), n_instances)
    return {"offsets": events.rank_offsets(), "kind": kind, "start": start, "end": end,
            "link": link, "departure": departure, "receiver": receiver,
            "last_entry": last_entry, "any_order": events.any_order()}


def _run(events: EventTrace, prepared: dict, noise: np.ndarray, keep: bool):
    size = len(events) if keep else 0
    approx_start, approx_end = np.empty(size), np.empty(size)
    p = prepared
    last, stuck = _timeline_kernel(p["offsets"], p["kind"], p["start"], p["end"], noise,
                                   p["link"], p["departure"], p["receiver"],
                                   p["last_entry"], p["any_order"], float(events.latency),
                                   approx_start, approx_end)
    if stuck >= 0:
        rank, seq = (int(events.data[c].iat[stuck]) for c in ("rank", "seq"))
        kind = KINDS[p["kind"][stuck]]
        row = events.data.iloc[stuck]
        what = (f"recv from rank {row['peer']} with tag {row['tag']}" if kind == "recv"
                else f"collective {row['tag']}")
        where = f"{events.file}: " if events.file else ""
        raise ValueError(f"{where}rank {rank}, interval seq {seq} ({what}) can never "
                         f"complete: the messages and collectives wait on each other in a "
                         f"cycle (a deadlock; the timestamps cannot come from a real run)")
    return last, approx_start, approx_end


def _sources(events: EventTrace, sources) -> list[str]:
    if sources is None:
        names = events.sources
        if "combined" not in names:
            names = [*names, "combined"]
        return names
    if isinstance(sources, str):
        sources = [sources]
    if not all(isinstance(name, str) for name in np.atleast_1d(np.asarray(sources,
                                                                           dtype=object))):
        raise TypeError(f"sources must be a source name or a list of them (e.g. 'combined', "
                        f"['tick', 'daemon']), got {sources!r}")
    names = list(sources)
    if not names:
        raise ValueError("sources must name at least one noise source")
    for name in names:
        events.noise(name)  # raises for an unknown source
    return names


def approximate_timeline(events: EventTrace, source: str = "combined") -> pd.DataFrame:
    """The approximated timeline with the noise of ``source`` removed.

    Parameters
    ----------
    events : EventTrace
    source : str
        The noise source to remove ("combined": the ``noise_combined`` column, or the
        sum of all sources when there is none).

    Returns
    -------
    pandas.DataFrame
        ``rank``, ``seq``, ``kind``, ``start``, ``end`` and the approximated
        ``approx_start``, ``approx_end`` [s], one row per interval.
    """
    if not isinstance(events, EventTrace):
        raise TypeError(f"events must be a jl.EventTrace, got {type(events).__name__}")
    _, approx_start, approx_end = _run(events, _prepare(events), events.noise(source), True)
    frame = events.data[["rank", "seq", "kind", "start", "end"]].copy()
    frame["approx_start"] = approx_start
    frame["approx_end"] = approx_end
    return frame


def accumulated_noise(events: EventTrace, sources=None) -> xr.Dataset:
    """Accumulated noise, local noise and amplification ratio per rank and source.

    Parameters
    ----------
    events : EventTrace
        The run's intervals with the local noise inside each (see
        :mod:`jitterlab.traces.events`).
    sources : str or sequence of str, optional
        The noise sources to remove, one at a time; default: every ``noise_<source>``
        column and "combined" (all of them together).

    Returns
    -------
    xarray.Dataset
        Dims ``source`` and ``rank``:

        * ``local`` — the rank's own noise, the sum over its intervals [s];
        * ``accumulated`` — measured end − approximated end of the rank [s];
        * ``amplification`` — accumulated / local (NaN where local is 0) [-];
        * ``approximated_end`` [s], and ``measured_end`` (dim ``rank``) [s];
        * ``run_accumulated`` — measured makespan − approximated makespan [s];
        * ``max_accumulated`` — the largest accumulated noise of a rank [s];
        * ``mean_local``, ``max_local`` — over ranks [s];
        * ``run_amplification`` — run_accumulated / mean_local [-];
        * ``makespan`` — measured, last end − first start [s].

    Notes
    -----
    The rules for messages and collectives are in the module docstring. The
    accumulated noise of a rank is :math:`e_\\text{last} − b_\\text{last}` (seed 003:
    "last measured timestamp − last approximated timestamp"); its amplification ratio is
    accumulated / local.

    References
    ----------
    .. [1] A. Nataraj et al., "The Ghost in the Machine", SC07 (seed 003).

    Examples
    --------
    Rank 1 waits for rank 0, which met 100 s of noise: the delay propagates.

    >>> import pandas as pd
    >>> import jitterlab as jl
    >>> rows = pd.DataFrame({"rank": [0, 0, 1, 1], "seq": [0, 1, 0, 1],
    ...                      "kind": ["compute", "send", "recv", "compute"],
    ...                      "start": [0., 200., 0., 200.], "end": [200., 200., 200., 300.],
    ...                      "peer": [-1, 1, 0, -1], "tag": [0, 5, 5, 0],
    ...                      "noise_combined": [100., 0., 0., 0.]})
    >>> ds = jl.estimate.accumulated_noise(jl.EventTrace(rows))
    >>> ds["accumulated"].sel(source="combined").values.tolist()
    [100.0, 100.0]
    """
    if not isinstance(events, EventTrace):
        raise TypeError(f"events must be a jl.EventTrace, got {type(events).__name__}")
    names = _sources(events, sources)
    prepared = _prepare(events)
    offsets = prepared["offsets"]
    last_rows = offsets[1:] - 1
    measured_end = prepared["end"][last_rows]
    first_start = float(prepared["start"][offsets[:-1]].min())
    local, approximated = [], []
    for name in names:
        noise = events.noise(name)
        local.append(np.add.reduceat(noise, offsets[:-1]))
        approximated.append(_run(events, prepared, noise, False)[0])
    local = np.array(local)
    approximated = np.array(approximated)
    accumulated = measured_end[None, :] - approximated
    with np.errstate(divide="ignore", invalid="ignore"):
        amplification = np.where(local > 0, accumulated / np.where(local > 0, local, 1.0),
                                 np.nan)
        mean_local = local.mean(axis=1)
        run_accumulated = measured_end.max() - approximated.max(axis=1)
        run_amplification = np.where(mean_local > 0, run_accumulated
                                     / np.where(mean_local > 0, mean_local, 1.0), np.nan)

    def seconds(long_name):
        return {"units": "s", "long_name": long_name}

    data = {
        "local": (("source", "rank"), local, seconds("local noise of the rank")),
        "accumulated": (("source", "rank"), accumulated,
                        seconds("accumulated noise: measured − approximated end")),
        "amplification": (("source", "rank"), amplification,
                          {"units": "1", "long_name": "amplification ratio accumulated / "
                                                      "local"}),
        "approximated_end": (("source", "rank"), approximated,
                             seconds("end of the rank without the noise")),
        "measured_end": ("rank", measured_end, seconds("measured end of the rank")),
        "run_accumulated": ("source", run_accumulated,
                            seconds("measured makespan − approximated makespan")),
        "max_accumulated": ("source", accumulated.max(axis=1),
                            seconds("largest accumulated noise of a rank")),
        "mean_local": ("source", mean_local, seconds("mean local noise of a rank")),
        "max_local": ("source", local.max(axis=1), seconds("largest local noise of a rank")),
        "run_amplification": ("source", run_amplification,
                              {"units": "1", "long_name": "run accumulated / mean local"}),
        "makespan": ((), float(measured_end.max() - first_start),
                     seconds("measured makespan")),
    }
    coords = {"source": ("source", np.array(names)),
              "rank": ("rank", np.arange(offsets.size - 1))}
    trace_attrs = {f"trace_{key}": value for key, value in events.attrs.items()
                   if isinstance(value, str | int | float) and not isinstance(value, bool)}
    attrs = {"method": "timeline approximation (Nataraj et al., SC07, seed 003)",
             "latency": events.latency, "n_intervals": len(events), **trace_attrs,
             **provenance_attrs()}
    return xr.Dataset(data, coords=coords, attrs=attrs)


def against_simulation(trace, n: int, work: float, phases: int, barrier=None,
                       start="random", rng=None) -> dict:
    """The estimate of a simulated run against its true cost (seed 003's validation).

    Runs ``jl.simulate(trace, n, work, phases, start, barrier, rng, detail="events")``,
    estimates the accumulated noise of the run and compares it with the truth, the
    noisy makespan minus that of the same run on a trace without jitter. With a barrier
    model it also estimates from :meth:`~jitterlab.traces.events.EventTrace.opaque_collectives`,
    the trace a tracer that sees the barrier as one call would record.

    Parameters
    ----------
    trace : jitterlab.Trace
    n, work, phases, barrier, start, rng
        As for :func:`jitterlab.simulate` (``work`` [s]).

    Returns
    -------
    dict
        ``n``, ``work`` [s], ``phases``, ``barrier`` (its description), ``intervals``,
        ``makespan``, ``noiseless_makespan``, ``true_cost``, ``estimate`` [s], ``error``
        (estimate / true cost − 1) [-], and with a barrier model ``opaque_estimate`` [s]
        and ``opaque_error`` [-] (NaN without one).
    """
    from ..sim.simulate import simulate

    events = simulate(trace, n=n, work=work, phases=phases, start=start, barrier=barrier,
                      rng=rng, detail="events")

    def run_cost(trace):
        return float(accumulated_noise(trace, sources="combined")["run_accumulated"][0])

    truth = events.attrs["makespan"] - events.attrs["noiseless_makespan"]
    estimate = run_cost(events)
    opaque = run_cost(events.opaque_collectives()) if barrier is not None else math.nan
    return {"n": int(n), "work": float(work), "phases": int(phases),
            "barrier": events.attrs["barrier"], "intervals": len(events),
            "makespan": events.attrs["makespan"],
            "noiseless_makespan": events.attrs["noiseless_makespan"], "true_cost": truth,
            "estimate": estimate, "error": estimate / truth - 1.0 if truth > 0 else math.nan,
            "opaque_estimate": opaque,
            "opaque_error": opaque / truth - 1.0 if truth > 0 else math.nan}


def _whole_column(frame: pd.DataFrame, name: str) -> np.ndarray:
    """A column of whole numbers as int64, or a ValueError naming the first bad row."""
    values = pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(values) | (values != np.floor(values))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"interruption {i}: {name} must be a whole number, got "
                         f"{frame[name].iat[i]}")
    return values.astype(np.int64)


def split_noise(events: EventTrace, interruptions: pd.DataFrame, source: str = "source"
                ) -> EventTrace:
    """The event trace with its noise split by source, from the interruptions behind it.

    Parameters
    ----------
    events : EventTrace
        The run, with ``noise_combined`` (or the sum of its sources) per interval.
    interruptions : pandas.DataFrame
        One row per interruption: ``rank``, ``seq`` (the interval it fell in),
        ``duration`` [s] and the column named by ``source`` with its source's name
        (e.g. the labels of :func:`jitterlab.compare.characterize.label_events`, or "injected").
    source : str, default "source"
        The column of ``interruptions`` that names the source.

    Returns
    -------
    EventTrace
        The same intervals with ``noise_combined`` kept and one ``noise_<name>`` column
        per source (spaces become underscores), the sum of its interruptions' durations
        in each interval; the other noise columns are dropped.

    Raises
    ------
    ValueError
        If an interruption names an interval the trace does not have, a column is
        missing, or the sources of an interval add up to more or less than its
        combined noise (beyond rounding): the split must account for all of it.
    """
    missing = [c for c in ("rank", "seq", "duration", source) if c not in interruptions]
    if missing:
        raise ValueError(f"interruptions lack the columns {missing}")
    data = events.data
    offsets = events.rank_offsets()
    rank, seq = (_whole_column(interruptions, name) for name in ("rank", "seq"))
    durations = pd.to_numeric(interruptions["duration"], errors="coerce").to_numpy(dtype=float)
    bad_duration = ~np.isfinite(durations) | (durations < 0)
    if bad_duration.any():
        i = int(np.flatnonzero(bad_duration)[0])
        raise ValueError(f"interruption {i}: duration must be a finite number >= 0 [s], got "
                         f"{interruptions['duration'].iat[i]}")
    bad = (rank < 0) | (rank >= events.n_ranks)
    row = np.where(bad, 0, offsets[np.clip(rank, 0, events.n_ranks - 1)] + seq)
    bad |= (seq < 0) | (row >= offsets[np.clip(rank, 0, events.n_ranks - 1) + 1])
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"interruption {i} falls in rank {rank[i]}, interval seq {seq[i]}, "
                         f"which the event trace does not have")
    combined = events.noise("combined")
    originals = interruptions[source].astype(str)
    names = pd.Series(originals.str.replace(" ", "_").to_numpy())
    for name, group in pd.Series(originals.to_numpy()).groupby(names.to_numpy()):
        distinct = sorted(group.unique())
        if len(distinct) > 1:
            raise ValueError(f"the sources {distinct} would share the column noise_{name}: "
                             "rename one of them")
        if name == "combined":
            raise ValueError("a source may not be named 'combined': noise_combined is the "
                             "total of all sources")
    columns = {"noise_combined": combined}
    total = np.zeros(len(data))
    for name in sorted(names.unique()):
        chosen = (names == name).to_numpy()
        values = np.bincount(row[chosen], weights=durations[chosen],
                             minlength=len(data))
        columns[f"noise_{name}"] = values
        total += values
    scale = np.maximum(np.abs(data["start"].to_numpy()), np.abs(data["end"].to_numpy()))
    off = np.abs(total - combined) > 1e-9 * np.maximum(combined, 1e-12) + 64 * np.finfo(
        float).eps * scale
    if off.any():
        i = int(np.flatnonzero(off)[0])
        raise ValueError(f"rank {int(data['rank'].iat[i])}, interval seq "
                         f"{int(data['seq'].iat[i])}: its interruptions add up to "
                         f"{total[i]:.9g} s but its combined noise is {combined[i]:.9g} s")
    frame = data.drop(columns=[c for c in data.columns if c.startswith("noise_")])
    frame = frame.assign(**columns)
    return EventTrace(frame, latency=events.latency, file=events.file, **events.attrs)
