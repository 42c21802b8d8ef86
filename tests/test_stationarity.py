"""jl.characterize.stationarity: size of the tests on stationary data, power and change
points on a rate jump, bad input (issue #18 §4)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import stats

import jitterlab as jl
from jitterlab import datasets
from jitterlab.compare.stationarity import NULL_DRAWS, cusum_p_value, stationarity
from jitterlab.recording_checks import (
    STATIONARITY_COLUMNS,
    STATIONARITY_COMMAND,
    STATIONARITY_TABLE,
    check_recordings,
    round_robin_test,
)

LEVEL = 0.05
DURATION = 100.0  # [s]
RATE = 50.0  # detours per second


def poisson_trace(rng, rate=RATE, duration=DURATION, factor=1.0, size_factor=1.0,
                  mean_size=1e-6):
    """Homogeneous Poisson detours with exponential sizes; after ``duration / 2`` the rate
    is multiplied by ``factor`` and the sizes by ``size_factor``."""
    first = np.sort(rng.uniform(0, duration / 2, rng.poisson(rate * duration / 2)))
    second = np.sort(rng.uniform(duration / 2, duration,
                                 rng.poisson(rate * factor * duration / 2)))
    sizes = np.r_[rng.exponential(mean_size, first.size),
                  rng.exponential(mean_size * size_factor, second.size)]
    return jl.Trace.from_absolute(np.r_[first, second], sizes, duration, overlap="serialize")


def clustered_trace(rng, duration=DURATION, cluster_rate=5.0, per_cluster=10.0,
                    spread=0.01):
    """A stationary but bursty process (Neyman–Scott): cluster centres Poisson, each with
    Poisson(per_cluster) detours within ``spread`` seconds of it."""
    centres = rng.uniform(0, duration, rng.poisson(cluster_rate * duration))
    counts = rng.poisson(per_cluster, centres.size)
    starts = np.repeat(centres, counts) + rng.uniform(0, spread, counts.sum())
    starts = np.sort(starts[starts < duration])
    return jl.Trace.from_absolute(starts, rng.exponential(1e-6, starts.size), duration,
                                  overlap="serialize")


def rejection_bound(trials: int, level: float = LEVEL) -> float:
    """Largest rejection fraction consistent with ``level``: 3 binomial standard errors."""
    return level + 3 * math.sqrt(level * (1 - level) / trials)


# --------------------------------------------------------------------------------------
# null: homogeneous data is rejected at the nominal rate
# --------------------------------------------------------------------------------------
def test_homogeneous_poisson_is_rejected_at_the_nominal_rate():
    trials = 200
    rng = np.random.default_rng(2026)
    p_values = {"rate_p_value": [], "size_p_value": [], "rate_independent_p_value": []}
    verdicts = []
    for _ in range(trials):
        check = stationarity(poisson_trace(rng))
        for key in p_values:
            p_values[key].append(check.attrs[key])
        verdicts.append(check.attrs["stationary"])
    low = LEVEL - 3 * math.sqrt(LEVEL * (1 - LEVEL) / trials)
    for key, values in p_values.items():
        fraction = float(np.mean(np.asarray(values) < LEVEL))
        assert low < fraction < rejection_bound(trials), (key, fraction)
    # the verdict (both tests at LEVEL / 2): family-wise at most LEVEL
    assert 1 - np.mean(verdicts) < rejection_bound(trials)


def test_independent_measured_times_are_rejected_at_the_nominal_rate():
    """FWQ-like quanta w + δ, δ iid exponential, back to back: both tests reject at most
    at their nominal rate."""
    trials = 100
    rng = np.random.default_rng(21)
    rejected = {"rate_p_value": [], "size_p_value": []}
    for _ in range(trials):
        check = stationarity(300e-6 + rng.exponential(2e-6, 5000))
        for key, values in rejected.items():
            values.append(check.attrs[key] < LEVEL)
    for key, values in rejected.items():
        assert np.mean(values) < rejection_bound(trials), key


def test_bursty_but_stationary_noise_is_not_taken_for_drift():
    """Clusters of ~10 detours within 10 ms: the Poisson dispersion test (independent
    detours) rejects, the CUSUM test (dependence shorter than a sub-window) does not."""
    trials = 100
    rng = np.random.default_rng(7)
    cusum, independent = [], []
    for _ in range(trials):
        check = stationarity(clustered_trace(rng))
        cusum.append(check.attrs["rate_p_value"] < LEVEL)
        independent.append(check.attrs["rate_independent_p_value"] < LEVEL)
    assert np.mean(cusum) < rejection_bound(trials)
    assert np.mean(independent) > 0.5  # dispersion 1 + E[cluster size] ≈ 11 per window


# --------------------------------------------------------------------------------------
# power: a rate jump, a size jump
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(10))
def test_rate_jump_is_rejected_and_located_within_a_window(seed):
    rng = np.random.default_rng(seed)
    check = stationarity(poisson_trace(rng, factor=10.0))
    assert check.attrs["verdict"] == "not stationary at 5 %"
    assert check.attrs["rate_p_value"] < LEVEL / 2
    points = check.attrs["rate_change_points"]
    assert len(points) >= 1
    nearest = min(points, key=lambda t: abs(t - DURATION / 2))
    assert abs(nearest - DURATION / 2) <= check.attrs["window"]
    # the windows' rates on either side of the jump
    rates = check["event_rate"].values
    assert rates[: rates.size // 2].mean() < rates[rates.size // 2:].mean() / 5


def test_size_test_is_not_fooled_by_a_rate_jump():
    """Sizes drawn from one law while the rate jumps ×10: the size test (centred ranks)
    still rejects at most at its nominal rate."""
    trials = 100
    rng = np.random.default_rng(12)
    rejected = [stationarity(poisson_trace(rng, factor=10.0)).attrs["size_p_value"] < LEVEL
                for _ in range(trials)]
    assert np.mean(rejected) < rejection_bound(trials)


def test_size_jump_is_rejected_without_a_rate_change():
    rng = np.random.default_rng(11)
    check = stationarity(poisson_trace(rng, size_factor=3.0))
    assert check.attrs["size_p_value"] < LEVEL / 2
    nearest = min(check.attrs["size_change_points"], key=lambda t: abs(t - DURATION / 2))
    assert abs(nearest - DURATION / 2) <= check.attrs["window"]
    assert check["mean_size_rank"].values[0] < 0.5 < check["mean_size_rank"].values[-1]


def test_measured_times_back_to_back_and_with_a_change():
    rng = np.random.default_rng(3)
    work = 300e-6
    quiet = work + rng.exponential(1e-6, 40_000)
    check = stationarity(quiet)
    assert check.attrs["input"] == "measured times"
    assert int(check["samples"].sum()) == quiet.size
    assert math.isclose(check.attrs["duration"], quiet.sum(), rel_tol=1e-9)
    assert check.attrs["threshold"] == pytest.approx(np.quantile(quiet - quiet.min(), 0.9))
    noisy = np.r_[quiet[:20_000], work + rng.exponential(10e-6, 20_000)]
    changed = stationarity(noisy)
    assert changed.attrs["verdict"] == "not stationary at 5 %"
    middle = noisy[:20_000].sum()
    for key in ("rate_change_points", "size_change_points"):
        nearest = min(changed.attrs[key], key=lambda t: abs(t - middle))
        assert abs(nearest - middle) <= changed.attrs["window"]


def test_dataset_of_ranks_and_explicit_times():
    rng = np.random.default_rng(4)
    values = 1e-3 + rng.exponential(1e-5, (2, 5000))
    data = xr.Dataset({"iteration": (("rank", "sample"), values)})
    check = stationarity(data, variable="iteration")
    assert int(check["samples"].sum()) == values.size
    times = np.cumsum(values, axis=1) - values
    same = stationarity(values, times=times)
    assert same.attrs["rate_p_value"] == check.attrs["rate_p_value"]
    assert stationarity(data["iteration"]).attrs["size_p_value"] == \
        check.attrs["size_p_value"]


# --------------------------------------------------------------------------------------
# output
# --------------------------------------------------------------------------------------
def test_output_windows_units_and_counts():
    rng = np.random.default_rng(5)
    trace = poisson_trace(rng)
    check = stationarity(trace, window=7.0)
    assert check.sizes["window"] == 14
    assert check.attrs["dropped"] == pytest.approx(DURATION - 14 * 7.0)
    starts = trace.starts
    assert int(check["events"].sum()) == int(np.sum(starts < 14 * 7.0))
    np.testing.assert_allclose(check["event_rate"], check["events"] / 7.0)
    for name in ("events", "event_rate", "noise_fraction", "mean_size", "size_quantile",
                 "mean_size_rank", "rate_cusum", "size_cusum", "window_start",
                 "window_end"):
        assert "units" in check[name].attrs, name
    assert check["size_quantile"].dims == ("window", "quantile")
    first = trace.jitter_seconds[starts < 7.0]
    np.testing.assert_allclose(check["size_quantile"].isel(window=0),
                               np.quantile(first, check["quantile"].values))
    assert check["noise_fraction"][0] == pytest.approx(first.sum() / 7.0)
    # the test statistic is the largest |CUSUM| value
    assert check.attrs["rate_statistic"] == pytest.approx(
        float(np.abs(check["rate_cusum"]).max()))


def test_reachable_from_characterize_and_validate():
    assert jl.characterize.stationarity is stationarity
    assert jl.validate.stationarity is stationarity


def test_cusum_null_law_matches_the_brownian_bridge():
    """For many steps, the 95 % quantile of max |bridge| approaches the Kolmogorov
    1.3581 less Siegmund's discreteness correction 0.5826 / √steps; the tolerance is
    3 Monte Carlo standard errors of a quantile, sqrt(p (1-p) / draws) / density."""
    steps = 1000
    level = LEVEL
    quantile = stats.kstwobign.isf(level)
    standard_error = math.sqrt(level * (1 - level) / NULL_DRAWS) / stats.kstwobign.pdf(
        quantile)
    corrected = quantile - 0.5826 / math.sqrt(steps)
    assert cusum_p_value(corrected + 3 * standard_error, steps) < level
    assert cusum_p_value(corrected - 3 * standard_error, steps) > level


# --------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------
def test_bad_input_raises_clear_errors():
    rng = np.random.default_rng(6)
    trace = poisson_trace(rng)
    with pytest.raises(TypeError, match="Trace or measured times"):
        stationarity("trace.parquet")
    with pytest.raises(TypeError, match="must be numbers"):
        stationarity(["a", "b"])
    with pytest.raises(ValueError, match="no samples"):
        stationarity(np.array([]))
    with pytest.raises(ValueError, match="NaN"):
        stationarity(np.array([1.0, np.nan, 2.0]))
    with pytest.raises(ValueError, match=">= 0"):
        stationarity(np.array([1.0, -1.0, 2.0]))
    with pytest.raises(ValueError, match="at least 4"):
        stationarity(trace, window=40.0)
    with pytest.raises(ValueError, match="not both"):
        stationarity(trace, window=5.0, windows=10)
    with pytest.raises(ValueError, match="windows"):
        stationarity(trace, windows=2)
    with pytest.raises(ValueError, match="alpha"):
        stationarity(trace, alpha=1.5)
    with pytest.raises(ValueError, match="measured times, not to a Trace"):
        stationarity(trace, threshold=1e-6)
    with pytest.raises(ValueError, match="subwindows"):
        stationarity(trace, subwindows=2)
    data = xr.Dataset({"iteration": ("sample", np.full(100, 1e-3))})
    with pytest.raises(ValueError, match="needs variable="):
        stationarity(data)
    with pytest.raises(ValueError, match="'compute' is not in the Dataset"):
        stationarity(data, variable="compute")
    with pytest.raises(ValueError, match="shape"):
        stationarity(np.full(100, 1e-3), times=np.arange(50.0))
    with pytest.raises(ValueError, match="no detours"):
        stationarity(np.full(100, 1e-3))
    with pytest.raises(ValueError, match="no detours"):
        stationarity(pd.DataFrame({"start": [], "duration": []}))


def test_table_of_detours_from_several_cpus():
    """Detours of two CPUs may overlap in time; a DataFrame (start, duration) takes them
    as they are, and duration= sets the recording's length."""
    rng = np.random.default_rng(8)
    starts = np.r_[rng.uniform(0, 10, 500), rng.uniform(0, 10, 500)]
    events = pd.DataFrame({"start": starts, "duration": rng.exponential(1e-3, 1000)})
    check = stationarity(events, duration=10.0, windows=10)
    assert int(check["events"].sum()) == 1000
    assert check.attrs["window"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="lacks \\['duration'\\]"):
        stationarity(events[["start"]])
    with pytest.raises(ValueError, match="ends before the last"):
        stationarity(events, duration=5.0)
    with pytest.raises(ValueError, match="a Trace has its own duration"):
        stationarity(poisson_trace(rng), duration=5.0)


# --------------------------------------------------------------------------------------
# every shipped recording (data/measured/) and the shipped table (data/stationarity.csv)
# --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def shipped_checks():
    if not (datasets.DATA_DIR / "measured" / "manifest.json").is_file():
        pytest.skip("no measurements shipped in this checkout")
    return check_recordings()


def test_every_shipped_recording_is_checked(shipped_checks):
    table = shipped_checks
    assert list(table["file"]) == list(datasets.list_measurements().index)
    assert list(table.columns) == list(STATIONARITY_COLUMNS)
    detour_rows = table["kind"] != "ross_phold"  # ROSS's runs: a Friedman test, not simulated
    for column in ("rate_p_value", "size_p_value"):  # simulated: at least 1 / (draws + 1)
        values = table.loc[detour_rows, column].dropna()
        assert ((values >= 1 / (NULL_DRAWS + 1)) & (values <= 1)).all(), column
    ross = table.loc[~detour_rows, "size_p_value"].dropna()
    assert ((ross >= 0) & (ross <= 1)).all()
    for column in ("rate_independent_p_value", "size_independent_p_value"):
        values = table[column].dropna()
        assert ((values >= 0) & (values <= 1)).all(), column
    detours = table[table["kind"] != "ross_phold"]
    assert detours["rate_p_value"].notna().all() and (detours["windows"] >= 4).all()
    # the verdict: both tests at 2.5 %; change points exactly where a test rejects
    stationary = (detours["rate_p_value"] >= LEVEL / 2) & (detours["size_p_value"] >= LEVEL / 2)
    assert (detours["verdict"] == np.where(stationary, "stationary at 5 %",
                                           "not stationary at 5 %")).all()
    for key in ("rate", "size"):
        has_points = detours[f"{key}_change_points_s"].fillna("") != ""
        assert (has_points == (detours[f"{key}_p_value"] < LEVEL / 2)).all(), key


def test_shipped_table_is_what_the_command_writes(shipped_checks):
    path = datasets.DATA_DIR / STATIONARITY_TABLE
    shipped = pd.read_csv(path, keep_default_na=False, na_values=[""],
                          dtype={"rate_change_points_s": str, "size_change_points_s": str})
    assert list(shipped.columns) == list(STATIONARITY_COLUMNS)
    assert list(shipped["file"]) == list(shipped_checks["file"]), (
        f"{path} is stale: run {STATIONARITY_COMMAND}")
    for column in STATIONARITY_COLUMNS:
        have, want = shipped[column], shipped_checks[column]
        if pd.api.types.is_numeric_dtype(want) and not pd.api.types.is_bool_dtype(want):
            np.testing.assert_allclose(have.astype(float), want.astype(float), rtol=1e-5,
                                       err_msg=f"{column}: run {STATIONARITY_COMMAND}")
        else:
            assert list(have.fillna("")) == list(want.fillna("")), column
    record = (datasets.DATA_DIR / "stationarity.md").read_text(encoding="utf-8")
    assert STATIONARITY_COMMAND in record
    for name in shipped["file"]:
        assert f"`{name}`" in record, f"{name} is not discussed in stationarity.md"


def round_robin_runs(rng, configs=8, rounds=4, slow_round=None, factor=1.2):
    """Runs of ``configs`` configurations in ``rounds`` round-robin rounds, 10 s apart,
    running times log-normal around a per-configuration level; ``slow_round`` runs
    ``factor`` times slower for every configuration."""
    rows = []
    for round_ in range(rounds):
        for config in range(configs):
            time = (10.0 + config) * rng.lognormal(0, 0.05)
            if round_ == slow_round:
                time *= factor
            rows.append({"config": f"c{config}", "running_time_s": time,
                         "started_at": pd.Timestamp("2026-11-22T16:00:00Z")
                         + pd.Timedelta(seconds=10 * (round_ * configs + config))})
    return pd.DataFrame(rows)


def test_round_robin_test_finds_a_slow_round():
    rng = np.random.default_rng(9)
    p_value, configs, rounds = round_robin_test(round_robin_runs(rng, slow_round=2))
    assert (configs, rounds) == (8, 4)
    # a round slower for all 8 configurations: Friedman's statistic is at its largest
    assert p_value < 0.01
    two = round_robin_test(round_robin_runs(rng, rounds=2, slow_round=1))
    assert two[1:] == (8, 2) and two[0] < 0.01  # Wilcoxon: 8 of 8 pairs in one direction
    assert math.isnan(round_robin_test(round_robin_runs(rng, configs=2))[0])


def test_the_command_line_checks_named_recordings(tmp_path, capsys):
    from jitterlab.cli import main

    out = tmp_path / "check.csv"
    assert main(["stationarity", "fwq_cpu1_w300us.nc", "-o", str(out)]) == 0
    table = pd.read_csv(out)
    assert list(table["file"]) == ["fwq_cpu1_w300us.nc"]
    assert table["verdict"].iat[0].startswith(("stationary", "not stationary"))
    with pytest.raises(SystemExit):
        main(["stationarity", "fwq_cpu1_w300us.nc", "-o", str(out)])  # nothing overwritten
    assert "exists" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["stationarity", "nope.nc"])
    assert "'nope.nc' is not a shipped recording" in capsys.readouterr().err
