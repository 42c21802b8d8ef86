"""Plots of max-of-N results, Theorem 1 bounds and trace-driven simulations.

The only package that imports matplotlib: :mod:`~jitterlab.plotting.scaling` (quantities
against the number of processes) and :mod:`~jitterlab.plotting.timelines` (per-task
timelines of a few phases, in the unit the caller chooses, e.g. the cycles of jitSim's
worked examples) and :mod:`~jitterlab.plotting.explorer` (the figure of :func:`jitterlab.explore`).
"""

from .scaling import (
    ERROR_BAR_SE,
    MICROSECONDS,
    N_LABEL,
    log2_task_axis,
    plot_bounds,
    plot_max_of_n,
    plot_slowdown,
    task_count_label,
)
from .timelines import (
    MAX_TIMELINE_PHASES,
    MAX_TIMELINE_TASKS,
    TIMELINE_KINDS,
    plot_timeline,
    timeline_segments,
)

__all__ = ["plot_max_of_n", "plot_bounds", "plot_slowdown", "plot_timeline",
           "timeline_segments", "log2_task_axis", "task_count_label", "ERROR_BAR_SE",
           "MICROSECONDS", "N_LABEL", "TIMELINE_KINDS", "MAX_TIMELINE_TASKS",
           "MAX_TIMELINE_PHASES"]
