"""Per-task timelines of a few phases of a simulation (jitSim Fig. 2-6).

:func:`timeline_segments` replays a few tasks of a trace-driven run (with or without a
tree barrier) into segments of compute, wait, message and jitter time, and
:func:`plot_timeline` draws them, one row per task.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .scaling import axes_or_new

__all__ = ["timeline_segments", "plot_timeline", "TIMELINE_KINDS", "MAX_TIMELINE_TASKS",
           "MAX_TIMELINE_PHASES"]

# --------------------------------------------------------------------------------------
# per-task timelines of a few phases (jitSim Fig. 2-6)
# --------------------------------------------------------------------------------------
#: the kinds of segment in a timeline, in drawing order, with their legend text
TIMELINE_KINDS = {
    "compute": "compute",
    "jitter": "jitter met (adds to the task's time)",
    "wait": "waiting at the barrier",
    "absorbed": "jitter while waiting (absorbed)",
    "recv": "receive (CPU, on the trace)",
    "send": "send (CPU, on the trace)",
}


_STYLE = {
    "compute": {"facecolor": "#4c72b0", "edgecolor": "white", "linewidth": 0.5},
    "jitter": {"facecolor": "#d62728", "edgecolor": "#7f0000", "hatch": "////",
               "linewidth": 0.5},
    "wait": {"facecolor": "#d9d9d9", "edgecolor": "#a0a0a0", "linewidth": 0.5},
    "absorbed": {"facecolor": "#f4b6b6", "edgecolor": "#a0a0a0", "hatch": "....",
                 "linewidth": 0.5},
    "recv": {"facecolor": "#55a868", "edgecolor": "white", "linewidth": 0.5},
    "send": {"facecolor": "#dd8452", "edgecolor": "white", "linewidth": 0.5},
}


#: jitter is drawn last, on top of the compute, send or receive it falls in
_DRAWING_ORDER = ("compute", "wait", "recv", "send", "jitter", "absorbed")


#: limits of :func:`timeline_segments`: a timeline is a picture of a few tasks
MAX_TIMELINE_TASKS = 64


MAX_TIMELINE_PHASES = 20


def _split_trace_at(jitter, gap, times):
    """Rows of an equivalent trace in which a task can start at each of ``times``.

    A task that starts at row s begins computing at the start of gap s. For a time
    inside a jitter the row is cut so that a zero-gap row ends there (the task then meets
    the rest of the jitter); for a time inside a gap the gap is cut and the task starts
    at the zero-jitter row that follows. The timeline is unchanged. Returns
    ``(jitter, gap, rows)``.
    """
    starts = np.concatenate([[0.0], np.cumsum(jitter + gap)])
    owner = np.clip(np.searchsorted(starts, times, "right") - 1, 0, jitter.size - 1)
    new_jitter, new_gap, rows = [], [], np.empty(times.size, dtype=np.int64)
    for i in range(jitter.size):
        cuts = np.unique(times[owner == i])
        rest_jitter, rest_gap, base = float(jitter[i]), float(gap[i]), float(starts[i])
        for cut in cuts:
            into = cut - base
            if into <= rest_jitter:  # inside the jitter: a row of `into` jitter, no gap
                new_jitter.append(into)
                new_gap.append(0.0)
                rows[times == cut] = len(new_jitter) - 1
                rest_jitter -= into
            else:  # inside the gap: the task starts at the zero-jitter row that follows
                new_jitter.append(rest_jitter)
                new_gap.append(into - rest_jitter)
                rows[times == cut] = len(new_jitter)
                rest_gap -= into - rest_jitter
                rest_jitter = 0.0
            base = cut
        new_jitter.append(rest_jitter)
        new_gap.append(max(rest_gap, 0.0))
    return np.array(new_jitter), np.array(new_gap), rows


def _jitter_between(row_starts, jitter, period, a, b):
    """Jitter intervals of the (cyclic) trace that overlap (a, b), clipped to it."""
    out = []
    if b <= a:
        return out
    # slivers from the rounding of the running sums (e.g. after _split_trace_at) are not
    # jitter: a jitter that begins exactly when the work is done is not met
    tolerance = 1e-12 * max(period, abs(a), abs(b))
    for cycle in range(math.floor(a / period), math.floor(b / period) + 1):
        begin = cycle * period + row_starts[:-1]
        end = begin + jitter
        for s, e in zip(begin[(end > a) & (begin < b)], end[(end > a) & (begin < b)],
                        strict=True):
            s, e = max(s, a), min(e, b)
            if e - s > tolerance:
                out.append((s, e))
    return out


def _hop(barrier, child: int, parent: int) -> float:
    size = barrier.cores_per_node
    if size and child // size == parent // size and barrier.intra_node_latency is not None:
        return barrier.intra_node_latency
    return barrier.latency


def _replay_tree(jitter, gap, offsets, work, phases, barrier):
    """Every operation of every task under a TreeBarrier, walked event by event.

    Mirrors the kernel of :func:`jitterlab.simulate` (reduce: receive from the children
    in order of arrival, then send to the parent; broadcast: receive from the parent,
    then send to the children in index order) one operation at a time, with the
    kernel's own step through the trace, so that exact ties (a jitter that begins just
    when an operation ends) are decided as in the simulation. Returns the operations as
    tuples (task, phase, kind, start, end, peer) and the compute and end times (phase,
    task).
    """
    from ..sim import replay_kernels as _simkernels

    n, k = offsets.size, barrier.fanout
    table = _simkernels.trace_table(np.ascontiguousarray(jitter, dtype=float),
                                    np.ascontiguousarray(gap, dtype=float))

    def run(task, t, cpu):
        return _simkernels.advance(table, offsets[task] + t, cpu, 0, 0)[0] - offsets[task]

    ops, compute, ends = [], np.zeros((phases, n)), np.zeros((phases, n))

    def receive(task, phase, now, sender, sent, arrival):
        """The message from ``sender`` (sent at ``sent``, arriving at ``arrival``), the
        wait for it and its receive by ``task``, free from ``now``; returns the end."""
        ops.append((sender, phase, "message", sent, arrival, task))
        start = max(now, arrival)
        if start > now:
            ops.append((task, phase, "wait", now, start, sender))
        end = run(task, start, barrier.recv)
        ops.append((task, phase, "recv", start, end, sender))
        return end

    begin = np.zeros(n)
    for phase in range(phases):
        ready, sent_up, sent_down = np.zeros(n), np.zeros(n), np.zeros(n)
        for task in reversed(range(n)):
            now = run(task, begin[task], work)
            compute[phase, task] = now - begin[task]
            ops.append((task, phase, "compute", begin[task], now, -1))
            children = [c for c in range(k * task + 1, k * task + k + 1) if c < n]
            for arrival, child in sorted((sent_up[c] + _hop(barrier, c, task), c)
                                         for c in children):
                now = receive(task, phase, now, child, sent_up[child], arrival)
            if task > 0:
                start = now
                now = run(task, start, barrier.send)
                ops.append((task, phase, "send", start, now, (task - 1) // k))
                sent_up[task] = now
            ready[task] = now
        for task in range(n):
            now = ready[task]
            if task > 0:
                parent = (task - 1) // k
                now = receive(task, phase, now, parent, sent_down[task],
                              sent_down[task] + _hop(barrier, task, parent))
            for child in range(k * task + 1, min(k * task + k + 1, n)):
                start = now
                now = run(task, start, barrier.send)
                ops.append((task, phase, "send", start, now, child))
                sent_down[child] = now
            ends[phase, task] = now
        begin = ends[phase].copy()
    return ops, compute, ends


def timeline_segments(trace, starts, work: float, barrier=None, phases: int = 1
                      ) -> pd.DataFrame:
    """What each task does, and when, in the first phases of a trace-driven simulation.

    The numbers come from :func:`jitterlab.simulate` (``detail=True``); this function adds
    where the jitter falls: it walks the trace over each task's compute (and, with a
    :class:`~jitterlab.TreeBarrier`, over each send and receive). Meant for pictures of a
    few tasks (at most 64 tasks and 20 phases).

    Parameters
    ----------
    trace : jitterlab.Trace
        The jitter trace; it wraps around.
    starts : sequence of int or sequence of float
        One per task: trace rows (integers; the task begins computing at the start of
        that row's gap, as ``simulate(start=rows)``) or times in the trace (floats, taken
        modulo ``trace.duration``; a time inside a jitter first waits out its
        remainder). [s]
    work : float
        Compute per task and phase w. [s]
    barrier : jitterlab.TreeBarrier, optional
        None: every task waits for the slowest; otherwise a reduce and a broadcast on a
        tree whose sends and receives are drawn too.
    phases : int
        Number of phases. [-]

    Returns
    -------
    pandas.DataFrame
        One row per segment: ``task`` (0-based), ``phase``, ``kind``, ``start`` and ``end``
        (time since the start of phase 1) [s], ``peer`` (the other task of a send,
        receive, message or wait for a message; −1 otherwise) and ``during`` (for a
        jitter, the kind of segment it falls in; "" otherwise). Kinds: ``compute`` (the
        compute of a phase, jitter included), ``jitter`` (a jitter met inside a compute,
        send or receive), ``wait`` (idle at the barrier), ``absorbed`` (a jitter that
        falls in a wait), ``recv``, ``send`` and ``message`` (from the end of a send on
        task ``task`` to its arrival at task ``peer``, one hop latency later). The
        DataFrame's ``attrs`` hold ``phase_end`` (the end of each phase [s]), ``offsets``
        (where each task starts in the trace [s]) and the simulation result
        (``simulation``, an xarray Dataset).

    Raises
    ------
    ValueError
        For invalid starts or too many tasks or phases.
    RuntimeError
        If the event walk disagrees with :func:`jitterlab.simulate` (a bug).

    References
    ----------
    .. [1] P. De, V. Mann, "jitSim", Euro-Par 2010 workshops (seed 000), Fig. 2–6.

    Examples
    --------
    jitSim's Fig. 2, with the trace counted in cycles used as the time unit:

    >>> import jitterlab as jl
    >>> trace = jl.Trace(jitter=[10, 5, 25, 5, 15, 20, 10, 60, 5, 10],
    ...                  gap=[50, 30, 20, 10, 100, 300, 20, 60, 20, 70])
    >>> segments = timeline_segments(trace, starts=[0, 6], work=100)
    >>> segments[segments.kind == "compute"].end.tolist()
    [130.0, 165.0]
    """
    from ..sim.barriers import TreeBarrier
    from ..sim.simulate import simulate

    jitter = np.asarray(trace.jitter_seconds, dtype=float)
    gap = np.asarray(trace.gap_seconds, dtype=float)
    row_starts = np.concatenate([[0.0], np.cumsum(jitter + gap)])
    period = float(row_starts[-1])
    starts = np.asarray(starts)
    if starts.ndim != 1 or starts.size == 0:
        raise ValueError("starts must be a non-empty sequence, one trace row or time per task")
    n_tasks = starts.size
    phases = int(phases)
    if n_tasks > MAX_TIMELINE_TASKS or not 1 <= phases <= MAX_TIMELINE_PHASES:
        raise ValueError(f"a timeline shows at most {MAX_TIMELINE_TASKS} tasks and "
                         f"1 to {MAX_TIMELINE_PHASES} phases, got {n_tasks} tasks and "
                         f"{phases} phases")
    if barrier is not None and not isinstance(barrier, TreeBarrier):
        raise ValueError(f"barrier must be None or a TreeBarrier, got "
                         f"{type(barrier).__name__}")
    if np.issubdtype(starts.dtype, np.integer):
        if starts.min() < 0 or starts.max() >= jitter.size:
            raise ValueError(f"start rows must lie in [0, {jitter.size - 1}]")
        offsets = row_starts[starts] + jitter[starts]
        sim_trace, rows = trace, starts.astype(np.int64)
        sim_jitter, sim_gap = jitter, gap
    elif np.issubdtype(starts.dtype, np.floating):
        if not np.all(np.isfinite(starts)):
            raise ValueError("start times must be finite [s]")
        offsets = np.mod(starts.astype(float), period)  # the trace is cyclic
        offsets[offsets >= period] = 0.0
        sim_jitter, sim_gap, rows = _split_trace_at(jitter, gap, offsets)
        from ..traces.trace import Trace

        sim_trace = Trace(sim_jitter, sim_gap)
    else:
        raise ValueError(f"starts must be integers (trace rows) or floats (times), got "
                         f"dtype {starts.dtype}")
    ds = simulate(sim_trace, n=n_tasks, work=work, phases=phases, start=rows,
                  barrier=barrier, detail=True)
    compute = ds["compute_time"].values
    wait = ds["wait_time"].values
    ends = np.cumsum(compute + wait, axis=0)
    begins = ends - compute - wait

    if barrier is None:
        ops = []
        for phase in range(phases):
            for task in range(n_tasks):
                b, c = begins[phase, task], begins[phase, task] + compute[phase, task]
                ops.append((task, phase, "compute", b, c, -1))
                if ends[phase, task] > c:
                    ops.append((task, phase, "wait", c, ends[phase, task], -1))
    else:
        ops, replay_compute, replay_ends = _replay_tree(sim_jitter, sim_gap,
                                                        offsets, float(work), phases,
                                                        barrier)
        scale = max(float(ends.max()), period)
        if not (np.allclose(replay_compute, compute, rtol=1e-9, atol=1e-12 * scale)
                and np.allclose(replay_ends, ends, rtol=1e-9, atol=1e-12 * scale)):
            raise RuntimeError("the event walk of the tree barrier disagrees with "
                               "jitterlab.simulate; please report this as a bug")

    rows_out = []
    for task, phase, kind, start, end, peer in ops:
        if kind != "message" and end <= start and kind != "compute":
            continue
        rows_out.append((task, phase, kind, start, end, peer, ""))
        if kind in ("compute", "recv", "send", "wait"):
            met = "absorbed" if kind == "wait" else "jitter"
            origin = offsets[task]
            for s, e in _jitter_between(row_starts, jitter, period, origin + start,
                                        origin + end):
                rows_out.append((task, phase, met, s - origin, e - origin, -1, kind))
    table = pd.DataFrame(rows_out, columns=["task", "phase", "kind", "start", "end", "peer",
                                            "during"])
    table = table.sort_values(["phase", "task", "start", "kind"], kind="stable",
                              ignore_index=True)
    table.attrs = {"phase_end": ends.max(axis=1), "offsets": offsets, "simulation": ds}
    return table


def plot_timeline(trace, starts, work: float, ax=None, barrier=None, phases: int = 1,
                  labels=None, unit_scale: float = 1.0, unit_label: str = "s",
                  annotate: bool = True, messages: bool = True, legend: bool = True):
    """Draw one lane per task: compute, the jitter it meets, and the barrier.

    Parameters
    ----------
    trace : jitterlab.Trace
        The jitter trace; it wraps around.
    starts : sequence of int or sequence of float
        One per task: trace rows (integers) or times in the trace (floats) [s]; see
        :func:`timeline_segments`.
    work : float
        Compute per task and phase w. [s]
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure when omitted.
    barrier : jitterlab.TreeBarrier, optional
        None: every task waits for the slowest (jitSim Fig. 3); a TreeBarrier adds its
        sends, receives and messages (Fig. 6).
    phases : int
        Number of phases drawn. [-]
    labels : sequence of str, optional
        Lane labels; default "task 1", "task 2", ... (1-based, as in the paper).
    unit_scale : float, default 1
        Times are multiplied by it for display, e.g. 1e6 for µs or the clock frequency
        for cycles. [display unit / s]
    unit_label : str, default "s"
        Name of the display unit, for the axis label.
    annotate : bool, default True
        Write each task's compute time (jitter included) at the end of its compute, and
        the phase time θ at each phase end.
    messages : bool, default True
        With a TreeBarrier, draw each message as an arrow from the end of its send to
        its arrival.
    legend : bool, default True
        Draw a legend of the segment kinds (below the axes).

    Returns
    -------
    matplotlib.axes.Axes

    Notes
    -----
    The x axis is the time since the start of phase 1; task i is at trace time
    ``offset_i + t`` (``timeline_segments(...).attrs["offsets"]``). The lane lengths and
    waits are those of :func:`jitterlab.simulate` (``detail=True``). A jitter inside a
    compute, send or receive is drawn red and hatched; a jitter that falls while a task
    only waits is absorbed (pale, dotted) and does not delay it.

    References
    ----------
    .. [1] P. De, V. Mann, "jitSim", Euro-Par 2010 workshops (seed 000), Fig. 2–6.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import jitterlab as jl
    >>> from jitterlab.plotting import plot_timeline
    >>> trace = jl.Trace(jitter=[10, 5, 25, 5, 15, 20, 10, 60, 5, 10],
    ...                  gap=[50, 30, 20, 10, 100, 300, 20, 60, 20, 70])
    >>> ax = plot_timeline(trace, starts=[0, 6], work=100, unit_label="cycles")
    >>> ax.get_xlabel()
    'time since the start of phase 1 [cycles]'
    """
    if not (np.isfinite(unit_scale) and unit_scale > 0):
        raise ValueError(f"unit_scale must be a finite number > 0, got {unit_scale!r}")
    segments = timeline_segments(trace, starts, work, barrier=barrier, phases=phases)
    n_tasks = int(np.asarray(starts).size)
    if labels is None:
        labels = [f"task {i + 1}" for i in range(n_tasks)]
    labels = list(labels)
    if len(labels) != n_tasks:
        raise ValueError(f"labels must have one entry per task ({n_tasks}), got {len(labels)}")
    ax = axes_or_new(ax)
    height = 0.6
    for kind in _DRAWING_ORDER:
        part = segments[segments.kind == kind]
        if part.empty:
            continue
        shrink = 0.55 if kind == "absorbed" else 1.0
        for task in range(n_tasks):
            mine = part[part.task == task]
            if mine.empty:
                continue
            spans = list(zip(mine.start * unit_scale, (mine.end - mine.start) * unit_scale,
                             strict=True))
            ax.broken_barh(spans, (task - height * shrink / 2, height * shrink),
                           label=f"_{kind}", gid=f"{kind}:{task}", **_STYLE[kind])
    handles = [Patch(label=text, **_STYLE[kind]) for kind, text in TIMELINE_KINDS.items()
               if (segments.kind == kind).any()]
    if messages and barrier is not None:
        for row in segments[segments.kind == "message"].itertuples():
            ax.annotate("", xy=(row.end * unit_scale, row.peer + (height / 2 if row.peer > row.task
                                                                  else -height / 2)),
                        xytext=(row.start * unit_scale,
                                row.task + (-height / 2 if row.peer > row.task
                                            else height / 2)),
                        arrowprops={"arrowstyle": "->", "color": "black", "linewidth": 0.7,
                                    "shrinkA": 0, "shrinkB": 0})
        handles.append(Line2D([], [], color="black", linewidth=0.7, marker=">",
                              markersize=4, label="message (one hop latency)"))
    phase_end = segments.attrs["phase_end"]
    for phase, end in enumerate(phase_end):
        ax.axvline(end * unit_scale, color="black", linestyle="--", linewidth=0.8)
        if annotate:
            previous = phase_end[phase - 1] if phase else 0.0
            ax.annotate(f"θ{_subscript(phase + 1)} = {(end - previous) * unit_scale:.4g}",
                        xy=(end * unit_scale, -0.5), xycoords="data", ha="right",
                        va="bottom", fontsize=8, xytext=(-2, 2), textcoords="offset points")
    if annotate:
        for row in segments[segments.kind == "compute"].itertuples():
            ax.annotate(f"{(row.end - row.start) * unit_scale:.4g}",
                        xy=(row.end * unit_scale, row.task - height / 2), ha="right",
                        va="bottom", fontsize=8, xytext=(-1, 1), textcoords="offset points")
    handles.append(Line2D([], [], color="black", linestyle="--", linewidth=0.8,
                          label="end of a phase"))
    ax.set_yticks(range(n_tasks), labels)
    ax.set_ylim(n_tasks - 0.5, -0.5 - (0.35 if annotate else 0.0))
    ax.set_xlim(0.0, phase_end[-1] * unit_scale * 1.02)
    ax.set_xlabel(f"time since the start of phase 1 [{unit_label}]")
    ax.grid(True, axis="x", alpha=0.3)
    if legend:
        # below the tick labels and the axis label, whatever the height of the axes
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0),
                  borderaxespad=4.5, ncol=min(3, len(handles)), fontsize=8, frameon=False)
    return ax


def _subscript(number: int) -> str:
    return str(number).translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))
