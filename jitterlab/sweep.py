"""Parameter sweeps: one function on every point of a grid, serially or on Dask.

A study is a grid (N × work × noise law × barrier × start mode × ...). :func:`sweep` calls a
jitterlab function that returns an :class:`xarray.Dataset` once per point of the grid and
stacks the results into one Dataset with a dimension per swept parameter. Each point draws its
random numbers from its own stream, derived from one seed and the point's place in the grid, so
the result is the same serially, on two Dask workers or on two hundred, whatever the order in
which the points finish. See ``docs/sweep.md``.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import logging
import math
import numbers
import re
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from .base.checks import check_integer

__all__ = ["sweep", "local_cluster", "point_seeds", "SweepWarning", "SweepWorkerError"]

logger = logging.getLogger(__name__)

#: environment of the worker processes of :func:`local_cluster`: one thread per process for
#: numba too (Dask already sets the BLAS and OpenMP ones), so N workers use N cores
_ONE_THREAD = {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "OPENBLAS_NUM_THREADS": "1"}


class SweepWarning(UserWarning):
    """Some points of a sweep failed; they are NaN in the result."""


#: what to do about points that kill their Dask workers (for the messages)
_KILLED_ADVICE = (
    "A point that kills its worker process usually needs more memory than a worker has (the "
    "out-of-memory killer, or the nanny at distributed.worker.memory.terminate of its "
    "memory_limit) or crashes: use fewer workers per machine, so that each has more memory "
    "(local_cluster(n_workers=1)), give each worker more memory (memory_limit=), make the "
    "points smaller (a smaller n, fewer phases, detail=False) or the tasks smaller "
    "(points_per_task=1), and call the point alone without Dask to see its own error")


class SweepWorkerError(RuntimeError):
    """A Dask sweep stopped because its points killed workers: more than
    :data:`WORKER_DEATH_LIMIT` died, or none was left for :data:`RESTART_TIMEOUT`.

    The message names the points that were being evaluated on the workers that died, and
    what to do. ``partial`` is the sweep's Dataset with the points computed before it
    stopped (the others NaN), or None if none was.
    """

    def __init__(self, message: str, partial=None):
        super().__init__(message)
        self.partial = partial


@dataclass
class _Outcome:
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
            outcome = _Outcome(error=f"{type(error).__name__}: {error}")
        else:
            outcome = _Outcome(result=result)
    outcome.warnings = [(w.category, str(w.message)) for w in caught]
    return outcome


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real | np.number) and not isinstance(value, bool | np.bool_)


def _default_labels(values: list) -> tuple[list, str | None]:
    """Coordinate values for one parameter's grid values, and the rule used (None: as is)."""
    if all(_is_number(v) for v in values) or all(isinstance(v, str) for v in values) or all(
            isinstance(v, bool | np.bool_) for v in values):
        return list(values), None
    return [v if isinstance(v, str) else repr(v) for v in values], "repr"


def _labels_for(name: str, values: list, given) -> tuple[list, str | None]:
    if given is None:
        return _default_labels(values)
    if callable(given):
        labels = [given(v) for v in values]
    elif isinstance(given, Sequence) and not isinstance(given, str):
        labels = list(given)
        if len(labels) != len(values):
            raise ValueError(f"labels[{name!r}] has {len(labels)} labels for "
                             f"{len(values)} grid values")
    else:
        raise TypeError(f"labels[{name!r}] must be a sequence of labels or a function of the "
                        f"value, got {type(given).__name__}")
    if not (all(_is_number(v) for v in labels) or all(isinstance(v, str) for v in labels)):
        raise TypeError(f"labels[{name!r}] must be all numbers or all strings, got {labels!r}")
    return labels, "labels"


def _check_grid(grid) -> dict[str, list]:
    if not isinstance(grid, Mapping):
        raise TypeError(f"grid must be a dict of parameter name -> list of values, "
                        f"got {type(grid).__name__}")
    if not grid:
        raise ValueError("grid is empty: give at least one parameter and its values")
    checked = {}
    for name, values in grid.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise TypeError(f"grid keys must be parameter names, got {name!r}")
        if isinstance(values, str | bytes | Mapping) or not isinstance(
                values, Sequence | np.ndarray | range):
            raise TypeError(f"grid[{name!r}] must be a list of values, got "
                            f"{type(values).__name__} {values!r}")
        values = list(values)
        if not values:
            raise ValueError(f"grid[{name!r}] has no values")
        checked[name] = values
    return checked


#: what each of sweep's own options takes (for the messages on a wrong kind)
_OPTION_KINDS = {
    "client": "None, 'local', a scheduler address ('tcp://host:8786') or a "
              "dask.distributed Client",
    "progress": "True or False (sweep's progress bar)",
    "labels": "a dict of parameter name -> labels",
    "points_per_task": "a whole number of points per Dask task",
    "fixed": "a dict of argument name -> value passed to the function at every point",
}

_ADDRESS = re.compile(r"\A(?:[a-z][a-z0-9+]*://\S+|[^\s:/]+:\d+)\Z")


def _option_fits(name: str, value) -> bool:
    """Whether ``value`` is of the kind sweep's option ``name`` takes."""
    if name == "client":
        if isinstance(value, str):
            return value == "local" or bool(_ADDRESS.match(value))
        return hasattr(value, "submit") and hasattr(value, "scatter")
    if name == "progress":
        return isinstance(value, bool | np.bool_)
    if name in ("labels", "fixed"):
        return isinstance(value, Mapping)
    return _is_number(value)  # points_per_task: its value is checked afterwards


def _own_arguments(func) -> set[str]:
    """Names ``func`` takes as keyword arguments that are not already bound by a partial."""
    try:
        parameters = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return set()
    names = {p.name for p in parameters
             if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                           inspect.Parameter.KEYWORD_ONLY)}
    while isinstance(func, functools.partial):
        names -= set(func.keywords)
        func = func.func
    return names


def _fixed_arguments(func, options: dict, keywords: dict) -> dict:
    """The arguments passed to ``func`` at every point: ``fixed=`` and the other keywords."""
    fixed = options["fixed"]
    if fixed is None:
        return dict(keywords)
    if not isinstance(fixed, Mapping) or not all(isinstance(k, str) for k in fixed):
        raise TypeError(_misfit("fixed", fixed, func))
    both = sorted(set(fixed) & set(keywords))
    if both:
        raise ValueError(f"{', '.join(both)} given both in fixed= and as a keyword argument "
                         f"of sweep: give each once")
    return {**fixed, **keywords}


def _misfit(name: str, value, func) -> str:
    """The message for sweep's option ``name`` given a value of another kind."""
    text = f"{name}={value!r}: sweep's own option {name!r} takes {_OPTION_KINDS[name]}"
    if name in _own_arguments(func):
        text += (f"; {_function_name(func)} also takes {name}=: give the function's with "
                 f"fixed={{{name!r}: {value!r}}}")
    return text


def _check_options(func, options: dict, fixed: dict) -> None:
    """Refuse an option of ``sweep`` of the wrong kind, or one ``func`` also takes.

    A name that both ``sweep`` and ``func`` take is ``sweep``'s when given to ``sweep``;
    if ``func``'s own is not given too (by ``fixed=`` or a partial) the call is ambiguous.
    """
    own = _own_arguments(func)
    for name, value in options.items():
        if value is None:
            continue
        if not _option_fits(name, value):
            raise TypeError(_misfit(name, value, func))
        if name in own and name not in fixed:
            raise ValueError(
                f"sweep(..., {name}={value!r}) is ambiguous: {_function_name(func)} also "
                f"takes {name}=. Arguments given to sweep by its own option names are "
                f"sweep's; give the function's with fixed={{{name!r}: ...}} (its default, "
                f"if that is what you meant) or functools.partial")


def _check_rng(rng) -> None:
    """Refuse a seed of the wrong kind, whether or not ``func`` takes one."""
    if isinstance(rng, np.random.Generator | np.random.SeedSequence):
        return
    if not isinstance(rng, int | np.integer) or isinstance(rng, bool | np.bool_):
        raise TypeError(f"rng must be an int seed, a SeedSequence, a numpy Generator or None, "
                        f"not {type(rng).__name__} {rng!r}")
    if rng < 0:
        raise ValueError(f"rng seed must be non-negative, got {rng}")


def _check_signature(func, names, fixed, pass_rng) -> bool:
    """Raise TypeError if ``func`` cannot take the grid's and fixed arguments.

    Returns whether ``func`` takes ``rng`` (a parameter of that name or ``**kwargs``, as
    :func:`jitterlab.theorem1_bounds` passes it on to :func:`jitterlab.max_of_n`): then each
    point gets its seed.
    """
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):  # some builtins cannot be inspected: let the call tell
        return False
    accepts_rng = "rng" in signature.parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values())
    try:
        signature.bind_partial(**fixed, **dict.fromkeys(names))
    except TypeError as error:
        raise TypeError(f"{_function_name(func)} cannot take the arguments of this sweep "
                        f"({', '.join([*names, *fixed])}): {error}") from None
    return accepts_rng and pass_rng


def _function_name(func) -> str:
    if isinstance(func, functools.partial):
        return f"functools.partial({_function_name(func.func)})"
    module = getattr(func, "__module__", None)
    name = getattr(func, "__qualname__", None) or type(func).__name__
    return f"{module}.{name}" if module else name


def _entropy(rng) -> int:
    if rng is None:
        return int(np.random.SeedSequence().entropy)
    _check_rng(rng)
    if isinstance(rng, np.random.SeedSequence):
        if rng.spawn_key:
            raise ValueError("rng: give a root SeedSequence (empty spawn_key) or an int seed")
        return int(rng.entropy)
    if isinstance(rng, np.random.Generator):
        return int(rng.integers(0, 2**63 - 1))
    return int(rng)


def point_seeds(entropy: int, n_points: int) -> np.ndarray:
    """The integer seed of every point of a sweep, in grid order.

    Point i gets the stream of ``numpy.random.SeedSequence(entropy).spawn(n_points)[i]``,
    reduced to one 63-bit integer (the form every jitterlab function takes as ``rng``).

    Parameters
    ----------
    entropy : int
        The sweep's seed (the ``sweep_seed`` attribute of a sweep's result). [-]
    n_points : int
        Number of points of the grid. [-]

    Returns
    -------
    numpy.ndarray
        ``n_points`` seeds, int64. [-]

    Examples
    --------
    >>> from jitterlab.sweep import point_seeds
    >>> seeds = point_seeds(1, 3)
    >>> len(set(seeds.tolist())), bool((seeds >= 0).all())
    (3, True)
    """
    seeds = np.empty(n_points, dtype=np.int64)
    for index in range(n_points):
        # the same stream as SeedSequence(entropy).spawn(n_points)[index], built directly
        child = np.random.SeedSequence(entropy, spawn_key=(index,))
        seeds[index] = int(child.generate_state(1, np.uint64)[0]) & (2**63 - 1)
    return seeds


def _without_swept(result, point_labels: dict, func) -> xr.Dataset:
    """One point's Dataset without the swept parameters it may carry as coordinates."""
    if not isinstance(result, xr.Dataset):
        raise TypeError(f"sweep needs a function returning an xarray.Dataset; "
                        f"{_function_name(func)} returned {type(result).__name__}")
    for name, label in point_labels.items():
        if name in result.data_vars:
            raise ValueError(f"cannot sweep {name!r}: {_function_name(func)} returns a "
                             f"variable of that name")
        if name in result.dims:
            own = result[name].values if name in result.coords else None
            if result.sizes[name] != 1 or own is None or own[0] != label:
                raise ValueError(f"cannot sweep {name!r}: the result already has a dimension "
                                 f"{name!r} (size {result.sizes[name]}) that is not this "
                                 f"point's value {label!r}; give all values to the function "
                                 f"in one call instead")
            result = result.isel({name: 0}, drop=True)
        elif name in result.coords:
            if result[name].ndim != 0 or result[name].values[()] != label:
                raise ValueError(f"cannot sweep {name!r}: the result has a coordinate of that "
                                 f"name that is not this point's value {label!r}")
            result = result.drop_vars(name)
    return result


def _nan_like(template: xr.Dataset) -> xr.Dataset:
    """A Dataset shaped like ``template``, every variable missing."""
    missing = {}
    for name, variable in template.data_vars.items():
        if variable.dtype.kind in "fc":
            missing[name] = xr.full_like(variable, np.nan)
        elif variable.dtype.kind in "iubmM":
            missing[name] = xr.full_like(variable, np.nan, dtype=float)
        else:
            missing[name] = xr.full_like(variable, None, dtype=object)
    return template.assign(missing)


def _without_broadcast(stacked: xr.Dataset, datasets: list, point: str) -> xr.Dataset:
    """``stacked`` with a variable missing (NaN) at the points where it lacks a dimension.

    :func:`xarray.concat` repeats a variable of a point along a dimension that the same
    variable has only at other points (a scalar where others return one value per rank);
    such a point has no value there.
    """
    for name in list(stacked.data_vars):
        full = set(stacked[name].dims) - {point}
        lacking = [index for index, ds in enumerate(datasets)
                   if name in ds.data_vars and not full <= set(ds[name].dims)]
        if not lacking:
            continue
        variable = stacked[name]
        if variable.dtype.kind in "fc":
            missing = np.nan
        elif variable.dtype.kind in "iubmM":
            variable, missing = variable.astype(float), np.nan
        else:
            variable, missing = variable.astype(object), None
        values = variable.values.copy()
        values[(slice(None),) * variable.get_axis_num(point) + (lacking,)] = missing
        stacked[name] = variable.copy(data=values)
    return stacked


def _stack(datasets: list, coords: dict) -> xr.Dataset:
    """The points' Datasets (in grid order) as one, with a dimension per swept parameter.

    One :func:`xarray.concat` along a point dimension (variables that differ between points,
    aligned on the union of their coordinates), which is then cut into the grid's
    dimensions: every data variable gets all of them, first; a coordinate only if it differs
    between points.
    """
    names = list(coords)
    shape = tuple(len(labels) for labels in coords.values())
    point = "_sweep_point"
    while any(point in ds.dims or point in ds.variables for ds in datasets):
        point += "_"
    stacked = xr.concat(datasets, dim=point, data_vars="all", coords="different",
                        compat="equals", join="outer", combine_attrs="drop_conflicts")
    stacked = _without_broadcast(stacked, datasets, point)

    def grid_shaped(variable):
        if point not in variable.dims:
            return variable
        rest = tuple(dim for dim in variable.dims if dim != point)
        values = variable.transpose(point, *rest).values
        return xr.Variable((*names, *rest), values.reshape(shape + values.shape[1:]),
                           variable.attrs, variable.encoding)

    grid_coords = {name: (name, labels) for name, labels in coords.items()}
    grid_coords.update({name: grid_shaped(stacked[name].variable) for name in stacked.coords})
    return xr.Dataset({name: grid_shaped(variable.variable)
                       for name, variable in stacked.data_vars.items()},
                      coords=grid_coords, attrs=stacked.attrs)


def _describe(point: dict) -> str:
    """A point as ``name=label, ...`` (labels, since a value's repr may be a whole trace)."""
    return ", ".join(f"{name}={value!r}" if isinstance(value, str) else f"{name}={value}"
                     for name, value in point.items())


def _progress_bar(total: int, enabled: bool):
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


def _run_serial(func, fixed, points, seeds, bar):
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
    """The value itself (a task whose result is the fixed arguments, see :func:`_run_dask`)."""
    return value


#: how long a Dask sweep waits with no worker in the cluster, once it has seen one, before
#: it gives up on the points left (workers removed on purpose, a batch system's time limit) [s]
NO_WORKER_TIMEOUT = 300.0
#: how long a Dask sweep waits for a new worker when every worker has died under its points
#: (a nanny restarts one in 1-25 s on a loaded machine) before it stops with
#: :class:`SweepWorkerError` [s]
RESTART_TIMEOUT = 60.0
#: how many Dask workers may die under the points of one sweep before it stops with
#: :class:`SweepWorkerError` (one point that kills its worker costs 3-6: in its task, alone
#: among the others, alone on the cluster) [-]
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


class _Stopped(Exception):
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
    after having had one, and :class:`_Stopped` when more than :data:`WORKER_DEATH_LIMIT`
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
            raise _Stopped(f"{deaths.count} Dask workers died while evaluating its points "
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
            raise _Stopped(f"every Dask worker died ({_count(deaths.count, 'death')}) and "
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


def _run_dask(client, func, fixed, points, seeds, bar, points_per_task=None):
    """Evaluate the points on a Dask cluster; a point that kills its worker fails alone.

    The points go out in batches (:func:`_batches`). A batch whose task raises — its
    worker died (a segfault, the out-of-memory killer, ``os._exit`` in one point) or its
    result could not be sent back — is split: each of its points is run again as its own
    task, at most one per worker thread at a time; a point whose task fails then is run
    once more with nothing else on the cluster, so that only the point that kills a
    worker is reported (healthy points that shared a worker with it are not). Raises
    :class:`_Stopped` (with the outcomes so far) when workers die too often or none is left.
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
        except _Stopped as stopped:
            stopped.outcomes, stopped.blamed = outcomes, deaths.points
            raise
        for batch, error in failed:
            for index in batch:
                outcomes[index] = _Outcome(error=_task_error(error))
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


def _count(number: int, noun: str) -> str:
    """``number`` and ``noun``, plural unless 1: "1 death", "3 deaths"."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _stopped_error(stopped: _Stopped, point_labels: list, partial) -> SweepWorkerError:
    """The error of a sweep that stopped because workers died under its points.

    Names the points that were on a worker when it died (running, or queued behind the
    running one) and were not computed since.
    """
    outcomes = stopped.outcomes
    done = sum(outcome is not None and outcome.error is None for outcome in outcomes)
    blamed = sorted(((index, deaths) for index, deaths in stopped.blamed.items()
                     if outcomes[index] is None or outcomes[index].error is not None),
                    key=lambda item: (-item[1], item[0]))
    shown = "; ".join(f"{_describe(point_labels[index])} ({_count(deaths, 'death')})"
                      for index, deaths in blamed[:10])
    if len(blamed) > 10:
        shown += f"; and {len(blamed) - 10} more"
    computed = (f"{done} of {len(point_labels)} points were computed (in this error's "
                f".partial, the others NaN)" if done else
                f"none of the {len(point_labels)} points was computed")
    return SweepWorkerError(
        f"the Dask sweep stopped: {stopped}. Points on the workers when they died, not "
        f"computed since: {shown or 'none known (the scheduler did not say)'}. {computed}. "
        f"{_KILLED_ADVICE}.", partial)


def _client_for(client):
    """(client, cleanup) for ``client=``: a Client, "local", or a scheduler address."""
    if client is None:
        return None, lambda: None
    if isinstance(client, str):
        from distributed import Client

        if client == "local":
            cluster = local_cluster()
            own = Client(cluster)

            def close():
                own.close()
                cluster.close()

            return own, close
        own = Client(client)
        return own, own.close
    if not (hasattr(client, "submit") and hasattr(client, "scatter")):
        raise TypeError(f"client must be None, 'local', a scheduler address or a "
                        f"dask.distributed Client, got {type(client).__name__}")
    return client, lambda: None


def local_cluster(n_workers: int | None = None, **kwargs):
    """Start a Dask ``LocalCluster`` fit for sweeps: one single-threaded process per core.

    Each worker is its own process with one thread, and numba, OpenMP and BLAS are told to
    use one thread there, so ``n_workers`` points run at once on ``n_workers`` cores without
    oversubscription.

    Parameters
    ----------
    n_workers : int, optional
        Number of worker processes; default the number of cores. [-]
    **kwargs
        Passed on to :class:`distributed.LocalCluster` (e.g. ``dashboard_address=None``).

    Returns
    -------
    distributed.LocalCluster
        Use it as ``Client(cluster)``; close both when done (or use ``with``).
    """
    import os

    import dask
    from distributed import LocalCluster

    if n_workers is None:
        n_workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
            os.cpu_count() or 1)
    n_workers = check_integer("n_workers", n_workers, 1)
    options = {"threads_per_worker": 1, "processes": True, "dashboard_address": None,
               **kwargs}
    # numba reads NUMBA_NUM_THREADS when imported, which a spawned worker may do before the
    # Nanny's env= applies; Dask's pre-spawn environment reaches it in time but is written
    # into this process's os.environ, so the previous values are put back afterwards
    environ = {**dask.config.get("distributed.nanny.pre-spawn-environ", {}), **_ONE_THREAD}
    saved = {name: os.environ.get(name) for name in environ}
    try:
        with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}):
            return LocalCluster(n_workers=n_workers, **options)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def sweep(func: Callable[..., xr.Dataset], grid: Mapping[str, Sequence], /, client=None,
          rng=None, progress: bool | None = None, labels: Mapping | None = None,
          points_per_task: int | None = None, fixed: Mapping | None = None,
          **keywords) -> xr.Dataset:
    """Evaluate ``func`` on every point of a grid; one Dataset with a dimension per parameter.

    Parameters
    ----------
    func : callable
        A function returning an :class:`xarray.Dataset`, such as :func:`jitterlab.max_of_n`,
        :func:`jitterlab.theorem1_bounds`, :func:`jitterlab.simulate` or
        :func:`jitterlab.apps.wavefront_simulate`. On Dask it must be picklable (a module's
        function, or one defined in a notebook).
    grid : dict of str to list
        Parameter name -> its values; the points are the Cartesian product, in the order of
        the keys (the first key varies slowest). Each name is passed to ``func`` as a
        keyword argument.
    client : None, "local", str or distributed.Client, optional
        None: run the points one after the other in this process. A ``dask.distributed``
        Client: submit one task per point to its cluster. "local": start a
        :func:`local_cluster` for this call and close it after. Any other string: the
        address of a running Dask scheduler.
    rng : int, numpy.random.SeedSequence or numpy.random.Generator, optional
        The sweep's seed. Point i of the grid (in the order above) gets the stream
        ``SeedSequence(seed).spawn(n_points)[i]`` as an integer seed (see
        :func:`point_seeds`), passed as ``rng=`` if ``func`` has a parameter ``rng`` or
        ``**kwargs``; the seeds are recorded in the coordinate ``point_seed``. None draws
        a fresh seed and records it in the attribute ``sweep_seed``. Reordering or
        extending the grid changes the index of points, hence their streams.
    progress : bool, optional
        Show a tqdm progress bar over the points (a widget in a notebook, text in a
        terminal); default (None) True.
    labels : dict of str to list or callable, optional
        Coordinate values for a parameter whose values are not numbers or strings (noise
        laws, barriers, traces): a list with one number or string per grid value, or a
        function of the value. Without it such a parameter is labelled by the ``repr`` of
        each value (strings stay as they are); numbers, strings and booleans are their own
        labels. Labels of one parameter must differ.
    points_per_task : int, optional
        On Dask, how many points of the grid one task evaluates. Each task costs a few
        milliseconds of scheduling and transfer: for functions that take about as long, a
        few dozen points per task amortise it; the result does not depend on it. Default:
        tasks that shrink as the sweep proceeds (guided self-scheduling: each takes the
        remaining points / twice the number of worker threads), so that the last tasks are
        single points and no worker waits for another at the end. Either way the points are
        handed out in a fixed shuffled order, so that each task gets a like mix of cheap and
        costly points. [-]
    fixed : dict of str, optional
        Keyword arguments passed unchanged to ``func`` at every point, by name: the way to
        give ``func`` an argument named like one of ``sweep``'s own (``client``, ``rng``,
        ``progress``, ``labels``, ``points_per_task``, ``fixed``), e.g.
        ``fixed={"progress": "on_arrival"}`` for :func:`jitterlab.apps.wavefront_simulate`.
        ``"rng"`` here gives every point the same seed (then ``sweep`` passes none).
    **keywords
        Further keyword arguments passed unchanged to ``func`` at every point, like
        ``fixed`` (on Dask both are sent to the cluster once). ``func`` and ``grid`` are
        positional only, so ``func`` may have arguments of those names.

    Returns
    -------
    xarray.Dataset
        ``func``'s variables with the swept dimensions first, in the grid's order and with
        the grid's values (or labels) as coordinates; points whose results have different
        coordinates (16 ranks here, 64 there) are aligned on their union, NaN where a point
        has no value. Attributes that agree wherever present are kept, others dropped;
        added are ``sweep_function``, ``sweep_points``, ``sweep_seed`` (when seeds are
        passed; a decimal string) and, if points failed, ``sweep_failed`` (one string per
        failed point: its parameters and exception).

    Raises
    ------
    TypeError
        ``func`` is not callable, cannot take the grid's or fixed arguments, or returns
        something else than a Dataset at every point; ``grid`` is not a dict of lists; one
        of ``sweep``'s own options is of the wrong kind (``progress="on_arrival"``: the
        message says when ``func`` takes an argument of that name, to be given with
        ``fixed=``).
    ValueError
        The grid or one of its value lists is empty, a name is both swept and fixed, labels
        of a parameter repeat, a swept name is already a variable or a longer dimension of
        the result at every point, ``points_per_task`` is below 1, every point failed, or
        the call is ambiguous: ``func`` has an argument named like an option of ``sweep``
        that the call gives (``sweep(wavefront_simulate, grid, progress=False)``) and
        ``func``'s own is not given by ``fixed=`` or :func:`functools.partial`.
    SweepWorkerError
        On Dask, more than :data:`WORKER_DEATH_LIMIT` workers died under the sweep's points,
        or every worker died and none was started again within :data:`RESTART_TIMEOUT`:
        the message names the points that were being evaluated on the workers that died and
        what to do (fewer workers, more memory per worker, smaller points or tasks); the
        points computed until then are in its ``partial``.

    Warns
    -----
    SweepWarning
        Some points raised an exception, returned something else than a Dataset, or (on
        Dask) killed their worker; they are listed with their parameters and left NaN
        (integer variables become float). On Dask, a task whose worker died is taken back
        at once (not left to the scheduler's ``allowed-failures`` retries), split, and its
        points run again one per task, so that only the point that kills a worker fails.
    Warnings raised by ``func``
        Re-emitted once per distinct message, with the number of points that raised it.

    Notes
    -----
    The result of a point depends only on its arguments and its seed, so any evaluation
    order and any number of workers give the same Dataset, bit for bit. Warnings are caught
    per call with :func:`warnings.catch_warnings`, which is not thread-safe: run Dask
    workers with one thread each (as :func:`local_cluster` does).

    Examples
    --------
    >>> import jitterlab as jl
    >>> laws = [jl.noise.Exponential(mean=1e-5), jl.noise.Exponential(mean=2e-5)]
    >>> ds = jl.sweep(jl.max_of_n, {"dist_or_list": laws, "n": [1, 1000]},
    ...               labels={"dist_or_list": lambda law: law.mean()}, progress=False)
    >>> dict(ds["mean"].sizes)
    {'dist_or_list': 2, 'n': 2}
    >>> (ds["mean"].sel(dist_or_list=1e-5).values * 1e6).round(3).tolist()  # 10 µs · H_N
    [10.0, 74.855]
    """
    if not callable(func):
        raise TypeError(f"func must be a function returning an xarray.Dataset, "
                        f"got {type(func).__name__}")
    grid = _check_grid(grid)
    options = {"client": client, "progress": progress, "labels": labels,
               "points_per_task": points_per_task, "fixed": fixed}
    fixed = _fixed_arguments(func, options, keywords)
    _check_options(func, options, fixed)
    progress = True if progress is None else bool(progress)
    if points_per_task is not None:
        points_per_task = check_integer("points_per_task", points_per_task, 1)
    both = sorted(set(grid) & set(fixed))
    if both:
        raise ValueError(f"{', '.join(both)} both swept and fixed: give each argument once")
    if "rng" in grid and rng is not None:
        raise ValueError("rng is swept in the grid; do not also give sweep(rng=...)")
    if "rng" in fixed and rng is not None:
        raise ValueError("rng is given both as the sweep's seed (rng=) and as a fixed "
                         "argument (fixed={'rng': ...}); give one")
    if rng is not None:
        _check_rng(rng)
    labels = dict(labels or {})
    unknown = sorted(set(labels) - set(grid))
    if unknown:
        raise ValueError(f"labels for parameters not in the grid: {', '.join(unknown)}")
    pass_rng = _check_signature(func, list(grid), fixed,
                                pass_rng="rng" not in grid and "rng" not in fixed)

    coords, rules = {}, {}
    for name, values in grid.items():
        coords[name], rules[name] = _labels_for(name, values, labels.get(name))
        if len(set(coords[name])) != len(coords[name]):
            raise ValueError(f"the labels of {name!r} repeat ({coords[name]!r}); give "
                             f"distinct values or labels={{{name!r}: [...]}}")
    names = list(grid)
    shape = tuple(len(values) for values in grid.values())
    combos = list(itertools.product(*(range(size) for size in shape)))
    points = [{name: grid[name][i] for name, i in zip(names, combo, strict=True)}
              for combo in combos]
    point_labels = [{name: coords[name][i] for name, i in zip(names, combo, strict=True)}
                    for combo in combos]
    entropy = _entropy(rng) if pass_rng else None
    seeds = point_seeds(entropy, len(points)) if pass_rng else [None] * len(points)

    client, close = _client_for(client)
    bar = _progress_bar(len(points), progress)
    stopped = None
    try:
        if client is None:
            outcomes = _run_serial(func, fixed, points, seeds, bar)
        else:
            outcomes = _run_dask(client, func, fixed, points, seeds, bar, points_per_task)
    except _Stopped as error:
        stopped = error
    finally:
        bar.close()
        close()
    run = (func, point_labels, coords, rules, seeds if pass_rng else None, entropy)
    if stopped is not None:  # workers died: an error, with what was computed
        outcomes = [outcome or _Outcome(error="not evaluated: the sweep stopped")
                    for outcome in stopped.outcomes]
        partial = None
        if any(outcome.error is None for outcome in outcomes):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    partial = _assemble(outcomes, *run)
                except (TypeError, ValueError):  # nothing usable: the error says enough
                    partial = None
        raise _stopped_error(stopped, point_labels, partial) from None
    return _assemble(outcomes, *run)


def _assemble(outcomes, func, point_labels, coords, rules, seeds, entropy) -> xr.Dataset:
    """The sweep's Dataset from the points' outcomes (in grid order); warns of failures.

    ``seeds`` is None when no seeds were passed.
    """
    names = list(coords)
    shape = tuple(len(labels) for labels in coords.values())
    stripped, failed, warned, unusable = [None] * len(point_labels), [], {}, []
    for index, outcome in enumerate(outcomes):
        for category, message in outcome.warnings:
            warned.setdefault((category, message), []).append(index)
        if outcome.error is None:
            try:
                stripped[index] = _without_swept(outcome.result, point_labels[index], func)
            except (TypeError, ValueError) as error:  # this point's result, not the others'
                outcome.error = f"{type(error).__name__}: {error}"
                unusable.append(error)
        if outcome.error is not None:
            failed.append(index)
            logger.info("sweep point %s failed: %s", _describe(point_labels[index]), outcome.error)
    for (category, message), where in warned.items():
        first = _describe(point_labels[where[0]])
        warnings.warn(f"{message} [at {len(where)} of {len(point_labels)} sweep points, first at "
                      f"{first}]", category, stacklevel=3)
    if len(failed) == len(point_labels):
        if len(unusable) == len(point_labels) and len({type(e) for e in unusable}) == 1:
            # the same misuse at every point (func returns no Dataset, a swept name is a
            # variable of the result): that error, as if checked before the run
            raise type(unusable[0])(str(unusable[0]))
        details = "; ".join(f"{_describe(point_labels[i])}: {outcomes[i].error}"
                            for i in failed[:5])
        raise ValueError(f"all {len(point_labels)} points of the sweep failed ({details})")
    if failed:
        missing = _nan_like(next(ds for ds in stripped if ds is not None))
        for index in failed:
            stripped[index] = missing
        listing = "\n".join(f"  {_describe(point_labels[i])}: {outcomes[i].error}" for i in failed)
        if any("worker process died" in outcomes[i].error for i in failed):
            listing += f"\n{_KILLED_ADVICE}."
        warnings.warn(f"{len(failed)} of {len(point_labels)} sweep points failed and are NaN in "
                      f"the result (attribute sweep_failed):\n{listing}", SweepWarning,
                      stacklevel=3)

    result = _stack(stripped, coords)
    for name in names:
        result[name].attrs["sweep_label"] = {
            None: "grid value", "repr": "repr() of the grid value",
            "labels": "given by labels="}[rules[name]]
    if seeds is not None:
        result = result.assign_coords(point_seed=(names, np.reshape(seeds, shape), {
            "long_name": "seed passed as rng= at this point"}))
    result.attrs.update({"sweep_function": _function_name(func),
                         "sweep_points": math.prod(shape)})
    if seeds is not None:
        result.attrs["sweep_seed"] = str(entropy)
    if failed:
        result.attrs["sweep_failed"] = [f"{_describe(point_labels[i])}: {outcomes[i].error}"
                                        for i in failed]
    return result
