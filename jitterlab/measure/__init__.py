"""Measuring operating-system noise on this machine (x86 timestamp counter).

* :func:`detour` — a busy loop over the timestamp counter that records every iteration
  longer than a threshold: a jitter trace (:class:`jitterlab.Trace`) in the manner of
  jitSim's TraceCollector and of ``sysjitter``; long runs are stored chunk by chunk and
  read back with :func:`read_detour`, also after an interruption; :func:`detour_table` gives
  each detour's absolute counter start and :func:`read_kernel_events` the kernel events
  recorded beside them (``kernel_events=True``).
* :func:`fwq` — Fixed Work Quantum: times of a fixed quantum of work ``w + δ``
  (:class:`jitterlab.noise.Empirical`), the work being :func:`lcg_work`, the linear
  congruential generator of Garg & De's Parallel Benchmark; files via
  :func:`write_fwq_samples` and :func:`read_fwq_samples` (output of LLNL's FWQ tool is
  read by :func:`jitterlab.io.read_fwq`).
* :func:`parallel_benchmark` — Garg & De's Parallel Benchmark under MPI (mpi4py): the
  compute, barrier and iteration times of work-barrier iterations on every rank, with or
  without the random wait and the broadcast; read back with :func:`read_pb`.
* :func:`latency_benchmark` — the one-way latency τ (ping-pong between rank pairs) and
  the time of an empty barrier under MPI; read back with :func:`read_latency`, τ with its
  standard error from :func:`summarize_latency`.
* :func:`calibrate_tsc` — the rate of the timestamp counter [Hz].
* :func:`trace_instance` — a private tracefs instance (``instances/jitterlab-<pid>``) that
  records kernel events (interrupts, softirqs, context switches, hrtimers) of one CPU and is
  removed on every exit path (:mod:`jitterlab.measure.tracefs`; its text is read by
  :func:`jitterlab.io.read_ftrace`).

The command line runs them as ``jitterlab measure detour``, ``jitterlab measure fwq``,
``mpiexec -n N jitterlab measure pb`` and ``mpiexec -n N jitterlab measure latency``; see
``docs/measure.md``.
"""

from ._tsc import CycleCounterError, TscCalibration, TscWarning, calibrate_tsc, read_cycles
from .bsp import bsp_benchmark, read_bsp, read_bsp_interruptions
from .detour import detour, detour_table, read_detour, read_kernel_events
from .fwq import fwq, lcg_work, read_fwq_samples, write_fwq_samples
from .latency import latency_benchmark, read_latency, summarize_latency, write_latency
from .pb import histogram_law, parallel_benchmark, read_pb, write_pb
from .tracefs import TracefsError, trace_instance

__all__ = ["detour", "read_detour", "fwq", "lcg_work", "read_fwq_samples",
           "write_fwq_samples", "parallel_benchmark", "read_pb", "write_pb", "histogram_law",
           "latency_benchmark", "read_latency", "write_latency", "summarize_latency",
           "calibrate_tsc",
           "read_cycles", "TscCalibration", "CycleCounterError", "TscWarning"]
__all__ += ["bsp_benchmark", "read_bsp", "read_bsp_interruptions"]
__all__ += ["trace_instance", "TracefsError", "detour_table", "read_kernel_events"]
