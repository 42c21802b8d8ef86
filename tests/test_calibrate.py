"""Fitting the wavefront model to run times, and the OS-upgrade prediction (seed 002)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import jitterlab as jl
from jitterlab.apps.calibrate import (
    SweepStructure,
    choose_structure,
    fit_sweep_costs,
    predict_held_out,
    predict_runtimes,
    predict_upgrade,
    run_ids,
    sample_upgrade,
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


# --- calibration on a declared subset: ids recorded, predictions out of sample -------------

CALIBRATION = RUNS.assign(table=1).iloc[:4]   # the runs the fit may see
HELD_OUT = pd.DataFrame({"table": 1, "cells_per_side": [120, 60], "cores": [32, 32]})


def runs_of(structure, runs, costs=TRUE):
    runs = runs.copy()
    runs["actual_s"] = predict_runtimes(runs, *costs, structure)
    return runs


def test_fit_records_the_runs_it_was_calibrated_on():
    fit = fit_sweep_costs(runs_of(SweepStructure(), CALIBRATION), start=TRUE)
    assert fit.attrs["calibrated_on"] == ("Table 1: 60^3 on 4 cores", "Table 1: 60^3 on 8 cores",
                                          "Table 1: 60^3 on 16 cores",
                                          "Table 1: 120^3 on 8 cores")
    assert list(fit["run_id"].values) == list(fit.attrs["calibrated_on"])
    assert run_ids(pd.DataFrame({"id": ["a"], "cells_per_side": [8], "cores": [2]})) == ["a"]


def test_held_out_runs_are_predicted_and_calibration_runs_refused():
    structure = SweepStructure()
    fit = fit_sweep_costs(runs_of(structure, CALIBRATION), start=(1e-5, 0.2))
    held = predict_held_out(runs_of(structure, HELD_OUT), fit, structure)
    # noiseless runs from the true costs: the out-of-sample prediction is exact
    np.testing.assert_allclose(held["error_percent"], 0.0, atol=1e-3)
    assert held.attrs["calibrated_on"] == fit.attrs["calibrated_on"]
    with pytest.raises(ValueError, match="fed the fit"):
        predict_held_out(runs_of(structure, CALIBRATION.iloc[[1]]), fit, structure)
    with pytest.raises(ValueError, match="fed the fit"):
        sample_upgrade(CALIBRATION.iloc[[0]], fit, (5e-6, 5e-6), samples=2)


def test_verdict_refuses_a_calibration_run():
    from jitterlab.compare.validate import (
        CalibrationOverlapError,
        Prediction,
        Reference,
        RelativeDifference,
        verdict,
    )
    fit = fit_sweep_costs(runs_of(SweepStructure(), CALIBRATION), start=TRUE)
    prediction = Prediction(1.0, calibrated_on=fit.attrs["calibrated_on"])
    with pytest.raises(CalibrationOverlapError):
        verdict(prediction, Reference(1.0, id=fit.attrs["calibrated_on"][0]),
                RelativeDifference(0.1), claim="a calibration run")
    held_id = run_ids(HELD_OUT)[0]
    assert verdict(prediction, Reference(1.0, id=held_id), RelativeDifference(0.1),
                   claim="a held-out run").status == "reproduced"


def test_prediction_interval_holds_new_runs_with_the_calibration_scatter():
    # 2 % multiplicative scatter on every run: the held-out errors, in units of the
    # prediction's standard error, stay within 4 (a normal tail of 6e-5 per run)
    structure = SweepStructure()
    runs = pd.concat([CALIBRATION, HELD_OUT], ignore_index=True)
    actual = runs_of(structure, runs)
    actual["actual_s"] *= 1.0 + np.random.default_rng(4).normal(0.0, 0.02, len(runs))
    fit = fit_sweep_costs(actual.iloc[:4], structure, start=TRUE)
    held = predict_held_out(actual.iloc[4:], fit, structure)
    z = (held["predicted_s"] - held["actual_s"]) / held["prediction_se"]
    assert np.all(np.abs(z) < 4.0)
    assert np.all(held["prediction_se"] > held["fit_se"])


def test_blocking_is_chosen_from_the_calibration_runs_alone():
    # the calibration runs come from one blocking, the held-out runs from another: the
    # choice follows the runs it is given, so it cannot have looked at the held-out ones
    coarse, fine = SweepStructure(), SweepStructure(block_height=2, angles_per_block=1)
    runs = pd.concat([CALIBRATION, HELD_OUT], ignore_index=True)
    calibration = runs_of(coarse, runs).iloc[:4]
    chosen, table = choose_structure(calibration, [fine, coarse])
    assert chosen == coarse and table["chosen"].tolist() == [False, True]
    assert table.loc[1, "leave_one_out_percent"] < 1e-2
    swapped, _ = choose_structure(runs_of(fine, runs).iloc[:4], [fine, coarse])
    assert swapped == fine
    with pytest.raises(ValueError, match="at least 4"):
        choose_structure(calibration.iloc[:3], [coarse])
    with pytest.raises(TypeError, match="SweepStructure"):
        choose_structure(calibration, ["sweep3d"])


def test_sampled_upgrade_without_spread_is_the_deterministic_one():
    # one rank per node: every message is inter-node, as in predict_upgrade
    structure = SweepStructure()
    fit = fit_sweep_costs(runs_of(structure, CALIBRATION), start=TRUE)
    fit = fit.assign(cell_time_se=0.0 * fit["cell_time_se"], latency_se=0.0 * fit["latency_se"])
    sampled = sample_upgrade(HELD_OUT, fit, (5e-6, 5e-6), structure, compute_slowdown=(0.03, 0.03),
                             extra_latency=(4e-6, 4e-6), intra_node_fraction=(1.0, 1.0),
                             cores_per_node=1, samples=3, rng=1)
    fixed = predict_upgrade(HELD_OUT, fit, 0.03, 4e-6, 5e-6, structure=structure)
    np.testing.assert_allclose(sampled["new_s"], np.tile(fixed["predicted_s"], (3, 1)), rtol=1e-9)
    np.testing.assert_allclose(sampled["increase"] + 1.0, sampled["new_s"] / sampled["old_s"])


def test_cheaper_on_node_messages_shorten_the_prediction():
    structure = SweepStructure()
    fit = fit_sweep_costs(runs_of(structure, CALIBRATION), start=TRUE)
    common = dict(compute_slowdown=(0.0, 0.0), extra_latency=(0.0, 0.0), samples=4, rng=2)
    same = sample_upgrade(HELD_OUT, fit, (5e-6, 5e-6), intra_node_fraction=(1.0, 1.0), **common)
    free = sample_upgrade(HELD_OUT, fit, (5e-6, 5e-6), intra_node_fraction=(0.0, 0.0), **common)
    np.testing.assert_allclose(same["increase"], 0.0, atol=1e-12)
    assert np.all(free["new_s"] < same["new_s"])


@pytest.mark.parametrize("kwargs, match", [
    (dict(message_cost=(5e-6, 1e-6)), "message_cost"),
    (dict(message_cost=(0.0, 1e-6)), "message_cost"),
    (dict(message_cost=5e-6), "message_cost"),
    (dict(message_cost=(1e-6, 5e-6), extra_latency=(-1e-6, 1e-6)), "extra_latency"),
    (dict(message_cost=(1e-6, 5e-6), samples=1), "samples"),
])
def test_bad_upgrade_ranges_are_refused(kwargs, match):
    fit = fit_sweep_costs(runs_of(SweepStructure(), CALIBRATION), start=TRUE)
    with pytest.raises((TypeError, ValueError), match=match):
        sample_upgrade(HELD_OUT, fit, **kwargs)


# --- what the runs cannot identify, and runs that are not whole configurations (issue #19) --

def test_a_cost_the_runs_cannot_identify_is_refused_not_reported_with_tiny_errors():
    # one configuration repeated: only one combination of the costs is measured (the fit
    # used to report the message cost to ±0.0002 %); all on one core: no message at all
    repeated = pd.DataFrame({"cells_per_side": [60, 60, 60], "cores": [16, 16, 16]})
    repeated["actual_s"] = predict_runtimes(repeated, *TRUE) * [1.0, 1.01, 0.99]
    with pytest.raises(ValueError, match=r"cannot identify the cell time and the message "
                                         r"cost separately.*60\^3 on 16 cores"):
        fit_sweep_costs(repeated)
    serial = pd.DataFrame({"cells_per_side": [60, 80, 100], "cores": [1, 1, 1]})
    serial["actual_s"] = predict_runtimes(serial, *TRUE) * [1.0, 1.01, 0.99]
    with pytest.raises(ValueError, match=r"cannot identify the message cost \(latency\)"):
        fit_sweep_costs(serial)


def test_leave_one_out_is_nan_where_the_other_runs_cannot_identify_the_costs():
    # leaving out the only 120^3 run leaves one configuration: no prediction, not a number
    runs = pd.DataFrame({"cells_per_side": [120, 60, 60, 60], "cores": [8, 16, 16, 16]})
    runs["actual_s"] = predict_runtimes(runs, *TRUE) * [1.0, 1.01, 0.99, 1.0]
    fit = fit_sweep_costs(runs, start=TRUE)
    loo = fit["loo_error_percent"].to_numpy()
    assert np.isnan(loo[0]) and np.all(np.isfinite(loo[1:]))
    with pytest.raises(ValueError, match=r"leaving out the run\(s\) \['120\^3 on 8 cores'\]"):
        choose_structure(runs, [SweepStructure()])


def test_a_fractional_size_or_core_count_is_refused_everywhere():
    # cells_per_side=60.5 used to be fitted as 60 and reported as 60.5
    bad = synthetic_runs()
    bad["cells_per_side"] = bad["cells_per_side"].astype(float)
    bad.loc[1, "cells_per_side"] = 60.5
    fit = fit_sweep_costs(synthetic_runs(), start=TRUE)
    calls = [lambda: fit_sweep_costs(bad), lambda: predict_runtimes(bad, *TRUE),
             lambda: predict_held_out(bad, fit), lambda: run_ids(bad),
             lambda: sample_upgrade(bad, fit, (5e-6, 5e-6), samples=2),
             lambda: predict_upgrade(bad, fit, 0.03, 4e-6, 5e-6),
             lambda: choose_structure(bad, [SweepStructure()])]
    for call in calls:
        with pytest.raises(ValueError, match=r"runs\['cells_per_side'\] \(row 1\).*60\.5"):
            call()
    cores = synthetic_runs().assign(cores=[4, 8, 16.5, 8, 16, 64])
    with pytest.raises(ValueError, match=r"runs\['cores'\] \(row 2\).*16\.5"):
        fit_sweep_costs(cores)
    whole = synthetic_runs().assign(cells_per_side=RUNS["cells_per_side"].astype(float))
    np.testing.assert_array_equal(predict_runtimes(whole, *TRUE),
                                  predict_runtimes(RUNS, *TRUE))


def test_blocks_of_more_angles_than_exist_are_refused():
    with pytest.raises(ValueError, match=r"angles_per_block \(7\) must not exceed angles"):
        SweepStructure(angles=6, angles_per_block=7)
    with pytest.raises(ValueError, match="sweeps"):
        SweepStructure(sweeps="chimaera")


def test_sample_upgrade_checks_its_memory_and_allow_large_lifts_it(monkeypatch):
    fit = fit_sweep_costs(runs_of(SweepStructure(), CALIBRATION), start=TRUE)
    # 10 kB free: the draws (48 B per sample and run: 9.6 kB) are refused, not the model
    monkeypatch.setattr(jl.limits, "available_memory", lambda: 10**4)
    monkeypatch.setattr(jl.limits, "_ALWAYS_FITS", 0)
    with pytest.raises(jl.limits.ResourceLimitError, match=r"samples=100 and 2 runs.*fewer"):
        sample_upgrade(HELD_OUT, fit, (5e-6, 5e-6), samples=100, rng=1)
    allowed = sample_upgrade(HELD_OUT, fit, (5e-6, 5e-6), samples=100, rng=1, allow_large=True)
    assert allowed["new_s"].shape == (100, 2)
