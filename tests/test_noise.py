"""Noise models: parameters, distribution functions, combinators."""

import math

import numpy as np
import pytest
from scipy import stats

import jitterlab as jl
from jitterlab.noise import (
    Bernoulli,
    Discrete,
    Empirical,
    Exponential,
    Histogram,
    Mixture,
    Pareto,
    Periodic,
    Sum,
    Uniform,
)

MODELS = [
    Exponential(mean=10e-6),
    Pareto(alpha=2.5, scale=2e-6),
    Uniform(high=30e-6),
    Uniform(high=30e-6, low=5e-6),
    Bernoulli(p=0.05, duration=100e-6),
    Empirical(np.random.default_rng(1).gamma(2.0, 5e-6, 500)),
    Empirical.from_histogram([0, 1e-6, 3e-6, 10e-6], [5, 0, 2]),
    Periodic(period=4e-3, duration=2.5e-6, work=1e-3),
    Exponential(mean=5e-6) + 1e-3,
    Exponential(mean=5e-6) + Bernoulli(p=0.1, duration=50e-6),
    Mixture([Exponential(mean=1e-6), Uniform(high=4e-6)], [0.3, 0.7]),
]


@pytest.mark.parametrize(
    ("factory", "name"),
    [
        (lambda: Exponential(mean=-1.0), "mean"),
        (lambda: Exponential(mean=float("nan")), "mean"),
        (lambda: Pareto(alpha=0.0, scale=1.0), "alpha"),
        (lambda: Pareto(alpha=2.0, scale=-1.0), "scale"),
        (lambda: Uniform(high=-1.0), "high"),
        (lambda: Uniform(high=1.0, low=2.0), "high must exceed low"),
        (lambda: Bernoulli(p=1.5, duration=1.0), "p must"),
        (lambda: Bernoulli(p=-0.1, duration=1.0), "p must"),
        (lambda: Bernoulli(p=0.5, duration=-1.0), "duration"),
        (lambda: Empirical([]), "empty"),
        (lambda: Empirical([1.0, float("nan")]), "NaN"),
        (lambda: Empirical([1.0, float("inf")]), "infinite"),
        (lambda: Empirical([1.0, -2.0]), "negative"),
        (lambda: Discrete([1.0, 2.0], [1.0]), "weights"),
        (lambda: Discrete([1.0, 2.0], [-1.0, 2.0]), "weights"),
        (lambda: Histogram([0.0, 1.0, 1.0], [1, 1]), "edges"),
        (lambda: Histogram([0.0, 1.0, 2.0], [1]), "counts"),
        (lambda: Histogram([0.0, 1.0, 2.0], [0, 0]), "counts"),
        (lambda: Periodic(period=1e-3, duration=2e-3, work=1e-3), "duration"),
        (lambda: Periodic(period=-1e-3, duration=1e-6, work=1e-3), "period"),
        (lambda: Periodic(period=1e-3, duration=1e-6, work=-1.0), "work"),
        (lambda: Mixture([Exponential(mean=1.0)], [0.0]), "weights"),
        (lambda: Sum([Exponential(mean=1.0)]), "two components"),
        (lambda: Exponential(mean=1.0) + float("inf"), "shift"),
    ],
)
def test_bad_parameters_raise_naming_the_problem(factory, name):
    with pytest.raises(ValueError, match=name):
        factory()


@pytest.mark.parametrize("model", MODELS, ids=repr)
def test_isf_inverts_sf_and_ppf_inverts_cdf(model):
    q = np.array([1e-9, 1.3e-4, 0.0117, 0.2137, 0.4987, 0.7913, 0.9893])  # off atom boundaries
    x = model.isf(q)
    # generalised inverse: sf(x) <= q, and just below x the survival exceeds q
    assert np.all(model.sf(x) <= q * (1 + 1e-9) + 1e-15)
    below = x - 1e-9 * np.maximum(np.abs(x), 1e-12)
    assert np.all((model.sf(below) >= q * (1 - 1e-9)) | (below < model.lower))
    np.testing.assert_allclose(model.ppf(1 - q), x, rtol=1e-6)
    np.testing.assert_allclose(model.cdf(x) + model.sf(x), 1.0, atol=1e-12)


@pytest.mark.parametrize("model", MODELS, ids=repr)
def test_sample_mean_agrees_with_mean_within_standard_errors(model):
    draws = model.sample(40_000, rng=7)
    se = draws.std(ddof=1) / math.sqrt(draws.size)
    assert abs(draws.mean() - model.mean()) < 5 * se + 1e-15


@pytest.mark.parametrize("model", MODELS, ids=repr)
def test_samples_follow_the_cdf(model):
    # the empirical CDF at fixed points is binomial: within 5 standard errors of F
    draws = np.sort(model.sample(20_000, rng=3))
    points = model.isf(np.array([0.9, 0.7, 0.5, 0.3, 0.1, 0.01]))
    expected = model.cdf(points)
    observed = np.searchsorted(draws, points, "right") / draws.size
    se = np.sqrt(expected * (1 - expected) / draws.size) + 1e-9
    assert np.all(np.abs(observed - expected) < 5 * se)


def test_sample_is_reproducible_from_rng():
    model = Exponential(mean=1.0)
    assert np.array_equal(model.sample(10, rng=5), model.sample(10, rng=5))
    assert not np.array_equal(model.sample(10, rng=5), model.sample(10, rng=6))


def test_shift_by_work():
    base = Exponential(mean=2.0)
    shifted = base + 3.0
    assert shifted.mean() == pytest.approx(5.0)
    assert shifted.lower == 3.0
    np.testing.assert_allclose(shifted.cdf([3.5, 6.0]), base.cdf([0.5, 3.0]))
    assert (3.0 + base).mean() == pytest.approx(5.0)
    assert ((base + 1.0) + 2.0).shift == 3.0


def test_sum_with_a_discrete_part_is_exact():
    expo, detour = Exponential(mean=1.0), Bernoulli(p=0.25, duration=2.0)
    total = expo + detour
    x = np.array([0.5, 1.5, 2.5, 4.0])
    expected = 0.75 * expo.cdf(x) + 0.25 * expo.cdf(x - 2.0)
    np.testing.assert_allclose(total.cdf(x), expected, rtol=1e-14)
    assert total.mean() == pytest.approx(1.5)


def test_sum_of_two_exponentials_is_gamma():
    total = Sum([Exponential(mean=1.0), Exponential(mean=1.0)])
    x = np.array([0.1, 1.0, 3.0, 8.0])
    np.testing.assert_allclose(total.cdf(x), stats.gamma(2).cdf(x), rtol=1e-9)


def test_mixture_weights_cdf_and_mean():
    mix = Mixture([Uniform(high=1.0), Uniform(high=3.0, low=2.0)], [1, 3])
    assert mix.mean() == pytest.approx(0.25 * 0.5 + 0.75 * 2.5)
    assert mix.cdf(1.5) == pytest.approx(0.25)


def test_bernoulli_is_two_points():
    b = Bernoulli(p=0.2, duration=5.0)
    assert b.cdf(0.0) == pytest.approx(0.8)
    assert b.mean() == pytest.approx(1.0)
    assert b.isf(0.1) == 5.0 and b.isf(0.3) == 0.0
    assert Bernoulli(p=0.0, duration=1.0).mean() == 0.0


def test_empirical_law_of_samples_with_ties():
    e = Empirical([3.0, 1.0, 2.0, 2.0])
    np.testing.assert_allclose(e.cdf([0.5, 1.0, 2.0, 2.5, 3.0]), [0, 0.25, 0.75, 0.75, 1.0])
    np.testing.assert_allclose(e.isf([0.0, 0.2, 0.25, 0.5, 0.8, 1.0]), [3, 3, 2, 2, 1, 1])
    assert e.mean() == pytest.approx(2.0)
    np.testing.assert_array_equal(e.atoms, [1.0, 2.0, 3.0])


def test_histogram_is_piecewise_uniform():
    h = Empirical.from_histogram([0.0, 1.0, 2.0, 4.0], [1, 0, 3])
    assert h.cdf(0.5) == pytest.approx(0.125)
    assert h.cdf(1.5) == pytest.approx(0.25)
    assert h.cdf(3.0) == pytest.approx(0.625)
    assert h.mean() == pytest.approx(0.25 * 0.5 + 0.75 * 3.0)
    assert h.ppf(0.625) == pytest.approx(3.0)


def test_fitted_tail_recovers_the_pareto_index():
    # a Pareto(α) tail is generalized Pareto with shape ξ = 1/α above any threshold
    alpha = 2.5
    samples = Pareto(alpha=alpha, scale=1.0).sample(100_000, rng=11)
    tailed = Empirical(samples).with_tail()
    exceedances = int((samples > tailed.threshold).sum())
    se = (1 + tailed.shape) / math.sqrt(exceedances)  # MLE standard error of ξ
    assert abs(tailed.shape - 1 / alpha) < 4 * se
    # the body is untouched, the tail extends beyond the sample
    assert tailed.cdf(tailed.threshold) == pytest.approx(0.95, abs=1e-4)
    assert tailed.isf(1e-9) > samples.max()


@pytest.mark.parametrize("law", [Pareto(alpha=2.5, scale=1.0), Exponential(mean=1.0),
                                 Uniform(low=0.0, high=1.0)])
def test_fitted_tail_sf_and_isf_are_scipys_genpareto(law):
    # shapes > 0, near 0 and < 0 (a tail that ends): the numpy formulas give scipy's values
    tailed = Empirical(law.sample(4000, rng=3)).with_tail()
    gpd = stats.genpareto(c=tailed.shape, loc=0.0, scale=tailed.scale)
    u, p = tailed.threshold, tailed.sf(tailed.threshold)
    excess = np.concatenate([[0.0], gpd.isf(np.logspace(-300, 0, 200)), [tailed.upper - u,
                                                                          1e300]])
    x = u + excess
    np.testing.assert_array_equal(tailed.sf(x), np.where(x > u, p * gpd.sf(x - u), p))
    levels = np.concatenate([[0.0], p * np.logspace(-300, 0, 200)[:-1]])
    np.testing.assert_array_equal(tailed.isf(levels), u + gpd.isf(levels / p))


def test_fitted_tail_is_fitted_once_per_arguments():
    measured = Empirical(Pareto(alpha=2.5, scale=1.0).sample(2000, rng=4))
    assert measured.with_tail() is measured.with_tail()
    threshold = float(np.quantile(measured.values, 0.9))
    assert measured.with_tail(threshold) is not measured.with_tail()
    assert measured.with_tail(threshold).threshold == threshold


def test_fitted_tail_needs_exceedances():
    with pytest.raises(ValueError, match="tail fit"):
        Empirical(np.arange(30.0)).with_tail()
    with pytest.raises(ValueError, match="exceedances|at least"):
        Empirical(np.arange(1000.0)).with_tail(threshold=990.0)


def pareto_histogram(alpha, size, bins, rng):
    """Counts of a Pareto(α, scale 1) sample in ``bins`` log-spaced bins up to its maximum."""
    samples = Pareto(alpha=alpha, scale=1.0).sample(size, rng=rng)
    edges = np.geomspace(1.0, samples.max() * (1 + 1e-12), bins + 1)
    counts, _ = np.histogram(samples, bins=edges)
    return Empirical.from_histogram(edges, counts), samples


def test_histogram_fitted_tail_recovers_the_pareto_index():
    # the binned maximum-likelihood fit: a Pareto(α) tail has shape ξ = 1/α
    alpha = 2.5
    hist, samples = pareto_histogram(alpha, 100_000, 2000, rng=11)
    tailed = hist.with_tail()
    assert isinstance(tailed, jl.noise.discrete.TailedHistogram)
    exceedances = int((samples > tailed.threshold).sum())
    se = (1 + tailed.shape) / math.sqrt(exceedances)  # MLE standard error of ξ
    assert abs(tailed.shape - 1 / alpha) < 4 * se
    # the threshold is a bin edge with about 5% of the counts above it
    assert tailed.threshold in hist.edges
    assert 0.05 <= float(hist.sf(tailed.threshold)) < 0.05 + 2 * hist.counts.max() / 1e5
    # the body is untouched, the tail extends beyond the top bin
    x = np.linspace(1.0, tailed.threshold, 50)
    np.testing.assert_array_equal(tailed.sf(x), hist.sf(x))
    assert tailed.isf(1e-9) > hist.upper
    assert tailed.mean() == pytest.approx(alpha / (alpha - 1), rel=0.05)


def test_histogram_tail_fit_needs_counts_in_enough_bins():
    with pytest.raises(ValueError, match="needs at least 50 counts in at least 5 occupied bins"):
        Empirical.from_histogram([0.0, 1.0, 2.0, 3.0], [500, 300, 200]).with_tail()
    hist = Empirical.from_histogram(np.arange(11.0), np.full(10, 100))
    with pytest.raises(ValueError, match="threshold must be one of the bin edges"):
        hist.with_tail(threshold=2.5)
    with pytest.raises(ValueError, match="threshold 8 leaves 200 counts in 2 bins"):
        hist.with_tail(threshold=8.0)
    with pytest.raises(ValueError, match="min_bins must be >= 3"):
        hist.with_tail(min_bins=1)
    assert hist.with_tail(threshold=5.0).threshold == 5.0


def test_histogram_and_empirical_share_the_sample_limit():
    # one sample per bin: the top bin is the largest sample, so the criterion agrees
    samples = np.arange(1.0, 1001.0)
    emp = Empirical(samples)
    hist = Empirical.from_histogram(np.arange(0.5, 1001.0), np.ones(1000))
    assert emp.top_mass == hist.top_mass == 1e-3
    for n in (1, 10, 105, 106, 1000, 10**6):
        assert emp.sample_limited(n) == hist.sample_limited(n)
    assert not hist.sample_limited(105) and hist.sample_limited(106)
    # a coarser histogram reaches its top bin sooner: its top bin holds 10 samples
    coarse = Empirical.from_histogram(np.arange(0.5, 1001.0, 10.0), np.full(100, 10))
    assert coarse.sample_limited(11) and not coarse.sample_limited(10)


def brute_force_periodic_noise(period, duration, work, phases):
    """Walk one window of compute through the detours [k·period, k·period + duration)."""
    out = np.empty(phases.size)
    for i, phase in enumerate(phases):
        t, done = phase, 0.0
        while True:
            k = math.floor(t / period + 1e-9)  # t may sit a rounding error below k·period
            in_detour_until = k * period + duration
            if t < in_detour_until:
                t = in_detour_until
            available = (k + 1) * period - t
            if done + available >= work:
                t += work - done
                break
            done += available
            t += available
        out[i] = round(t - phase - work, 15)  # drop rounding noise of the walk
    return out


@pytest.mark.parametrize("work", [1e-3, 4e-3 - 2.5e-6, 10.3e-3, 0.5e-6])
def test_periodic_matches_a_walk_through_the_ticks(work):
    period, duration = 4e-3, 2.5e-6
    model = Periodic(period=period, duration=duration, work=work)
    phases = np.random.default_rng(2).uniform(0, period, 20_000)
    walked = brute_force_periodic_noise(period, duration, work, phases)
    drawn = model.sample(20_000, rng=4)
    assert stats.ks_2samp(np.round(walked, 13), np.round(drawn, 13)).pvalue > 1e-4
    se = walked.std(ddof=1) / math.sqrt(walked.size)
    assert abs(walked.mean() - model.mean()) < 5 * se + 1e-15
    assert model.upper <= (math.ceil(work / (period - duration)) + 1) * duration + 1e-18


def test_periodic_upper_end_when_work_fills_whole_periods():
    # w = 2·(period − duration): always exactly 2 detours from a compute start
    tick = Periodic(period=4e-3, duration=1e-3, work=6e-3)
    assert tick.upper == pytest.approx(2e-3)
    assert tick.isf(0.0) == pytest.approx(2e-3)


def test_periodic_with_work():
    tick = Periodic(period=4e-3, duration=2.5e-6, work=1e-3)
    longer = tick.with_work(2e-3)
    assert longer.work == 2e-3 and longer.period == tick.period
    assert "Periodic(period=0.004" in repr(tick)


def test_describe_names_the_model():
    assert repr(Exponential(mean=1e-5)) == "Exponential(mean=1e-05)"
    assert "Pareto(alpha=2.5" in (Pareto(alpha=2.5, scale=1e-6) + 1e-3).describe()
    assert jl.noise.NoiseModel in type(Exponential(mean=1.0)).__mro__


@pytest.mark.slow
def test_sum_with_a_kinked_part_is_precise_and_quiet():
    # Uniform(0, h) + Exponential(m): closed-form survival function; the Uniform's upper
    # end puts a kink into the convolution integrand, which must not cost precision or
    # raise quadrature warnings (the suite turns warnings into errors)
    from scipy import integrate

    h, m = 1e-5, 1e-5
    law = Uniform(high=h) + Exponential(mean=m)

    def exact_sf(x):
        x = np.asarray(x, dtype=float)
        return np.where(x >= h, m / h * np.exp(-x / m) * np.expm1(h / m),
                        1 - x / h + m / h * -np.expm1(-x / m))

    x = np.array([2e-6, 1e-5, 5e-5, 2e-4, 4e-4])  # down to sf ≈ 1e-17
    np.testing.assert_allclose(law.sf(x), exact_sf(x), rtol=1e-10)
    n = 1000
    expected = integrate.quad(lambda t: -np.expm1(n * np.log1p(-exact_sf(t))), 0, 1e-3,
                              points=[h], limit=200, epsabs=1e-18)[0]
    assert jl.max_of_n(law, n=n)["mean"].item() == pytest.approx(expected, rel=1e-8)
