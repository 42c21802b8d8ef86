"""Fitting the wavefront model to run times, and the OS-upgrade prediction (seed 002)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import jitterlab as jl
from jitterlab.apps.calibrate import (
    SweepStructure,
    fit_sweep_costs,
    predict_runtimes,
    predict_upgrade,
    sweep_workload,
)

RUNS = pd.DataFrame({"cells_per_side": [60, 60, 60, 120, 120, 120],
                     "cores": [4, 8, 16, 8, 16, 64]})
TRUE = (3e-5, 0.05)  # cell time and message cost per iteration-equivalent [s]


def synthetic_runs(scatter=None):
    runs = RUNS.copy()
    runs["actual_s"] = predict_runtimes(runs, *TRUE)
    if scatter is not None:
        runs["actual_s"] *= 1.0 + scatter
    return runs


def test_the_fit_recovers_costs_that_generated_the_runs():
    fit = fit_sweep_costs(synthetic_runs(), start=(1e-5, 0.2))
    assert float(fit["cell_time"]) == pytest.approx(TRUE[0], rel=1e-5)
    assert float(fit["latency"]) == pytest.approx(TRUE[1], rel=1e-4)
    assert np.abs(fit["error_percent"]).max() < 1e-3
    assert np.abs(fit["loo_error_percent"]).max() < 1e-2


def test_standard_errors_follow_the_scatter():
    # 2 % multiplicative scatter: the true costs lie within 4 standard errors of the fit,
    # and the leave-one-out errors are larger than the in-sample ones
    scatter = np.random.default_rng(3).normal(0.0, 0.02, len(RUNS))
    fit = fit_sweep_costs(synthetic_runs(scatter), start=TRUE)
    for name, true in zip(("cell_time", "latency"), TRUE, strict=True):
        se = float(fit[f"{name}_se"])
        assert se > 0
        assert abs(float(fit[name]) - true) < 4 * se
    assert np.abs(fit["loo_error_percent"]).mean() > np.abs(fit["error_percent"]).mean()


def test_workload_of_a_problem():
    workload = sweep_workload(120, 16, cell_time=1e-8, latency=5e-6)
    assert (workload.px, workload.py) == (4, 4)
    structure = SweepStructure()
    assert workload.blocks == (120 // structure.block_height) * (
        structure.angles // structure.angles_per_block)
    assert workload.allreduce and workload.corners.shape == (8, 2)


def test_upgrade_prediction_without_noise_is_the_model_with_new_costs():
    runs = synthetic_runs()
    fit = fit_sweep_costs(runs, start=TRUE)
    same = predict_upgrade(runs, fit, compute_slowdown=0.0, extra_latency=0.0,
                           message_cost=5e-6)
    np.testing.assert_allclose(same["predicted_s"], runs["actual_s"], rtol=1e-4)
    slower = predict_upgrade(runs, fit, compute_slowdown=0.03, extra_latency=4e-6,
                             message_cost=5e-6)
    ratio = (slower["predicted_s"] / same["predicted_s"]).to_numpy()
    # compute 3 % slower and messages 80 % dearer: between +3 % and +80 %, more with
    # more cores (the messages' share grows)
    assert np.all((ratio > 1.03 - 1e-9) & (ratio < 1.8))
    assert ratio[2] > ratio[0]
    np.testing.assert_array_equal(slower["noise_slowdown"], 0.0)


def test_upgrade_noise_slowdown_has_a_standard_error():
    runs = synthetic_runs().iloc[:2]
    fit = fit_sweep_costs(synthetic_runs(), start=TRUE)
    law = jl.noise.Exponential(mean=1e-6)
    noisy = predict_upgrade(runs, fit, 0.0, 0.0, 5e-6, noise=law, repeats=4, rng=2)
    assert np.all(noisy["noise_slowdown"] > 0)
    assert np.all(noisy["noise_slowdown_se"] > 0)
    assert np.all(noisy["predicted_s"] > noisy["noiseless_s"])


@pytest.mark.parametrize("runs, match", [
    (RUNS, "actual_s"),
    (synthetic_runs().iloc[:2], "at least 3"),
    ("table.csv", "DataFrame"),
])
def test_bad_runs_are_refused(runs, match):
    with pytest.raises((TypeError, ValueError), match=match):
        fit_sweep_costs(runs)


def test_bad_upgrade_arguments():
    runs = synthetic_runs()
    fit = fit_sweep_costs(runs, start=TRUE)
    with pytest.raises(ValueError, match="message_cost"):
        predict_upgrade(runs, fit, 0.03, 4e-6, message_cost=0.0)
    with pytest.raises(ValueError, match="extra_latency"):
        predict_upgrade(runs, fit, 0.03, -4e-6, message_cost=5e-6)
    with pytest.raises(ValueError, match="compute_slowdown"):
        predict_upgrade(runs, fit, -2.0, 4e-6, message_cost=5e-6)
    with pytest.raises(ValueError, match="block_height"):
        SweepStructure(block_height=0)


def test_prediction_error_carries_the_fit_covariance():
    # with 2 % scatter the prediction's standard error is of the order of the fit's, and
    # equals the cell-time error alone where compute is (nearly) all of the time
    scatter = np.random.default_rng(3).normal(0.0, 0.02, len(RUNS))
    fit = fit_sweep_costs(synthetic_runs(scatter), start=TRUE)
    predicted = predict_upgrade(RUNS, fit, 0.0, 0.0, message_cost=5e-6)
    relative = (predicted["predicted_se"] / predicted["predicted_s"]).to_numpy()
    cell = float(fit["cell_time_se"]) / float(fit["cell_time"])
    assert np.all(relative > 0)
    assert relative[0] == pytest.approx(cell, rel=0.2)  # 60^3 on 4 cores: compute-bound
    one = RUNS.iloc[[0]].assign(cores=1)
    alone = predict_upgrade(one, fit, 0.0, 0.0, message_cost=5e-6)
    assert float(alone["predicted_se"][0] / alone["predicted_s"][0]) == pytest.approx(cell,
                                                                                     rel=1e-3)
