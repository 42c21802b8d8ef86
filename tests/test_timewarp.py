"""Time Warp (ROSS) as GVT epochs under noise (seed 004, issue #12)."""

from __future__ import annotations

import numpy as np
import pytest

import jitterlab as jl
from jitterlab.apps import TimeWarp, timewarp_predict

MESSAGE = jl.Message(send=1e-6, recv=1e-6, latency=5e-6)


def test_noiseless_rate_is_the_closed_form():
    model = TimeWarp(event_cost=4e-6, batch=8, gvt_interval=256, remote_fraction=0.5,
                     efficiency=0.9, message=MESSAGE, collective="dissemination", allreduces=2)
    ds = timewarp_predict(model, n=[1, 2, 1000])
    work = 8 * 256 * (4e-6 + 0.5 * 2e-6)
    rounds = np.array([0, 1, 10])
    epoch = work + 2 * rounds * MESSAGE.one_way
    np.testing.assert_allclose(ds["epoch_time"], epoch, rtol=1e-12)
    np.testing.assert_allclose(ds["event_rate"], np.array([1, 2, 1000]) * (0.9 * 8 * 256) / epoch,
                               rtol=1e-12)
    assert float(ds["parallel_efficiency"][0]) == pytest.approx(1.0)


def test_longer_gvt_intervals_amortise_the_all_reduces():
    rates = [float(timewarp_predict(TimeWarp(event_cost=2e-6, gvt_interval=g, message=MESSAGE),
                                    n=16384)["event_rate"][0]) for g in (16, 256, 4096)]
    assert rates[0] < rates[1] < rates[2]


@pytest.mark.parametrize("collective", ["recursive_doubling", "dissemination", "tree"])
def test_bounds_from_a_law_hold_the_trace_driven_rate(collective):
    # Theorem 1's argument needs noiseless messages; a send or receive of no CPU time
    # meets no jitter (even one that starts inside a detour does not wait it out), so with
    # only wire time the bounds must hold for the trace-driven epochs
    draw = np.random.default_rng(3)
    trace = jl.Trace(jitter=[50e-6] * 40, gap=list(draw.uniform(2e-3, 6e-3, 40)))
    cheap = jl.Message(latency=5e-6)
    model = TimeWarp(event_cost=2e-6, batch=4, gvt_interval=64, message=cheap,
                     collective=collective)
    law = jl.noise.from_trace(trace, model.epoch_work)
    bounds = timewarp_predict(model, n=256, noise=law)
    runs = np.array([float(timewarp_predict(model, n=256, noise=trace, phases=40,
                                            rng=seed)["epoch_time_noisy"][0])
                     for seed in range(6)])
    se = runs.std(ddof=1) / np.sqrt(runs.size)
    assert float(bounds["epoch_time_lower"][0]) - 4 * se <= runs.mean() <= \
        float(bounds["epoch_time_upper"][0]) + 4 * se
    assert float(bounds["event_rate_lower"][0]) <= float(bounds["event_rate"][0])


@pytest.mark.parametrize("kwargs, error, match", [
    ({"event_cost": 0.0}, ValueError, "event_cost"),
    ({"event_cost": -1e-6}, ValueError, "event_cost"),
    ({"remote_fraction": 1.5}, ValueError, "remote_fraction"),
    ({"remote_fraction": -0.1}, ValueError, "remote_fraction"),
    ({"efficiency": 0.0}, ValueError, "efficiency"),
    ({"gvt_interval": 0}, ValueError, "gvt_interval"),
    ({"batch": 0}, ValueError, "batch"),
    ({"collective": "ring"}, ValueError, "collective"),
    ({"allreduces": 0}, ValueError, "allreduces"),
    ({"message": 1e-6}, TypeError, "message"),
])
def test_bad_input_names_the_argument(kwargs, error, match):
    with pytest.raises(error, match=match):
        TimeWarp(**{"event_cost": 1e-6, **kwargs})


def test_bad_prediction_arguments():
    model = TimeWarp(event_cost=1e-6)
    with pytest.raises(TypeError, match="model"):
        timewarp_predict("phold", n=4)
    with pytest.raises(TypeError, match="noise"):
        timewarp_predict(model, n=4, noise=[1e-6])
    with pytest.raises(ValueError, match="phases"):
        timewarp_predict(model, n=4, noise=jl.Trace(jitter=[1e-6], gap=[1e-3]), phases=1)
