"""Trace-driven simulation: jitSim's worked examples, kernel against reference, cross-method."""

import math
from pathlib import Path

import numba
import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import jitterlab as jl
from jitterlab.sim.simulate import draw_offsets
from jitterlab.testing import simulate_reference, walk

DATA = Path(__file__).parent / "data"

# jitSim Fig. 2 (De & Mann 2010): rows of (jitter duration, cycles to next jitter)
FIG2_JITTER = [10, 5, 25, 5, 15, 20, 10, 60, 5, 10]
FIG2_GAP = [50, 30, 20, 10, 100, 300, 20, 60, 20, 70]
# jitSim Fig. 4: a co-scheduler trace with a 500-cycle window
FIG4_JITTER = [10, 5, 5, 5, 70, 15, 5, 10, 10, 10, 60, 30]
FIG4_GAP = [50, 50, 5, 280, 10, 5, 90, 10, 145, 130, 4, 6]


def fig2_trace():
    # cycles used directly as time units, so the figure's numbers come out exactly
    return jl.Trace(jitter=FIG2_JITTER, gap=FIG2_GAP, source="jitSim Fig. 2")


def test_fig2_two_nodes_finish_at_130_and_165():
    ds = jl.simulate(fig2_trace(), n=2, work=100, start=[0, 6], detail=True)
    np.testing.assert_array_equal(ds["compute_time"].isel(phase=0).values, [130, 165])
    assert float(ds["phase_time"][0]) == 165


def test_fig3_node1_waits_35_and_resumes_in_the_right_place():
    ds = jl.simulate(fig2_trace(), n=2, work=100, phases=2, start=[0, 6], detail=True)
    np.testing.assert_array_equal(ds["wait_time"].isel(phase=0).values, [35, 0])
    # node 1 ended at 10 + 130 = 140 and waited 35 (jitter 5, gap 10, jitter 15, 5 of
    # gap 100): it resumes 5 cycles into row 4's gap, so its second phase uses 95 of
    # that gap, the jitter of 20 and 5 of the next gap: 120 cycles
    assert float(ds["compute_time"].isel(phase=1, task=0)) == 120
    # node 2 did not wait: it goes on from where its first phase ended
    jitter, gap = np.array(FIG2_JITTER, float), np.array(FIG2_GAP, float)
    resume = float(np.sum(jitter[:6] + gap[:6]) + jitter[6]) + 165
    expected = walk(jitter, gap, resume, 100) - resume
    assert float(ds["compute_time"].isel(phase=1, task=1)) == expected


def test_fig4_coscheduled_starts_are_window_starts():
    trace = jl.Trace(jitter=FIG4_JITTER, gap=FIG4_GAP, window=500)
    offsets = draw_offsets(trace, 1000, "coscheduled", rng=1)
    assert set(np.unique(offsets)) <= {0.0, 500.0}
    ds = jl.simulate(trace, n=2, work=200, start="coscheduled", rng=3, detail=True)
    ref = simulate_reference(trace, 2, 200, start="coscheduled", rng=3, detail=True)
    np.testing.assert_allclose(ds["compute_time"].values, ref["compute_time"].values)
    with pytest.raises(ValueError, match="window"):
        jl.simulate(jl.Trace(jitter=FIG4_JITTER, gap=FIG4_GAP), n=2, work=200,
                    start="coscheduled")


def test_fig4_tasks_in_the_same_window_never_wait():
    trace = jl.Trace(jitter=FIG4_JITTER, gap=FIG4_GAP, window=1020)  # one window only
    ds = jl.simulate(trace, n=50, work=300, phases=3, start="coscheduled", rng=2,
                     detail=True)
    assert np.all(ds["wait_time"].values == 0)


def test_fig6_seven_task_tree_without_jitter():
    # reduce: leaves send (s) + L, two receives (2r), send (s) + L, root receives (2r);
    # broadcast along the last child: 2s + L + r, then 2s + L + r to the last leaf
    w, s, r, lat = 1000.0, 1.0, 1.5, 5.0
    quiet = jl.Trace(jitter=[0.0], gap=[10_000.0])
    ds = jl.simulate(quiet, n=7, work=w, barrier=jl.TreeBarrier(send=s, recv=r,
                                                                      latency=lat))
    assert float(ds["phase_time"][0]) == pytest.approx(w + 6 * s + 4 * lat + 6 * r)
    assert float(ds["slowdown"]) == pytest.approx(0.0)


def test_fig6_jitter_during_a_message_delays_the_barrier():
    # one long jitter hits the root just after its compute: the receive is delayed
    trace = jl.Trace(jitter=[0.0, 50.0], gap=[100.0, 10_000.0])
    quiet = jl.simulate(jl.Trace(jitter=[0.0], gap=[10_150.0]), n=7, work=100,
                        start=[0] * 7, barrier=jl.TreeBarrier(send=1, recv=1, latency=5))
    hit = jl.simulate(trace, n=7, work=100, start=[0] * 7,
                      barrier=jl.TreeBarrier(send=1, recv=1, latency=5))
    assert float(hit["phase_time"][0]) == pytest.approx(float(quiet["phase_time"][0]) + 50)


def test_loggopsim_noiseless_totals_are_reproduced():
    # shared/reference/loggopsim/results.csv: 10 phases of 1 ms, L = 5 µs, o = 1 µs
    quiet = jl.Trace(jitter=[0.0], gap=[30.0])
    barrier = jl.TreeBarrier(send=1e-6, recv=1e-6, latency=5e-6)
    for n, total in ((1023, 0.011359), (16383, 0.011963)):
        ds = jl.simulate(quiet, n=n, work=1e-3, phases=10, barrier=barrier, rng=0)
        assert float(ds["phase_time"].sum()) == pytest.approx(total, abs=5e-10)


def random_trace(draw):
    n_rows = draw(st.integers(1, 8))
    jitter = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 3.0, 7.25]), min_size=n_rows,
                           max_size=n_rows))
    gap = draw(st.lists(st.sampled_from([0.0, 0.25, 2.0, 5.0, 11.5]), min_size=n_rows,
                        max_size=n_rows))
    if sum(gap) == 0:
        gap[0] = 4.0
    return jl.Trace(jitter=jitter, gap=gap, window=max(sum(jitter) + sum(gap), 1.0) / 2)


@st.composite
def cases(draw):
    trace = random_trace(draw)
    n_tasks = draw(st.integers(1, 16))
    start = draw(st.sampled_from(["random", "synchronized", "rows"]))
    if start == "rows":
        start = draw(st.lists(st.integers(0, len(trace) - 1), min_size=n_tasks,
                              max_size=n_tasks))
    barrier = draw(st.one_of(
        st.none(),
        st.builds(jl.TreeBarrier, fanout=st.integers(2, 4),
                  send=st.sampled_from([0.0, 0.5, 1.0]), recv=st.sampled_from([0.0, 0.75]),
                  latency=st.sampled_from([0.0, 2.0]),
                  cores_per_node=st.sampled_from([None, 2, 4]),
                  intra_node_latency=st.sampled_from([None, 0.5]))))
    work = draw(st.sampled_from([0.5, 3.0, 17.0, 60.0]))  # 60 wraps around small traces
    return trace, n_tasks, work, draw(st.integers(1, 4)), start, barrier, draw(
        st.integers(0, 2**31))


@settings(max_examples=150, deadline=None)
@given(case=cases())
def test_kernel_equals_event_walking_reference(case):
    trace, n_tasks, work, phases, start, barrier, seed = case
    fast = jl.simulate(trace, n_tasks, work, phases=phases, start=start, barrier=barrier,
                       rng=seed, detail=True)
    slow = simulate_reference(trace, n_tasks, work, phases=phases, start=start,
                              barrier=barrier, rng=seed, detail=True)
    for name in ("phase_time", "compute_time", "wait_time"):
        np.testing.assert_allclose(fast[name].values, slow[name].values, rtol=1e-9,
                                   atol=1e-9, err_msg=name)
    assert float(fast["slowdown"]) == pytest.approx(float(slow["slowdown"]), rel=1e-9,
                                                    abs=1e-9)


def test_synchronized_starts_never_wait():
    trace = jl.Trace(jitter=[3.0, 1.0, 8.0], gap=[20.0, 7.0, 40.0])
    ds = jl.simulate(trace, n=100, work=13.0, phases=5, start="synchronized", rng=4,
                     detail=True)
    assert np.all(ds["wait_time"].values == 0)


def test_one_phase_is_distributed_as_max_of_n_of_from_trace():
    # the first phase of N tasks with independent uniform starts is the maximum of N
    # draws of from_trace(trace, w): a KS test on R replicates at level 1e-3 (the law
    # has atoms, which only makes KS conservative)
    rng = np.random.default_rng(5)
    jitter = rng.pareto(1.8, 300) * 2e-6 + 1e-6
    gap = rng.exponential(1e-3, 300)
    trace = jl.Trace(jitter=jitter, gap=gap)
    n, replicates, work = 16, 800, 300e-6
    ds = jl.simulate(trace, n=n * replicates, work=work, rng=6, detail=True)
    maxima = ds["compute_time"].isel(phase=0).values.reshape(replicates, n).max(axis=1)
    law = jl.noise.from_trace(trace, work) + work
    assert stats.kstest(maxima, lambda x: law.cdf(x) ** n).pvalue > 1e-3
    exact = float(jl.max_of_n(law, n=n, quantiles=[0.5])["mean"][0])
    se = maxima.std(ddof=1) / math.sqrt(replicates)
    assert abs(maxima.mean() - exact) < 4.5 * se


def test_tree_barrier_theta_lies_inside_theorem1_bounds():
    # no jitter during messages (send = recv = 0): θ of the first phase lies between
    # the slowest compute and that plus 2τ·depth (Garg & De, Lemma 1)
    rng = np.random.default_rng(8)
    trace = jl.Trace(jitter=rng.exponential(20e-6, 500), gap=rng.exponential(2e-3, 500))
    tau = 5e-6
    for n in (7, 31, 100, 1023):
        ds = jl.simulate(trace, n=n, work=1e-3, barrier=jl.TreeBarrier(latency=tau),
                         rng=n, detail=True)
        slowest = float(ds["compute_time"].isel(phase=0).max())
        theta = float(ds["phase_time"][0])
        depth = int(jl.tree_depth(n))
        assert slowest - 1e-15 <= theta <= slowest + 2 * tau * depth + 1e-15


def test_from_trace_matches_an_event_walk():
    jitter, gap = np.array([2.0, 5.0, 0.0, 1.0]), np.array([3.0, 7.0, 4.0, 0.0])
    trace = jl.Trace(jitter=jitter, gap=gap)
    period = jitter.sum() + gap.sum()
    for work in (0.5, 3.0, 10.0, 14.0, 41.0):
        law = jl.noise.from_trace(trace, work)
        starts = (np.arange(40_000) + 0.5) / 40_000 * period  # midpoint rule in x
        took = np.array([walk(jitter, gap, x, work) - x - work for x in starts])
        # midpoint error: each discontinuity costs at most one grid cell
        assert law.mean() == pytest.approx(took.mean(), abs=period * 20 / 40_000)
        points = law.knots[:-1] + 0.37 * np.diff(law.knots)
        observed = np.searchsorted(np.sort(took), points, "right") / took.size
        np.testing.assert_allclose(observed, law.cdf(points), atol=20 / 40_000)


def test_from_trace_simple_closed_form():
    # 1 µs detour every 100 µs, 50 µs of work: δ = 1 µs with probability 50/100, plus
    # the wait-out when starting inside the detour; the law is of δ, not of w + δ
    noise = jl.noise.from_trace(jl.Trace(jitter=[1e-6], gap=[99e-6]), work=50e-6)
    assert noise.mean() == pytest.approx(0.99 * 50 / 99 * 1e-6 + 0.01 * 0.5e-6)
    assert noise.lower == 0.0 and noise.upper == pytest.approx(1e-6)
    assert (noise + 50e-6).mean() == pytest.approx(50e-6 + noise.mean())


def test_from_trace_and_periodic_share_one_convention():
    # a strictly periodic trace is the Periodic law: both are laws of δ
    period, duration, work = 4e-3, 2.5e-6, 1e-3
    trace = jl.Trace(jitter=[duration], gap=[period - duration])
    from_trace = jl.noise.from_trace(trace, work=work)
    periodic = jl.noise.Periodic(period=period, duration=duration, work=work)
    points = np.linspace(0, 2 * duration, 41)
    np.testing.assert_allclose(from_trace.cdf(points), periodic.cdf(points), atol=1e-12)
    assert from_trace.mean() == pytest.approx(periodic.mean(), rel=1e-9)


@pytest.mark.parametrize("work", [0.0, -1e-3])
def test_from_trace_and_periodic_refuse_no_work(work):
    trace = jl.Trace(jitter=[1e-6], gap=[99e-6])
    with pytest.raises(ValueError, match="work must be finite and > 0"):
        jl.noise.from_trace(trace, work=work)
    with pytest.raises(ValueError, match="work must be finite and > 0"):
        jl.noise.Periodic(period=1e-3, duration=1e-6, work=work)


def test_sequence_of_task_counts_shares_the_first_tasks():
    trace = jl.Trace(jitter=[3.0, 1.0, 8.0], gap=[20.0, 7.0, 40.0])
    many = jl.simulate(trace, n=[1, 10, 100], work=13.0, phases=3, rng=11)
    assert many["phase_time"].dims == ("n", "phase")
    one = jl.simulate(trace, n=10, work=13.0, phases=3, rng=11)
    np.testing.assert_array_equal(many["phase_time"].sel(n=10).values,
                                  one["phase_time"].values)
    assert np.all(np.diff(many["slowdown"].values) >= 0)


def test_results_do_not_depend_on_threads_and_repeat_from_rng():
    rng = np.random.default_rng(1)
    trace = jl.Trace(jitter=rng.exponential(1e-5, 1000), gap=rng.exponential(1e-3, 1000))
    kwargs = dict(n=5000, work=1e-3, phases=4, rng=3)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = jl.simulate(trace, **kwargs)
        one_tree = jl.simulate(trace, barrier=jl.TreeBarrier(send=1e-6, latency=5e-6),
                               **kwargs)
    finally:
        numba.set_num_threads(before)
    many = jl.simulate(trace, **kwargs)
    many_tree = jl.simulate(trace, barrier=jl.TreeBarrier(send=1e-6, latency=5e-6), **kwargs)
    np.testing.assert_array_equal(one["phase_time"].values, many["phase_time"].values)
    np.testing.assert_array_equal(one_tree["phase_time"].values,
                                  many_tree["phase_time"].values)
    assert one.attrs["seed"] == 3


def test_coverage_and_slowdown():
    trace = jl.Trace(jitter=[0.0], gap=[100.0])
    ds = jl.simulate(trace, n=4, work=10.0, phases=5, rng=1)
    assert float(ds["slowdown"]) == 0.0
    assert float(ds["coverage"]) == pytest.approx(0.5)


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"n": 0}, ValueError, "n must be >= 1"),
    ({"n": 2.5}, ValueError, "n must be a whole number"),
    ({"n": 1e20}, ValueError, "n = 1e.20 is too large"),
    ({"n": []}, ValueError, "n must be a positive integer"),
    ({"n": "3"}, ValueError, "n must be a positive integer"),
    ({"n": None}, TypeError, "needs n"),
    ({"n": 3, "n_tasks": 3}, TypeError, "n or its old name n_tasks"),
    ({"work": 0.0}, ValueError, "work"),
    ({"work": "1.0"}, TypeError, "work must be a real number"),
    ({"phases": 0}, ValueError, "phases"),
    ({"phases": 2.7}, ValueError, "phases must be a whole number"),
    ({"phases": float("nan")}, ValueError, "phases must be a whole number"),
    ({"start": "chaotic"}, ValueError, "start"),
    ({"start": [0, 1]}, ValueError, "start rows"),
    ({"start": [0, 1, 99]}, ValueError, "start rows"),
    ({"barrier": "tree"}, TypeError, "barrier"),
    ({"detail": "yes"}, TypeError, "detail"),
    ({"n": [2, 3], "detail": True}, ValueError, "detail"),
])
def test_bad_arguments_raise(kwargs, error, message):
    arguments = {"n": 3, "work": 1.0, **kwargs}
    with pytest.raises(error, match=message):
        jl.simulate(jl.Trace(jitter=[1.0, 2.0], gap=[3.0, 4.0]), **arguments)


def test_trace_must_be_a_trace():
    with pytest.raises(TypeError, match=r"trace must be a jitterlab.Trace .*got list"):
        jl.simulate([1, 2], n=3, work=1.0)


def test_old_keyword_n_tasks_still_works():
    trace = jl.Trace(jitter=[3.0, 1.0, 8.0], gap=[20.0, 7.0, 40.0])
    new = jl.simulate(trace, n=[1, 10], work=13.0, phases=2, rng=4)
    old = jl.simulate(trace, n_tasks=[1, 10], work=13.0, phases=2, rng=4)
    xr.testing.assert_identical(new.drop_attrs(), old.drop_attrs())


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"fanout": 1}, "fanout"), ({"fanout": 64}, "fanout"), ({"send": -1.0}, "send"),
    ({"latency": float("nan")}, "latency"), ({"cores_per_node": 0}, "cores_per_node"),
    ({"intra_node_latency": -1.0}, "intra_node_latency"),
])
def test_bad_tree_barrier_raises(kwargs, message):
    with pytest.raises(ValueError, match=message):
        jl.TreeBarrier(**kwargs)


@pytest.mark.parametrize("name", ["send", "recv", "latency", "intra_node_latency"])
def test_tree_barrier_refuses_strings_as_times(name):
    with pytest.raises(TypeError, match=f"{name} must be a real number"):
        jl.TreeBarrier(**{name: "1e-6"})


@pytest.mark.parametrize(("fanout", "depth"), [(2, 4), (3, 3), (4, 2)])
def test_tree_barrier_tau_is_the_noiseless_hop_time(fanout, depth):
    # every task enters at once on a full tree of depth D: the barrier takes 2τ·D
    n = sum(fanout**level for level in range(depth + 1))
    barrier = jl.TreeBarrier(fanout=fanout, send=0.3, recv=0.7, latency=2.0)
    quiet = jl.Trace(jitter=[0.0], gap=[1e9])
    ds = jl.simulate(quiet, n=n, work=5.0, start="synchronized", barrier=barrier, rng=1)
    assert barrier.tau == pytest.approx(2.0 + 0.5 * (fanout + 1) * 1.0)
    assert float(ds["phase_time"][0]) == pytest.approx(5.0 + 2 * barrier.tau * depth,
                                                       rel=1e-12)
    assert int(jl.tree_depth(n, fanout)) == depth


def test_random_row_starts_where_jitsim_does():
    # one 1 µs detour per 100 µs, 50 µs of work, one phase: a random *time* meets the
    # detour half of the time (slowdown ≈ 1/50 for many tasks), a random *row* always
    # starts at the beginning of the gap and never meets it
    trace = jl.Trace(jitter=[1e-6], gap=[99e-6])
    by_time = jl.simulate(trace, n=1000, work=50e-6, start="random", rng=1)
    by_row = jl.simulate(trace, n=1000, work=50e-6, start="random_row", rng=1)
    assert float(by_time["slowdown"]) == pytest.approx(0.02, rel=1e-9)
    assert float(by_row["slowdown"]) == 0.0
    rows = jl.simulate(jl.Trace(jitter=[1.0, 2.0, 3.0], gap=[5.0, 6.0, 7.0]), n=500,
                       work=1.0, start="random_row", rng=2, detail=True)
    # starting at the start of a gap of >= 5 units, 1 unit of work meets no jitter
    assert np.all(rows["compute_time"].values[0] == 1.0)


def test_slowdowns_agree_with_loggopsim_on_its_noise_trace():
    # shared/reference/loggopsim: LogGOPSim replayed devref.trc (8 runs with random
    # start offsets) under a binary-tree reduce + broadcast; compare the mean total
    # time over 8 of our runs with theirs within three standard errors of the difference
    import pandas as pd

    results = pd.read_csv(DATA / "loggopsim_results.csv")
    trace = jl.read_trace(DATA / "devref.trc.gz")
    barrier = jl.TreeBarrier(send=1e-6, recv=1e-6, latency=5e-6)
    for n in (1023, 16383):
        theirs = results[(results.n_ranks == n) & (results.noise != "none")].total_time_s
        ours = np.array([float(jl.simulate(trace, n=n, work=1e-3, phases=10,
                                           barrier=barrier, rng=seed)["phase_time"].sum())
                         for seed in range(8)])
        se = math.sqrt(ours.var(ddof=1) / ours.size + theirs.var(ddof=1) / theirs.size)
        assert abs(ours.mean() - theirs.mean()) < 3 * se


def test_worked_example_in_cycles_converted_to_seconds():
    # 1 GHz cycles are not exact in binary seconds: ties must still be ties
    trace = jl.Trace(jitter=FIG2_JITTER, gap=FIG2_GAP, unit="cycles", frequency_hz=1e9)
    ds = jl.simulate(trace, n=3, work=100e-9, start=[0, 6, 4], detail=True)
    np.testing.assert_allclose(ds["compute_time"].isel(phase=0).values * 1e9, [130, 165, 100])
    x = (sum(FIG2_JITTER[:4]) + sum(FIG2_GAP[:4]) + FIG2_JITTER[4]) / 1e9
    assert (walk(trace.jitter_seconds, trace.gap_seconds, x, 100e-9) - x) * 1e9 == \
        pytest.approx(100)


def test_finish_on_a_cycle_boundary_after_rounding_meets_no_jitter():
    # phase 3 ends exactly where the trace wraps (180 = 80 cycles of 2.25 compute), but
    # the start time of the phase carries rounding from phases 1-2: the jitter that
    # begins at the wrap must not be counted (216, not 219), as in the event walk
    trace = jl.Trace(jitter=[0.0, 3.0, 3.0], gap=[0.0, 0.25, 2.0])
    fast = jl.simulate(trace, 1, 60.0, phases=3, start="random", rng=5402)
    slow = simulate_reference(trace, 1, 60.0, phases=3, start="random", rng=5402)
    assert fast["phase_time"].values[1:] == pytest.approx([222.0, 216.0], abs=1e-9)
    np.testing.assert_allclose(fast["phase_time"].values, slow["phase_time"].values,
                               rtol=1e-12)


@pytest.mark.parametrize("barrier", [jl.TreeBarrier(fanout=3, send=1e-6, recv=2e-6, latency=5e-6),
                                     jl.Dissemination(), jl.RecursiveDoubling()])
def test_the_noiseless_reference_is_computed_once_per_configuration(monkeypatch, barrier):
    import importlib

    simulate_module = importlib.import_module("jitterlab.simulate")
    simulate_module._noiseless_phase_mean.cache_clear()
    calls = []
    original = type(barrier).noiseless_phases

    def counted(self, n, work, phases):
        calls.append((n, work, phases))
        return original(self, n, work, phases)

    monkeypatch.setattr(type(barrier), "noiseless_phases", counted)
    trace = jl.synthetic_trace(2.0, rng=3)
    first = jl.simulate(trace, n=100, work=1e-3, phases=5, barrier=barrier, rng=1)
    again = jl.simulate(trace, n=100, work=1e-3, phases=5, barrier=barrier, rng=2)
    assert len(calls) in (1, 2)  # three phases, and all five if they had not settled
    count = len(calls)
    simulate_module._noiseless_phase_mean.cache_clear()
    fresh = jl.simulate(trace, n=100, work=1e-3, phases=5, barrier=barrier, rng=2)
    assert len(calls) == 2 * count  # computed again only after the cache was cleared
    xr.testing.assert_identical(again, fresh)
    assert not first["slowdown"].equals(again["slowdown"])  # other seeds, same reference
    other = jl.simulate(trace, n=100, work=2e-3, phases=5, barrier=barrier, rng=2)
    assert len(calls) > 2 * count and not other["slowdown"].equals(again["slowdown"])


# --------------------------------------------------------------------------- sizes


SIZE_TRACE = jl.Trace(jitter=[1e-6], gap=[99e-6])


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"n": 10**12}, r"n=1000000000000, phases=1 would allocate about 64 TB.*give a smaller n"),
    ({"n": 10**6, "phases": 10**6, "detail": True},
     r"detail=True would allocate about 48 TB.*or detail=False"),
    ({"n": 10**5, "phases": 10**6, "detail": "events",
      "barrier": jl.TreeBarrier(fanout=2, latency=1e-6)}, r"detail='events'"),
    ({"n": 16, "phases": 10**13}, r"phases=10000000000000 would allocate about 160 TB"),
])
def test_a_run_too_large_for_the_memory_is_refused_before_allocating(kwargs, match):
    with pytest.raises(jl.limits.ResourceLimitError,
                       match=match + r".*allow_large=True \(or set JITTERLAB_ALLOW_LARGE=1\)"):
        jl.simulate(SIZE_TRACE, work=1e-4, rng=1, **kwargs)


def test_allow_large_and_the_environment_lift_the_memory_limit(monkeypatch):
    monkeypatch.setattr(jl.limits, "available_memory", lambda: 2 * 10**6)  # 2 MB free
    monkeypatch.setattr(jl.limits, "_ALWAYS_FITS", 0)
    monkeypatch.delenv("JITTERLAB_ALLOW_LARGE", raising=False)
    with pytest.raises(jl.limits.ResourceLimitError, match=r"6.4 MB, more than 50% of the 2 MB"):
        jl.simulate(SIZE_TRACE, n=10**5, work=1e-4, rng=1)
    allowed = jl.simulate(SIZE_TRACE, n=10**5, work=1e-4, rng=1, allow_large=True)
    monkeypatch.setenv("JITTERLAB_ALLOW_LARGE", "1")
    from_environment = jl.simulate(SIZE_TRACE, n=10**5, work=1e-4, rng=1)
    xr.testing.assert_identical(allowed.drop_attrs(), from_environment.drop_attrs())
    assert jl.simulate(SIZE_TRACE, n=10, work=1e-4, rng=1)["slowdown"] >= 0  # small: no limit
    with pytest.raises(TypeError, match="allow_large must be True or False"):
        jl.simulate(SIZE_TRACE, n=10, work=1e-4, allow_large="yes")


# ------------------------------------------------------------------ issue #20: the fast paths
def _advance_by_division(table, x, cpu):
    """The finish of ``advance`` as it was computed before issue #20's fast paths: the cycle
    of x and the cycles of compute by dividing, rows by a full search (plain Python)."""
    starts, computed, jitter = table[:, 0], table[:, 1], table[:, 2]
    n_rows = table.shape[0] - 1
    period, total_gap = starts[n_rows], computed[n_rows]
    cycle = math.floor(x / period)
    offset = x - cycle * period
    if offset >= period:
        offset, cycle = offset - period, cycle + 1
    elif offset < 0.0:
        offset, cycle = offset + period, cycle - 1
    row = int(np.searchsorted(starts[:n_rows], offset, side="right")) - 1
    done_here = offset - starts[row] - jitter[row]
    target = computed[row] + (done_here if done_here > 0.0 else 0.0) + cpu
    tie = 16 * np.finfo(np.float64).eps * (abs(x) + cpu + period)
    extra = math.ceil(target / total_gap) - 1.0
    rest = target - extra * total_gap
    if rest <= tie:
        rest, extra = rest + total_gap, extra - 1.0
    elif rest > total_gap + tie:
        rest, extra = rest - total_gap, extra + 1.0
    finish_row = int(np.searchsorted(computed[:n_rows], rest - tie, side="left")) - 1
    return ((cycle + extra) * period + starts[finish_row] + jitter[finish_row]
            + (rest - computed[finish_row]))


def test_advance_without_dividing_gives_the_numbers_of_the_division():
    from jitterlab.sim.replay_kernels import advance, trace_table

    rng = np.random.default_rng(20)
    jitter, gap = rng.exponential(1e-5, 50), rng.exponential(3e-4, 50)
    table = trace_table(jitter, gap)
    period, total_gap = table[-1, 0], table[-1, 1]
    # times at and around the cycle boundaries (where the fast paths end) and far beyond
    edges = [0.0, period, 2 * period, 7.25 * period]
    xs = [np.nextafter(edge, side) for edge in edges for side in (-np.inf, np.inf)] + edges
    xs += list(rng.uniform(0, 3 * period, 300))
    cpus = [1e-7, 1e-6, total_gap / 3, total_gap, np.nextafter(total_gap, 0.0), 2.5 * total_gap]
    for x in (x for x in xs if x >= 0):
        for cpu in cpus:
            finish = advance(table, x, cpu, 0, 0)[0]
            assert finish == _advance_by_division(table, x, cpu), (x, cpu)


@pytest.mark.parametrize("fanout, cores_per_node", [(2, None), (3, 4)])
def test_one_thread_kernels_give_the_parallel_kernels_numbers(fanout, cores_per_node):
    from jitterlab.sim import replay_kernels as _simkernels
    from jitterlab.simulate import tree_levels

    rng = np.random.default_rng(11)  # a trace of about 2.4 ms: the runs wrap it
    trace = jl.Trace(jitter=rng.exponential(1e-5, 40), gap=rng.exponential(5e-5, 40))
    table = _simkernels.trace_table(trace.jitter_seconds, trace.gap_seconds)
    n, phases = 700, 6
    offsets = draw_offsets(trace, n, rng=4)
    intra = 2e-6 if cores_per_node else 5e-6
    args = (1e-3, phases, fanout, 1e-6, 2e-6, 5e-6, intra, cores_per_node or 0,
            tree_levels(n, fanout))
    outputs = []
    for kernel in (_simkernels.run_tree_barrier, _simkernels.run_tree_barrier_one_thread):
        compute, end = np.zeros((phases, n)), np.zeros((phases, n))
        ops = np.full((phases, n, 2 * fanout + 3), np.nan)
        outputs.append((kernel(table, offsets, *args, compute, end, ops, np.zeros(0)), compute,
                        end, ops))
    for parallel, one in zip(*outputs, strict=True):
        np.testing.assert_array_equal(parallel, one)
    assert float(outputs[0][0][-1]) > 3 * table[-1, 0]  # the dividing path ran too
    order = np.sort(offsets)
    compute = [np.zeros((phases, n)), np.zeros((phases, n))]
    theta = [kernel(table, order, 1e-3, phases, 64, out) for kernel, out in
             zip((_simkernels.run_without_barrier, _simkernels.run_without_barrier_one_thread),
                 compute, strict=True)]
    np.testing.assert_array_equal(theta[0], theta[1])
    np.testing.assert_array_equal(compute[0], compute[1])
    noiseless = [kernel(n, 1e-3, 3, fanout, 1e-6, 2e-6, 5e-6, intra, cores_per_node or 0,
                        tree_levels(n, fanout), np.zeros((3, n)))
                 for kernel in (_simkernels.noiseless_tree, _simkernels.noiseless_tree_one_thread)]
    np.testing.assert_array_equal(noiseless[0][0], noiseless[1][0])
    assert noiseless[0][1] == noiseless[1][1]


def test_tree_workspace_is_kept_per_thread_and_capped():
    import threading

    from jitterlab.sim.barriers import _KEPT_WORKSPACE, tree_workspace
    from jitterlab.sim.tree_kernels import WORKSPACE_PER_TASK

    first = tree_workspace(1000)
    assert first.size >= WORKSPACE_PER_TASK * 1000
    assert tree_workspace(10) is first  # a smaller run reuses it
    other = []
    thread = threading.Thread(target=lambda: other.append(tree_workspace(1000)))
    thread.start()
    thread.join()
    assert other[0] is not first  # each thread has its own: runs on threads share nothing
    too_large = _KEPT_WORKSPACE // WORKSPACE_PER_TASK + 1
    assert tree_workspace(too_large).size == 0  # the kernel then allocates for itself
    assert tree_workspace(1000) is first


def test_tree_runs_in_turn_with_a_kept_workspace_give_the_same_numbers():
    rng = np.random.default_rng(3)
    trace = jl.Trace(jitter=rng.exponential(1e-5, 300), gap=rng.exponential(1e-3, 300))
    barrier = jl.TreeBarrier(send=1e-6, recv=2e-6, latency=5e-6)
    runs = [jl.simulate(trace, n=n, work=1e-3, phases=3, barrier=barrier, rng=5,
                        detail=True) for n in (5000, 300, 5000)]
    for name in ("phase_time", "compute_time", "wait_time"):
        np.testing.assert_array_equal(runs[0][name].values, runs[2][name].values)
