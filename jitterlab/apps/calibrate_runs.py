"""The sweep model of a table of runs: blocking, workload and noiseless run times.

How a cubic transport problem is cut into blocks (:class:`SweepStructure`, the assumptions
of the calibration in :mod:`~jitterlab.apps.calibrate`), the wavefront workload of one run
(:func:`sweep_workload`), the ids of the runs (:func:`run_ids`) and their noiseless model
times (:func:`predict_runtimes`), with the checks of a table of runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..base.checks import check_integer, check_positive
from ..sim.message import Message
from .wavefront import Wavefront, noiseless_time, square_grid

__all__ = ["SweepStructure", "sweep_workload", "run_ids", "predict_runtimes"]


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


#: Sweep3D's standard blocking, the default structure of the fits and predictions
SWEEP3D_STRUCTURE = SweepStructure()


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
    structure = check_structure(structure)
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
    runs = check_configurations(runs)
    prefix = ([f"Table {check_integer(_TABLE_ROW.format(row), t, 0)}: "
               for row, t in enumerate(runs["table"])] if "table" in runs.columns
              else [""] * len(runs))
    return [f"{head}{int(n)}^3 on {int(c)} cores" for head, n, c in
            zip(prefix, runs["cells_per_side"], runs["cores"], strict=True)]


_TABLE_ROW = "runs['table'] (row {})"


def check_structure(structure) -> SweepStructure:
    if not isinstance(structure, SweepStructure):
        raise TypeError(f"structure must be a SweepStructure, got {type(structure).__name__}")
    return structure

    """``structure`` if it is a :class:`SweepStructure`, else a TypeError."""

def check_configurations(runs, need_actual: bool = False) -> pd.DataFrame:
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



def predict_runtimes(runs: pd.DataFrame, cell_time: float, latency: float,
                     structure: SweepStructure = SweepStructure(),
                     intra_node_latency: float | None = None,
                     cores_per_node: int = 1) -> np.ndarray:
    """Noiseless model run time of every row of ``runs`` (cells_per_side, cores) [s].

    ``intra_node_latency`` [s] and ``cores_per_node`` as for :func:`sweep_workload`.
    """
    runs = check_configurations(runs)
    check_positive("cell_time", cell_time)
    check_positive("latency", latency, allow_zero=True)
    if intra_node_latency is not None:
        check_positive("intra_node_latency", intra_node_latency, allow_zero=True)
    cores_per_node = check_integer("cores_per_node", cores_per_node, 1)
    return model_runtimes(runs, cell_time, latency, check_structure(structure),
                     intra_node_latency, cores_per_node)


def model_runtimes(runs, cell_time, latency, structure, intra_node_latency=None, cores_per_node=1):
    """:func:`predict_runtimes` on checked arguments (the fits call it often)."""
    return np.array([noiseless_time(sweep_workload(
        int(row.cells_per_side), int(row.cores), cell_time, latency, structure,
        intra_node_latency=intra_node_latency, cores_per_node=cores_per_node))
        for row in runs.itertuples()])

