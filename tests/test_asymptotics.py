"""The large-N forms of E[max of N] against the exact max-of-N.

Each tolerance is the size of the next term of the expansion, derived in the test's
docstring, never a hand-tuned number.
"""

import math

import numpy as np
import pytest

import jitterlab as jl
from jitterlab.analytic.asymptotics import asymptotic_max_mean

N_VALUES = np.array([1, 10, 100, 10**3, 10**4, 10**6, 10**9])
#: relative rounding slack of the exact method (quadrature at epsrel ~1e-10 and below)
EXACT_RTOL = 1e-12


def exact_mean(dist, n):
    return jl.max_of_n(dist, n=n, method="exact")["mean"].values


def test_exponential_gumbel_error_below_one_over_2n():
    """E_exact = m·H_N and 0 < H_N − ln N − γ < 1/(2N), so 0 < exact − asym < m/(2N)."""
    mean = 20e-6
    dist = jl.noise.Exponential(mean=mean)
    exact = exact_mean(dist, N_VALUES)
    asym = asymptotic_max_mean(dist, N_VALUES)
    diff = exact - asym
    slack = EXACT_RTOL * exact
    assert np.all(diff > -slack)
    assert np.all(diff <= mean / (2 * N_VALUES) + slack)
    relative = np.abs(diff) / exact
    assert np.all(np.diff(relative) < 0)  # the approximation improves with N


def test_exponential_value_by_hand():
    """m·(ln N + γ) at N = 1000 for m = 10 µs."""
    value = asymptotic_max_mean(jl.noise.Exponential(mean=10e-6), 1000)
    assert value.shape == ()
    assert float(value) == pytest.approx(10e-6 * (math.log(1000) + 0.5772156649015329),
                                         rel=1e-15)


@pytest.mark.parametrize("alpha", [1.2, 1.5, 2.5, 4.0])
def test_pareto_frechet_ratio_tends_to_one(alpha):
    """exact/asym = Γ(N+1)/(Γ(N+1−1/α)·N^{1/α}) = 1 + c/N + O(N^-2), c = (1/α)(1−1/α)/2.

    The ratio exceeds one and its excess stays within 1.25·c/N for every N >= 1 (the
    O(N^-2) term is at most a quarter of c/N already at N = 1 for these α).
    """
    dist = jl.noise.Pareto(alpha=alpha, scale=12e-6)
    ratio = exact_mean(dist, N_VALUES) / asymptotic_max_mean(dist, N_VALUES)
    c = (1 / alpha) * (1 - 1 / alpha) / 2
    assert np.all(ratio - 1 > -EXACT_RTOL)
    assert np.all(ratio - 1 <= 1.25 * c / N_VALUES + EXACT_RTOL)


def test_pareto_grows_as_power_law():
    dist = jl.noise.Pareto(alpha=2.0, scale=1e-5)
    values = asymptotic_max_mean(dist, [1e4, 1e6])
    assert values[1] / values[0] == pytest.approx(10.0, rel=1e-14)  # (10^2)^{1/2}
    assert values[0] == pytest.approx(1e-5 * math.sqrt(math.pi) * 100, rel=1e-14)


@pytest.mark.parametrize("alpha", [0.5, 1.0])
def test_pareto_infinite_mean(alpha):
    dist = jl.noise.Pareto(alpha=alpha, scale=1e-5)
    assert np.all(np.isinf(asymptotic_max_mean(dist, [1, 10, 1000])))
    assert np.isinf(exact_mean(dist, 10)).all()


def test_bernoulli_saturates_at_duration():
    """exact = d·(1 − (1 − p)^N), so asym − exact = d·(1 − p)^N exactly."""
    p, duration = 0.01, 2e-3
    dist = jl.noise.Bernoulli(p=p, duration=duration)
    asym = asymptotic_max_mean(dist, N_VALUES)
    np.testing.assert_array_equal(asym, duration)
    np.testing.assert_allclose(asym - exact_mean(dist, N_VALUES), duration * (1 - p) ** N_VALUES,
                               rtol=1e-12, atol=4 * np.finfo(float).eps * duration)


def test_bernoulli_without_detours_is_zero():
    assert float(asymptotic_max_mean(jl.noise.Bernoulli(p=0.0, duration=1e-3), 100)) == 0.0


def test_uniform_error_is_width_over_n_squared():
    """exact = high − (high − low)/(N + 1), so exact − asym = (high − low)/(N(N + 1))."""
    low, high = 5e-6, 40e-6
    dist = jl.noise.Uniform(high=high, low=low)
    n = N_VALUES.astype(float)
    closed = high - (high - low) / (n + 1)
    np.testing.assert_allclose(closed - asymptotic_max_mean(dist, n), (high - low) / (n * (n + 1)),
                               rtol=1e-6, atol=4 * np.finfo(float).eps * high)
    np.testing.assert_allclose(exact_mean(dist, N_VALUES), closed, rtol=1e-12)


def test_shift_adds_the_work():
    work = 300e-6
    base = jl.noise.Exponential(mean=20e-6)
    shifted = base + work
    assert isinstance(shifted, jl.noise.Shifted)
    np.testing.assert_allclose(asymptotic_max_mean(shifted, N_VALUES),
                               asymptotic_max_mean(base, N_VALUES) + work, rtol=1e-15)
    nested = jl.noise.Shifted(jl.noise.Pareto(alpha=2.5, scale=1e-5) + 1e-4, 2e-4)
    assert float(asymptotic_max_mean(nested, 10)) == pytest.approx(
        float(asymptotic_max_mean(jl.noise.Pareto(alpha=2.5, scale=1e-5), 10)) + 3e-4)
    exact = exact_mean(shifted, N_VALUES)
    assert np.all(np.abs(exact - asymptotic_max_mean(shifted, N_VALUES))
                  <= 20e-6 / (2 * N_VALUES) + EXACT_RTOL * exact)


def test_shape_follows_n():
    dist = jl.noise.Exponential(mean=1e-5)
    assert asymptotic_max_mean(dist, 5).shape == ()
    assert asymptotic_max_mean(dist, [[1, 2], [3, 4]]).shape == (2, 2)
    assert asymptotic_max_mean(jl.noise.Bernoulli(p=0.1, duration=1e-3), [1, 2, 3]).shape == (3,)


@pytest.mark.parametrize("dist", [
    jl.noise.Empirical([1e-6, 2e-6, 3e-6]),
    jl.noise.Periodic(period=4e-3, duration=2.5e-6, work=1e-3),
    jl.noise.Exponential(mean=1e-5) + jl.noise.Bernoulli(p=0.1, duration=1e-4),
    [jl.noise.Exponential(mean=1e-5)],
    "Exponential",
], ids=["Empirical", "Periodic", "Sum", "list", "str"])
def test_unsupported_type_raises_naming_it(dist):
    with pytest.raises(ValueError, match=type(dist).__name__):
        asymptotic_max_mean(dist, 10)


@pytest.mark.parametrize("n", [0, 0.5, -3, math.nan, math.inf, [], [1, 0], "many"])
def test_bad_n_raises(n):
    with pytest.raises(ValueError, match="n must"):
        asymptotic_max_mean(jl.noise.Exponential(mean=1e-5), n)
