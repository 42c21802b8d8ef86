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

The number of threads never changes a result: the kernels split their work in a fixed way.
``numba.set_num_threads(k)`` before a call caps the threads at ``k``; the environment variable
``JITTERLAB_THREADS=all`` turns the adaptation off (every call takes numba's current number).
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import numba

__all__ = ["free_cpus", "kernel_threads"]

_LOADAVG = Path("/proc/loadavg")
_OWN_TASKS = Path("/proc/self/task")
_SAMPLES = 3  # reads of the runnable count in a row; the fewest others counts; if some ...
_SECOND_LOOK = 2e-4  # ... remain, as many reads again after this pause [s]


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
    The count is the fewest of three reads in a row and, if other tasks remain, of three more
    after a pause of 0.2 ms: a kernel thread or a short-lived task seen for an instant is no
    busy process. Beside busy processes the pause may last a scheduler slice (milliseconds),
    once per user-level call.
    """
    try:
        cpus = len(os.sched_getaffinity(0))
        fewest = None  # the fewest runnable tasks of the machine seen
        own = _running_here()  # before and after the reads: a thread of ours may stop
        for sample in range(2 * _SAMPLES):  # a task seen for an instant is no busy process
            if sample == _SAMPLES:
                own = max(own, _running_here())
                if fewest <= own:
                    break
                time.sleep(_SECOND_LOOK)
            running = int(_LOADAVG.read_text().split()[3].split("/")[0])
            fewest = running if fewest is None else min(fewest, running)
            if fewest <= own:  # no other task: nothing to look at again
                break
        own = max(own, _running_here())
        others = min(cpus, max(fewest - own, 0))
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    return max(cpus - others, 0)


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
    before = numba.get_num_threads()
    depth = getattr(_decided, "depth", 0)
    if depth:  # a kernel inside a call that has counted the CPUs already
        count = 1 if size is not None and size < minimum else before
    else:
        count = _threads_for(size, minimum)
    numba.set_num_threads(count)
    _decided.depth = depth + 1
    try:
        yield
    finally:
        _decided.depth = depth
        numba.set_num_threads(before)
