"""Message latency under MPI: ping-pong between rank pairs and an empty-barrier loop.

Theorem 1 of Garg & De [1]_ bounds the iteration time with the one-hop latency τ of the
barrier tree: E[θ] <= E[max_i(w_i + δ_i)] + 2τ·D. This benchmark measures τ apart from
the Parallel Benchmark whose iteration times are then checked against the bound, in two
ways:

* **ping-pong**: for every pair of ranks (i, j), i < j, one after the other, rank i sends
  a message of :data:`MESSAGE_BYTES` bytes to rank j, which sends it back; rank i times
  each round trip with its timestamp counter. Half a round trip is the one-way latency
  τ. The ranks outside the pair wait in a non-blocking barrier that sleeps, so that they
  leave the CPUs to the pair.
* **empty barrier**: all ranks call ``MPI_Barrier`` back to back and time each call: the
  time of a barrier with no work (and no noise from work) in between, the measured
  counterpart of the 2τ·D term.

Both loops are numba kernels (:mod:`jitterlab.measure.latency_kernel`) that call
``MPI_Send``, ``MPI_Recv`` and ``MPI_Barrier`` of the MPI library directly
(:mod:`jitterlab.measure._mpi`), as the Parallel Benchmark does: nothing is allocated or
interpreted between the timestamp reads. Each pair's round trips, and each block of
barriers, are one chunk, stored by rank 0 in ``<output>.latency/`` as they complete
(:mod:`jitterlab.io.chunks`), so a killed run keeps every completed chunk; at the end rank
0 writes one netCDF file, atomically. :func:`read_latency` reads either;
:func:`summarize_latency` gives τ and the barrier time with their uncertainty. See
``docs/measure.md`` (section "Latency").

References
----------
.. [1] R. Garg, P. De, "Impact of Noise on Scaling of Collectives: An Empirical
   Evaluation", HiPC 2006 (seed 001), Theorem 1 and §4.1 (τ = 5 µs on their testbed).
"""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from statistics import NormalDist

import numpy as np
from tqdm import tqdm

from ..base import limits
from ..io import chunks as _chunks
from . import mpi_runs
from ._machine import check_integer, pinned, utc_now
from ._mpi import (
    STATUS_WORDS,
    call_text,
    handle,
    mpi_functions,
    on_own_communicator,
)
from ._tsc import calibrate_tsc, check_cycle_counter
from .detour import DeferredInterrupt
from .latency_files import (  # noqa: F401  (the files' side, importable from here as before)
    FILES,
    KIND,
    MESSAGE_BYTES,
    SOURCE,
    STORE_SUFFIX,
    is_latency_file,
    read_latency,
    store_path,
    target_problem,
    write_latency,
)
from .latency_kernel import barrier_loop, ping_pong_loop

__all__ = ["latency_benchmark", "planned_seconds", "limit_problem", "read_latency",
           "write_latency", "summarize_latency",
           "is_latency_file", "store_path", "target_problem", "MESSAGE_BYTES", "SOURCE"]

logger = logging.getLogger(__name__)

#: round trips and barriers run before timing (compile, first touch of the channels)
_WARMUP = 20
#: barriers per chunk of the barrier loop
_BARRIER_CHUNK = 5000
#: how long a rank outside the ping-pong pair sleeps between tests of its barrier [s]
_IDLE_SLEEP = 1e-3


# --------------------------------------------------------------------------------------
# the benchmark
# --------------------------------------------------------------------------------------
def _check_arguments(output, round_trips, barriers) -> tuple[Path, int, int]:
    """The checked arguments, or ValueError naming the bad one."""
    round_trips = check_integer("round_trips", round_trips, 1)
    barriers = check_integer("barriers", barriers, 1)
    return FILES.output_path(output), round_trips, barriers


#: bytes per timed round trip or barrier that rank 0 holds: the chunks' cycles, then the
#: Dataset's seconds (read back from the chunk store and the file)
_BYTES_PER_SAMPLE = 24


def planned_seconds(n_ranks: int, round_trips: int, barriers: int, round_trip: float,
                    barrier: float) -> float:
    """How long a run takes, from the time of one round trip and of one barrier [s].

    Every pair of ranks exchanges its warm-up and timed round trips in turn, each pair
    ending with an idle barrier that sleeps (:data:`_IDLE_SLEEP`), then all ranks run
    the warm-up and timed barriers.

    Parameters
    ----------
    n_ranks : int
        Ranks of the run. [-]
    round_trips, barriers : int
        The timed round trips per pair and barriers. [-]
    round_trip, barrier : float
        Time of one round trip and of one barrier (from the warm-up). [s]
    """
    pairs = n_ranks * (n_ranks - 1) / 2
    return (pairs * ((round_trips + _WARMUP) * round_trip + _IDLE_SLEEP)
            + (barriers + _WARMUP) * barrier)


def limit_problem(n_ranks: int, round_trips: int, barriers: int, round_trip: float | None,
                  barrier: float | None, allow_large: bool = False) -> str | None:
    """Why a run may not start (more memory than allowed on rank 0, or longer than
    :data:`jitterlab.base.limits.MAX_PLANNED_SECONDS`), or None; the timings are those of the
    warm-up [s] (None: check the memory only)."""
    pairs = n_ranks * (n_ranks - 1) // 2
    what = (f"the latency benchmark with {n_ranks} ranks ({pairs} pair"
            f"{'' if pairs == 1 else 's'}), round_trips={round_trips}, barriers={barriers}")
    try:
        limits.check_memory(_BYTES_PER_SAMPLE * (pairs * round_trips + n_ranks * barriers),
                            what, "fewer round_trips or barriers (or ranks)", allow_large)
        if round_trip is not None:
            seconds = planned_seconds(n_ranks, round_trips, barriers, round_trip, barrier)
            limits.check_duration(
                seconds, lambda: f"{what}, at the warm-up's {round_trip * 1e6:.3g} µs per "
                f"round trip and {barrier * 1e6:.3g} µs per barrier,",
                "fewer round_trips or barriers (or ranks)", allow_large)
    except limits.ResourceLimitError as error:
        return str(error)
    return None


def latency_benchmark(output, round_trips: int = 1000, barriers: int = 10000, comm=None,
                      *, pin: bool = True, overwrite: bool = False,
                      keep_chunks: bool = False, progress: bool = True,
                      command: str | None = None, allow_large: bool = False):
    """One-way latency τ (ping-pong between rank pairs) and empty-barrier time under MPI.

    A collective call: every rank of ``comm`` (at least two) must call it with the same
    arguments (run the script under ``mpiexec -n N``).

    Parameters
    ----------
    output : path-like
        The netCDF file (``.nc``) written at the end, atomically, by rank 0. While the run
        goes on, the chunks are stored in ``<output>.latency`` (removed after the file is
        written unless ``keep_chunks``); :func:`read_latency` reads either.
    round_trips : int, default 1000
        Timed round trips per pair of ranks (every pair i < j, one pair at a time). [-]
    barriers : int, default 10000
        Timed back-to-back barriers of all ranks. [-]
    comm : mpi4py.MPI.Comm, optional
        Communicator (default ``MPI.COMM_WORLD``); the benchmark works on a duplicate.
    pin : bool, default True
        Pin each rank to one CPU, as :func:`jitterlab.measure.parallel_benchmark` does (the
        ``k``-th rank on a host to the ``k mod m``-th of its ``m`` allowed CPUs).
    overwrite, keep_chunks, progress, command
        As for :func:`jitterlab.measure.parallel_benchmark` (the chunk directory is
        ``<output>.latency``; the progress bar steps once per chunk).
    allow_large : bool, default False
        Run even if the run would take longer than
        :data:`jitterlab.base.limits.MAX_PLANNED_SECONDS` (1 h) or need more than half the
        available memory on rank 0 (``JITTERLAB_ALLOW_LARGE=1`` does the same). The
        duration is planned from the warm-up's round trip of ranks 0 and 1 and its
        barriers (:func:`planned_seconds`), logged, and checked before anything is stored.

    Returns
    -------
    xarray.Dataset or None
        On rank 0 the Dataset of :func:`read_latency` (as read back from ``output``);
        None on the other ranks.

    Raises
    ------
    ValueError
        For bad arguments (the same on every rank) or fewer than two ranks.
    jitterlab.base.limits.ResourceLimitError
        (a ValueError) On every rank, when rank 0 finds that the run would take longer
        than an hour or more memory than allowed, and ``allow_large`` is False.
    FileExistsError
        If ``output`` or its chunk directory holds an earlier run and ``overwrite`` is
        False (checked by rank 0 before measuring; raised on every rank).
    jitterlab.measure.CycleCounterError
        On a machine without an x86 timestamp counter.
    ImportError
        Without mpi4py (``pip install 'jitterlab[mpi]'``).
    KeyboardInterrupt
        After SIGINT: the run stops at the end of the chunk and raises on every rank;
        ``<output>.latency`` keeps the chunks and ``output`` is not written.

    Notes
    -----
    The Dataset has ``ping_pong`` (dims ``pair``, ``exchange``): the round-trip time of a
    :data:`MESSAGE_BYTES`-byte message, timed by the pair's lower rank (``initiator``)
    with its own counter [s], so τ = ``ping_pong`` / 2; ``barrier`` (dims ``rank``,
    ``sample``): the time of each ``MPI_Barrier`` call of each rank in a loop of
    barriers with nothing in between [s]; ``frequency_hz`` and
    ``tsc_calibration_spread`` per rank; coordinates ``initiator`` and ``responder``
    (per pair), ``host``, ``node`` and ``cpu`` (per rank, as the Parallel Benchmark);
    attributes ``source``, ``round_trips``, ``barriers``, ``message_bytes``,
    ``n_ranks``, ``n_nodes``, ``n_cpus`` (of rank 0's host), ``oversubscribed``,
    ``pinned``, ``complete``, ``interrupted``, ``chunks``, the MPI library, ``kernel``,
    ``os``, ``cpu_model``, ``jitterlab_version``, ``collected_at``, ``finished_at`` and
    ``command``.

    With more ranks on a host than CPUs (``oversubscribed``) the ranks take turns on the
    CPUs: a message to a rank that is not running waits for its turn, so the times
    measure the scheduler more than the MPI library. A warning is logged.

    References
    ----------
    .. [1] R. Garg, P. De, HiPC 2006 (seed 001), Theorem 1, §4.1.

    Examples
    --------
    Save as ``latency.py`` and run ``mpiexec -n 2 python latency.py``:

    >>> import jitterlab as jl                                          # doctest: +SKIP
    >>> from jitterlab.measure.latency import latency_benchmark, summarize_latency
    >>> ds = latency_benchmark("latency.nc")                            # doctest: +SKIP
    >>> if ds is not None:                                              # doctest: +SKIP
    ...     print(float(summarize_latency(ds)["tau"]))
    """
    requested = dict(round_trips=round_trips, barriers=barriers)
    output, round_trips, barriers = _check_arguments(output, round_trips, barriers)
    limits.check_allow_large(allow_large)
    if command is None:
        command = call_text("jitterlab.bench.latency.latency_benchmark", requested, output)

    def run(own, MPI):
        if own.Get_size() < 2:
            raise ValueError("the latency benchmark needs at least 2 MPI ranks (run it "
                             "under mpiexec -n 2 or more)")
        return _run(own, MPI, output, round_trips, barriers, pin, overwrite, keep_chunks,
                    progress, command, allow_large)

    return on_own_communicator(comm, "latency benchmark", run)


def _set_up_rank(MPI) -> dict:
    check_cycle_counter()
    calibration = calibrate_tsc()
    send, recv, barrier = mpi_functions(MPI, ("MPI_Send", "MPI_Recv", "MPI_Barrier"))
    return {"frequency_hz": calibration.frequency_hz,
            "tsc_calibration_spread": calibration.relative_spread,
            "tsc_invariant": calibration.invariant, "send": send, "recv": recv,
            "barrier": barrier}


def _idle_barrier(comm) -> None:
    """A barrier that sleeps while it waits, leaving the CPU to the ranks that measure."""
    request = comm.Ibarrier()
    while not request.Test():
        time.sleep(_IDLE_SLEEP)


def _warm_up(comm, MPI, setup, comm_handle, byte, message, status
             ) -> tuple[float, float] | None:
    """Median time of a round trip of ranks 0 and 1 and of a barrier of all ranks [s], on
    rank 0 (None elsewhere): the warm-up that also plans the run's duration."""
    rank = comm.Get_rank()
    cycles = np.zeros(_WARMUP, dtype=np.int64)
    barrier_loop(setup["barrier"], comm_handle, np.int64(_WARMUP), cycles)
    barrier = float(np.median(cycles))
    if rank in (0, 1):
        done, code = ping_pong_loop(setup["send"], setup["recv"], comm_handle, message, byte,
                                     status, np.int32(1 - rank), rank == 0,
                                     np.int64(_WARMUP), cycles)
        mpi_runs.check_status(MPI, code)
    _idle_barrier(comm)
    if rank != 0:
        return None
    frequency = setup["frequency_hz"]
    return float(np.median(cycles)) / frequency, barrier / frequency


def _run(comm, MPI, output, round_trips, barriers, pin, overwrite, keep_chunks, progress,
         command, allow_large=False):
    rank, size = comm.Get_rank(), comm.Get_size()
    root = rank == 0
    store = store_path(output)
    mpi_runs.refuse_taken_output(comm, target_problem, output, overwrite)
    problem = comm.bcast(limit_problem(size, round_trips, barriers, None, None, allow_large)
                         if root else None, root=0)
    if problem is not None:
        raise limits.ResourceLimitError(problem)
    placement = mpi_runs.ranks_and_cpus(comm, pin)
    if root and placement["oversubscribed"]:
        logger.warning("more MPI ranks than CPUs on a host: the ranks share CPUs, so the "
                       "latencies include waiting for a descheduled rank")
    pairs = ((i, j) for i in range(size) for j in range(i + 1, size))
    barrier_chunks = (min(_BARRIER_CHUNK, barriers - start)
                      for start in range(0, barriers, _BARRIER_CHUNK))
    n_chunks = size * (size - 1) // 2 + -(-barriers // _BARRIER_CHUNK)
    with DeferredInterrupt() as interrupt, pinned(placement["this_cpu"]):
        setup = mpi_runs.collectively(comm, _set_up_rank, MPI)
        comm_handle = handle(MPI, comm)
        byte = handle(MPI, MPI.BYTE)
        message = np.zeros(MESSAGE_BYTES, dtype=np.uint8)
        status = np.zeros(STATUS_WORDS, dtype=np.int64)
        timings = _warm_up(comm, MPI, setup, comm_handle, byte, message, status)
        problem = None
        if root:
            logger.info("planned: about %s (%s per round trip, %s per barrier in the warm-up)",
                        limits.format_duration(planned_seconds(size, round_trips, barriers,
                                                               *timings)),
                        limits.format_duration(timings[0]), limits.format_duration(timings[1]))
            problem = limit_problem(size, round_trips, barriers, *timings, allow_large)
        problem = comm.bcast(problem, root=0)
        if problem is not None:
            raise limits.ResourceLimitError(problem)
        per_rank = comm.gather({key: setup[key] for key in
                                ("frequency_hz", "tsc_calibration_spread", "tsc_invariant")},
                               root=0)
        metadata = (_metadata(MPI, round_trips, barriers, size, placement, per_rank, command)
                    if root else None)
        writer = mpi_runs.collectively(comm, lambda: _chunks.ChunkWriter(
            store, metadata, kind=KIND, overwrite=overwrite) if root else None)
        ping_pong = np.zeros(max(round_trips, _WARMUP), dtype=np.int64)
        barrier_out = np.zeros(max(min(barriers, _BARRIER_CHUNK), _WARMUP), dtype=np.int64)
        bar = tqdm(total=n_chunks, unit="chunk",
                   desc=f"latency {size} ranks", disable=not (progress and root))
        chunks = 0
        interrupted = False
        with bar:
            for i, j in pairs:
                if rank in (i, j):
                    peer = np.int32(j if rank == i else i)
                    for count in (_WARMUP, round_trips):
                        done, code = ping_pong_loop(
                            setup["send"], setup["recv"], comm_handle, message, byte, status,
                            peer, rank == i, np.int64(count), ping_pong)
                        mpi_runs.check_status(MPI, code)
                _idle_barrier(comm)
                samples = comm.gather(ping_pong[:round_trips].copy() if rank == i else None,
                                      root=0)
                _store(comm, writer, phase=np.array("ping_pong"), initiator=np.int64(i),
                       responder=np.int64(j), cycles=samples[i] if root else None)
                chunks += 1
                bar.update(1)
                if _stop_requested(comm, MPI, interrupt):
                    interrupted = True
                    break
            if not interrupted:
                barrier_loop(setup["barrier"], comm_handle, np.int64(_WARMUP), barrier_out)
                for count in barrier_chunks:
                    done, code = barrier_loop(setup["barrier"], comm_handle, np.int64(count),
                                               barrier_out)
                    mpi_runs.check_status(MPI, code)
                    gathered = comm.gather(barrier_out[:count].copy(), root=0)
                    _store(comm, writer, phase=np.array("barrier"),
                           cycles=np.stack(gathered) if root else None)
                    chunks += 1
                    bar.update(1)
                    if _stop_requested(comm, MPI, interrupt):
                        interrupted = True
                        break
        summary = {"chunks": chunks, "finished_at": utc_now()}
        result = mpi_runs.finish_run(comm, root, writer, summary, interrupted, store, output,
                                     read_latency, write_latency, read_latency, keep_chunks,
                                     overwrite)
    if interrupted:
        raise KeyboardInterrupt
    return result


def _store(comm, writer, **arrays) -> None:
    """Rank 0 stores one chunk; collective (a failure to write stops every rank)."""
    mpi_runs.collectively(comm, lambda: writer.append(**arrays) if writer is not None else None)


def _stop_requested(comm, MPI, interrupt) -> bool:
    flag = np.array([float(interrupt.requested)])
    comm.Allreduce(MPI.IN_PLACE, flag, op=MPI.MAX)
    return bool(flag[0])


def _metadata(MPI, round_trips, barriers, size, placement, per_rank, command) -> dict:
    return {**mpi_runs.run_metadata(MPI, SOURCE, size, placement, per_rank, command),
            "round_trips": round_trips, "barriers": barriers, "message_bytes": MESSAGE_BYTES}


# --------------------------------------------------------------------------------------
# τ and the barrier time with their uncertainty
# --------------------------------------------------------------------------------------
def _median_interval(values: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """Median and its distribution-free confidence interval (order statistics)."""
    values = np.sort(values[np.isfinite(values)])
    m = values.size
    if m == 0:
        return math.nan, math.nan, math.nan
    z = NormalDist().inv_cdf(0.5 + 0.5 * confidence)
    low = int(max(0, math.floor(m / 2 - z * math.sqrt(m) / 2)))
    high = int(min(m - 1, math.ceil(m / 2 + z * math.sqrt(m) / 2)))
    return float(np.median(values)), float(values[low]), float(values[high])


def _row_medians(values: np.ndarray) -> np.ndarray:
    """Median of each row; NaN for a row without samples (an interrupted run)."""
    if values.shape[-1] == 0:
        return np.full(values.shape[:-1], math.nan)
    return np.median(values, axis=-1)


def summarize_latency(dataset, confidence: float = 0.95):
    """τ from the ping-pong and the time of an empty barrier, with their uncertainty.

    Parameters
    ----------
    dataset : xarray.Dataset
        A latency run (:func:`read_latency`, :func:`jitterlab.datasets.load_latency`).
    confidence : float, default 0.95
        Level of the confidence intervals, strictly between 0 and 1. [-]

    Returns
    -------
    xarray.Dataset
        ``tau`` (median of ``ping_pong``/2 over every pair and round trip) [s] with
        ``tau_ci`` (dim ``ci_bound``) and ``tau_se`` [s]; ``tau_mean`` and
        ``tau_mean_se`` (mean of the one-way times, noise included, and its standard
        error) [s]; ``tau_pair`` (median per pair, dim ``pair``) [s]; ``barrier_time``
        (median over every rank and call), ``barrier_time_ci``, ``barrier_time_se``,
        ``barrier_mean`` and ``barrier_mean_se`` [s]; ``barrier_rank`` (median per rank)
        [s]. Attributes: ``confidence``, ``n_ranks``, ``oversubscribed``.

    Notes
    -----
    A run interrupted before its barrier loop (or before any ping-pong) gives NaN for
    what it did not measure.

    The median is the typical, undisturbed latency (a round trip hit by noise is counted
    in the noise δ of Theorem 1, not in τ); its interval comes from the order statistics
    m/2 ± z·√m/2 of the m sorted samples (distribution-free, for independent samples),
    and the standard error is its half-width / z, z the (1 + confidence)/2 normal
    quantile. The mean includes the noise that hit the messages.
    """
    import xarray as xr

    if not isinstance(dataset, xr.Dataset) or not {"ping_pong", "barrier"} <= set(dataset):
        raise TypeError("dataset must be a latency Dataset (read_latency, "
                        "jitterlab.datasets.load_latency)")
    if isinstance(confidence, bool) or not isinstance(confidence, int | float | np.number):
        raise TypeError(f"confidence must be a number strictly between 0 and 1, got "
                        f"{confidence!r}")
    if not 0 < float(confidence) < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    confidence = float(confidence)
    z = NormalDist().inv_cdf(0.5 + 0.5 * confidence)
    one_way = dataset["ping_pong"].values.ravel() / 2
    barrier = dataset["barrier"].values.ravel()
    variables = {}
    for name, values, what in (("tau", one_way, "one-way latency τ = ping-pong / 2"),
                               ("barrier_time", barrier, "time of an empty barrier")):
        median, low, high = _median_interval(values, confidence)
        variables[name] = ((), median, {"units": "s", "long_name": f"median {what}"})
        variables[f"{name}_ci"] = (("ci_bound",), [low, high], {
            "units": "s", "confidence": confidence,
            "long_name": f"confidence interval of the median {what} (order statistics)"})
        variables[f"{name}_se"] = ((), (high - low) / (2 * z), {
            "units": "s", "long_name": f"standard error of the median {what}"})
        mean_name = "tau_mean" if name == "tau" else "barrier_mean"
        finite = values[np.isfinite(values)]
        variables[mean_name] = ((), float(finite.mean()) if finite.size else math.nan,
                                {"units": "s", "long_name": f"mean {what}"})
        variables[f"{mean_name}_se"] = (
            (), float(finite.std(ddof=1) / math.sqrt(finite.size)) if finite.size > 1
            else math.nan, {"units": "s", "long_name": f"standard error of the mean {what}"})
    variables["tau_pair"] = ("pair", _row_medians(dataset["ping_pong"].values) / 2,
                             {"units": "s", "long_name": "median one-way latency per pair"})
    variables["barrier_rank"] = ("rank", _row_medians(dataset["barrier"].values),
                                 {"units": "s", "long_name": "median empty-barrier time per "
                                  "rank"})
    coords = {"ci_bound": ("ci_bound", ["lower", "upper"]),
              "pair": dataset["pair"].variable, "rank": dataset["rank"].variable}
    for name in ("initiator", "responder", "host", "cpu"):
        if name in dataset.coords:
            coords[name] = dataset[name].variable
    return xr.Dataset(variables, coords=coords, attrs={
        "confidence": confidence, "n_ranks": int(dataset.sizes["rank"]),
        "oversubscribed": int(bool(dataset.attrs.get("oversubscribed", False)))})
