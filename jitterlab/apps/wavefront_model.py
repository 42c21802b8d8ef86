"""The pipeline model of a wavefront workload: its noiseless time and bounds under noise.

:func:`wavefront_predict` (the block recurrence summed over blocks in closed form, with
Jensen's lower and the levels' upper bound on the expected time under a noise law) and
:func:`noiseless_time` (its total alone); also the pieces the simulation shares with it:
the noiseless pipeline, the law of one block's noise and the result's variables.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..analytic.maxofn import max_of_n
from ..base.limits import check_allow_large, check_memory
from ..base.provenance import provenance_attrs
from ..noise import NoiseModel, from_trace
from ..traces.trace import Trace
from . import wavefront_kernels as _wavekernels
from .wavefront_workload import Wavefront, check_workload, size_text, sweep_corners

__all__ = ["wavefront_predict", "noiseless_time"]

#: bytes per rank of the pipeline model: finish lines and the per-rank arrays
_BYTES_PER_RANK_MODEL = 48


def _check_model_size(workload, levels, allow_large):
    """Refuse, before allocating, a pipeline model that needs more memory than allowed."""
    estimate = float(workload.n) * _BYTES_PER_RANK_MODEL
    if levels:  # the level sizes, their mask and their unique values
        estimate += 32.0 * workload.iterations * len(sweep_corners(workload.sweeps)) * (
            workload.blocks + workload.px + workload.py)
    check_memory(estimate, lambda: f"jl.apps.wavefront_predict of {size_text(workload)}"
                 + (" with noise" if levels else ""),
                 "a smaller grid (px, py)" + (", fewer blocks, sweeps or iterations"
                                              if levels else ""), allow_large)


def noiseless_pipeline(workload: Wavefront, work: float | None = None, levels: bool = False):
    """Finish per rank and per iteration without noise, summed over blocks in closed form."""
    px, py, corners, blocks, w, send, recv, wire_x, wire_y, allreduce = workload._kernel_args()
    w = w if work is None else work
    n_ranks = workload.n
    costs = {w + (a + b) * recv + (c + d) * send for a in (0, 1) for b in (0, 1)
             for c in (0, 1) for d in (0, 1)}
    slopes = np.array(sorted(costs))
    finish = np.zeros(n_ranks)
    iteration_end = np.zeros(workload.iterations)
    n_levels = workload.iterations * corners.shape[0] * (blocks + px + py) + 1
    level_count = np.zeros(n_levels if levels else 0, dtype=np.int64)
    intra_x, intra_y = workload.intra_node_wire_times()
    _wavekernels.pipeline_pieces(px, py, corners, blocks, workload.iterations, w, send, recv,
                                 wire_x, wire_y, allreduce, slopes, finish, iteration_end,
                                 level_count, workload.cores_per_node, intra_x, intra_y)
    return finish, iteration_end, level_count


def block_noise_law(noise, work: float) -> NoiseModel:
    """The law of the noise δ that one block of ``work`` [s] meets."""
    if isinstance(noise, Trace):
        return from_trace(noise, work)
    if isinstance(noise, NoiseModel):
        return noise
    raise TypeError(f"noise must be None, a jl.noise law or a jl.Trace, got "
                    f"{type(noise).__name__}")


def result_variables(iteration_end, finish, dims=()):
    """``total_time``, ``iteration_time`` and ``finish`` as Dataset variables [s]."""
    iteration_time = np.diff(iteration_end, prepend=0.0, axis=-1)
    return {
        "total_time": (dims, iteration_end[..., -1],
                       {"units": "s", "long_name": "time until the last rank is done"}),
        "iteration_time": ((*dims, "iteration"), iteration_time,
                           {"units": "s", "long_name": "time of each iteration (slowest rank)"}),
        "finish": ((*dims, "rank"), finish, {"units": "s", "long_name": "each rank's finish"}),
    }


def result_attrs(workload: Wavefront, method: str) -> dict:
    """The result's attributes: method, workload, ranks and provenance."""
    return {"method": method, "workload": workload.describe(), "n": workload.n,
            **provenance_attrs()}


def noiseless_time(workload: Wavefront, *, allow_large: bool = False) -> float:
    """Total time of ``workload`` without noise, as :func:`wavefront_predict` gives it [s].

    The number alone, without building a Dataset (for fits that call the model often).
    ``allow_large`` as for :func:`wavefront_predict`.
    """
    workload = check_workload(workload)
    _check_model_size(workload, False, allow_large)
    return float(noiseless_pipeline(workload)[1][-1])


def wavefront_predict(workload: Wavefront, noise=None, *,
                      allow_large: bool = False) -> xr.Dataset:
    """The pipeline model of a wavefront workload, and bounds on its time under noise.

    Parameters
    ----------
    workload : Wavefront
        The workload.
    noise : jitterlab.noise law or jitterlab.Trace, optional
        The noise δ of one block's compute (a Trace: the law of the δ that ``work``
        meets from a random start, :func:`jitterlab.noise.from_trace`). Message CPU
        time is taken as noiseless here.
    allow_large : bool
        Run even when the estimated memory (about 50 B per rank, and 32 B per level of
        the block graph with ``noise``) exceeds half of the available memory; without
        it such a call raises :class:`jitterlab.base.limits.ResourceLimitError` naming the
        figure and the argument to change (or set ``JITTERLAB_ALLOW_LARGE=1``).

    Returns
    -------
    xarray.Dataset
        ``total_time``, ``iteration_time`` (dim ``iteration``) and ``finish`` (dim
        ``rank``) without noise [s]; with ``noise`` also ``total_time_lower`` and
        ``total_time_upper``, bounds on the expected total time when every block meets
        an independent δ, and ``slowdown_lower``, ``slowdown_upper`` [-].

    Notes
    -----
    Without noise a block of rank r ends at E_b = max(E_{b−1}, X_b, Y_b') + c_r, with
    c_r the rank's CPU time per block (work, and send and receive overheads for the
    neighbours it has) and X_b, Y_b' its arrivals (Y shifted by the x receive that
    precedes it). Each E_b is a maximum of lines α + b·σ whose slopes are block costs,
    so the blocks are summed in closed form and a sweep costs O(ranks) — the pipeline
    fill and the steady state of the plug-and-play model of Mudalige, Vernon & Jarvis,
    exact for this schedule.

    Under noise the total time T(δ) is the longest path through the blocks, a maximum
    of sums, hence convex in δ: Jensen gives E[T] >= T(E δ) (``total_time_lower``, the
    model with work w + E δ). Sorting the blocks into levels so that no dependency
    chain holds two blocks of a level gives T(δ) <= T(0) + Σ_levels max δ over the
    level, so E[T] <= T(0) + Σ_ℓ E[max of m_ℓ δ] (``total_time_upper``), the expected
    maxima taken exactly by :func:`jitterlab.max_of_n`.

    References
    ----------
    .. [1] S.D. Hammond et al., "To Upgrade or not to Upgrade? Catamount vs. Cray Linux
       Environment" (seed 002).
    .. [2] G.R. Mudalige, M.K. Vernon, S.A. Jarvis, "A Plug-and-Play Model for
       Evaluating Wavefront Computations on Parallel Architectures", IPDPS 2008.

    Examples
    --------
    >>> import jitterlab as jl
    >>> m = jl.Message(send=1e-6, recv=1e-6, latency=5e-6)
    >>> wf = jl.apps.Wavefront(8, 8, blocks=10, work=100e-6, iterations=2, message=m)
    >>> round(float(jl.apps.wavefront_predict(wf)["total_time"]) * 1e3, 6)  # [ms]
    17.368
    """
    workload = check_workload(workload)
    check_allow_large(allow_large)
    law = None if noise is None else block_noise_law(noise, workload.work)
    _check_model_size(workload, law is not None, allow_large)
    finish, iteration_end, level_count = noiseless_pipeline(workload, levels=law is not None)
    data = result_variables(iteration_end, finish)
    attrs = result_attrs(workload, "pipeline model (closed form over blocks)")
    if law is not None:
        mean = float(law.mean())
        total = float(iteration_end[-1])
        lower = float(noiseless_pipeline(workload, work=workload.work + mean)[1][-1])
        sizes, repeats = np.unique(level_count[level_count > 0], return_counts=True)
        maxima = max_of_n(law, n=sizes)["mean"].to_numpy()
        upper = total + float(np.dot(repeats, maxima))
        data.update({
            "total_time_lower": ((), lower, {"units": "s", "long_name":
                                             "lower bound of E[total time] (Jensen)"}),
            "total_time_upper": ((), upper, {"units": "s", "long_name":
                                             "upper bound of E[total time] (levels)"}),
            "slowdown_lower": ((), lower / total - 1.0, {"units": "1"}),
            "slowdown_upper": ((), upper / total - 1.0, {"units": "1"}),
        })
        attrs.update(noise=getattr(law, "describe", lambda: type(law).__name__)()
                     if callable(getattr(law, "describe", None)) else type(law).__name__,
                     noise_mean=mean, levels=int(repeats.sum()))
    return xr.Dataset(data, coords={"iteration": np.arange(workload.iterations),
                                    "rank": np.arange(workload.n)}, attrs=attrs)
