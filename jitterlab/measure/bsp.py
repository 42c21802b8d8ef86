"""A bulk-synchronous (BSP) run under MPI that writes its own event trace with local noise.

Every MPI rank repeats, ``phases`` times::

    compute: read the timestamp counter in a busy loop until `work` seconds of
             undisturbed loop time are done; every step between two reads longer than
             `threshold` is an interruption (local noise, as the detour benchmark
             records it) and does not count as work, so interruptions lengthen the
             interval; optionally, a seeded injector spins away `inject_duration` every
             `inject_period` (recorded apart, as injected noise)
    collective: MPI_Barrier, or MPI_Allreduce of one double; with `poll`, MPI_Ibarrier
                or MPI_Iallreduce completed by a loop of MPI_Test that reads the counter
                and records its steps longer than the wait threshold as noise

and records, per rank and phase, when the compute interval started and ended, when the
collective ended (the next compute starts at that same counter read) and the noise
inside the compute interval (and, polled, inside the collective). :func:`read_bsp` turns
the run into a :class:`jitterlab.EventTrace` (one ``compute`` and one ``collective``
interval per phase, columns ``noise_combined`` = ``noise_injected`` + ``noise_other``),
the input of :func:`jitterlab.compare.estimate.accumulated_noise`; :func:`read_bsp_interruptions`
gives every interruption the ranks recorded (start, duration, kind), whose sums per
interval are those noise columns. This is the benchmark of the
validation of Nataraj et al. [1]_ (repeated phases of computation and a barrier, run
without and with injected noise), on the machine at hand.

The phases are one numba kernel (:mod:`jitterlab.measure.bsp_kernel`) that calls the MPI
library's C functions directly (:mod:`jitterlab.measure._mpi`), as the Parallel Benchmark
does. The run is cut into chunks of about ``chunk_seconds``; between chunks (outside the
timed loop) the ranks gather their records to rank 0, which stores them as one file of a
chunk store (``<output>.bsp/``), so a killed run keeps every completed chunk. Each chunk
starts after an (untimed) barrier. See ``docs/measure.md`` (section "A BSP run with its
event trace").

All ranks must run on one host: their timestamps are reads of the one timestamp counter
of that machine, converted to seconds with rank 0's calibration, so they share a clock.

References
----------
.. [1] A. Nataraj, A. Morris, A. Malony, M. Sottile, P. Beckman, "The Ghost in the
   Machine: Observing the Effects of Kernel Operation on Parallel Application
   Performance", SC07 (seed 003): the BSP benchmark (phases of computation and
   collective communication) run without and with injected noise to check the
   accumulated-noise estimate.
"""

from __future__ import annotations

import logging
import math

import numpy as np
from tqdm import tqdm

from ..io import chunks as _chunks
from . import mpi_runs
from ._machine import check_integer, check_seconds, pinned, utc_now
from ._mpi import (
    STATUS_WORDS,
    call_text,
    handle,
    mpi_functions,
    on_own_communicator,
)
from ._tsc import calibrate_tsc, check_cycle_counter
from .bsp_files import (  # noqa: F401  (the readers are jl.bench.* too)
    BOOL_ATTRS,
    COUNTS,
    FILES,
    INTERRUPTION_FIELDS,
    INTERRUPTION_KINDS,
    KIND,
    LONG_NAMES,
    PER_RANK,
    RECORDS,
    SOURCE,
    STORE_KEYS,
    STORE_SUFFIX,
    TIMES,
    dataset_from_store,
    interruptions_of_store,
    is_bsp_file,
    read_bsp,
    read_bsp_interruptions,
    read_dataset,
    store_path,
    target_problem,
    write_bsp,
)
from .bsp_kernel import bsp_loop, counter_now
from .detour import THRESHOLD_MEDIAN_FACTOR, THRESHOLD_TMIN_FACTOR, DeferredInterrupt, probe_loop

__all__ = ["bsp_benchmark", "read_bsp", "read_bsp_interruptions", "write_bsp",
           "store_path", "target_problem", "COLLECTIVES", "RECORDS", "INTERRUPTION_KINDS",
           "SOURCE"]

logger = logging.getLogger(__name__)

#: the collective after each compute phase, in the order of the kernel's codes
COLLECTIVES = ("barrier", "allreduce")
#: room for interruption records per rank and call of the kernel: this many per phase,
#: within [_EVENTS_MIN, _EVENTS_MAX]; a call runs at most as many phases as fill half of
#: it at the most interruptions any rank met in one phase so far
_EVENTS_PER_PHASE = 16
_EVENTS_MIN = 1 << 16
_EVENTS_MAX = 1 << 20
#: loop phases run before measuring (compile, first touch, check the MPI calls)
_WARMUP_PHASES = 3
#: at most this many phases per chunk
_CAPACITY_MAX = 1 << 18
#: the busy loop must classify at most this fraction of its steps as interruptions in
#: the warm-up; more means the threshold is too close to the loop time
_MAX_INTERRUPTED_FRACTION = 0.01
#: the MPI functions the kernel calls, in the order of its ``functions`` argument
_MPI_FUNCTIONS = ("MPI_Barrier", "MPI_Allreduce", "MPI_Ibarrier", "MPI_Iallreduce", "MPI_Test")
#: a polled collective counts MPI_Test loop steps longer than this as noise (at least) [s]
_WAIT_THRESHOLD = 10e-6


# --------------------------------------------------------------------------------------
# arguments and targets
# --------------------------------------------------------------------------------------
def _check_arguments(phases, work, output, collective, inject_period, inject_duration,
                     inject_seed, threshold, poll, chunk_seconds) -> tuple:
    phases = check_integer("phases", phases, 1)
    work = check_seconds("work", work)
    chunk_seconds = check_seconds("chunk_seconds", chunk_seconds)
    if collective not in COLLECTIVES:
        raise ValueError(f"collective must be one of {COLLECTIVES}, got {collective!r}")
    if (inject_period is None) != (inject_duration is None):
        raise ValueError("give both inject_period and inject_duration (or neither)")
    if inject_period is not None:
        inject_period = check_seconds("inject_period", inject_period)
        inject_duration = check_seconds("inject_duration", inject_duration)
        if inject_duration >= inject_period:
            raise ValueError(f"inject_duration ({inject_duration!r} s) must be shorter than "
                             f"inject_period ({inject_period!r} s)")
    inject_seed = check_integer("inject_seed", inject_seed, 0)
    if threshold is not None:
        threshold = check_seconds("threshold", threshold)
    if not isinstance(poll, bool | np.bool_):
        raise ValueError(f"poll must be True or False, got {poll!r}")
    output = FILES.output_path(output)
    return (phases, work, output, collective, inject_period, inject_duration, inject_seed,
            threshold, bool(poll), chunk_seconds)


# --------------------------------------------------------------------------------------
# the benchmark
# --------------------------------------------------------------------------------------
def bsp_benchmark(phases: int, work: float, output, collective: str = "barrier",
                  inject_period: float | None = None, inject_duration: float | None = None,
                  inject_seed: int = 0, threshold: float | None = None, poll: bool = False,
                  chunk_seconds: float = 1.0, comm=None, *, pin: bool = True,
                  overwrite: bool = False, keep_chunks: bool = False,
                  progress: bool = True, command: str | None = None):
    """A BSP run (compute + collective, phase after phase) that records its event trace.

    A collective call: every rank of ``comm`` must call it with the same arguments (run
    the script under ``mpiexec -n N``); all ranks must be on one host.

    Parameters
    ----------
    phases : int
        Number of phases (compute, then the collective). [-]
    work : float
        Undisturbed busy-loop time of one compute interval ``w``: the interval ends once
        the loop steps not longer than ``threshold`` add up to it. [s]
    output : path-like
        The netCDF file (``.nc``) rank 0 writes at the end, atomically; while the run
        goes on, the chunks are in ``<output>.bsp`` (removed after the file is written
        unless ``keep_chunks``). :func:`read_bsp` reads either.
    collective : {"barrier", "allreduce"}, default "barrier"
        ``MPI_Barrier``, or ``MPI_Allreduce`` (sum) of one double (the rank's compute
        time).
    inject_period, inject_duration : float, optional
        Noise injector (both or neither): on every rank, a busy detour of
        ``inject_duration`` falls due every ``inject_period``, the first at a seeded
        random phase after the start. A detour that falls due inside a compute interval
        spins the CPU for ``inject_duration`` (wall time) without doing work; one that
        falls due while the rank is in the collective is dropped (counted in
        ``injector_dropped``). ``inject_duration < inject_period``. [s]
    inject_seed : int, default 0
        Rank ``r`` draws its injector phase, uniform in ``[0, inject_period)``, from
        ``numpy.random.default_rng([inject_seed, r])``.
    threshold : float, optional
        A loop step longer than this is an interruption (local noise). Default, as the
        detour benchmark: ``max(10·t_min, 4·median loop time)`` of a probe run on the
        rank just before. [s]
    poll : bool, default False
        Start the collective non-blocking (``MPI_Ibarrier``, ``MPI_Iallreduce``) and
        complete it with a loop of ``MPI_Test`` that reads the counter: the loop's steps
        longer than the wait threshold (``max(threshold, 10 µs)``; an ``MPI_Test`` call
        itself may take microseconds) are recorded as noise of the collective interval.
        Without it (the default) the rank waits inside ``MPI_Barrier``/``MPI_Allreduce``,
        where nothing can be observed, and collective intervals carry noise 0.
    chunk_seconds : float, default 1.0
        About how often the records are gathered to rank 0 and stored (a chunk holds
        ``ceil(chunk_seconds / work)`` phases). [s]
    comm : mpi4py.MPI.Comm, optional
        Communicator (default ``MPI.COMM_WORLD``); the benchmark works on a duplicate.
    pin : bool, default True
        Pin each rank to one CPU, as the Parallel Benchmark does.
    overwrite, keep_chunks, progress, command
        As for :func:`jitterlab.measure.parallel_benchmark`.

    Returns
    -------
    jitterlab.EventTrace or None
        On rank 0 the event trace of :func:`read_bsp` (read back from ``output``); None
        on the other ranks.

    Raises
    ------
    ValueError
        For bad arguments (the same on every rank), ranks on more than one host, or a
        threshold that classifies more than 1 % of the loop steps as interruptions.
    FileExistsError
        If ``output`` or ``<output>.bsp`` holds an earlier run and ``overwrite`` is False.
    jitterlab.measure.CycleCounterError
        On a machine without an x86 timestamp counter.
    ImportError
        Without mpi4py.
    KeyboardInterrupt
        After SIGINT on any rank: the run stops after the chunk, stores it and raises on
        every rank; ``<output>.bsp`` keeps the chunks and ``output`` is not written.

    Notes
    -----
    By default noise is measured only inside compute intervals: inside a blocking
    collective the rank is in the MPI library, where no busy loop can see an
    interruption, so collective intervals carry noise 0 (noise that strikes there is
    either absorbed in waiting or lengthens the collective, and the estimate cannot
    remove it). With ``poll=True`` the wait is a loop of the benchmark's own, and its
    long steps (a preemption, say) are recorded as the collective's ``noise_other``.
    The injected detours are wall-time spins: an interruption during a spin is part of
    the spin.

    References
    ----------
    .. [1] A. Nataraj et al., "The Ghost in the Machine", SC07 (seed 003).

    Examples
    --------
    Save as ``bsp.py`` and run ``mpiexec -n 2 python bsp.py``:

    >>> import jitterlab as jl                                            # doctest: +SKIP
    >>> events = jl.bench.bsp_benchmark(2000, 1e-3, "bsp.nc",             # doctest: +SKIP
    ...                                 inject_period=10e-3, inject_duration=200e-6)
    >>> if events is not None:                                            # doctest: +SKIP
    ...     print(jl.estimate.accumulated_noise(events)["run_accumulated"])
    """
    requested = dict(phases=phases, work=work, collective=collective,
                     inject_period=inject_period, inject_duration=inject_duration,
                     inject_seed=inject_seed, threshold=threshold, poll=poll,
                     chunk_seconds=chunk_seconds)
    checked = _check_arguments(phases, work, output, collective, inject_period,
                               inject_duration, inject_seed, threshold, poll, chunk_seconds)
    output = checked[2]
    if command is None:
        command = call_text("jitterlab.bench.bsp_benchmark", requested, output)
    return on_own_communicator(comm, "BSP benchmark", lambda own, MPI: _run(
        own, MPI, *checked, pin, overwrite, keep_chunks, progress, command))


def _set_up_rank(threshold, MPI) -> dict:
    """Per-rank set-up: counter, its rate, the loop's resolution, the MPI functions."""
    check_cycle_counter()
    calibration = calibrate_tsc()
    loop_times = probe_loop()
    t_min = float(loop_times.min())
    median = float(np.median(loop_times))
    functions = mpi_functions(MPI, _MPI_FUNCTIONS)
    return {"frequency_hz": calibration.frequency_hz,
            "tsc_calibration_spread": calibration.relative_spread,
            "tsc_invariant": calibration.invariant, "t_min": t_min, "median": median,
            "functions": np.array(functions, dtype=np.int64)}


def _run(comm, MPI, phases, work, output, collective, inject_period, inject_duration,
         inject_seed, threshold, poll, chunk_seconds, pin, overwrite, keep_chunks, progress,
         command):
    rank, size = comm.Get_rank(), comm.Get_size()
    root = rank == 0
    store = store_path(output)
    mpi_runs.refuse_taken_output(comm, target_problem, output, overwrite)
    placement = mpi_runs.ranks_and_cpus(comm, pin)

    def one_host():
        if placement["n_nodes"] > 1:
            raise ValueError(f"the ranks run on {placement['n_nodes']} hosts; the BSP "
                             "benchmark times all ranks with one timestamp counter and needs "
                             "them on one host")
    mpi_runs.collectively(comm, one_host)
    if root and placement["oversubscribed"]:
        logger.warning("more MPI ranks than CPUs on a host: the ranks share CPUs, so most "
                       "of the noise they record is each other")
    with DeferredInterrupt() as interrupt, pinned(placement["this_cpu"]):
        setup = mpi_runs.collectively(comm, _set_up_rank, threshold, MPI)
        # one clock: rank 0's calibration of the counter all ranks read
        frequency = comm.bcast(setup["frequency_hz"], root=0)
        if threshold is None:
            threshold_cycles = math.ceil(max(THRESHOLD_TMIN_FACTOR * setup["t_min"],
                                             THRESHOLD_MEDIAN_FACTOR * setup["median"]))
        else:
            threshold_cycles = round(threshold * frequency)
        threshold_cycles = comm.allreduce(threshold_cycles, op=MPI.MAX)
        work_cycles = round(work * frequency)
        period = 0 if inject_period is None else round(inject_period * frequency)
        duration = 0 if inject_duration is None else round(inject_duration * frequency)
        # rounded up: the wait threshold is never below _WAIT_THRESHOLD
        wait_threshold_cycles = max(threshold_cycles, math.ceil(_WAIT_THRESHOLD * frequency))
        kernel_args = (COLLECTIVES.index(collective), poll, setup["functions"],
                       handle(MPI, comm), handle(MPI, MPI.DOUBLE), handle(MPI, MPI.SUM),
                       np.zeros(1), np.zeros(1), np.zeros(1, dtype=np.int64),
                       np.zeros(1, dtype=np.int32), np.zeros(STATUS_WORDS, dtype=np.int64),
                       np.int64(work_cycles), np.int64(threshold_cycles),
                       np.int64(wait_threshold_cycles))
        capacity = int(min(_CAPACITY_MAX, phases, max(1, math.ceil(chunk_seconds / work))))
        out = np.full((len(RECORDS), capacity), -1, dtype=np.int64)
        events_capacity = int(min(max(_EVENTS_PER_PHASE * capacity, _EVENTS_MIN),
                                  _EVENTS_MAX))
        events = np.full((len(INTERRUPTION_FIELDS) - 1, events_capacity), -1, dtype=np.int64)

        # warm-up without injection: compiles (or loads) the kernel, checks the MPI calls
        # on every rank and that the threshold lies above the loop's own step
        def warm_up():
            n, status, _, _, steps, _, _ = bsp_loop(
                *kernel_args, np.int64(_WARMUP_PHASES), np.int64(0), np.int64(0),
                np.int64(0), out, events)
            mpi_runs.check_status(MPI, status)
            interrupted = int(out[6, :n].sum())
            if interrupted > _MAX_INTERRUPTED_FRACTION * steps:
                raise ValueError(f"the threshold ({threshold_cycles / frequency:.3g} s) "
                                 f"classified {interrupted} of {steps} loop steps as "
                                 "interruptions: it is too close to the loop's own step; "
                                 "give a larger threshold")
            return (work_cycles * n) / max(steps - interrupted, 1) / frequency
        mean_loop_time = mpi_runs.collectively(comm, warm_up)
        # the most interruptions of one phase: of the warm-up, plus every detour the
        # injector can put into one compute interval; then the most of any phase so far
        most = _most_per_phase(out, _WARMUP_PHASES) + (
            math.ceil(work_cycles / (period - duration)) + 1 if period else 0)

        rng = np.random.default_rng([inject_seed, rank])
        injector_phase = float(rng.uniform(0.0, inject_period)) if period else 0.0
        per_rank = comm.gather({"frequency_hz": setup["frequency_hz"],
                                "tsc_calibration_spread": setup["tsc_calibration_spread"],
                                "tsc_invariant": setup["tsc_invariant"],
                                "injector_phase": injector_phase,
                                "mean_loop_time": mean_loop_time}, root=0)
        comm.Barrier()
        origin = comm.bcast(int(counter_now()) if root else None, root=0)
        next_detour = origin + round(injector_phase * frequency) if period else 0
        metadata = None
        if root:
            metadata = {
                **mpi_runs.run_metadata(MPI, SOURCE, size, placement, per_rank, command),
                "phases": phases, "work": work, "collective": collective,
                "inject_period": inject_period, "inject_duration": inject_duration,
                "inject_seed": inject_seed, "injector": bool(period),
                "threshold": threshold_cycles / frequency,
                "threshold_cycles": threshold_cycles, "chunk_seconds": chunk_seconds,
                "poll": poll, "wait_threshold": wait_threshold_cycles / frequency
                if poll else None,
                "clock_frequency_hz": frequency, "origin_cycles": origin,
                "clock": "rdtsc (llvm.readcyclecounter) of the one host, shared by all ranks; "
                         "converted with rank 0's calibration (clock_frequency_hz)",
            }
        writer = mpi_runs.collectively(comm, lambda: _chunks.ChunkWriter(
            store, metadata, kind=KIND, overwrite=overwrite) if root else None)

        bar = tqdm(total=phases, unit="phase", desc=f"bsp {size} ranks",
                   disable=not (progress and root))
        done = 0
        chunks = 0
        dropped = 0
        records_lost = 0
        interrupted = False
        with bar:
            while done < phases:
                # every rank runs the same phases: the chunk is cut where the records
                # fill half the buffer at the most interruptions per phase of any rank
                most = comm.allreduce(most, op=MPI.MAX)
                count = min(capacity, phases - done, max(1, events_capacity // (2 * most)))
                comm.Barrier()  # every chunk starts together (untimed)
                n, status, next_detour, skipped, _, recorded, lost = bsp_loop(
                    *kernel_args, np.int64(count), np.int64(period), np.int64(duration),
                    np.int64(next_detour), out, events)
                # ---- outside the timed loop from here on ----
                mpi_runs.check_status(MPI, status)
                most = max(most, _most_per_phase(out, n))
                dropped += skipped
                records_lost += lost
                _store_chunk(comm, writer, out, n, origin, done, dropped,
                             events[:, :recorded], records_lost)
                done += n
                chunks += 1
                bar.update(n)
                interrupted = bool(comm.allreduce(int(interrupt.requested), op=MPI.MAX))
                if interrupted:
                    break
        summary = {"phases_done": done, "chunks": chunks, "finished_at": utc_now()}
        result = mpi_runs.finish_run(comm, root, writer, summary, interrupted, store, output,
                                     read_dataset, write_bsp, read_bsp, keep_chunks, overwrite)
    if interrupted:
        raise KeyboardInterrupt
    return result


def _most_per_phase(out, n) -> int:
    """The most interruptions (of every kind) in one phase of the kernel's output (>= 1)."""
    counts = sum(out[RECORDS.index(name), :n] for name in COUNTS)
    return max(1, int(np.max(counts))) if n else 1


def _store_chunk(comm, writer, out, n, origin, first_phase, dropped, events, lost) -> None:
    """Gather one chunk (times relative to ``origin``) to rank 0 and store it there.

    ``events`` are the rank's interruption records of the chunk (phase from the chunk's
    start, counter read, length, kind), ``dropped`` and ``lost`` its injected detours
    dropped and interruption records lost so far.
    """
    root = comm.Get_rank() == 0
    send = np.ascontiguousarray(out[:, :n])
    send[: len(TIMES)] -= origin
    gathered = np.empty((comm.Get_size(), len(RECORDS), n), dtype=np.int64) if root else None
    comm.Gather(send, gathered, root=0)
    dropped_all = comm.gather(int(dropped), root=0)
    mine = np.array(events, dtype=np.int64)  # a copy: the kernel reuses its buffer
    mine[0] += first_phase
    mine[1] -= origin
    events_all = comm.gather(mine, root=0)
    lost_all = comm.gather(int(lost), root=0)

    def write():
        if root:
            ranks = np.concatenate([np.full(part.shape[1], rank, dtype=np.int64)
                                    for rank, part in enumerate(events_all)])
            joined = np.concatenate(events_all, axis=1)
            interruptions = {f"interruption_{field}": values for field, values in
                             zip(INTERRUPTION_FIELDS, (ranks, *joined), strict=True)}
            writer.append(**{name: gathered[:, k, :] for k, name in enumerate(RECORDS)},
                          first_phase=np.int64(first_phase),
                          injector_dropped=np.asarray(dropped_all, dtype=np.int64),
                          interruptions_lost=np.asarray(lost_all, dtype=np.int64),
                          **interruptions)
    mpi_runs.collectively(comm, write)
