"""The timeline approximation of seed 003 (jitterlab.compare.estimate).

Exact answers: the seed's two toy cases, closed-form BSP runs, random programs whose
noise is placed as the rules assume (removing a source must give the run without it),
and simulated runs whose noiseless twin the simulator computes. Rounding tolerances
are derived from the float64 epsilon and the number of additions on a rank's path.
"""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jitterlab as jl
from jitterlab.compare.estimate import accumulated_noise, approximate_timeline
from jitterlab.testing import random_events, timeline_reference

EPS = np.finfo(np.float64).eps


def rounding(trace: jl.EventTrace) -> float:
    """Bound on the rounding of an approximated time: each interval on a path adds a
    few operations, each off by at most eps times the largest timestamp."""
    scale = float(np.abs(trace.data[["start", "end"]].to_numpy()).max())
    return 8 * EPS * scale * len(trace)


def simulated_rounding(events: jl.EventTrace, trace: jl.Trace) -> float:
    """Bound on the rounding of a simulated run's estimate against its truth: the
    simulator keeps times in trace time, so each operation is off by eps times the
    trace's length as well as the timestamps'."""
    return rounding(events) + 8 * EPS * float(trace.duration) * len(events)


def table(rows):
    columns = ["rank", "seq", "kind", "start", "end", "peer", "tag", "noise_combined"]
    return jl.EventTrace(pd.DataFrame(rows, columns=columns))


# ---------------------------------------------------------------------- seed 003 toys
def test_propagation_rank_2_picks_up_100_without_local_noise():
    # Seed 003: rank 1 meets 100 s of noise before it sends; rank 2, noise-free, waits
    # for the message. Ranks 1 and 2 of the slides are rows 0 and 1 here.
    trace = table([
        (0, 0, "compute", 0.0, 200.0, -1, 0, 100.0),
        (0, 1, "send", 200.0, 200.0, 1, 1, 0.0),
        (1, 0, "recv", 0.0, 200.0, 0, 1, 0.0),
        (1, 1, "compute", 200.0, 300.0, -1, 0, 0.0),
    ])
    ds = accumulated_noise(trace).sel(source="combined")
    assert ds["local"].values.tolist() == [100.0, 0.0]
    assert ds["accumulated"].values.tolist() == [100.0, 100.0]
    assert ds["amplification"].values[0] == 1.0
    assert np.isnan(ds["amplification"].values[1])  # no local noise: ratio undefined
    assert float(ds["run_accumulated"]) == 100.0
    timeline = approximate_timeline(trace)
    assert timeline["approx_end"].tolist() == [100.0, 100.0, 100.0, 200.0]


def test_absorption_100_local_only_50_accumulated():
    # Seed 003: rank 2 meets 100 s of noise, then receives a message sent 50 s after its
    # noiseless compute would end; without the noise it waits 50 s, so only 50 s of
    # its 100 s were lost.
    trace = table([
        (0, 0, "compute", 0.0, 150.0, -1, 0, 0.0),
        (0, 1, "send", 150.0, 150.0, 1, 1, 0.0),
        (1, 0, "compute", 0.0, 200.0, -1, 0, 100.0),
        (1, 1, "recv", 200.0, 201.0, 0, 1, 0.0),
    ])
    ds = accumulated_noise(trace).sel(source="combined")
    assert ds["local"].values.tolist() == [0.0, 100.0]
    assert ds["accumulated"].values.tolist() == [0.0, 50.0]
    assert ds["amplification"].values[1] == 0.5
    assert float(ds["run_accumulated"]) == 50.0
    assert approximate_timeline(trace)["approx_start"].tolist() == [0.0, 150.0, 0.0, 100.0]


def test_a_receive_never_completes_before_its_send_plus_latency():
    # the message leaves at 150 and takes 5 s; removing the receiver's 100 s of noise
    # cannot make the receive end before 155
    rows = pd.DataFrame({
        "rank": [0, 0, 1, 1], "seq": [0, 1, 0, 1],
        "kind": ["compute", "send", "compute", "recv"],
        "start": [0.0, 150.0, 0.0, 200.0], "end": [150.0, 150.0, 200.0, 201.0],
        "peer": [-1, 1, -1, 0], "tag": [0, 1, 0, 1],
        "noise_combined": [0.0, 0.0, 100.0, 1.0]})
    trace = jl.EventTrace(rows, latency=5.0)
    timeline = approximate_timeline(trace)
    assert timeline["approx_end"].iat[3] == 155.0
    assert float(accumulated_noise(trace)["accumulated"].sel(source="combined", rank=1)) \
        == 46.0


# ---------------------------------------------------------------------- closed forms
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bsp_with_a_barrier_the_run_loses_the_sum_of_the_phase_maxima(seed):
    # phase k: every rank computes w plus its noise n_rk, then a barrier whose exits
    # follow the last entry by a fixed cost c. Without noise every phase takes w + c,
    # so the run loses exactly sum_k max_r n_rk, and so does every rank.
    rng = np.random.default_rng(seed)
    ranks, phases, work, cost = 7, 30, 1.0, 0.01
    noise = rng.exponential(0.1, (phases, ranks)) * (rng.random((phases, ranks)) < 0.4)
    rows, clock = [], 0.0
    for k in range(phases):
        last = clock + work + noise[k].max()
        for r in range(ranks):
            entry = clock + work + noise[k, r]
            rows += [(r, 2 * k, "compute", clock, entry, -1, k, noise[k, r]),
                     (r, 2 * k + 1, "collective", entry, last + cost, -1, k, 0.0)]
        clock = last + cost
    trace = table(rows)
    ds = accumulated_noise(trace).sel(source="combined")
    lost = noise.max(axis=1).sum()
    tol = rounding(trace)
    assert float(ds["run_accumulated"]) == pytest.approx(lost, abs=tol)
    assert np.allclose(ds["accumulated"], lost, rtol=0, atol=tol)
    assert np.allclose(ds["local"], noise.sum(axis=0), rtol=0, atol=tol)
    assert float(ds["makespan"]) == pytest.approx(phases * (work + cost) + lost, abs=tol)


def test_without_noise_nothing_is_accumulated():
    trace = random_events(4, n_ranks=5, steps=20, present=(), latency=0.01)
    ds = accumulated_noise(trace)
    assert np.all(np.abs(ds["accumulated"]) <= rounding(trace))
    assert np.all(ds["local"] == 0) and np.all(np.isnan(ds["amplification"]))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), ranks=st.integers(1, 7), steps=st.integers(1, 25),
       latency=st.sampled_from([0.0, 0.01]))
def test_removing_a_source_gives_the_run_without_it(seed, ranks, steps, latency):
    # random_events places the noise where the rules assume it struck, so the estimate
    # must be exact: the same program run with the other sources only
    full = random_events(seed, n_ranks=ranks, steps=steps, latency=latency)
    ds = accumulated_noise(full)
    ends = full.data["end"].to_numpy()[full.rank_offsets()[1:] - 1]
    for source, others in [("tick", ["daemon"]), ("daemon", ["tick"]), ("combined", [])]:
        quiet = random_events(seed, n_ranks=ranks, steps=steps, latency=latency,
                              present=others)
        truth = ends - quiet.data["end"].to_numpy()[quiet.rank_offsets()[1:] - 1]
        tol = rounding(full)
        assert np.allclose(ds["accumulated"].sel(source=source), truth, rtol=0, atol=tol)
        assert float(ds["run_accumulated"].sel(source=source)) == pytest.approx(
            ends.max() - quiet.data["end"].max(), abs=tol)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), ranks=st.integers(1, 7), steps=st.integers(1, 25),
       latency=st.sampled_from([0.0, 0.01]), irregular=st.booleans())
def test_kernel_matches_the_plain_python_reference(seed, ranks, steps, latency, irregular):
    trace = random_events(seed, n_ranks=ranks, steps=steps, latency=latency,
                          irregular=irregular)
    for source in ("tick", "combined"):
        timeline = approximate_timeline(trace, source)
        start, end = timeline_reference(trace, source)
        # the same operations in the same order: equal to the last bit
        np.testing.assert_array_equal(timeline["approx_start"].to_numpy(), start)
        np.testing.assert_array_equal(timeline["approx_end"].to_numpy(), end)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), ranks=st.integers(1, 7), steps=st.integers(1, 25),
       irregular=st.booleans())
def test_approximated_times_never_pass_the_measured_ones(seed, ranks, steps, irregular):
    trace = random_events(seed, n_ranks=ranks, steps=steps, latency=0.01,
                          irregular=irregular)
    tol = rounding(trace)
    timeline = approximate_timeline(trace)
    assert np.all(timeline["approx_end"] <= timeline["end"] + tol)
    assert np.all(timeline["approx_end"] >= timeline["approx_start"])
    ds = accumulated_noise(trace)
    # removing all the noise gains at least as much as removing one source
    assert np.all(ds["accumulated"].sel(source="combined")
                  >= ds["accumulated"].sel(source="tick") - tol)
    assert np.all(ds["accumulated"] >= -tol)


# ---------------------------------------------------------------------- simulate
def _trace():
    return jl.synthetic_trace(duration=0.5, rng=11)


def test_simulate_events_has_one_compute_and_one_collective_per_task_and_phase():
    trace = _trace()
    run = jl.simulate(trace, n=16, work=1e-3, phases=20, rng=5, detail=True)
    events = jl.simulate(trace, n=16, work=1e-3, phases=20, rng=5, detail="events")
    data = events.data
    assert len(events) == 2 * 16 * 20 and events.n_ranks == 16
    compute = data[data["kind"] == "compute"]
    collective = data[data["kind"] == "collective"]
    assert (collective["tag"].to_numpy().reshape(16, 20) == np.arange(20)).all()
    # the compute intervals are the simulation's compute times; their noise the excess
    per_task = run["compute_time"].values.T.ravel()
    tol = 4 * EPS * events.attrs["makespan"]  # a subtraction of two rounded timestamps
    np.testing.assert_allclose(compute["end"] - compute["start"], per_task, rtol=0, atol=tol)
    np.testing.assert_allclose(compute["noise_combined"], per_task - 1e-3, rtol=0, atol=tol)
    assert events.attrs["makespan"] == pytest.approx(float(run["phase_time"].sum()),
                                                     rel=8 * EPS)
    assert events.attrs["noiseless_makespan"] == pytest.approx(20e-3, rel=8 * EPS)


MESSAGE = jl.Message(send=1e-6, recv=2e-6, latency=3e-6)
BARRIERS = [None, jl.TreeBarrier(), jl.TreeBarrier(fanout=4),
            jl.TreeBarrier(send=1e-6, recv=1e-6, latency=2e-6),
            jl.TreeBarrier(fanout=3, message=MESSAGE), jl.Dissemination(MESSAGE),
            jl.RecursiveDoubling(MESSAGE)]


@pytest.mark.parametrize("n", [1, 2, 7, 64, 100])
@pytest.mark.parametrize("barrier", BARRIERS, ids=lambda b: b.describe() if b else "none")
def test_simulate_estimate_equals_the_true_cost(barrier, n):
    # The barrier is written as its messages, each send and receive with the jitter it
    # met; a tree's reduce takes its children in order of arrival (any_order). Removing
    # all the jitter then gives the noiseless run, so the estimate is the true cost to
    # rounding, whatever the barrier.
    events = jl.simulate(_trace(), n=n, work=1e-4, phases=40, rng=8, barrier=barrier,
                         detail="events")
    truth = events.attrs["makespan"] - events.attrs["noiseless_makespan"]
    assert truth > 0
    estimate = float(accumulated_noise(events)["run_accumulated"].sel(source="combined"))
    assert estimate == pytest.approx(truth, abs=simulated_rounding(events, _trace()))


@pytest.mark.parametrize("barrier", BARRIERS[3:], ids=lambda b: b.describe())
def test_simulate_events_write_the_barrier_as_messages(barrier):
    n, phases, work = 23, 6, 1e-4
    run = jl.simulate(_trace(), n=n, work=work, phases=phases, rng=3, barrier=barrier,
                      detail=True)
    events = jl.simulate(_trace(), n=n, work=work, phases=phases, rng=3, barrier=barrier,
                         detail="events")
    data = events.data
    kind = data["kind"].astype(str)
    message = barrier.message
    if isinstance(barrier, jl.TreeBarrier):  # 4 operations per edge of the tree
        assert len(events) == phases * (n + 4 * (n - 1))
        reduce_recv = (kind == "recv") & (data["tag"] % 2 == 0)
        assert (data["any_order"] == reduce_recv).all()
    else:
        assert (kind == "send").sum() == (kind == "recv").sum() > 0
    # every interval costs what it should plus its noise (rounding of trace times)
    tol = 64 * EPS * float(_trace().duration + data["end"].max())
    cost = kind.map({"compute": work, "send": message.send, "recv": message.recv})
    spent = data["end"] - data["start"] - data["noise_combined"]
    busy = kind != "recv"  # a receive also waits for its message
    np.testing.assert_allclose(spent[busy], cost[busy], rtol=0, atol=tol)
    assert (spent[~busy] >= cost[~busy] - tol).all()
    # the last operation of each task and phase ends where the simulation says
    ends = np.cumsum((run["compute_time"] + run["wait_time"]).values, axis=0)
    np.testing.assert_allclose(_phase_ends(events, phases), ends, rtol=0, atol=tol)
    assert events.attrs["makespan"] == pytest.approx(float(run["phase_time"].sum()),
                                                     rel=8 * EPS)


def _phase_ends(events, phases):
    """End of each task's last operation per phase [phase, task] (computes mark phases)."""
    data = events.data
    compute = (data["kind"] == "compute").to_numpy()
    phase = np.cumsum(compute) - 1 - np.repeat(
        phases * np.arange(events.n_ranks), np.diff(events.rank_offsets()))
    frame = pd.DataFrame({"rank": data["rank"], "phase": phase, "end": data["end"]})
    return frame.groupby(["phase", "rank"])["end"].last().unstack().to_numpy()


def test_opaque_collectives_follow_the_collective_rule():
    # What a tracer sees through MPI_Barrier: each run of messages one collective with the
    # run's noise. The rule takes each phase's cost as measured after the last entry,
    # C_k = (last exit) - (last entry), so the estimate is makespan - K w - sum_k C_k;
    # the noiseless run pays the whole barrier every phase, so the rule errs either way.
    barrier = jl.TreeBarrier(send=1e-6, recv=1e-6, latency=2e-6)
    work, phases, n = 1e-3, 40, 64
    events = jl.simulate(_trace(), n=n, work=work, phases=phases, rng=8, barrier=barrier,
                         detail="events")
    opaque = events.opaque_collectives()
    data = opaque.data
    assert len(opaque) == 2 * n * phases
    collective = data[data["kind"] == "collective"]
    assert (collective["tag"].to_numpy().reshape(n, phases) == np.arange(phases)).all()
    # the noise is kept, interval by interval summed
    assert opaque.noise("combined").sum() == pytest.approx(events.noise("combined").sum(),
                                                           rel=1e-12)
    last_entry = collective.groupby("tag")["start"].max()
    last_exit = collective.groupby("tag")["end"].max()
    barrier_cost = float((last_exit - last_entry).sum())
    makespan = opaque.attrs["makespan"]
    # with the barrier's own noise left in, each phase costs w + C_k
    frame = data.copy()
    frame.loc[frame["kind"] == "collective", "noise_combined"] = 0.0
    compute_only = jl.EventTrace(frame, latency=opaque.latency)
    estimate = float(accumulated_noise(compute_only)["run_accumulated"].sel(source="combined"))
    assert estimate == pytest.approx(makespan - phases * work - barrier_cost,
                                     abs=rounding(opaque))
    truth = makespan - opaque.attrs["noiseless_makespan"]
    assert abs(estimate - truth) > 100 * rounding(opaque)  # the rule is not exact here
    with pytest.raises(ValueError, match="runs of messages"):
        jl.EventTrace(table([[0, 0, "send", 0, 1, 1, 0, 0], [1, 0, "recv", 0, 2, 0, 0, 0],
                             [1, 1, "compute", 2, 3, -1, 0, 0],
                             [1, 2, "send", 3, 4, 0, 1, 0], [0, 1, "recv", 1, 5, 1, 1, 0]]
                            ).data).opaque_collectives()


# ---------------------------------------------------------------------- output, errors
def test_the_dataset_has_sources_ranks_units_and_provenance():
    trace = random_events(9, n_ranks=3, steps=10)
    ds = accumulated_noise(trace)
    assert list(ds["source"].values) == ["tick", "daemon", "combined"]
    assert list(ds["rank"].values) == [0, 1, 2]
    assert ds["accumulated"].dims == ("source", "rank")
    assert ds["run_accumulated"].dims == ("source",)
    for name, variable in ds.data_vars.items():
        assert variable.attrs["units"] in ("s", "1"), name
        assert variable.attrs["long_name"], name
    assert ds.attrs["trace_source"] == "jitterlab.testing.random_events"
    assert "jitterlab_version" in ds.attrs
    only = accumulated_noise(trace, sources="daemon")
    assert list(only["source"].values) == ["daemon"]
    np.testing.assert_array_equal(only["accumulated"].sel(source="daemon"),
                                  ds["accumulated"].sel(source="daemon"))
    assert float(ds["max_accumulated"].sel(source="combined")) == \
        float(ds["accumulated"].sel(source="combined").max())


def test_the_dataset_round_trips_through_netcdf(tmp_path):
    ds = accumulated_noise(random_events(2, n_ranks=3, steps=10))
    ds.to_netcdf(tmp_path / "estimate.nc")
    import xarray as xr

    with xr.open_dataset(tmp_path / "estimate.nc") as back:
        xr.testing.assert_identical(back.load(), ds)


def _cycle(kind):
    if kind == "messages":  # each rank receives before it sends what the other awaits
        rows = [(0, 0, "recv", 0.0, 0.0, 1, 1, 0.0), (0, 1, "send", 0.0, 0.0, 1, 2, 0.0),
                (1, 0, "recv", 0.0, 0.0, 0, 2, 0.0), (1, 1, "send", 0.0, 0.0, 0, 1, 0.0)]
    else:  # the two ranks enter two collectives in opposite orders
        rows = [(0, 0, "collective", 0.0, 0.0, -1, 1, 0.0),
                (0, 1, "collective", 0.0, 0.0, -1, 2, 0.0),
                (1, 0, "collective", 0.0, 0.0, -1, 2, 0.0),
                (1, 1, "collective", 0.0, 0.0, -1, 1, 0.0)]
    return table(rows)


@pytest.mark.parametrize("kind, what", [("messages", r"recv from rank 1 with tag 1"),
                                        ("collectives", r"collective 1")])
def test_a_dependency_cycle_is_refused_naming_rank_and_interval(kind, what):
    trace = _cycle(kind)
    with pytest.raises(ValueError, match=rf"rank 0, interval seq 0 \({what}\) can never "
                                         r"complete: .* cycle"):
        accumulated_noise(trace)
    with pytest.raises(ValueError, match="can never finish"):
        timeline_reference(trace)


def test_bad_arguments():
    trace = random_events(1)
    with pytest.raises(ValueError, match="no noise source 'disk'"):
        accumulated_noise(trace, sources=["disk"])
    with pytest.raises(ValueError, match="at least one noise source"):
        accumulated_noise(trace, sources=[])
    with pytest.raises(TypeError, match="must be a jl.EventTrace"):
        accumulated_noise(trace.data)
    with pytest.raises(TypeError, match="must be a jl.EventTrace"):
        approximate_timeline(trace.data)
    with pytest.raises(ValueError, match="detail='events' needs a single n"):
        jl.simulate(_trace(), n=[2, 4], work=1e-3, detail="events")
    with pytest.raises(TypeError, match="detail must be True, False or 'events'"):
        jl.simulate(_trace(), n=2, work=1e-3, detail="timeline")


def test_receives_in_any_order_follow_the_approximated_arrivals():
    # rank 0 takes the messages of ranks 2 and 1 as they come (2 first, as measured);
    # without rank 1's noise, 1's message arrives first: any order ends at 7, not 8
    rows = [[0, 0, "compute", 0, 1, -1, 0, 0], [0, 1, "recv", 1, 7, 2, 0, 0],
            [0, 2, "recv", 7, 12, 1, 0, 0],
            [1, 0, "compute", 0, 10, -1, 0, 8], [1, 1, "send", 10, 11, 0, 0, 0],
            [2, 0, "compute", 0, 5, -1, 0, 0], [2, 1, "send", 5, 6, 0, 0, 0]]
    in_order = table(rows)
    frame = in_order.data.copy()
    frame["any_order"] = frame["kind"] == "recv"
    any_order = jl.EventTrace(frame)
    for trace, end in ((in_order, 8.0), (any_order, 7.0)):
        ds = accumulated_noise(trace)
        assert float(ds["approximated_end"].sel(source="combined", rank=0)) == end
        start, finish = timeline_reference(trace)
        timeline = approximate_timeline(trace)
        np.testing.assert_array_equal(timeline["approx_start"], start)
        np.testing.assert_array_equal(timeline["approx_end"], finish)
    timeline = approximate_timeline(any_order)
    assert timeline["approx_end"].tolist()[:3] == [1.0, 7.0, 4.0]  # 1's message taken first
    frame.loc[0, "any_order"] = True
    with pytest.raises(ValueError, match="rank 0, interval seq 0: any_order is set on a "
                                         "non-recv"):
        jl.EventTrace(frame)


def test_against_simulation_reports_the_truth_and_both_views():
    tree = jl.TreeBarrier(send=1e-6, recv=1e-6, latency=2e-6)
    result = jl.estimate.against_simulation(_trace(), 32, 1e-4, 30, barrier=tree, rng=2)
    events = jl.simulate(_trace(), n=32, work=1e-4, phases=30, barrier=tree, rng=2,
                         detail="events")
    assert result["true_cost"] == events.attrs["makespan"] - events.attrs["noiseless_makespan"]
    assert result["intervals"] == len(events) == 30 * (32 + 4 * 31)
    assert abs(result["error"]) < rounding(events) / result["true_cost"]
    opaque = float(accumulated_noise(events.opaque_collectives(), "combined")["run_accumulated"][0])
    assert result["opaque_estimate"] == opaque
    assert result["opaque_error"] == pytest.approx(opaque / result["true_cost"] - 1, rel=1e-12)
    ideal = jl.estimate.against_simulation(_trace(), 32, 1e-4, 30, rng=2)
    assert ideal["barrier"] == "wait for the slowest" and np.isnan(ideal["opaque_error"])


def two_interruptions_per_noisy_interval(trace, sources):
    """Every noisy interval of ``trace`` met two interruptions, 30 % and 70 % of its noise,
    from ``sources[0]`` and ``sources[1]``."""
    data = trace.data
    noisy = np.flatnonzero(trace.noise("combined") > 0)
    noise = trace.noise("combined")[noisy]
    return pd.DataFrame({
        "rank": np.repeat(data["rank"].to_numpy()[noisy], 2),
        "seq": np.repeat(data["seq"].to_numpy()[noisy], 2),
        "duration": np.column_stack([0.3 * noise, 0.7 * noise]).ravel(),
        "source": np.tile(list(sources), noisy.size)})


def test_split_noise_by_the_interruptions_behind_it():
    trace = random_events(5, n_ranks=3, steps=12, sources=("combined",))
    interruptions = two_interruptions_per_noisy_interval(trace, ["tick", "other stuff"])
    split = jl.estimate.split_noise(trace, interruptions)
    assert split.sources == ["combined", "other_stuff", "tick"]
    np.testing.assert_allclose(split.noise("tick"), 0.3 * trace.noise("combined"), atol=1e-12)
    ds = accumulated_noise(split)
    combined = accumulated_noise(trace, "combined")
    np.testing.assert_array_equal(ds["accumulated"].sel(source="combined"),
                                  combined["accumulated"].sel(source="combined"))
    np.testing.assert_allclose(ds["local"].sel(source="tick"),
                               0.3 * combined["local"].sel(source="combined"), rtol=1e-9)
    with pytest.raises(ValueError, match="add up to"):
        jl.estimate.split_noise(trace, interruptions.iloc[1:])
    wrong = interruptions.assign(seq=interruptions["seq"] + 1000)
    with pytest.raises(ValueError, match="interval seq 10"):
        jl.estimate.split_noise(trace, wrong)
    with pytest.raises(ValueError, match="lack the columns"):
        jl.estimate.split_noise(trace, interruptions.drop(columns="source"))


def test_split_noise_refuses_what_it_would_misread():
    trace = random_events(5, n_ranks=3, steps=12, sources=("combined",))
    interruptions = two_interruptions_per_noisy_interval(trace, ["a b", "a_b"])
    # "a b" and "a_b" would both become noise_a_b and be merged into one source
    with pytest.raises(ValueError, match="would share the column noise_a_b"):
        jl.estimate.split_noise(trace, interruptions)
    named = two_interruptions_per_noisy_interval(trace, ["tick", "other"])
    # a fractional interval number used to be truncated to the interval before it
    with pytest.raises(ValueError, match="seq must be a whole number, got 1.5"):
        jl.estimate.split_noise(trace, named.assign(seq=named["seq"].astype(float).where(
            np.arange(len(named)) != 0, 1.5)))
    with pytest.raises(ValueError, match="duration must be a finite number >= 0"):
        jl.estimate.split_noise(trace, named.assign(duration=-named["duration"]))
    with pytest.raises(ValueError, match="may not be named 'combined'"):
        jl.estimate.split_noise(trace, named.assign(source="combined"))
