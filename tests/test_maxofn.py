"""Max-of-N: closed forms, Monte Carlo against exact, the tail warning, properties."""

import math
import warnings

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

import jitterlab as jl
from jitterlab._kernels import max_uniform_complement, max_uniform_complement_reference
from jitterlab.noise import Bernoulli, Empirical, Exponential, Pareto, TailWarning, Uniform

N_VALUES = [1, 2, 10, 1000, 10**6]


def harmonic(n):
    return special.digamma(n + 1.0) + np.euler_gamma


def pareto_max_mean(alpha, scale, n):
    """scale·Γ(N+1)Γ(1 − 1/α)/Γ(N + 1 − 1/α)."""
    a = 1.0 / alpha
    return scale * special.poch(n + 1.0 - a, a) * special.gamma(1.0 - a)


CLOSED_FORMS = [
    ("exponential", Exponential(mean=10e-6), lambda n: 10e-6 * harmonic(n)),
    ("bernoulli", Bernoulli(p=1e-4, duration=200e-6),
     lambda n: 200e-6 * -np.expm1(n * np.log1p(-1e-4))),
    ("pareto-1.5", Pareto(alpha=1.5, scale=1e-6), lambda n: pareto_max_mean(1.5, 1e-6, n)),
    ("pareto-3", Pareto(alpha=3.0, scale=5e-6), lambda n: pareto_max_mean(3.0, 5e-6, n)),
    ("uniform", Uniform(high=40e-6), lambda n: 40e-6 * n / (n + 1.0)),
]


@pytest.mark.parametrize(("name", "model", "closed"), CLOSED_FORMS,
                         ids=[c[0] for c in CLOSED_FORMS])
def test_exact_mean_matches_closed_form(name, model, closed):
    n = np.array(N_VALUES)
    ds = jl.max_of_n(model, n=n)
    np.testing.assert_allclose(ds["mean"].values, closed(n), rtol=1e-8)


@pytest.mark.parametrize(("name", "model", "closed"), CLOSED_FORMS,
                         ids=[c[0] for c in CLOSED_FORMS])
def test_numerical_integral_matches_closed_form(name, model, closed):
    # the general path (∫(1 − F^N), quantile-space tail) that lists and mixtures take
    from jitterlab.maxofn import exact_max_mean

    for n in N_VALUES:
        assert exact_max_mean([model], [n], closed_form=False) == pytest.approx(closed(n),
                                                                                 rel=1e-8)


def test_exact_mean_beyond_a_billion_processes():
    ds = jl.max_of_n(Exponential(mean=1.0), n=[10**9, 10**12])
    np.testing.assert_allclose(ds["mean"].values, harmonic(np.array([1e9, 1e12])), rtol=1e-9)


def test_exact_mean_with_work_shift():
    ds = jl.max_of_n(Exponential(mean=10e-6) + 300e-6, n=[1, 1000])
    np.testing.assert_allclose(ds["mean"].values, 300e-6 + 10e-6 * harmonic(np.array([1, 1000])),
                               rtol=1e-10)


def test_exact_quantiles_of_exponential_maximum():
    # P(max <= x) = (1 − e^{−x/m})^N  ⇒  x_q = −m·log(1 − q^{1/N})
    q = np.array([0.1, 0.5, 0.99])
    ds = jl.max_of_n(Exponential(mean=2.0), n=[1, 50, 10**9], quantiles=q)
    for n in (1, 50, 10**9):
        expected = -2.0 * np.log(-np.expm1(np.log(q) / n))
        np.testing.assert_allclose(ds["quantiles"].sel(n=n).values, expected, rtol=1e-12)


def brute_empirical_max_mean(samples, n):
    """Σ_k x_(k)·[(k/m)^N − ((k−1)/m)^N] over the sorted sample."""
    x = np.sort(samples)
    k = np.arange(1, x.size + 1)
    return float(np.sum(x * ((k / x.size) ** n - ((k - 1) / x.size) ** n)))


@pytest.mark.parametrize("n", [1, 2, 7, 300])
def test_empirical_is_exact_for_its_sample(n):
    samples = np.array([5.0, 1.0, 3.0, 3.0, 2.0, 8.0, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TailWarning)
        ds = jl.max_of_n(Empirical(samples), n=n)
    assert float(ds["mean"][0]) == pytest.approx(brute_empirical_max_mean(samples, n), rel=1e-12)


def test_empirical_large_sample_many_n_matches_brute_force():
    samples = np.random.default_rng(0).exponential(1.0, 200_000)
    ds = jl.max_of_n(Empirical(samples), n=[1, 3, 1000, 20_000], quantiles=[0.5])
    for n in (1, 3, 1000, 20_000):
        assert float(ds["mean"].sel(n=n)) == pytest.approx(brute_empirical_max_mean(samples, n),
                                                           rel=1e-10)


def test_list_of_laws_multiplies_cdfs():
    # max of Exp(m1) and Exp(m2): m1 + m2 − m1·m2/(m1 + m2)
    m1, m2 = 1.0, 3.0
    ds = jl.max_of_n([Exponential(mean=m1), Exponential(mean=m2)])
    assert int(ds["n"][0]) == 2
    assert float(ds["mean"][0]) == pytest.approx(m1 + m2 - m1 * m2 / (m1 + m2), rel=1e-9)


def test_list_of_equal_laws_equals_one_law():
    e = Exponential(mean=1.0)
    lst = jl.max_of_n([e, e, e], n=[3, 30, 3001])
    one = jl.max_of_n(e, n=[3, 30, 3001])
    np.testing.assert_allclose(lst["mean"].values, one["mean"].values, rtol=1e-9)
    np.testing.assert_allclose(lst["quantiles"].values, one["quantiles"].values, rtol=1e-9)


def test_list_of_empirical_laws_is_exact():
    a, b = np.array([1.0, 2.0, 4.0]), np.array([0.5, 3.0])
    # P(max <= x) = F_a(x)·F_b(x) for one process each
    grid = np.unique(np.concatenate([a, b]))
    fa = np.searchsorted(np.sort(a), grid, "right") / a.size
    fb = np.searchsorted(np.sort(b), grid, "right") / b.size
    g = fa * fb
    expected = float(np.sum(grid * np.diff(g, prepend=0.0)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TailWarning)
        ds = jl.max_of_n([Empirical(a), Empirical(b)])
    assert float(ds["mean"][0]) == pytest.approx(expected, rel=1e-12)


def test_one_slow_process_shows():
    fast, slow = Exponential(mean=10e-6), Exponential(mean=10e-6) + 50e-6
    everyone = jl.max_of_n([fast] * 7 + [slow], n=[8, 8 * 128])
    nobody = jl.max_of_n(fast, n=[8, 8 * 128])
    assert np.all(everyone["mean"].values > nobody["mean"].values + 25e-6)


def test_process_counts_round_robin():
    from jitterlab.maxofn import process_counts

    np.testing.assert_array_equal(process_counts(3, 10), [4, 3, 3])
    assert process_counts(4, 10**9).sum() == 10**9


MONTE_CARLO = [
    ("exponential", Exponential(mean=10e-6)),
    ("pareto", Pareto(alpha=3.0, scale=5e-6)),
    ("bernoulli", Bernoulli(p=0.01, duration=100e-6)),
    ("empirical", Empirical(np.random.default_rng(5).gamma(2.0, 5e-6, 100_000)) + 1e-3),
    ("periodic", jl.noise.Periodic(period=4e-3, duration=2.5e-6, work=1e-3)),
]


@pytest.mark.parametrize(("name", "model"), MONTE_CARLO, ids=[m[0] for m in MONTE_CARLO])
def test_monte_carlo_agrees_with_exact_within_standard_errors(name, model):
    n = [1, 10, 1000]
    mc = jl.max_of_n(model, n=n, method="montecarlo", replicates=4000, rng=42)
    ex = jl.max_of_n(model, n=n)
    # a mean of R draws cannot resolve less than range/R (all draws equal: zero SE)
    resolution = (min(model.upper, float(ex["quantiles"].max()) * 10) - model.lower) / 4000
    z_mean = (mc["mean"] - ex["mean"]) / np.maximum(mc["mean_se"], resolution)
    assert np.all(np.abs(z_mean.values) < 4.5)
    # quantile standard errors are estimates from order statistics: allow a wider band
    z_q = (mc["quantiles"] - ex["quantiles"]) / np.maximum(mc["quantiles_se"], 1e-18)
    atoms_only = model.atoms is not None
    if not atoms_only:
        assert np.all(np.abs(z_q.values) < 6)


def test_monte_carlo_for_a_list_of_laws():
    laws = [Exponential(mean=1.0), Exponential(mean=2.0) + 0.5, Uniform(high=4.0)]
    mc = jl.max_of_n(laws, n=[3, 30], method="montecarlo", replicates=4000, rng=1)
    ex = jl.max_of_n(laws, n=[3, 30])
    assert np.all(np.abs((mc["mean"] - ex["mean"]) / mc["mean_se"]).values < 4.5)


def test_monte_carlo_is_reproducible_and_independent_of_threads():
    model = Empirical(np.random.default_rng(2).exponential(1.0, 1000))
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = jl.max_of_n(model, n=[5, 50], quantiles=[0.5], method="montecarlo",
                          replicates=500, rng=9)
        numba.set_num_threads(before)
        many = jl.max_of_n(model, n=[5, 50], quantiles=[0.5], method="montecarlo",
                           replicates=500, rng=9)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(one["mean"].values, many["mean"].values)
    other = jl.max_of_n(model, n=[5, 50], quantiles=[0.5], method="montecarlo",
                        replicates=500, rng=10)
    assert not np.array_equal(one["mean"].values, other["mean"].values)
    gen = jl.max_of_n(model, n=5, quantiles=[0.5], method="montecarlo", replicates=50,
                      rng=np.random.default_rng(3))
    assert gen.attrs["seed"] == int(np.random.default_rng(3).integers(0, 2**63 - 1))


def test_kernel_matches_reference():
    counts = np.array([1, 7, 33], dtype=np.int64)
    np.testing.assert_array_equal(max_uniform_complement(123, counts, 5),
                                  max_uniform_complement_reference(123, counts, 5))


def test_kernel_complement_is_distributed_as_min_of_uniforms():
    # 1 − max of N uniforms has mean 1/(N + 1)
    v = max_uniform_complement(7, np.array([99], dtype=np.int64), 20_000)[:, 0]
    se = v.std(ddof=1) / math.sqrt(v.size)
    assert abs(v.mean() - 1 / 100) < 4.5 * se
    assert np.all((v > 0) & (v <= 1))


def test_result_dataset_structure_and_attrs():
    ds = jl.max_of_n(Exponential(mean=1e-5) + 1e-3, n=[1, 10], quantiles=[0.5, 0.99])
    assert ds["mean"].dims == ("n",)
    assert ds["quantiles"].dims == ("n", "quantile")
    assert ds["mean"].attrs["units"] == "s"
    assert ds.attrs["method"] == "exact"
    assert "Exponential(mean=1e-05)" in ds.attrs["model"]
    assert "jitterlab_version" in ds.attrs
    mc = jl.max_of_n(Exponential(mean=1e-5), n=10, method="montecarlo", replicates=100, rng=4)
    assert mc.attrs["seed"] == 4 and mc.attrs["replicates"] == 100
    assert set(mc.data_vars) == {"mean", "mean_se", "quantiles", "quantiles_se"}


def test_result_round_trips_through_netcdf(tmp_path):
    import xarray as xr

    ds = jl.max_of_n(Exponential(mean=1e-5), n=[1, 10], method="montecarlo", replicates=50,
                     rng=1)
    ds.to_netcdf(tmp_path / "r.nc")
    back = xr.load_dataset(tmp_path / "r.nc")
    xr.testing.assert_identical(ds, back)


def test_tail_warning_when_n_exceeds_the_sample():
    samples = Pareto(alpha=2.0, scale=1.0).sample(2000, rng=1)
    with pytest.warns(TailWarning, match="tail='gpd'"):
        plain = jl.max_of_n(Empirical(samples), n=10**6)
    # the empirical maximum just repeats the largest measured value
    assert float(plain["quantiles"].isel(n=0).sel(quantile=0.5)) == samples.max()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fitted = jl.max_of_n(Empirical(samples), n=10**6, tail="gpd")
    assert "generalized Pareto" in fitted.attrs["model"]
    assert fitted.attrs["tail"] == "gpd"
    assert float(fitted["mean"][0]) > samples.max()


def test_fitted_tail_extrapolates_to_the_true_law():
    # E[max] grows like N^ξ, so an error Δξ in the fitted shape gives a log-ratio of
    # about Δξ·ln N: allow four standard errors of the shape estimate
    alpha, n = 2.0, 10**8
    samples = Pareto(alpha=alpha, scale=1.0).sample(100_000, rng=21)
    tailed = Empirical(samples).with_tail()
    exceedances = int((samples > tailed.threshold).sum())
    shape_se = (1 + tailed.shape) / math.sqrt(exceedances)
    fitted = float(jl.max_of_n(Empirical(samples), n=n, tail="gpd")["mean"][0])
    truth = float(pareto_max_mean(alpha, 1.0, n))
    assert abs(math.log(fitted / truth)) < 4 * shape_se * math.log(n)


def test_tail_warning_also_for_shifted_empirical_and_lists():
    e = Empirical(np.arange(1.0, 101.0)) + 5.0
    with pytest.warns(TailWarning):
        jl.max_of_n([e, e], n=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jl.max_of_n(e, n=2, quantiles=[0.5])


def test_fitted_tail_mean_is_exact_sum_plus_tail_integral():
    # compare the exact path with a Monte Carlo run of the same tailed law
    samples = Exponential(mean=1.0).sample(5000, rng=8)
    tailed = Empirical(samples).with_tail()
    ex = jl.max_of_n(tailed, n=[1, 100, 10**5])
    mc = jl.max_of_n(tailed, n=[1, 100, 10**5], method="montecarlo", replicates=4000, rng=2)
    assert float(ex["mean"][0]) == pytest.approx(tailed.mean(), rel=1e-9)
    assert np.all(np.abs((mc["mean"] - ex["mean"]) / mc["mean_se"]).values < 4.5)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n": 0}, "n must be >= 1"),
        ({"n": 1.5}, "whole numbers"),
        ({"n": [[1, 2]]}, "1-D"),
        ({"quantiles": [0.5, 1.0]}, "quantiles"),
        ({"quantiles": [-0.1]}, "quantiles"),
        ({"method": "magic"}, "method"),
        ({"method": "montecarlo", "replicates": 1}, "replicates"),
        ({"tail": "weibull"}, "tail"),
        ({"method": "montecarlo", "rng": "seed"}, "rng"),
        ({"method": "montecarlo", "rng": -1}, "non-negative"),
    ],
)
def test_bad_arguments_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        jl.max_of_n(Exponential(mean=1.0), **kwargs)


def test_bad_models_raise():
    with pytest.raises(ValueError, match="empty list"):
        jl.max_of_n([])
    with pytest.raises(ValueError, match=r"dist_or_list\[1\]"):
        jl.max_of_n([Exponential(mean=1.0), 3.0])


def test_infinite_mean_pareto():
    ds = jl.max_of_n(Pareto(alpha=1.0, scale=1.0), n=[1, 10])
    assert np.all(np.isinf(ds["mean"].values))
    assert np.all(np.isfinite(ds["quantiles"].values))


models = st.one_of(
    st.floats(1e-7, 1e-3).map(lambda m: Exponential(mean=m)),
    st.tuples(st.floats(1.2, 5.0), st.floats(1e-7, 1e-4)).map(
        lambda a: Pareto(alpha=a[0], scale=a[1])),
    st.tuples(st.floats(0.0, 1.0), st.floats(1e-7, 1e-3)).map(
        lambda a: Bernoulli(p=a[0], duration=a[1])),
    st.lists(st.floats(0.0, 1e-3), min_size=1, max_size=50).map(Empirical),
)


@settings(max_examples=40, deadline=None)
@given(model=models, n=st.lists(st.integers(1, 10**7), min_size=2, max_size=4, unique=True))
def test_monotone_in_n_and_in_quantile(model, n):
    n = sorted(n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TailWarning)
        ds = jl.max_of_n(model, n=n, quantiles=[0.1, 0.5, 0.9])
    means = ds["mean"].values
    assert np.all(np.diff(means) >= -1e-12 * np.abs(means[1:]))
    quants = ds["quantiles"].values
    assert np.all(np.diff(quants, axis=0) >= -1e-12 * np.abs(quants[1:]))
    assert np.all(np.diff(quants, axis=1) >= -1e-12 * np.abs(quants[:, 1:]))
    # E[max of N] lies between the mean of one draw and the top of the support
    assert means[0] >= model.mean() * (1 - 1e-9)
    assert np.all(means <= model.upper * (1 + 1e-12))
