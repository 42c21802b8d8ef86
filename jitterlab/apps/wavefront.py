"""A pipelined 2-D wavefront code (Sweep3D, Chimaera) under noise: seed 002's application.

Ranks form a px × py grid (rank = j·px + i) over the x-y plane of the problem; each
sweep starts at one corner of the grid and crosses it diagonally, pipelined in
``blocks`` (k-planes × angles): a rank receives its upstream x and y faces, computes
a block, and sends its downstream faces, so the downstream ranks start one block
behind (Hoisie et al.; Mudalige, Vernon & Jarvis; Hammond et al., seed 002).

Three ways side by side, as for the barrier loop: :func:`wavefront_predict` (the
noiseless pipeline in closed form, with bounds on the expected time under a noise
law), and :func:`wavefront_simulate` with ``method="montecarlo"`` (a δ from a noise
law added to every block) or ``method="trace"`` (each rank replays a jitter trace
from its own start, compute and message CPU time alike, with jitSim's rules).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from ..analytic.bounds import tree_depth
from ..analytic.maxofn import max_of_n
from ..base.checks import check_integer, check_positive
from ..base.limits import check_allow_large, check_duration, check_memory
from ..base.provenance import provenance_attrs
from ..base.rng import RngLike, as_generator, seed_from
from ..noise import NoiseModel, from_trace
from ..sim import event_output as _simevents
from ..sim.message import Message
from ..sim.replay import start_offsets, trace_table
from ..traces.trace import Trace
from . import wavefront_kernels as _wavekernels

__all__ = ["Wavefront", "wavefront_predict", "wavefront_simulate", "noiseless_time",
           "square_grid", "SWEEP_ORDERS"]

_REFERENCE = ((1, 1), (-1, 1), (1, -1), (-1, -1))
#: named sweep orders: the corner each sweep starts from, as (x direction, y direction)
SWEEP_ORDERS = {
    # LogGOPSim's reference schedule (shared/reference/loggopsim): one sweep per corner
    "reference": _REFERENCE,
    # Sweep3D: the two octants (±z) of a corner back to back, corners in the same order;
    # this gives the two full and two diagonal pipeline fills per iteration of the
    # Hoisie and Mudalige et al. models
    "sweep3d": tuple(corner for corner in _REFERENCE for _ in range(2)),
}
_DELTA_BUDGET = 1 << 22  # noise draws held at once by the Monte Carlo (32 MiB)


def _corners(sweeps) -> tuple[tuple[int, int], ...]:
    if isinstance(sweeps, str):
        if sweeps not in SWEEP_ORDERS:
            raise ValueError(f"sweeps must be one of {sorted(SWEEP_ORDERS)} or a sequence of "
                             f"corners (dx, dy) with dx, dy in {{-1, +1}}, got {sweeps!r}")
        return SWEEP_ORDERS[sweeps]
    try:
        pairs = [(dx, dy) for dx, dy in sweeps]
    except (TypeError, ValueError):
        raise ValueError(f"sweeps: each sweep must be a corner (dx, dy), got {sweeps!r}") from None
    # compared before any int(): a corner (1.5, 1) is not (1, 1)
    if not pairs or not all(_is_unit_step(value) for pair in pairs for value in pair):
        raise ValueError(f"sweeps: corners are pairs of -1/+1 and at least one is needed, "
                         f"got {sweeps!r}")
    return tuple((int(dx), int(dy)) for dx, dy in pairs)


def _is_unit_step(value) -> bool:
    """True for the numbers -1 and +1 (not True, "1" or 1.5)."""
    return (isinstance(value, numbers.Real | np.number)
            and not isinstance(value, bool | np.bool_) and value in (-1, 1))


@dataclass(frozen=True)
class Wavefront:
    """A wavefront workload: grid, blocks, work per block, sweeps and messages.

    Parameters
    ----------
    px, py : int
        Processor grid; rank = j·px + i. [-]
    blocks : int
        Blocks each sweep pipelines (k-plane blocks × angle blocks). [-]
    work : float
        Compute of one rank for one block. [s]
    iterations : int
        Iterations, each of all the sweeps. [-]
    sweeps : str or sequence of (int, int)
        "reference" (+x+y, −x+y, +x−y, −x−y, LogGOPSim's schedule), "sweep3d" (the
        same corners, two octants each), or the corners (dx, dy) in order.
    message : jitterlab.Message
        Cost of one face message (CPU time at both ends, wire latency, per byte).
    bytes_x, bytes_y : int, optional
        Size of the face sent along x and along y; default ``message.size``. [B]
    allreduce : bool
        Close every iteration with an all-reduce (a convergence test): every rank
        waits for the slowest, then for a reduce and broadcast on a binary tree of
        noiseless messages, 2·D·(send + wire + recv) with D the tree's depth.
    cores_per_node : int
        Ranks per node, placed in rank order (ranks 0 … c−1 on the first node, Cray's
        default placement). A face message between two ranks of one node spends the
        message's ``intra_node_latency`` on the wire instead of its ``latency``; only
        :func:`wavefront_predict` models that difference (:func:`wavefront_simulate`
        refuses a workload that has it). [-]
    """

    px: int
    py: int
    blocks: int
    work: float
    iterations: int = 1
    sweeps: str | Sequence = "reference"
    message: Message = field(default_factory=Message)
    bytes_x: int | None = None
    bytes_y: int | None = None
    allreduce: bool = False
    cores_per_node: int = 1

    def __post_init__(self):
        object.__setattr__(self, "px", check_integer("px", self.px, 1))
        object.__setattr__(self, "py", check_integer("py", self.py, 1))
        object.__setattr__(self, "blocks", check_integer("blocks", self.blocks, 1))
        object.__setattr__(self, "work", check_positive("work", self.work))
        object.__setattr__(self, "iterations", check_integer("iterations", self.iterations, 1))
        _corners(self.sweeps)
        if not isinstance(self.message, Message):
            raise TypeError(f"message must be a jl.Message, got {type(self.message).__name__}")
        for name in ("bytes_x", "bytes_y"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, check_integer(name, getattr(self, name), 0))
        if not isinstance(self.allreduce, bool | np.bool_):
            raise TypeError(f"allreduce must be True or False, got {self.allreduce!r}")
        object.__setattr__(self, "cores_per_node",
                           check_integer("cores_per_node", self.cores_per_node, 1))

    @classmethod
    def from_problem(cls, cells: Sequence[int], cores: int | None = None, *,
                     px: int | None = None, py: int | None = None, cell_time: float,
                     block_height: int = 1, angles: int = 1, angles_per_block: int = 1,
                     bytes_per_value: int = 8, **kwargs) -> Wavefront:
        """The workload of an nx × ny × nz problem on ``cores`` ranks.

        Each rank holds ⌈nx/px⌉ × ⌈ny/py⌉ columns; a block is ``block_height`` k-planes
        of ``angles_per_block`` angles, so a sweep has ⌈nz/height⌉·⌈angles/apb⌉ blocks
        of ``cell_time`` × cells × angles of work, and a face holds one value per cell
        of the face and angle.

        Parameters
        ----------
        cells : (int, int, int)
            Problem size nx, ny, nz. [cells]
        cores : int, optional
            Number of ranks; without ``px`` and ``py`` the grid is the most nearly
            square px × py = cores with px <= py (:func:`square_grid`). [-]
        px, py : int, optional
            Processor grid (both, and then px·py must equal ``cores`` if given). [-]
        cell_time : float
            Compute time of one cell for one angle. [s]
        block_height, angles, angles_per_block : int
            k-planes per block, angles per sweep, angles per block. [-]
        bytes_per_value : int
            Size of one face value (8: double precision). [B]
        **kwargs
            ``iterations``, ``sweeps``, ``message``, ``allreduce``, ``cores_per_node`` as
            for the class.

        Examples
        --------
        >>> import jitterlab as jl
        >>> wf = jl.apps.Wavefront.from_problem((60, 60, 60), 8, cell_time=1e-7, block_height=5)
        >>> (wf.px, wf.py, wf.blocks, wf.bytes_x, wf.bytes_y)
        (2, 4, 12, 600, 1200)
        """
        if isinstance(cells, str) or not isinstance(cells, Sequence | np.ndarray) or len(
                cells) != 3:
            raise ValueError(f"cells must be (nx, ny, nz), got {cells!r}")
        computed = sorted({"px", "py", "blocks", "work", "bytes_x", "bytes_y"} & set(kwargs))
        if computed:
            raise TypeError(f"from_problem() computes {computed} from the problem: give "
                            f"cells, cores (or px and py), cell_time and the blocking instead")
        nx, ny, nz = (check_integer(name, value, 1) for name, value in zip(("nx", "ny", "nz"),
                                                                           cells, strict=True))
        if px is None and py is None:
            if cores is None:
                raise TypeError("from_problem() needs cores, or the grid px and py")
            px, py = square_grid(cores)
        elif px is None or py is None:
            raise TypeError("give both px and py, or neither (the grid then follows cores)")
        px, py = check_integer("px", px, 1), check_integer("py", py, 1)
        if cores is not None and px * py != check_integer("cores", cores, 1):
            raise ValueError(f"the grid px × py = {px} × {py} = {px * py} ranks does not hold "
                             f"cores = {cores}")
        if px > nx or py > ny:
            raise ValueError(f"the grid {px} × {py} is larger than the {nx} × {ny} columns")
        height = check_integer("block_height", block_height, 1)
        angles = check_integer("angles", angles, 1)
        per_block = check_integer("angles_per_block", angles_per_block, 1)
        if per_block > angles:
            raise ValueError(f"angles_per_block ({per_block}) must not exceed angles "
                             f"({angles}): a block would compute angles that do not exist")
        cell_time = check_positive("cell_time", cell_time)
        width_x, width_y = math.ceil(nx / px), math.ceil(ny / py)
        blocks = math.ceil(nz / height) * math.ceil(angles / per_block)
        work = cell_time * width_x * width_y * height * per_block
        bytes_per_value = check_integer("bytes_per_value", bytes_per_value, 0)
        return cls(px=px, py=py, blocks=blocks, work=work,
                   bytes_x=width_y * height * per_block * bytes_per_value,
                   bytes_y=width_x * height * per_block * bytes_per_value, **kwargs)

    @property
    def n(self) -> int:
        """Number of ranks N = px·py. [-]"""
        return self.px * self.py

    @property
    def corners(self) -> np.ndarray:
        """The sweeps' corners as an (S, 2) array of (dx, dy)."""
        return np.array(_corners(self.sweeps), dtype=np.int64)

    def wire_times(self) -> tuple[float, float]:
        """Wire time of an x face and of a y face [s]."""
        return self.message.wire_time(self.bytes_x), self.message.wire_time(self.bytes_y)

    def intra_node_wire_times(self) -> tuple[float, float]:
        """Wire time of an x face and of a y face between two ranks of one node [s]."""
        return (self.message.wire_time(self.bytes_x, intra_node=True),
                self.message.wire_time(self.bytes_y, intra_node=True))

    @property
    def has_intra_node_wire(self) -> bool:
        """True when some face message stays on a node and costs less (or more) there."""
        return self.cores_per_node > 1 and self.intra_node_wire_times() != self.wire_times()

    def allreduce_time(self) -> float:
        """Noiseless all-reduce after an iteration, or −1 without one. [s]"""
        if not self.allreduce:
            return -1.0
        return 2.0 * int(tree_depth(self.n)) * self.message.one_way

    def describe(self) -> str:
        sweeps = self.sweeps if isinstance(self.sweeps, str) else str(list(_corners(self.sweeps)))
        return (f"Wavefront(px={self.px}, py={self.py}, blocks={self.blocks}, work={self.work}, "
                f"iterations={self.iterations}, sweeps={sweeps}, "
                f"{self.message.describe()}, bytes_x={self.bytes_x}, bytes_y={self.bytes_y}, "
                f"allreduce={self.allreduce}, cores_per_node={self.cores_per_node})")

    def _kernel_args(self):
        wire_x, wire_y = self.wire_times()
        return (self.px, self.py, self.corners, self.blocks, self.work, self.message.send,
                self.message.recv, wire_x, wire_y, self.allreduce_time())


def square_grid(cores: int) -> tuple[int, int]:
    """The most nearly square grid px × py = ``cores`` with px <= py.

    Examples
    --------
    >>> [square_grid(n) for n in (4, 8, 32, 6144)]
    [(2, 2), (2, 4), (4, 8), (64, 96)]
    """
    cores = check_integer("cores", cores, 1)
    px = math.isqrt(cores)
    while cores % px:
        px -= 1
    return px, cores // px


def _check_workload(workload) -> Wavefront:
    if not isinstance(workload, Wavefront):
        raise TypeError(f"workload must be a jl.apps.Wavefront, got {type(workload).__name__}")
    return workload


#: the names of ``start`` (:func:`jitterlab.simulate`'s)
START_NAMES = ("random", "random_row", "synchronized", "coscheduled")


def _check_start(start, n_ranks: int, law: bool):
    """``start`` if it is a known name or one integer row per rank; with a noise law
    (``law``) only the default "random" (a law has no start points to choose)."""
    if isinstance(start, str):
        if start not in START_NAMES:
            raise ValueError(f"start must be one of {list(START_NAMES)} or start rows (one "
                             f"integer per rank), got {start!r}")
    else:
        rows = np.asarray(start) if isinstance(start, Sequence | np.ndarray) else None
        if (rows is None or rows.ndim != 1 or not np.issubdtype(rows.dtype, np.integer)
                or isinstance(start, str)):
            raise ValueError(f"start must be one of {list(START_NAMES)} or start rows (one "
                             f"integer per rank), got {start!r}")
        if rows.size != n_ranks or (rows.size and rows.min() < 0):
            raise ValueError(f"start: explicit start rows must be {n_ranks} integers >= 0, "
                             f"one per rank, got {rows.size} values (min "
                             f"{rows.min() if rows.size else None})")
    if law and not (isinstance(start, str) and start == "random"):
        raise ValueError(f"start={start!r} has no effect with a noise law (a δ is drawn "
                         f"independently for every rank and block): give a jl.Trace with "
                         f"method='trace' to choose start points, or leave start='random'")
    return start


# Memory per rank (and pass), measured as the peak resident growth of runs of 10^5-10^6
# ranks (benchmarks of issue #19): in order 86 B/rank, on arrival 594, the model 31,
# detail="events" 1.6 kB per rank and pass (the event table and its checks).
#: bytes per rank of a simulation in order: state (64), offsets, finish, temporaries
_BYTES_PER_RANK = 96
#: bytes per rank of an event-driven run (progress="on_arrival"): event heap and records
_BYTES_PER_RANK_ON_ARRIVAL = 600
#: bytes per rank of the pipeline model: finish lines and the per-rank arrays
_BYTES_PER_RANK_MODEL = 48
#: bytes per rank and pass with detail="events": operation ends, then the event table
_BYTES_PER_RANK_PASS_EVENTS = 1600


def _size_text(workload: Wavefront) -> str:
    return (f"a {workload.px} × {workload.py} grid ({float(workload.n):.3g} ranks), "
            f"{workload.blocks} blocks × {len(_corners(workload.sweeps))} sweeps × "
            f"{workload.iterations} iteration{'' if workload.iterations == 1 else 's'}")


def _check_simulation_size(workload, runs, detail, events, law, on_arrival, allow_large):
    """Refuse, before allocating, a simulation that needs more memory than allowed."""
    n = float(workload.n)
    passes = float(workload.iterations) * len(_corners(workload.sweeps)) * workload.blocks
    if on_arrival:
        estimate = n * _BYTES_PER_RANK_ON_ARRIVAL + 8.0 * passes
    else:
        estimate = n * _BYTES_PER_RANK
        if law:  # the chunk of draws, and the law's temporaries
            estimate += 16.0 * min(passes * n, max(float(_DELTA_BUDGET), n))
        if detail:
            estimate += 8.0 * runs * passes * n
        if events:
            estimate += _BYTES_PER_RANK_PASS_EVENTS * passes * n
    estimate += 16.0 * runs * (n + workload.iterations)
    change = "a smaller grid (px, py), fewer blocks, sweeps, iterations or runs"
    if detail or events:
        change += ", or detail=False"
    check_memory(estimate, lambda: f"jl.apps.wavefront_simulate of {_size_text(workload)}, "
                 f"runs={runs}, detail={detail or ('events' if events else False)!r}",
                 change, allow_large)


#: an event-driven run with more rank-blocks than this (about 10 s at 0.5 µs each, faster
#: than this kernel runs on a quiet machine) is timed on a small grid first [-]
_ON_ARRIVAL_TIMED_ABOVE = 2e7
#: the small grid that times the event-driven kernel: 16 × 16 ranks, 4 blocks, 4 sweeps
_ON_ARRIVAL_PROBE = (16, 16, 4)


def _on_arrival_seconds_per_rank_block(workload) -> float:
    """Time of the event-driven kernel per rank and block, on this machine now [s]: the
    best of two noiseless runs of a 16 × 16 grid (about 10 ms each on a quiet machine)."""
    import time

    px, py, blocks = _ON_ARRIVAL_PROBE
    probe = Wavefront(px=px, py=py, blocks=blocks, work=workload.work,
                      message=workload.message)
    best = math.inf
    for _ in range(2):
        started = time.perf_counter()
        _simulate_on_arrival(probe, None, "random", None, 1)
        best = min(best, time.perf_counter() - started)
    return best / (px * py * blocks * len(_corners(probe.sweeps)))


def _check_on_arrival_time(workload, runs, noisy, allow_large):
    """Refuse an event-driven run that would take over an hour (a huge grid ran silently
    for hours): its rank-blocks times the kernel's time per rank-block, timed now."""
    passes = float(workload.iterations) * len(_corners(workload.sweeps)) * workload.blocks
    rank_blocks = float(workload.n) * passes * (runs + (1 if noisy else 0))
    if rank_blocks <= _ON_ARRIVAL_TIMED_ABOVE:
        return
    per_rank_block = _on_arrival_seconds_per_rank_block(workload)
    check_duration(
        rank_blocks * per_rank_block,
        lambda: (f"jl.apps.wavefront_simulate(progress='on_arrival') of "
                 f"{_size_text(workload)}, runs={runs}"
                 f"{' and the noiseless run' if noisy else ''} ({rank_blocks:.3g} rank-blocks "
                 f"at {per_rank_block * 1e6:.3g} µs each, timed on a 16 × 16 grid now)"),
        "a smaller grid (px, py), fewer blocks, sweeps, iterations or runs, or "
        "progress='in_order' (the block recurrence, much faster)", allow_large)


def _check_model_size(workload, levels, allow_large):
    """Refuse, before allocating, a pipeline model that needs more memory than allowed."""
    estimate = float(workload.n) * _BYTES_PER_RANK_MODEL
    if levels:  # the level sizes, their mask and their unique values
        estimate += 32.0 * workload.iterations * len(_corners(workload.sweeps)) * (
            workload.blocks + workload.px + workload.py)
    check_memory(estimate, lambda: f"jl.apps.wavefront_predict of {_size_text(workload)}"
                 + (" with noise" if levels else ""),
                 "a smaller grid (px, py)" + (", fewer blocks, sweeps or iterations"
                                              if levels else ""), allow_large)


def _noiseless(workload: Wavefront, work: float | None = None, levels: bool = False):
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


def _as_law(noise, work: float) -> NoiseModel:
    if isinstance(noise, Trace):
        return from_trace(noise, work)
    if isinstance(noise, NoiseModel):
        return noise
    raise TypeError(f"noise must be None, a jl.noise law or a jl.Trace, got "
                    f"{type(noise).__name__}")


def _base_vars(iteration_end, finish, dims=()):
    iteration_time = np.diff(iteration_end, prepend=0.0, axis=-1)
    return {
        "total_time": (dims, iteration_end[..., -1],
                       {"units": "s", "long_name": "time until the last rank is done"}),
        "iteration_time": ((*dims, "iteration"), iteration_time,
                           {"units": "s", "long_name": "time of each iteration (slowest rank)"}),
        "finish": ((*dims, "rank"), finish, {"units": "s", "long_name": "each rank's finish"}),
    }


def _attrs(workload: Wavefront, method: str) -> dict:
    return {"method": method, "workload": workload.describe(), "n": workload.n,
            **provenance_attrs()}


def noiseless_time(workload: Wavefront, *, allow_large: bool = False) -> float:
    """Total time of ``workload`` without noise, as :func:`wavefront_predict` gives it [s].

    The number alone, without building a Dataset (for fits that call the model often).
    ``allow_large`` as for :func:`wavefront_predict`.
    """
    workload = _check_workload(workload)
    _check_model_size(workload, False, allow_large)
    return float(_noiseless(workload)[1][-1])


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
    workload = _check_workload(workload)
    check_allow_large(allow_large)
    law = None if noise is None else _as_law(noise, workload.work)
    _check_model_size(workload, law is not None, allow_large)
    finish, iteration_end, level_count = _noiseless(workload, levels=law is not None)
    data = _base_vars(iteration_end, finish)
    attrs = _attrs(workload, "pipeline model (closed form over blocks)")
    if law is not None:
        mean = float(law.mean())
        total = float(iteration_end[-1])
        lower = float(_noiseless(workload, work=workload.work + mean)[1][-1])
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


def wavefront_simulate(workload: Wavefront, noise=None, start="random", rng: RngLike = None,
                       method: str | None = None, runs: int = 1,
                       progress: str = "in_order", detail: bool = False, *,
                       allow_large: bool = False) -> xr.Dataset:
    """Simulate a wavefront workload block by block under noise.

    Parameters
    ----------
    workload : Wavefront
        The workload.
    noise : jitterlab.Trace or jitterlab.noise law, optional
        None: no noise. A Trace: each rank replays it from its own start (``start``);
        every CPU time (compute, send, receive) meets its jitter, as in
        :func:`jitterlab.simulate`. A law: a δ drawn independently for every rank and
        block is added to the block's compute.
    start : {"random", "random_row", "synchronized", "coscheduled"} or sequence of int
        Start points of the ranks in the trace, as for :func:`jitterlab.simulate`
        (trace-driven runs). Checked whatever the noise; with a noise law only "random"
        (its draws have no start points; anything else is a ValueError). Recorded in the
        attribute ``start`` only when a trace is replayed.
    rng : int or numpy.random.Generator, optional
        Seed of the start points or of the δ draws.
    method : {"trace", "montecarlo"}, optional
        Default: "trace" for a Trace, "montecarlo" for a law. "montecarlo" with a
        Trace uses its law for one block (:func:`jitterlab.noise.from_trace`).
    runs : int
        Independent repetitions (dimension ``run``). [-]
    progress : {"in_order", "on_arrival"}
        When a rank's CPU takes an arrived message (the receive's CPU time).
        "in_order": when the program reaches the receive, the block recurrence of
        :func:`wavefront_predict`. "on_arrival": as soon as the CPU is free after the
        message arrives, even in the middle of another block (LogGOPSim's rule; a
        discrete-event run, slower; no all-reduce, no noise law).
    detail : bool or "events"
        True: also return ``block_end`` (dims ``run``, ``pass``, ``rank``): when each
        rank is done with each block (in order only; memory ranks × blocks × sweeps ×
        iterations, for small workloads). "events": return instead the run's
        :class:`jitterlab.EventTrace` (one run, in order, the same wire time in x and y):
        per rank and block its receives, compute and sends with the noise each met,
        and with the all-reduce a collective interval per iteration; attrs
        ``makespan`` and ``noiseless_makespan`` [s] (see
        :func:`jitterlab.compare.estimate.accumulated_noise`).
    allow_large : bool
        Run even when the estimated memory exceeds half of the available memory (about
        100 B per rank in order, 600 B per rank on arrival, 8 B per rank, block, sweep,
        iteration and run with ``detail=True``, 1.6 kB per rank and pass with "events"),
        or, with ``progress="on_arrival"``, when the run would take over an hour
        (:data:`jitterlab.base.limits.MAX_PLANNED_SECONDS`; a run of over 2·10⁷ rank-blocks is
        planned from the kernel's time on a 16 × 16 grid, timed first); without it such a
        call raises :class:`jitterlab.base.limits.ResourceLimitError` naming the figure and
        the argument to change (or set ``JITTERLAB_ALLOW_LARGE=1``).

    Returns
    -------
    xarray.Dataset
        ``total_time`` (dim ``run``), ``iteration_time`` (``run``, ``iteration``),
        ``finish`` (``run``, ``rank``) [s]; ``noiseless_time`` [s] and ``slowdown`` =
        total / noiseless − 1 (``run``) [-].

    Examples
    --------
    >>> import jitterlab as jl
    >>> m = jl.Message(send=1e-6, recv=1e-6, latency=5e-6)
    >>> wf = jl.apps.Wavefront(4, 16, blocks=10, work=100e-6, iterations=2, message=m)
    >>> ds = jl.apps.wavefront_simulate(wf, progress="on_arrival")
    >>> round(float(ds["total_time"][0]) * 1e3, 6)  # [ms], as LogGOPSim gives it
    17.46
    """
    workload = _check_workload(workload)
    runs = check_integer("runs", runs, 1)
    check_allow_large(allow_large)
    if workload.has_intra_node_wire:
        raise ValueError(f"wavefront_simulate gives every face message the inter-node wire "
                         f"time; this workload's intra-node messages differ "
                         f"({workload.message.describe()}, cores_per_node="
                         f"{workload.cores_per_node}): use wavefront_predict, or "
                         f"cores_per_node=1")
    if method is None:
        method = "trace" if isinstance(noise, Trace) else "montecarlo"
    if method not in ("trace", "montecarlo"):
        raise ValueError(f"method must be 'trace' or 'montecarlo', got {method!r}")
    if method == "trace" and noise is not None and not isinstance(noise, Trace):
        raise TypeError(f"method='trace' needs a jl.Trace as noise, got "
                        f"{type(noise).__name__} (use method='montecarlo' for a law)")
    if noise is not None and not isinstance(noise, Trace | NoiseModel):
        raise TypeError(f"noise must be None, a jl.noise law or a jl.Trace, got "
                        f"{type(noise).__name__}")
    law = noise is not None and method == "montecarlo"
    start = _check_start(start, workload.n, law)
    if progress not in ("in_order", "on_arrival"):
        raise ValueError(f"progress must be 'in_order' or 'on_arrival', got {progress!r}")
    if progress == "on_arrival":
        if detail:
            raise ValueError("detail=True needs progress='in_order'")
        if method == "montecarlo" and noise is not None:
            raise ValueError("progress='on_arrival' takes noise=None or a jl.Trace, not a "
                             "noise law (its blocks meet noise in event order)")
        if workload.allreduce:
            raise ValueError("progress='on_arrival' does not model the all-reduce: use "
                             "allreduce=False or progress='in_order'")
        _check_simulation_size(workload, runs, False, False, False, True, allow_large)
        _check_on_arrival_time(workload, runs, noise is not None, allow_large)
        return _simulate_on_arrival(workload, noise, start, rng, runs)
    events = isinstance(detail, str) and detail == "events"
    if not events and not isinstance(detail, bool | np.bool_):
        raise TypeError(f"detail must be True, False or 'events', got {detail!r}")
    args = workload._kernel_args()
    n_ranks, iterations = workload.n, workload.iterations
    n_passes = iterations * args[2].shape[0] * workload.blocks
    if events:
        if runs != 1:
            raise ValueError("detail='events' needs runs=1")
        if args[7] != args[8]:
            raise ValueError(f"detail='events' needs the same wire time in x and y (an "
                             f"event trace has one latency), got {args[7]!r} and "
                             f"{args[8]!r} s")
        detail = False
    _check_simulation_size(workload, runs, bool(detail), events, law, False, allow_large)
    op_ends = np.full((n_passes, n_ranks, 5), np.nan) if events else _NO_OPS
    block_end = np.zeros((runs, n_passes, n_ranks)) if detail else None
    noiseless_end = _noiseless(workload)[1][-1]
    finishes = np.zeros((runs, n_ranks))
    ends = np.zeros((runs, iterations))
    empty_table = np.zeros((1, 3))
    seed = None
    if noise is None:
        for run in range(runs):
            state = _run_passes(args, n_passes, _wavekernels.NO_NOISE, empty_table,
                                np.zeros(n_ranks), ends[run],
                                None if block_end is None else block_end[run], op_ends)
            finishes[run] = state[:, 0]
        kind = "no noise"
    elif method == "trace":
        table = trace_table(noise)
        seed = seed_from(rng) if isinstance(start, str) else None
        gen = as_generator(seed)
        for run in range(runs):
            offsets = np.ascontiguousarray(start_offsets(noise, table, n_ranks, start, gen))
            state = _run_passes(args, n_passes, _wavekernels.TRACE, table, offsets, ends[run],
                                None if block_end is None else block_end[run], op_ends)
            finishes[run] = state[:, 0]
        kind = "trace-driven simulation (jitSim rules for compute and message CPU time)"
    else:
        law = _as_law(noise, workload.work)
        seed = seed_from(rng)
        gen = as_generator(seed)
        chunk = max(1, _DELTA_BUDGET // n_ranks)
        for run in range(runs):
            state = _wavekernels.new_state(n_ranks)
            delta = None
            for first in range(0, n_passes, chunk):
                count = min(chunk, n_passes - first)
                del delta  # the previous chunk goes before the next is drawn
                delta = np.ascontiguousarray(law.sample((count, n_ranks), rng=gen), dtype=float)
                if block_end is None:
                    _wavekernels.run_passes(state, first, count, *args, _wavekernels.DELTA,
                                            empty_table, np.zeros(n_ranks), delta, ends[run],
                                            op_ends)
                    continue
                for k in range(count):  # one pass at a time, keeping each rank's clock
                    _wavekernels.run_passes(state, first + k, 1, *args, _wavekernels.DELTA,
                                            empty_table, np.zeros(n_ranks), delta[k:k + 1],
                                            ends[run], op_ends)
                    block_end[run, first + k] = state[:, 0]
            finishes[run] = state[:, 0]
        kind = "distribution-driven Monte Carlo of the block recurrence"
    ds = _labelled(workload, ends, finishes, noiseless_end, kind, noise,
                   start if method == "trace" else None, seed)
    if events:
        px, _, corners, blocks, work, send, recv, wire, _, _ = args
        return _simevents.wavefront_events(
            op_ends, ends[0], corners, px, blocks, (work, send, recv), wire,
            workload.allreduce, **ds.attrs, source="jl.apps.wavefront_simulate",
            makespan=float(ends[0, -1]), noiseless_makespan=float(noiseless_end))
    if block_end is not None:
        sweeps = len(workload.corners)
        passes = np.arange(n_passes)
        ds = ds.assign(block_end=(("run", "pass", "rank"), block_end,
                                  {"units": "s", "long_name": "time each rank is done with "
                                   "the pass's block"}))
        ds = ds.assign_coords({"pass": passes,
                               "pass_iteration": ("pass", passes // (sweeps * workload.blocks)),
                               "pass_sweep": ("pass", (passes // workload.blocks) % sweeps),
                               "pass_block": ("pass", passes % workload.blocks)})
    return ds


_SCALE = 10**12  # the event-driven run counts in whole picoseconds
_NO_OPS = np.zeros((0, 0, 0))  # no record of each step's end


def _in_units(value: float) -> int:
    """``value`` [s] in whole picoseconds."""
    return int(round(value * _SCALE))


def _simulate_on_arrival(workload, noise, start, rng, runs):
    px, py, corners, blocks, work, send, recv, wire_x, wire_y, _ = workload._kernel_args()
    costs = [_in_units(value) for value in (work, send, recv, wire_x, wire_y)]
    n_ranks, iterations = workload.n, workload.iterations
    finishes = np.zeros((runs, n_ranks))
    ends = np.zeros((runs, iterations))
    seed = None
    if noise is None:
        table, mode = np.zeros((1, 3)), _wavekernels.NO_NOISE
        offsets_of = lambda: np.zeros(n_ranks)  # noqa: E731
    else:
        table = trace_table(noise)
        mode = _wavekernels.TRACE
        seed = seed_from(rng) if isinstance(start, str) else None
        gen = as_generator(seed)
        offsets_of = lambda: np.ascontiguousarray(  # noqa: E731
            start_offsets(noise, table, n_ranks, start, gen))
    finish, end = np.zeros(n_ranks, dtype=np.int64), np.zeros(iterations, dtype=np.int64)
    for run in range(runs):
        _wavekernels.run_on_arrival(px, py, corners, blocks, iterations, *costs, mode, table,
                                    offsets_of(), _SCALE, finish, end)
        finishes[run], ends[run] = finish / _SCALE, end / _SCALE
    if noise is not None:
        _wavekernels.run_on_arrival(px, py, corners, blocks, iterations, *costs,
                                    _wavekernels.NO_NOISE, np.zeros((1, 3)), np.zeros(n_ranks),
                                    _SCALE, finish, end)
    noiseless_end = end[-1] / _SCALE if noise is not None else ends[0, -1]
    kind = ("discrete-event simulation, messages taken on arrival (LogGOPSim's rule)"
            + ("" if noise is None else ", jitSim rules for CPU time on the trace"))
    return _labelled(workload, ends, finishes, noiseless_end, kind, noise, start, seed)


def _labelled(workload, ends, finishes, noiseless_end, kind, noise, start, seed):
    data = _base_vars(ends, finishes, dims=("run",))
    data["noiseless_time"] = ((), noiseless_end, {"units": "s",
                                                  "long_name": "total time without noise"})
    data["slowdown"] = (("run",), ends[:, -1] / noiseless_end - 1.0,
                        {"units": "1", "long_name": "total time / noiseless time − 1"})
    attrs = _attrs(workload, kind)
    if noise is not None and start is not None:  # a replayed trace: where each rank began
        attrs["start"] = start if isinstance(start, str) else "explicit rows"
        if isinstance(noise, Trace):
            attrs["trace_source"] = str(noise.attrs.get("source", "unknown"))
    if seed is not None:
        attrs["seed"] = seed
    runs, iterations = ends.shape
    return xr.Dataset(data, coords={"run": np.arange(runs), "iteration": np.arange(iterations),
                                    "rank": np.arange(workload.n)}, attrs=attrs)


def _run_passes(args, n_passes, mode, table, offsets, iteration_end, block_end=None,
                op_ends=_NO_OPS):
    """All passes on a fresh state; with ``block_end``, one at a time, keeping the clocks;
    ``op_ends`` ``[pass, rank, step]`` is filled when not empty."""
    state = _wavekernels.new_state(offsets.size)
    empty = np.zeros((0, 0))
    if block_end is None:
        return _wavekernels.run_passes(state, 0, n_passes, *args, mode, table, offsets, empty,
                                       iteration_end, op_ends)
    for g in range(n_passes):
        _wavekernels.run_passes(state, g, 1, *args, mode, table, offsets, empty, iteration_end,
                                op_ends)
        block_end[g] = state[:, 0]
    return state
