"""Theorem 1 of Garg & De (2006): tree depth, arrival offsets, bounds, barrier time."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import jitterlab as jl
from jitterlab.noise import Bernoulli, Empirical, Exponential, Pareto

TAU = 5e-6


@pytest.mark.parametrize("k", range(1, 41))
def test_depth_of_full_binary_tree_is_log2_of_half_n_plus_one(k):
    n = 2**k - 1
    assert jl.tree_depth(n) == k - 1 == math.log2((n + 1) / 2)


def breadth_first_depth(n, fanout):
    depth = [0]
    for i in range(1, n):
        depth.append(depth[(i - 1) // fanout] + 1)
    return depth[-1]


@pytest.mark.parametrize("fanout", [2, 3, 4, 8])
def test_depth_is_that_of_the_last_breadth_first_node(fanout):
    n = np.arange(1, 400)
    np.testing.assert_array_equal(jl.tree_depth(n, fanout),
                                  [breadth_first_depth(int(k), fanout) for k in n])


def test_depth_for_huge_n_is_exact():
    assert jl.tree_depth(2**60 - 1) == 59
    assert jl.tree_depth(2**60) == 60
    assert jl.tree_depth(10**9, fanout=4) == math.ceil(math.log(10**9 * 3 + 1, 4)) - 1


def test_arrival_offsets_of_garg_de_figure_2():
    # Fig. 2: process 1 is the root, 3 and 6 its children, 2, 4 under 3 and 5, 7 under 6
    parent = [-1, 2, 0, 2, 5, 0, 5]
    offsets = jl.arrival_offsets(7, TAU, parent=parent)
    np.testing.assert_allclose(offsets / TAU, [0, 2, 1, 2, 2, 1, 2])
    # the same tree numbered breadth-first, and the bound a_i <= τ·log2((N+1)/2)
    np.testing.assert_allclose(jl.arrival_offsets(7, TAU) / TAU, [0, 1, 1, 2, 2, 2, 2])
    assert offsets.max() <= TAU * math.log2((7 + 1) / 2)


def test_arrival_offsets_fanout_and_bad_trees():
    np.testing.assert_allclose(jl.arrival_offsets(6, 1.0, fanout=4), [0, 1, 1, 1, 1, 2])
    with pytest.raises(ValueError, match="one entry per process"):
        jl.arrival_offsets(3, 1.0, parent=[-1, 0])
    with pytest.raises(ValueError, match="exactly one root"):
        jl.arrival_offsets(3, 1.0, parent=[-1, -1, 0])
    with pytest.raises(ValueError, match="not describe a tree"):
        jl.arrival_offsets(3, 1.0, parent=[-1, 2, 1])


def test_bounds_gap_is_twice_tau_times_depth():
    ds = jl.theorem1_bounds(Exponential(mean=20e-6) + 300e-6, n=[1, 7, 31, 1000, 10**6],
                            tau=TAU)
    depth = jl.tree_depth([1, 7, 31, 1000, 10**6])
    np.testing.assert_allclose((ds["upper"] - ds["lower"]).values, 2 * TAU * depth)
    np.testing.assert_allclose((ds["upper_quantiles"] - ds["lower_quantiles"]).values,
                               (2 * TAU * depth)[:, None] * np.ones((1, 3)))
    lower = jl.max_of_n(Exponential(mean=20e-6) + 300e-6, n=[1, 7, 31, 1000, 10**6])
    np.testing.assert_allclose(ds["lower"].values, lower["mean"].values)
    assert ds.attrs["tau"] == TAU and ds.attrs["fanout"] == 2


def test_garg_de_latency_term_for_32_nodes():
    # §4.1: 2·5 µs·log2(32/2) = 40 µs
    ds = jl.theorem1_bounds(Exponential(mean=1e-6) + 300e-6, n=31, tau=TAU)
    assert float(ds["round_trip"][0]) == pytest.approx(40e-6)


def test_bounds_with_monte_carlo_carry_standard_errors():
    ds = jl.theorem1_bounds(Exponential(mean=1e-5), n=[3, 30], tau=TAU, method="montecarlo",
                            replicates=200, rng=1)
    assert "lower_mean_se" in ds and ds.attrs["seed"] == 1


@settings(max_examples=30, deadline=None)
@given(mean=st.floats(1e-7, 1e-3), tau=st.floats(0, 1e-4),
       n=st.lists(st.integers(1, 10**8), min_size=1, max_size=4, unique=True),
       fanout=st.integers(2, 16))
def test_lower_never_exceeds_upper(mean, tau, n, fanout):
    ds = jl.theorem1_bounds(Exponential(mean=mean), n=sorted(n), tau=tau, fanout=fanout)
    assert np.all(ds["lower"].values <= ds["upper"].values)
    assert np.all(ds["lower_quantiles"].values <= ds["upper_quantiles"].values)
    np.testing.assert_allclose((ds["upper"] - ds["lower"]).values,
                               2 * tau * jl.tree_depth(sorted(n), fanout), atol=1e-18)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"tau": -1.0}, "tau"),
    ({"tau": float("nan")}, "tau"),
    ({"fanout": 1}, "fanout"),
    ({"fanout": 2.5}, "fanout"),
    ({"n": 0}, "n must be"),
])
def test_bad_bound_arguments_raise(kwargs, message):
    arguments = {"n": 7, "tau": TAU, **kwargs}
    with pytest.raises(ValueError, match=message):
        jl.theorem1_bounds(Exponential(mean=1e-5), **arguments)


@pytest.mark.parametrize("n", [2, 8, 100, 10**4, 10**6])
def test_barrier_time_has_an_atom_of_one_over_n_at_zero(n):
    b = jl.barrier_time(Exponential(mean=10e-6) + 300e-6, n)
    assert float(b.cdf(0.0)) == pytest.approx(1 / n, rel=1e-5)
    assert float(b.cdf(-1e-9)) == 0.0


@pytest.mark.parametrize("model", [Exponential(mean=10e-6) + 300e-6,
                                   Pareto(alpha=3.0, scale=5e-6),
                                   Bernoulli(p=0.1, duration=50e-6),
                                   Empirical(np.random.default_rng(4).exponential(1e-5, 300))],
                         ids=repr)
def test_barrier_time_mean_and_samples_agree_with_its_cdf(model):
    n = 16
    b = jl.barrier_time(model, n)
    # eq. 2: E[b] = E[θ] − E[w + δ]
    expected = float(jl.max_of_n(model, n=n, quantiles=[0.5])["mean"][0]) - model.mean()
    assert b.mean() == pytest.approx(expected, rel=1e-9)
    draws = b.sample(20_000, rng=5)
    se = draws.std(ddof=1) / math.sqrt(draws.size)
    assert abs(draws.mean() - b.mean()) < 5 * se
    points = np.quantile(draws, [0.3, 0.6, 0.9])
    observed = np.searchsorted(np.sort(draws), points, "right") / draws.size
    cdf = b.cdf(points)
    assert np.all(np.abs(observed - cdf) < 5 * np.sqrt(cdf * (1 - cdf) / draws.size) + 1e-9)


def test_barrier_time_upper_bound_adds_the_latency():
    model = Exponential(mean=10e-6)
    lower = jl.barrier_time(model, 31, tau=TAU)
    upper = jl.barrier_time(model, 31, tau=TAU, bound="upper")
    assert upper.mean() - lower.mean() == pytest.approx(40e-6)
    assert float(upper.cdf(40e-6)) == pytest.approx(float(lower.cdf(0.0)))
    assert stats.kstest(upper.sample(2000, rng=1) - 40e-6, lower.cdf).statistic < 0.1
    with pytest.raises(ValueError, match="bound"):
        jl.barrier_time(model, 31, bound="middle")


def test_single_process_never_waits():
    b = jl.barrier_time(Exponential(mean=1.0), 1)
    assert b.mean() == pytest.approx(0.0, abs=1e-12)
    assert float(b.cdf(0.0)) == 1.0


def test_paper_depth_is_selectable():
    # N = 32: the complete tree has depth 5, the paper's formula gives log2(33/2) ≈ 4.04,
    # so 2·5 µs·D is 50 µs against the "about 40 µs" Garg & De quote (§4.1)
    law = Exponential(mean=1e-5) + 1e-3
    tree = jl.theorem1_bounds(law, n=32, tau=TAU)
    paper = jl.theorem1_bounds(law, n=32, tau=TAU, depth="paper")
    assert int(tree["depth"][0]) == 5
    assert float(tree["round_trip"][0]) == pytest.approx(50e-6, rel=1e-12)
    assert float(paper["round_trip"][0]) == pytest.approx(2 * TAU * math.log2(16.5), rel=1e-12)
    assert paper.attrs["depth"] == "paper" and tree.attrs["depth"] == "tree"
    np.testing.assert_array_equal(tree["lower"].values, paper["lower"].values)
    # for N = 2^k − 1 the two agree
    for n in (1, 3, 7, 1023):
        a = jl.theorem1_bounds(law, n=n, tau=TAU)["round_trip"].values
        b = jl.theorem1_bounds(law, n=n, tau=TAU, depth="paper")["round_trip"].values
        np.testing.assert_allclose(a, b, rtol=1e-12)
    upper = jl.barrier_time(law, 32, tau=TAU, bound="upper", depth="paper")
    assert upper.lower == pytest.approx(2 * TAU * math.log2(16.5), rel=1e-12)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"depth": "binary"}, "depth must be 'tree' or 'paper'"),
    ({"depth": "paper", "fanout": 3}, "depth='paper'"),
    ({"tau": -1e-6}, "tau must be finite and >= 0"),
    ({"tau": "5e-6"}, "tau must be a real number"),
])
def test_theorem1_bad_arguments(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        jl.theorem1_bounds(Exponential(mean=1e-5) + 1e-3, n=7, **kwargs)


def test_negative_work_that_makes_times_negative_is_refused():
    # a shift may move a law down only while it stays >= 0: Theorem 1 then never
    # returns negative times
    with pytest.raises(ValueError, match="would make times negative"):
        Exponential(mean=1e-5) + (-1e-3)
    with pytest.raises(ValueError, match="would make times negative"):
        (Exponential(mean=1e-5) + 1e-3) + (-2e-3)
    moved = (Exponential(mean=1e-5) + 1e-3) + (-0.5e-3)
    assert moved.lower == pytest.approx(0.5e-3)
    with pytest.raises(ValueError, match="shift must be finite"):
        Exponential(mean=1e-5) + float("nan")


@pytest.mark.parametrize("extra", [{"tau": 5e-6}, {"fanout": 4}, {"tau": 0.0}])
def test_a_barrier_and_tau_or_fanout_together_are_refused(extra):
    # the barrier fixes the latency term; a tau beside it used to be dropped without a word
    law = jl.noise.Exponential(mean=1e-5) + 1e-3
    with pytest.raises(ValueError, match="give barrier or"):
        jl.theorem1_bounds(law, n=7, barrier=jl.TreeBarrier(), **extra)
