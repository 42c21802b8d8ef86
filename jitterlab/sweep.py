"""Parameter sweeps: one function on every point of a grid, serially or on Dask.

A study is a grid (N × work × noise law × barrier × start mode × ...). :func:`sweep` calls a
jitterlab function that returns an :class:`xarray.Dataset` once per point of the grid and
stacks the results into one Dataset with a dimension per swept parameter. Each point draws its
random numbers from its own stream, derived from one seed and the point's place in the grid, so
the result is the same serially, on two Dask workers or on two hundred, whatever the order in
which the points finish. See ``docs/sweep.md``.
"""

from __future__ import annotations

import itertools
import logging
import math
import warnings
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import xarray as xr

from .base.checks import check_integer
from .sweep_arguments import (
    check_grid,
    check_options,
    check_rng,
    check_signature,
    fixed_arguments,
    function_name,
    labels_for,
    seed_entropy,
)
from .sweep_tasks import (  # noqa: F401 (the limits: read as jitterlab.sweep.<name>, docs/sweep.md)
    NO_WORKER_TIMEOUT,
    RESTART_TIMEOUT,
    WORKER_DEATH_LIMIT,
    Outcome,
    Stopped,
    count,
    progress_bar,
    run_dask,
    run_serial,
)

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
                        f"{function_name(func)} returned {type(result).__name__}")
    for name, label in point_labels.items():
        if name in result.data_vars:
            raise ValueError(f"cannot sweep {name!r}: {function_name(func)} returns a "
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


def _stopped_error(stopped: Stopped, point_labels: list, partial) -> SweepWorkerError:
    """The error of a sweep that stopped because workers died under its points.

    Names the points that were on a worker when it died (running, or queued behind the
    running one) and were not computed since.
    """
    outcomes = stopped.outcomes
    done = sum(outcome is not None and outcome.error is None for outcome in outcomes)
    blamed = sorted(((index, deaths) for index, deaths in stopped.blamed.items()
                     if outcomes[index] is None or outcomes[index].error is not None),
                    key=lambda item: (-item[1], item[0]))
    shown = "; ".join(f"{_describe(point_labels[index])} ({count(deaths, 'death')})"
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

    from distributed import LocalCluster

    if n_workers is None:
        n_workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
            os.cpu_count() or 1)
    n_workers = check_integer("n_workers", n_workers, 1)
    options = {"threads_per_worker": 1, "processes": True, "dashboard_address": None,
               **kwargs}
    # the one-thread variables go in the Nanny's env=, which each worker process applies
    # to itself when it starts, before it takes a task (and so before jitterlab imports
    # numba there). Not Dask's pre-spawn environment: the Nanny writes that into THIS
    # process's os.environ at every worker (re)start, after which numba refuses to compile
    # here ("Cannot set NUMBA_NUM_THREADS to a different value once the threads have been
    # launched"), e.g. after a sweep whose point killed a worker
    if options["processes"]:  # (worker threads in this process have no environment)
        options["env"] = {**_ONE_THREAD, **options.get("env", {})}
    return LocalCluster(n_workers=n_workers, **options)


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
    grid = check_grid(grid)
    options = {"client": client, "progress": progress, "labels": labels,
               "points_per_task": points_per_task, "fixed": fixed}
    fixed = fixed_arguments(func, options, keywords)
    check_options(func, options, fixed)
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
        check_rng(rng)
    labels = dict(labels or {})
    unknown = sorted(set(labels) - set(grid))
    if unknown:
        raise ValueError(f"labels for parameters not in the grid: {', '.join(unknown)}")
    pass_rng = check_signature(func, list(grid), fixed,
                                pass_rng="rng" not in grid and "rng" not in fixed)

    coords, rules = {}, {}
    for name, values in grid.items():
        coords[name], rules[name] = labels_for(name, values, labels.get(name))
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
    entropy = seed_entropy(rng) if pass_rng else None
    seeds = point_seeds(entropy, len(points)) if pass_rng else [None] * len(points)

    client, close = _client_for(client)
    bar = progress_bar(len(points), progress)
    stopped = None
    try:
        if client is None:
            outcomes = run_serial(func, fixed, points, seeds, bar)
        else:
            outcomes = run_dask(client, func, fixed, points, seeds, bar, points_per_task)
    except Stopped as error:
        stopped = error
    finally:
        bar.close()
        close()
    run = (func, point_labels, coords, rules, seeds if pass_rng else None, entropy)
    if stopped is not None:  # workers died: an error, with what was computed
        outcomes = [outcome or Outcome(error="not evaluated: the sweep stopped")
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
    result.attrs.update({"sweep_function": function_name(func),
                         "sweep_points": math.prod(shape)})
    if seeds is not None:
        result.attrs["sweep_seed"] = str(entropy)
    if failed:
        result.attrs["sweep_failed"] = [f"{_describe(point_labels[i])}: {outcomes[i].error}"
                                        for i in failed]
    return result
