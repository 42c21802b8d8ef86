"""Plots of max-of-N results, Theorem 1 bounds and trace-driven simulations.

The only module that imports matplotlib. Every ``plot_*`` function draws on the given
Axes (or a new one), labels the axes with their units and returns the Axes. Results are
stored in seconds and drawn in microseconds, except the per-task timelines of
:func:`plot_timeline`, which use the unit the caller chooses (e.g. the cycles of jitSim's
worked examples).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import xarray as xr
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

__all__ = ["plot_max_of_n", "plot_bounds", "plot_slowdown", "plot_timeline",
           "timeline_segments", "log2_task_axis"]

#: seconds to microseconds
MICROSECONDS = 1e6
#: half-width of the Monte Carlo error bars, in standard errors
ERROR_BAR_SE = 2.0
N_LABEL = "number of processes N"


def _axes(ax):
    if ax is None:
        _, ax = plt.subplots()
    return ax


def _quantile_values(ds: xr.Dataset, variable: str, level: float, label: str) -> np.ndarray:
    levels = ds["quantile"].values
    match = np.flatnonzero(np.isclose(levels, level, rtol=0, atol=1e-12))
    if match.size == 0:
        raise ValueError(f"result {label!r} has no quantile level {level}; it has "
                         f"{levels.tolist()}")
    return ds[variable].isel(quantile=int(match[0])).values


def plot_max_of_n(results: Mapping[str, xr.Dataset], ax=None, per_work: float | None = None,
                  band: tuple[float, float] | None = None,
                  band_label: str = "{label}: {low:g}–{high:g} quantile band",
                  band_step: str | None = None, **kwargs):
    """Plot E[max of N] against N on a logarithmic N axis, one line per result.

    Parameters
    ----------
    results : mapping of str to xarray.Dataset
        Legend label → output of :func:`jitterlab.max_of_n` (a Dataset with ``mean``
        on dim ``n``). [s]
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure when omitted.
    per_work : float, optional
        Work per phase w. When given, the y axis shows E[max]/w (dimensionless: the
        relative slowdown for noise-only results, one plus it for results of w + δ)
        instead of microseconds. [s]
    band : (float, float), optional
        Two quantile levels, e.g. ``(0.5, 0.99)``; for every result with a
        ``quantiles`` variable the region between them is shaded in the line's colour.
        [-]
    band_label : str
        Legend entry of each band, formatted with ``label`` (the result's key), ``low``
        and ``high`` (the two levels).
    band_step : {None, "post"}, optional
        Draw the band as a step function of N ("post": each value holds until the next
        N). Quantiles of a law with atoms (Bernoulli, a tick, a measured sample) jump
        between integer N; give a dense N grid and ``"post"`` so that the jumps are
        drawn as jumps, not as slanted wedges.
    **kwargs
        Passed to :meth:`~matplotlib.axes.Axes.plot` (or ``errorbar``) for every result,
        for example ``color="C0"`` or ``linestyle="--"``.

    Returns
    -------
    matplotlib.axes.Axes

    Notes
    -----
    A result with a ``mean_se`` variable (Monte Carlo) is drawn as markers with error
    bars of ±2 standard errors and no connecting line; the others as lines.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import jitterlab as jl
    >>> from jitterlab.plotting import plot_max_of_n
    >>> ds = jl.max_of_n(jl.noise.Exponential(mean=20e-6), n=[1, 10, 100, 1000])
    >>> ax = plot_max_of_n({"Exponential, mean 20 µs": ds})
    >>> ax.get_ylabel()
    'E[max of N] [µs]'
    """
    if not isinstance(results, Mapping) or not results:
        raise ValueError("results must be a non-empty mapping of label -> Dataset")
    if per_work is not None and not (np.isfinite(per_work) and per_work > 0):
        raise ValueError(f"per_work must be a finite time > 0 [s], got {per_work!r}")
    if band is not None and len(band) != 2:
        raise ValueError(f"band must be two quantile levels, got {band!r}")
    if band_step not in (None, "pre", "post", "mid"):
        raise ValueError(f"band_step must be None, 'pre', 'post' or 'mid', got {band_step!r}")
    ax = _axes(ax)
    factor = 1.0 / per_work if per_work is not None else MICROSECONDS
    for label, ds in results.items():
        if not isinstance(ds, xr.Dataset) or "mean" not in ds or "n" not in ds.dims:
            raise ValueError(f"result {label!r} must be a Dataset with 'mean' on dim 'n' "
                             "(the output of jitterlab.max_of_n)")
        n = ds["n"].values
        mean = ds["mean"].values * factor
        if "mean_se" in ds:
            style = {"marker": "o", "linestyle": "none", "capsize": 3, "markersize": 4,
                     **kwargs}
            drawn = ax.errorbar(n, mean, yerr=ERROR_BAR_SE * ds["mean_se"].values * factor,
                                label=label, **style)
            color = drawn.lines[0].get_color()
        else:
            (line,) = ax.plot(n, mean, label=label, **kwargs)
            color = line.get_color()
        if band is not None and "quantiles" in ds:
            low = _quantile_values(ds, "quantiles", band[0], label) * factor
            high = _quantile_values(ds, "quantiles", band[1], label) * factor
            ax.fill_between(n, low, high, color=color, alpha=0.2, linewidth=0, step=band_step,
                            label=band_label.format(label=label, low=band[0], high=band[1]))
    ax.set_xscale("log")
    ax.set_xlabel(N_LABEL)
    ax.set_ylabel("E[max of N] / w [-]" if per_work is not None else "E[max of N] [µs]")
    ax.legend()
    return ax


def plot_bounds(ds: xr.Dataset, ax=None, measured: Mapping[str, tuple] | None = None,
                label: str = "Theorem 1", **kwargs):
    """Plot the Theorem 1 bounds on E[θ] against N, the band between them shaded.

    Parameters
    ----------
    ds : xarray.Dataset
        Output of :func:`jitterlab.theorem1_bounds` (``lower`` and ``upper`` on dim
        ``n``). [s]
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure when omitted.
    measured : mapping of str to (n, value), optional
        Measured or published points to show as markers: label → (N, E[θ]); ``n`` and
        ``value`` may be numbers or equal-length arrays. [-], [s]
    label : str
        Legend prefix of the bounds.
    **kwargs
        Passed to :meth:`~matplotlib.axes.Axes.plot` for both bound lines (e.g.
        ``color``).

    Returns
    -------
    matplotlib.axes.Axes

    Notes
    -----
    Garg & De (2006), Theorem 1: max_i(w_i + δ_i) <= θ <= max_i(w_i + δ_i) + 2τ·D.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import jitterlab as jl
    >>> from jitterlab.plotting import plot_bounds
    >>> ds = jl.theorem1_bounds(jl.noise.Exponential(mean=20e-6) + 300e-6, n=[1, 31, 1023],
    ...                         tau=5e-6)
    >>> ax = plot_bounds(ds, measured={"a measurement": (31, 400e-6)})
    >>> ax.get_ylabel()
    'E[θ] [µs]'
    """
    if not isinstance(ds, xr.Dataset) or not {"lower", "upper"} <= set(ds.data_vars):
        raise ValueError("ds must be a Dataset with 'lower' and 'upper' "
                         "(the output of jitterlab.theorem1_bounds)")
    ax = _axes(ax)
    n = ds["n"].values
    lower = ds["lower"].values * MICROSECONDS
    upper = ds["upper"].values * MICROSECONDS
    style = {"color": "C0", **kwargs}
    (low_line,) = ax.plot(n, lower, label=f"{label} lower bound: E[max(w + δ)]",
                          **{"linestyle": "-", **style})
    ax.plot(n, upper, label=f"{label} upper bound: + 2τ·D", **{"linestyle": "--", **style})
    ax.fill_between(n, lower, upper, color=low_line.get_color(), alpha=0.2, linewidth=0)
    for i, (point_label, point) in enumerate((measured or {}).items()):
        try:
            point_n, value = point
        except (TypeError, ValueError):
            raise ValueError(f"measured[{point_label!r}] must be a pair (n, value)") from None
        ax.plot(np.atleast_1d(point_n), np.atleast_1d(value) * MICROSECONDS,
                marker="os^Dv"[i % 5], linestyle="none", color=f"C{(i + 1) % 10}",
                label=point_label)
    ax.set_xscale("log")
    ax.set_xlabel(N_LABEL)
    ax.set_ylabel("E[θ] [µs]")
    ax.legend()
    return ax


# --------------------------------------------------------------------------------------
# slowdown against the number of tasks (jitSim Fig. 7-10)
# --------------------------------------------------------------------------------------
def task_count_label(value, _position=None) -> str:
    """1, 2, ..., 512, 1K, 2K, ..., 512K, 1M, ... (binary prefixes, as jitSim's axes)."""
    value = round(value)
    for size, suffix in ((2**20, "M"), (2**10, "K")):
        if value >= size and value % size == 0:
            return f"{value // size}{suffix}"
    return f"{value}"


def log2_task_axis(ax, n_min: int, n_max: int) -> None:
    """Make the x axis of ``ax`` a log2 axis of task counts from ``n_min`` to ``n_max``.

    Major ticks at powers of two (every other one beyond 12 of them), labelled 1, 2, ...,
    512, 1K, 2K, ... as in jitSim's figures; minor ticks at the remaining powers.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        Axes to change.
    n_min, n_max : int
        Smallest and largest number of tasks shown. [-]
    """
    if not 1 <= n_min <= n_max:
        raise ValueError(f"need 1 <= n_min <= n_max, got {n_min!r} and {n_max!r}")
    ax.set_xscale("log", base=2)
    low, high = math.floor(math.log2(n_min)), math.ceil(math.log2(n_max))
    powers = 2.0 ** np.arange(low, high + 1)
    step = 1 if powers.size <= 12 else 2
    ax.xaxis.set_major_locator(FixedLocator(powers[::step]))
    ax.xaxis.set_major_formatter(FuncFormatter(task_count_label))
    ax.xaxis.set_minor_locator(FixedLocator(powers))
    ax.xaxis.set_minor_formatter(NullFormatter())


def plot_slowdown(results: Mapping[str, xr.Dataset], ax=None, percent: bool = True,
                  band: bool = True, **kwargs):
    """Plot the simulated slowdown against the number of tasks N (log2 N axis).

    Parameters
    ----------
    results : mapping of str to xarray.Dataset
        Legend label → output of :func:`jitterlab.simulate` called with a sequence of
        task counts (``slowdown`` on dim ``n``). A further dimension (for example
        ``seed``, from ``xr.concat`` of runs with different ``rng``) is summarised: the
        line is the mean over it and the band its range. [-]
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure when omitted.
    percent : bool, default True
        Draw the slowdown in percent; otherwise as a fraction. [-]
    band : bool, default True
        Shade the min–max range over the extra dimension, when there is one.
    **kwargs
        Passed to :meth:`~matplotlib.axes.Axes.plot` for every result (e.g. ``marker``,
        ``color``, ``linestyle``).

    Returns
    -------
    matplotlib.axes.Axes

    Notes
    -----
    The slowdown is (mean phase time) / (phase time without jitter) − 1 (De & Mann 2010,
    §3.4). The x axis is logarithmic in base 2 with ticks labelled 1, 2, ..., 1K, 2K, ...
    as in jitSim's Fig. 7–10.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import jitterlab as jl
    >>> from jitterlab.plotting import plot_slowdown
    >>> trace = jl.synthetic_trace(duration=10.0, rng=1)
    >>> ds = jl.simulate(trace, n=[1, 16, 256, 4096], work=1e-3, phases=10, rng=2)
    >>> ax = plot_slowdown({"synthetic, w = 1 ms": ds})
    >>> ax.get_ylabel()
    'slowdown [%]'
    """
    if not isinstance(results, Mapping) or not results:
        raise ValueError("results must be a non-empty mapping of label -> Dataset")
    ax = _axes(ax)
    factor = 100.0 if percent else 1.0
    n_min, n_max = math.inf, 0
    style = {"marker": "o", "markersize": 4, **kwargs}
    for label, ds in results.items():
        if not isinstance(ds, xr.Dataset) or "slowdown" not in ds \
                or "n" not in ds["slowdown"].dims:
            raise ValueError(f"result {label!r} must be a Dataset with 'slowdown' on dim "
                             "'n' (jitterlab.simulate with a sequence of n)")
        slowdown = ds["slowdown"] * factor
        others = [d for d in slowdown.dims if d != "n"]
        n = ds["n"].values
        mean = slowdown.mean(others).transpose("n").values if others \
            else slowdown.values
        (line,) = ax.plot(n, mean, label=label, **style)
        if others and band:
            ax.fill_between(n, slowdown.min(others).transpose("n").values,
                            slowdown.max(others).transpose("n").values,
                            color=line.get_color(), alpha=0.2, linewidth=0)
        n_min, n_max = min(n_min, int(n.min())), max(n_max, int(n.max()))
    log2_task_axis(ax, n_min, n_max)
    ax.set_xlabel("number of tasks N")
    ax.set_ylabel("slowdown [%]" if percent else "slowdown [-]")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend()
    return ax


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
    from .sim import replay_kernels as _simkernels

    n, k = offsets.size, barrier.fanout
    table = _simkernels.trace_table(np.ascontiguousarray(jitter, dtype=float),
                                    np.ascontiguousarray(gap, dtype=float))

    def run(task, t, cpu):
        return _simkernels.advance(table, offsets[task] + t, cpu, 0, 0)[0] - offsets[task]

    ops, compute, ends = [], np.zeros((phases, n)), np.zeros((phases, n))
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
                ops.append((child, phase, "message", sent_up[child], arrival, task))
                start = max(now, arrival)
                if start > now:
                    ops.append((task, phase, "wait", now, start, child))
                now = run(task, start, barrier.recv)
                ops.append((task, phase, "recv", start, now, child))
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
                arrival = sent_down[task] + _hop(barrier, task, parent)
                ops.append((parent, phase, "message", sent_down[task], arrival, task))
                start = max(now, arrival)
                if start > now:
                    ops.append((task, phase, "wait", now, start, parent))
                now = run(task, start, barrier.recv)
                ops.append((task, phase, "recv", start, now, parent))
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
    from .sim.barriers import TreeBarrier
    from .sim.simulate import simulate

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
        from .traces.trace import Trace

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
    ax = _axes(ax)
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
