"""Threads per kernel call follow the free CPUs (issue #20: no stalls beside busy processes)."""

from __future__ import annotations

import numba
import numpy as np
import pytest

import jitterlab as jl
from jitterlab import threads


@pytest.fixture
def loadavg(tmp_path, monkeypatch):
    """Point the module at a fake /proc/loadavg whose runnable count the test sets."""
    path = tmp_path / "loadavg"

    def set_running(count: int):
        path.write_text(f"0.50 0.40 0.30 {count}/321 4242\n")

    monkeypatch.setattr(threads, "_LOADAVG", path)
    monkeypatch.setattr(threads, "_running_here", lambda: 1)
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.delenv("JITTERLAB_THREADS", raising=False)
    return set_running


def test_free_cpus_subtracts_the_other_runnable_tasks(loadavg):
    loadavg(1)
    assert threads.free_cpus() == 2
    loadavg(2)
    assert threads.free_cpus() == 1
    loadavg(5)
    assert threads.free_cpus() == 0


def test_free_cpus_is_none_without_proc(tmp_path, monkeypatch):
    monkeypatch.setattr(threads, "_LOADAVG", tmp_path / "absent")
    assert threads.free_cpus() is None


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two numba threads")
@pytest.mark.parametrize("running, size, expected", [
    (1, None, 2),       # idle machine: every CPU
    (2, None, 1),       # one busy process beside: the CPU left
    (3, None, 1),       # two busy processes: one thread, never none
    (1, 10, 1),         # too small to gain from a second thread
    (1, 10_000, 2),
])
def test_a_call_takes_the_free_cpus_and_gives_the_setting_back(loadavg, running, size, expected):
    loadavg(running)
    numba.set_num_threads(2)
    with threads.kernel_threads(size, minimum=256):
        assert numba.get_num_threads() == expected
    assert numba.get_num_threads() == 2


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two numba threads")
def test_the_users_cap_and_the_opt_out_are_kept(loadavg, monkeypatch):
    loadavg(1)
    numba.set_num_threads(1)
    try:
        with threads.kernel_threads(10_000, minimum=256):
            assert numba.get_num_threads() == 1  # the user's cap
    finally:
        numba.set_num_threads(2)
    loadavg(4)
    monkeypatch.setenv("JITTERLAB_THREADS", "all")
    with threads.kernel_threads(10_000, minimum=256):
        assert numba.get_num_threads() == 2


def test_the_setting_comes_back_after_an_error(loadavg):
    loadavg(3)
    before = numba.get_num_threads()
    with pytest.raises(RuntimeError):
        with threads.kernel_threads():
            raise RuntimeError("inside")
    assert numba.get_num_threads() == before


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two numba threads")
@pytest.mark.parametrize("barrier", [None, jl.TreeBarrier(send=1e-6, recv=1e-6, latency=5e-6)])
def test_results_do_not_depend_on_how_many_cpus_are_free(loadavg, barrier):
    trace = jl.synthetic_trace(duration=2.0, rng=7)
    runs = []
    for running in (1, 3):  # two threads, then one
        loadavg(running)
        result = jl.simulate(trace, n=[300, 2000], work=1e-3, phases=5, barrier=barrier, rng=3)
        runs.append(result.phase_time.values)
    np.testing.assert_array_equal(runs[0], runs[1])


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two numba threads")
def test_an_inner_call_keeps_the_outer_decision(loadavg):
    loadavg(1)
    numba.set_num_threads(2)
    with threads.kernel_threads():
        loadavg(3)  # the machine got busy: the inner kernels do not count again
        with threads.kernel_threads(10_000, minimum=256):
            assert numba.get_num_threads() == 2
        with threads.kernel_threads(10, minimum=256):
            assert numba.get_num_threads() == 1
        assert numba.get_num_threads() == 2
    with threads.kernel_threads():
        assert numba.get_num_threads() == 1


def test_map_on_threads_keeps_the_order_and_runs_each_item_on_one_thread():
    seen = []

    def work(item):
        seen.append((item, numba.get_num_threads()))
        return item * item

    assert threads.map_on_threads(work, [5, 3, 1, 4], 2) == [25, 9, 1, 16]
    assert sorted(item for item, _ in seen) == [1, 3, 4, 5]
    assert {count for _, count in seen} == {1}


def test_map_on_threads_hands_an_error_to_the_caller_and_gives_the_setting_back():
    before = numba.get_num_threads()

    def work(item):
        if item == 2:
            raise ValueError("item 2")
        return item

    with pytest.raises(ValueError, match="item 2"):
        threads.map_on_threads(work, [1, 2, 3], 2)
    assert numba.get_num_threads() == before


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two numba threads")
@pytest.mark.parametrize("barrier", [None, jl.TreeBarrier(send=1e-6, recv=1e-6, latency=5e-6)])
def test_runs_at_several_n_spread_over_threads_give_the_same_phase_times(monkeypatch, barrier):
    from jitterlab.sim import simulate as simulate_module

    trace = jl.synthetic_trace(duration=2.0, rng=7)
    n = 2 ** np.arange(0, 11)  # the largest is half the task-phases: spread over the threads
    spreads = []
    original = simulate_module._spread
    monkeypatch.setattr(simulate_module, "_spread",
                        lambda *args: spreads.append(original(*args)) or spreads[-1])
    spread = jl.simulate(trace, n=n, work=1e-3, phases=20, barrier=barrier, rng=5)
    assert spreads[0] is not None
    monkeypatch.setattr(simulate_module, "_spread", lambda *args: None)
    in_turn = jl.simulate(trace, n=n, work=1e-3, phases=20, barrier=barrier, rng=5)
    np.testing.assert_array_equal(spread.phase_time.values, in_turn.phase_time.values)
    np.testing.assert_array_equal(spread.slowdown.values, in_turn.slowdown.values)
