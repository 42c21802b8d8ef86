"""The wavefront workload: the rank grid, the blocks, the sweeps' corners and the messages.

:class:`Wavefront` (seed 002's pipelined 2-D sweep, see :mod:`jitterlab.apps.wavefront`),
the named sweep orders :data:`SWEEP_ORDERS` and the most nearly square grid
:func:`square_grid`; the pipeline model is in :mod:`~jitterlab.apps.wavefront_model`, the
block-by-block simulation in :mod:`~jitterlab.apps.wavefront`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..analytic.bounds import tree_depth
from ..base.checks import check_integer, check_positive
from ..sim.message import Message

__all__ = ["Wavefront", "square_grid", "SWEEP_ORDERS"]

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


def sweep_corners(sweeps) -> tuple[tuple[int, int], ...]:
    """The corners (dx, dy) of ``sweeps``: a name of :data:`SWEEP_ORDERS` or the corners."""
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
        sweep_corners(self.sweeps)
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
        return np.array(sweep_corners(self.sweeps), dtype=np.int64)

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
        sweeps = (self.sweeps if isinstance(self.sweeps, str)
                  else str(list(sweep_corners(self.sweeps))))
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


def check_workload(workload) -> Wavefront:
    """``workload`` if it is a :class:`Wavefront`, else a TypeError."""
    if not isinstance(workload, Wavefront):
        raise TypeError(f"workload must be a jl.apps.Wavefront, got {type(workload).__name__}")
    return workload



def size_text(workload: Wavefront) -> str:
    """The workload's size in words, for the resource-limit messages."""
    return (f"a {workload.px} × {workload.py} grid ({float(workload.n):.3g} ranks), "
            f"{workload.blocks} blocks × {len(sweep_corners(workload.sweeps))} sweeps × "
            f"{workload.iterations} iteration{'' if workload.iterations == 1 else 's'}")

