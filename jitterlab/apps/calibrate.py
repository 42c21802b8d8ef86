"""Calibrating a wavefront model on measured run times (seed 002's method, §3.2–3.4).

Hammond et al. prime their model with a compute time per cell and a network cost from
benchmarks, check it on small runs (their Table 1), then change only what the new OS
changes (their Table 2, Fig. 5). Here the two costs are fitted to the small runs
themselves, so the in-sample errors are reported beside leave-one-out errors, which
are honest predictions.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import xarray as xr
from scipy.optimize import least_squares

from .._checks import check_integer, check_positive
from .._provenance import provenance_attrs
from .._random import RngLike, as_generator
from ..message import Message
from .wavefront import Wavefront, wavefront_predict, wavefront_simulate

__all__ = ["SweepStructure", "sweep_workload", "fit_sweep_costs", "predict_runtimes",
           "predict_upgrade"]


@dataclass(frozen=True)
class SweepStructure:
    """How a cubic transport problem is cut into pipelined blocks (assumptions).

    Parameters
    ----------
    block_height : int
        k-planes per block. [-]
    angles : int
        Angles per octant. [-]
    angles_per_block : int
        Angles computed per block. [-]
    sweeps : str or sequence
        Sweep order (see :data:`jitterlab.apps.SWEEP_ORDERS`).
    allreduce : bool
        An all-reduce (convergence test) closes each iteration.

    Notes
    -----
    The defaults are Sweep3D's standard input (10 k-planes and 3 of 6 angles per
    block, eight octants); the seed gives none of these for Chimaera.
    """

    block_height: int = 10
    angles: int = 6
    angles_per_block: int = 3
    sweeps: str = "sweep3d"
    allreduce: bool = True

    def __post_init__(self):
        for name in ("block_height", "angles", "angles_per_block"):
            object.__setattr__(self, name, check_integer(name, getattr(self, name), 1))


def sweep_workload(size: int, cores: int, cell_time: float, latency: float,
                   structure: SweepStructure = SweepStructure(), iterations: int = 1) -> Wavefront:
    """The wavefront workload of a size³ problem on ``cores`` ranks (most square grid).

    Parameters
    ----------
    size : int
        Cells per side n of the n × n × n problem. [cells]
    cores : int
        Ranks. [-]
    cell_time : float
        Compute time of one cell and angle. [s]
    latency : float
        Cost of one face message, all on the wire (no CPU overhead). [s]
    structure : SweepStructure
        Blocks and sweeps.
    iterations : int
        Iterations. [-]
    """
    return Wavefront.from_problem(
        (size, size, size), cores, cell_time=cell_time, block_height=structure.block_height,
        angles=structure.angles, angles_per_block=structure.angles_per_block,
        sweeps=structure.sweeps, allreduce=structure.allreduce, iterations=iterations,
        message=Message(latency=latency))


def _check_runs(runs) -> pd.DataFrame:
    if not isinstance(runs, pd.DataFrame):
        raise TypeError(f"runs must be a pandas DataFrame, got {type(runs).__name__}")
    missing = {"cells_per_side", "cores", "actual_s"} - set(runs.columns)
    if missing:
        raise ValueError(f"runs lacks the column(s) {sorted(missing)} (cells_per_side, cores "
                         f"and actual_s are needed)")
    if len(runs) < 3:
        raise ValueError(f"fitting two costs needs at least 3 runs, got {len(runs)}")
    for value in runs["actual_s"]:
        check_positive("actual_s", value)
    return runs.reset_index(drop=True)


def predict_runtimes(runs: pd.DataFrame, cell_time: float, latency: float,
                     structure: SweepStructure = SweepStructure()) -> np.ndarray:
    """Noiseless model run time of every row of ``runs`` (cells_per_side, cores) [s]."""
    return np.array([float(wavefront_predict(sweep_workload(
        int(row.cells_per_side), int(row.cores), cell_time, latency, structure))["total_time"])
        for row in runs.itertuples()])


def _fit(runs, structure, start):
    actual = runs["actual_s"].to_numpy()

    def relative_errors(log_costs):
        cell_time, latency = np.exp(log_costs)
        return predict_runtimes(runs, cell_time, latency, structure) / actual - 1.0

    result = least_squares(relative_errors, np.log(start), x_scale=1.0, diff_step=1e-6)
    return result


def fit_sweep_costs(runs: pd.DataFrame, structure: SweepStructure = SweepStructure(),
                    start: tuple[float, float] | None = None) -> xr.Dataset:
    """Fit the compute time per cell and the message cost to measured run times.

    Least squares on the relative errors, over log costs (both stay positive).

    Parameters
    ----------
    runs : pandas.DataFrame
        Columns ``cells_per_side``, ``cores``, ``actual_s`` (seconds).
    structure : SweepStructure
        Blocks and sweeps of the model.
    start : (float, float), optional
        Starting cell time and message cost [s]; default from the smallest run.

    Returns
    -------
    xarray.Dataset
        ``cell_time`` and ``latency`` [s] with ``*_se`` (the standard errors of the
        fit: Jacobian covariance scaled by the residual variance, on the log scale and
        carried to seconds); per run (dim ``run``) ``fitted_s``, ``error_percent``
        (in sample) and ``loo_error_percent`` (each run predicted from a fit to the
        others) [%].

    Notes
    -----
    The costs are those of the *whole* run per iteration-equivalent: without the
    number of iterations (and of angle groups) the model's time is homogeneous in
    them, so only cell time × iterations and message cost × iterations are
    identified. Ratios (the compute share, a relative change of latency) are not
    affected.
    """
    runs = _check_runs(runs)
    if start is None:
        smallest = runs.loc[runs["cores"].idxmin()]
        cells = float(smallest["cells_per_side"]) ** 3 * structure.angles * 8
        start = (float(smallest["actual_s"]) * float(smallest["cores"]) / cells, 1e-3)
    start = tuple(check_positive(name, value) for name, value in
                  zip(("start cell_time", "start latency"), start, strict=True))
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
        others = runs.drop(index=left_out)
        refit = _fit(others, structure, (cell_time, latency))
        c, lat = np.exp(refit.x)
        predicted = predict_runtimes(runs.iloc[[left_out]], c, lat, structure)[0]
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
        "cells_per_side": ("run", runs["cells_per_side"].to_numpy()),
        "cores": ("run", runs["cores"].to_numpy()),
        "actual_s": ("run", runs["actual_s"].to_numpy(), {"units": "s"}),
        "fitted_s": ("run", fitted, {"units": "s"}),
        "error_percent": ("run", 100 * result.fun, {"units": "%", "long_name":
                                                     "in-sample (fitted − actual)/actual"}),
        "loo_error_percent": ("run", 100 * loo, {"units": "%", "long_name":
                                                 "leave-one-out (predicted − actual)/actual"}),
    }
    attrs = {"structure": repr(replace(structure)), "method": "least squares on relative error",
             **provenance_attrs()}
    return xr.Dataset(data, coords={"run": index}, attrs=attrs)


def predict_upgrade(runs: pd.DataFrame, fit: xr.Dataset, compute_slowdown: float,
                    extra_latency: float, message_cost: float, noise=None,
                    structure: SweepStructure = SweepStructure(), repeats: int = 8,
                    rng: RngLike = None) -> xr.Dataset:
    """Run times after an OS change, from costs fitted before it (seed 002, §3.3–3.4).

    Parameters
    ----------
    runs : pandas.DataFrame
        Columns ``cells_per_side`` and ``cores``.
    fit : xarray.Dataset
        A :func:`fit_sweep_costs` result on the old OS.
    compute_slowdown : float
        Relative increase of the compute time per cell (0.03 for 3 % slower). [-]
    extra_latency : float
        Increase of the cost of one message. [s]
    message_cost : float
        The old OS's real cost of one message: it fixes how many iterations the fitted
        (whole-run) costs stand for, K = fitted latency / message_cost, hence the real
        work per block that noise meets and the relative weight of ``extra_latency``. [s]
    noise : jitterlab.Trace or noise law, optional
        The new OS's noise; each run's slowdown comes from ``repeats`` simulations of
        one iteration at real scale (trace-driven for a Trace, Monte Carlo for a law).
    structure : SweepStructure
        Blocks and sweeps (as for the fit).
    repeats : int
        Simulations per run for the noise slowdown. [-]
    rng : int or numpy.random.Generator, optional
        Seed of the noise simulations.

    Returns
    -------
    xarray.Dataset
        Per run (dim ``run``): ``noiseless_s``, the model with the new compute and
        latency [s]; ``noise_slowdown`` and its standard error ``noise_slowdown_se``
        [-]; ``predicted_s`` = noiseless × (1 + slowdown) [s] and ``predicted_se`` [s],
        the fit's standard errors carried through the model (delta method on the log
        costs, with their correlation) combined with the noise simulations' error.
    """
    runs = runs.reset_index(drop=True)
    compute_slowdown = float(compute_slowdown)
    if not -1.0 < compute_slowdown < 10.0:
        raise ValueError(f"compute_slowdown must be a relative change in (-1, 10), got "
                         f"{compute_slowdown!r}")
    extra_latency = check_positive("extra_latency", extra_latency, allow_zero=True)
    message_cost = check_positive("message_cost", message_cost)
    repeats = check_integer("repeats", repeats, 2)
    cell_time, latency = float(fit["cell_time"]), float(fit["latency"])
    iterations_equivalent = latency / message_cost
    new_cell_time = cell_time * (1.0 + compute_slowdown)
    new_latency = latency * (1.0 + extra_latency / message_cost)
    noiseless = predict_runtimes(runs, new_cell_time, new_latency, structure)
    fit_se = _propagated_error(runs, fit, new_cell_time, new_latency, noiseless, structure)
    slowdown = np.zeros(len(runs))
    slowdown_se = np.zeros(len(runs))
    if noise is not None:
        generator = as_generator(rng)
        for k, row in enumerate(runs.itertuples()):
            real = sweep_workload(int(row.cells_per_side), int(row.cores),
                                  new_cell_time / iterations_equivalent,
                                  message_cost + extra_latency, structure)
            ds = wavefront_simulate(real, noise, runs=repeats, rng=generator)
            values = ds["slowdown"].to_numpy()
            slowdown[k] = values.mean()
            slowdown_se[k] = values.std(ddof=1) / np.sqrt(values.size)
    data = {
        "cells_per_side": ("run", runs["cells_per_side"].to_numpy()),
        "cores": ("run", runs["cores"].to_numpy()),
        "noiseless_s": ("run", noiseless, {"units": "s"}),
        "noise_slowdown": ("run", slowdown, {"units": "1"}),
        "noise_slowdown_se": ("run", slowdown_se, {"units": "1"}),
        "predicted_s": ("run", noiseless * (1.0 + slowdown), {"units": "s"}),
        "predicted_se": ("run", np.hypot(fit_se * (1.0 + slowdown), noiseless * slowdown_se),
                         {"units": "s", "long_name": "standard error from the fitted costs "
                          "and the noise simulations"}),
    }
    attrs = {"compute_slowdown": compute_slowdown, "extra_latency": extra_latency,
             "message_cost": message_cost, "iterations_equivalent": iterations_equivalent,
             "noise": "none" if noise is None else str(getattr(noise, "attrs", {}).get(
                 "source", type(noise).__name__)), **provenance_attrs()}
    return xr.Dataset(data, coords={"run": np.arange(len(runs))}, attrs=attrs)


def _propagated_error(runs, fit, cell_time, latency, predicted, structure):
    """Standard error of model run times from the fitted costs' covariance [s]."""
    relative = np.array([float(fit["cell_time_se"]) / float(fit["cell_time"]),
                         float(fit["latency_se"]) / float(fit["latency"])])
    correlation = float(fit["log_correlation"])
    if not np.isfinite(correlation):
        correlation = 0.0
    covariance = np.outer(relative, relative) * np.array([[1.0, correlation],
                                                          [correlation, 1.0]])
    step = 1e-4  # relative: the model is piecewise linear in the costs
    gradient = np.stack([
        (predict_runtimes(runs, cell_time * (1 + step), latency, structure) - predicted) / step,
        (predict_runtimes(runs, cell_time, latency * (1 + step), structure) - predicted) / step])
    return np.sqrt(np.einsum("ir,ij,jr->r", gradient, covariance, gradient))
