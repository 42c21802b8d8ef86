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

The pieces: :mod:`~jitterlab.apps.calibrate_runs` (the blocking, the workload and the
noiseless times of a table of runs), :mod:`~jitterlab.apps.calibrate_fit` (the fit, the
choice of blocking, the held-out predictions) and :mod:`~jitterlab.apps.calibrate_upgrade`
(the OS change); this module gathers them.
"""

from __future__ import annotations

from .calibrate_fit import choose_structure, fit_sweep_costs, predict_held_out
from .calibrate_runs import SweepStructure, predict_runtimes, run_ids, sweep_workload
from .calibrate_upgrade import predict_upgrade, sample_upgrade

__all__ = ["SweepStructure", "sweep_workload", "run_ids", "fit_sweep_costs",
           "choose_structure", "predict_runtimes", "predict_held_out", "sample_upgrade",
           "predict_upgrade"]
