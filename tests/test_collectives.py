"""Dissemination barrier and recursive-doubling all-reduce in jl.simulate (issue #13)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import jitterlab as jl
from jitterlab.sim import collective_kernels as _collkernels
from jitterlab.testing import walk

DATA = Path(__file__).resolve().parent / "data"
REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "loggopsim"
LOGGP = jl.Message(send=1e-6, recv=1e-6, latency=5e-6)


def reference_rounds(kind, trace, offsets, work, phases, message):
    """Plain twin of the kernel: every op walks the trace row by row."""
    jitter = np.asarray(trace.jitter_seconds, dtype=float)
    gap = np.asarray(trace.gap_seconds, dtype=float)
    n = offsets.size

    def busy(task, t, cpu):
        return t if cpu <= 0 else walk(jitter, gap, offsets[task] + t, cpu) - offsets[task]

    clock = np.zeros(n)
    ends = []
    for _ in range(phases):
        clock = np.array([busy(task, clock[task], work) for task in range(n)])
        for k in range(_collkernels.round_count(kind, n)):
            arrival = np.full(n, -np.inf)
            for task in range(n):
                target, _ = _collkernels.partner(kind, n, k, task)
                if target >= 0:
                    clock[task] = busy(task, clock[task], message.send)
                    arrival[target] = clock[task] + message.wire_time()
            for task in range(n):
                _, source = _collkernels.partner(kind, n, k, task)
                if source >= 0:
                    clock[task] = busy(task, max(clock[task], arrival[task]), message.recv)
        ends.append(clock.max())
    return np.diff(ends, prepend=0.0)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 12, 16, 33])
def test_schedules_pair_every_send_with_one_receive(n):
    for kind in (_collkernels.DISSEMINATION, _collkernels.RECURSIVE_DOUBLING):
        for k in range(_collkernels.round_count(kind, n)):
            sends = {}
            receives = {}
            for task in range(n):
                target, source = _collkernels.partner(kind, n, k, task)
                if target >= 0:
                    sends[task] = target
                if source >= 0:
                    receives[task] = source
            assert {(s, t) for s, t in sends.items()} == {(s, t) for t, s in receives.items()}
    # every task hears, directly or not, from every other: the barrier's guarantee
    heard = [{task} for task in range(n)]
    kind = _collkernels.DISSEMINATION
    for k in range(_collkernels.round_count(kind, n)):
        incoming = [set(h) for h in heard]
        for task in range(n):
            target, _ = _collkernels.partner(kind, n, k, task)
            incoming[target] |= heard[task]
        heard = incoming
    assert all(len(h) == n for h in heard)


def test_round_counts():
    assert [jl.Dissemination().rounds(n) for n in (1, 2, 3, 1000, 1024, 1025)] == \
        [0, 1, 2, 10, 10, 11]
    assert [jl.RecursiveDoubling().rounds(n) for n in (1, 2, 3, 1000, 1024)] == \
        [0, 1, 3, 11, 10]


@pytest.fixture(scope="module")
def loggopsim_runs():
    path = REFERENCE / "collective_results.csv"
    if not path.exists():
        pytest.skip("../shared/reference is not beside the project")
    return pd.read_csv(path)


@pytest.mark.parametrize("kind, n", [("dissemination", 1000), ("dissemination", 1024),
                                     ("recdoubling", 1024)])
def test_loggopsim_totals_without_and_with_noise(loggopsim_runs, kind, n):
    runs = loggopsim_runs[(loggopsim_runs.collective == kind) & (loggopsim_runs.n_ranks == n)]
    barrier = jl.Dissemination(LOGGP) if kind == "dissemination" else jl.RecursiveDoubling(LOGGP)
    quiet = jl.Trace(jitter=[0.0], gap=[1.0])
    ds = jl.simulate(quiet, n=n, work=1e-3, phases=10, barrier=barrier, rng=0)
    expected_ns = round(float(runs[runs.noise == "none"].total_time_s.iloc[0]) * 1e9)
    assert round(float(ds["phase_time"].sum()) * 1e9) == expected_ns
    noisy = runs[runs.noise != "none"].total_time_s
    trace = jl.read_trace(DATA / "devref.trc.gz", format="loggopsim")
    totals = [float(jl.simulate(trace, n=n, work=1e-3, phases=10, barrier=barrier,
                                rng=seed)["phase_time"].sum()) for seed in range(16)]
    assert noisy.min() <= np.mean(totals) <= noisy.max()


@pytest.mark.parametrize("barrier", [jl.Dissemination(LOGGP), jl.RecursiveDoubling(LOGGP)])
@pytest.mark.parametrize("n", [1, 6, 16])
def test_kernel_matches_its_plain_twin_on_a_dense_trace(barrier, n):
    draw = np.random.default_rng(n)
    trace = jl.Trace(jitter=draw.exponential(3e-6, 300), gap=draw.exponential(30e-6, 300))
    rows = draw.integers(0, 300, n)
    starts = np.concatenate([[0.0], np.cumsum(trace.jitter_seconds + trace.gap_seconds)])
    offsets = starts[rows] + trace.jitter_seconds[rows]
    ds = jl.simulate(trace, n=n, work=40e-6, phases=3, start=rows, barrier=barrier)
    expected = reference_rounds(barrier._kind, trace, offsets, 40e-6, 3, barrier.message)
    np.testing.assert_allclose(ds["phase_time"], expected, rtol=1e-9)


def test_noiseless_phase_is_work_plus_rounds_of_one_way_hops():
    quiet = jl.Trace(jitter=[0.0], gap=[1.0])
    for barrier in (jl.Dissemination(LOGGP), jl.RecursiveDoubling(LOGGP)):
        for n in (2, 7, 64):
            ds = jl.simulate(quiet, n=n, work=1e-4, phases=2, barrier=barrier, rng=1)
            np.testing.assert_allclose(ds["phase_time"], 1e-4 + barrier.noiseless_time(n),
                                       rtol=1e-12)


def test_collectives_side_by_side_and_their_bad_input():
    trace = jl.read_trace(DATA / "devref.trc.gz", format="loggopsim")
    barriers = {"tree": jl.TreeBarrier(message=LOGGP), "dissemination": jl.Dissemination(LOGGP),
                "recursive doubling": jl.RecursiveDoubling(LOGGP)}
    slowdown = {name: float(jl.simulate(trace, n=256, work=1e-3, phases=5, barrier=b,
                                        rng=2)["slowdown"]) for name, b in barriers.items()}
    assert all(value > 0 for value in slowdown.values())
    with pytest.raises(TypeError, match="message"):
        jl.Dissemination(message=5e-6)
    with pytest.raises(TypeError, match="barrier"):
        jl.simulate(trace, n=4, work=1e-3, barrier="dissemination")


def test_theorem1_analogue_for_each_collective_holds_the_simulated_mean():
    # Theorem 1 assumes noise in the compute only: with messages of no CPU time (wire
    # only) no jitter can stretch them, and E[max(w + δ)] <= E[θ] <= E[max(w + δ)] +
    # rounds × hop must hold within the simulation error
    trace = jl.Trace(jitter=[20e-6] * 50, gap=list(np.random.default_rng(4).uniform(
        0.5e-3, 1.5e-3, 50)))
    work = 200e-6
    law = jl.noise.from_trace(trace, work) + work
    wire = jl.Message(latency=5e-6)
    for barrier in (jl.TreeBarrier(message=wire), jl.Dissemination(wire),
                    jl.RecursiveDoubling(wire)):
        bounds = jl.theorem1_bounds(law, n=64, barrier=barrier)
        runs = np.array([jl.simulate(trace, n=64, work=work, phases=40, barrier=barrier,
                                     rng=seed)["phase_time"].to_numpy()[1:].mean()
                         for seed in range(8)])
        se = runs.std(ddof=1) / np.sqrt(runs.size)
        assert float(bounds["lower"][0]) - 4 * se <= runs.mean() <= \
            float(bounds["upper"][0]) + 4 * se
    assert int(jl.theorem1_bounds(law, n=1000, barrier=jl.Dissemination(LOGGP))["depth"][0]) == 10
    with pytest.raises(TypeError, match="barrier"):
        jl.theorem1_bounds(law, n=8, barrier="tree")


@pytest.mark.parametrize("collective", [jl.Dissemination(), jl.RecursiveDoubling()],
                         ids=["dissemination", "recursive doubling"])
@pytest.mark.parametrize(("n", "error"), [(0, ValueError), (-5, ValueError), (2.7, ValueError),
                                          (True, TypeError), ("8", TypeError)])
def test_rounds_and_noiseless_time_refuse_a_bad_task_count(collective, n, error):
    # rounds(-5), rounds(2.7) and noiseless_time(0) used to answer
    with pytest.raises(error, match="^n must"):
        collective.rounds(n)
    with pytest.raises(error, match="^n must"):
        collective.noiseless_time(n)
