"""The Parallel Benchmark (PB) of Garg & De under MPI: work, barrier, and their times.

Every MPI rank runs the loop of Algorithm 1 of Garg & De [1]_ (§3.1)::

    while elapsed < duration:
        busy-wait for a random time, uniform in [0, max_wait]        (random_wait=True)
        MPI_Barrier
        t_s = timestamp counter
        do_work: the LCG of eq. (3), calibrated to take `work` seconds
        t_f = timestamp counter
        MPI_Barrier
        t_e = timestamp counter
        store t_f - t_s (compute), t_e - t_f (barrier), t_e - t_s (iteration)
        MPI_Bcast(elapsed time of rank 0)                             (broadcast=True)

and so measures, per rank ``i``, the distributions of ``w + δ_i`` (compute), of the barrier
time ``b_i`` and of the iteration time ``θ`` that the max-of-N method and Theorem 1 predict.
Switching the random wait and the broadcast off and on reproduces the experiment of their
Fig. 3 and Fig. 4. See ``docs/measure.md`` (section "The Parallel Benchmark").

The loop is one numba kernel (:mod:`jitterlab.measure.pb_kernel`) that calls
``MPI_Barrier``/``MPI_Bcast`` directly (:mod:`jitterlab.measure._mpi`): nothing is
allocated, printed or interpreted between the timestamp reads. The run is cut into chunks
of about ``chunk_seconds``; at the end of each chunk (outside the timed loop) every rank
histograms its samples, the samples are gathered to rank 0 and rank 0 stores them as one
file of a chunk store (``<output>.pb/``), so a killed run keeps every completed chunk
(:func:`read_pb` reads the directory).

References
----------
.. [1] R. Garg, P. De, "Impact of Noise on Scaling of Collectives: An Empirical
   Evaluation", HiPC 2006 (seed 001), §3.1 (Algorithm 1, eq. 3) and §3.2 (Fig. 3–5).
"""

from __future__ import annotations

import logging
import math

import numpy as np
from tqdm import tqdm

from ..io import chunks as _chunks
from . import mpi_runs
from ._machine import check_integer, check_seconds, pinned, utc_now
from ._mpi import call_text, handle, mpi_functions, on_own_communicator
from ._tsc import calibrate_tsc, check_cycle_counter
from .detour import DeferredInterrupt
from .fwq import LCG_A, LCG_B, LCG_P, Quanta, calibrate_quanta
from .pb_files import (  # noqa: F401  (the files' side, importable from here as before)
    FILES,
    HIST_BINS_PER_DECADE,
    HIST_RANGE,
    KIND,
    QUANTITIES,
    SOURCE,
    STORE_SUFFIX,
    default_hist_bins,
    histogram_law,
    is_pb_file,
    read_pb,
    store_path,
    target_problem,
    write_pb,
)
from .pb_kernel import pb_loop

__all__ = ["parallel_benchmark", "read_pb", "write_pb", "histogram_law", "default_hist_bins",
           "is_pb_file",
           "store_path", "target_problem", "QUANTITIES",
           "HIST_BINS_PER_DECADE", "HIST_RANGE", "SOURCE"]

logger = logging.getLogger(__name__)

#: LCG start value (any value in [1, p) would do)
_LCG_SEED = 1
#: trials of the LCG calibration (as FWQ)
_TRIALS = 7
#: at most this many iterations per chunk (the buffers are 40 bytes per iteration)
_CAPACITY_MAX = 1 << 20
#: without the broadcast, the first chunk is planned to last about this long [s] ...
_FIRST_CHUNK_SECONDS = 0.1
#: ... from this guess of the barrier time [s]; later chunks use the measured times
_BARRIER_GUESS = 20e-6
#: loop iterations run before measuring (compile, first touch, check the MPI calls)
_WARMUP_ITERATIONS = 3


# --------------------------------------------------------------------------------------
# histograms
# --------------------------------------------------------------------------------------
def _check_edges(hist_bins) -> np.ndarray:
    """The finite edges e_0 = 0 < e_1 < ... < e_K; bins [e_k, e_k+1) and [e_K, ∞)."""
    if hist_bins is None:
        return default_hist_bins()
    try:
        edges = np.array(hist_bins, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("hist_bins must be a sequence of increasing bin edges in "
                         "seconds") from None
    if edges.ndim != 1 or edges.size == 0:
        raise ValueError(f"hist_bins must be a 1-D sequence of bin edges, got shape "
                         f"{edges.shape}")
    if not np.all(np.isfinite(edges)) or edges[0] < 0 or np.any(np.diff(edges) <= 0):
        raise ValueError("hist_bins must be finite, non-negative and strictly increasing "
                         "[s] (the bin above the last edge is added, up to infinity)")
    if edges[0] > 0:
        edges = np.concatenate(([0.0], edges))
    return edges


def _sparse_histogram(out: np.ndarray, n: int, frequency: float,
                      edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Counts of the first ``n`` samples of each row of ``out`` [cycles] per bin.

    Returns the non-zero entries of the (3, bins) count array, flattened: ``(index,
    count)`` with ``index = quantity·bins + bin``. The samples are converted to seconds
    exactly as :func:`read_pb` converts them, so both see the same bins.
    """
    n_bins = edges.size
    seconds = out[:, :n] / frequency
    index = np.searchsorted(edges, seconds.ravel(), side="right") - 1
    np.maximum(index, 0, out=index)  # a negative counter difference (never on one CPU)
    index += np.repeat(np.arange(len(QUANTITIES)) * n_bins, n)
    counts = np.bincount(index, minlength=len(QUANTITIES) * n_bins)
    nonzero = np.flatnonzero(counts)
    return nonzero.astype(np.int64), counts[nonzero].astype(np.int64)


def _set_up_rank(work: float, MPI) -> dict:
    """Per-rank set-up: counter, its rate, the LCG calibration, the MPI functions."""
    check_cycle_counter()
    calibration = calibrate_tsc()
    frequency = calibration.frequency_hz
    quanta = Quanta(_LCG_SEED, _TRIALS)
    fit = calibrate_quanta(quanta, work * frequency, frequency)
    barrier, bcast = mpi_functions(MPI)
    return {"frequency_hz": frequency, "tsc_calibration_spread": calibration.relative_spread,
            "tsc_invariant": calibration.invariant, "fit": fit, "x": quanta.x,
            "barrier": barrier, "bcast": bcast}


# --------------------------------------------------------------------------------------
# the benchmark
# --------------------------------------------------------------------------------------
def _check_arguments(work, duration, output, random_wait, broadcast, max_wait, seed,
                     chunk_seconds, max_samples) -> tuple:
    work = check_seconds("work", work)
    duration = check_seconds("duration", duration)
    if work > duration:  # one iteration would outlast the run (a typo: 1e3 for 1e-3)
        raise ValueError(f"work ({work:g} s) is longer than duration ({duration:g} s): the "
                         f"run would take at least one iteration of {work:g} s (the planned "
                         f"duration counts only whole iterations); check the units (1e-3 s "
                         f"is a millisecond)")
    chunk_seconds = check_seconds("chunk_seconds", chunk_seconds)
    for name, value in (("random_wait", random_wait), ("broadcast", broadcast)):
        if not isinstance(value, bool | np.bool_):
            raise ValueError(f"{name} must be True or False, got {value!r}")
    max_wait = work if max_wait is None else check_seconds("max_wait", max_wait, zero=True)
    if not random_wait:
        max_wait = 0.0
    seed = check_integer("seed", seed, 0)
    if max_samples is not None:
        max_samples = check_integer("max_samples", max_samples, 0)
    output = FILES.output_path(output)
    return work, duration, output, bool(random_wait), bool(broadcast), max_wait, seed, \
        chunk_seconds, max_samples


def parallel_benchmark(work: float, duration: float, output, random_wait: bool = True,
                       broadcast: bool = True, max_wait: float | None = None, seed: int = 0,
                       chunk_seconds: float = 2.0, max_samples: int | None = None,
                       comm=None, *, hist_bins=None, pin: bool = True,
                       overwrite: bool = False, keep_chunks: bool = False,
                       progress: bool = True, command: str | None = None):
    """Garg & De's Parallel Benchmark: compute, barrier and iteration times on every rank.

    A collective call: every rank of ``comm`` must call it with the same arguments (run
    the script under ``mpiexec -n N``).

    Parameters
    ----------
    work : float
        Undisturbed length ``w`` of the work of one iteration. Each rank calibrates its
        own number of LCG iterations (:func:`jitterlab.measure.lcg_work`, Garg & De eq. 3)
        so that the minimum of several timed quanta equals ``w``, as
        :func:`jitterlab.measure.fwq` does; the ranks agree on nothing. [s]
    duration : float
        Measured time: with the broadcast, the run stops after the iteration at which
        rank 0's elapsed time reaches it; without, after the number of iterations the
        ranks planned to reach it (see Notes). The time between chunks is not counted.
        [s]
    output : path-like
        The netCDF file (``.nc``) written at the end, atomically, by rank 0. While the run
        goes on, the chunks are stored in the directory ``<output>.pb`` (removed after
        the file is written unless ``keep_chunks``); :func:`read_pb` reads either.
    random_wait : bool, default True
        Busy-wait before each iteration for a time uniform in ``[0, max_wait]`` (line 2
        of Algorithm 1), drawn from a generator seeded with ``(seed, rank)``.
    broadcast : bool, default True
        Rank 0 broadcasts its elapsed time after each iteration (line 10) and every rank
        stops on it.
    max_wait : float, optional
        Longest random wait; default ``work``. Ignored (recorded as 0) without the random
        wait. [s]
    seed : int, default 0
        Seed of the random waits (>= 0); rank ``r`` uses ``numpy.random.default_rng([seed,
        r])``.
    chunk_seconds : float, default 2.0
        Length of one chunk: how often the samples are gathered to rank 0 and stored.
        A killed run loses at most the chunk in progress. [s]
    max_samples : int, optional
        Keep at most this many raw samples per rank (the first ones); the histograms
        count every iteration. Default: keep all. Rank 0 holds one chunk of every rank's
        samples at a time, and the final Dataset all kept samples (24 bytes per sample
        and rank).
    comm : mpi4py.MPI.Comm, optional
        Communicator (default ``MPI.COMM_WORLD``); the benchmark works on a duplicate.
    hist_bins : sequence of float, optional
        Histogram bin edges, increasing, >= 0 [s]; 0 is prepended if missing and a last
        bin up to infinity is appended, so every iteration is counted. Default
        :func:`default_hist_bins`: 0, then 200 log-spaced bins per decade (1.16 % wide)
        from 10 ns to 10 s.
    pin : bool, default True
        Pin each rank to one CPU of its affinity set: the ``k``-th rank on a host to the
        ``k mod m``-th of its ``m`` allowed CPUs (restored afterwards).
    overwrite : bool, default False
        Replace an existing ``output`` and an earlier chunk directory.
    keep_chunks : bool, default False
        Keep ``<output>.pb`` after writing ``output``.
    progress : bool, default True
        A tqdm progress bar on rank 0 (stderr), updated after each chunk.
    command : str, optional
        Recorded in ``attrs["command"]`` (default: this call).

    Returns
    -------
    xarray.Dataset or None
        On rank 0 the Dataset of :func:`read_pb` (as read back from ``output``); None on
        the other ranks.

    Raises
    ------
    ValueError
        For bad arguments (the same on every rank) or a ``work`` shorter than one timed
        LCG step.
    FileExistsError
        If ``output`` or ``<output>.pb`` holds an earlier run and ``overwrite`` is False
        (checked by rank 0 before measuring; raised on every rank).
    jitterlab.measure.CycleCounterError
        On a machine without an x86 timestamp counter.
    ImportError
        Without mpi4py (``pip install 'jitterlab[mpi]'``).
    KeyboardInterrupt
        After SIGINT on any rank: the run stops at the end of the chunk, stores it and
        raises on every rank; ``<output>.pb`` keeps the chunks and ``output`` is not
        written.

    Notes
    -----
    Per iteration the kernel stores ``t_f − t_s`` (compute, ``w + δ_i``), ``t_e − t_f``
    (barrier, ``b_i``) and ``t_e − t_s`` (iteration, ``θ``) in cycles of the rank's own
    timestamp counter, converted to seconds with its own calibrated ``frequency_hz``;
    ``iteration`` equals ``compute + barrier`` up to rounding.

    **Stopping together.** With ``broadcast=True`` the ranks stop on rank 0's broadcast
    elapsed time, exactly as in Algorithm 1 (chunks end the same way, after
    ``chunk_seconds`` of rank 0's time). Without the broadcast the ranks must still run
    the same number of iterations (a rank that left the loop early would leave the others
    waiting in the barrier), so the number of iterations of each chunk is agreed *before*
    the chunk: the first is planned from ``w``, the mean random wait and a guess of the
    barrier time to last about 0.1 s; after each chunk the ranks take the maximum of
    their chunk times (one ``MPI_Allreduce`` at the chunk boundary, outside the timed
    loop) and plan the next chunk, and the last one, from the measured time per
    iteration; chunks follow until the measured time reaches ``duration``, so the run
    ends past it by however much the last chunk was slower than planned. This is the
    only difference from the no-broadcast setup of Fig. 4 of [1]_,
    where each rank stopped by its own clock: no message is exchanged inside the timed
    loop other than the two barriers.

    **Histograms.** Each rank counts every iteration into fixed bins (as Garg & De stored
    their distributions), also beyond ``max_samples``; ``<q>_hist[rank, k]`` counts the
    iterations with ``bin_edges[k] <= q < bin_edges[k+1]`` (the last edge is ∞).

    **CPUs.** With more ranks on a host than CPUs it may use (``oversubscribed``), ranks
    share CPUs and preempt each other: the measured noise is mostly the other ranks and
    is no longer independent across ranks. A warning is logged.

    The returned Dataset has variables ``compute``, ``barrier``, ``iteration`` (dims
    ``rank``, ``sample``) [s]; ``compute_hist``, ``barrier_hist``, ``iteration_hist``
    (dims ``rank``, ``bin``) with coordinate ``bin_edges`` (dim ``bin_edge``) [s];
    per rank ``frequency_hz`` [Hz], ``lcg_iterations``, ``calibrated_work`` [s] and
    ``tsc_calibration_spread``; coordinates ``rank``, ``host`` (``MPI.Get_processor_name``),
    ``node`` (index of the host, in order of the first rank on it) and ``cpu`` (the CPU
    the rank was pinned to, −1 if not pinned); attributes ``source``, ``work``,
    ``duration``, ``measured_duration``, ``random_wait``, ``broadcast``, ``max_wait``,
    ``seed``, ``chunk_seconds``, ``max_samples`` (if given), ``iterations`` and
    ``samples`` (per rank), ``chunks``, ``n_ranks``, ``n_nodes``, ``n_cpus`` (of rank 0's
    host), ``oversubscribed``,
    ``pinned``, ``complete``, ``mpi_vendor``, ``mpi_vendor_version``,
    ``mpi_standard_version``, ``mpi_library_version``, ``mpi4py_version``, ``work_kernel``
    and the LCG constants, ``kernel``, ``os``, ``cpu_model`` (of rank 0's host),
    ``jitterlab_version``, ``collected_at`` (ISO UTC), ``finished_at`` and ``command``.

    References
    ----------
    .. [1] R. Garg, P. De, HiPC 2006 (seed 001), §3.1–3.2, Algorithm 1, Fig. 3 and 4.

    Examples
    --------
    Save as ``pb.py`` and run ``mpiexec -n 4 python pb.py``:

    >>> import jitterlab as jl                                          # doctest: +SKIP
    >>> pb = jl.bench.parallel_benchmark(300e-6, 60, "pb.nc")          # doctest: +SKIP
    >>> if pb is not None:                                              # doctest: +SKIP
    ...     print(pb["iteration"].quantile(0.99, dim="sample"))
    """
    requested = dict(work=work, duration=duration, random_wait=random_wait,
                     broadcast=broadcast, max_wait=max_wait, seed=seed,
                     chunk_seconds=chunk_seconds, max_samples=max_samples)
    (work, duration, output, random_wait, broadcast, max_wait, seed, chunk_seconds,
     max_samples) = _check_arguments(work, duration, output, random_wait, broadcast,
                                     max_wait, seed, chunk_seconds, max_samples)
    edges = _check_edges(hist_bins)
    if command is None:
        command = call_text("jitterlab.bench.parallel_benchmark", requested, output)
    return on_own_communicator(comm, "Parallel Benchmark", lambda own, MPI: _run(
        own, MPI, work, duration, output, random_wait, broadcast, max_wait, seed,
        chunk_seconds, max_samples, edges, hist_bins is None, pin, overwrite, keep_chunks,
        progress, command))


def _run(comm, MPI, work, duration, output, random_wait, broadcast, max_wait, seed,
         chunk_seconds, max_samples, edges, default_bins, pin, overwrite, keep_chunks,
         progress, command):
    rank, size = comm.Get_rank(), comm.Get_size()
    root = rank == 0
    store = store_path(output)
    mpi_runs.refuse_taken_output(comm, target_problem, output, overwrite)

    placement = mpi_runs.ranks_and_cpus(comm, pin)
    if root and placement["oversubscribed"]:
        logger.warning("more MPI ranks than CPUs on a host: the ranks share CPUs, so the "
                       "noise they measure is no longer independent across ranks")
    with DeferredInterrupt() as interrupt, pinned(placement["this_cpu"]):
        setup = mpi_runs.collectively(comm, _set_up_rank, work, MPI)
        frequency = setup["frequency_hz"]
        fit = setup["fit"]
        comm_handle = handle(MPI, comm)
        double = handle(MPI, MPI.DOUBLE)
        kernel_args = (setup["barrier"], setup["bcast"], comm_handle, double)
        lcg_iterations = np.int64(fit["iterations"])
        capacity = min(_CAPACITY_MAX, math.ceil(chunk_seconds / (0.9 * work)) + 1)
        out = np.full((len(QUANTITIES), capacity), -1, dtype=np.int64)
        waits = np.zeros(capacity, dtype=np.int64)
        uniform = np.zeros(capacity, dtype=np.float64) if random_wait else None
        elapsed = np.zeros(1, dtype=np.float64)
        # warm-up: compiles (or loads) the kernel and checks the MPI calls on every rank
        _, x, status, _ = pb_loop(*kernel_args, lcg_iterations, setup["x"], waits,
                                   np.int64(_WARMUP_ITERATIONS), broadcast, root, elapsed,
                                   math.inf, frequency, out)
        mpi_runs.check_status(MPI, status)
        elapsed[0] = 0.0

        per_rank = comm.gather({"frequency_hz": frequency,
                                "tsc_calibration_spread": setup["tsc_calibration_spread"],
                                "tsc_invariant": setup["tsc_invariant"],
                                "lcg_iterations": fit["iterations"],
                                "calibrated_work": fit["calibrated_work"],
                                "calibration_extrapolated": fit["calibration_extrapolated"]},
                               root=0)
        metadata = None
        if root:
            metadata = _metadata(MPI, work, duration, random_wait, broadcast, max_wait, seed,
                                 chunk_seconds, max_samples, edges, default_bins, size,
                                 placement, per_rank, command)
        writer = mpi_runs.collectively(comm, lambda: _chunks.ChunkWriter(
            store, metadata, kind=KIND, overwrite=overwrite) if root else None)

        rng = np.random.default_rng([seed, rank])
        max_wait_cycles = max_wait * frequency
        bar = tqdm(total=round(duration, 6), unit="s", desc=f"pb {size} ranks",
                   disable=not (progress and root),
                   bar_format="{l_bar}{bar}| {n:.1f}/{total:.1f} s [{elapsed}<{remaining}]"
                              "{postfix}")
        measured = 0.0
        kept = 0
        total = 0
        chunks = 0
        guess = work + 0.5 * max_wait + _BARRIER_GUESS
        count = _clamp(math.ceil(min(_FIRST_CHUNK_SECONDS, chunk_seconds, duration) / guess),
                       capacity)
        with bar:
            while True:
                if random_wait:  # outside the timed loop: the waits of the whole chunk
                    rng.random(out=uniform)
                    np.multiply(uniform, max_wait_cycles, out=uniform)
                    waits[:] = uniform
                if broadcast:
                    limit, stop_at = capacity, min(float(elapsed[0]) + chunk_seconds, duration)
                else:
                    limit, stop_at = count, math.inf
                n, x, status, cycles = pb_loop(*kernel_args, lcg_iterations, x, waits,
                                                np.int64(limit), broadcast, root, elapsed,
                                                stop_at, frequency, out)
                # ---- outside the timed loop from here on ----
                mpi_runs.check_status(MPI, status)
                flags = np.array([cycles / frequency, float(interrupt.requested)])
                comm.Allreduce(MPI.IN_PLACE, flags, op=MPI.MAX)
                seconds = float(elapsed[0]) - measured if broadcast else float(flags[0])
                keep = n if max_samples is None else max(0, min(n, max_samples - kept))
                _store_chunk(comm, MPI, writer, out, n, keep, seconds, frequency, edges)
                measured += seconds
                kept += keep
                total += n
                chunks += 1
                bar.update(min(measured, duration) - bar.n)
                bar.set_postfix_str(f"{total} iterations", refresh=False)
                if flags[1] or measured >= duration:
                    break
                if not broadcast:
                    per_iteration = float(flags[0]) / n
                    count = _clamp(math.ceil(min(chunk_seconds, duration - measured)
                                             / per_iteration), capacity)
        summary = {"measured_duration": measured, "iterations": total, "samples": kept,
                   "chunks": chunks, "finished_at": utc_now()}
        interrupted = bool(flags[1])
        result = mpi_runs.finish_run(comm, root, writer, summary, interrupted, store, output,
                                     read_pb, write_pb, read_pb, keep_chunks, overwrite)
    if interrupted:
        raise KeyboardInterrupt
    return result


def _clamp(count: int, capacity: int) -> int:
    return int(min(max(count, 1), capacity))


def _store_chunk(comm, MPI, writer, out, n, keep, seconds, frequency, edges) -> None:
    """Gather one chunk to rank 0 and store it there; collective."""
    root = comm.Get_rank() == 0
    index, count = _sparse_histogram(out, n, frequency, edges)
    gathered = None
    if keep:
        send = np.ascontiguousarray(out[:, :keep])
        gathered = (np.empty((comm.Get_size(), len(QUANTITIES), keep), dtype=np.int64)
                    if root else None)
        comm.Gather(send, gathered, root=0)
    histograms = comm.gather((index, count), root=0)

    def write():
        if not root:
            return
        if gathered is None:
            samples = np.zeros((comm.Get_size(), len(QUANTITIES), 0), dtype=np.int64)
        else:
            samples = gathered
        writer.append(
            **{name: samples[:, q, :] for q, name in enumerate(QUANTITIES)},
            iterations=np.int64(n), seconds=np.float64(seconds),
            hist_rank=np.repeat(np.arange(len(histograms), dtype=np.int32),
                                [part[0].size for part in histograms]),
            hist_index=np.concatenate([part[0] for part in histograms]),
            hist_count=np.concatenate([part[1] for part in histograms]))

    mpi_runs.collectively(comm, write)


def _metadata(MPI, work, duration, random_wait, broadcast, max_wait, seed, chunk_seconds,
              max_samples, edges, default_bins, size, placement, per_rank, command) -> dict:
    return {
        **mpi_runs.run_metadata(MPI, SOURCE, size, placement, per_rank, command),
        "work": work, "duration": duration,
        "random_wait": random_wait, "broadcast": broadcast, "max_wait": max_wait,
        "seed": seed, "chunk_seconds": chunk_seconds, "max_samples": max_samples,
        "bin_edges": edges.tolist(),
        "hist_bins_per_decade": HIST_BINS_PER_DECADE if default_bins else None,
        "work_kernel": "lcg", "lcg_a": LCG_A, "lcg_b": LCG_B, "lcg_p": LCG_P,
    }


