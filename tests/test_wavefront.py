"""The wavefront application model (seed 002): analytic, Monte Carlo, trace-driven, LogGOPSim."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import jitterlab as jl
from jitterlab.apps import (
    Wavefront,
    noiseless_time,
    square_grid,
    wavefront_predict,
    wavefront_simulate,
)
from jitterlab.testing import wavefront_reference

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "loggopsim"
LOGGP = jl.Message(send=1e-6, recv=1e-6, latency=5e-6)  # the reference's L, o (g = G = 0)


@pytest.fixture(scope="module")
def loggopsim_runs():
    path = REFERENCE / "wavefront_results.csv"
    if not path.exists():
        pytest.skip("../shared/reference is not beside the project")
    return pd.read_csv(path)


@pytest.fixture(scope="module")
def devref():
    return jl.read_trace(REFERENCE / "devref.trc.gz", format="loggopsim")


def reference_workload(px, py):
    return Wavefront(px, py, blocks=10, work=100e-6, iterations=2, message=LOGGP)


# --- LogGOPSim's totals -------------------------------------------------------------------

@pytest.mark.parametrize("px, py", [(8, 8), (4, 16)])
def test_on_arrival_gives_loggopsims_noiseless_total_to_the_nanosecond(loggopsim_runs, px, py):
    row = loggopsim_runs[(loggopsim_runs.px == px) & (loggopsim_runs.py == py)
                         & (loggopsim_runs.noise == "none")]
    expected_ns = round(float(row.total_time_s.iloc[0]) * 1e9)
    total = wavefront_simulate(reference_workload(px, py), progress="on_arrival")
    assert round(float(total["total_time"][0]) * 1e9) == expected_ns
    assert round(wavefront_reference(reference_workload(px, py), "on_arrival")[0] * 1e9) \
        == expected_ns


@pytest.mark.parametrize("px, py", [(8, 8), (4, 16)])
def test_with_the_reference_trace_the_mean_lies_inside_loggopsims_spread(loggopsim_runs, devref,
                                                                         px, py):
    runs = loggopsim_runs[(loggopsim_runs.px == px) & (loggopsim_runs.py == py)]
    noisy = runs[runs.noise != "none"].total_time_s
    quiet = float(runs[runs.noise == "none"].total_time_s.iloc[0])
    workload = reference_workload(px, py)
    on_arrival = wavefront_simulate(workload, devref, progress="on_arrival", runs=64, rng=3)
    assert noisy.min() <= float(on_arrival["total_time"].mean()) <= noisy.max()
    # in program order the noiseless time differs (see the next test); the time the
    # noise adds must still lie inside LogGOPSim's spread of added times
    in_order = wavefront_simulate(workload, devref, runs=64, rng=3)
    added = float(in_order["total_time"].mean() - in_order["noiseless_time"])
    assert (noisy - quiet).min() <= added <= (noisy - quiet).max()


def test_in_order_progress_differs_from_loggopsim_by_the_receive_rule(loggopsim_runs):
    # taking a message when the program reaches its receive, not when it arrives, moves
    # receive overheads around: the two rules give different totals, and only the CPU
    # time of a few receives apart (o = 1 µs per receive, 2 per block and rank)
    for px, py in [(8, 8), (4, 16)]:
        workload = reference_workload(px, py)
        in_order = float(wavefront_predict(workload)["total_time"])
        on_arrival = float(wavefront_simulate(workload, progress="on_arrival")["total_time"][0])
        assert in_order != on_arrival
        blocks = workload.iterations * len(workload.corners) * workload.blocks
        assert abs(in_order - on_arrival) < blocks * 2 * LOGGP.recv + LOGGP.one_way


# --- three ways agree without noise --------------------------------------------------------

GRIDS = [(1, 1), (2, 1), (1, 3), (2, 2), (3, 2), (2, 5), (4, 3)]


@pytest.mark.parametrize("px, py", GRIDS)
@pytest.mark.parametrize("sweeps", ["reference", "sweep3d", [(1, -1), (1, -1), (-1, 1)]])
def test_analytic_montecarlo_trace_and_reference_agree_without_noise(px, py, sweeps):
    message = jl.Message(send=0.7e-6, recv=1.3e-6, latency=4e-6, per_byte=1e-9)
    workload = Wavefront(px, py, blocks=3, work=20e-6, iterations=2, sweeps=sweeps,
                         message=message, bytes_x=100, bytes_y=300)
    analytic = wavefront_predict(workload)
    expected, finish = wavefront_reference(workload)
    quiet_law = jl.noise.Bernoulli(p=0.0, duration=1e-3)
    quiet_trace = jl.Trace(jitter=[0.0], gap=[1.0])
    results = [wavefront_simulate(workload),
               wavefront_simulate(workload, quiet_law, rng=1),
               wavefront_simulate(workload, quiet_trace, rng=1)]
    for ds in [analytic, *results]:
        np.testing.assert_allclose(ds["total_time"], expected, rtol=1e-12)
        np.testing.assert_allclose(np.squeeze(ds["finish"].to_numpy()), finish, rtol=1e-12)
    for ds in results:
        assert float(ds["slowdown"][0]) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("px, py", GRIDS)
def test_on_arrival_kernel_matches_its_plain_twin(px, py):
    workload = Wavefront(px, py, blocks=4, work=3e-6, iterations=2, message=LOGGP)
    expected, finish = wavefront_reference(workload, "on_arrival")
    ds = wavefront_simulate(workload, progress="on_arrival")
    assert float(ds["total_time"][0]) == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(ds["finish"][0], finish, rtol=1e-12)


@pytest.mark.parametrize("px, py", [(3, 4), (1, 2)])
def test_on_arrival_with_messages_piling_up(px, py):
    """A receive 10^4 times dearer than a send: the upstream ranks send a sweep's 30
    blocks long before the downstream CPUs can take them, so more events wait at once
    than the kernel's first event heap holds (4 per rank + 8: it grew to 224 and 64
    entries here, checked with a printing copy of the kernel), and the times stay those
    of the plain twin."""
    message = jl.Message(send=5e-9, recv=50e-6, latency=3e-9)
    workload = Wavefront(px, py, blocks=30, work=1e-9, message=message)
    expected, finish = wavefront_reference(workload, "on_arrival")
    ds = wavefront_simulate(workload, progress="on_arrival")
    assert float(ds["total_time"][0]) == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(ds["finish"][0], finish, rtol=1e-12)


def test_a_line_of_ranks_has_the_pipeline_closed_form():
    # one sweep along x: rank 0 computes and sends, the middle ranks receive, compute and
    # send, the last receives and computes; the middle ranks (cost w + 2o) set the pace
    w, o, latency, px, blocks = 50e-6, 1e-6, 5e-6, 6, 7
    workload = Wavefront(px, 1, blocks=blocks, work=w, sweeps=[(1, 1)],
                         message=jl.Message(send=o, recv=o, latency=latency))
    middle = w + 2 * o
    expected = (w + o) + (px - 1) * latency + (px - 2) * middle + (o + w) + (blocks - 1) * middle
    assert float(wavefront_predict(workload)["total_time"]) == pytest.approx(expected, rel=1e-12)


def test_one_rank_just_computes():
    workload = Wavefront(1, 1, blocks=5, work=1e-3, iterations=3, sweeps="sweep3d",
                         message=LOGGP)
    expected = 3 * 8 * 5 * 1e-3
    assert float(wavefront_predict(workload)["total_time"]) == pytest.approx(expected)
    np.testing.assert_allclose(wavefront_predict(workload)["iteration_time"], expected / 3)


def test_allreduce_synchronises_every_iteration():
    workload = Wavefront(3, 4, blocks=2, work=10e-6, iterations=3, message=LOGGP,
                         allreduce=True)
    predicted = wavefront_predict(workload)
    # every iteration starts from the same synchronised state, so all take as long
    times = predicted["iteration_time"].to_numpy()
    np.testing.assert_allclose(times, times[0], rtol=1e-12)
    depth = int(jl.tree_depth(12))
    without = wavefront_predict(Wavefront(3, 4, blocks=2, work=10e-6, message=LOGGP))
    assert times[0] == pytest.approx(float(without["total_time"]) + 2 * depth * LOGGP.one_way)
    assert float(predicted["total_time"]) == pytest.approx(wavefront_reference(workload)[0])
    assert float(wavefront_simulate(workload)["total_time"][0]) == \
        pytest.approx(float(predicted["total_time"]), rel=1e-12)


# --- noise ----------------------------------------------------------------------------------

def test_trace_kernel_matches_the_row_walking_twin():
    # dense jitter: most 40 µs blocks and many 1 µs sends and receives meet some
    draw = np.random.default_rng(5)
    trace = jl.Trace(jitter=draw.exponential(3e-6, 400), gap=draw.exponential(30e-6, 400))
    workload = Wavefront(3, 2, blocks=3, work=40e-6, iterations=2, message=LOGGP)
    rows = np.array([0, 5, 17, 2, 9, 30])
    jitter = trace.jitter_seconds
    starts = np.concatenate([[0.0], np.cumsum(trace.jitter_seconds + trace.gap_seconds)])
    offsets = starts[rows] + jitter[rows]
    for progress in ("in_order", "on_arrival"):
        ds = wavefront_simulate(workload, trace, start=rows, progress=progress)
        expected, finish = wavefront_reference(workload, progress, trace=trace, offsets=offsets)
        assert float(ds["total_time"][0]) == pytest.approx(expected, rel=1e-9)
        np.testing.assert_allclose(ds["finish"][0], finish, rtol=1e-9)
        assert float(ds["slowdown"][0]) > 0


def test_montecarlo_kernel_matches_the_reference_with_the_same_draws():
    workload = Wavefront(4, 3, blocks=5, work=30e-6, iterations=2, message=LOGGP)
    law = jl.noise.Exponential(mean=4e-6)
    ds = wavefront_simulate(workload, law, rng=11)
    passes = workload.iterations * len(workload.corners) * workload.blocks
    delta = law.sample((passes, workload.n), rng=np.random.default_rng(11))
    expected, _ = wavefront_reference(workload, delta=delta)
    assert float(ds["total_time"][0]) == pytest.approx(expected, rel=1e-12)


def test_bounds_hold_the_montecarlo_mean():
    workload = Wavefront(6, 5, blocks=8, work=50e-6, iterations=2, message=LOGGP)
    law = jl.noise.Exponential(mean=5e-6)
    predicted = wavefront_predict(workload, law)
    simulated = wavefront_simulate(workload, law, runs=400, rng=2)
    totals = simulated["total_time"].to_numpy()
    se = totals.std(ddof=1) / math.sqrt(totals.size)
    lower, upper = float(predicted["total_time_lower"]), float(predicted["total_time_upper"])
    assert lower - 4 * se <= totals.mean() <= upper + 4 * se
    assert float(predicted["total_time"]) < lower < upper
    # noise never makes a run faster
    assert np.all(totals >= float(simulated["noiseless_time"]))


def test_bounds_are_exact_for_a_single_rank():
    # one rank: the time is w·B + Σδ, so both bounds equal its mean
    workload = Wavefront(1, 1, blocks=4, work=1e-3, message=LOGGP)
    law = jl.noise.Exponential(mean=1e-5)
    predicted = wavefront_predict(workload, law)
    expected = 4 * 4 * (1e-3 + 1e-5)
    assert float(predicted["total_time_lower"]) == pytest.approx(expected, rel=1e-12)
    assert float(predicted["total_time_upper"]) == pytest.approx(expected, rel=1e-9)


def test_runs_are_reproducible_from_the_seed(devref):
    workload = Wavefront(4, 4, blocks=3, work=100e-6, message=LOGGP)
    a = wavefront_simulate(workload, devref, runs=3, rng=7)
    b = wavefront_simulate(workload, devref, runs=3, rng=7)
    np.testing.assert_array_equal(a["total_time"], b["total_time"])
    assert len(set(a["total_time"].to_numpy())) == 3


# --- workloads from a problem size ------------------------------------------------------------

def test_square_grid_and_problem_decomposition():
    assert [square_grid(n) for n in (1, 2, 16, 32, 128, 32768)] == \
        [(1, 1), (1, 2), (4, 4), (4, 8), (8, 16), (128, 256)]
    workload = Wavefront.from_problem((240, 240, 240), 64, cell_time=2e-8, block_height=10,
                                      angles=6, angles_per_block=3)
    assert (workload.px, workload.py, workload.n) == (8, 8, 64)
    assert workload.blocks == 24 * 2
    assert workload.work == pytest.approx(2e-8 * 30 * 30 * 10 * 3)
    assert workload.bytes_x == 30 * 10 * 3 * 8


# --- the message model ---------------------------------------------------------------------------

def test_message_wire_time_size_and_rendezvous():
    message = jl.Message(send=1e-6, recv=2e-6, latency=5e-6, per_byte=1e-9, size=1000,
                         eager_limit=1024)
    assert message.wire_time() == pytest.approx(5e-6 + 1e-6)
    assert message.wire_time(2048) == pytest.approx(3 * 5e-6 + 2048e-9)
    assert message.one_way == pytest.approx(1e-6 + 6e-6 + 2e-6)


def test_tree_barrier_takes_the_message_model():
    trace = jl.Trace(jitter=[3e-6, 1e-6], gap=[97e-6, 40e-6])
    old = jl.TreeBarrier(send=1e-6, recv=2e-6, latency=5e-6)
    new = jl.TreeBarrier(message=jl.Message(send=1e-6, recv=2e-6, latency=5e-6))
    assert old == new and old.tau == new.tau
    a = jl.simulate(trace, n=31, work=50e-6, phases=3, barrier=old, rng=4)
    b = jl.simulate(trace, n=31, work=50e-6, phases=3, barrier=new, rng=4)
    np.testing.assert_array_equal(a["phase_time"], b["phase_time"])
    sized = jl.TreeBarrier(message=jl.Message(latency=5e-6, per_byte=1e-9, size=500))
    assert sized.latency == pytest.approx(5.5e-6)
    with pytest.raises(TypeError, match="once"):
        jl.TreeBarrier(send=1e-6, message=jl.Message(send=1e-6))


# --- bad input -------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, error, match", [
    ({"px": 0}, ValueError, "px"),
    ({"py": -2}, ValueError, "py"),
    ({"blocks": 0}, ValueError, "blocks"),
    ({"work": 0.0}, ValueError, "work"),
    ({"work": -1e-6}, ValueError, "work"),
    ({"work": float("nan")}, ValueError, "work"),
    ({"iterations": 0}, ValueError, "iterations"),
    ({"sweeps": "diagonal"}, ValueError, "sweeps"),
    ({"sweeps": [(1, 0)]}, ValueError, "sweeps"),
    ({"sweeps": []}, ValueError, "sweeps"),
    ({"bytes_x": -8}, ValueError, "bytes_x"),
    ({"message": 5e-6}, TypeError, "message"),
    ({"allreduce": "yes"}, TypeError, "allreduce"),
    ({"cores_per_node": 0}, ValueError, "cores_per_node"),
])
def test_bad_workloads_name_the_argument(kwargs, error, match):
    arguments = {"px": 2, "py": 2, "blocks": 2, "work": 1e-5, **kwargs}
    with pytest.raises(error, match=match):
        Wavefront(**arguments)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"send": -1e-6}, ValueError, "send"),
    ({"recv": float("inf")}, ValueError, "recv"),
    ({"latency": float("nan")}, ValueError, "latency"),
    ({"per_byte": -1e-9}, ValueError, "per_byte"),
    ({"size": -1}, ValueError, "size"),
    ({"size": 1.5}, ValueError, "size"),
    ({"eager_limit": -4}, ValueError, "eager_limit"),
])
def test_bad_messages_name_the_argument(kwargs, error, match):
    with pytest.raises(error, match=match):
        jl.Message(**kwargs)


def test_bad_problem_and_simulation_arguments():
    with pytest.raises(ValueError, match="does not hold"):
        Wavefront.from_problem((60, 60, 60), 16, px=3, py=4, cell_time=1e-8)
    with pytest.raises(ValueError, match="larger than"):
        Wavefront.from_problem((4, 4, 4), px=8, py=1, cell_time=1e-8)
    with pytest.raises(ValueError, match="cell_time"):
        Wavefront.from_problem((8, 8, 8), 4, cell_time=-1.0)
    workload = Wavefront(2, 2, blocks=2, work=1e-5)
    no_gap = jl.Trace(jitter=[1e-6], gap=[0.0])
    with pytest.raises(ValueError, match="no gap time"):
        wavefront_simulate(workload, no_gap)
    with pytest.raises(TypeError, match="method='trace' needs a jl.Trace"):
        wavefront_simulate(workload, jl.noise.Exponential(mean=1e-6), method="trace")
    with pytest.raises(ValueError, match="progress"):
        wavefront_simulate(workload, progress="eager")
    with pytest.raises(ValueError, match="all-reduce"):
        wavefront_simulate(Wavefront(2, 2, blocks=2, work=1e-5, allreduce=True),
                           progress="on_arrival")
    with pytest.raises(TypeError, match="noise"):
        wavefront_predict(workload, noise=[1e-6])
    with pytest.raises(TypeError, match="workload"):
        wavefront_simulate("8x8")
    with pytest.raises(ValueError, match="runs"):
        wavefront_simulate(workload, runs=0)


# --- messages inside a node -------------------------------------------------------------


def _block_recurrence(workload):
    """Noiseless finish of the in-order block recurrence, every face message on its own
    wire time (intra-node where both ranks share a node): the plain twin of the model."""
    message, px, py = workload.message, workload.px, workload.py
    clock, arrive_x, arrive_y = np.zeros(workload.n), np.zeros(workload.n), np.zeros(workload.n)

    def wire(source, target, size):
        same = source // workload.cores_per_node == target // workload.cores_per_node
        return message.wire_time(size, intra_node=same)

    for _ in range(workload.iterations):
        for dx, dy in workload.corners:
            for _ in range(workload.blocks):
                for jj in range(py):
                    j = jj if dy > 0 else py - 1 - jj
                    for ii in range(px):
                        i = ii if dx > 0 else px - 1 - ii
                        rank = j * px + i
                        t = clock[rank]
                        if ii > 0:
                            t = max(t, arrive_x[rank]) + message.recv
                        if jj > 0:
                            t = max(t, arrive_y[rank]) + message.recv
                        t += workload.work
                        if ii < px - 1:
                            t += message.send
                            arrive_x[rank + dx] = t + wire(rank, rank + dx, workload.bytes_x)
                        if jj < py - 1:
                            t += message.send
                            arrive_y[rank + dy * px] = t + wire(rank, rank + dy * px,
                                                                workload.bytes_y)
                        clock[rank] = t
    return clock.max()


@pytest.mark.parametrize("px, py", [(4, 4), (3, 5), (2, 8), (1, 6)])
@pytest.mark.parametrize("cores_per_node", [1, 2, 3, 4])
def test_intra_node_messages_follow_the_block_recurrence(px, py, cores_per_node):
    message = jl.Message(send=1e-6, recv=1e-6, latency=5e-6, intra_node_latency=1e-6,
                         per_byte=1e-9)
    workload = Wavefront(px, py, blocks=7, work=100e-6, iterations=2, sweeps="sweep3d",
                         message=message, bytes_x=800, bytes_y=1600,
                         cores_per_node=cores_per_node)
    expected = _block_recurrence(workload)
    assert noiseless_time(workload) == pytest.approx(expected, rel=1e-12)
    assert wavefront_predict(workload)["total_time"].item() == pytest.approx(expected, rel=1e-12)


def test_cheaper_on_node_messages_shorten_the_fill_only():
    # a 4 x 1 line, two ranks per node: of the 3 hops of a sweep's fill, 2 stay on a node
    inter = jl.Message(latency=5e-6)
    on_node = jl.Message(latency=5e-6, intra_node_latency=1e-6)
    common = dict(blocks=10, work=100e-6, sweeps=[(1, 1)], cores_per_node=2)
    slow = noiseless_time(Wavefront(4, 1, message=inter, **common))
    fast = noiseless_time(Wavefront(4, 1, message=on_node, **common))
    assert slow - fast == pytest.approx(2 * 4e-6, rel=1e-9)
    workload = Wavefront(4, 1, message=on_node, **common)
    assert workload.has_intra_node_wire
    assert not Wavefront(4, 1, message=on_node, blocks=10, work=100e-6).has_intra_node_wire
    with pytest.raises(ValueError, match="intra-node"):
        wavefront_simulate(workload)


# --- every case run through LogGOPSim on this machine kind (tests/data) -------------------------

DATA = Path(__file__).resolve().parent / "data"


def _case_workload(case):
    message = jl.Message(send=case.o_ns * 1e-9, recv=case.o_ns * 1e-9, latency=case.L_ns * 1e-9)
    return Wavefront(int(case.px), int(case.py), blocks=int(case.blocks),
                     work=case.work_ns * 1e-9, iterations=int(case.iterations), message=message)


def test_on_arrival_matches_all_loggopsim_cases_to_the_nanosecond():
    cases = pd.read_csv(DATA / "loggopsim_wavefront_cases.csv")
    ends = pd.read_csv(DATA / "loggopsim_wavefront_rank_end.csv")
    keys = ["px", "py", "blocks", "work_ns", "iterations", "L_ns", "o_ns"]
    mismatched = []
    for case in cases.itertuples(index=False):
        ds = wavefront_simulate(_case_workload(case), progress="on_arrival")
        if round(float(ds["total_time"][0]) * 1e9) != case.total_ns:
            mismatched.append(case)
        per_rank = ends.loc[(ends[keys] == [getattr(case, k) for k in keys]).all(axis=1)]
        if len(per_rank):
            got = np.round(ds["finish"][0].to_numpy()[per_rank["rank"]] * 1e9)
            np.testing.assert_array_equal(got, per_rank["end_ns"])
    assert not mismatched, mismatched[:3]
    assert len(cases) == 254


def test_on_arrival_holds_many_messages_in_flight():
    # rank 1 meets a 2 ms detour after 100 µs while rank 0, in a quiet stretch, sends it
    # 200 messages: more pending events than the run first makes room for
    trace = jl.Trace(jitter=[1e-9, 2e-3], gap=[100e-6, 10e-3])
    workload = Wavefront(2, 1, blocks=200, work=3e-6, sweeps=[(1, 1)], message=LOGGP)
    rows = np.array([1, 0])
    offsets = np.array([1e-9 + 100e-6 + 2e-3, 1e-9])  # start of each row's gap
    ds = wavefront_simulate(workload, trace, start=rows, progress="on_arrival")
    expected, finish = wavefront_reference(workload, "on_arrival", trace=trace, offsets=offsets)
    assert float(ds["total_time"][0]) == pytest.approx(expected, rel=1e-9)
    np.testing.assert_allclose(ds["finish"][0], finish, rtol=1e-9)
    assert expected > 2e-3 + 200 * workload.work


def test_on_arrival_kernel_stays_inside_its_arrays(monkeypatch):
    # on a trace many events fall on one time: more than the first room of the queue's fifo
    # (ranks + 2), which must grow, not be written past its end. The event loop run as plain
    # Python (NumPy raises IndexError where the compiled kernel would overwrite memory)
    from jitterlab.apps import wavefront_kernels as kernels

    workload = Wavefront(4, 4, blocks=4, work=1e-4)
    trace = jl.synthetic_trace(2.0, rng=11)
    plain = wavefront_simulate(workload, trace, progress="on_arrival", rng=0)
    for name in ("_advance", "run_on_arrival", "_step_exists"):
        monkeypatch.setattr(kernels, name, getattr(kernels, name).py_func)
    checked = wavefront_simulate(workload, trace, progress="on_arrival", rng=0)
    xr.testing.assert_identical(checked, plain)


def test_detail_gives_every_blocks_end():
    workload = Wavefront(4, 1, blocks=5, work=100e-6, sweeps=[(1, 1)], message=LOGGP)
    ds = wavefront_simulate(workload, detail=True)
    ends = ds["block_end"].isel(run=0).to_numpy()
    # the first rank computes and sends one block every w + o; the last ends the run
    np.testing.assert_allclose(np.diff(ends[:, 0]), 100e-6 + LOGGP.send, rtol=1e-12)
    assert ends[-1, -1] == pytest.approx(float(ds["total_time"][0]), rel=1e-12)
    law = jl.noise.Exponential(mean=5e-6)
    with_detail = wavefront_simulate(workload, law, detail=True, rng=1)
    assert float(with_detail["total_time"][0]) == \
        float(wavefront_simulate(workload, law, rng=1)["total_time"][0])
    with pytest.raises(ValueError, match="in_order"):
        wavefront_simulate(workload, detail=True, progress="on_arrival")


# --- the event trace of a wavefront run (issue #10) ------------------------------------------
@pytest.mark.parametrize("allreduce", [False, True])
@pytest.mark.parametrize("noise", ["trace", "law"])
def test_wavefront_events_give_the_true_cost_of_the_noise(allreduce, noise):
    # every receive, compute and send with the noise it met: removing it gives the
    # noiseless run, so the estimate is the true cost (to rounding)
    wf = Wavefront(4, 6, blocks=5, work=100e-6, iterations=2, message=LOGGP,
                   allreduce=allreduce)
    source = jl.synthetic_trace(duration=1.0, rng=3) if noise == "trace" \
        else jl.noise.Exponential(mean=5e-6)
    events = wavefront_simulate(wf, source, rng=2, detail="events")
    ds = wavefront_simulate(wf, source, rng=2)
    assert events.attrs["makespan"] == float(ds["total_time"][0])
    assert events.attrs["noiseless_makespan"] == float(ds["noiseless_time"])
    kind = events.data["kind"].astype(str)
    passes = 2 * len(wf.corners) * 5
    # per pass: 24 computes, (px - 1)·py messages in x and px·(py - 1) in y
    assert (kind == "compute").sum() == passes * 24
    assert (kind == "send").sum() == (kind == "recv").sum() == passes * (3 * 6 + 4 * 5)
    assert (kind == "collective").sum() == (2 * 24 if allreduce else 0)
    truth = events.attrs["makespan"] - events.attrs["noiseless_makespan"]
    estimate = float(jl.estimate.accumulated_noise(events, "combined")["run_accumulated"][0])
    scale = float(events.data["end"].max())
    assert truth > 0
    assert estimate == pytest.approx(truth, abs=8 * np.finfo(float).eps * scale * len(events))


def test_wavefront_events_refuse_what_they_cannot_write():
    wf = Wavefront(2, 2, blocks=2, work=1e-4, message=LOGGP)
    with pytest.raises(ValueError, match="runs=1"):
        wavefront_simulate(wf, detail="events", runs=2)
    with pytest.raises(ValueError, match="progress='in_order'"):
        wavefront_simulate(wf, detail="events", progress="on_arrival")
    sized = Wavefront(2, 3, blocks=2, work=1e-4, message=jl.Message(per_byte=1e-9),
                      bytes_x=100, bytes_y=200)
    with pytest.raises(ValueError, match="same wire time in x and y"):
        wavefront_simulate(sized, detail="events")


# --- start points and sizes checked before running (issue #19) ---------------------------

def test_start_is_checked_for_every_kind_of_noise(devref):
    # start="bogus" with a noise law used to run and record "bogus" in the attributes
    workload = Wavefront(2, 2, blocks=2, work=1e-5)
    law = jl.noise.Exponential(mean=1e-6)
    for noise in (None, law, devref):
        for progress in ("in_order", "on_arrival"):
            if progress == "on_arrival" and noise is law:
                continue  # refused for its own reason
            with pytest.raises(ValueError, match=r"start must be one of .*got 'bogus'"):
                wavefront_simulate(workload, noise, start="bogus", progress=progress)
            with pytest.raises(ValueError, match=r"start must be one of .*got 3\.5"):
                wavefront_simulate(workload, noise, start=3.5, progress=progress)
            with pytest.raises(ValueError, match=r"start: explicit start rows must be 4"):
                wavefront_simulate(workload, noise, start=[0, 1], progress=progress)


def test_a_noise_law_takes_no_start_points_and_records_none():
    # a law's δ are independent per rank and block: start="synchronized" would be ignored
    workload = Wavefront(2, 2, blocks=2, work=1e-5)
    law = jl.noise.Exponential(mean=1e-6)
    with pytest.raises(ValueError, match=r"start='synchronized' has no effect with a noise law"):
        wavefront_simulate(workload, law, start="synchronized")
    with pytest.raises(ValueError, match=r"start=\[0, 1, 2, 3\] has no effect"):
        wavefront_simulate(workload, law, start=[0, 1, 2, 3])
    assert "start" not in wavefront_simulate(workload, law, rng=1).attrs


def test_the_start_of_a_replayed_trace_is_recorded(devref):
    workload = Wavefront(2, 2, blocks=2, work=1e-5)
    assert wavefront_simulate(workload, devref, start="synchronized",
                              rng=1).attrs["start"] == "synchronized"
    assert wavefront_simulate(workload, devref, start=[0, 1, 2, 3]).attrs["start"] == \
        "explicit rows"


def test_a_grid_beyond_memory_is_refused_before_allocating():
    # a 10^6 × 10^6 grid used to end in numpy's MemoryError after seconds
    huge = Wavefront(10**6, 10**6, blocks=10, work=1e-5)
    law = jl.noise.Exponential(mean=1e-6)
    for call in (lambda: wavefront_simulate(huge), lambda: wavefront_simulate(huge, law),
                 lambda: wavefront_simulate(huge, progress="on_arrival"),
                 lambda: wavefront_predict(huge), lambda: wavefront_predict(huge, law),
                 lambda: noiseless_time(huge)):
        with pytest.raises(jl.limits.ResourceLimitError,
                           match=r"1000000 × 1000000 grid .* about [\d.]+ TB.*smaller grid "
                                 r"\(px, py\).*allow_large=True"):
            call()
    long = Wavefront(100, 100, blocks=1000, work=1e-5, iterations=100)
    with pytest.raises(jl.limits.ResourceLimitError, match=r"detail=True .* or detail=False"):
        wavefront_simulate(long, detail=True)
    with pytest.raises(jl.limits.ResourceLimitError, match=r"detail='events'"):
        wavefront_simulate(long, detail="events")
    with pytest.raises(jl.limits.ResourceLimitError, match=r"runs=1000000000"):
        wavefront_simulate(Wavefront(2, 2, blocks=2, work=1e-5), runs=10**9)


def test_an_event_driven_run_of_hours_is_refused_before_it_starts():
    # 9·10⁴ ranks (54 MB: fits) but 3.6·10¹¹ rank-blocks: over an hour unless the kernel
    # took less than 10 ns per rank-block (it takes microseconds); it ran silently before
    import time

    workload = Wavefront(300, 300, blocks=1000, work=1e-5, iterations=1000)
    started = time.perf_counter()
    with pytest.raises(jl.limits.ResourceLimitError,
                       match=r"progress='on_arrival'\) of a 300 × 300 grid .*3\.6e\+11 "
                             r"rank-blocks at [\d.]+ µs each, timed on a 16 × 16 grid now\) "
                             r"would take about .* more than the 1 h allowed: give a smaller "
                             r"grid .*progress='in_order'.*allow_large=True"):
        wavefront_simulate(workload, progress="on_arrival")
    assert time.perf_counter() - started < 30  # the 16 × 16 probe, twice


def test_the_duration_limit_of_the_event_driven_run_and_its_opt_in(monkeypatch, devref):
    import jitterlab.apps.wavefront as wavefront_module

    workload = Wavefront(4, 3, blocks=2, work=1e-5)
    expected = wavefront_simulate(workload, devref, progress="on_arrival", rng=3)
    monkeypatch.setattr(wavefront_module, "_ON_ARRIVAL_TIMED_ABOVE", 0)
    monkeypatch.setattr(jl.limits, "MAX_PLANNED_SECONDS", 1e-9)
    with pytest.raises(jl.limits.ResourceLimitError, match=r"runs=2 and the noiseless run "
                       r"\(288 rank-blocks"):
        wavefront_simulate(workload, devref, progress="on_arrival", rng=3, runs=2)
    allowed = wavefront_simulate(workload, devref, progress="on_arrival", rng=3,
                                 allow_large=True)
    xr.testing.assert_identical(allowed, expected)
    monkeypatch.setenv("JITTERLAB_ALLOW_LARGE", "1")
    xr.testing.assert_identical(
        wavefront_simulate(workload, devref, progress="on_arrival", rng=3), expected)


def test_a_small_event_driven_run_is_not_timed_first(monkeypatch):
    import jitterlab.apps.wavefront as wavefront_module

    def no_probe(workload):
        raise AssertionError("the kernel was timed for a small run")

    monkeypatch.setattr(wavefront_module, "_on_arrival_seconds_per_rank_block", no_probe)
    assert wavefront_simulate(Wavefront(8, 8, blocks=4, work=1e-5), progress="on_arrival",
                              runs=3)["total_time"].shape == (3,)


def test_allow_large_lifts_the_memory_check(monkeypatch):
    monkeypatch.setattr(jl.limits, "available_memory", lambda: 100)  # 100 B free
    monkeypatch.setattr(jl.limits, "_ALWAYS_FITS", 0)
    workload = Wavefront(3, 2, blocks=2, work=1e-5)
    with pytest.raises(jl.limits.ResourceLimitError, match="about"):
        wavefront_simulate(workload)
    with pytest.raises(jl.limits.ResourceLimitError, match="about"):
        wavefront_predict(workload)
    expected = float(wavefront_simulate(workload, allow_large=True)["total_time"][0])
    assert float(wavefront_predict(workload, allow_large=True)["total_time"]) == expected
    assert noiseless_time(workload, allow_large=True) == expected
    monkeypatch.setenv("JITTERLAB_ALLOW_LARGE", "1")
    assert float(wavefront_simulate(workload)["total_time"][0]) == expected
    with pytest.raises(TypeError, match="allow_large"):
        wavefront_predict(workload, allow_large="yes")
