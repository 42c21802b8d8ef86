"""The programs that made the shipped data in ``data/`` and ``tests/data/``.

Each module is one program, run from the repository root as ``python -m
jitterlab.recipes.<name>`` (``--help`` lists its options); until 2026-11-26 they were the
scripts ``data/<name>.py``, with the same options, and the provenance records name them
so. The recipes sit at the top of the house: they may import any room (measure, sim,
apps, io, compare ...), and nothing but the tests imports them. Importing this package
runs nothing; ``docs/reproduce.md`` ("How the shipped data was made") lists them.

* :mod:`~jitterlab.recipes.record_measurements` — the measurements of this machine in
  ``data/measured/`` (detour traces, FWQ, Parallel Benchmark, latency, jitSim session,
  BSP runs), with :mod:`~jitterlab.recipes.measurement_plan`,
  :mod:`~jitterlab.recipes.measurement_files` and
  :mod:`~jitterlab.recipes.measurement_manifest`;
* :mod:`~jitterlab.recipes.run_ross_phold` — ROSS's PHOLD runs (``data/measured/
  ross_phold_runs.csv``);
* :mod:`~jitterlab.recipes.interleaved_06_07` — the interleaved recordings of notebooks 06
  and 07 (``data/interleaved_06_07/``);
* :mod:`~jitterlab.recipes.mpi_interleaved` — interleaved MPI runs of the BSP benchmark
  (``data/mpi_interleaved/``);
* :mod:`~jitterlab.recipes.record_causes_pinning` — the noise of CPU 1 with its kernel
  causes, pinned and unpinned (``data/causes_pinning/``);
* :mod:`~jitterlab.recipes.estimate_accuracy` — the estimate against simulations
  (``data/estimate_accuracy.csv``);
* :mod:`~jitterlab.recipes.loggopsim_estimate_accuracy` — the estimate against LogGOPSim
  (``data/loggopsim_estimate_accuracy.csv``);
* :mod:`~jitterlab.recipes.make_goal_references` — LogGOPSim's results for GOAL schedules
  (``tests/data/goal/``).
"""

from pathlib import Path

#: the repository's ``data/`` folder (:data:`jitterlab.datasets.DATA_DIR`), named here without
#: importing pandas, so that ``--help`` of every recipe answers at once
DATA_DIR = Path(__file__).resolve().parent.parent.parent / "data"
