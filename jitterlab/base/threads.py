"""How many threads a parallel kernel takes: the CPUs that no other task is using.

jitterlab's parallel kernels (numba ``prange`` on the OpenMP layer) open one parallel region
per phase or per tree level. On an idle machine the threads meet at the end of each region in
microseconds. On a shared machine (a JupyterHub, a login node, a laptop with a browser) a
thread that lost its CPU to another process holds up the whole region until the scheduler
gives the CPU back, and meanwhile its partner spins on the CPU that it needs: a call of a few
milliseconds then takes seconds (issue #20 measured 4-68x with two busy processes).

So before each kernel call, :func:`kernel_threads` counts the tasks that are running or
waiting for a CPU right now (``/proc/loadavg``), takes away this process's own, and runs the
call on the CPUs left over: all of them on an idle machine, one beside busy processes, where
one thread is as fast as two would be at their fair share and never waits for a straggler.
The count is taken at the call, not as a load average, so it follows the machine within a
call's time. Kernels whose work is too small to gain from a second thread run on one thread
whatever the machine (``minimum``).

Work made of independent pieces (runs at several N, the max-of-N at several N) needs no
barrier at all: :func:`map_on_threads` runs the pieces on numba's number of threads, each
piece on one thread, each thread taking the next piece when it is done with its own. A thread
that loses its CPU then holds up no other, so these calls keep all their threads beside busy
processes: the scheduler gives each runnable thread its share (with two busy processes on two
CPUs, two threads get one CPU between them; one thread gets a whole CPU or half of one, as the
scheduler placed it, not two thirds: three tasks on two CPUs are not shared evenly).

The number of threads never changes a result: the kernels split their work in a fixed way.
``numba.set_num_threads(k)`` before a call caps the threads at ``k``; the environment variable
``JITTERLAB_THREADS=all`` turns the adaptation off (every call takes numba's current number).
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from types import FunctionType

import numba

__all__ = ["free_cpus", "kernel_threads", "one_thread", "map_on_threads",
           "one_thread_copy"]

_LOADAVG = Path("/proc/loadavg")
_OWN_TASKS = Path("/proc/self/task")
_SAMPLES = 3  # reads of the runnable count in a row; the fewest others counts; if some ...
_SECOND_LOOK = 2e-4  # ... remain, reads again for this long [s]


def _running_here() -> int:
    """Threads of this process that are running or runnable now."""
    count = 0
    for task in os.listdir(_OWN_TASKS):
        try:
            with open(f"{_OWN_TASKS}/{task}/stat", "rb") as stat:
                text = stat.read()
        except OSError:  # the thread ended meanwhile
            continue
        if text[text.rindex(b")") + 2] == ord("R"):
            count += 1
    return count


def free_cpus() -> int | None:
    """CPUs of this process's affinity that no other task is using now, or None where the
    kernel does not say (no ``/proc``).

    Counts the runnable tasks of the whole machine (the fourth field of ``/proc/loadavg``)
    minus those of this process, and subtracts them from the CPUs this process may run on.
    The count is the fewest of three reads in a row and, if other tasks remain, of the reads
    of the next 0.2 ms: a kernel thread or a short-lived task seen for an instant is no busy
    process. The reads keep the CPU (a sleep instead would give it to a busy process beside
    and could wait a scheduler slice for it).
    """
    try:
        cpus = len(os.sched_getaffinity(0))
        own = _running_here()  # before and after the reads: a thread of ours may stop
        fewest = _runnable()
        for _ in range(_SAMPLES - 1):  # a task seen for an instant is no busy process
            if fewest <= own:  # no other task: nothing to look at again
                break
            fewest = min(fewest, _runnable())
        if fewest > own:
            own = max(own, _running_here())
            deadline = time.perf_counter() + _SECOND_LOOK
            while fewest > own and time.perf_counter() < deadline:
                fewest = min(fewest, _runnable())
        own = max(own, _running_here())
        others = min(cpus, max(fewest - own, 0))
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    return max(cpus - others, 0)


def _runnable() -> int:
    """Tasks of the machine that are running or waiting for a CPU now."""
    descriptor = os.open(_LOADAVG, os.O_RDONLY)
    try:
        text = os.read(descriptor, 128)
    finally:
        os.close(descriptor)
    return int(text.split()[3].split(b"/")[0])


def _threads_for(size: int | None, minimum: int) -> int:
    allowed = numba.get_num_threads()
    if allowed == 1 or (size is not None and size < minimum):
        return 1
    if os.environ.get("JITTERLAB_THREADS", "").strip().lower() == "all":
        return allowed
    free = free_cpus()
    return allowed if free is None else max(1, min(allowed, free))


_decided = threading.local()  # inside an outer kernel_threads: its decision holds


@contextmanager
def kernel_threads(size: int | None = None, minimum: int = 0):
    """Run the enclosed kernel call on the CPUs that are free now (at least one).

    Parameters
    ----------
    size : int, optional
        The call's amount of parallel work (tasks, values) [count].
    minimum : int
        Below this ``size`` the call runs on one thread: its parallel regions are too small
        to gain from a second one [count].

    Inside another ``kernel_threads`` block (a user-level call made of many kernel calls,
    such as ``max_of_n`` over many N) the CPUs are not counted again: the outer decision
    holds, so the count costs once per call.
    """
    if getattr(_decided, "depth", 0):  # inside a call that has counted the CPUs already
        count = 1 if size is not None and size < minimum else numba.get_num_threads()
    else:
        count = _threads_for(size, minimum)
    with _decision(count):
        yield


def one_thread():
    """Run the enclosed kernel calls on one thread, as an outer :func:`kernel_threads` that
    decided one thread: the kernel calls inside do not count the CPUs again."""
    return _decision(1)


@contextmanager
def _decision(count: int):
    """numba's threads set to ``count`` while the block runs, as a decision that the
    kernel calls inside keep."""
    before = numba.get_num_threads()
    depth = getattr(_decided, "depth", 0)
    numba.set_num_threads(count)
    _decided.depth = depth + 1
    try:
        yield
    finally:
        _decided.depth = depth
        numba.set_num_threads(before)


def map_on_threads(function, items, threads: int) -> list:
    """``[function(item) for item in items]``, computed on ``threads`` threads.

    Each thread takes the next item when it is done with its own (give the costliest items
    first), and runs the numba kernels of ``function`` on one thread (:func:`one_thread`).
    ``function`` must spend its time in code that releases the GIL (numba kernels compiled
    with ``nogil``, numpy). The items share no state, so no thread ever waits for another
    but at the end, and the results do not depend on ``threads``.

    Parameters
    ----------
    function : callable
        Called once per item.
    items : sequence
        The pieces of work.
    threads : int
        Threads to use, the calling one included [count].
    """
    items = list(items)
    def run(item):
        with one_thread():
            return function(item)

    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(items))),
                            thread_name_prefix="jitterlab") as pool:
        futures = [pool.submit(run, item) for item in items]
        try:
            return [future.result() for future in futures]
        except BaseException:  # a failure or an interrupt: the items not begun are dropped
            for future in futures:
                future.cancel()
            raise


def one_thread_copy(kernel, name):
    """``kernel`` compiled without numba's parallel layer: its ``prange`` loops run as plain
    loops, in the same order with the same arithmetic (so the same results, bit for bit).

    On one thread the parallel layer still opens a region per phase or tree level, and the
    loops inside a region are compiled as separate functions that the compiler cannot
    optimise together with the loop around them: the one-thread kernels are 5-10 % faster
    (issue #20). The copy gets its own name, so that numba's disk cache (keyed by name and
    code, not by the ``parallel`` option) keeps the two compilations apart. The copy releases
    the GIL (``nogil``), so that independent runs can share the CPUs from Python threads
    (:func:`map_on_threads`).
    """
    source = kernel.py_func
    function = FunctionType(source.__code__, source.__globals__, name, source.__defaults__)
    function.__qualname__ = name
    function.__doc__ = f"{source.__name__} on one thread (same results); see one_thread_copy."
    return numba.njit(cache=True, nogil=True)(function)

