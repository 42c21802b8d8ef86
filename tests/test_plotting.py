"""Plots draw the expected artists, in microseconds, with labelled axes."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import xarray as xr  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.container import ErrorbarContainer  # noqa: E402

import jitterlab as jl  # noqa: E402
from jitterlab.plotting import plot_bounds, plot_max_of_n  # noqa: E402

N = [1, 10, 100, 1000]
NOISE = jl.noise.Exponential(mean=20e-6)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def exact():
    return jl.max_of_n(NOISE, n=N, quantiles=(0.5, 0.99))


@pytest.fixture(scope="module")
def montecarlo():
    return jl.max_of_n(NOISE, n=N, method="montecarlo", replicates=200, rng=3)


def test_max_of_n_lines_in_microseconds(exact):
    ax = plot_max_of_n({"exact": exact, "other": exact * 2})
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == ["exact", "other"]
    np.testing.assert_allclose(lines[0].get_xdata(), N)
    np.testing.assert_allclose(lines[0].get_ydata(), exact["mean"].values * 1e6)
    assert ax.get_xscale() == "log"
    assert "N" in ax.get_xlabel()
    assert ax.get_ylabel() == "E[max of N] [µs]"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["exact", "other"]


def test_max_of_n_error_bars_are_two_standard_errors(montecarlo):
    ax = plot_max_of_n({"Monte Carlo": montecarlo})
    (container,) = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert container.get_label() == "Monte Carlo"
    marker_line = container.lines[0]
    np.testing.assert_allclose(marker_line.get_ydata(), montecarlo["mean"].values * 1e6)
    segments = container.lines[2][0].get_segments()
    half_widths = np.array([abs(s[1, 1] - s[0, 1]) / 2 for s in segments])
    np.testing.assert_allclose(half_widths, 2 * montecarlo["mean_se"].values * 1e6, rtol=1e-12)


def test_max_of_n_quantile_band(exact):
    ax = plot_max_of_n({"exact": exact}, band=(0.5, 0.99))
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 1
    vertices = bands[0].get_paths()[0].vertices[:, 1]
    assert vertices.max() == pytest.approx(exact["quantiles"].values.max() * 1e6)
    assert bands[0].get_label() == "exact: 0.5–0.99 quantile band"
    ax = plot_max_of_n({"exact": exact}, band=(0.5, 0.99), band_label="{low:g} to {high:g}")
    assert [c for c in ax.collections if isinstance(c, PolyCollection)][0].get_label() \
        == "0.5 to 0.99"
    with pytest.raises(ValueError, match="quantile level 0.9"):
        plot_max_of_n({"exact": exact}, band=(0.5, 0.9))


def test_max_of_n_band_as_steps_keeps_jumps_vertical():
    # the median of the max of N Bernoulli draws jumps from 0 to the detour at one N:
    # drawn with band_step="post" the band's lower edge holds 0 up to that N and rises
    # vertically there (a vertex at (N_jump, 0) and one at (N_jump, 2000 µs)); without
    # it the edge is a slanted line from (N_jump − 1, 0) to (N_jump, 2000 µs)
    n = np.arange(1, 200)
    ds = jl.max_of_n(jl.noise.Bernoulli(p=0.01, duration=2e-3), n=n, quantiles=[0.5, 0.99])
    jump = int(n[np.argmax(ds["quantiles"].sel(quantile=0.5).values > 0)])

    def lower_edge_at_jump(**kwargs):
        ax = plot_max_of_n({"detour": ds}, band=(0.5, 0.99), **kwargs)
        band = [c for c in ax.collections if isinstance(c, PolyCollection)][0]
        vertices = band.get_paths()[0].vertices
        return set(np.round(vertices[vertices[:, 0] == jump, 1], 6))

    assert {0.0, 2000.0} <= lower_edge_at_jump(band_step="post")
    assert 0.0 not in lower_edge_at_jump()
    with pytest.raises(ValueError, match="band_step"):
        plot_max_of_n({"detour": ds}, band=(0.5, 0.99), band_step="stairs")


def test_max_of_n_per_work_is_dimensionless(exact):
    ax = plot_max_of_n({"exact": exact}, per_work=1e-3)
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), exact["mean"].values / 1e-3)
    assert ax.get_ylabel() == "E[max of N] / w [-]"
    with pytest.raises(ValueError, match="per_work"):
        plot_max_of_n({"exact": exact}, per_work=0.0)


def test_max_of_n_draws_on_given_axes_and_forwards_style(exact):
    fig, ax = plt.subplots()
    out = plot_max_of_n({"exact": exact}, ax=ax, color="C3", linestyle="--")
    assert out is ax
    line = ax.get_lines()[0]
    assert line.get_linestyle() == "--"
    assert matplotlib.colors.same_color(line.get_color(), "C3")


@pytest.mark.parametrize("results", [{}, [], {"x": xr.Dataset()}, {"x": 3.0}])
def test_max_of_n_bad_input(results):
    with pytest.raises(ValueError, match="results|result 'x'"):
        plot_max_of_n(results)


def test_bounds_band_and_measured_points():
    ds = jl.theorem1_bounds(NOISE + 300e-6, n=[1, 3, 31, 1023], tau=5e-6)
    ax = plot_bounds(ds, measured={"paper": (31, 400e-6), "runs": ([3, 31], [350e-6, 390e-6])})
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels[2:] == ["paper", "runs"]
    lower, upper = ax.get_lines()[:2]
    np.testing.assert_allclose(lower.get_ydata(), ds["lower"].values * 1e6)
    np.testing.assert_allclose(upper.get_ydata(), ds["upper"].values * 1e6)
    np.testing.assert_allclose(upper.get_ydata() - lower.get_ydata(),
                               [0.0, 10.0, 40.0, 90.0])  # 2·5 µs·D with D = 0, 1, 4, 9
    np.testing.assert_allclose(ax.get_lines()[3].get_ydata(), [350.0, 390.0])
    assert len([c for c in ax.collections if isinstance(c, PolyCollection)]) == 1
    assert ax.get_xscale() == "log"
    assert ax.get_ylabel() == "E[θ] [µs]"
    assert len(ax.get_legend().get_texts()) == 4


def test_bounds_bad_input():
    with pytest.raises(ValueError, match="lower"):
        plot_bounds(jl.max_of_n(NOISE, n=[1, 2]))
    ds = jl.theorem1_bounds(NOISE, n=[1, 2], tau=1e-6)
    with pytest.raises(ValueError, match="pair"):
        plot_bounds(ds, measured={"bad": 3.0})


# --------------------------------------------------------------------------------------
# slowdown against N and per-task timelines (jitSim, De & Mann 2010)
# --------------------------------------------------------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from jitterlab.plotting import plot_slowdown, plot_timeline, timeline_segments  # noqa: E402
from jitterlab.sim.simulate import draw_offsets  # noqa: E402
from jitterlab.testing import walk  # noqa: E402

# jitSim Fig. 2 and Fig. 4: rows of (jitter duration, cycles to next jitter), in cycles
FIG2 = jl.Trace(jitter=[10, 5, 25, 5, 15, 20, 10, 60, 5, 10],
                gap=[50, 30, 20, 10, 100, 300, 20, 60, 20, 70])
FIG4 = jl.Trace(jitter=[10, 5, 5, 5, 70, 15, 5, 10, 10, 10, 60, 30],
                gap=[50, 50, 5, 280, 10, 5, 90, 10, 145, 130, 4, 6], window=500)


def _extents(ax, gid):
    """(start, end) of every rectangle of the broken_barh with this gid."""
    (collection,) = [c for c in ax.collections if c.get_gid() == gid]
    out = []
    for path in collection.get_paths():
        x = path.vertices[:, 0]
        out.append((x.min(), x.max()))
    return sorted(out)


def test_slowdown_lines_in_percent_on_a_log2_axis():
    trace = jl.Trace(jitter=[3.0, 1.0, 8.0], gap=[20.0, 7.0, 40.0])
    ds = jl.simulate(trace, n=[1, 4, 64, 2048], work=13.0, phases=3, rng=1)
    ax = plot_slowdown({"small trace": ds})
    (line,) = ax.get_lines()
    np.testing.assert_allclose(line.get_xdata(), [1, 4, 64, 2048])
    np.testing.assert_allclose(line.get_ydata(), ds["slowdown"].values * 100)
    assert ax.get_xscale() == "log"
    assert ax.get_ylabel() == "slowdown [%]"
    assert "N" in ax.get_xlabel()
    ax.figure.canvas.draw()
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert "2K" in labels and "1" in labels
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["small trace"]


def test_slowdown_band_over_an_extra_dimension():
    trace = jl.Trace(jitter=[3.0, 1.0, 8.0], gap=[20.0, 7.0, 40.0])
    runs = xr.concat([jl.simulate(trace, n=[1, 8, 64], work=13.0, rng=seed)
                      for seed in range(4)], dim="seed")
    ax = plot_slowdown({"4 seeds": runs}, percent=False)
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(),
                               runs["slowdown"].mean("seed").values)
    (band,) = [c for c in ax.collections if isinstance(c, PolyCollection)]
    top = band.get_paths()[0].vertices[:, 1].max()
    assert top == pytest.approx(runs["slowdown"].max().item())
    assert ax.get_ylabel() == "slowdown [-]"


@pytest.mark.parametrize("results", [{}, {"x": xr.Dataset()},
                                     {"x": jl.max_of_n(NOISE, n=[1, 2])}])
def test_slowdown_bad_input(results):
    with pytest.raises(ValueError, match="results|result 'x'"):
        plot_slowdown(results)


def test_timeline_fig2_lanes_end_at_130_and_165():
    ax = plot_timeline(FIG2, starts=[0, 6], work=100, unit_label="cycles")
    assert _extents(ax, "compute:0") == [(0.0, 130.0)]
    assert _extents(ax, "compute:1") == [(0.0, 165.0)]
    # node 1 meets jitter of 5 and 25 cycles, node 2 of 60 and 5 (the figure's sums)
    assert _extents(ax, "jitter:0") == [(50.0, 55.0), (85.0, 110.0)]
    assert _extents(ax, "jitter:1") == [(20.0, 80.0), (140.0, 145.0)]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["task 1", "task 2"]
    assert ax.get_xlabel() == "time since the start of phase 1 [cycles]"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "compute" in legend and "waiting at the barrier" in legend


def test_timeline_fig3_node1_waits_35():
    segments = timeline_segments(FIG2, [0, 6], 100, phases=2)
    waits = segments[(segments.kind == "wait") & (segments.phase == 0)]
    assert waits[["task", "start", "end"]].values.tolist() == [[0, 130.0, 165.0]]
    # the jitter that falls in the wait is absorbed: 5 and 15 cycles
    absorbed = segments[segments.kind == "absorbed"]
    assert (absorbed.end - absorbed.start).tolist() == [5.0, 15.0]
    ds = segments.attrs["simulation"]
    np.testing.assert_array_equal(ds["wait_time"].isel(phase=0).values, [35, 0])
    np.testing.assert_array_equal(segments.attrs["phase_end"], [165, 285])
    ax = plot_timeline(FIG2, [0, 6], 100, phases=2, labels=["node 1", "node 2"],
                       unit_scale=2.0, unit_label="half cycles")
    assert _extents(ax, "wait:0") == [(260.0, 330.0)]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["node 1", "node 2"]


def test_timeline_start_times_match_start_rows():
    rows = timeline_segments(FIG2, [0, 6, 3], 100, phases=3)
    offsets = rows.attrs["offsets"]
    times = timeline_segments(FIG2, offsets.astype(float), 100, phases=3)
    pd.testing.assert_frame_equal(rows, times)
    # times are taken modulo the trace length (845 cycles)
    later = timeline_segments(FIG2, offsets + 845.0 * np.array([1, 2, -1]), 100, phases=3)
    pd.testing.assert_frame_equal(rows, later)


def test_timeline_fig4_coscheduled_window_starts_agree_with_simulate():
    offsets = draw_offsets(FIG4, 2, "coscheduled", rng=3)
    ds = jl.simulate(FIG4, n=2, work=300, phases=2, start="coscheduled", rng=3,
                     detail=True)
    segments = timeline_segments(FIG4, offsets, 300, phases=2)
    compute = segments[segments.kind == "compute"].sort_values(["phase", "task"])
    np.testing.assert_allclose(compute.end - compute.start,
                               ds["compute_time"].values.ravel())
    # window 2 starts at 500, inside a 15-cycle jitter (490-505): 5 cycles are waited out
    two = timeline_segments(FIG4, [0.0, 500.0], 300)
    first = two[(two.kind == "jitter") & (two.task == 1)].iloc[0]
    assert (first.start, first.end) == (0.0, 5.0)


@settings(max_examples=60, deadline=None)
@given(jitter=st.lists(st.sampled_from([0.0, 1.0, 2.5, 7.0]), min_size=1, max_size=6),
       gap=st.lists(st.sampled_from([0.0, 0.5, 3.0, 11.0]), min_size=6, max_size=6),
       fractions=st.lists(st.floats(0.0, 0.999), min_size=1, max_size=5),
       work=st.sampled_from([0.5, 4.0, 30.0]))
def test_timeline_compute_from_any_start_time_is_an_event_walk(jitter, gap, fractions, work):
    gap = gap[:len(jitter)]
    if sum(gap) == 0:
        gap[0] = 2.0
    trace = jl.Trace(jitter=jitter, gap=gap)
    # random times, and the start of every row (a task there waits out the whole jitter)
    times = np.concatenate([np.array(fractions) * trace.duration, trace.starts])
    segments = timeline_segments(trace, times, work)
    compute = segments[segments.kind == "compute"].sort_values("task")
    expected = [walk(np.array(jitter), np.array(gap), t, work) - t for t in times]
    np.testing.assert_allclose(compute.end - compute.start, expected, rtol=1e-9, atol=1e-9)
    # the jitter met inside a compute adds up to its excess over the work
    jitter_met = segments[segments.kind == "jitter"]
    met = np.bincount(jitter_met.task, weights=jitter_met.end - jitter_met.start,
                      minlength=times.size)
    excess = (compute.end - compute.start).to_numpy() - work
    np.testing.assert_allclose(met, excess, atol=1e-9)


def test_timeline_fig6_tree_barrier_operations():
    barrier = jl.TreeBarrier(send=5, recv=5, latency=10)
    rows = [0, 6, 2, 4, 8, 1, 5]
    segments = timeline_segments(FIG2, rows, 100, barrier=barrier, phases=2)
    ds = jl.simulate(FIG2, n=7, work=100, phases=2, start=rows, barrier=barrier,
                     detail=True)
    np.testing.assert_allclose(np.diff(segments.attrs["phase_end"], prepend=0.0),
                               ds["phase_time"].values)
    for phase in (0, 1):
        mine = segments[segments.phase == phase]
        # a reduce message up and a broadcast message down every edge of the tree
        assert (mine.kind == "message").sum() == 2 * 6
        assert (mine.kind == "send").sum() == 2 * 6
        assert (mine.kind == "recv").sum() == 2 * 6
    messages = segments[segments.kind == "message"]
    np.testing.assert_allclose(messages.end - messages.start, 10.0)
    # a send of task 4 (a leaf) is struck by 20 cycles of jitter: it takes 25
    send = segments[(segments.kind == "send") & (segments.task == 3) & (segments.phase == 0)]
    assert (send.end - send.start).tolist() == [25.0]
    ax = plot_timeline(FIG2, rows, 100, barrier=barrier, unit_label="cycles")
    assert {c.get_gid().split(":")[0] for c in ax.collections} >= {
        "compute", "jitter", "wait", "recv", "send", "absorbed"}
    assert len([t for t in ax.texts if t.get_text().startswith("θ")]) == 1
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "message (one hop latency)" in legend


@settings(max_examples=40, deadline=None)
@given(n_tasks=st.integers(1, 12), fanout=st.integers(2, 3), phases=st.integers(1, 3),
       node=st.sampled_from([None, 2, 3]), seed=st.integers(0, 2**20))
def test_timeline_tree_replay_agrees_with_simulate(n_tasks, fanout, phases, node, seed):
    rng = np.random.default_rng(seed)
    trace = jl.Trace(jitter=rng.choice([0.0, 1.0, 4.0, 9.0], 7),
                     gap=rng.choice([0.5, 3.0, 12.0], 7))
    barrier = jl.TreeBarrier(fanout=fanout, send=0.5, recv=0.75, latency=2.0,
                             cores_per_node=node, intra_node_latency=0.25 if node else None)
    times = rng.uniform(0, trace.duration, n_tasks)
    segments = timeline_segments(trace, times, 6.0, barrier=barrier, phases=phases)
    assert (segments.end >= segments.start).all()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"starts": [0, 10]}, "start rows"),
    ({"starts": [0.0, np.nan]}, "start times"),
    ({"starts": ["a", "b"]}, "integers"),
    ({"starts": []}, "non-empty"),
    ({"starts": list(range(65))}, "at most"),
    ({"phases": 0}, "phases"),
    ({"barrier": "tree"}, "barrier"),
])
def test_timeline_bad_input(kwargs, message):
    arguments = {"starts": [0, 6], "work": 100, **kwargs}
    with pytest.raises(ValueError, match=message):
        timeline_segments(FIG2, **arguments)
    with pytest.raises(ValueError, match="labels"):
        plot_timeline(FIG2, [0, 6], 100, labels=["only one"])


def test_log2_task_axis_labels_powers_of_two():
    from jitterlab.plotting import log2_task_axis

    _, ax = plt.subplots()
    ax.plot([1, 65536], [0, 1])
    log2_task_axis(ax, 1, 65536)
    ax.figure.canvas.draw()
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["1", "4", "16", "64", "256", "1K", "4K", "16K", "64K"]
    assert ax.get_xscale() == "log"
    with pytest.raises(ValueError, match="n_min"):
        log2_task_axis(ax, 0, 8)
