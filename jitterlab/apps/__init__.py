"""Application models under noise: whole codes whose communication is more than a barrier.

:class:`Wavefront` is the pipelined 2-D sweep of Sweep3D and Chimaera (seed 002), with
the pipeline model :func:`wavefront_predict` and the block-by-block simulation
:func:`wavefront_simulate` (Monte Carlo from a noise law, or trace-driven), and its
noiseless total alone, :func:`noiseless_time`.
:class:`TimeWarp` is an optimistic discrete-event simulation (ROSS, seed 004) as GVT
epochs closed by all-reduces (:func:`timewarp_predict`), calibrated on a declared subset of
ROSS runs by :func:`calibrate_timewarp` for a :class:`Workload` (another workload is refused
with :class:`WorkloadMismatchError`, or warned about with :class:`WorkloadWarning` when
extrapolating on purpose).

The modules: ``wavefront_workload`` (the workload), ``wavefront_model`` (the pipeline
model), ``wavefront`` (the simulation; it re-exports the other two) and
``wavefront_kernels`` (its numba kernels); ``calibrate_runs``, ``calibrate_fit`` and
``calibrate_upgrade`` (seed 002's calibration on run times and the OS change, gathered in
``calibrate``); ``timewarp``.
"""

from .timewarp import (
    TimeWarp,
    TimeWarpCalibration,
    Workload,
    WorkloadMismatchError,
    WorkloadWarning,
    calibrate_timewarp,
    timewarp_predict,
)
from .wavefront import (
    SWEEP_ORDERS,
    Wavefront,
    noiseless_time,
    square_grid,
    wavefront_predict,
    wavefront_simulate,
)

__all__ = ["Wavefront", "wavefront_predict", "wavefront_simulate", "noiseless_time",
           "square_grid", "SWEEP_ORDERS", "TimeWarp", "timewarp_predict", "calibrate_timewarp",
           "TimeWarpCalibration", "Workload", "WorkloadMismatchError", "WorkloadWarning"]
