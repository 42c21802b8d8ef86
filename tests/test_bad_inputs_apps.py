"""Every bad input a clear error, for the application models (jitterlab.apps: wavefront and
its calibration; issue #19).

Each case calls the public API with one bad argument and asserts the exception type and
that the message names the argument (and, for a runs table, the column and row). Cases
marked "was silent" used to return a wrong answer.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd
import pytest

import jitterlab as jl
from jitterlab.apps import Wavefront, noiseless_time, square_grid
from jitterlab.apps import wavefront_predict as predict
from jitterlab.apps import wavefront_simulate as simulate
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
from jitterlab.base.limits import ResourceLimitError

NAN, INF = math.nan, math.inf
LAW = jl.noise.Exponential(mean=1e-6)
WF = Wavefront(2, 2, blocks=2, work=1e-5)
RUNS = pd.DataFrame({"cells_per_side": [60, 60, 60, 120, 120, 120],
                     "cores": [4, 8, 16, 8, 16, 64]})
COSTS = (3e-5, 0.05)  # cell time and message cost [s]


def trace():
    return jl.Trace([10e-9, 5e-9], [50e-9, 30e-9])


def runs(**columns):
    """The runs with their model times as actual_s, columns replaced by ``columns``."""
    table = RUNS.assign(actual_s=predict_runtimes(RUNS, *COSTS))
    return table.assign(**columns) if columns else table


@functools.cache
def fit():
    return fit_sweep_costs(runs(), start=COSTS)


def wavefront(**kwargs):
    return Wavefront(**{"px": 2, "py": 2, "blocks": 2, "work": 1e-5, **kwargs})


def problem(**kwargs):
    return Wavefront.from_problem(**{"cells": (60, 60, 60), "cores": 4, "cell_time": 1e-8,
                                     **kwargs})


def case(call, error, pattern, id):
    return pytest.param(call, error, pattern, id=id)


CASES = [
    # ---------------------------------------------------------------- Wavefront
    case(lambda: wavefront(px=NAN), ValueError, r"\bpx\b.*nan", "Wavefront-px-nan"),
    case(lambda: wavefront(px="2"), TypeError, r"\bpx\b.*str", "Wavefront-px-str"),
    case(lambda: wavefront(px=2.5), ValueError, r"\bpx\b.*2\.5", "Wavefront-px-fraction"),
    case(lambda: wavefront(py=0), ValueError, r"\bpy\b.*>= 1", "Wavefront-py-0"),
    case(lambda: wavefront(blocks=0), ValueError, r"\bblocks\b", "Wavefront-blocks-0"),
    case(lambda: wavefront(work=NAN), ValueError, r"\bwork\b.*nan", "Wavefront-work-nan"),
    case(lambda: wavefront(work=-1.0), ValueError, r"\bwork\b", "Wavefront-work-negative"),
    case(lambda: wavefront(work=INF), ValueError, r"\bwork\b.*inf", "Wavefront-work-inf"),
    case(lambda: wavefront(iterations=0), ValueError, r"\biterations\b", "Wavefront-iterations-0"),
    case(lambda: wavefront(sweeps="chimaera"), ValueError, r"sweeps.*'chimaera'",
         "Wavefront-sweeps-unknown"),
    case(lambda: wavefront(sweeps=[]), ValueError, r"sweeps.*at least one",
         "Wavefront-sweeps-empty"),
    case(lambda: wavefront(sweeps=[(1, 0)]), ValueError, r"sweeps.*-1/\+1", "Wavefront-sweeps-0"),
    # was silent: (1.5, 1) was taken as the corner (1, 1)
    case(lambda: wavefront(sweeps=[(1.5, 1)]), ValueError, r"sweeps.*1\.5",
         "Wavefront-sweeps-fraction"),
    case(lambda: wavefront(sweeps=[(True, 1)]), ValueError, r"sweeps.*True",
         "Wavefront-sweeps-bool"),
    case(lambda: wavefront(sweeps=[(1, 1, 1)]), ValueError, r"sweeps.*corner \(dx, dy\)",
         "Wavefront-sweeps-triple"),
    case(lambda: wavefront(sweeps=5), ValueError, r"sweeps", "Wavefront-sweeps-int"),
    case(lambda: wavefront(message="fast"), TypeError, r"message.*jl\.Message",
         "Wavefront-message-str"),
    case(lambda: wavefront(bytes_x=-1), ValueError, r"bytes_x", "Wavefront-bytes_x-negative"),
    case(lambda: wavefront(bytes_y=1.5), ValueError, r"bytes_y.*1\.5",
         "Wavefront-bytes_y-fraction"),
    case(lambda: wavefront(allreduce=1), TypeError, r"allreduce", "Wavefront-allreduce-int"),
    case(lambda: wavefront(cores_per_node=0), ValueError, r"cores_per_node",
         "Wavefront-cores_per_node-0"),
    # ---------------------------------------------------------------- Wavefront.from_problem
    case(lambda: problem(cells=60), ValueError, r"cells must be \(nx, ny, nz\), got 60",
         "from_problem-cells-int"),
    case(lambda: problem(cells=(60, 60)), ValueError, r"cells", "from_problem-cells-pair"),
    case(lambda: problem(cells=(60.5, 60, 60)), ValueError, r"\bnx\b.*60\.5",
         "from_problem-cells-fraction"),
    case(lambda: problem(cores=0), ValueError, r"\bcores\b", "from_problem-cores-0"),
    case(lambda: problem(cores=2.5), ValueError, r"\bcores\b.*2\.5", "from_problem-cores-fraction"),
    case(lambda: problem(cores="4"), TypeError, r"\bcores\b.*str", "from_problem-cores-str"),
    case(lambda: problem(cells=(4, 4, 4), cores=64), ValueError, r"grid 8 × 8 is larger",
         "from_problem-cores-beyond-columns"),
    case(lambda: problem(px=2), TypeError, r"px and py", "from_problem-px-alone"),
    case(lambda: problem(px=3, py=4), ValueError, r"does not hold.*cores = 4",
         "from_problem-grid-not-cores"),
    case(lambda: problem(cell_time=NAN), ValueError, r"cell_time.*nan",
         "from_problem-cell_time-nan"),
    # was silent: 2 blocks of 3 angles computed 6 angles of a 2-angle problem
    case(lambda: problem(angles=2, angles_per_block=3), ValueError,
         r"angles_per_block \(3\) must not exceed angles \(2\)", "from_problem-angles_per_block"),
    case(lambda: problem(bytes_per_value=-1), ValueError, r"bytes_per_value",
         "from_problem-bytes_per_value-negative"),
    case(lambda: problem(work=1.0), TypeError, r"computes \['work'\] from the problem",
         "from_problem-work"),
    case(lambda: problem(colour=1), TypeError, r"colour", "from_problem-unknown-keyword"),
    # ---------------------------------------------------------------- square_grid
    case(lambda: square_grid(0), ValueError, r"\bcores\b", "square_grid-0"),
    case(lambda: square_grid(2.5), ValueError, r"\bcores\b.*2\.5", "square_grid-fraction"),
    case(lambda: square_grid("a"), TypeError, r"\bcores\b", "square_grid-str"),
    case(lambda: square_grid(1e30), ValueError, r"\bcores\b.*too large", "square_grid-1e30"),
    # ---------------------------------------------------------------- wavefront_predict
    case(lambda: predict(None), TypeError, r"workload", "predict-workload-None"),
    case(lambda: predict(WF, 1e-6), TypeError, r"noise.*float", "predict-noise-float"),
    case(lambda: predict(WF, "exponential"), TypeError, r"noise.*str", "predict-noise-str"),
    case(lambda: predict(WF, allow_large="yes"), TypeError, r"allow_large",
         "predict-allow_large-str"),
    case(lambda: predict(wavefront(px=10**6, py=10**6)), ResourceLimitError,
         r"1000000 × 1000000 grid.*TB.*smaller grid \(px, py\).*allow_large=True",
         "predict-grid-1e12-memory"),
    case(lambda: predict(wavefront(blocks=10**12), LAW), ResourceLimitError,
         r"1000000000000 blocks.*with noise.*fewer blocks", "predict-levels-memory"),
    case(lambda: noiseless_time("8x8"), TypeError, r"workload", "noiseless_time-workload-str"),
    case(lambda: noiseless_time(wavefront(px=10**6, py=10**6)), ResourceLimitError,
         r"1000000 × 1000000 grid", "noiseless_time-grid-1e12-memory"),
    # ---------------------------------------------------------------- wavefront_simulate
    case(lambda: simulate("8x8"), TypeError, r"workload", "simulate-workload-str"),
    case(lambda: simulate(WF, 1e-6), TypeError, r"noise.*float", "simulate-noise-float"),
    case(lambda: simulate(WF, [1e-6]), TypeError, r"noise.*list", "simulate-noise-list"),
    case(lambda: simulate(WF, LAW, method="mc"), ValueError, r"method.*'mc'",
         "simulate-method-unknown"),
    case(lambda: simulate(WF, LAW, method="trace"), TypeError, r"method='trace' needs a jl\.Trace",
         "simulate-method-trace-with-law"),
    case(lambda: simulate(WF, runs=NAN), ValueError, r"\bruns\b.*nan", "simulate-runs-nan"),
    case(lambda: simulate(WF, runs=2.5), ValueError, r"\bruns\b.*2\.5", "simulate-runs-fraction"),
    case(lambda: simulate(WF, runs="2"), TypeError, r"\bruns\b.*str", "simulate-runs-str"),
    case(lambda: simulate(WF, runs=0), ValueError, r"\bruns\b", "simulate-runs-0"),
    case(lambda: simulate(WF, progress=True), ValueError, r"progress.*True",
         "simulate-progress-bool"),
    case(lambda: simulate(WF, progress="eager"), ValueError, r"progress.*'eager'",
         "simulate-progress-unknown"),
    case(lambda: simulate(WF, LAW, progress="on_arrival"), ValueError,
         r"progress='on_arrival'.*not a noise law", "simulate-on_arrival-law"),
    case(lambda: simulate(WF, detail="yes"), TypeError, r"detail.*'yes'", "simulate-detail-str"),
    case(lambda: simulate(WF, detail=1), TypeError, r"detail.*1", "simulate-detail-int"),
    case(lambda: simulate(WF, detail="events", runs=2), ValueError, r"detail='events' needs runs=1",
         "simulate-events-runs"),
    case(lambda: simulate(WF, LAW, rng="a"), TypeError, r"\brng\b", "simulate-rng-str"),
    case(lambda: simulate(WF, LAW, rng=-1), ValueError, r"\brng\b", "simulate-rng-negative"),
    # was silent: a law ran and recorded start="bogus"
    case(lambda: simulate(WF, LAW, start="bogus"), ValueError, r"start must be one of.*'bogus'",
         "simulate-start-bogus-law"),
    case(lambda: simulate(WF, start="bogus"), ValueError, r"start must be one of.*'bogus'",
         "simulate-start-bogus-noiseless"),
    case(lambda: simulate(WF, trace(), start="bogus"), ValueError,
         r"start must be one of.*'bogus'", "simulate-start-bogus-trace"),
    case(lambda: simulate(WF, start="bogus", progress="on_arrival"), ValueError,
         r"start must be one of.*'bogus'", "simulate-start-bogus-on_arrival"),
    case(lambda: simulate(WF, LAW, start="synchronized"), ValueError,
         r"start='synchronized' has no effect with a noise law", "simulate-start-law"),
    case(lambda: simulate(WF, trace(), start="synchronized", method="montecarlo"), ValueError,
         r"start='synchronized' has no effect", "simulate-start-montecarlo-trace"),
    case(lambda: simulate(WF, trace(), start=3.5), ValueError, r"start must be one of.*3\.5",
         "simulate-start-float"),
    case(lambda: simulate(WF, trace(), start=None), ValueError, r"start must be one of.*None",
         "simulate-start-None"),
    case(lambda: simulate(WF, trace(), start=[0, 1]), ValueError,
         r"start: explicit start rows must be 4 integers", "simulate-start-rows-short"),
    case(lambda: simulate(WF, trace(), start=[0, 1, 2, -1]), ValueError,
         r"start: .*>= 0.*min -1", "simulate-start-rows-negative"),
    case(lambda: simulate(WF, trace(), start=[0, 1, 1, 9]), ValueError,
         r"start: start rows must lie in \[0, 1\]", "simulate-start-rows-beyond-trace"),
    case(lambda: simulate(WF, trace(), start=[0.0, 1.0, 0.0, 1.0]), ValueError,
         r"start must be one of", "simulate-start-rows-float"),
    case(lambda: simulate(WF, trace(), start=[[0, 1], [0, 1]]), ValueError,
         r"start must be one of", "simulate-start-rows-2d"),
    case(lambda: simulate(WF, trace(), start="coscheduled"), ValueError,
         r"start='coscheduled' needs the trace attribute 'window'", "simulate-start-coscheduled"),
    case(lambda: simulate(WF, allow_large=1), TypeError, r"allow_large",
         "simulate-allow_large-int"),
    case(lambda: simulate(wavefront(px=10**6, py=10**6)), ResourceLimitError,
         r"1000000 × 1000000 grid \(1e\+12 ranks\).*TB.*smaller grid \(px, py\)"
         r".*allow_large=True", "simulate-grid-1e12-memory"),
    case(lambda: simulate(wavefront(px=10**4, py=10**4), progress="on_arrival"),
         ResourceLimitError, r"GB.*smaller grid", "simulate-on_arrival-memory"),
    case(lambda: simulate(wavefront(px=100, py=100, blocks=1000, iterations=100), detail=True),
         ResourceLimitError, r"detail=True would allocate about [\d.]+ GB.*or detail=False",
         "simulate-detail-memory"),
    case(lambda: simulate(wavefront(px=100, py=100, blocks=1000, iterations=100),
                          detail="events"), ResourceLimitError, r"detail='events'.*TB",
         "simulate-events-memory"),
    case(lambda: simulate(WF, runs=10**9), ResourceLimitError, r"runs=1000000000.*fewer.*runs",
         "simulate-runs-memory"),
    case(lambda: simulate(wavefront(cores_per_node=2, message=jl.Message(
        latency=5e-6, intra_node_latency=1e-6))), ValueError, r"cores_per_node",
         "simulate-intra-node"),
    # ---------------------------------------------------------------- SweepStructure, workload
    case(lambda: SweepStructure(block_height=0), ValueError, r"block_height",
         "SweepStructure-block_height-0"),
    case(lambda: SweepStructure(angles=2.5), ValueError, r"\bangles\b.*2\.5",
         "SweepStructure-angles-fraction"),
    case(lambda: SweepStructure(angles_per_block=7), ValueError,
         r"angles_per_block \(7\) must not exceed angles \(6\)", "SweepStructure-angles_per_block"),
    case(lambda: SweepStructure(allreduce="no"), TypeError, r"allreduce",
         "SweepStructure-allreduce"),
    case(lambda: SweepStructure(sweeps="chimaera"), ValueError, r"sweeps.*'chimaera'",
         "SweepStructure-sweeps-unknown"),
    case(lambda: sweep_workload(60.5, 4, 1e-8, 1e-6), ValueError, r"\bsize\b.*60\.5",
         "sweep_workload-size-fraction"),
    case(lambda: sweep_workload(60, 4, "1e-8", 1e-6), TypeError, r"cell_time",
         "sweep_workload-cell_time-str"),
    case(lambda: sweep_workload(60, 4, 1e-8, NAN), ValueError, r"latency.*nan",
         "sweep_workload-latency-nan"),
    case(lambda: sweep_workload(60, 4, 1e-8, 1e-6, structure="sweep3d"), TypeError,
         r"structure must be a SweepStructure", "sweep_workload-structure-str"),
    # ---------------------------------------------------------------- runs tables
    case(lambda: run_ids([60, 4]), TypeError, r"runs must be a pandas DataFrame",
         "run_ids-list"),
    case(lambda: run_ids(RUNS.drop(columns="cores")), ValueError,
         r"lacks the column\(s\) \['cores'\]", "run_ids-no-cores"),
    # was silent: "Table 1: ..." for table 1.5, and a NaN table failed inside int()
    case(lambda: run_ids(RUNS.assign(table=[1, 1, 1.5, 1, 1, 1])), ValueError,
         r"runs\['table'\] \(row 2\).*1\.5", "run_ids-table-fraction"),
    case(lambda: run_ids(RUNS.assign(table=[1, 1, NAN, 1, 1, 1])), ValueError,
         r"runs\['table'\] \(row 2\).*nan", "run_ids-table-nan"),
    # was silent: 60.5 fitted as 60 and reported as 60.5
    case(lambda: fit_sweep_costs(runs(cells_per_side=[60, 60.5, 60, 120, 120, 120])), ValueError,
         r"runs\['cells_per_side'\] \(row 1\).*60\.5", "fit-cells_per_side-fraction"),
    case(lambda: predict_runtimes(RUNS.assign(cores=[4, 8, 16.5, 8, 16, 64]), *COSTS), ValueError,
         r"runs\['cores'\] \(row 2\).*16\.5", "predict_runtimes-cores-fraction"),
    case(lambda: predict_runtimes(RUNS.assign(cores=[4, 8, NAN, 8, 16, 64]), *COSTS), ValueError,
         r"runs\['cores'\] \(row 2\).*nan", "predict_runtimes-cores-nan"),
    case(lambda: predict_runtimes(RUNS.assign(cores="4"), *COSTS), TypeError,
         r"runs\['cores'\] \(row 0\).*str", "predict_runtimes-cores-str"),
    case(lambda: predict_runtimes(RUNS.assign(cells_per_side=0), *COSTS), ValueError,
         r"runs\['cells_per_side'\] \(row 0\)", "predict_runtimes-cells_per_side-0"),
    case(lambda: predict_runtimes(RUNS.assign(cores=10**6), *COSTS), ValueError,
         r"runs row 0: 1000000 cores form a 1000 × 1000 grid, wider than the 60 × 60",
         "predict_runtimes-cores-beyond-columns"),
    case(lambda: predict_runtimes(RUNS.iloc[:0], *COSTS), ValueError, r"runs has no rows",
         "predict_runtimes-empty"),
    case(lambda: predict_runtimes(RUNS, 0.0, 1e-6), ValueError, r"cell_time",
         "predict_runtimes-cell_time-0"),
    case(lambda: predict_runtimes(RUNS, 1e-8, -1.0), ValueError, r"latency",
         "predict_runtimes-latency-negative"),
    case(lambda: predict_runtimes(RUNS, *COSTS, intra_node_latency=NAN), ValueError,
         r"intra_node_latency", "predict_runtimes-intra_node_latency-nan"),
    case(lambda: predict_runtimes(RUNS, *COSTS, cores_per_node=0), ValueError,
         r"cores_per_node", "predict_runtimes-cores_per_node-0"),
    case(lambda: predict_runtimes(RUNS, *COSTS, structure="sweep3d"), TypeError,
         r"structure", "predict_runtimes-structure-str"),
    # ---------------------------------------------------------------- fit_sweep_costs
    case(lambda: fit_sweep_costs({"cells_per_side": [60]}), TypeError,
         r"runs must be a pandas DataFrame", "fit-runs-dict"),
    case(lambda: fit_sweep_costs(RUNS), ValueError, r"actual_s", "fit-no-actual_s"),
    case(lambda: fit_sweep_costs(runs().iloc[:2]), ValueError, r"at least 3 runs", "fit-2-runs"),
    case(lambda: fit_sweep_costs(runs(actual_s=[1, 2, NAN, 1, 1, 1])), ValueError,
         r"runs\['actual_s'\] \(row 2\).*nan", "fit-actual_s-nan"),
    case(lambda: fit_sweep_costs(runs(actual_s="1")), TypeError,
         r"runs\['actual_s'\] \(row 0\).*str", "fit-actual_s-str"),
    case(lambda: fit_sweep_costs(runs(actual_s=0.0)), ValueError, r"runs\['actual_s'\]",
         "fit-actual_s-0"),
    # was obscure: zip() argument 2 is shorter/longer
    case(lambda: fit_sweep_costs(runs(), start=(1e-5, 1e-3, 1.0)), ValueError,
         r"start must be \(cell_time, latency\)", "fit-start-triple"),
    case(lambda: fit_sweep_costs(runs(), start=1e-5), ValueError,
         r"start must be \(cell_time, latency\)", "fit-start-scalar"),
    case(lambda: fit_sweep_costs(runs(), start=(-1e-5, 1e-3)), ValueError, r"start cell_time",
         "fit-start-negative"),
    case(lambda: fit_sweep_costs(runs(), start=(1e-5, NAN)), ValueError, r"start latency",
         "fit-start-nan"),
    case(lambda: fit_sweep_costs(runs(), "sweep3d"), TypeError,
         r"structure must be a SweepStructure", "fit-structure-str"),
    # was silent: ±0.0002 % on a message cost one configuration cannot identify
    case(lambda: fit_sweep_costs(runs().iloc[[2, 2, 2]]), ValueError,
         r"cannot identify the cell time and the message cost separately.*60\^3 on 16 cores",
         "fit-one-configuration"),
    case(lambda: fit_sweep_costs(runs(cores=1)), ValueError,
         r"cannot identify the message cost \(latency\).*one core", "fit-all-on-one-core"),
    # ---------------------------------------------------------------- choose_structure
    case(lambda: choose_structure(runs(), None), TypeError,
         r"candidates must be a non-empty sequence of SweepStructure", "choose-candidates-None"),
    case(lambda: choose_structure(runs(), []), TypeError, r"candidates", "choose-candidates-empty"),
    case(lambda: choose_structure(runs(), SweepStructure()), TypeError, r"candidates.*got "
         r"SweepStructure", "choose-candidates-one"),
    case(lambda: choose_structure(runs(), ["sweep3d"]), TypeError, r"candidates",
         "choose-candidates-str"),
    case(lambda: choose_structure(runs().iloc[:3], [SweepStructure()]), ValueError,
         r"at least 4 runs", "choose-3-runs"),
    case(lambda: choose_structure(runs().iloc[[3, 2, 2, 2]], [SweepStructure()]), ValueError,
         r"leaving out the run\(s\) \['120\^3 on 8 cores'\]", "choose-loo-unidentified"),
    # ---------------------------------------------------------------- predictions from a fit
    case(lambda: predict_held_out(RUNS, "fit.nc"), TypeError, r"fit must be the xarray\.Dataset",
         "held_out-fit-str"),
    case(lambda: predict_held_out(RUNS, predict(WF)), ValueError,
         r"fit lacks \['cell_time'", "held_out-fit-other-dataset"),
    case(lambda: predict_held_out(RUNS, fit().assign(latency=NAN)), ValueError,
         r"fit\['latency'\].*nan", "held_out-fit-latency-nan"),
    case(lambda: predict_held_out([60, 4], fit()), TypeError, r"runs must be a pandas DataFrame",
         "held_out-runs-list"),
    case(lambda: predict_held_out(RUNS.iloc[:0], fit()), ValueError, r"runs has no rows",
         "held_out-runs-empty"),
    case(lambda: predict_held_out(RUNS.assign(actual_s=NAN), fit()), ValueError,
         r"runs\['actual_s'\] \(row 0\)", "held_out-actual_s-nan"),
    case(lambda: predict_held_out(RUNS, fit(), "sweep3d"), TypeError, r"structure",
         "held_out-structure-str"),
    # was silent: a fit's costs used with another blocking
    case(lambda: predict_held_out(RUNS, fit(), SweepStructure(block_height=2)), ValueError,
         r"structure=.*block_height=2.*is not the structure of the fit",
         "held_out-structure-other"),
    case(lambda: sample_upgrade(RUNS, fit(), (NAN, 1e-6)), ValueError, r"message_cost",
         "sample-message_cost-nan"),
    case(lambda: sample_upgrade(RUNS, fit(), "ab"), TypeError, r"message_cost",
         "sample-message_cost-str"),
    # was silent: strings were parsed as numbers
    case(lambda: sample_upgrade(RUNS, fit(), ("1e-6", "2e-6")), TypeError,
         r"message_cost must be a range \(low, high\) of numbers", "sample-message_cost-strs"),
    case(lambda: sample_upgrade(RUNS, fit(), (1e-6, 2e-6, 3e-6)), ValueError, r"message_cost",
         "sample-message_cost-triple"),
    case(lambda: sample_upgrade(RUNS, fit(), (INF, INF)), ValueError, r"message_cost",
         "sample-message_cost-inf"),
    case(lambda: sample_upgrade(RUNS, fit(), (2e-6, 1e-6)), ValueError, r"message_cost",
         "sample-message_cost-reversed"),
    case(lambda: sample_upgrade(RUNS, fit(), (1e-6, 2e-6), compute_slowdown=(-2, 0)), ValueError,
         r"compute_slowdown", "sample-compute_slowdown-below-minus-1"),
    case(lambda: sample_upgrade(RUNS, fit(), (1e-6, 2e-6), samples=2.5), ValueError,
         r"samples.*2\.5", "sample-samples-fraction"),
    case(lambda: sample_upgrade(RUNS, fit(), (1e-6, 2e-6), samples=10**12), ResourceLimitError,
         r"samples=1000000000000.*fewer samples", "sample-samples-memory"),
    case(lambda: sample_upgrade(RUNS, fit(), (1e-6, 2e-6), allow_large="yes"), TypeError,
         r"allow_large", "sample-allow_large-str"),
    case(lambda: sample_upgrade(RUNS, fit(), (1e-6, 2e-6), cores_per_node=0), ValueError,
         r"cores_per_node", "sample-cores_per_node-0"),
    case(lambda: sample_upgrade(RUNS, {"cell_time": 1e-5}, (1e-6, 2e-6)), TypeError,
         r"fit must be", "sample-fit-dict"),
    case(lambda: sample_upgrade(RUNS, fit(), (1e-6, 2e-6), SweepStructure(angles_per_block=1)),
         ValueError, r"is not the structure of the fit", "sample-structure-other"),
    case(lambda: predict_upgrade(RUNS, fit(), "0.03", 4e-6, 5e-6), TypeError,
         r"compute_slowdown.*str", "upgrade-compute_slowdown-str"),
    case(lambda: predict_upgrade(RUNS, fit(), NAN, 4e-6, 5e-6), ValueError,
         r"compute_slowdown.*nan", "upgrade-compute_slowdown-nan"),
    case(lambda: predict_upgrade(RUNS, fit(), 0.03, NAN, 5e-6), ValueError, r"extra_latency",
         "upgrade-extra_latency-nan"),
    case(lambda: predict_upgrade(RUNS, fit(), 0.03, 4e-6, -5e-6), ValueError, r"message_cost",
         "upgrade-message_cost-negative"),
    case(lambda: predict_upgrade(RUNS, fit(), 0.03, 4e-6, 5e-6, noise=LAW, repeats=1),
         ValueError, r"repeats", "upgrade-repeats-1"),
    case(lambda: predict_upgrade(RUNS, fit(), 0.03, 4e-6, 5e-6, noise=1e-6), TypeError,
         r"noise", "upgrade-noise-float"),
    case(lambda: predict_upgrade(None, fit(), 0.03, 4e-6, 5e-6), TypeError,
         r"runs must be a pandas DataFrame", "upgrade-runs-None"),
    case(lambda: predict_upgrade(RUNS, fit(), 0.03, 4e-6, 5e-6,
                                 structure=SweepStructure(allreduce=False)), ValueError,
         r"is not the structure of the fit", "upgrade-structure-other"),
]


@pytest.mark.parametrize(("call", "error", "pattern"), CASES)
def test_bad_input_gives_a_clear_error(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


def test_the_table_covers_every_public_function_of_wavefront_and_calibrate():
    ids = [param.id for param in CASES]
    assert len(set(ids)) == len(ids)
    prefixes = {name.split("-")[0] for name in ids}
    assert {"Wavefront", "from_problem", "square_grid", "predict", "noiseless_time", "simulate",
            "SweepStructure", "sweep_workload", "run_ids", "predict_runtimes", "fit", "choose",
            "held_out", "sample", "upgrade"} <= prefixes


def test_a_valid_table_of_floats_is_accepted_as_whole_numbers():
    # whole-valued floats (a CSV column with a NaN elsewhere reads as float) are counts
    as_float = RUNS.astype(float)
    np.testing.assert_array_equal(predict_runtimes(as_float, *COSTS),
                                  predict_runtimes(RUNS, *COSTS))
