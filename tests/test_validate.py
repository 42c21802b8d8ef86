"""Predicted against measured (KS, quantile gaps, Theorem 1) and anomalous ranks."""

import math

import numpy as np
import pytest
import xarray as xr

import jitterlab as jl
from jitterlab.validate import MaxOfN, compare, find_anomalies, robust_z_scores

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
