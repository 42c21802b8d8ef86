"""What each detour was: the join of a detour recording with the kernel events of its CPU.

A detour of the busy loop (:func:`jitterlab.measure.detour`) says *that* the CPU was taken away
and for how long; the kernel's trace events of the same CPU (recorded with
``jitterlab measure detour --kernel-events`` or :func:`jitterlab.measure.trace_instance`, read by
:func:`jitterlab.io.read_ftrace`) say *by what*. Nataraj et al. (seed 003, KTAU) attribute
noise to kernel activities from inside the kernel; Linux's osnoise tracer does the same for its
own loop. :func:`attribute_detours` does it for jitterlab's loop.

Both sides use the same clock: the loop reads the timestamp counter, and the tracefs instance
records with ``trace_clock`` ``x86-tsc`` (the same counter), so a detour ``[start, start +
length)`` and an event interval are compared in counter ticks, with no alignment.

From the events, the CPU's time is cut into segments, each belonging to the innermost kernel
activity running then:

========================  ===========  ====================================================
cause                     kind         events
========================  ===========  ====================================================
``timer interrupt``       timer        ``irq_vectors:local_timer_entry`` → ``_exit``
``irq:<name>``            irq          ``irq:irq_handler_entry`` (its ``name``) → ``_exit``;
                                       inter-processor interrupts and APIC vectors
                                       (``irq_vectors:reschedule_entry``, ...,
                                       :data:`VECTOR_CAUSES`)
``softirq:<action>``      softirq      ``irq:softirq_entry`` (``RCU``, ``TIMER``, ...) → ``_exit``
``hrtimer:<function>``    hrtimer      ``timer:hrtimer_expire_entry`` → ``_exit``
``thread:<comm>``         thread       ``sched:sched_switch`` away from the measured thread,
                                       until it is switched back in
``NMI``                   nmi          ``nmi:nmi_handler``, traced when the handler returns:
                                       the ``delta_ns`` before it
``page fault (user)``,    fault        ``exceptions:page_fault_user`` / ``_kernel``: no exit
``page fault (kernel)``                event, so no duration: a row of time 0 in each detour
                                       with faults, their number in ``attrs``
========================  ===========  ====================================================

Nested activities (the tick's hrtimer callback inside the timer interrupt, an interrupt
during a softirq or during another thread) count for the innermost one only, so the times of
a detour's causes never add up to more than the detour. The time of a detour that no guest
event covers is the row ``not visible to the guest`` (kind ``invisible``): on a virtual
machine, the host preempting the vCPU or handling a VM exit takes time the guest kernel never
sees; inside a detour that has guest events, it also holds the kernel's entry and exit paths
around the traced handlers (which no tracepoint brackets). It is never folded into a named
cause; ``attrs`` gives the evidence separately (steal time, detours without any guest event,
their time, rate and largest length).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..base.checks import check_integer, check_positive
from ..base.tables import check_holds

__all__ = ["attribute_detours", "attribute_recording", "injected_noise_recovery", "INVISIBLE",
           "KINDS", "COLUMNS", "VECTOR_CAUSES", "FAULT_CAUSES"]

#: the cause of detour time that no guest kernel event covers
INVISIBLE = "not visible to the guest"
#: the kinds of cause
KINDS = ("timer", "irq", "softirq", "hrtimer", "thread", "nmi", "fault", "invisible")
#: page-fault event -> its cause (counted per detour, without duration)
FAULT_CAUSES = {"page_fault_user": "page fault (user)",
                "page_fault_kernel": "page fault (kernel)"}
#: the columns of :func:`attribute_detours`
COLUMNS = ("detour", "start", "length", "cause", "kind", "time")

#: entry event -> (exit event, kind)
_PAIRS = {
    "local_timer_entry": ("local_timer_exit", "timer"),
    "irq_handler_entry": ("irq_handler_exit", "irq"),
    "softirq_entry": ("softirq_exit", "softirq"),
    "hrtimer_expire_entry": ("hrtimer_expire_exit", "hrtimer"),
    "nmi_entry": ("nmi_exit", "nmi"),  # made from nmi_handler and its delta (_nmi_intervals)
}
#: the other x86 interrupt vectors (``irq_vectors:*_entry`` and ``_exit``): inter-processor
#: interrupts and APIC events, kind "irq", named here
VECTOR_CAUSES = {
    "reschedule": "irq:reschedule IPI",
    "call_function": "irq:call function IPI",
    "call_function_single": "irq:call function single IPI",
    "irq_work": "irq:irq_work",
    "x86_platform_ipi": "irq:platform IPI",
    "thermal_apic": "irq:thermal APIC",
    "error_apic": "irq:error APIC",
    "spurious_apic": "irq:spurious APIC",
}
_PAIRS.update({f"{name}_entry": (f"{name}_exit", "irq") for name in VECTOR_CAUSES})
_EXITS = {exit_name: entry for entry, (exit_name, _) in _PAIRS.items()}
_REQUIRED_COLUMNS = ("ticks", "event")
_RELEVANT = frozenset(_PAIRS) | frozenset(_EXITS) | {"sched_switch"}
#: the event fields the join reads
_FIELDS = ("name", "irq", "action", "vec", "function", "hrtimer", "next_pid", "next_comm")


@dataclass(frozen=True)
class _Pieces:
    """The time [ticks] each cause took in each detour, one row per piece."""

    detours: np.ndarray  # index of the detour
    causes: np.ndarray  # index into names
    ticks: np.ndarray
    names: list[str]
    kinds: list[str]
    thread_pids: dict[str, list[int]]


def _label(event: str, fields: dict, kind: str) -> str:
    if kind == "timer":
        return "timer interrupt"
    if kind == "nmi":
        return "NMI"
    if event.endswith("_entry") and event[:-6] in VECTOR_CAUSES:
        return VECTOR_CAUSES[event[:-6]]
    if kind == "irq":
        return f"irq:{fields['name']}"
    if kind == "softirq":
        return f"softirq:{fields['action']}"
    return f"hrtimer:{fields['function']}"


def _key(event: str, fields: dict, kind: str):
    """What an exit event must match to close its entry (same irq, vector, timer)."""
    if kind == "irq" and event.startswith("irq_handler"):
        return fields["irq"]
    if kind == "softirq":
        return fields["vec"]
    if kind == "hrtimer":
        return fields["hrtimer"]
    return None


def _measured_pid(events: pd.DataFrame) -> int:
    """The task that ran longest (the busy loop, in practice), from the context switches;
    the task switched away from first ran since the first event."""
    switches = events[events["event"] == "sched_switch"]
    if switches.empty:
        raise ValueError("measured_pid is needed: the events hold no sched_switch from which "
                         "to find the measured thread")
    all_ticks = events["ticks"].to_numpy(dtype=np.int64)
    ticks = np.concatenate(([all_ticks[0]], switches["ticks"].to_numpy(dtype=np.int64),
                            [all_ticks[-1]]))
    running = np.concatenate((switches["prev_pid"].to_numpy(dtype=np.int64)[:1],
                              switches["next_pid"].to_numpy(dtype=np.int64)))
    spans = pd.Series(np.diff(ticks)).groupby(running).sum()
    return int(spans.idxmax())


def _home_detours(ticks: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                  slack: int) -> np.ndarray:
    """The detour each event lies in (-1: none): the first detour ending after it, if it
    starts at most ``slack`` ticks after the event."""
    home = np.searchsorted(ends, ticks, side="right")
    inside = home < ends.size
    inside[inside] = starts[home[inside]] - slack <= ticks[inside]
    return np.where(inside, home, -1)


def _pieces(events: pd.DataFrame, measured_pid: int, starts: np.ndarray, ends: np.ndarray,
            end: int, slack: int = 0) -> _Pieces:
    """Sweep the events in time order: the innermost open activity owns each stretch.

    Between two detours the loop ran, so no kernel activity and no other thread did: an
    activity belongs to the detour it began in (its *home*) and ends at the latest with
    it, even when its exit event or the context switch back to the loop is missing from
    the trace (the recordings of this machine hold no ``sched_switch`` away from the idle
    task, so a loop that blocked would otherwise seem to stay switched out). An activity that began
    outside every detour (between chunks, say) owns no detour time.
    """
    names: list[str] = []
    kinds: list[str] = []
    index: dict[str, int] = {}
    thread_pids: dict[str, list[int]] = {}

    def cause_id(name: str, kind: str) -> int:
        if name not in index:
            index[name] = len(names)
            names.append(name)
            kinds.append(kind)
        return index[name]

    out_detours: list[int] = []
    out_causes: list[int] = []
    out_ticks: list[int] = []
    start_list, end_list = starts.tolist(), ends.tolist()
    # open activities, innermost last: [entry event, key, cause id, home detour]
    stack: list[list] = []
    thread: list | None = None  # [cause id, home detour] of the thread run instead of the loop
    previous = 0

    def close(now: int) -> None:
        nonlocal previous, thread
        while stack or thread is not None:
            owner = stack[-1] if stack else thread
            home = owner[-1]
            if home < 0:
                stop = previous
            else:
                stop = min(now, end_list[home])
                first = max(previous, start_list[home])
                if stop > first:
                    out_detours.append(home)
                    out_causes.append(owner[-2])
                    out_ticks.append(stop - first)
            if home >= 0 and end_list[home] > now:
                break
            if stack:  # its detour is over: the loop ran again, so it had ended
                stack.pop()
            else:
                thread = None
            previous = max(previous, stop)
        previous = now

    relevant = events[events["event"].isin(_RELEVANT)]
    ticks = relevant["ticks"].to_numpy(dtype=np.int64)
    homes = _home_detours(ticks, starts, ends, slack).tolist()
    fields = [column for column in _FIELDS if column in relevant.columns]
    values = [relevant[column].tolist() for column in fields]
    for position, (now, name) in enumerate(zip(ticks.tolist(), relevant["event"].tolist(),
                                               strict=True)):
        if position == 0:
            previous = now
        close(now)
        row = {column: value[position] for column, value in zip(fields, values, strict=True)}
        if name in _PAIRS:
            kind = _PAIRS[name][1]
            stack.append([name, _key(name, row, kind), cause_id(_label(name, row, kind), kind),
                          homes[position]])
        elif name in _EXITS:
            entry = _EXITS[name]
            key = _key(name, row, _PAIRS[entry][1])
            for level in range(len(stack) - 1, -1, -1):  # innermost matching entry
                if stack[level][0] == entry and stack[level][1] == key:
                    del stack[level:]  # anything opened inside it ended unseen
                    break
        elif int(row["next_pid"]) == measured_pid:
            thread = None
        else:
            comm = str(row["next_comm"])
            thread = [cause_id(f"thread:{comm}", "thread"), homes[position]]
            pids = thread_pids.setdefault(comm, [])
            if int(row["next_pid"]) not in pids:
                pids.append(int(row["next_pid"]))
    if len(relevant):
        close(max(end, previous))
    return _Pieces(np.asarray(out_detours, dtype=np.int64),
                   np.asarray(out_causes, dtype=np.int64),
                   np.asarray(out_ticks, dtype=np.int64), names, kinds, thread_pids)


def _check_events(events: pd.DataFrame) -> pd.DataFrame:
    check_holds(events, pd.DataFrame, "columns", _REQUIRED_COLUMNS,
                "events must be the DataFrame of jitterlab.io.read_ftrace, got {type}",
                "events lack the column(s) {missing} of jitterlab.io.read_ftrace")
    if events["ticks"].isna().any():
        raise ValueError("events have no counter timestamps ('ticks'): the join needs a "
                         "recording with trace_clock x86-tsc (or events mapped to the "
                         "timestamp counter)")
    cpus = events["cpu"].unique() if "cpu" in events.columns else []
    if len(cpus) > 1:
        raise ValueError(f"events of several CPUs ({sorted(int(c) for c in cpus)}): give "
                         "those of the measured CPU only")
    ticks = events["ticks"].to_numpy(dtype=np.int64)
    order = np.argsort(ticks, kind="stable")
    return events.iloc[order].reset_index(drop=True)


def _nmi_intervals(events: pd.DataFrame, tsc_hz: float) -> pd.DataFrame:
    """The events with each ``nmi_handler`` (traced when the handler returns, with the time
    it took in ``delta`` [s]) replaced by an ``nmi_entry`` that long before and an
    ``nmi_exit`` at its timestamp, in time order."""
    handlers = events["event"] == "nmi_handler"
    if not handlers.any():
        return events
    ticks = events.loc[handlers, "ticks"].to_numpy(dtype=np.int64)
    took = np.rint(np.clip(events.loc[handlers, "delta"].to_numpy(dtype=np.float64), 0, None)
                   * tsc_hz).astype(np.int64)
    intervals = pd.DataFrame({"ticks": np.concatenate((ticks - took, ticks)),
                              "event": ["nmi_entry"] * ticks.size + ["nmi_exit"] * ticks.size})
    merged = pd.concat([events[~handlers], intervals], ignore_index=True)
    order = np.argsort(merged["ticks"].to_numpy(dtype=np.int64), kind="stable")
    return merged.iloc[order].reset_index(drop=True)


def _fault_counts(events: pd.DataFrame, starts: np.ndarray, ends: np.ndarray,
                  slack: int) -> pd.DataFrame:
    """Page faults per (detour, fault event) for the faults inside a detour."""
    faults = events[events["event"].isin(FAULT_CAUSES)]
    homes = _home_detours(faults["ticks"].to_numpy(dtype=np.int64), starts, ends, slack)
    counts = pd.DataFrame({"detour": homes, "event": faults["event"].to_numpy()})
    return counts.groupby(["detour", "event"]).size().rename("faults").reset_index()


def _check_detours(detour_starts, detour_lengths) -> tuple[np.ndarray, np.ndarray]:
    starts = np.asarray(detour_starts)
    lengths = np.asarray(detour_lengths)
    if starts.ndim != 1 or starts.shape != lengths.shape:
        raise ValueError(f"detour starts and lengths must be 1-D of one length, got shapes "
                         f"{starts.shape} and {lengths.shape}")
    if not (np.issubdtype(starts.dtype, np.integer) and np.issubdtype(lengths.dtype,
                                                                       np.integer)):
        raise TypeError("detour starts and lengths must be integer counter ticks")
    starts, lengths = starts.astype(np.int64), lengths.astype(np.int64)
    if np.any(lengths <= 0):
        raise ValueError(f"detour lengths must be > 0 ticks; detour "
                         f"{int(np.flatnonzero(lengths <= 0)[0])} has "
                         f"{int(lengths[lengths <= 0][0])}")
    if np.any(starts[1:] < starts[:-1] + lengths[:-1]):
        bad = int(np.flatnonzero(starts[1:] < starts[:-1] + lengths[:-1])[0])
        raise ValueError(f"detours must be in time order and not overlap: detour {bad + 1} "
                         f"starts before detour {bad} ends")
    return starts, lengths


def attribute_detours(detour_starts, detour_lengths, events: pd.DataFrame, *, tsc_hz: float,
                      measured_pid: int | None = None, origin: int | None = None,
                      end: int | None = None, cpu: int | None = None,
                      clock: str = "x86-tsc", lost_events: int | None = None,
                      steal_time: float | None = None, slack: int = 0) -> pd.DataFrame:
    """The causes of every detour, with the time each took inside it.

    Parameters
    ----------
    detour_starts, detour_lengths : array of int
        Absolute timestamp-counter value at which each detour starts and its length
        (:func:`jitterlab.measure.detour_table`, columns ``tsc_start`` and ``tsc_length``),
        in time order. [ticks]
    events : pandas.DataFrame
        Kernel events of the measured CPU from :func:`jitterlab.io.read_ftrace`, recorded
        with a counter clock (``ticks`` set): timer interrupts, device interrupts,
        softirqs, hrtimer callbacks and context switches (the default events of
        :data:`jitterlab.measure.tracefs.NOISE_EVENTS`); others are ignored.
    tsc_hz : float
        Rate of the counter. [Hz]
    measured_pid : int, optional
        Thread id of the busy loop; time when another thread runs is preemption. Default:
        the task that ran longest between context switches.
    origin : int, optional
        Counter value of the recording's start (``start`` is measured from it). Default:
        the first detour's start. [ticks]
    end : int, optional
        Counter value of the recording's end; an activity still open at the end of the
        events is closed there. Default: the end of the last detour or the last event,
        whichever is later. [ticks]
    cpu, clock, lost_events, steal_time
        Recorded in ``attrs`` as given (``steal_time`` [s]: the CPU's steal time over the
        recording from ``/proc/stat``, None when unknown).
    slack : int, default 0
        How far before a detour's start an activity may begin and still belong to it: 0
        for the counter clock (the loop read the counter at the start, so nothing else ran
        then); the error of the mapping for another trace clock. An activity belongs to
        the detour it began in and ends with it at the latest (the loop ran again after
        it), also when its exit event or the switch back to the loop is missing. [ticks]

    Returns
    -------
    pandas.DataFrame
        One row per (detour, cause), detours in order, causes by decreasing time:
        ``detour`` (int, index of the detour), ``start`` [s] since ``origin``,
        ``length`` [s] of the detour, ``cause`` (``"timer interrupt"``, ``"irq:<name>"``,
        ``"softirq:<action>"``, ``"thread:<comm>"``, ``"hrtimer:<function>"``, ``"NMI"``,
        ``"page fault (user)"``, ``"page fault (kernel)"`` or :data:`INVISIBLE`), ``kind``
        (one of :data:`KINDS`) and ``time`` [s] of that cause inside the detour; the
        invisible row holds the detour's time that no guest event covers and is absent
        when events cover it all. Page faults have no exit event: their rows (kind
        ``fault``) have time 0 and mark the detours with faults (a fault's time stays in
        the cause it happened in, or in the invisible time). ``attrs``: ``duration`` [s]
        (``origin`` to ``end``),
        ``cpu``, ``clock``, ``lost_events``, ``steal_time`` [s], ``tsc_hz``,
        ``measured_pid``, ``n_detours``, ``detour_time`` [s], ``thread_pids`` (comm → thread
        ids), and the evidence on invisible time: ``detours_without_guest_event``, their
        ``time_without_guest_event`` [s], ``rate_without_guest_event`` [1/s],
        ``largest_without_guest_event`` [s], and ``uncovered_in_guest_detours`` [s] (the
        invisible time inside detours that do have guest events; a page fault counts as a
        guest event), ``nmis`` (``nmi_handler`` events), ``page_faults`` (per fault cause:
        ``in_detours`` and ``outside`` them) and ``page_faults_per_detour`` (detour →
        number of faults in it).

    Raises
    ------
    ValueError
        Events without counter timestamps or of several CPUs, detours out of order or
        overlapping, non-positive lengths, a bad ``tsc_hz``.

    Examples
    --------
    >>> from jitterlab.io import read_ftrace
    >>> events = read_ftrace('''# tracer: nop
    ...  loop-7 [001] d.h.. 1000: local_timer_entry: vector=236
    ...  loop-7 [001] d.h.. 1400: local_timer_exit: vector=236
    ... ''')
    >>> table = attribute_detours([900], [1000], events, tsc_hz=1e9, measured_pid=7)
    >>> print(table[["detour", "cause", "time"]].to_string(index=False))
     detour                    cause         time
          0 not visible to the guest 6.000000e-07
          0          timer interrupt 4.000000e-07
    """
    tsc_hz = check_positive("tsc_hz", tsc_hz)
    slack = check_integer("slack", slack)
    starts, lengths = _check_detours(detour_starts, detour_lengths)
    events = _check_events(events)
    ends = starts + lengths
    last_event = int(events["ticks"].iloc[-1]) if len(events) else None
    if end is None:
        candidates = [int(ends[-1])] if ends.size else []
        end = max(candidates + ([last_event] if last_event is not None else []), default=0)
    if origin is None:
        origin = int(starts[0]) if starts.size else (int(events["ticks"].iloc[0])
                                                     if len(events) else 0)
    if measured_pid is None:
        measured_pid = _measured_pid(events)
    faults = _fault_counts(events, starts, ends, slack)
    timeline = _pieces(_nmi_intervals(events, tsc_hz), int(measured_pid), starts, ends,
                       int(end), slack)
    named = pd.DataFrame({"detour": timeline.detours, "cause_id": timeline.causes,
                          "ticks": timeline.ticks})
    named = named.groupby(["detour", "cause_id"], as_index=False, sort=False)["ticks"].sum()
    covered = np.bincount(named["detour"], weights=named["ticks"], minlength=starts.size)
    covered = covered.astype(np.int64)
    uncovered = lengths - covered
    fault_names = list(FAULT_CAUSES)
    inside = faults[faults["detour"] >= 0]
    counted = pd.DataFrame({"detour": inside["detour"].to_numpy(dtype=np.int64),
                            "cause_id": len(timeline.names) + np.array(
                                [fault_names.index(event) for event in inside["event"]],
                                dtype=np.int64),
                            "ticks": 0})
    invisible_id = len(timeline.names) + len(fault_names)
    names = np.array(timeline.names + list(FAULT_CAUSES.values()) + [INVISIBLE], dtype=object)
    kinds = np.array(timeline.kinds + ["fault"] * len(fault_names) + ["invisible"],
                     dtype=object)
    has_rest = uncovered > 0
    rest = pd.DataFrame({"detour": np.flatnonzero(has_rest), "cause_id": invisible_id,
                         "ticks": uncovered[has_rest]})
    rows = pd.concat([named, counted, rest], ignore_index=True)
    rows = rows.sort_values(["detour", "ticks"], ascending=[True, False], kind="stable")
    index = rows["detour"].to_numpy(dtype=np.int64)
    table = pd.DataFrame({
        "detour": index,
        "start": (starts[index] - origin) / tsc_hz,
        "length": lengths[index] / tsc_hz,
        "cause": names[rows["cause_id"].to_numpy()],
        "kind": kinds[rows["cause_id"].to_numpy()],
        "time": rows["ticks"].to_numpy(dtype=np.float64) / tsc_hz,
    })
    table["cause"] = table["cause"].astype(str)
    table["kind"] = table["kind"].astype(str)

    without = covered == 0
    without[inside["detour"].to_numpy(dtype=np.int64)] = False  # a page fault is a guest event
    duration = (end - origin) / tsc_hz
    table.attrs.update(
        duration=duration, cpu=cpu, clock=clock, lost_events=lost_events,
        steal_time=steal_time, tsc_hz=float(tsc_hz), measured_pid=int(measured_pid),
        n_detours=int(starts.size), detour_time=float(lengths.sum() / tsc_hz),
        thread_pids=timeline.thread_pids,
        detours_without_guest_event=int(without.sum()),
        time_without_guest_event=float(lengths[without].sum() / tsc_hz),
        rate_without_guest_event=(float(without.sum() / duration) if duration > 0
                                  else math.nan),
        largest_without_guest_event=(float(lengths[without].max() / tsc_hz)
                                     if without.any() else 0.0),
        uncovered_in_guest_detours=float(uncovered[~without].sum() / tsc_hz),
        nmis=int((events["event"] == "nmi_handler").sum()),
        page_faults={FAULT_CAUSES[event]: {
            "in_detours": int(inside.loc[inside["event"] == event, "faults"].sum()),
            "outside": int(faults.loc[(faults["event"] == event) & (faults["detour"] < 0),
                                      "faults"].sum())} for event in FAULT_CAUSES},
        page_faults_per_detour={int(detour): int(count) for detour, count
                                in inside.groupby("detour")["faults"].sum().items()},
    )
    return table


def attribute_recording(path) -> pd.DataFrame:
    """The causes of every detour of a run recorded with kernel events.

    Parameters
    ----------
    path : path-like
        The chunk store of ``jitterlab measure detour --kernel-events`` or of
        :func:`jitterlab.measure.detour` with ``kernel_events=True`` (also an interrupted or
        killed run: every stored chunk is used).

    Returns
    -------
    pandas.DataFrame
        As :func:`attribute_detours`, with ``start`` measured from the run's first counter
        read, ``duration`` from there to its last, the measured thread, CPU, trace clock,
        lost events and steal time of the recording, and ``source`` (the store's name).
    """
    from ..measure.detour import detour_table, read_kernel_events

    detours = detour_table(path)
    events = read_kernel_events(path)
    events = events[events["cpu"] == detours.attrs["cpu"]].reset_index(drop=True)
    table = attribute_detours(
        detours["tsc_start"].to_numpy(), detours["tsc_length"].to_numpy(), events,
        tsc_hz=detours.attrs["tsc_hz"], measured_pid=detours.attrs["measured_tid"],
        origin=detours.attrs["tsc_origin"], end=detours.attrs["tsc_end"],
        cpu=detours.attrs["cpu"], clock=events.attrs["clock"],
        lost_events=events.attrs["lost_events"], steal_time=events.attrs["steal_time"],
        slack=math.ceil(events.attrs.get("clock_residual_max_ticks", 0)))
    table.attrs.update(source=events.attrs["source"],
                       measured_duration=float(sum(last - first for first, last
                                                   in detours.attrs["spans"])
                                               / detours.attrs["tsc_hz"]))
    return table




def injected_noise_recovery(attribution: pd.DataFrame, injected_starts, injected_ends,
                            cause: str, *, spans=None, companion: str | None = None) -> dict:
    """How much of a known injected noise the attribution gives to its cause.

    Parameters
    ----------
    attribution : pandas.DataFrame
        The result of :func:`attribute_detours` or :func:`attribute_recording`.
    injected_starts, injected_ends : array of float
        The injected intervals (the spins of ``data/dutyhog.c``, say), in seconds since the
        recording's start (the time base of ``attribution["start"]``). [s]
    cause : str
        The cause the injection should be attributed to (``"thread:dutyhog"``).
    spans : array of shape (k, 2), optional
        The measured intervals [s since the start]; injected time outside them (between
        chunks) is not counted. Default: all of it counts.
    companion : str, optional
        A cause expected in the same detour as each injection (``"hrtimer:hrtimer_wakeup"``
        for a thread woken by an hrtimer): the share of injected detours that have it.

    Returns
    -------
    dict
        ``injected`` [s] (inside the measured spans), ``attributed`` [s] (the cause's time in
        the detours holding an injection), ``ratio`` = attributed / injected,
        ``standard_error`` of the ratio (ratio estimator over the injected detours, each
        detour with its injections one sample), ``injections``, ``detours`` (holding one),
        ``elsewhere`` [s] (the cause's time in detours without an injection),
        ``other_causes`` [s] (the rest of the injected detours' time, by cause), and with
        ``companion``: ``companion_share`` and its binomial ``companion_standard_error``.
    """
    starts = np.asarray(injected_starts, dtype=np.float64)
    ends = np.asarray(injected_ends, dtype=np.float64)
    if starts.shape != ends.shape or starts.ndim != 1 or np.any(ends < starts):
        raise ValueError("injected starts and ends must be 1-D of one length, ends >= starts")
    if spans is not None:
        spans = np.asarray(spans, dtype=np.float64).reshape(-1, 2)
        inside = np.clip(np.minimum(ends[:, None], spans[:, 1])
                         - np.maximum(starts[:, None], spans[:, 0]), 0, None).sum(axis=1)
    else:
        inside = ends - starts
    detours = attribution.drop_duplicates("detour")
    detour_starts = detours["start"].to_numpy()
    detour_ends = detour_starts + detours["length"].to_numpy()
    middle = (starts + ends) / 2
    position = np.searchsorted(detour_starts, middle, side="right") - 1
    found = (position >= 0) & (middle < detour_ends[np.clip(position, 0, None)])
    holding = detours["detour"].to_numpy()[position[found]]
    injected = pd.Series(inside[found]).groupby(holding).sum()
    missed = float(inside[~found].sum())  # injected time where the loop saw no detour
    rows = attribution[attribution["detour"].isin(injected.index)]
    by_detour = (rows[rows["cause"] == cause].groupby("detour")["time"].sum()
                 .reindex(injected.index, fill_value=0.0))
    total_injected = float(injected.sum()) + missed
    attributed = float(by_detour.sum())
    ratio = attributed / total_injected if total_injected > 0 else math.nan
    n = injected.size
    residual = by_detour.to_numpy() - ratio * injected.to_numpy()
    standard_error = (math.sqrt(n / (n - 1) * np.sum(residual ** 2)) / total_injected
                      if n > 1 else math.nan)
    others = rows[rows["cause"] != cause].groupby("cause")["time"].sum()
    result = {"injected": total_injected, "attributed": attributed, "ratio": ratio,
              "standard_error": standard_error, "injections": int(starts.size),
              "detours": int(n), "missed": missed,
              "elsewhere": float(attribution.loc[~attribution["detour"].isin(injected.index)
                                                 & (attribution["cause"] == cause),
                                                 "time"].sum()),
              "other_causes": others.sort_values(ascending=False).to_dict()}
    if companion is not None:
        with_companion = rows.loc[rows["cause"] == companion, "detour"].nunique()
        share = with_companion / n if n else math.nan
        result["companion_share"] = share
        result["companion_standard_error"] = (math.sqrt(share * (1 - share) / n) if n
                                              else math.nan)
    return result
