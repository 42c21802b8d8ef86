"""The CPU timestamp counter (TSC), read inside numba kernels, and its calibration.

:func:`read_tsc` is a numba intrinsic that emits LLVM's ``llvm.readcyclecounter``, which
is the ``rdtsc`` instruction on x86: a read costs a few nanoseconds and allocates
nothing, so the benchmark loops can call it millions of times per second. Outside numba
use :func:`read_cycles`. On other processors LLVM either returns 0 or reads a counter
that user code may not be allowed to read, so every entry point first calls
:func:`check_cycle_counter`, which raises :class:`CycleCounterError` there.

:func:`calibrate_tsc` converts cycles to seconds by reading the counter together with
:func:`time.perf_counter_ns` at both ends of an interval.
"""

from __future__ import annotations

import functools
import math
import platform
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numba
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

__all__ = ["read_tsc", "read_cycles", "check_cycle_counter", "calibrate_tsc",
           "TscCalibration", "CycleCounterError", "TscWarning", "tsc_flags"]

#: processors on which ``llvm.readcyclecounter`` is the ``rdtsc`` instruction
_X86_MACHINES = frozenset({"x86_64", "amd64", "i386", "i486", "i586", "i686", "x86"})
#: a pair of readings bracketed by two clock reads longer than this is retried [ns]
_BRACKET_RETRY_NS = 2_000
_BRACKET_TRIES = 7


class CycleCounterError(RuntimeError):
    """The CPU timestamp counter cannot be read (or does not behave like one) here."""


class TscWarning(UserWarning):
    """Two calibrations of the timestamp counter disagree: its rate may not be constant."""


@intrinsic
def read_tsc(typingctx):
    """Read the CPU timestamp counter; numba code only. [cycles]

    Emits ``llvm.readcyclecounter`` (``rdtsc`` on x86): no call, no allocation, not
    serializing (out-of-order execution may move it by a few tens of cycles).
    Returns an int64.
    """
    def codegen(context, builder, signature, args):
        function_type = ir.FunctionType(ir.IntType(64), [])
        function = builder.module.declare_intrinsic("llvm.readcyclecounter",
                                                    fnty=function_type)
        return builder.call(function, [])

    return types.int64(), codegen


@numba.njit(cache=True)
def _read_cycles():
    return read_tsc()


@functools.cache
def tsc_flags() -> dict:
    """The TSC flags of ``/proc/cpuinfo``: ``tsc``, ``constant_tsc``, ``nonstop_tsc``.

    Each is True/False, or None when ``/proc/cpuinfo`` cannot be read (not Linux).
    ``constant_tsc`` and ``nonstop_tsc`` together mean an invariant TSC: it ticks at a
    fixed rate whatever the clock speed and sleep state of the core.
    """
    names = ("tsc", "constant_tsc", "nonstop_tsc")
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return dict.fromkeys(names)
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            flags = set(value.split())
            return {name: name in flags for name in names}
    return dict.fromkeys(names)


@functools.cache
def check_cycle_counter() -> None:
    """Raise :class:`CycleCounterError` unless the x86 timestamp counter works here.

    Checks the processor architecture (``rdtsc`` exists on x86 only), the ``tsc`` flag
    of ``/proc/cpuinfo`` where there is one, and that the counter advances.
    """
    machine = platform.machine().lower()
    if machine not in _X86_MACHINES:
        raise CycleCounterError(
            f"jitterlab.measure reads the x86 timestamp counter (rdtsc), which this "
            f"{platform.machine() or 'unknown'} processor does not have; the detour and FWQ "
            "benchmarks need an x86-64 CPU (reading traces works everywhere)")
    if tsc_flags()["tsc"] is False:
        raise CycleCounterError("/proc/cpuinfo does not list the 'tsc' flag: this CPU (or "
                                "virtual machine) offers no timestamp counter")
    first = _read_cycles()
    time.sleep(0.001)
    second = _read_cycles()
    if not second > first:
        raise CycleCounterError(f"the timestamp counter does not advance (read {first}, "
                                f"then {second} 1 ms later)")


def read_cycles() -> int:
    """The timestamp counter now, from Python (a numba call, about 100 ns). [cycles]"""
    check_cycle_counter()
    return int(_read_cycles())


def _bracketed_reading() -> tuple[int, float]:
    """A counter reading and the wall-clock time it was taken at [cycles, ns].

    The counter is read between two :func:`time.perf_counter_ns` calls; the midpoint is
    its time. The tightest of a few tries is kept (a preemption widens the bracket).
    """
    best = None
    for _ in range(_BRACKET_TRIES):
        before = time.perf_counter_ns()
        cycles = _read_cycles()
        after = time.perf_counter_ns()
        if best is None or after - before < best[0]:
            best = (after - before, cycles, 0.5 * (before + after))
        if after - before <= _BRACKET_RETRY_NS:
            break
    return best[1], best[2]


def _estimate(interval: float, busy: bool) -> float:
    cycles_0, ns_0 = _bracketed_reading()
    end = time.perf_counter() + interval
    if busy:
        while time.perf_counter() < end:
            pass
    else:
        time.sleep(interval)
    cycles_1, ns_1 = _bracketed_reading()
    return (cycles_1 - cycles_0) / (ns_1 - ns_0) * 1e9


@dataclass(frozen=True)
class TscCalibration:
    """The rate of the timestamp counter, from :func:`calibrate_tsc`.

    Attributes
    ----------
    frequency_hz : float
        Mean of the estimates: counter ticks per second. [Hz]
    estimates_hz : tuple of float
        One estimate per interval (busy-waiting, then sleeping, alternately). [Hz]
    relative_spread : float
        (largest − smallest estimate) / mean. [1]
    interval : float
        Length of each interval. [s]
    invariant : bool or None
        ``/proc/cpuinfo`` lists both ``constant_tsc`` and ``nonstop_tsc`` (None: unknown).
    """

    frequency_hz: float
    estimates_hz: tuple[float, ...]
    relative_spread: float
    interval: float
    invariant: bool | None

    def __float__(self) -> float:
        return self.frequency_hz


def calibrate_tsc(interval: float = 0.1, repeats: int = 2,
                  tolerance: float = 1e-3) -> TscCalibration:
    """Measure the rate of the CPU timestamp counter against ``time.perf_counter_ns``.

    Parameters
    ----------
    interval : float, default 0.1
        Length of one estimate; the counter and the clock are read together at both
        ends. [s]
    repeats : int, default 2
        Number of estimates, at least 2. The first busy-waits and the second sleeps
        (and so on alternately), so a counter whose rate follows the clock speed or the
        sleep state of the core shows up as a disagreement.
    tolerance : float, default 1e-3
        Largest relative spread of the estimates accepted without a :class:`TscWarning`.
        [1]

    Returns
    -------
    TscCalibration
        ``frequency_hz`` [Hz] and the individual estimates; ``float(calibration)`` is
        the frequency.

    Raises
    ------
    CycleCounterError
        On a machine without an x86 timestamp counter.

    Notes
    -----
    Each end point reads the counter between two clock reads and takes the midpoint;
    with brackets of ~100 ns over 0.1 s the estimate is good to a few ppm, plus the
    slewing of ``perf_counter`` by NTP (at most 500 ppm).

    Examples
    --------
    >>> calibration = calibrate_tsc(interval=0.02)   # doctest: +SKIP
    >>> round(calibration.frequency_hz / 1e9, 1)       # doctest: +SKIP
    2.6
    """
    interval = float(interval)
    if not math.isfinite(interval) or interval <= 0:
        raise ValueError(f"interval must be finite and > 0 seconds, got {interval!r}")
    if isinstance(repeats, bool) or int(repeats) != repeats or repeats < 2:
        raise ValueError(f"repeats must be an integer >= 2, got {repeats!r}")
    check_cycle_counter()
    estimates = tuple(_estimate(interval, busy=(k % 2 == 0)) for k in range(int(repeats)))
    mean = math.fsum(estimates) / len(estimates)
    if not mean > 0:
        raise CycleCounterError(f"the timestamp counter does not advance: estimates "
                                f"{estimates} Hz")
    spread = (max(estimates) - min(estimates)) / mean
    if spread > tolerance:
        warnings.warn(f"the timestamp counter ran at {min(estimates):.6g} to "
                      f"{max(estimates):.6g} Hz in {len(estimates)} calibrations "
                      f"(spread {spread:.2%} > {tolerance:.2%}): its rate may not be "
                      "constant, so times measured with it are unreliable",
                      TscWarning, stacklevel=2)
    flags = tsc_flags()
    invariant = (None if flags["constant_tsc"] is None
                 else bool(flags["constant_tsc"] and flags["nonstop_tsc"]))
    return TscCalibration(frequency_hz=mean, estimates_hz=estimates,
                          relative_spread=spread, interval=interval, invariant=invariant)
