"""An OS change carried through a calibrated sweep model (seed 002, §3.3–3.4).

:func:`sample_upgrade` (Monte Carlo over the fitted costs and the change's stated ranges)
and :func:`predict_upgrade` (one change, with the new OS's noise simulated at real scale),
both from a :func:`~jitterlab.apps.calibrate_fit.fit_sweep_costs` fit on the old OS.
"""

from __future__ import annotations

import numbers
from dataclasses import replace

import numpy as np
import pandas as pd
import xarray as xr

from ..base.checks import check_integer, check_positive
from ..base.limits import check_allow_large, check_memory
from ..base.provenance import provenance_attrs
from ..base.rng import RngLike, as_generator
from .calibrate_fit import (
    check_out_of_sample,
    check_prediction_inputs,
    log_covariance,
    propagated_error,
)
from .calibrate_runs import (
    SWEEP3D_STRUCTURE,
    SweepStructure,
    model_runtimes,
    run_ids,
    sweep_workload,
)
from .wavefront import wavefront_simulate

__all__ = ["sample_upgrade", "predict_upgrade"]


def _uniform_range(name, bounds, low_limit=0.0):
    if isinstance(bounds, str) or any(isinstance(value, str | bytes) for value in (
            bounds if isinstance(bounds, tuple | list) else ())):
        raise TypeError(f"{name} must be a range (low, high) of numbers, got {bounds!r}")
    try:
        low, high = (float(value) for value in bounds)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a range (low, high), got {bounds!r}") from None
    if not low_limit <= low <= high or not np.isfinite(high):
        raise ValueError(f"{name} must be a range (low, high) with {low_limit} <= low <= high, "
                         f"got {bounds!r}")
    return low, high


def sample_upgrade(runs: pd.DataFrame, fit: xr.Dataset, message_cost,
                   structure: SweepStructure = SWEEP3D_STRUCTURE, *,
                   compute_slowdown=(0.015, 0.045), extra_latency=(3e-6, 5e-6),
                   intra_node_fraction=(0.0, 1.0), cores_per_node: int = 2,
                   samples: int = 200, rng: RngLike = None,
                   allow_large: bool = False) -> xr.Dataset:
    """Monte Carlo of run times before and after an OS change (seed 002, §3.3–3.4).

    Each draw takes the fitted log costs from their covariance, the old OS's real cost
    of one message log-uniform in ``message_cost``, and the change uniform in its
    ranges: compute per cell slower by ``compute_slowdown``, inter-node messages dearer
    by ``extra_latency``, and intra-node messages down to ``intra_node_fraction`` of the
    old message cost (the new OS's cheaper on-node path; the old OS sends on-node
    messages at the inter-node cost).

    Parameters
    ----------
    runs : pandas.DataFrame
        Columns ``cells_per_side`` and ``cores``; with ``table`` or ``id`` their ids are
        checked against ``fit.attrs["calibrated_on"]`` (ValueError when one fed the fit).
    fit : xarray.Dataset
        A :func:`fit_sweep_costs` result on the old OS.
    message_cost : (float, float)
        Range of the old OS's real cost of one message: it fixes how many iterations
        the fitted (whole-run) costs stand for, K = fitted latency / cost, hence the
        relative weight of ``extra_latency``. [s]
    structure : SweepStructure
        Blocks and sweeps (as for the fit).
    compute_slowdown : (float, float)
        Range of the relative increase of the compute per cell. [-]
    extra_latency : (float, float)
        Range of the increase of an inter-node message's cost. [s]
    intra_node_fraction : (float, float)
        Range of the new OS's intra-node message cost, as a fraction of the old
        message cost. [-]
    cores_per_node : int
        Ranks per node, in rank order. [-]
    samples : int
        Monte Carlo draws. [-]
    rng : int or numpy.random.Generator, optional
        Seed of the draws.
    allow_large : bool
        Draw even when the draws (about 48 B per sample and run) exceed half of the
        available memory (else :class:`jitterlab.base.limits.ResourceLimitError`).

    Returns
    -------
    xarray.Dataset
        Dims ``sample`` and ``run``: ``old_s`` and ``new_s``, noiseless model run times
        on the old and new OS [s]; ``increase`` = new / old − 1 [-]; ``new_measured_s``,
        ``new_s`` times (1 + ε) with ε normal of the fit's ``residual_scatter`` (what a
        measured run may differ by) [s]; and the draws ``message_cost``,
        ``compute_slowdown``, ``extra_latency``, ``intra_node_fraction`` (dim
        ``sample``). Attribute ``calibrated_on``: the fit's.
    """
    runs, fit, structure = check_prediction_inputs(runs, fit, structure)
    if {"table", "id"} & set(runs.columns):
        check_out_of_sample(runs, fit)
    cost_low, cost_high = _uniform_range("message_cost", message_cost)
    if cost_low <= 0.0:
        raise ValueError(f"message_cost must be positive, got {message_cost!r}")
    slow_low, slow_high = _uniform_range("compute_slowdown", compute_slowdown, -0.99)
    extra_low, extra_high = _uniform_range("extra_latency", extra_latency)
    frac_low, frac_high = _uniform_range("intra_node_fraction", intra_node_fraction)
    cores_per_node = check_integer("cores_per_node", cores_per_node, 1)
    samples = check_integer("samples", samples, 2)
    check_memory(6.0 * 8.0 * samples * len(runs), lambda: f"sample_upgrade with samples="
                 f"{samples} and {len(runs)} runs", "fewer samples",
                 check_allow_large(allow_large))
    generator = as_generator(rng)
    centre = np.log([float(fit["cell_time"]), float(fit["latency"])])
    log_costs = generator.multivariate_normal(centre, log_covariance(fit), size=samples)
    cost = np.exp(generator.uniform(np.log(cost_low), np.log(cost_high), samples))
    slowdown = generator.uniform(slow_low, slow_high, samples)
    extra = generator.uniform(extra_low, extra_high, samples)
    fraction = generator.uniform(frac_low, frac_high, samples)
    scatter = generator.normal(0.0, float(fit["residual_scatter"]), (samples, len(runs)))
    old = np.empty((samples, len(runs)))
    new = np.empty((samples, len(runs)))
    for k in range(samples):
        cell_time, latency = np.exp(log_costs[k])
        old[k] = model_runtimes(runs, cell_time, latency, structure)
        new[k] = model_runtimes(runs, cell_time * (1.0 + slowdown[k]),
                                latency * (1.0 + extra[k] / cost[k]), structure,
                                intra_node_latency=latency * fraction[k],
                                cores_per_node=cores_per_node)
    dims = ("sample", "run")
    data = {
        "cells_per_side": ("run", runs["cells_per_side"].to_numpy()),
        "cores": ("run", runs["cores"].to_numpy()),
        "old_s": (dims, old, {"units": "s", "long_name": "old OS, noiseless model"}),
        "new_s": (dims, new, {"units": "s", "long_name": "new OS, noiseless model"}),
        "increase": (dims, new / old - 1.0, {"units": "1", "long_name": "new / old − 1"}),
        "new_measured_s": (dims, new * (1.0 + scatter), {"units": "s", "long_name":
                           "new OS with the fit's residual scatter"}),
        "message_cost": ("sample", cost, {"units": "s"}),
        "compute_slowdown": ("sample", slowdown, {"units": "1"}),
        "extra_latency": ("sample", extra, {"units": "s"}),
        "intra_node_fraction": ("sample", fraction, {"units": "1"}),
    }
    attrs = {"calibrated_on": tuple(fit.attrs.get("calibrated_on", ())),
             "message_cost_range": (cost_low, cost_high),
             "compute_slowdown_range": (slow_low, slow_high),
             "extra_latency_range": (extra_low, extra_high),
             "intra_node_fraction_range": (frac_low, frac_high),
             "cores_per_node": cores_per_node, "structure": repr(replace(structure)),
             **provenance_attrs()}
    return xr.Dataset(data, coords={"sample": np.arange(samples), "run": np.arange(len(runs)),
                                    "run_id": ("run", run_ids(runs))}, attrs=attrs)


def predict_upgrade(runs: pd.DataFrame, fit: xr.Dataset, compute_slowdown: float,
                    extra_latency: float, message_cost: float, noise=None,
                    structure: SweepStructure = SWEEP3D_STRUCTURE, repeats: int = 8,
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
    runs, fit, structure = check_prediction_inputs(runs, fit, structure)
    if not isinstance(compute_slowdown, numbers.Real | np.number) or isinstance(
            compute_slowdown, bool | np.bool_):
        raise TypeError(f"compute_slowdown must be a real number, got "
                        f"{type(compute_slowdown).__name__} {compute_slowdown!r}")
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
    noiseless = model_runtimes(runs, new_cell_time, new_latency, structure)
    fit_se = propagated_error(runs, fit, new_cell_time, new_latency, noiseless, structure)
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

