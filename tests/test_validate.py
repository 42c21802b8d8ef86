"""Predicted against measured (KS, quantile gaps, Theorem 1) and anomalous ranks."""

import math

import numpy as np
import pytest
import xarray as xr
from scipy import stats

import jitterlab as jl
from jitterlab.compare.validate import (
    MaxOfN,
    anomaly_detection_power,
    check_independence,
    compare,
    find_anomalies,
    robust_z_scores,
)

WORK = 3e-4
NOISE = jl.noise.Exponential(mean=1e-5)
TAU = 5e-6


# --------------------------------------------------------------------------------------
# the law of the maximum
# --------------------------------------------------------------------------------------
def test_max_of_n_law_matches_max_of_n():
    law = MaxOfN(NOISE + WORK, n=31)
    ds = jl.max_of_n(NOISE + WORK, n=31, quantiles=[0.5, 0.99])
    assert law.mean() == pytest.approx(float(ds["mean"][0]), rel=1e-12)
    np.testing.assert_allclose(law.ppf([0.5, 0.99]), ds["quantiles"][0], rtol=1e-12)
    x = np.array([WORK + 2e-5, WORK + 5e-5])
    np.testing.assert_allclose(law.cdf(x), (1 - np.exp(-(x - WORK) / 1e-5)) ** 31, rtol=1e-12)
    np.testing.assert_allclose(law.cdf(x) + law.sf(x), 1.0, rtol=1e-14)
    assert law.lower == WORK and law.n == 31
    assert "n=31" in law.describe()


def test_max_of_n_law_of_an_empirical_is_discrete():
    sample = jl.noise.Empirical([1.0, 2.0, 3.0])
    law = MaxOfN(sample, n=2)
    np.testing.assert_array_equal(law.atoms, [1.0, 2.0, 3.0])
    np.testing.assert_allclose(law.cdf([1.0, 2.0, 3.0]), [1 / 9, 4 / 9, 1.0])
    assert law.mean() == pytest.approx((1 * 1 + 2 * 3 + 3 * 5) / 9)


# --------------------------------------------------------------------------------------
# compare
# --------------------------------------------------------------------------------------
def test_measured_from_the_predicted_law_agrees():
    law = MaxOfN(NOISE + WORK, n=31)
    samples = law.sample(4000, rng=7)
    result = compare(law, samples)
    assert result["n_samples"] == 4000
    assert float(result["ks_pvalue"]) > 1e-3
    assert float(result["ks_statistic"]) < 1.63 / math.sqrt(4000)  # 1 % critical value
    se = float(result["mean_measured_se"])
    assert abs(float(result["mean_gap"])) < 4 * se
    assert list(result["quantile"].values) == [0.5, 0.9, 0.99]
    gap = result["quantile_gap"].values
    assert np.all(np.abs(gap[:2]) < 6 * se)  # body quantiles sit within a few mean SEs
    assert result["mean_predicted"] == pytest.approx(law.mean())
    assert "theorem1_lower" not in result
    assert result.attrs["predicted"] == law.describe()


def test_theorem1_interval():
    n = 31
    law = MaxOfN(NOISE + WORK, n=n)
    depth = 4  # log2((31 + 1) / 2)
    rng = np.random.default_rng(3)
    maxima = law.sample(3000, rng=rng)
    # θ = max + a latency between 0 and 2τ·D: inside the interval
    inside = compare(law, maxima + rng.uniform(0, 2 * TAU * depth, maxima.size), tau=TAU, n=n)
    assert bool(inside["inside_theorem1"])
    assert inside.attrs["depth"] == depth
    assert float(inside["theorem1_upper"] - inside["theorem1_lower"]) == pytest.approx(
        2 * TAU * depth)
    assert float(inside["mean_gap"]) == pytest.approx(TAU * depth, abs=4e-6)
    # a latency beyond 2τ·D, or θ below E[max]: outside
    above = compare(law, maxima + 3 * TAU * depth, tau=TAU, n=n)
    below = compare(law, maxima - 2e-5, tau=TAU, n=n)
    assert not bool(above["inside_theorem1"]) and not bool(below["inside_theorem1"])
    assert float(above["ks_pvalue"]) < 1e-6


def test_confidence_interval_of_the_measured_mean():
    law = MaxOfN(NOISE + WORK, n=31)
    samples = law.sample((3, 50), rng=11)
    result = compare(law, samples, tau=TAU, n=31, confidence=0.9)
    interval = result["mean_measured_ci"]
    assert interval.dims == ("rank", "ci_bound")
    assert interval["ci_bound"].values.tolist() == ["lower", "upper"]
    assert interval.attrs["units"] == "s" and interval.attrs["confidence"] == 0.9
    assert result.attrs["confidence"] == 0.9
    for rank in range(3):
        mean, se = samples[rank].mean(), samples[rank].std(ddof=1) / math.sqrt(50)
        expected = stats.t.interval(0.9, df=49, loc=mean, scale=se)
        np.testing.assert_allclose(interval.values[rank], expected, rtol=1e-12)
    # the default is 95 %, and the interval is there without the Theorem 1 check too
    plain = compare(law, samples[0])
    assert plain["mean_measured_ci"].attrs["confidence"] == 0.95
    assert plain["mean_measured_ci"].dims == ("ci_bound",)


def test_theorem1_verdict_accounts_for_the_sampling_error():
    law = MaxOfN(NOISE + WORK, n=31)
    lower = law.mean()
    samples = law.sample(400, rng=4)
    se = samples.std(ddof=1) / math.sqrt(samples.size)
    shifted = samples - samples.mean() + lower  # sample mean exactly on E[max]
    # one standard error below the lower bound: inside at 95 %, the old check said outside
    just_below = compare(law, shifted - se, tau=TAU, n=31)
    assert str(just_below["theorem1_verdict"].values) == "inside"
    assert bool(just_below["inside_theorem1"])
    far_below = compare(law, shifted - 5 * se, tau=TAU, n=31)
    assert str(far_below["theorem1_verdict"].values) == "below"
    assert not bool(far_below["inside_theorem1"])
    upper = lower + 2 * TAU * 4
    far_above = compare(law, shifted + (upper - lower) + 5 * se, tau=TAU, n=31)
    assert str(far_above["theorem1_verdict"].values) == "above"
    # a higher confidence widens the interval: 3 SE below is outside at 95 %, not at 99.9 %
    three = shifted - 3 * se
    assert str(compare(law, three, tau=TAU, n=31)["theorem1_verdict"].values) == "below"
    assert str(compare(law, three, tau=TAU, n=31, confidence=0.999)
               ["theorem1_verdict"].values) == "inside"
    # one sample has no standard error: no verdict
    single = compare(law, [lower], tau=TAU, n=31)
    assert str(single["theorem1_verdict"].values) == "undetermined"
    assert not bool(single["inside_theorem1"])
    assert np.isnan(single["mean_measured_ci"].values).all()


#: seeds and samples per seed of the false-alarm test. The skewness γ ≈ 1.1 of the maximum
#: moves the one-sided rate of the t interval by about γ(2z² + 1)φ(z)/(6√m) (Edgeworth,
#: z = 1.96): 0.0015 for m = 4000, under half the binomial standard error of the rate over
#: 2000 seeds (0.0035 at 2.5 %)
ALARM_SEEDS, ALARM_SAMPLES = 2000, 4000


@pytest.mark.parametrize(("tau", "expected"), [(TAU, 0.025), (0.0, 0.05)])
def test_false_alarm_rate_matches_the_confidence(tau, expected):
    """θ drawn from the lower-bound law itself: E[θ] = E[max], inside Theorem 1.

    A false alarm is a verdict other than "inside": the two-sided 95 % interval of the
    mean misses [E[max], E[max] + 2τD]. With τ = 5 µs the upper end lies 40 µs away,
    about 70 standard errors, so only the lower tail of the interval can miss: the rate
    is (1 − 0.95)/2 = 2.5 %. With τ = 0 the interval is the point E[max] and both tails
    count: 5 %. The old check (sample mean inside, no error) alarmed in half the seeds.
    """
    law = MaxOfN(NOISE + WORK, n=31)
    theta = np.stack([law.sample(ALARM_SAMPLES, rng=seed) for seed in range(ALARM_SEEDS)])
    result = compare(law, theta, tau=tau, n=31, confidence=0.95)
    alarms = (result["theorem1_verdict"] != "inside").values
    rate = alarms.mean()
    tolerance = 4 * math.sqrt(expected * (1 - expected) / ALARM_SEEDS)  # 4 binomial SE
    assert abs(rate - expected) < tolerance, f"false-alarm rate {rate} vs {expected}"
    np.testing.assert_array_equal(~alarms, result["inside_theorem1"].values)
    if tau > 0:
        assert set(result["theorem1_verdict"].values.tolist()) <= {"inside", "below"}


def test_theorem1_depth_as_in_theorem1_bounds():
    """N = 32 is not 2^k − 1: the complete tree has depth 5, the paper's log2(33/2) ≈ 4.04."""
    law = MaxOfN(NOISE + WORK, n=32)
    samples = law.sample(500, rng=8)
    for depth in ("tree", "paper"):
        result = compare(law, samples, tau=TAU, n=32, depth=depth)
        bounds = jl.theorem1_bounds(NOISE + WORK, n=32, tau=TAU, depth=depth)
        assert float(result["theorem1_upper"] - result["theorem1_lower"]) == pytest.approx(
            float(bounds["round_trip"][0]), rel=1e-12)
        assert result.attrs["depth"] == pytest.approx(float(bounds["depth"][0]))
    assert compare(law, samples, tau=TAU, n=32).attrs["depth"] == 5
    for tau in (TAU, None):
        with pytest.raises(ValueError, match="depth must be 'tree' or 'paper'"):
            compare(law, samples, tau=tau, n=32, depth="log")


def test_predicted_dataset_from_max_of_n():
    ds = jl.max_of_n(NOISE + WORK, n=[7, 31], quantiles=[0.5, 0.9, 0.99])
    samples = MaxOfN(NOISE + WORK, n=31).sample(2000, rng=2)
    result = compare(ds, samples, tau=TAU, n=31)
    assert math.isnan(float(result["ks_statistic"]))
    assert float(result["mean_predicted"]) == pytest.approx(float(ds["mean"].sel(n=31)))
    np.testing.assert_allclose(result["quantile_predicted"], ds["quantiles"].sel(n=31))
    assert bool(result["inside_theorem1"])
    subset = compare(ds, samples, n=31, quantiles=[0.99])
    assert list(subset["quantile"].values) == [0.99]
    with pytest.raises(ValueError, match="choose one with n="):
        compare(ds, samples)
    with pytest.raises(ValueError, match="no n = 8"):
        compare(ds, samples, n=8)
    with pytest.raises(ValueError, match=r"no quantile levels \[0.75\]"):
        compare(ds, samples, n=31, quantiles=[0.75])
    single = compare(ds.sel(n=[31]), samples, tau=TAU)  # n taken from the Dataset
    assert single.attrs["n"] == 31 and bool(single["inside_theorem1"])


def test_per_rank_measurements():
    law = MaxOfN(NOISE + WORK, n=31)
    rng = np.random.default_rng(5)
    theta = law.sample((8, 1500), rng=rng)
    theta[5] += 3e-5  # one slow rank
    theta[2, 1000:] = np.nan  # ragged: rank 2 has fewer samples
    measured = xr.DataArray(theta, dims=("rank", "iteration"),
                            coords={"rank": np.arange(8), "node": ("rank", np.arange(8) // 4)})
    result = compare(law, measured, tau=TAU, n=31)
    assert result["mean_gap"].dims == ("rank",)
    assert result["quantile_gap"].dims == ("rank", "quantile")
    assert "node" in result.coords
    assert int(result["n_samples"].sel(rank=2)) == 1000
    p = result["ks_pvalue"].values
    assert p[5] < 1e-10 and np.all(np.delete(p, 5) > 1e-4)
    assert float(result["mean_gap"].sel(rank=5)) == pytest.approx(3e-5, abs=3e-6)
    # a plain 2-D array is (rank, sample); an Empirical is one set of samples
    as_array = compare(law, np.nan_to_num(theta[:3, :1000]))
    assert as_array.sizes["rank"] == 3
    one = compare(law, jl.noise.Empirical(theta[0]))
    np.testing.assert_allclose(one["mean_measured"], result["mean_measured"].sel(rank=0))
    # a Dataset needs the variable when it holds several
    dataset = xr.Dataset({"theta": measured, "other": measured})
    with pytest.raises(ValueError, match="choose one with variable="):
        compare(law, dataset)
    assert compare(law, dataset, variable="theta").sizes["rank"] == 8


def test_compare_round_trips_through_netcdf(tmp_path):
    law = MaxOfN(NOISE + WORK, n=15)
    result = compare(law, law.sample((3, 200), rng=1), tau=TAU, n=15)
    path = tmp_path / "compare.nc"
    result.to_netcdf(path)
    with xr.open_dataset(path) as back:
        xr.testing.assert_allclose(back.load(), result)


def test_compare_bad_input():
    law = MaxOfN(NOISE + WORK, n=3)
    with pytest.raises(TypeError, match="predicted must be a noise model"):
        compare([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="needs n"):
        compare(law, [1e-3], tau=TAU)
    with pytest.raises(ValueError, match="no measured samples"):
        compare(law, [math.nan])
    with pytest.raises(ValueError, match="1-D .* or 2-D"):
        compare(law, np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="not a Bernoulli law"):
        compare(law, jl.noise.Bernoulli(0.1, 1e-5))
    for confidence in (0.0, 1.0, 1.5, -0.1, math.nan):
        with pytest.raises(ValueError, match="confidence must lie strictly between 0 and 1"):
            compare(law, [1e-3, 2e-3], confidence=confidence)
    for confidence in ("0.95", True, None):
        with pytest.raises(TypeError, match="confidence must be a number"):
            compare(law, [1e-3, 2e-3], confidence=confidence)


# --------------------------------------------------------------------------------------
# anomalous ranks (Garg & De Fig. 10: all 8 processes of one node slow)
# --------------------------------------------------------------------------------------
def cluster(seed, slow_node=None, n_nodes=8, per_node=8, samples=2000):
    rng = np.random.default_rng(seed)
    ranks = n_nodes * per_node
    compute = WORK + rng.exponential(1e-5, (ranks, samples))
    if slow_node is not None:
        members = slice(slow_node * per_node, (slow_node + 1) * per_node)
        compute[members] += rng.exponential(2e-5, (per_node, samples))  # 3 × the noise
    return xr.Dataset({"compute": (("rank", "sample"), compute, {"units": "s"})},
                      coords={"rank": np.arange(ranks),
                              "node": ("rank", np.repeat(np.arange(n_nodes), per_node))})


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_slow_node_is_found(seed):
    ds = cluster(seed, slow_node=5)
    anomalies = find_anomalies(ds)
    assert anomalies.index.tolist() == list(range(40, 48))
    assert set(anomalies["node"]) == {5}
    assert anomalies.attrs["anomalous_nodes"] == [5]
    assert anomalies["node_anomalous"].all()
    assert (anomalies["node_flagged"] == 8).all() and (anomalies["node_size"] == 8).all()
    assert (anomalies["z_score"] > 5).all() and (anomalies["ratio"] > 1.1).all()
    assert anomalies.attrs["n_ranks"] == 64
    assert len(anomalies.attrs["z_scores"]) == 64


def test_clean_clusters_raise_no_alarm():
    false_alarms = sum(len(find_anomalies(cluster(seed))) for seed in range(100, 120))
    assert false_alarms == 0  # 20 runs × 64 ranks


def test_anomaly_options():
    ds = cluster(9, slow_node=2)
    assert find_anomalies(ds, side="lower").empty
    assert find_anomalies(ds, side="both").index.tolist() == list(range(16, 24))
    no_nodes = ds.drop_vars("node")
    plain = find_anomalies(no_nodes["compute"])
    assert plain.index.tolist() == list(range(16, 24)) and "node" not in plain
    assert plain.attrs["anomalous_nodes"] == []
    median = find_anomalies(ds, quantile=0.5)  # the whole law moved, the median too
    assert median.index.tolist() == list(range(16, 24))
    assert find_anomalies(ds, threshold=1e4).empty
    with pytest.raises(ValueError, match="no variable 'barrier'"):
        find_anomalies(ds, variable="barrier")
    with pytest.raises(ValueError, match="must have dims"):
        find_anomalies(ds.isel(sample=0))
    with pytest.raises(ValueError, match="side must be"):
        find_anomalies(ds, side="up")


def test_robust_z_scores():
    scores, centre, scale = robust_z_scores([1.0, 2.0, 3.0, 4.0, 100.0])
    assert centre == 3.0 and scale == pytest.approx(1.4826, rel=1e-4)
    assert scores[-1] == pytest.approx(97 / 1.482602218505602)
    # more than half equal: the mean absolute deviation takes over
    scores, centre, scale = robust_z_scores([5.0, 5.0, 5.0, 5.0, 9.0, math.nan])
    assert centre == 5.0 and scale == pytest.approx(1.2533141373155003 * 4 / 5)
    assert math.isnan(scores[-1])
    scores, _, scale = robust_z_scores([2.0, 2.0])
    assert scale == 0.0 and np.all(scores == 0)


def test_compare_refuses_nan_except_as_padding_at_the_end_of_a_rank():
    law = MaxOfN(NOISE + WORK, n=3)
    with pytest.raises(ValueError, match=r"measured: contains NaN at sample 1"):
        compare(law, [1e-3, math.nan, 2e-3])
    with pytest.raises(ValueError, match=r"measured: contains NaN"):
        compare(law, [1e-3, math.nan])  # trailing NaN of a single set: still a gap
    padded = np.array([[1e-3, 2e-3, 3e-3], [1e-3, 2e-3, math.nan]])
    assert compare(law, padded)["n_samples"].values.tolist() == [3, 2]
    holed = np.array([[1e-3, 2e-3, 3e-3], [1e-3, math.nan, 2e-3]])
    with pytest.raises(ValueError, match=r"measured rank 1: NaN at sample 1 before"):
        compare(law, holed)


def test_compare_names_quantiles_when_a_level_is_not_a_probability():
    law = MaxOfN(NOISE + WORK, n=3)
    for bad in ([2.0], [math.nan], [-0.1]):
        with pytest.raises(ValueError, match=r"^quantiles must lie in \[0, 1\]"):
            compare(law, [1e-3, 2e-3], quantiles=bad)
    ds = jl.max_of_n(NOISE + WORK, n=3, quantiles=[0.5])
    with pytest.raises(ValueError, match=r"^quantiles must lie"):
        compare(ds, [1e-3, 2e-3], quantiles=[2.0])


def test_robust_z_scores_of_nothing_is_an_error_without_warnings():
    with pytest.raises(ValueError, match=r"^values is empty"):
        robust_z_scores([])
    scores, centre, scale = robust_z_scores([math.nan, math.nan])  # no finite value: NaN
    assert np.isnan(scores).all() and math.isnan(centre) and math.isnan(scale)


# --------------------------------------------------------------------------------------
# independence across ranks
# --------------------------------------------------------------------------------------
def correlated_normals(rho, m, seed, ranks=2):
    """m iterations of `ranks` standard normals with pairwise correlation rho."""
    rng = np.random.default_rng(seed)
    shared = rng.normal(size=m)
    return math.sqrt(rho) * shared + math.sqrt(1 - rho) * rng.normal(size=(ranks, m))


def binomial_limit(trials, p, tail=1e-4):
    """Count of events at probability p that `trials` trials exceed with chance `tail`."""
    return int(stats.binom.isf(tail, trials, p))


def test_independence_recovers_the_closed_forms_of_a_correlated_normal_pair():
    rho, m = 0.5, 20000
    result = check_independence(correlated_normals(rho, m, seed=3), thresholds=[0.0],
                                resamples=99, rng=1)
    # Spearman of a normal pair: (6/π)·asin(ρ/2); P(both > 0) = 1/4 + asin(ρ)/(2π)
    spearman = 6 / math.pi * math.asin(rho / 2)
    low, high = result["spearman_ci"].values[0]
    assert low < spearman < high
    joint = 0.25 + math.asin(rho) / (2 * math.pi)
    assert abs(float(result["joint_exceedance"][0]) - joint) < 4 * float(
        result["joint_exceedance_se"][0])
    assert abs(float(result["independent_exceedance"][0]) - 0.25) < 4 * float(
        result["independent_exceedance_se"][0])
    assert float(result["exceedance_ratio"][0]) == pytest.approx(joint / 0.25, rel=0.05)
    assert int(result["n_iterations"]) == m and not bool(result["independent"])
    assert result["spearman_pvalue"].values[0] == pytest.approx(1 / 100)
    assert result["exceedance_excess"].attrs["units"] == "1"
    assert result["threshold"].attrs["units"] == "s"
    assert result["spearman_ci"].attrs["confidence"] == 0.95


def test_independence_standard_errors_match_the_spread_over_replicates():
    replicates, m = 200, 2000
    runs = [check_independence(correlated_normals(0.3, m, seed), thresholds=[0.5],
                               resamples=40, rng=seed) for seed in range(replicates)]
    excess = np.array([float(r["exceedance_excess"][0]) for r in runs])
    se = np.array([float(r["exceedance_excess_se"][0]) for r in runs])
    # the SD estimated from 200 replicates is uncertain by 1/√(2·199) ≈ 5 %: allow 4 of that
    assert np.mean(se) == pytest.approx(np.std(excess, ddof=1), rel=4 / math.sqrt(2 * 199))
    rho = np.array([float(r["spearman"][0]) for r in runs])
    half = np.array([np.diff(r["spearman_ci"].values[0])[0] / 2 for r in runs])
    assert np.mean(half) / stats.norm.ppf(0.975) == pytest.approx(
        np.std(rho, ddof=1), rel=4 / math.sqrt(2 * 199))


def test_independent_ranks_are_rejected_at_most_at_the_stated_rate():
    runs = 60
    # 3 pairs and 5 thresholds: 8 tests, so p = 8/200 is the smallest adjusted p-value
    rejected = sum(not bool(check_independence(correlated_normals(0.0, 500, seed, ranks=3),
                                               resamples=199, rng=seed)["independent"])
                   for seed in range(runs))
    assert rejected <= binomial_limit(runs, 0.05)
    # and the same test does reject dependent ranks
    assert not any(bool(check_independence(correlated_normals(0.3, 500, seed, ranks=3),
                                           resamples=199, rng=seed)["independent"])
                   for seed in range(5))


def test_shift_null_keeps_its_size_when_iterations_are_serially_correlated():
    # two independent AR(1) series (φ = 0.95): shuffling the iterations destroys their
    # serial structure and finds correlation that is not there; circular shifts do not
    from scipy import signal

    runs, shift, permutation = 40, 0, 0
    for seed in range(runs):
        noise = np.random.default_rng(seed).normal(size=(2, 600))
        series = signal.lfilter([1.0], [1.0, -0.95], noise, axis=1)[:, 200:]
        for null in ("shift", "permutation"):
            result = check_independence(series, thresholds=[0.0], null=null,
                                        resamples=199, rng=seed)
            rejected = float(result["spearman_pvalue"][0]) < 0.05
            shift += rejected and null == "shift"
            permutation += rejected and null == "permutation"
        assert float(result["lag1_autocorrelation"].min()) > 0.7
    assert shift <= binomial_limit(runs, 0.05)
    assert permutation > binomial_limit(runs, 0.05)


def test_identical_ranks_are_fully_dependent_and_nan_iterations_are_dropped():
    values = np.random.default_rng(0).exponential(1e-5, 1000)
    same = np.vstack([values, values])
    same[1, 10] = math.nan  # iteration 10 not measured on rank 1
    da = xr.DataArray(same, dims=("rank", "iteration"), coords={"rank": [4, 7]})
    result = check_independence(da, thresholds=[1e-5], sample_dim="iteration", rng=2)
    assert int(result["n_iterations"]) == 999
    assert float(result["spearman"][0]) == pytest.approx(1.0)
    np.testing.assert_allclose(result["joint_exceedance"],
                               result["exceedance"].sel(rank=4))
    assert result["rank_a"].values.tolist() == [4] and result["rank_b"].values.tolist() == [7]
    again = check_independence(da, thresholds=[1e-5], sample_dim="iteration", rng=2)
    xr.testing.assert_identical(result.drop_attrs(), again.drop_attrs())


def test_independence_of_the_shipped_two_rank_run():
    result = check_independence(jl.datasets.load_pb(ranks=2), thresholds=[320e-6],
                                resamples=199, rng=2006)
    assert not bool(result["independent"])
    assert float(result["exceedance_excess_ci"].sel(ci_bound="lower")[0]) > 0


@pytest.mark.parametrize(("kwargs", "error", "pattern"), [
    ({"samples": np.ones((1, 10))}, ValueError, "at least 2 ranks"),
    ({"samples": np.ones(10)}, ValueError, r"samples must be 2-D"),
    ({"samples": "data"}, TypeError, r"samples must be an xarray"),
    ({"samples": np.ones((2, 3))}, ValueError, "at least 4 are needed"),
    ({"samples": np.full((2, 10), math.inf)}, ValueError, "samples must be finite"),
    ({"samples": xr.DataArray(np.ones((2, 10)), dims=("x", "y"))}, ValueError,
     "must have dims"),
    ({"samples": xr.Dataset({"a": (("rank", "sample"), np.ones((2, 10)))})}, ValueError,
     "no variable 'compute'"),
    ({"null": "bootstrap"}, ValueError, "null must be"),
    ({"resamples": 0}, ValueError, "resamples"),
    ({"resamples": 38, "thresholds": [0.0]}, ValueError, r"resamples=38 .* resamples >= 40"),
    ({"resamples": 60, "confidence": 0.99, "thresholds": [0.0]}, ValueError,
     r"resamples >= 200"),
    ({"confidence": 1.0}, ValueError, "confidence"),
    ({"thresholds": []}, ValueError, "thresholds"),
    ({"thresholds": [math.nan]}, ValueError, "thresholds"),
    ({"thresholds": ["x"]}, TypeError, "thresholds"),
    ({"rng": "seed"}, TypeError, "rng"),
])
def test_independence_bad_input(kwargs, error, pattern):
    arguments = {"samples": np.random.default_rng(0).normal(size=(2, 50)), **kwargs}
    with pytest.raises(error, match=pattern):
        check_independence(**arguments)


# --------------------------------------------------------------------------------------
# the detector's power and false alarms
# --------------------------------------------------------------------------------------
def clean_cluster(seed, ranks=16, samples=2000):
    compute = WORK + np.random.default_rng(seed).exponential(1e-5, (ranks, samples))
    return xr.Dataset({"compute": (("rank", "sample"), compute, {"units": "s"})},
                      coords={"rank": np.arange(ranks)})


def test_power_is_zero_below_the_quantile_share_and_one_above_it():
    # a detour in 0.1 % of 2000 iterations (≈ 2) moves the 99th percentile (the 20th
    # largest) by about one spacing of the order statistics, however long it is; in
    # 5 % it moves it by the detour's length. Identical ranks (pooled): no other cause.
    power = anomaly_detection_power(clean_cluster(0), [1e-3], [0.001, 0.05],
                                    slow_ranks=[3], replicates=100, resample="pooled",
                                    rng=4)
    detected = power["detection_probability"].sel(duration=1e-3).values
    assert detected[0] <= binomial_limit(100, 0.01) / 100  # at most a rare false alarm
    assert detected[1] >= 1 - binomial_limit(100, 0.001) / 100
    assert power.attrs["slow_ranks"] == [3] and power.attrs["n_ranks"] == 16
    assert power["duration"].attrs["units"] == "s"
    for share, interval in [(detected[1], power["detection_probability_ci"].values[0, 1]),
                            (float(power["false_alarm_rate"]),
                             power["false_alarm_rate_ci"].values)]:
        k = round(share * 100)  # Clopper-Pearson, with its closed-form ends at 0 and n
        low = 0.0 if k == 0 else stats.beta.ppf(0.025, k, 101 - k)
        high = 1.0 if k == 100 else stats.beta.ppf(0.975, k + 1, 100 - k)
        np.testing.assert_allclose(interval, [low, high], rtol=1e-12)
    assert power["false_alarm_rate_ci"].values[1] == pytest.approx(1 - 0.025 ** (1 / 100)) \
        or float(power["false_alarm_rate"]) > 0  # k = 0: 1 − (α/2)^(1/n)


def test_power_grows_with_the_detour_length_and_frequency():
    power = anomaly_detection_power(clean_cluster(1), [2e-6, 2e-5, 2e-4],
                                    [0.005, 0.01, 0.02, 0.05], slow_ranks=[0, 5],
                                    replicates=60, rng=2)
    counts = power["detection_probability"].values
    # common random numbers: more or longer detours never lose a detection
    assert (np.diff(counts, axis=0) >= 0).all() and (np.diff(counts, axis=1) >= 0).all()
    assert counts[0, 0] < counts[-1, -1]
    se = power["detection_probability_se"].values
    np.testing.assert_allclose(se, np.sqrt(counts * (1 - counts) / 60))


def test_power_matches_find_anomalies_run_by_run():
    # reference: the same draws, injected explicitly and judged by find_anomalies
    clean = clean_cluster(2, ranks=8, samples=500)
    durations, probabilities, replicates = [5e-6, 5e-5], [0.01, 0.05], 6
    power = anomaly_detection_power(clean, durations, probabilities, slow_ranks=[6],
                                    replicates=replicates, threshold=3.0, rng=9)
    gen = np.random.default_rng(9)
    rows = clean["compute"].values
    detected, alarms = np.zeros((2, 2)), 0
    for _ in range(replicates):
        runs = np.array([row[gen.integers(0, row.size, row.size)] for row in rows])
        run = xr.Dataset({"compute": (("rank", "sample"), runs)})
        alarms += len(find_anomalies(run, threshold=3.0)) > 0
        uniforms = gen.random(rows.shape[1])
        for j, p in enumerate(probabilities):
            for i, duration in enumerate(durations):
                injected = runs.copy()
                injected[6] += duration * (uniforms < p)
                found = find_anomalies(xr.Dataset({"compute": (("rank", "sample"),
                                                               injected)}), threshold=3.0)
                detected[i, j] += 6 in found.index
    np.testing.assert_array_equal(power["detection_probability"].values,
                                  detected / replicates)
    assert float(power["false_alarm_rate"]) == alarms / replicates


def test_pooled_false_alarm_rate_matches_fresh_clean_runs():
    # identical ranks: the rate from resampling one run must estimate the rate of new runs
    threshold, fresh_runs = 3.0, 600
    rates = [float(anomaly_detection_power(clean_cluster(seed), [1e-4], [0.05],
                                           replicates=100, threshold=threshold,
                                           resample="pooled", rng=seed)["false_alarm_rate"])
             for seed in range(10)]
    fresh = np.mean([len(find_anomalies(clean_cluster(seed), threshold=threshold)) > 0
                     for seed in range(1000, 1000 + fresh_runs)])
    se = math.hypot(np.std(rates, ddof=1) / math.sqrt(len(rates)),
                    math.sqrt(fresh * (1 - fresh) / fresh_runs))
    assert abs(np.mean(rates) - fresh) < 4 * se


@pytest.mark.parametrize(("kwargs", "error", "pattern"), [
    ({"clean": None}, TypeError, r"\bclean\b"),
    ({"durations": [0.0]}, ValueError, "durations"),
    ({"durations": []}, ValueError, "durations"),
    ({"durations": "1ms"}, TypeError, "durations"),
    ({"probabilities": [1.5]}, ValueError, "probabilities"),
    ({"probabilities": [0.0]}, ValueError, "probabilities"),
    ({"probabilities": [math.nan]}, ValueError, "probabilities"),
    ({"slow_ranks": [99]}, ValueError, "slow_ranks.*99"),
    ({"slow_ranks": list(range(8))}, ValueError, "slow_ranks.*fewer than half"),
    ({"replicates": 0}, ValueError, "replicates"),
    ({"confidence": 0.0}, ValueError, "confidence"),
    ({"resample": "block"}, ValueError, "resample"),
    ({"quantile": 1.0}, ValueError, "quantile"),
    ({"threshold": -1.0}, ValueError, "threshold"),
])
def test_power_bad_input(kwargs, error, pattern):
    arguments = {"clean": clean_cluster(0, ranks=16, samples=50), "durations": [1e-5],
                 "probabilities": [0.1], "replicates": 2, "rng": 0, **kwargs}
    with pytest.raises(error, match=pattern):
        anomaly_detection_power(**arguments)


def test_lag1_autocorrelation_is_not_hidden_by_one_long_iteration():
    from scipy import signal

    noise = np.random.default_rng(3).normal(size=(2, 2200))
    series = WORK + 1e-6 * signal.lfilter([1.0], [1.0, -0.9], noise, axis=1)[:, 200:]
    series[0, 1000] = 1.0  # one iteration of a second, as a descheduled rank would record
    lag1 = check_independence(series, resamples=199, rng=0)["lag1_autocorrelation"].values
    # Spearman lag-1 of a Gaussian AR(1) with φ = 0.9: (6/π)·asin(0.45) ≈ 0.89; Bartlett's
    # variance of a lag-1 autocorrelation, (1 − φ²)/m, gives its standard error
    expected = 6 / math.pi * math.asin(0.45)
    np.testing.assert_allclose(lag1, expected, atol=4 * math.sqrt((1 - 0.81) / 2000))


def test_batch_means_factor_of_an_ar1_series_is_its_variance_inflation():
    from scipy.signal import lfilter

    # AR(1) with coefficient rho: the variance of a long mean grows by (1 + rho) / (1 - rho)
    rng = np.random.default_rng(11)
    batches, n = 400, 4_000_000
    tolerance = 4 / np.sqrt(2 * (batches - 1))  # 4 SE of the batch-means SE, relative
    for rho in (0.0, 0.5, 0.8):
        series = lfilter([1.0], [1.0, -rho], rng.standard_normal(n))
        expected = np.sqrt((1 + rho) / (1 - rho))
        factor = jl.validate.batch_means_factor(series, batches=batches)
        assert factor >= 1.0
        assert abs(factor - expected) <= tolerance * expected


def test_batch_means_factor_edge_cases_and_bad_input():
    assert jl.validate.batch_means_factor(np.full(100, 3.0)) == 1.0
    # anti-correlated samples cannot make the error smaller than sd / sqrt(n)
    assert jl.validate.batch_means_factor(np.tile([1.0, -1.0], 500), batches=10) == 1.0
    # a leftover that does not fill a batch is left out: same as without it
    x = np.random.default_rng(2).standard_normal(1000)
    assert (jl.validate.batch_means_factor(np.append(x, [50.0] * 9), batches=10)
            == jl.validate.batch_means_factor(x, batches=10))
    with pytest.raises(ValueError, match="too few"):
        jl.validate.batch_means_factor(np.arange(39.0), batches=20)
    with pytest.raises(ValueError, match="batches"):
        jl.validate.batch_means_factor(np.arange(100.0), batches=1)
    with pytest.raises(ValueError, match="1-D"):
        jl.validate.batch_means_factor(np.zeros((10, 10)))
    with pytest.raises(ValueError, match="finite"):
        jl.validate.batch_means_factor([1.0, np.nan] * 40)
