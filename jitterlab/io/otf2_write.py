"""Writing an :class:`~jitterlab.EventTrace` as an OTF2 archive (the format of Score-P).

:func:`write_otf2_events` writes what :func:`jitterlab.io.read_otf2_events` reads back:
compute regions, point-to-point messages and collectives, the per-interval noise as
metrics, at :data:`~jitterlab.io.otf2_records.TIMER_RESOLUTION` ticks per second.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from ..traces.events import NOISE_PREFIX, EventTrace
from ..traces.values import plain_metadata
from .otf2_records import (
    ANY_ORDER_ATTRIBUTE,
    ARCHIVE_NAME,
    FORMAT_VERSION,
    PROPERTY,
    TAG_ATTRIBUTE,
    TAG_STRIDE,
    TIMER_RESOLUTION,
    otf2_package,
)

__all__ = ["write_otf2_events"]

# ---------------------------------------------------------------------- writing
def write_otf2_events(trace: EventTrace, path, *, overwrite: bool = False) -> Path:
    """Write an event trace as an OTF2 archive (1 ns timer resolution).

    The archive is the directory ``path`` with the anchor file ``traces.otf2`` in it (as
    Score-P names it); it is written into a temporary directory next to ``path`` and then
    moved into place, so a reader never sees half an archive.

    Parameters
    ----------
    trace : EventTrace
    path : str or path
        The archive directory to create.
    overwrite : bool
        Replace an existing ``path``; by default an existing one is an error.

    Returns
    -------
    pathlib.Path
        The anchor file, ``path / "traces.otf2"``, for :func:`read_otf2_events`.

    Notes
    -----
    Times and each interval's noise are rounded to the nearest nanosecond (a noise never
    above its rounded interval), so a trace whose values are whole nanoseconds comes back
    equal, and any other within 0.5 ns per time and 1 ns per noise value. The encoding is
    described in the module docstring (:mod:`jitterlab.io.otf2`).
    """
    if not isinstance(trace, EventTrace):
        raise TypeError(f"trace must be a jl.EventTrace, got {type(trace).__name__}")
    if isinstance(path, bytes) or not isinstance(path, str | os.PathLike):
        raise TypeError(f"path must be a str or path-like, got {type(path).__name__}")
    if not isinstance(overwrite, bool):
        raise TypeError(f"overwrite must be True or False, got {overwrite!r}")
    plain_metadata(trace.attrs)  # refuse metadata JSON cannot keep, before writing anything
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists; pass overwrite=True to replace it")
    parent = path.parent if str(path.parent) else Path(".")
    temporary = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=parent))
    try:
        _write(trace, temporary / "archive")
        if path.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.old.", dir=parent))
            os.replace(path, old / "archive")
            os.replace(temporary / "archive", path)
            shutil.rmtree(old)
        else:
            os.replace(temporary / "archive", path)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return path / f"{ARCHIVE_NAME}.otf2"


def _ticks(seconds: np.ndarray) -> np.ndarray:
    return np.rint(seconds * TIMER_RESOLUTION).astype(np.int64)


def _write(trace: EventTrace, directory: Path) -> None:
    import _otf2

    otf2 = otf2_package()
    from .. import __version__

    data = trace.data
    start, end = _ticks(data["start"].to_numpy()), _ticks(data["end"].to_numpy())
    zero = int(max(0, -min(start.min(), end.min())))
    start, end = start + zero, end + zero
    sources = trace.sources
    noise = {s: np.minimum(_ticks(trace.noise(s)), end - start) for s in sources}
    kinds = data["kind"].astype(str).to_numpy()
    peers, tags = data["peer"].to_numpy(), data["tag"].to_numpy()
    n_ranks = trace.n_ranks
    offsets = trace.rank_offsets()

    with otf2.writer.open(str(directory), archive_name=ARCHIVE_NAME,
                          timer_resolution=TIMER_RESOLUTION) as writer:
        writer.creator = f"jitterlab {__version__}"
        d = writer.definitions
        root = d.system_tree_node(str(trace.attrs.get("machine", "machine")))
        locations = [d.location("Master thread", group=d.location_group(
            f"MPI Rank {rank}", system_tree_parent=root)) for rank in range(n_ranks)]
        d.group("MPI_COMM_WORLD locations", group_type=otf2.GroupType.COMM_LOCATIONS,
                paradigm=otf2.Paradigm.MPI, members=locations)
        world = d.comm("MPI_COMM_WORLD", group=d.group(
            "MPI_COMM_WORLD", group_type=otf2.GroupType.COMM_GROUP,
            paradigm=otf2.Paradigm.MPI, members=list(range(n_ranks))))
        regions = {
            "compute": d.region("compute", paradigm=otf2.Paradigm.USER,
                                region_role=otf2.RegionRole.FUNCTION),
            "send": d.region("MPI_Send", paradigm=otf2.Paradigm.MPI,
                             region_role=otf2.RegionRole.POINT2POINT),
            "recv": d.region("MPI_Recv", paradigm=otf2.Paradigm.MPI,
                             region_role=otf2.RegionRole.POINT2POINT),
            "collective": d.region("MPI_Barrier", paradigm=otf2.Paradigm.MPI,
                                   region_role=otf2.RegionRole.BARRIER),
        }
        counters = d.metric_class(
            [d.metric_member(NOISE_PREFIX + s, f"local noise of source {s}",
                             metric_mode=otf2.MetricMode.ACCUMULATED_START,
                             value_type=otf2.Type.UINT64, base=otf2.Base.DECIMAL,
                             exponent=-9, unit="s") for s in sources],
            occurrence=otf2.MetricOccurrence.SYNCHRONOUS_STRICT,
            recorder_kind=otf2.RecorderKind.ABSTRACT)
        tag_attribute = d.attribute(TAG_ATTRIBUTE, "the message's or collective's tag in "
                                    "the jitterlab event trace", type=otf2.Type.INT64)
        any_order = trace.any_order()
        any_order_attribute = d.attribute(
            ANY_ORDER_ATTRIBUTE, "1: a receive of a run that completes in any order "
            "(a wait-any loop)", type=otf2.Type.UINT8) if any_order.any() else None
        undefined_root = otf2.Undefined.UINT32
        for rank in range(n_ranks):
            events = writer.event_writer_from_location(locations[rank])
            total = [0] * len(sources)
            for row in range(offsets[rank], offsets[rank + 1]):
                kind, begin, finish = kinds[row], int(start[row]), int(end[row])
                attributes = {tag_attribute: int(tags[row])}
                mpi_tag = int(tags[row]) % TAG_STRIDE
                events.metric(begin, counters, list(total))
                events.enter(begin, regions[kind],
                             attributes=attributes if kind == "compute" else None)
                if kind == "send":
                    events.mpi_send(begin, int(peers[row]), world, mpi_tag, 0,
                                    attributes=attributes)
                elif kind == "collective":
                    events.mpi_collective_begin(begin)
                for i, s in enumerate(sources):
                    total[i] += int(noise[s][row])
                if kind == "recv":
                    if any_order[row]:
                        attributes = {**attributes, any_order_attribute: 1}
                    events.mpi_recv(finish, int(peers[row]), world, mpi_tag, 0,
                                    attributes=attributes)
                elif kind == "collective":
                    events.mpi_collective_end(finish, otf2.CollectiveOp.BARRIER, world,
                                              undefined_root, 0, 0, attributes=attributes)
                events.metric(finish, counters, list(total))
                events.leave(finish, regions[kind])
        document = {"format_version": FORMAT_VERSION, "latency": trace.latency,
                    "attrs": plain_metadata(trace.attrs), "time_zero_ticks": zero}
        _otf2.Archive_SetProperty(writer.handle, PROPERTY,
                                  json.dumps(document), False)
