"""Calibrating a wavefront model on measured run times (seed 002's method, §3.2–3.4).

Hammond et al. prime their model with a compute time per cell and a network cost from
benchmarks, check it on small runs (their Table 1), then change only what the new OS
changes (their Table 2, Fig. 5). The benchmarks are only figures in the seed, so here
the two costs are fitted to a *declared subset* of the runs (:func:`fit_sweep_costs`,
which records the ids of the runs it used), the blocking is chosen on that subset alone
(:func:`choose_structure`), and every other run is a prediction
(:func:`predict_held_out`, which refuses a run the fit has seen). The OS change is
carried with its stated ranges and the unknowns it needs as Monte Carlo draws
(:func:`sample_upgrade`).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import xarray as xr
from scipy.optimize import least_squares

from ..base.checks import check_integer, check_positive
from ..base.limits import check_allow_large, check_memory
from ..base.provenance import provenance_attrs
from ..base.rng import RngLike, as_generator
from ..sim.message import Message
from .wavefront import Wavefront, noiseless_time, square_grid, wavefront_simulate

__all__ = ["SweepStructure", "sweep_workload", "run_ids", "fit_sweep_costs",
           "choose_structure", "predict_runtimes", "predict_held_out", "sample_upgrade",
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
        if self.angles_per_block > self.angles:
            raise ValueError(f"angles_per_block ({self.angles_per_block}) must not exceed "
                             f"angles ({self.angles}): a block would compute angles that do "
                             f"not exist")
        if not isinstance(self.allreduce, bool | np.bool_):
            raise TypeError(f"allreduce must be True or False, got {self.allreduce!r}")
        Wavefront(1, 1, blocks=1, work=1.0, sweeps=self.sweeps)  # ValueError naming sweeps


def sweep_workload(size: int, cores: int, cell_time: float, latency: float,
                   structure: SweepStructure = SweepStructure(), iterations: int = 1,
                   intra_node_latency: float | None = None,
                   cores_per_node: int = 1) -> Wavefront:
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
    intra_node_latency : float, optional
        Cost of a face message between two ranks of one node; default ``latency``. [s]
    cores_per_node : int
        Ranks per node, in rank order. [-]
    """
    size = check_integer("size", size, 1)
    structure = _check_structure(structure)
    return Wavefront.from_problem(
        (size, size, size), cores, cell_time=cell_time, block_height=structure.block_height,
        angles=structure.angles, angles_per_block=structure.angles_per_block,
        sweeps=structure.sweeps, allreduce=structure.allreduce, iterations=iterations,
        message=Message(latency=latency, intra_node_latency=intra_node_latency),
        cores_per_node=cores_per_node)


def run_ids(runs: pd.DataFrame) -> list[str]:
    """The id of every run: its ``id`` column, else "Table t: n^3 on c cores".

    Examples
    --------
    >>> import pandas as pd
    >>> run_ids(pd.DataFrame({"table": [1], "cells_per_side": [60], "cores": [4]}))
    ['Table 1: 60^3 on 4 cores']
    """
    if not isinstance(runs, pd.DataFrame):
        raise TypeError(f"runs must be a pandas DataFrame, got {type(runs).__name__}")
    if "id" in runs.columns:
        return [str(value) for value in runs["id"]]
    runs = _check_configurations(runs)
    prefix = ([f"Table {check_integer(_TABLE_ROW.format(row), t, 0)}: "
               for row, t in enumerate(runs["table"])] if "table" in runs.columns
              else [""] * len(runs))
    return [f"{head}{int(n)}^3 on {int(c)} cores" for head, n, c in
            zip(prefix, runs["cells_per_side"], runs["cores"], strict=True)]


_TABLE_ROW = "runs['table'] (row {})"


def _check_structure(structure) -> SweepStructure:
    if not isinstance(structure, SweepStructure):
        raise TypeError(f"structure must be a SweepStructure, got {type(structure).__name__}")
    return structure


def _check_configurations(runs, need_actual: bool = False) -> pd.DataFrame:
    """``runs`` with whole ``cells_per_side`` and ``cores`` that fit the problem (and
    positive ``actual_s`` when ``need_actual``), index reset; else an error naming the
    column and the row."""
    if not isinstance(runs, pd.DataFrame):
        raise TypeError(f"runs must be a pandas DataFrame, got {type(runs).__name__}")
    needed = {"cells_per_side", "cores"} | ({"actual_s"} if need_actual else set())
    missing = needed - set(runs.columns)
    if missing:
        raise ValueError(f"runs lacks the column(s) {sorted(missing)} (needed: "
                         f"{', '.join(sorted(needed))})")
    if runs.empty:
        raise ValueError("runs has no rows")
    runs = runs.reset_index(drop=True)
    checked = runs.copy()
    for name in ("cells_per_side", "cores"):
        checked[name] = [check_integer(f"runs['{name}'] (row {row})", value, 1)
                         for row, value in enumerate(runs[name])]
    for row, (size, cores) in enumerate(zip(checked["cells_per_side"], checked["cores"],
                                            strict=True)):
        px, py = square_grid(cores)
        if py > size:
            raise ValueError(f"runs row {row}: {cores} cores form a {px} × {py} grid, wider "
                             f"than the {size} × {size} columns of a {size}^3 problem")
    if need_actual or "actual_s" in runs.columns:
        checked["actual_s"] = [check_positive(f"runs['actual_s'] (row {row})", value)
                               for row, value in enumerate(runs["actual_s"])]
    return checked


def _check_runs(runs) -> pd.DataFrame:
    runs = _check_configurations(runs, need_actual=True)
    if len(runs) < 3:
        raise ValueError(f"fitting two costs needs at least 3 runs, got {len(runs)}")
    return runs


_FIT_VARIABLES = ("cell_time", "cell_time_se", "latency", "latency_se", "log_correlation",
                  "residual_scatter")


def _check_fit(fit) -> xr.Dataset:
    if not isinstance(fit, xr.Dataset):
        raise TypeError(f"fit must be the xarray.Dataset of fit_sweep_costs, got "
                        f"{type(fit).__name__}")
    missing = [name for name in _FIT_VARIABLES if name not in fit.data_vars]
    if missing:
        raise ValueError(f"fit lacks {missing}: pass a fit_sweep_costs result")
    for name in ("cell_time", "latency"):
        check_positive(f"fit['{name}']", fit[name].item())
    for name in ("cell_time_se", "latency_se", "residual_scatter"):
        check_positive(f"fit['{name}']", fit[name].item(), allow_zero=True)
    return fit


def predict_runtimes(runs: pd.DataFrame, cell_time: float, latency: float,
                     structure: SweepStructure = SweepStructure(),
                     intra_node_latency: float | None = None,
                     cores_per_node: int = 1) -> np.ndarray:
    """Noiseless model run time of every row of ``runs`` (cells_per_side, cores) [s].

    ``intra_node_latency`` [s] and ``cores_per_node`` as for :func:`sweep_workload`.
    """
    runs = _check_configurations(runs)
    check_positive("cell_time", cell_time)
    check_positive("latency", latency, allow_zero=True)
    if intra_node_latency is not None:
        check_positive("intra_node_latency", intra_node_latency, allow_zero=True)
    cores_per_node = check_integer("cores_per_node", cores_per_node, 1)
    return _runtimes(runs, cell_time, latency, _check_structure(structure),
                     intra_node_latency, cores_per_node)


def _runtimes(runs, cell_time, latency, structure, intra_node_latency=None, cores_per_node=1):
    """:func:`predict_runtimes` on checked arguments (the fits call it often)."""
    return np.array([noiseless_time(sweep_workload(
        int(row.cells_per_side), int(row.cores), cell_time, latency, structure,
        intra_node_latency=intra_node_latency, cores_per_node=cores_per_node))
        for row in runs.itertuples()])


def _fit(runs, structure, start):
    actual = runs["actual_s"].to_numpy()

    def relative_errors(log_costs):
        cell_time, latency = np.exp(log_costs)
        return _runtimes(runs, cell_time, latency, structure) / actual - 1.0

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


def fit_sweep_costs(runs: pd.DataFrame, structure: SweepStructure = SweepStructure(),
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
    structure = _check_structure(structure)
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
        predicted = _runtimes(runs.iloc[[left_out]], c, lat, structure)[0]
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


def _log_covariance(fit: xr.Dataset) -> np.ndarray:
    """Covariance of the fitted log cell time and log message cost."""
    relative = np.array([float(fit["cell_time_se"]) / float(fit["cell_time"]),
                         float(fit["latency_se"]) / float(fit["latency"])])
    correlation = float(fit["log_correlation"])
    if not np.isfinite(correlation):
        correlation = 0.0
    return np.outer(relative, relative) * np.array([[1.0, correlation], [correlation, 1.0]])


def _check_same_structure(fit: xr.Dataset, structure: SweepStructure) -> None:
    """A fit's costs mean something only in the structure it was fitted with."""
    fitted = fit.attrs.get("structure")
    if fitted is not None and fitted != repr(replace(structure)):
        raise ValueError(f"structure={structure!r} is not the structure of the fit "
                         f"({fitted}): its costs are per cell and message of that blocking; "
                         f"pass the fit's structure")


def _check_out_of_sample(runs: pd.DataFrame, fit: xr.Dataset) -> list[str]:
    ids = run_ids(runs)
    seen = sorted(set(ids) & set(fit.attrs.get("calibrated_on", ())))
    if seen:
        raise ValueError(f"the run(s) {seen} fed the fit: a prediction of a calibration run "
                         f"is not a test (predict the runs left out of the fit)")
    return ids


def predict_held_out(runs: pd.DataFrame, fit: xr.Dataset,
                     structure: SweepStructure = SweepStructure()) -> xr.Dataset:
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
    runs = _check_configurations(runs)
    fit = _check_fit(fit)
    structure = _check_structure(structure)
    _check_same_structure(fit, structure)
    ids = _check_out_of_sample(runs, fit)
    cell_time, latency = float(fit["cell_time"]), float(fit["latency"])
    predicted = _runtimes(runs, cell_time, latency, structure)
    fit_se = _propagated_error(runs, fit, cell_time, latency, predicted, structure)
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
                   structure: SweepStructure = SweepStructure(), *,
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
    runs = _check_configurations(runs)
    fit = _check_fit(fit)
    structure = _check_structure(structure)
    _check_same_structure(fit, structure)
    if {"table", "id"} & set(runs.columns):
        _check_out_of_sample(runs, fit)
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
    log_costs = generator.multivariate_normal(centre, _log_covariance(fit), size=samples)
    cost = np.exp(generator.uniform(np.log(cost_low), np.log(cost_high), samples))
    slowdown = generator.uniform(slow_low, slow_high, samples)
    extra = generator.uniform(extra_low, extra_high, samples)
    fraction = generator.uniform(frac_low, frac_high, samples)
    scatter = generator.normal(0.0, float(fit["residual_scatter"]), (samples, len(runs)))
    old = np.empty((samples, len(runs)))
    new = np.empty((samples, len(runs)))
    for k in range(samples):
        cell_time, latency = np.exp(log_costs[k])
        old[k] = _runtimes(runs, cell_time, latency, structure)
        new[k] = _runtimes(runs, cell_time * (1.0 + slowdown[k]),
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
    runs = _check_configurations(runs)
    fit = _check_fit(fit)
    structure = _check_structure(structure)
    _check_same_structure(fit, structure)
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
    noiseless = _runtimes(runs, new_cell_time, new_latency, structure)
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
    covariance = _log_covariance(fit)
    step = 1e-4  # relative: the model is piecewise linear in the costs
    gradient = np.stack([
        (_runtimes(runs, cell_time * (1 + step), latency, structure) - predicted) / step,
        (_runtimes(runs, cell_time, latency * (1 + step), structure) - predicted) / step])
    return np.sqrt(np.einsum("ir,ij,jr->r", gradient, covariance, gradient))
