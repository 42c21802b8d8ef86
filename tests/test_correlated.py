"""Max-of-N of a correlated vector (Gaussian copula): closed forms, Monte Carlo, bad input."""

import math

import numpy as np
import pytest
from scipy import special, stats

import jitterlab as jl
from jitterlab.analytic.correlated import GaussianCopulaMax, gaussian_rho
from jitterlab.compare.validate import MaxOfN
from jitterlab.noise import NoiseModel

NOISE = jl.noise.Exponential(mean=1e-5) + 3e-4


class Normal(NoiseModel):
    """N(μ, σ²) far from zero (P(X < 0) = Φ(−μ/σ) ≈ 10⁻²³): closed forms of normal maxima."""

    def __init__(self, mu=1.0, sigma=0.1):
        self.mu, self.sigma = mu, sigma

    def cdf(self, x):
        return special.ndtr((np.asarray(x, dtype=float) - self.mu) / self.sigma)

    def sf(self, x):
        return special.ndtr((self.mu - np.asarray(x, dtype=float)) / self.sigma)

    def isf(self, q):
        return self.mu - self.sigma * special.ndtri(np.asarray(q, dtype=float))

    def mean(self):
        return self.mu


# --------------------------------------------------------------------------------------
# closed forms
# --------------------------------------------------------------------------------------
def test_independent_case_is_max_of_n():
    law = GaussianCopulaMax(NOISE, n=64, rho=0.0)
    reference = MaxOfN(NOISE, n=64)
    x = 3e-4 + np.array([1e-6, 2e-5, 5e-5, 1e-4])
    np.testing.assert_allclose(law.cdf(x), reference.cdf(x), rtol=1e-13)
    np.testing.assert_allclose(law.sf(x), reference.sf(x), rtol=1e-13)
    harmonic = sum(1 / k for k in range(1, 65))
    assert law.mean() == pytest.approx(3e-4 + 1e-5 * harmonic, rel=1e-10)


def test_fully_correlated_case_is_the_single_law():
    law = GaussianCopulaMax(NOISE, n=1000, rho=1.0)
    x = 3e-4 + np.array([1e-6, 2e-5, 5e-5])
    np.testing.assert_allclose(law.cdf(x), NOISE.cdf(x), rtol=1e-13)
    assert law.mean() == pytest.approx(3.1e-4, rel=1e-12)
    # two laws, every process the same quantile: P(max ≤ x) = min_k F_k(x)
    slower = jl.noise.Exponential(mean=3e-5) + 3e-4
    pair = GaussianCopulaMax([NOISE, slower], n=2, rho=1.0)
    np.testing.assert_allclose(pair.cdf(x), np.minimum(NOISE.cdf(x), slower.cdf(x)))


@pytest.mark.parametrize("rho", [0.1, 0.5, 0.9, 0.999])
def test_normal_pair_closed_forms(rho):
    normal = Normal()
    law = GaussianCopulaMax(normal, n=2, rho=rho)
    # P(Z1 ≤ 0, Z2 ≤ 0) = 1/4 + asin(ρ)/(2π); E[max(X1, X2)] = μ + σ·√((1 − ρ)/π)
    assert float(law.cdf(1.0)) == pytest.approx(0.25 + math.asin(rho) / (2 * math.pi),
                                                abs=1e-12)
    assert law.mean() == pytest.approx(1.0 + 0.1 * math.sqrt((1 - rho) / math.pi), abs=1e-9)
    x = np.array([0.9, 1.05, 1.2])
    bivariate = stats.multivariate_normal(mean=[0, 0], cov=[[1, rho], [rho, 1]])
    expected = [bivariate.cdf([z, z]) for z in (x - 1.0) / 0.1]
    np.testing.assert_allclose(law.cdf(x), expected, atol=1e-6)  # scipy's own accuracy
    np.testing.assert_allclose(law.cdf(x) + law.sf(x), 1.0, rtol=1e-13)


def test_normal_triple_mean_is_the_independent_mean_scaled():
    # Z_i = √ρ V + √(1 − ρ) E_i: max Z = √ρ V + √(1 − ρ) max E; E[max of 3] = 3/(2√π)
    rho = 0.4
    law = GaussianCopulaMax(Normal(), n=3, rho=rho)
    assert law.mean() == pytest.approx(1.0 + 0.1 * math.sqrt(1 - rho) * 1.5 / math.sqrt(math.pi),
                                       abs=1e-9)


def test_the_copula_is_a_max_of_n_law_that_compare_accepts():
    law = GaussianCopulaMax(NOISE, n=8, rho=0.4)
    assert isinstance(law, MaxOfN) and law.params["rho"] == 0.4 and law.params["n"] == 8
    assert math.isnan(law.spearman) and not law.rho_clipped
    theta = law.sample(3000, rng=3)
    result = jl.validate.compare(law, theta, quantiles=[0.5, 0.9])
    # the measured mean is the law's own: the gap is within 4 standard errors
    assert abs(float(result["mean_gap"])) < 4 * float(result["mean_measured_se"])
    assert float(result["ks_pvalue"]) > 1e-4


def test_mean_falls_and_quantiles_invert_as_the_correlation_grows():
    means = [GaussianCopulaMax(NOISE, n=256, rho=rho).mean() for rho in (0, 0.2, 0.6, 1)]
    assert all(a > b for a, b in zip(means, means[1:], strict=False))
    law = GaussianCopulaMax(NOISE, n=256, rho=0.3)
    levels = np.array([1e-6, 1e-3, 0.1, 0.5, 0.9])
    np.testing.assert_allclose(law.sf(law.isf(levels)), levels, rtol=1e-8)
    np.testing.assert_allclose(law.ppf([0.5]), law.isf([0.5]))


def test_gaussian_rho_inverts_spearman_of_the_normal_copula():
    for rho in (-0.5, 0.0, 0.3, 0.9, 1.0):
        spearman = 6 / math.pi * math.asin(rho / 2)
        assert gaussian_rho(spearman) == pytest.approx(rho, abs=1e-14)
    np.testing.assert_allclose(gaussian_rho([0.0, 1.0]), [0.0, 1.0], atol=1e-15)


# --------------------------------------------------------------------------------------
# Monte Carlo
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("laws", "n", "rho"), [
    (NOISE, 16, 0.5),
    ([NOISE, jl.noise.Exponential(mean=3e-5) + 3e-4, jl.noise.Empirical([3e-4, 3.2e-4])],
     5, 0.7),
])
def test_monte_carlo_agrees_with_the_integral(laws, n, rho):
    law = GaussianCopulaMax(laws, n=n, rho=rho)
    draws = law.sample(40000, rng=7)
    se = draws.std(ddof=1) / math.sqrt(draws.size)
    assert abs(draws.mean() - law.mean()) < 4 * se
    for x in law.ppf([0.1, 0.5, 0.9]):
        p = float(law.cdf(x))
        assert abs(np.mean(draws <= x) - p) < 4 * math.sqrt(p * (1 - p) / draws.size)
    np.testing.assert_array_equal(law.sample((3, 4), rng=1), law.sample((3, 4), rng=1))
    assert law.sample((3, 4), rng=1).shape == (3, 4)


def test_from_samples_recovers_the_copula_of_correlated_data():
    rho, m = 0.6, 20000
    rng = np.random.default_rng(11)
    z = math.sqrt(rho) * rng.normal(size=m) + math.sqrt(1 - rho) * rng.normal(size=(2, m))
    samples = 3e-4 + 1e-5 * np.exp(z)  # lognormal margins: the copula is still Gaussian
    law = GaussianCopulaMax.from_samples(samples)
    # SE of Spearman ≈ √((1 + ρ_s²/2)/(m − 3)) (Bonett & Wright); ρ = 2 sin(πρ_s/6)
    spearman = 6 / math.pi * math.asin(rho / 2)
    se = math.sqrt((1 + spearman ** 2 / 2) / (m - 3))
    assert abs(law.spearman - spearman) < 4 * se
    assert law.n == 2 and not law.rho_clipped
    paired_max = samples.max(axis=0)
    se_mean = paired_max.std(ddof=1) / math.sqrt(m)
    assert abs(law.mean() - paired_max.mean()) < 4 * math.hypot(se_mean, se_mean)
    assert GaussianCopulaMax.from_samples(samples, n=64).n == 64
    negative = np.vstack([samples[0], -samples[0]])
    clipped = GaussianCopulaMax.from_samples(negative - negative.min() + 1e-6)
    assert clipped.rho == 0.0 and clipped.rho_clipped


# --------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("call", "error", "pattern"), [
    (lambda: GaussianCopulaMax(NOISE, n=4, rho=-0.1), ValueError, r"\brho\b.*-0\.1"),
    (lambda: GaussianCopulaMax(NOISE, n=4, rho=1.5), ValueError, r"\brho\b"),
    (lambda: GaussianCopulaMax(NOISE, n=4, rho=math.nan), ValueError, r"\brho\b"),
    (lambda: GaussianCopulaMax(NOISE, n=4, rho="0.5"), TypeError, r"\brho\b"),
    (lambda: GaussianCopulaMax(NOISE, n=4, rho=True), TypeError, r"\brho\b"),
    (lambda: GaussianCopulaMax(NOISE, n=0, rho=0.5), ValueError, r"\bn\b"),
    (lambda: GaussianCopulaMax("exp", n=4, rho=0.5), TypeError, "dist_or_list"),
    (lambda: GaussianCopulaMax(NOISE, n=4, rho=0.5).sample(-1, rng=1), ValueError, "size"),
    (lambda: GaussianCopulaMax(NOISE, n=4, rho=0.5).isf([2.0]), ValueError, r"\bq\b"),
    (lambda: GaussianCopulaMax.from_samples(np.ones((1, 10))), ValueError, "2 ranks"),
    (lambda: gaussian_rho(1.5), ValueError, "spearman"),
])
def test_bad_input(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


def test_common_mode_component_is_a_sum_with_the_max_of_the_private_noise():
    # δ_i = c + ε_i, c shared by the N ranks of an iteration: max_i = c + max_i ε_i
    common = jl.noise.Bernoulli(p=0.2, duration=2.7e-5)
    law = common + MaxOfN(NOISE, n=8)
    harmonic = sum(1 / k for k in range(1, 9))
    assert law.mean() == pytest.approx(0.2 * 2.7e-5 + 3e-4 + 1e-5 * harmonic, rel=1e-9)
    x = 3e-4 + np.array([1e-5, 3e-5, 6e-5])
    private = MaxOfN(NOISE, n=8)
    np.testing.assert_allclose(law.cdf(x), 0.8 * private.cdf(x) + 0.2 * private.cdf(x - 2.7e-5),
                               rtol=1e-9)
    # Monte Carlo of the vector itself
    rng = np.random.default_rng(5)
    m = 40000
    vector = common.sample((m, 1), rng=rng) + NOISE.sample((m, 8), rng=rng)
    maxima = vector.max(axis=1)
    for point, p in zip(x, law.cdf(x), strict=True):
        assert abs(np.mean(maxima <= point) - p) < 4 * math.sqrt(p * (1 - p) / m)
