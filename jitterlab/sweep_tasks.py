"""Evaluating the points of a sweep: one after the other here, or as tasks on Dask.

:func:`run_serial` and :func:`run_dask` call the function on every point and give back one
:class:`Outcome` per point (its Dataset or its error, and its warnings), in grid order.
On Dask the points go out in shuffled batches; a batch whose worker dies is taken back,
split and run again point by point, so that only a point that kills its worker fails, and
the sweep stops (:class:`Stopped`) when workers keep dying. Split from
:mod:`jitterlab.sweep`, which checks the arguments and stacks the outcomes.
"""

from __future__ import annotations

import logging
import math
import sys
import warnings
from dataclasses import dataclass, field

import numpy as np

#: what jitterlab.sweep calls (its own API is in jitterlab.sweep)
__all__ = ["Outcome", "Stopped", "run_serial", "run_dask", "progress_bar", "count",
           "NO_WORKER_TIMEOUT", "RESTART_TIMEOUT", "WORKER_DEATH_LIMIT"]

#: the sweep's log (the name it had before the split, for the same log configuration)
logger = logging.getLogger("jitterlab.sweep")


@dataclass
class Outcome:
    """What one point gave back: its Dataset or the text of its exception, and its warnings."""

    result: object = None
    error: str | None = None
    warnings: list = field(default_factory=list)


def _evaluate(func, fixed, params, seed):
    """Call ``func`` on one point (runs on a Dask worker or in this process)."""
    kwargs = {**fixed, **params}
    if seed is not None:
        kwargs["rng"] = seed
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = func(**kwargs)
        except Exception as error:  # one point's failure must not end the sweep
            outcome = Outcome(error=f"{type(error).__name__}: {error}")
        else:
            outcome = Outcome(result=result)
    outcome.warnings = [(w.category, str(w.message)) for w in caught]
    return outcome


def progress_bar(total: int, enabled: bool):
    """A tqdm bar: a widget in a notebook kernel with ipywidgets, text elsewhere."""
    from tqdm import tqdm as text_bar

    kernel = "ipykernel" in sys.modules and getattr(
        sys.modules.get("IPython"), "get_ipython", lambda: None)() is not None
    if enabled and kernel:
        try:
            import ipywidgets  # noqa: F401
            from tqdm.notebook import tqdm as widget_bar
        except ImportError:
            pass
        else:
            return widget_bar(total=total, desc="sweep", unit="point")
    return text_bar(total=total, desc="sweep", unit="point", disable=not enabled)


def _serial_order(n_points: int):
    """The order in which the serial path evaluates the points (tests permute it)."""
    return range(n_points)


def run_serial(func, fixed, points, seeds, bar):
    """Evaluate the points one after the other in this process; their outcomes in grid
    order."""
    outcomes = [None] * len(points)
    for index in _serial_order(len(points)):
        outcomes[index] = _evaluate(func, fixed, points[index], seeds[index])
        bar.update()
    return outcomes


def _evaluate_batch(func, fixed, batch):
    """Call ``func`` on several points, one after the other, in one task."""
    return [_evaluate(func, fixed, params, seed) for params, seed in batch]


#: the order in which a Dask sweep hands out the points: a fixed shuffle of the grid, so
#: that every task gets a like mix of cheap and costly points (a parameter that sets the
#: cost, N or the work, varies in a pattern along the grid; the result does not depend on it)
_ORDER_SEED = 20261122


def _batches(n_points: int, points_per_task: int | None, threads: int) -> list[np.ndarray]:
    """The grid indices each task evaluates, in the order the tasks are submitted.

    The points are shuffled (:data:`_ORDER_SEED`). With ``points_per_task`` every task
    takes that many (the last fewer). Without it the tasks shrink as the sweep proceeds
    (guided self-scheduling): each takes the remaining points / (2 · ``threads``), rounded
    up, so the first tasks amortise the cost of a task and the last ones are single points
    that keep every worker thread busy to the end.
    """
    order = np.random.default_rng(_ORDER_SEED).permutation(n_points)
    sizes = []
    left = n_points
    while left > 0:
        size = points_per_task if points_per_task is not None else -(-left // (2 * threads))
        sizes.append(min(size, left))
        left -= sizes[-1]
    return np.split(order, np.cumsum(sizes)[:-1])


def _identity(value):
    """The value itself (a task whose result is the fixed arguments, see :func:`run_dask`)."""
    return value


#: how long a Dask sweep waits with no worker in the cluster, once it has seen one, before
#: it gives up on the points left (workers removed on purpose, a batch system's time limit) [s]
NO_WORKER_TIMEOUT = 300.0
#: how long a Dask sweep waits for a new worker when every worker has died under its points
#: (a nanny restarts one in 1-25 s on a loaded machine) before it stops with
#: :class:`~jitterlab.sweep.SweepWorkerError` [s]
RESTART_TIMEOUT = 60.0
#: how many Dask workers may die under the points of one sweep before it stops with
#: :class:`~jitterlab.sweep.SweepWorkerError` (one point that kills its worker costs 3-6: in
#: its task, alone among the others, alone on the cluster) [-]
WORKER_DEATH_LIMIT = 12
#: how often a Dask sweep looks at the cluster and the scheduler's log of worker deaths [s]
_POLL_SECONDS = 1.0
#: how long a Dask sweep waits for the result of a finished task before it looks at the
#: cluster again (the result's worker may die on the way: the task is then run again) [s]
_RESULT_SECONDS = 60.0


class _ClusterGone(Exception):
    """The cluster has had no worker for :data:`NO_WORKER_TIMEOUT`."""

    def __init__(self):
        super().__init__(f"no Dask worker in the cluster for {NO_WORKER_TIMEOUT:g} s (every "
                         f"worker died and none was started again)")


class _WorkerDied(Exception):
    """The worker evaluating a task died (seen in the scheduler's log)."""

    def __init__(self, worker):
        super().__init__(f"the Dask worker {worker} died while evaluating this task")


class Stopped(Exception):
    """Too many workers died under the sweep's points, or none is left: stop (the reason)."""


class _Deaths:
    """Unexpected deaths of Dask workers since the sweep started, from the scheduler's log.

    The scheduler logs every removed worker (topic "all", action "remove-worker") with the
    tasks it was processing; a removal that was not asked for is a death. Reading the log is
    public API (:meth:`distributed.Client.get_events`); a scheduler that cannot answer leaves
    the sweep to Dask's own ``KilledWorker`` after ``allowed-failures``.
    """

    def __init__(self, client):
        self.client = client
        self.readable = True
        self.count = 0
        self.last = None  # time.monotonic() of the last death seen
        self.points = {}  # grid index -> deaths of workers that were evaluating it
        self.since = max((stamp for stamp, _ in self._events()), default=-math.inf)

    def _events(self):
        if not self.readable:
            return ()
        try:
            return tuple(self.client.get_events("all"))
        except Exception as error:  # an old or foreign scheduler: Dask's KilledWorker only
            logger.info("cannot read the Dask scheduler's events (%s): worker deaths are "
                        "seen through KilledWorker only", error)
            self.readable = False
            return ()

    def poll(self) -> list:
        """The deaths logged since the last call: (worker address, set of task keys)."""
        import time

        new = []
        for stamp, message in self._events():
            if stamp <= self.since:
                continue
            self.since = stamp
            if (isinstance(message, dict) and message.get("action") == "remove-worker"
                    and not message.get("expected")):
                new.append((message.get("worker"), set(message.get("processing-tasks") or ())))
        if new:
            self.count += len(new)
            self.last = time.monotonic()
        return new

    def blame(self, batch) -> None:
        for index in batch:
            self.points[index] = self.points.get(index, 0) + 1


def _run_tasks(client, submit, batches, limit, outcomes, bar, deaths, pin=False):
    """Run ``batches`` (lists of grid indices) as tasks, at most ``limit`` at once.

    Fills ``outcomes`` for the batches whose task returned; returns the batches whose task
    failed (its worker died under it, or its result did not travel back) with the error.
    A task whose worker dies is taken back at once (the scheduler would run it on up to
    ``allowed-failures`` more workers, each of which it may kill). With ``pin`` each task
    is bound to one worker, the one with the fewest of these tasks, so that the scheduler
    cannot hand it to another worker when its own dies before the death is seen here (a
    task whose worker left before it started is submitted again). Raises
    :class:`_ClusterGone` when the cluster has had no worker for :data:`NO_WORKER_TIMEOUT`
    after having had one, and :class:`Stopped` when more than :data:`WORKER_DEATH_LIMIT`
    workers have died under the sweep or none has been left for :data:`RESTART_TIMEOUT`.
    """
    import time

    from distributed import wait

    waiting = list(batches)
    failed = []
    live = {}  # key -> (future, batch, the worker it is bound to or None)
    workers = set()
    seen_worker, alone_since, polled = False, None, -math.inf

    def start_next():
        worker = None
        if pin:
            if not workers:
                return False
            busy = [bound for _, _, bound in live.values()]
            worker = min(sorted(workers), key=busy.count)
        batch = waiting.pop(0)
        future = submit(batch, len(waiting), worker)
        live[future.key] = (future, batch, worker)
        return True

    def fill():
        while waiting and len(live) < limit and start_next():
            pass

    def look_at_cluster():
        nonlocal seen_worker, alone_since, polled, workers
        polled = time.monotonic()
        # the workers first: the death of every worker missing here is in the log read next
        workers = set(client.nthreads())
        for worker, keys in deaths.poll():
            for key in keys & set(live):
                future, batch, _ = live.pop(key)
                client.cancel([future])
                deaths.blame(batch)
                failed.append((batch, _WorkerDied(worker)))
        for key, (future, batch, bound) in list(live.items()):
            if bound is not None and bound not in workers:  # left before it started
                del live[key]
                client.cancel([future])
                waiting.insert(0, batch)
        if deaths.count > WORKER_DEATH_LIMIT:
            raise Stopped(f"{deaths.count} Dask workers died while evaluating its points "
                           f"(more than jitterlab.sweep.WORKER_DEATH_LIMIT = "
                           f"{WORKER_DEATH_LIMIT})")
        fill()
        if workers:
            seen_worker, alone_since = True, None
            return
        if not seen_worker:  # workers still to come (batch jobs queued): wait for them
            return
        alone_since = alone_since or polled
        if deaths.last is not None and polled - max(alone_since, deaths.last) > RESTART_TIMEOUT:
            raise Stopped(f"every Dask worker died ({count(deaths.count, 'death')}) and "
                           f"none was started again within jitterlab.sweep.RESTART_TIMEOUT = "
                           f"{RESTART_TIMEOUT:g} s")
        if polled - alone_since > NO_WORKER_TIMEOUT:
            raise _ClusterGone

    try:
        look_at_cluster()
        while live or waiting:
            try:
                done = wait([future for future, _, _ in live.values()],
                            timeout=_POLL_SECONDS, return_when="FIRST_COMPLETED").done
            except TimeoutError:
                done = ()
            if done:
                seen_worker, alone_since = True, None
            for future in done:
                if future.key not in live:  # taken back after its worker died
                    continue
                batch = live[future.key][1]
                try:
                    results = future.result(timeout=_RESULT_SECONDS)
                except TimeoutError:  # lost on the way back and computed again: wait on
                    continue
                except Exception as error:  # not the function's: _evaluate catches those
                    failed.append((batch, error))
                else:
                    for index, outcome in zip(batch, results, strict=True):
                        outcomes[index] = outcome
                    bar.update(len(batch))
                del live[future.key]
                future.release()
                fill()
            if not live:  # bound tasks waiting for a worker
                time.sleep(_POLL_SECONDS)
            if not done or time.monotonic() - polled >= _POLL_SECONDS:
                look_at_cluster()
    except BaseException:
        client.cancel([future for future, _, _ in live.values()])
        raise
    return failed


def run_dask(client, func, fixed, points, seeds, bar, points_per_task=None):
    """Evaluate the points on a Dask cluster; a point that kills its worker fails alone.

    The points go out in batches (:func:`_batches`). A batch whose task raises — its
    worker died (a segfault, the out-of-memory killer, ``os._exit`` in one point) or its
    result could not be sent back — is split: each of its points is run again as its own
    task, at most one per worker thread at a time; a point whose task fails then is run
    once more with nothing else on the cluster, so that only the point that kills a
    worker is reported (healthy points that shared a worker with it are not). Raises
    :class:`Stopped` (with the outcomes so far) when workers die too often or none is left.
    """
    # the fixed arguments as the result of a task, not scattered data: when every worker
    # that holds them dies, the scheduler computes them again instead of losing them
    # (scattered data cannot be recovered, and the tasks that need it would wait forever)
    fixed_future = client.submit(_identity, fixed, pure=False) if fixed else {}
    threads = sum(client.nthreads().values()) or 1

    def submit(batch, priority, worker=None):
        bound = {} if worker is None else {"workers": [worker], "allow_other_workers": False}
        return client.submit(_evaluate_batch, func, fixed_future,
                             [(points[i], seeds[i]) for i in batch], pure=False,
                             priority=priority, **bound)

    outcomes = [None] * len(points)
    deaths = _Deaths(client)
    try:
        try:
            batches = [batch.tolist()
                       for batch in _batches(len(points), points_per_task, threads)]
            failed = _run_tasks(client, submit, batches, len(batches), outcomes, bar, deaths)
            if failed:  # every point of a failed task on its own
                singles = [[index] for batch, _ in failed for index in batch]
                logger.info("%d sweep tasks failed (%s); running their %d points one per "
                            "task", len(failed), failed[0][1], len(singles))
                concurrency = max(1, min(threads, len(singles)))
                failed = _run_tasks(client, submit, singles, concurrency, outcomes, bar,
                                    deaths, pin=True)
                if failed and concurrency > 1:  # alone on the cluster: only a culprit fails
                    failed = _run_tasks(client, submit, [batch for batch, _ in failed], 1,
                                        outcomes, bar, deaths, pin=True)
        except _ClusterGone as gone:
            failed = [([index], gone) for index, outcome in enumerate(outcomes)
                      if outcome is None]
        except Stopped as stopped:
            stopped.outcomes, stopped.blamed = outcomes, deaths.points
            raise
        for batch, error in failed:
            for index in batch:
                outcomes[index] = Outcome(error=_task_error(error))
            bar.update(len(batch))
    finally:
        if fixed:
            fixed_future.release()
    return outcomes


def _task_error(error) -> str:
    """The text recorded for a point whose own task failed on the cluster."""
    if isinstance(error, _ClusterGone):
        return str(error)
    if isinstance(error, _WorkerDied) or type(error).__name__ == "KilledWorker":
        return (f"{type(error).__name__}: the Dask worker process died while evaluating this "
                f"point alone: a crash, the out-of-memory killer, the nanny's memory limit or "
                f"an exit in the function")
    return f"{type(error).__name__}: {error}"


def count(number: int, noun: str) -> str:
    """``number`` and ``noun``, plural unless 1: "1 death", "3 deaths"."""
    return f"{number} {noun}{'' if number == 1 else 's'}"
