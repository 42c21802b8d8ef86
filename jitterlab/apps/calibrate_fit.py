"""Fitting the sweep model's two costs to a declared subset of runs, and predicting the rest.

:func:`fit_sweep_costs` (the compute time per cell and the message cost, with their
standard errors and leave-one-out errors; the ids of the runs it used in
``calibrated_on``), :func:`choose_structure` (the blocking, chosen on those runs alone)
and :func:`predict_held_out` (every other run, refusing one the fit has seen), seed 002's
§3.2 as :mod:`~jitterlab.apps.calibrate` describes it.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import xarray as xr
from scipy.optimize import least_squares

from ..base.checks import check_positive
from ..base.provenance import provenance_attrs
from ..base.tables import check_holds
from .calibrate_runs import (
    SWEEP3D_STRUCTURE,
    SweepStructure,
    check_configurations,
    check_structure,
    model_runtimes,
    run_ids,
)

__all__ = ["fit_sweep_costs", "choose_structure", "predict_held_out"]


def _check_runs(runs) -> pd.DataFrame:
    runs = check_configurations(runs, need_actual=True)
    if len(runs) < 3:
        raise ValueError(f"fitting two costs needs at least 3 runs, got {len(runs)}")
    return runs


_FIT_VARIABLES = ("cell_time", "cell_time_se", "latency", "latency_se", "log_correlation",
                  "residual_scatter")


def check_fit(fit) -> xr.Dataset:
    """``fit`` if it is a :func:`fit_sweep_costs` result with positive costs, else an error."""
    check_holds(fit, xr.Dataset, "data_vars", _FIT_VARIABLES,
                "fit must be the xarray.Dataset of fit_sweep_costs, got {type}",
                "fit lacks {missing}: pass a fit_sweep_costs result")
    for name in ("cell_time", "latency"):
        check_positive(f"fit['{name}']", fit[name].item())
    for name in ("cell_time_se", "latency_se", "residual_scatter"):
        check_positive(f"fit['{name}']", fit[name].item(), allow_zero=True)
    return fit



def _fit(runs, structure, start):
    actual = runs["actual_s"].to_numpy()

    def relative_errors(log_costs):
        cell_time, latency = np.exp(log_costs)
        return model_runtimes(runs, cell_time, latency, structure) / actual - 1.0

    result = least_squares(relative_errors, np.log(start), x_scale=1.0, diff_step=1e-6)
    return result


def _unidentified(runs) -> str | None:
    """Why ``runs`` cannot identify both costs (rank-deficient fit), or None if they can.

    Runs on one core send no face message, so their times do not depend on the message
    cost; runs of one configuration (size and cores) repeated give every cost pair with
    the same model time the same fit, so only that one combination is identified."""
    ids = sorted(set(run_ids(runs.drop(columns=["id", "table"], errors="ignore"))))
    if (runs["cores"] == 1).all():
        return (f"cannot identify the message cost (latency): no run's time depends on it "
                f"(runs {ids}: on one core no face message is sent); add runs on more cores")
    if len(ids) < 2:
        return (f"cannot identify the cell time and the message cost separately: every run "
                f"is the one configuration {ids[0]}, so only one combination of them is "
                f"fitted; add runs whose sizes or core counts differ")
    return None


def fit_sweep_costs(runs: pd.DataFrame, structure: SweepStructure = SWEEP3D_STRUCTURE,
                    start: tuple[float, float] | None = None) -> xr.Dataset:
    """Fit the compute time per cell and the message cost to measured run times.

    Least squares on the relative errors, over log costs (both stay positive).

    Parameters
    ----------
    runs : pandas.DataFrame
        The calibration runs, and only those: columns ``cells_per_side``, ``cores``,
        ``actual_s`` (seconds), optionally ``table`` or ``id`` (see :func:`run_ids`).
    structure : SweepStructure
        Blocks and sweeps of the model.
    start : (float, float), optional
        Starting cell time and message cost [s]; default from the smallest run.

    Returns
    -------
    xarray.Dataset
        ``cell_time`` and ``latency`` [s] with ``*_se`` (the standard errors of the
        fit: Jacobian covariance scaled by the residual variance, on the log scale and
        carried to seconds); ``residual_scatter``, the root mean square relative
        residual with the fit's degrees of freedom [-]; per run (dim ``run``, coordinate
        ``run_id``) ``fitted_s``, ``error_percent`` (in sample) and
        ``loo_error_percent`` (each run predicted from a fit to the others; NaN where
        the others cannot identify both costs) [%]. The attribute ``calibrated_on`` is
        the tuple of the run ids.

    Raises
    ------
    ValueError
        When the runs cannot identify both costs (a rank-deficient fit): no run depends
        on the message cost (all on one core), or every run is one configuration (size
        and cores) repeated. Such a fit would report tiny standard errors on a cost it
        never measured, so it is refused, saying which cost cannot be identified.

    Notes
    -----
    The costs are those of the *whole* run per iteration-equivalent: without the
    number of iterations (and of angle groups) the model's time is homogeneous in
    them, so only cell time × iterations and message cost × iterations are
    identified. Ratios (the compute share, a relative change of latency) are not
    affected.
    """
    runs = _check_runs(runs)
    structure = check_structure(structure)
    if start is None:
        smallest = runs.loc[runs["cores"].idxmin()]
        cells = float(smallest["cells_per_side"]) ** 3 * structure.angles * 8
        start = (float(smallest["actual_s"]) * float(smallest["cores"]) / cells, 1e-3)
    if isinstance(start, str) or np.ndim(start) != 1 or len(start) != 2:
        raise ValueError(f"start must be (cell_time, latency) [s], got {start!r}")
    start = tuple(check_positive(name, value) for name, value in
                  zip(("start cell_time", "start latency"), start, strict=True))
    reason = _unidentified(runs)
    if reason is not None:
        raise ValueError(f"fit_sweep_costs {reason}")
    result = _fit(runs, structure, start)
    log_costs = result.x
    dof = max(len(runs) - 2, 1)
    variance = float(np.sum(result.fun ** 2)) / dof
    jacobian = result.jac
    covariance = np.linalg.pinv(jacobian.T @ jacobian) * variance
    cell_time, latency = np.exp(log_costs)
    log_se = np.sqrt(np.diag(covariance))
    loo = np.empty(len(runs))
    for left_out in range(len(runs)):
        if _unidentified(runs.drop(index=left_out)) is not None:
            loo[left_out] = np.nan  # the other runs cannot fit both costs
            continue
        others = runs.drop(index=left_out)
        refit = _fit(others, structure, (cell_time, latency))
        c, lat = np.exp(refit.x)
        predicted = model_runtimes(runs.iloc[[left_out]], c, lat, structure)[0]
        loo[left_out] = predicted / runs["actual_s"].iloc[left_out] - 1.0
    fitted = runs["actual_s"].to_numpy() * (1.0 + result.fun)
    index = np.arange(len(runs))
    data = {
        "cell_time": ((), cell_time, {"units": "s", "long_name": "compute per cell and angle"}),
        "cell_time_se": ((), cell_time * log_se[0], {"units": "s"}),
        "latency": ((), latency, {"units": "s", "long_name": "cost of one face message"}),
        "latency_se": ((), latency * log_se[1], {"units": "s"}),
        "log_correlation": ((), covariance[0, 1] / (log_se[0] * log_se[1])
                            if log_se[0] * log_se[1] > 0 else np.nan, {"units": "1"}),
        "residual_scatter": ((), np.sqrt(variance), {"units": "1", "long_name":
                             "rms relative residual (degrees of freedom corrected)"}),
        "cells_per_side": ("run", runs["cells_per_side"].to_numpy()),
        "cores": ("run", runs["cores"].to_numpy()),
        "actual_s": ("run", runs["actual_s"].to_numpy(), {"units": "s"}),
        "fitted_s": ("run", fitted, {"units": "s"}),
        "error_percent": ("run", 100 * result.fun, {"units": "%", "long_name":
                                                     "in-sample (fitted − actual)/actual"}),
        "loo_error_percent": ("run", 100 * loo, {"units": "%", "long_name":
                                                 "leave-one-out (predicted − actual)/actual"}),
    }
    ids = run_ids(runs)
    attrs = {"structure": repr(replace(structure)), "method": "least squares on relative error",
             "calibrated_on": tuple(ids), **provenance_attrs()}
    return xr.Dataset(data, coords={"run": index, "run_id": ("run", ids)}, attrs=attrs)


def choose_structure(runs: pd.DataFrame, candidates) -> tuple[SweepStructure, pd.DataFrame]:
    """The blocking whose leave-one-out error on ``runs`` is smallest.

    Pass the calibration runs only: the choice is then part of the calibration, and
    the runs left out of it stay out of sample.

    Parameters
    ----------
    runs : pandas.DataFrame
        Calibration runs, as for :func:`fit_sweep_costs` (at least 4: each leave-one-out
        fit needs 3).
    candidates : sequence of SweepStructure
        The blockings to try, declared before the fit.

    Returns
    -------
    (SweepStructure, pandas.DataFrame)
        The chosen structure, and per candidate its ``in_sample_percent`` and
        ``leave_one_out_percent`` (mean |error| on ``runs``) [%] and ``chosen``.
    """
    runs = _check_runs(runs)
    if len(runs) < 4:
        raise ValueError(f"choosing a blocking by leave-one-out needs at least 4 runs, got "
                         f"{len(runs)}")
    if candidates is None or isinstance(candidates, str | SweepStructure):
        raise TypeError(f"candidates must be a non-empty sequence of SweepStructure, got "
                        f"{type(candidates).__name__}")
    candidates = list(candidates)
    if not candidates or not all(isinstance(c, SweepStructure) for c in candidates):
        raise TypeError("candidates must be a non-empty sequence of SweepStructure")
    rows = []
    for candidate in candidates:
        fit = fit_sweep_costs(runs, candidate)
        if bool(fit["loo_error_percent"].isnull().any()):
            missing = fit["loo_error_percent"].isnull().values
            unfit = [str(run_id) for run_id in fit["run_id"].values[missing]]
            raise ValueError(f"choose_structure: leaving out the run(s) {unfit} leaves runs "
                             f"that cannot identify both costs (no leave-one-out error): add "
                             f"runs of other sizes or core counts")
        rows.append({"block_height": candidate.block_height,
                     "angles_per_block": candidate.angles_per_block,
                     "sweeps": candidate.sweeps,
                     "in_sample_percent": float(np.abs(fit["error_percent"]).mean()),
                     "leave_one_out_percent": float(np.abs(fit["loo_error_percent"]).mean())})
    table = pd.DataFrame(rows)
    best = int(table["leave_one_out_percent"].idxmin())
    table["chosen"] = table.index == best
    return candidates[best], table


def log_covariance(fit: xr.Dataset) -> np.ndarray:
    """Covariance of the fitted log cell time and log message cost."""
    relative = np.array([float(fit["cell_time_se"]) / float(fit["cell_time"]),
                         float(fit["latency_se"]) / float(fit["latency"])])
    correlation = float(fit["log_correlation"])
    if not np.isfinite(correlation):
        correlation = 0.0
    return np.outer(relative, relative) * np.array([[1.0, correlation], [correlation, 1.0]])


def check_same_structure(fit: xr.Dataset, structure: SweepStructure) -> None:
    """A fit's costs mean something only in the structure it was fitted with."""
    fitted = fit.attrs.get("structure")
    if fitted is not None and fitted != repr(replace(structure)):
        raise ValueError(f"structure={structure!r} is not the structure of the fit "
                         f"({fitted}): its costs are per cell and message of that blocking; "
                         f"pass the fit's structure")


def check_prediction_inputs(runs, fit, structure):
    """(runs, fit, structure) of a prediction from a fit, checked: the runs' table, the
    fit's variables and a structure that is the fit's; else an error naming the problem."""
    runs = check_configurations(runs)
    fit = check_fit(fit)
    structure = check_structure(structure)
    check_same_structure(fit, structure)
    return runs, fit, structure


def check_out_of_sample(runs: pd.DataFrame, fit: xr.Dataset) -> list[str]:
    ids = run_ids(runs)
    seen = sorted(set(ids) & set(fit.attrs.get("calibrated_on", ())))
    if seen:
        raise ValueError(f"the run(s) {seen} fed the fit: a prediction of a calibration run "
                         f"is not a test (predict the runs left out of the fit)")
    return ids


def predict_held_out(runs: pd.DataFrame, fit: xr.Dataset,
                     structure: SweepStructure = SWEEP3D_STRUCTURE) -> xr.Dataset:
    """Predict runs the fit has not seen, with a prediction interval.

    Parameters
    ----------
    runs : pandas.DataFrame
        Columns ``cells_per_side`` and ``cores`` (and ``actual_s`` to get errors); none
        may be among ``fit.attrs["calibrated_on"]`` (ValueError).
    fit : xarray.Dataset
        A :func:`fit_sweep_costs` result.
    structure : SweepStructure
        The structure of the fit.

    Returns
    -------
    xarray.Dataset
        Per run (dim ``run``, coordinate ``run_id``): ``predicted_s``; ``fit_se`` (the
        fit's covariance carried through the model) and ``prediction_se`` (that and the
        fit's ``residual_scatter`` × prediction: what a new run may differ by) [s];
        with ``actual_s`` also ``actual_s`` and ``error_percent`` [%]. The attribute
        ``calibrated_on`` is the fit's.
    """
    runs, fit, structure = check_prediction_inputs(runs, fit, structure)
    ids = check_out_of_sample(runs, fit)
    cell_time, latency = float(fit["cell_time"]), float(fit["latency"])
    predicted = model_runtimes(runs, cell_time, latency, structure)
    fit_se = propagated_error(runs, fit, cell_time, latency, predicted, structure)
    scatter = float(fit["residual_scatter"]) * predicted
    data = {
        "cells_per_side": ("run", runs["cells_per_side"].to_numpy()),
        "cores": ("run", runs["cores"].to_numpy()),
        "predicted_s": ("run", predicted, {"units": "s"}),
        "fit_se": ("run", fit_se, {"units": "s", "long_name": "standard error from the fit"}),
        "prediction_se": ("run", np.hypot(fit_se, scatter),
                          {"units": "s", "long_name": "standard error of a new run: fit "
                           "and residual scatter"}),
    }
    if "actual_s" in runs.columns:
        actual = runs["actual_s"].to_numpy(dtype=float)
        data["actual_s"] = ("run", actual, {"units": "s"})
        data["error_percent"] = ("run", 100 * (predicted / actual - 1.0),
                                 {"units": "%", "long_name": "(predicted − actual)/actual"})
    attrs = {"calibrated_on": tuple(fit.attrs.get("calibrated_on", ())),
             "structure": repr(replace(structure)), **provenance_attrs()}
    return xr.Dataset(data, coords={"run": np.arange(len(runs)), "run_id": ("run", ids)},
                      attrs=attrs)



def propagated_error(runs, fit, cell_time, latency, predicted, structure):
    """Standard error of model run times from the fitted costs' covariance [s]."""
    covariance = log_covariance(fit)
    step = 1e-4  # relative: the model is piecewise linear in the costs
    gradient = np.stack([
        (model_runtimes(runs, cell_time * (1 + step), latency, structure) - predicted) / step,
        (model_runtimes(runs, cell_time, latency * (1 + step), structure) - predicted) / step])
    return np.sqrt(np.einsum("ir,ij,jr->r", gradient, covariance, gradient))
