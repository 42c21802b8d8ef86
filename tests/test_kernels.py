"""Every numba kernel against its plain reference implementation.

* ``jitterlab.noise.kernels`` (max-of-N): references in the same module.
* ``jitterlab.sim.replay_kernels`` (trace-driven simulation): references in
  :mod:`jitterlab.testing` (:func:`~jitterlab.testing.walk`,
  :func:`~jitterlab.testing.simulate_reference`).
* ``jitterlab.measure``: the LCG work kernel against its plain-Python twin. The other
  bench kernels (detour loop, FWQ and PB loops, the TSC read) time the machine itself;
  they have no deterministic twin and are checked by their invariants in test_bench.py
  and test_pb.py.

Traces here hold multiples of 2^-20 s, so every sum the kernels and the references form
is exact in float64 and the two must agree to the last bit, ties included.
"""

import math
from types import SimpleNamespace

import numba
import numpy as np
import pytest
from conftest import load_benchmark

import jitterlab as jl
from jitterlab import testing
from jitterlab.measure.fwq import _lcg_python, lcg_steps
from jitterlab.noise import Empirical
from jitterlab.noise import kernels as _kernels
from jitterlab.noise.trace_law import trace_positions
from jitterlab.sim import replay_kernels as _simkernels

TICK = 2.0**-20  # [s]; sums of a few million ticks are exact in float64
SEEDS = [0, 1, 123, 2**32 + 7, 2**63 - 1]


# --------------------------------------------------------------------------------------
# jitterlab.noise.kernels
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("z", [0, 1, 0x9E3779B97F4A7C15, 2**64 - 1, 2**63])
def test_mix64_matches_reference(z):
    assert int(_kernels._mix64(np.uint64(z))) == _kernels._mix64_reference(z)


@pytest.mark.parametrize("seed", SEEDS)
def test_stream_key_matches_reference(seed):
    for replicate, group, n_groups in [(0, 0, 1), (5, 2, 3), (10**6, 7, 8), (2**40, 0, 2)]:
        kernel = int(_kernels.stream_key(seed, replicate, group, n_groups))
        assert kernel == _kernels.stream_key_reference(seed, replicate, group, n_groups)


@pytest.mark.parametrize("seed", SEEDS)
def test_max_uniform_complement_matches_reference(seed):
    counts = np.array([1, 7, 0, 33], dtype=np.int64)  # a group with no draw gives 1
    np.testing.assert_array_equal(_kernels.max_uniform_complement(seed, counts, 5),
                                  _kernels.max_uniform_complement_reference(seed, counts, 5))


def test_seed_for_n_is_a_63_bit_hash_of_seed_and_n():
    seeds = {_kernels.seed_for_n(s, n) for s in SEEDS for n in (1, 2, 10, 10**9)}
    assert len(seeds) == len(SEEDS) * 4
    assert all(0 <= s < 2**63 for s in seeds)


@pytest.mark.parametrize("power", [1, 2, 3, 17, 1000, 16_384])
@pytest.mark.parametrize("start", [0, 123, 9_998, 9_999])
def test_step_sum_one_minus_power_matches_reference(power, start):
    # 10^4 points: several blocks of the parallel loop; the last starts are empty sums
    law = Empirical(np.random.default_rng(power).gamma(2.0, 1.0, 10_000))
    values, head = law.values, law._head
    kernel = _kernels.step_sum_one_minus_power(values, head, power, start)
    reference = _kernels.step_sum_one_minus_power_reference(values, head, power, start)
    # one thread (no parallel layer, for map_on_threads) and parallel: the same blocks
    assert _kernels.step_sum_one_minus_power_one_thread(values, head, power, start) == \
        _kernels.step_sum_one_minus_power_parallel(values, head, power, start)
    # repeated squaring against pow: squaring doubles a relative error, so F^N carries
    # one of at most (N + 1)·ε and each term 1 − F^N an absolute one of that size
    bound = (power + 1) * np.finfo(float).eps * (values[-1] - values[start])
    assert abs(kernel - reference) <= bound
    if start < values.size - 1:
        assert reference > 0


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two numba threads")
@pytest.mark.parametrize("power", [2, 7, 50, 1000])
def test_step_sum_one_minus_power_is_the_same_on_any_number_of_threads(power):
    # 5·10^4 points: 13 blocks, which two threads share unevenly; the blocks' partial sums
    # are added in block order whatever the threads (max_of_n's N spread over threads and
    # one N alone give the same numbers)
    law = Empirical(np.random.default_rng(3).gamma(2.0, 1.0, 50_000))
    one_thread = _kernels.step_sum_one_minus_power_one_thread(law.values, law._head, power, 0)
    before = numba.get_num_threads()
    try:
        for threads in range(1, before + 1):
            numba.set_num_threads(threads)
            assert _kernels.step_sum_one_minus_power_parallel(law.values, law._head, power,
                                                              0) == one_thread
    finally:
        numba.set_num_threads(before)


# --------------------------------------------------------------------------------------
# jitterlab.measure: the LCG work kernel
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("iterations", "seed"), [(0, 1), (1, 1), (1000, 12345),
                                                  (10_000, 2**31 - 2)])
def test_lcg_kernel_matches_reference(iterations, seed):
    assert int(lcg_steps(np.int64(iterations), np.int64(seed))) == _lcg_python(iterations, seed)


# --------------------------------------------------------------------------------------
# jitterlab.sim.replay_kernels against jitterlab.testing
# --------------------------------------------------------------------------------------
def dyadic_trace(rows, seed):
    """A random trace whose jitter and gap are whole numbers of ticks (some jitter 0)."""
    rng = np.random.default_rng(seed)
    jitter = rng.integers(0, 40, rows) * TICK
    gap = rng.integers(1, 200, rows) * TICK
    return jitter, gap


def table_of(jitter, gap):
    return _simkernels.trace_table(jitter, gap)


@pytest.mark.parametrize("rows", [1, 2, 1000])
def test_trace_table_holds_the_running_sums_of_trace_positions_bit_for_bit(rows):
    rng = np.random.default_rng(rows)
    jitter, gap = rng.pareto(1.5, rows) * 1e-6, rng.exponential(1e-3, rows)  # not dyadic
    table = _simkernels.trace_table(jitter, gap)
    starts, computed = trace_positions(jitter, gap)
    assert table.shape == (rows + 1, 3) and table.flags.c_contiguous
    assert np.array_equal(table[:, _simkernels.START], starts)
    assert np.array_equal(table[:, _simkernels.COMPUTED], computed)
    assert np.array_equal(table[:, _simkernels.JITTER], np.append(jitter, 0.0))


@pytest.mark.parametrize("seed", range(6))
def test_advance_matches_event_walk(seed):
    jitter, gap = dyadic_trace(1 + 7 * seed, seed)
    table = table_of(jitter, gap)
    period = float(jitter.sum() + gap.sum())
    rng = np.random.default_rng(100 + seed)
    starts = np.concatenate([[0.0], np.cumsum(jitter + gap)])[:-1]
    # random instants, row starts and gap starts (ties), several cycles away
    xs = np.concatenate([rng.integers(0, 5 * int(period / TICK), 30) * TICK,
                         starts, starts + jitter, starts + 3 * period])
    cpus = np.concatenate([[0.0], gap, rng.integers(1, 4 * int(period / TICK), 20) * TICK])
    for x in xs:
        for cpu in cpus[rng.permutation(cpus.size)[:8]]:
            finish, row, _ = _simkernels.advance(table, x, cpu, int(rng.integers(0, 5)),
                                                 int(rng.integers(0, 5)))
            assert finish == testing.walk(jitter, gap, x, cpu), (x, cpu)
            offset = x - math.floor(x / period) * period
            assert row == np.searchsorted(starts, offset, "right") - 1


@pytest.mark.parametrize("strict", [False, True])
def test_last_before_matches_searchsorted(strict):
    rng = np.random.default_rng(int(strict))
    column = np.sort(rng.integers(0, 50, 64)).astype(float)
    column[0] = -1.0  # the condition holds at i = 0
    table = np.column_stack([column, column, column])
    for value in np.arange(-0.5, 52.0, 0.5):
        for top in (0, 1, 31, 63):
            expected = np.searchsorted(column[:top + 1], value,
                                       "left" if strict else "right") - 1
            for hint in (-3, 0, 5, 40, 63, 99):
                got = _simkernels._last_before(table, 1, value, hint, top, strict)
                assert got == max(expected, 0), (value, top, hint)
    assert _simkernels._precedes(1.0, 1.0, False) and not _simkernels._precedes(1.0, 1.0, True)


def test_hop_latency_matches_reference():
    for node_size, intra in [(0, 3.0), (4, 3.0), (1, 0.5)]:
        barrier = SimpleNamespace(cores_per_node=node_size or None, latency=7.0,
                                  intra_node_latency=intra)
        for child in range(1, 20):
            parent = (child - 1) // 2
            assert (_simkernels._hop_latency(child, parent, 7.0, intra, node_size)
                    == testing._latency(barrier, child, parent))


def explicit_start(jitter, gap, n, seed):
    """Start rows and the matching offsets (a task at row s starts at gap s)."""
    rows = np.random.default_rng(seed).integers(0, jitter.size, n)
    starts, _ = trace_positions(jitter, gap)
    return rows, starts[rows] + jitter[rows]


@pytest.mark.parametrize(("n", "phases", "seed"), [(1, 3, 0), (5, 4, 1), (40, 3, 2)])
def test_run_without_barrier_matches_reference(n, phases, seed):
    jitter, gap = dyadic_trace(25, seed)
    trace = jl.Trace(jitter, gap)
    rows, offsets = explicit_start(jitter, gap, n, seed)
    work = 300 * TICK
    reference = testing.simulate_reference(trace, n, work, phases, start=rows, detail=True)
    order = np.argsort(offsets, kind="stable")
    compute = np.zeros((phases, n))
    theta = _simkernels.run_without_barrier(table_of(jitter, gap), offsets[order], work,
                                            phases, 3, compute)
    np.testing.assert_array_equal(theta, reference["phase_time"].values)
    np.testing.assert_array_equal(compute, reference["compute_time"].values[:, order])


def tree_bounds(n, fanout):
    """First task of every level of a breadth-first complete tree, then n."""
    bounds, size = [0], 1
    while bounds[-1] + size < n:
        bounds.append(bounds[-1] + size)
        size *= fanout
    return np.array([*bounds, n], dtype=np.int64)


@pytest.mark.parametrize(("n", "fanout", "cores_per_node", "seed"),
                         [(1, 2, None, 0), (7, 2, None, 1), (30, 3, 4, 2), (64, 4, 8, 3)])
def test_run_tree_barrier_matches_reference(n, fanout, cores_per_node, seed):
    jitter, gap = dyadic_trace(25, seed)
    trace = jl.Trace(jitter, gap)
    rows, offsets = explicit_start(jitter, gap, n, seed)
    work, send, recv, latency, intra = 300 * TICK, 3 * TICK, 2 * TICK, 5 * TICK, 1 * TICK
    barrier = jl.TreeBarrier(fanout=fanout, send=send, recv=recv, latency=latency,
                             cores_per_node=cores_per_node,
                             intra_node_latency=intra if cores_per_node else None)
    phases = 3
    reference = testing.simulate_reference(trace, n, work, phases, start=rows,
                                           barrier=barrier, detail=True)
    compute, ends = np.zeros((phases, n)), np.zeros((phases, n))
    phase_end = _simkernels.run_tree_barrier(
        table_of(jitter, gap), offsets, work, phases, fanout, send, recv, latency,
        intra if cores_per_node else latency, cores_per_node or 0, tree_bounds(n, fanout),
        compute, ends, np.zeros((0, 0, 0)), np.zeros(0))
    np.testing.assert_array_equal(np.diff(phase_end, prepend=0.0),
                                  reference["phase_time"].values)
    np.testing.assert_array_equal(compute, reference["compute_time"].values)


# --------------------------------------------------------------------------------------
# run_tree_barrier against the kernel before issue #13 (frozen in the benchmark script)
# --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def old_tree_barrier():
    return load_benchmark("bench_simulate")._old_run_tree_barrier


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("n", "fanout", "cores_per_node", "rows", "start", "seed"),
                         [(1, 2, None, 50, "random", 0), (7, 2, None, 3, "random", 1),
                          (3000, 2, None, 2000, "random", 2), (2500, 3, 4, 500, "random", 3),
                          (1500, 5, 16, 10_000, "random", 4), (1200, 2, None, 700, "same", 5),
                          (1000, 4, None, 300, "later", 6),
                          # cut into subtrees (of at most tree_kernels._PIECE tasks)
                          (20000, 2, None, 5000, "random", 7), (30000, 3, 8, 900, "same", 8)])
def test_run_tree_barrier_matches_the_kernel_before_issue_13(old_tree_barrier, threads, n,
                                                             fanout, cores_per_node, rows,
                                                             start, seed):
    # times in seconds with full float64 rounding (not ticks): any change in the order
    # or kind of arithmetic would show in the last bits; several 256-task blocks per level
    rng = np.random.default_rng(seed)
    jitter = (rng.pareto(1.5, rows) + 1) * 3e-6 * (rng.random(rows) < 0.8)
    gap = rng.exponential(1e-3, rows)
    table = table_of(jitter, gap)
    period = float(table[-1, 0])
    offsets = rng.uniform(0, period, n)
    if start == "same":  # every task at one instant: ties in every receive
        offsets[:] = offsets[0]
    elif start == "later":  # several periods on: the trace wraps
        offsets += 3 * period
    work = float(rng.choice([2e-4, 1e-3, 0.05]))
    costs = (fanout, 1e-6, 2e-6, 5e-6, 1e-6 if cores_per_node else 5e-6, cores_per_node or 0,
             tree_bounds(n, fanout))
    phases = 3
    import numba

    previous = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        outputs = []
        # the new kernel also with a used workspace of garbage (kept memory between calls)
        workspace = rng.normal(size=5 * n + 3)
        for kernel, extra in ((_simkernels.run_tree_barrier, (np.zeros((0, 0, 0)), workspace)),
                              (old_tree_barrier, ())):
            compute, ends = np.zeros((phases, n)), np.zeros((phases, n))
            phase_end = kernel(table, offsets, work, phases, *costs, compute, ends, *extra)
            lean = kernel(table, offsets, work, phases, *costs, np.zeros((0, 0)),
                          np.zeros((0, 0)), *extra)
            outputs.append((phase_end, lean, compute, ends))
    finally:
        numba.set_num_threads(previous)
    for new, old in zip(*outputs, strict=True):
        np.testing.assert_array_equal(new, old)


def test_kernels_refuse_a_table_that_is_not_packed():
    jitter, gap = dyadic_trace(10, 0)
    table = table_of(jitter, gap)
    with pytest.raises(ValueError, match="C-contiguous"):
        _simkernels.advance(np.asfortranarray(table), 0.0, 1.0, 0, 0)
    with pytest.raises(ValueError, match="C-contiguous"):
        _simkernels.run_tree_barrier(table[:, :2].copy(), np.zeros(3), 1.0, 1, 2, 0.0, 0.0,
                                     0.0, 0.0, 0, tree_bounds(3, 2), np.zeros((0, 0)),
                                     np.zeros((0, 0)), np.zeros((0, 0, 0)), np.zeros(0))


@pytest.mark.parametrize(("n", "fanout", "cores_per_node"),
                         [(1, 2, None), (2, 2, None), (7, 2, None), (1000, 3, None),
                          (777, 2, 4), (3000, 5, 16)])
def test_noiseless_tree_is_the_tree_kernel_on_a_quiet_trace(n, fanout, cores_per_node):
    # the same operations in the same order: equal to the last bit
    costs = (fanout, 1e-6, 2e-6, 5e-6, 1e-6 if cores_per_node else 5e-6, cores_per_node or 0)
    quiet = table_of(np.zeros(1), np.ones(1))
    ends, ends_quiet = np.zeros((6, n)), np.zeros((6, n))
    full = _simkernels.run_tree_barrier(quiet, np.zeros(n), 1e-4, 6, *costs,
                                        tree_bounds(n, fanout), np.zeros((6, n)), ends_quiet,
                                        np.zeros((0, 0, 0)), np.zeros(0))
    lean, change = _simkernels.noiseless_tree(n, 1e-4, 6, *costs, tree_bounds(n, fanout),
                                              ends)
    np.testing.assert_array_equal(lean, full)
    np.testing.assert_array_equal(ends, ends_quiet)
    durations = np.diff(ends_quiet, axis=0)
    assert change == np.abs(durations[-1] - durations[-2]).max()
    # without the end times, the same phases and change
    again, change_again = _simkernels.noiseless_tree(n, 1e-4, 6, *costs,
                                                     tree_bounds(n, fanout), np.zeros((0, 0)))
    np.testing.assert_array_equal(again, full)
    assert change_again == change
