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
from jitterlab.noise import Bernoulli, Empirical, Exponential, Pareto, TailWarning, Uniform
from jitterlab.noise.kernels import max_uniform_complement

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
    from jitterlab.analytic.maxofn import exact_max_mean

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
    from jitterlab.analytic.maxofn import process_counts

    np.testing.assert_array_equal(process_counts(3, 10), [4, 3, 3])
    assert process_counts(4, 10**9).sum() == 10**9


MONTE_CARLO = [
    ("exponential", Exponential(mean=10e-6)),
    ("pareto", Pareto(alpha=3.0, scale=5e-6)),
    ("bernoulli", Bernoulli(p=0.01, duration=100e-6)),
    ("empirical", Empirical(np.random.default_rng(5).gamma(2.0, 5e-6, 100_000)) + 1e-3),
    ("periodic", jl.noise.Periodic(period=4e-3, duration=2.5e-6, work=1e-3)),
    # one sample in the top bin; empty bins at both ends and in the body
    ("histogram", Empirical.from_histogram(np.append(np.linspace(0, 2e-4, 1002), 3e-4),
                                           np.concatenate([[0, 5e4], np.full(998, 100.0),
                                                           [0], [1]]))),
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


LISTS_OF_LAWS = [
    ("issue-7", [Exponential(mean=1e-5), Exponential(mean=1e-5) + 1.0]),
    ("three-continuous", [Exponential(mean=1.0), Exponential(mean=2.0) + 0.5,
                          Uniform(high=4.0)]),
    ("mixed", [Bernoulli(p=0.3, duration=3.0), Pareto(alpha=3.0, scale=1.0),
               Empirical(np.random.default_rng(11).gamma(2.0, 1.0, 1000)) + 0.25,
               Exponential(mean=0.5) + 2.0]),
]


@pytest.mark.parametrize(("name", "laws"), LISTS_OF_LAWS, ids=[c[0] for c in LISTS_OF_LAWS])
def test_monte_carlo_equals_exact_for_every_n_up_to_twice_the_list(name, laws):
    # with N < K processes some laws get none: they must not enter the maximum
    n = np.arange(1, 2 * len(laws) + 1)
    replicates = 4000
    mc = jl.max_of_n(laws, n=n, method="montecarlo", replicates=replicates, rng=17)
    ex = jl.max_of_n(laws, n=n)
    # every list has a continuous law, so the maximum is never a constant: SE > 0
    z = (mc["mean"] - ex["mean"]) / mc["mean_se"]
    assert np.all(np.abs(z.values) < 4.5), z.values


def test_law_without_a_process_is_left_out_of_the_monte_carlo_maximum():
    # the case of issue 7: one process, two laws; the second law's lower end is 1 s
    laws = [Exponential(mean=1e-5), Exponential(mean=1e-5) + 1.0]
    mc = jl.max_of_n(laws, n=1, method="montecarlo", replicates=2000, rng=3)
    assert float(mc["mean"][0]) < 1e-3
    assert float(mc["quantiles"].max()) < 1e-3


def test_monte_carlo_stream_depends_on_seed_and_n_only():
    model = Exponential(mean=1.0)
    alone = jl.max_of_n(model, n=[100], method="montecarlo", replicates=300, rng=5)
    for others in ([10, 100], [100, 10], [3, 7, 100, 1000]):
        ds = jl.max_of_n(model, n=others, method="montecarlo", replicates=300, rng=5)
        for var in ("mean", "mean_se", "quantiles", "quantiles_se"):
            np.testing.assert_array_equal(ds[var].sel(n=100).values,
                                          alone[var].sel(n=100).values)
    # and different N get different streams, different seeds too
    pair = jl.max_of_n(model, n=[100, 101], method="montecarlo", replicates=300, rng=5)
    assert float(pair["mean"].sel(n=100)) != float(pair["mean"].sel(n=101))
    other = jl.max_of_n(model, n=[100], method="montecarlo", replicates=300, rng=6)
    assert float(other["mean"][0]) != float(alone["mean"][0])


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


def histogram_of(samples, bins):
    counts, edges = np.histogram(samples, bins=bins)
    return Empirical.from_histogram(edges, counts)


def test_tail_warning_for_histograms_as_for_empirical():
    # one sample per bin: the histogram's top bin is the largest sample, and the warning
    # comes at the same N as for the samples (default quantiles: from N = 11 on)
    samples = np.arange(1.0, 1001.0)
    hist = Empirical.from_histogram(np.arange(0.5, 1001.0), np.ones(1000))
    for law in (Empirical(samples), hist, hist + 1e-3, [hist, hist]):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            jl.max_of_n(law, n=10 * (2 if isinstance(law, list) else 1))
        with pytest.warns(TailWarning, match="tail='gpd'"):
            jl.max_of_n(law, n=11 * (2 if isinstance(law, list) else 1))


def test_histogram_past_its_support_warns_and_fits_a_tail():
    samples = Pareto(alpha=2.0, scale=1.0).sample(20_000, rng=1)
    hist = histogram_of(samples, np.geomspace(1.0, samples.max() * (1 + 1e-12), 500))
    with pytest.warns(TailWarning, match="histogram of 20000 counts"):
        plain = jl.max_of_n(hist, n=10**6)
    # the binned law stops at the top edge
    assert float(plain["quantiles"].isel(n=0).sel(quantile=0.99)) <= hist.upper
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fitted = jl.max_of_n(hist + 1e-3, n=10**6, tail="gpd")
    assert "Histogram" in fitted.attrs["model"]
    assert "generalized Pareto" in fitted.attrs["model"]
    assert fitted.attrs["tail"] == "gpd"
    assert float(fitted["mean"][0]) > hist.upper + 1e-3
    # too few bins for a fit: a clear error, not a silently ignored tail
    coarse = Empirical.from_histogram([0.0, 1.0, 2.0, 3.0], [500, 300, 200])
    with pytest.raises(ValueError, match="generalized Pareto tail needs at least"):
        jl.max_of_n(coarse, n=10**6, tail="gpd")


def test_fitted_tail_on_histogram_extrapolates_to_the_true_law():
    # as for samples: E[max] grows like N^ξ, an error Δξ gives a log-ratio of Δξ·ln N
    alpha, n = 2.0, 10**8
    samples = Pareto(alpha=alpha, scale=1.0).sample(100_000, rng=21)
    hist = histogram_of(samples, np.geomspace(1.0, samples.max() * (1 + 1e-12), 2000))
    tailed = hist.with_tail()
    exceedances = int((samples > tailed.threshold).sum())
    shape_se = (1 + tailed.shape) / math.sqrt(exceedances)
    fitted = float(jl.max_of_n(hist, n=n, tail="gpd")["mean"][0])
    truth = float(pareto_max_mean(alpha, 1.0, n))
    assert abs(math.log(fitted / truth)) < 4 * shape_se * math.log(n)


def test_tailed_histogram_exact_mean_agrees_with_monte_carlo():
    samples = Exponential(mean=1.0).sample(20_000, rng=8)
    tailed = histogram_of(samples, 400).with_tail()
    ex = jl.max_of_n(tailed, n=[1, 100, 10**5])
    mc = jl.max_of_n(tailed, n=[1, 100, 10**5], method="montecarlo", replicates=4000, rng=2)
    assert float(ex["mean"][0]) == pytest.approx(tailed.mean(), rel=1e-9)
    assert np.all(np.abs((mc["mean"] - ex["mean"]) / mc["mean_se"]).values < 4.5)


def test_fitted_tail_mean_is_exact_sum_plus_tail_integral():
    # compare the exact path with a Monte Carlo run of the same tailed law
    samples = Exponential(mean=1.0).sample(5000, rng=8)
    tailed = Empirical(samples).with_tail()
    ex = jl.max_of_n(tailed, n=[1, 100, 10**5])
    mc = jl.max_of_n(tailed, n=[1, 100, 10**5], method="montecarlo", replicates=4000, rng=2)
    assert float(ex["mean"][0]) == pytest.approx(tailed.mean(), rel=1e-9)
    assert np.all(np.abs((mc["mean"] - ex["mean"]) / mc["mean_se"]).values < 4.5)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"n": 0}, ValueError, r"^n must be >= 1"),
        ({"n": -1}, ValueError, r"^n must be >= 1, got -1"),
        ({"n": 1.5}, ValueError, r"^n must be a whole number"),
        ({"n": math.nan}, ValueError, r"^n must be a whole number"),
        ({"n": math.inf}, ValueError, r"^n must be a whole number"),
        ({"n": 1e20}, ValueError, r"^n = 1e\+20 is too large"),
        ({"n": [10, 1e20]}, ValueError, r"^n\[1\] = 1e\+20 is too large"),
        ({"n": [5, -1]}, ValueError, r"^n\[1\] must be >= 1, got -1"),
        ({"n": []}, ValueError, r"^n must be a positive integer or a 1-D sequence"),
        ({"n": [[1, 2]]}, ValueError, r"^n must be .* 1-D"),
        ({"n": "10"}, TypeError, r"^n must be a positive integer"),
        ({"n": [True]}, TypeError, r"^n\[0\] must be an integer"),
        ({"quantiles": [0.5, 1.0]}, ValueError, r"^quantiles must lie strictly between"),
        ({"quantiles": [-0.1]}, ValueError, r"^quantiles must lie strictly between"),
        ({"quantiles": [0.0]}, ValueError, r"^quantiles must lie strictly between"),
        ({"quantiles": [math.nan]}, ValueError, r"^quantiles must lie strictly between"),
        ({"quantiles": ["median"]}, TypeError, r"^quantiles must be numbers"),
        ({"quantiles": "0.5"}, TypeError, r"^quantiles must be numbers"),
        ({"method": "magic"}, ValueError, r"^method must be 'exact' or 'montecarlo'"),
        ({"method": None}, ValueError, r"^method must be 'exact' or 'montecarlo'"),
        ({"tail": "weibull"}, ValueError, r"^tail must be None or 'gpd'"),
        ({"method": "montecarlo", "replicates": 1}, ValueError, r"^replicates must be >= 2"),
        ({"method": "montecarlo", "replicates": 2.7}, ValueError,
         r"^replicates must be a whole number, got 2.7"),
        ({"replicates": 2.7}, ValueError, r"^replicates must be a whole number"),
        ({"method": "montecarlo", "replicates": math.nan}, ValueError,
         r"^replicates must be a whole number"),
        ({"method": "montecarlo", "replicates": "10"}, TypeError,
         r"^replicates must be an integer, got str"),
        ({"method": "montecarlo", "replicates": True}, TypeError,
         r"^replicates must be an integer"),
        ({"method": "montecarlo", "rng": "seed"}, TypeError, r"^rng must be"),
        ({"method": "montecarlo", "rng": 2.5}, TypeError, r"^rng must be"),
        ({"method": "montecarlo", "rng": -1}, ValueError, r"^rng seed must be non-negative"),
    ],
)
def test_bad_arguments_raise(kwargs, error, message):
    with pytest.raises(error, match=message):
        jl.max_of_n(Exponential(mean=1.0), **kwargs)


def test_whole_valued_float_n_is_accepted():
    # np.logspace gives floats: whole values are numbers of processes
    ds = jl.max_of_n(Exponential(mean=1.0), n=np.logspace(0, 3, 4))
    np.testing.assert_array_equal(ds["n"].values, [1, 10, 100, 1000])
    assert ds["n"].dtype == np.int64


def test_bad_models_raise():
    with pytest.raises(ValueError, match="empty list"):
        jl.max_of_n([])
    with pytest.raises(TypeError, match=r"dist_or_list\[1\] is a float"):
        jl.max_of_n([Exponential(mean=1.0), 3.0])
    with pytest.raises(TypeError, match=r"^dist_or_list is a str"):
        jl.max_of_n("exponential")


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


def hypoexponential_max_mean(m1, m2, n):
    """E[max of N] of X + Y, X ~ Exp(mean m1), Y ~ Exp(mean m2), m1 != m2, exactly.

    F(x) = 1 − a·e^{−x/m1} − b·e^{−x/m2} with a = m1/(m1 − m2), b = m2/(m2 − m1);
    expanding F^N by the multinomial theorem, ∫(1 − F^N) dx is the rational number
    −Σ_{(j,k) ≠ 0} N!/((N−j−k)! j! k!)·(−a)^j·(−b)^k / (j/m1 + k/m2).
    """
    from fractions import Fraction

    m1, m2 = Fraction(m1), Fraction(m2)
    a, b = m1 / (m1 - m2), m2 / (m2 - m1)
    total = Fraction(0)
    for j in range(n + 1):
        for k in range(n + 1 - j):
            if j or k:
                ways = math.comb(n, j) * math.comb(n - j, k)
                total -= ways * (-a) ** j * (-b) ** k / (j / m1 + k / m2)
    return float(total)


@pytest.mark.slow
def test_sum_of_two_exponentials_max_mean_is_exact_and_quiet():
    # the general quadrature path on a Sum, under filterwarnings = error
    model = Exponential(mean=1e-5) + Exponential(mean=2e-5)
    n = [1, 2, 5, 30]
    ds = jl.max_of_n(model, n=n, quantiles=[0.5])
    expected = [1e-5 * hypoexponential_max_mean(1, 2, k) for k in n]
    np.testing.assert_allclose(ds["mean"].values, expected, rtol=1e-9)


def test_sum_max_of_one_process_is_its_mean_and_quiet():
    # a uniform part makes the Sum's CDF kinked; for N = 1 no integral is needed
    model = Uniform(high=1e-5) + Exponential(mean=1e-5)
    ds = jl.max_of_n([model, Exponential(mean=1.0)], n=1, quantiles=[0.5])
    assert float(ds["mean"][0]) == model.mean() == pytest.approx(1.5e-5, rel=1e-15)


def gamma2_max_sample(n, replicates, seed):
    """Draws of the maximum of N Gamma(2, 1) variables: F⁻¹(U^{1/N}) by bisection on
    the closed-form survival function (1 + x)·e^{−x}, independent of jitterlab."""
    u = np.random.default_rng(seed).random(replicates)
    target = np.log(-np.expm1(np.log(u) / n))  # log P(X > x) at the maximum
    lo, hi = np.zeros(replicates), np.full(replicates, 200.0)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        above = np.log1p(mid) - mid > target
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    return 0.5 * (lo + hi)


def test_sum_max_mean_far_in_the_tail_matches_monte_carlo_and_is_quiet():
    # Exp + Exp of equal means is Gamma(2): at N = 10^6 the tail integral reaches
    # levels of 1e-15 of the Sum, whose quadrature-based CDF is not precise there;
    # the answer is, and no accuracy warning may reach the user
    model = Exponential(mean=1.0) + Exponential(mean=1.0)
    n = [1000, 10**6]
    ds = jl.max_of_n(model, n=n, quantiles=[0.5])
    for k in n:
        draws = gamma2_max_sample(k, 200_000, seed=k)
        se = draws.std(ddof=1) / math.sqrt(draws.size)
        assert abs(float(ds["mean"].sel(n=k)) - draws.mean()) < 4.5 * se


def test_piecewise_quadrature_over_many_pieces():
    # the body integral of a measured law mixed with continuous ones: one piece per
    # support point, fixed Gauss-Legendre rules first, QUADPACK where they disagree
    from jitterlab.base.integrate import piecewise_quad

    edges = np.concatenate([[0.0], np.sort(np.random.default_rng(4).uniform(0, 30, 500)),
                            [30.0]])
    smooth = piecewise_quad(lambda x: np.exp(-x), edges, scale=1.0)
    assert smooth == pytest.approx(-math.expm1(-30.0), rel=1e-13)
    # a kink inside a piece: the two rules disagree there and QUADPACK takes over
    kinked = piecewise_quad(lambda x: np.abs(x - 10.123456), edges, scale=100.0)
    assert kinked == pytest.approx((10.123456**2 + (30 - 10.123456) ** 2) / 2, rel=1e-12)


def test_mixed_list_with_a_large_sample_is_fast_and_agrees_with_monte_carlo():
    # 20 000 support points and a continuous law: 20 000 pieces in the body integral
    laws = [Empirical(np.random.default_rng(11).gamma(2.0, 1.0, 20_000)),
            Pareto(alpha=3.0, scale=1.0)]
    n = [2, 6]
    ex = jl.max_of_n(laws, n=n)
    mc = jl.max_of_n(laws, n=n, method="montecarlo", replicates=4000, rng=5)
    assert np.all(np.abs((mc["mean"] - ex["mean"]) / mc["mean_se"]).values < 4.5)


# --------------------------------------------------------------------------- sizes


def test_montecarlo_beyond_its_draw_limit_is_refused_with_the_figures(monkeypatch):
    monkeypatch.delenv("JITTERLAB_ALLOW_LARGE", raising=False)
    law = Exponential(mean=1e-5)
    with pytest.raises(jl.limits.ResourceLimitError,
                       match=r"draw 1e\+14 uniforms \(the sum of n, 1e\+10, times "
                       r"replicates=10000\).*Use method='exact'"):
        jl.max_of_n(law, n=10**10, method="montecarlo", rng=1)
    # the sum over every n counts; the exact method at the same N is immediate
    with pytest.raises(jl.limits.ResourceLimitError, match="the sum of n, 1.1e\\+07"):
        jl.max_of_n(law, n=[10**7, 10**6], method="montecarlo", replicates=1000, rng=1)
    exact = jl.max_of_n(law, n=10**10)
    np.testing.assert_allclose(float(exact["mean"][0]),
                               1e-5 * (math.log(1e10) + np.euler_gamma), rtol=1e-9)
    with pytest.raises(TypeError, match="allow_large must be True or False"):
        jl.max_of_n(law, n=10, method="montecarlo", replicates=10, allow_large=1)


def test_montecarlo_replicates_beyond_the_memory_are_refused(monkeypatch):
    monkeypatch.setattr(jl.limits, "available_memory", lambda: 10**6)
    monkeypatch.setattr(jl.limits, "_ALWAYS_FITS", 0)
    monkeypatch.delenv("JITTERLAB_ALLOW_LARGE", raising=False)
    law = Exponential(mean=1e-5)
    with pytest.raises(jl.limits.ResourceLimitError, match="give fewer replicates"):
        jl.max_of_n(law, n=2, method="montecarlo", replicates=10**5, rng=1)
    allowed = jl.max_of_n(law, n=2, method="montecarlo", replicates=10**5, rng=1,
                          allow_large=True)
    assert allowed["mean"].size == 1


def test_exact_means_spread_over_threads_equal_the_means_one_by_one():
    # an empirical law's N go to numba's threads whole (issue #20): the same numbers
    from jitterlab.analytic.maxofn import exact_max_mean

    law = jl.noise.Empirical(np.random.default_rng(3).gamma(2.0, 1.0, 50_000))
    n = np.array([1000, 1, 7, 10**6, 2, 50])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jl.noise.TailWarning)
        spread = jl.max_of_n(law, n=n)["mean"].values
    one_by_one = [exact_max_mean([law], [k]) for k in n]
    np.testing.assert_array_equal(spread, one_by_one)


@pytest.mark.parametrize("law", [Pareto(alpha=1.5, scale=1.0), Exponential(mean=1.0),
                                 Uniform(low=0.0, high=1.0)])
def test_fitted_tail_mean_by_fixed_rules_matches_quadpack(law):
    # the tail integral by Gauss-Legendre rules in log s and log(1 − s) (QUADPACK where
    # two rules disagree) against QUADPACK alone: each meets the target 1e-10 of the
    # scale on each of its six pieces
    from jitterlab.base.integrate import max_isf_single, quantile_tail_integral

    tailed = Empirical(law.sample(3000, rng=6)).with_tail()
    for n in (10, 10**4, 10**6, 10**9):
        body = tailed._body_max_integral(n)
        scale = max(body, tailed.threshold)
        s_u = -math.expm1(n * math.log1p(-float(tailed.sf(tailed.threshold))))
        reference = body + quantile_tail_integral(
            lambda s, n=n: float(max_isf_single(tailed, n)(s)), tailed.threshold, s_u,
            scale=scale)
        target = 12e-10 * max(scale, reference)  # or 1e-10 of a piece larger than scale
        assert tailed._exact_max_mean(n) == pytest.approx(reference, rel=0, abs=target)
