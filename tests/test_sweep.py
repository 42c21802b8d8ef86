"""jl.sweep: serial and on a real two-process LocalCluster, bit for bit; seeds, labels, failures.

The cluster is started once for the module (about two seconds). Every point is a small
jitterlab call, so the whole module runs in well under half a minute.
"""

import functools
import importlib
import os
import warnings

import numba
import numpy as np
import pytest
import xarray as xr

# the points that kill their worker: a module of their own, which a restarted worker imports
# in 0.8 CPU-s instead of this one's 2.5 (sweep_points.py)
from sweep_points import exits_always, exits_at_three

import jitterlab as jl
from jitterlab import sweep_tasks  # the points' evaluation (serial and Dask)
from jitterlab.sweep import SweepWarning, local_cluster, point_seeds, sweep

TRACE = jl.synthetic_trace(2.0, rng=11)
BARRIERS = [None, jl.TreeBarrier(fanout=2, send=1e-6, recv=1e-6, latency=2e-6)]
SIMULATE_GRID = {"n": [64, 512], "work": [1e-4, 1e-3], "barrier": BARRIERS}
LAW = jl.noise.Exponential(mean=1e-5)
sweep_module = importlib.import_module("jitterlab.sweep")  # jl.sweep is the function


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    before = os.environ.get("NUMBA_NUM_THREADS")
    with warnings.catch_warnings():
        # starting a cluster may warn about ports or resources, which is not under test
        warnings.simplefilter("ignore")
        cluster = local_cluster(n_workers=2)
        dask_client = distributed.Client(cluster)
    workers = dask_client.scheduler_info()["workers"].values()
    assert len(workers) == 2 and all(w["nthreads"] == 1 for w in workers)
    # one numba thread in each worker process, and this process's environment left alone
    assert set(dask_client.run(numba.get_num_threads).values()) == {1}
    assert os.environ.get("NUMBA_NUM_THREADS") == before
    yield dask_client
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dask_client.close()
        cluster.close()


def simulate_sweep(**kwargs):
    return sweep(jl.simulate, SIMULATE_GRID, rng=2024, progress=False, trace=TRACE, phases=3,
                 **kwargs)


@pytest.fixture(scope="module")
def serial():
    """The serial simulate sweep, computed once for the module."""
    return simulate_sweep()


def constant(n, work):
    """A deterministic function without rng: its value is known at every point."""
    return xr.Dataset({"total": ((), n * work), "n_as_int": ((), np.int64(n))})


def warns_for_large_n(n):
    if n > 10:
        warnings.warn(f"n is large ({n})", RuntimeWarning, stacklevel=2)
    return xr.Dataset({"n_squared": ((), float(n * n))})


def fails_on_odd(k, work):
    if k % 2:
        raise ValueError(f"odd k={k}")
    return xr.Dataset({"value": ((), k * work), "count": ((), np.int64(k))})


# --------------------------------------------------------------------------- serial vs Dask


def test_two_workers_give_the_serial_dataset_bit_for_bit(client, serial):
    distributed = simulate_sweep(client=client)
    xr.testing.assert_identical(serial, distributed)
    for name in serial.data_vars:  # identical compares with ==; check the bits too
        assert serial[name].values.tobytes() == distributed[name].values.tobytes()
    assert dict(serial["slowdown"].sizes) == {"n": 2, "work": 2, "barrier": 2}
    assert np.isfinite(serial["slowdown"]).all()


@pytest.mark.parametrize(("n_points", "points_per_task", "threads"),
                         [(64, 4, 2), (64, 5, 2), (7, 3, 1), (5, 50, 2), (1, 1, 1), (10, 1, 4),
                          (64, None, 2), (1000, None, 8), (3, None, 2), (1, None, 1)])
def test_each_task_takes_a_share_of_the_shuffled_grid(n_points, points_per_task, threads):
    batches = sweep_tasks._batches(n_points, points_per_task, threads)
    handed = np.concatenate(batches)
    assert sorted(handed.tolist()) == list(range(n_points))  # every point once
    sizes = [len(batch) for batch in batches]
    if points_per_task is not None:
        assert sizes[:-1] == [points_per_task] * (len(sizes) - 1)
        assert 1 <= sizes[-1] <= points_per_task
    else:  # guided: shrinking tasks, ending with single points for every thread
        assert sizes == sorted(sizes, reverse=True)
        assert sizes[0] == -(-n_points // (2 * threads))
        assert sizes[-min(threads, n_points):] == [1] * min(threads, n_points)
        assert len(sizes) <= 2 * threads * (1 + np.log(n_points)) + threads
    if n_points == 64:  # not in grid order: the costly corner of a grid is spread out
        assert not np.array_equal(handed, np.arange(n_points))
        first_half = handed[:32]
        assert 8 < np.count_nonzero(first_half >= 32) < 24
    # the same order every time
    again = sweep_tasks._batches(n_points, points_per_task, threads)
    assert all(np.array_equal(a, b) for a, b in zip(batches, again, strict=True))


@pytest.mark.parametrize("points_per_task", [3, 8, 50])
def test_several_points_per_task_give_the_same_dataset(client, serial, points_per_task):
    xr.testing.assert_identical(serial, simulate_sweep(client=client,
                                                       points_per_task=points_per_task))


def test_montecarlo_max_of_n_on_two_workers_is_the_serial_one(client):
    grid = {"n": [1, 10, 1000], "replicates": [200, 400]}
    kwargs = {"dist_or_list": LAW, "method": "montecarlo", "rng": 7, "progress": False}
    serial = sweep(jl.max_of_n, grid, **kwargs)
    xr.testing.assert_identical(serial, sweep(jl.max_of_n, grid, client=client, **kwargs))
    # different points got different streams: no two Monte Carlo means coincide
    assert np.unique(serial["mean"].values).size == serial["mean"].size


def test_each_point_is_the_direct_call_with_its_recorded_seed(serial):
    result = serial
    for i, n in enumerate(SIMULATE_GRID["n"]):
        for j, work in enumerate(SIMULATE_GRID["work"]):
            for k, barrier in enumerate(BARRIERS):
                seed = int(result["point_seed"][i, j, k])
                direct = jl.simulate(TRACE, n=n, work=work, phases=3, barrier=barrier,
                                     rng=seed)
                at = result.isel(n=i, work=j, barrier=k)
                np.testing.assert_array_equal(at["phase_time"], direct["phase_time"])
                assert float(at["slowdown"]) == float(direct["slowdown"])


def test_point_seeds_come_from_seedsequence_spawn_in_grid_order(serial):
    result = serial
    children = np.random.SeedSequence(2024).spawn(8)
    expected = [int(c.generate_state(1, np.uint64)[0]) & (2**63 - 1) for c in children]
    assert result["point_seed"].values.ravel().tolist() == expected
    assert point_seeds(2024, 8).tolist() == expected
    assert result.attrs["sweep_seed"] == "2024"


@pytest.mark.parametrize("order", [lambda n: reversed(range(n)),
                                   lambda n: np.random.default_rng(5).permutation(n).tolist()])
def test_evaluation_order_does_not_change_the_result(monkeypatch, serial, order):
    monkeypatch.setattr(sweep_tasks, "_serial_order", order)
    xr.testing.assert_identical(serial, simulate_sweep())


def test_the_seed_decides_the_streams():
    a = sweep(jl.max_of_n, {"n": [10, 100]}, rng=1, progress=False, dist_or_list=LAW,
              method="montecarlo", replicates=200)
    b = sweep(jl.max_of_n, {"n": [10, 100]}, rng=2, progress=False, dist_or_list=LAW,
              method="montecarlo", replicates=200)
    assert not np.any(a["mean"].values == b["mean"].values)
    generator = sweep(jl.max_of_n, {"n": [10, 100]}, rng=np.random.default_rng(3),
                      progress=False, dist_or_list=LAW, method="montecarlo", replicates=200)
    seed = int(generator.attrs["sweep_seed"])
    again = sweep(jl.max_of_n, {"n": [10, 100]}, rng=seed, progress=False, dist_or_list=LAW,
                  method="montecarlo", replicates=200)
    xr.testing.assert_identical(generator, again)


def test_rng_is_passed_through_kwargs_and_not_to_functions_without_it():
    bounds = sweep(jl.theorem1_bounds, {"n": [4, 64]}, rng=3, progress=False, dist=LAW,
                   method="montecarlo", replicates=300)
    direct = jl.theorem1_bounds(LAW, n=64, method="montecarlo", replicates=300,
                                rng=int(bounds["point_seed"].sel(n=64)))
    xr.testing.assert_equal(bounds.sel(n=64).drop_vars("point_seed"),
                            direct.sel(n=64))
    plain = sweep(constant, {"n": [1, 2], "work": [0.5, 0.25]}, progress=False)
    assert "point_seed" not in plain.coords and "sweep_seed" not in plain.attrs
    np.testing.assert_array_equal(plain["total"], [[0.5, 0.25], [1.0, 0.5]])
    assert plain["n_as_int"].dtype == np.int64


def test_partial_fixes_arguments_named_like_sweeps_own_and_shapes_are_aligned():
    workloads = [jl.apps.Wavefront(4, 4, blocks=4, work=1e-4),
                 jl.apps.Wavefront(8, 8, blocks=4, work=1e-4)]
    func = functools.partial(jl.apps.wavefront_simulate, progress="in_order")
    result = sweep(func, {"workload": workloads}, labels={"workload": ["4x4", "8x8"]}, rng=9,
                   progress=False, noise=LAW)
    assert result.attrs["sweep_function"] == (
        "functools.partial(jitterlab.apps.wavefront.wavefront_simulate)")
    assert result.sizes["rank"] == 64
    small = result.sel(workload="4x4")
    assert small["finish"].sel(rank=slice(16, None)).isnull().all()
    direct = jl.apps.wavefront_simulate(workloads[0], noise=LAW, progress="in_order",
                                        rng=int(small["point_seed"]))
    np.testing.assert_array_equal(small["finish"].sel(rank=slice(0, 15)), direct["finish"])


def test_client_local_starts_and_closes_its_own_cluster(monkeypatch):
    started = []

    def small_cluster():  # one in-process worker: starts in a fraction of a second
        cluster = local_cluster(n_workers=1, processes=False)
        started.append(cluster)
        return cluster

    monkeypatch.setattr(sweep_module, "local_cluster", small_cluster)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # cluster start-up chatter, not under test
        result = sweep(constant, {"n": [1, 2, 3], "work": [2.0]}, client="local",
                       progress=False)
    np.testing.assert_array_equal(result["total"].values.ravel(), [2.0, 4.0, 6.0])
    assert len(started) == 1 and started[0].status.name == "closed"


# --------------------------------------------------------------------------- failures


def test_failed_points_are_reported_with_their_parameters_and_left_nan():
    grid = {"k": [0, 1, 2, 3], "work": [0.5, 2.0]}
    with pytest.warns(SweepWarning, match="4 of 8 sweep points failed") as record:
        result = sweep(fails_on_odd, grid, progress=False)
    message = str(record[0].message)
    for k in (1, 3):
        for work in (0.5, 2.0):
            assert f"k={k}, work={work}: ValueError: odd k={k}" in message
    assert len(result.attrs["sweep_failed"]) == 4
    assert result.attrs["sweep_failed"][0] == "k=1, work=0.5: ValueError: odd k=1"
    np.testing.assert_array_equal(result["value"].sel(k=[0, 2]), [[0.0, 0.0], [1.0, 4.0]])
    assert result["value"].sel(k=[1, 3]).isnull().all()
    assert result["count"].dtype == float  # an integer variable with gaps becomes float
    np.testing.assert_array_equal(result["count"].sel(work=0.5), [0, np.nan, 2, np.nan])


def test_failures_on_the_cluster_are_the_serial_ones(client):
    grid = {"n": [64, 128], "work": [1e-4, -1.0]}
    kwargs = {"trace": TRACE, "phases": 2, "rng": 1, "progress": False}
    with pytest.warns(SweepWarning, match="work=-1.0: ValueError: work must be finite"):
        serial = sweep(jl.simulate, grid, **kwargs)
    with pytest.warns(SweepWarning, match="work=-1.0: ValueError: work must be finite"):
        distributed = sweep(jl.simulate, grid, client=client, **kwargs)
    xr.testing.assert_identical(serial, distributed)
    with pytest.warns(SweepWarning, match="2 of 4 sweep points failed"):
        batched = sweep(jl.simulate, grid, client=client, points_per_task=3, **kwargs)
    xr.testing.assert_identical(serial, batched)
    assert serial["slowdown"].sel(work=-1.0).isnull().all()
    assert serial["slowdown"].sel(work=1e-4).notnull().all()


def test_failed_points_are_named_by_their_labels():
    grid = {"work": [-1.0, 1e-4], "barrier": BARRIERS}
    with pytest.warns(SweepWarning, match=r"work=-1.0, barrier='tree': ValueError"):
        result = sweep(jl.simulate, grid, labels={"barrier": ["flat", "tree"]}, rng=3,
                       progress=False, trace=TRACE, n=16)
    assert result.attrs["sweep_failed"][0].startswith("work=-1.0, barrier='flat': ValueError")


def test_all_points_failing_is_an_error():
    with pytest.raises(ValueError, match="all 2 points of the sweep failed.*odd k=1"):
        sweep(fails_on_odd, {"k": [1, 3], "work": [1.0]}, progress=False)


def test_warnings_of_the_function_are_reemitted_once_with_a_count():
    with pytest.warns(RuntimeWarning, match=r"n is large \(20\) \[at 1 of 3 sweep points"):
        with pytest.warns(RuntimeWarning, match=r"n is large \(30\) \[at 1 of 3"):
            result = sweep(warns_for_large_n, {"n": [2, 20, 30]}, progress=False)
    np.testing.assert_array_equal(result["n_squared"], [4.0, 400.0, 900.0])


# --------------------------------------------------------------------------- labels


def test_numbers_strings_and_booleans_label_themselves():
    result = sweep(jl.simulate, {"n": [32, 8], "start": ["random", "synchronized"],
                                 "detail": [False]}, rng=0, progress=False, trace=TRACE,
                   work=1e-4)
    assert result["n"].values.tolist() == [32, 8]  # grid order kept, not sorted
    assert result["n"].dtype.kind == "i"
    assert result["start"].values.tolist() == ["random", "synchronized"]
    assert result["detail"].values.tolist() == [False]
    assert result["n"].attrs["sweep_label"] == "grid value"


def test_other_values_are_labelled_by_repr(serial):
    result = serial
    assert result["barrier"].values.tolist() == [repr(b) for b in BARRIERS]
    assert result["barrier"].attrs["sweep_label"] == "repr() of the grid value"


def test_labels_given_as_a_list_or_a_function():
    laws = [jl.noise.Exponential(mean=1e-6), jl.noise.Exponential(mean=1e-5)]
    listed = sweep(jl.max_of_n, {"dist_or_list": laws}, labels={"dist_or_list": ["a", "b"]},
                   progress=False, n=100)
    assert listed["dist_or_list"].values.tolist() == ["a", "b"]
    assert listed["dist_or_list"].attrs["sweep_label"] == "given by labels="
    by_mean = sweep(jl.max_of_n, {"dist_or_list": laws},
                    labels={"dist_or_list": lambda law: law.mean()}, progress=False, n=100)
    assert by_mean["dist_or_list"].values.tolist() == [1e-6, 1e-5]
    # exponential maxima scale with the mean: E[max of 100] = mean · H_100
    ratio = by_mean["mean"].sel(dist_or_list=1e-5) / by_mean["mean"].sel(dist_or_list=1e-6)
    np.testing.assert_allclose(ratio, 10.0, rtol=1e-12)


def test_repeated_labels_are_refused():
    same = [jl.noise.Exponential(mean=1e-6), jl.noise.Exponential(mean=1e-6)]
    with pytest.raises(ValueError, match="labels of 'dist_or_list' repeat"):
        sweep(jl.max_of_n, {"dist_or_list": same}, progress=False, n=10)
    with pytest.raises(ValueError, match="labels of 'n' repeat"):
        sweep(jl.max_of_n, {"n": [10, 10]}, progress=False, dist_or_list=LAW)


@pytest.mark.parametrize(("labels", "error", "match"), [
    ({"n": ["a"]}, ValueError, "1 labels for 2 grid values"),
    ({"n": [1, "b"]}, TypeError, "all numbers or all strings"),
    ({"n": "ab"}, TypeError, "sequence of labels or a function"),
    ({"work": ["a"]}, ValueError, "labels for parameters not in the grid: work"),
])
def test_bad_labels(labels, error, match):
    with pytest.raises(error, match=match):
        sweep(jl.max_of_n, {"n": [1, 2]}, labels=labels, progress=False, dist_or_list=LAW)


# --------------------------------------------------------------------------- bad input


def returns_a_number(n):
    return float(n)


@pytest.mark.parametrize(("func", "grid", "kwargs", "error", "match"), [
    (jl.max_of_n, {}, {}, ValueError, "grid is empty"),
    (jl.max_of_n, {"n": []}, {}, ValueError, r"grid\['n'\] has no values"),
    (jl.max_of_n, [("n", [1])], {}, TypeError, "grid must be a dict"),
    (jl.max_of_n, {"n": 10}, {}, TypeError, r"grid\['n'\] must be a list"),
    (jl.max_of_n, {"method": "exact"}, {}, TypeError, r"grid\['method'\] must be a list"),
    (jl.max_of_n, {1: [1]}, {}, TypeError, "grid keys must be parameter names"),
    ("max_of_n", {"n": [1]}, {}, TypeError, "func must be a function"),
    (returns_a_number, {"n": [1]}, {}, TypeError, "returned float"),
    (jl.max_of_n, {"n": [1]}, {"n": 2}, ValueError, "n both swept and fixed"),
    (jl.max_of_n, {"N": [1]}, {}, TypeError, "cannot take the arguments"),
    (jl.max_of_n, {"n": [1]}, {"rng": "seed"}, TypeError, "rng must be an int seed"),
    (jl.max_of_n, {"n": [1]}, {"rng": -1}, ValueError, "non-negative"),
    (jl.max_of_n, {"rng": [1, 2]}, {"rng": 3}, ValueError, "rng is swept"),
    (jl.max_of_n, {"quantiles": [[0.5], [0.9]]}, {}, ValueError,
     "'quantiles': .* returns a variable of that name"),
    (jl.simulate, {"n": [[4, 8]]}, {"trace": TRACE, "work": 1e-4}, ValueError,
     "already has a dimension 'n'"),
    (jl.max_of_n, {"n": [1]}, {"client": 42}, TypeError, "option 'client' takes None"),
    (jl.max_of_n, {"n": [1]}, {"points_per_task": 0}, ValueError, "points_per_task"),
    (jl.max_of_n, {"n": [1]}, {"points_per_task": "2"}, TypeError, "points_per_task"),
])
def test_bad_input_is_refused_clearly(func, grid, kwargs, error, match):
    kwargs = {"dist_or_list": LAW, **kwargs} if func is jl.max_of_n else kwargs
    with pytest.raises(error, match=match):
        sweep(func, grid, progress=False, **kwargs)


def test_progress_bar_counts_the_points(capsys):
    sweep(constant, {"n": [1, 2, 3], "work": [1.0, 2.0]}, progress=True)
    assert "6/6" in capsys.readouterr().err


# --------------------------------------------------------------------------- sweep's own options


WAVEFRONTS = [jl.apps.Wavefront(4, 4, blocks=4, work=1e-4),
              jl.apps.Wavefront(4, 8, blocks=4, work=1e-4)]
WAVEFRONT_GRID = {"workload": WAVEFRONTS}
WAVEFRONT_LABELS = {"workload": ["4x4", "4x8"]}


def test_a_value_meant_for_the_function_is_not_taken_as_sweeps_option():
    # progress="on_arrival" is wavefront_simulate's mode, not a truthy progress bar flag
    with pytest.raises(TypeError, match=r"progress='on_arrival': sweep's own option "
                       r"'progress' takes True or False.*wavefront_simulate also takes "
                       r"progress=: give the function's with fixed=\{'progress': "
                       r"'on_arrival'\}"):
        sweep(jl.apps.wavefront_simulate, WAVEFRONT_GRID, progress="on_arrival",
              labels=WAVEFRONT_LABELS, rng=9, noise=LAW)


def test_fixed_passes_arguments_named_like_sweeps_own_options():
    result = sweep(jl.apps.wavefront_simulate, WAVEFRONT_GRID, progress=False,
                   labels=WAVEFRONT_LABELS, rng=9, noise=TRACE,
                   fixed={"progress": "on_arrival"})
    for label, workload in zip(WAVEFRONT_LABELS["workload"], WAVEFRONTS, strict=True):
        at = result.sel(workload=label)
        direct = jl.apps.wavefront_simulate(workload, noise=TRACE, progress="on_arrival",
                                            rng=int(at["point_seed"]))
        ranks = direct.sizes["rank"]
        np.testing.assert_array_equal(at["finish"].isel(rank=slice(0, ranks)),
                                      direct["finish"])
    in_order = sweep(jl.apps.wavefront_simulate, WAVEFRONT_GRID, progress=False,
                     labels=WAVEFRONT_LABELS, rng=9, noise=TRACE, fixed={"progress": "in_order"})
    assert not np.array_equal(in_order["finish"].values, result["finish"].values,
                              equal_nan=True)


def test_an_option_both_sweep_and_the_function_take_is_ambiguous_unless_both_are_given():
    with pytest.raises(ValueError, match=r"progress=False\) is ambiguous: .*wavefront_simulate "
                       r"also takes progress="):
        sweep(jl.apps.wavefront_simulate, WAVEFRONT_GRID, progress=False,
              labels=WAVEFRONT_LABELS, rng=9, noise=LAW)
    # with the function's own given, the call is clear (and so is a partial's)
    sweep(jl.apps.wavefront_simulate, WAVEFRONT_GRID, progress=False,
          labels=WAVEFRONT_LABELS, rng=9, noise=LAW, fixed={"progress": "in_order"})


def takes_sweeps_option_names(n, client=None, labels=None, points_per_task=None, fixed=None):
    return xr.Dataset({"value": ((), float(n))})


@pytest.mark.parametrize(("option", "value", "error", "match"), [
    ("client", "on_arrival", TypeError, r"client='on_arrival': sweep's own option 'client' "
     r"takes None, 'local', a scheduler address.*also takes client=: give the function's "
     r"with fixed=\{'client': 'on_arrival'\}"),
    ("labels", "mine", TypeError, r"labels='mine': .*takes a dict.*fixed=\{'labels'"),
    ("points_per_task", "all", TypeError, r"points_per_task='all'.*fixed=\{'points_per_task'"),
    ("fixed", True, TypeError, r"fixed=True: .*takes a dict.*fixed=\{'fixed': True\}"),
    ("labels", {"n": ["a", "b"]}, ValueError, r"labels=.* is ambiguous"),
    ("points_per_task", 2, ValueError, r"points_per_task=2\) is ambiguous"),
])
def test_every_option_of_sweep_is_checked_against_the_functions_arguments(option, value,
                                                                          error, match):
    with pytest.raises(error, match=match):
        sweep(takes_sweeps_option_names, {"n": [1, 2]}, progress=False, **{option: value})


def test_options_of_the_wrong_kind_are_refused_for_any_function():
    # constant takes none of these: the same checks, without the hint
    for option, value in [("client", "on_arrival"), ("progress", "yes"), ("labels", ["a"]),
                          ("fixed", [("work", 1.0)])]:
        with pytest.raises(TypeError, match=f"{option}=.*sweep's own option") as info:
            sweep(constant, {"n": [1, 2]}, **{"progress": False, "work": 1.0, option: value})
        assert "also takes" not in str(info.value)
    # a seed of the wrong kind is refused even when the function draws no random numbers
    with pytest.raises(TypeError, match="rng must be an int seed"):
        sweep(constant, {"n": [1, 2]}, rng="2024", progress=False, work=1.0)


def takes_func_and_grid(n, func, grid):
    return xr.Dataset({"value": ((), n * func * grid)})


def test_func_and_grid_are_positional_so_the_function_may_take_those_names():
    result = sweep(takes_func_and_grid, {"n": [1, 2]}, progress=False, func=3.0, grid=5.0)
    np.testing.assert_array_equal(result["value"], [15.0, 30.0])


def test_fixed_rng_gives_every_point_the_same_seed():
    result = sweep(jl.max_of_n, {"n": [10, 100]}, progress=False, dist_or_list=LAW,
                   method="montecarlo", replicates=100, fixed={"rng": 5})
    assert "point_seed" not in result.coords and result.attrs["seed"] == 5
    direct = jl.max_of_n(LAW, n=100, method="montecarlo", replicates=100, rng=5)
    assert float(result["mean"].sel(n=100)) == float(direct["mean"].sel(n=100))
    with pytest.raises(ValueError, match="rng is given both"):
        sweep(jl.max_of_n, {"n": [10]}, progress=False, dist_or_list=LAW, rng=1,
              fixed={"rng": 5})
    with pytest.raises(ValueError, match="dist_or_list given both in fixed= and as a keyword"):
        sweep(jl.max_of_n, {"n": [10]}, progress=False, dist_or_list=LAW,
              fixed={"dist_or_list": LAW})


# --------------------------------------------------------------------------- shapes, results


def scalar_at_one(k):
    """One value per q for k > 1, a bare scalar (no dimension q) for k = 1."""
    if k == 1:
        return xr.Dataset({"x": ((), 5.0), "count": ((), np.int64(1))})
    return xr.Dataset({"x": (("q",), np.arange(k, dtype=float)),
                       "count": (("q",), np.arange(k))}, coords={"q": np.arange(k)})


def test_a_variable_without_a_dimension_others_have_is_missing_there_not_repeated():
    result = sweep(scalar_at_one, {"k": [1, 2, 3]}, progress=False)
    assert result["x"].sel(k=1).isnull().all()  # not 5.0 repeated along q
    np.testing.assert_array_equal(result["x"].sel(k=2), [0.0, 1.0, np.nan])
    np.testing.assert_array_equal(result["x"].sel(k=3), [0.0, 1.0, 2.0])
    assert result["count"].dtype == float and result["count"].sel(k=1).isnull().all()
    np.testing.assert_array_equal(result["count"].sel(k=3), [0, 1, 2])


def number_at_two(n):
    return float(n) if n == 2 else xr.Dataset({"value": ((), float(n))})


def test_a_point_returning_no_dataset_fails_alone():
    with pytest.warns(SweepWarning, match=r"(?s)1 of 3 sweep points failed.*n=2: TypeError: "
                      r"sweep needs a function returning an xarray.Dataset"):
        result = sweep(number_at_two, {"n": [1, 2, 3]}, progress=False)
    np.testing.assert_array_equal(result["value"], [1.0, np.nan, 3.0])
    assert result.attrs["sweep_failed"][0].startswith("n=2: TypeError")


# --------------------------------------------------------------------------- a point that kills


@pytest.fixture
def fragile_cluster():
    """Two one-thread worker processes with Dask's default allowed-failures (3): the sweep
    must take a task back at the first worker that dies under it, not after four."""
    distributed = pytest.importorskip("distributed")
    import dask

    assert dask.config.get("distributed.scheduler.allowed-failures") == 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = local_cluster(n_workers=2)
        dask_client = distributed.Client(cluster)
    yield cluster, dask_client
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dask_client.close()
        cluster.close()


@pytest.fixture
def fragile_client(fragile_cluster):
    return fragile_cluster[1]


def run_with_timeout(call, seconds):
    """``call()``'s result or exception, failing the test if it takes over ``seconds``."""
    import concurrent.futures

    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        return pool.submit(call).result(timeout=seconds)
    finally:
        pool.shutdown(wait=False)


def worker_deaths(client):
    return sum(message.get("action") == "remove-worker" and not message.get("expected")
               for _, message in client.get_events("all"))


def test_a_point_that_kills_its_worker_fails_alone_and_the_sweep_ends(fragile_client,
                                                                       monkeypatch):
    import concurrent.futures

    threads_before = os.environ.get("NUMBA_NUM_THREADS")
    # the sweep looks at the cluster every 0.2 s, not every second: each round of deaths
    # and restarts waited up to a second more for it (the tests count deaths, not polls)
    monkeypatch.setattr(sweep_tasks, "_POLL_SECONDS", 0.2)
    grid = {"k": list(range(6)), "work": [1.0, 2.0]}
    offset = np.full(4, 0.25)  # fixed data: must survive the death of every worker holding it

    def run():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = sweep(exits_at_three, grid, client=fragile_client, progress=False,
                           points_per_task=4, offset=offset)
        return result, caught

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        # generous for a loaded two-core machine (a worker restart takes up to ~25 s there);
        # without the fix the healthy points that shared a task were lost or the sweep hung
        result, caught = pool.submit(run).result(timeout=400)
    expected = np.outer(np.arange(6.0), [1.0, 2.0]) + 1.0
    expected[3, 1] = np.nan
    np.testing.assert_array_equal(result["value"].values, expected)
    assert [text.split(":")[0] for text in result.attrs["sweep_failed"]] == ["k=3, work=2.0"]
    assert all("worker process died while evaluating this point alone" in text
               for text in result.attrs["sweep_failed"])
    warned = [str(w.message) for w in caught if issubclass(w.category, SweepWarning)]
    assert warned and "fewer workers" in warned[0] and "memory_limit" in warned[0]
    # one death in each of the rounds where the point runs bound to one worker (single,
    # alone), not the four of allowed-failures 3 (the scheduler's cap, which only the first,
    # unbound round can still reach when the sweep sees the deaths late): 12 before
    assert 3 <= worker_deaths(fragile_client) <= 4 + 1 + 1
    # the restarted workers have one numba thread too, and this process's environment was
    # not changed by the restarts (numba here would then refuse to compile anything new)
    fragile_client.wait_for_workers(2, timeout=120)  # the last restarts may still be under way
    assert set(fragile_client.run(numba.get_num_threads).values()) == {1}
    assert os.environ.get("NUMBA_NUM_THREADS") == threads_before


def test_a_sweep_whose_points_all_kill_workers_stops_fast_naming_them(fragile_client,
                                                                      monkeypatch):
    monkeypatch.setattr(sweep_tasks, "WORKER_DEATH_LIMIT", 3)
    monkeypatch.setattr(sweep_tasks, "_POLL_SECONDS", 0.2)  # as in the test above
    grid = {"k": [-2, -1, 0, 1, 2, 3]}  # two healthy points, four killers

    def run():
        with pytest.raises(sweep_module.SweepWorkerError) as caught:
            sweep(exits_always, grid, client=fragile_client, progress=False,
                  points_per_task=1)
        return caught.value

    error = run_with_timeout(run, 300)  # each death costs a worker restart (up to ~25 s)
    text = str(error)
    assert "Dask workers died while evaluating its points (more than " in text
    assert "WORKER_DEATH_LIMIT = 3" in text
    assert any(f"k={k} (" in text for k in range(4))  # the killers, with their deaths
    for advice in ("fewer workers", "memory_limit", "points_per_task=1"):
        assert advice in text
    # stopped soon after the limit (workers may die again before the sweep looks: 8 beside
    # a load of 10), below the 16 deaths that the scheduler's allowed-failures (3) alone
    # costs four killing points before Dask reports a single KilledWorker
    assert worker_deaths(fragile_client) < 16
    if error.partial is not None:  # the healthy points, where they ran before the stop
        values = error.partial["value"].values
        assert np.isnan(values[2:]).all()
        np.testing.assert_array_equal(values[:2][~np.isnan(values[:2])],
                                      np.array([-2.0, -1.0])[~np.isnan(values[:2])])


async def _cannot_start(*args, **kwargs):
    raise RuntimeError("test: this nanny cannot start a worker any more")


def test_a_cluster_left_without_workers_by_deaths_stops_the_sweep_fast(monkeypatch):
    distributed = pytest.importorskip("distributed")
    monkeypatch.setattr(sweep_tasks, "RESTART_TIMEOUT", 2.0)
    monkeypatch.setattr(sweep_tasks, "_POLL_SECONDS", 0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = local_cluster(n_workers=1)
        dask_client = distributed.Client(cluster)
    for nanny in cluster.workers.values():  # as a nanny that gave up restarting its worker
        nanny.instantiate = _cannot_start
    grid = {"k": [-3, -2, -1, 0, 1]}

    def run():
        with pytest.raises(sweep_module.SweepWorkerError) as caught:
            sweep(exits_always, grid, client=dask_client, progress=False, points_per_task=1)
        return caught.value

    try:
        # waited NO_WORKER_TIMEOUT (300 s) before, and then named no point
        error = run_with_timeout(run, 120)
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dask_client.close()
            cluster.close()
    text = str(error)
    assert "every Dask worker died (1 death) and none was started again within" in text
    assert "RESTART_TIMEOUT = 2 s" in text
    assert len([k for k in range(2) if f"k={k} (1 death)" in text]) == 1
    assert "fewer workers" in text


@pytest.mark.parametrize(("n_workers", "error"), [("2", TypeError), (0, ValueError),
                                                  (1.5, ValueError)])
def test_local_cluster_checks_its_number_of_workers(n_workers, error):
    with pytest.raises(error, match="n_workers"):
        local_cluster(n_workers=n_workers)


def sleeps_a_little(k):
    import time

    time.sleep(0.3)
    return xr.Dataset({"value": ((), float(k))})


def test_a_cluster_that_loses_every_worker_ends_the_sweep(monkeypatch):
    import concurrent.futures
    import threading
    import time

    distributed = pytest.importorskip("distributed")
    monkeypatch.setattr(sweep_tasks, "NO_WORKER_TIMEOUT", 1.0)
    monkeypatch.setattr(sweep_tasks, "_POLL_SECONDS", 0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = local_cluster(n_workers=1, processes=False)
        dask_client = distributed.Client(cluster)

    def run():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = sweep(sleeps_a_little, {"k": list(range(30))}, client=dask_client,
                           progress=False, points_per_task=1)
        return result, caught

    def stop_every_worker():  # as a nanny that no longer restarts its dead worker
        time.sleep(1.5)
        cluster.scale(0)

    try:
        threading.Thread(target=stop_every_worker, daemon=True).start()
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            result, caught = pool.submit(run).result(timeout=120)  # hung for ever before
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dask_client.close()
            cluster.close()
    done = result["value"].notnull().values
    assert 0 < done.sum() < 30
    np.testing.assert_array_equal(result["value"].values[done], np.arange(30.0)[done])
    assert all("no Dask worker in the cluster for 1 s" in text
               for text in result.attrs["sweep_failed"])
    assert len(result.attrs["sweep_failed"]) == 30 - done.sum()
    assert any(issubclass(w.category, SweepWarning) for w in caught)
