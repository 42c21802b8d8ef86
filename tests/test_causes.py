"""Tests of jitterlab.compare.causes: noise per cause with intervals, causes removed, periodic
sources named by cause (issue #22)."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import jitterlab as jl
from jitterlab.compare.causes import (
    INVISIBLE,
    UNATTRIBUTED,
    cause_trace,
    check_attribution,
    event_laws,
    label_sources,
    noise_by_cause,
    periodic_sources_by_cause,
    removal_cost,
    window,
)

TIMER, RCU, KWORKER = "timer interrupt", "softirq:RCU", "thread:kworker/1:1"


def table_from(detours, duration):
    """An attribution table from [(start, [(cause, kind, time), ...]), ...]; the length of
    each detour is the sum of its causes' times."""
    rows = []
    for index, (start, causes) in enumerate(detours):
        length = sum(time for _, _, time in causes)
        rows += [{"detour": index, "start": start, "length": length, "cause": cause,
                  "kind": kind, "time": time} for cause, kind, time in causes]
    table = pd.DataFrame(rows)
    table.attrs["duration"] = duration
    return table


def machine_table(rng, duration=5.0, tick=4e-3, thread_rate=20.0, invisible_rate=50.0):
    """A table like this VM's: a tick every ``tick`` s (2 µs of timer interrupt and 0.5 µs
    of entry/exit the guest does not see, an RCU softirq in every fifth), a kworker
    preempting at random and detours with no guest event at random."""
    rng = np.random.default_rng(rng)
    detours = []
    phase = rng.uniform(0, tick)
    for k, start in enumerate(np.arange(phase, duration - 1e-3, tick)):
        causes = [(TIMER, "timer", 2e-6), (INVISIBLE, "invisible", 0.5e-6)]
        if k % 5 == 0:
            causes.append((RCU, "softirq", 3e-6))
        detours.append((float(start), causes))
    n_ticks = len(detours)
    for rate, cause, kind, scale in ((thread_rate, KWORKER, "thread", 30e-6),
                                     (invisible_rate, INVISIBLE, "invisible", 10e-6)):
        for start in rng.uniform(0, duration - 1e-3, rng.poisson(rate * duration)):
            detours.append((float(start), [(cause, kind, float(rng.exponential(scale))
                                            + 1e-7)]))
    # the ticks stay; a random detour within 1 ms of an earlier kept one is dropped
    kept = detours[:n_ticks]
    for start, causes in detours[n_ticks:]:
        taken = np.array([s for s, _ in kept])
        if np.abs(taken - start).min() > 1e-3:
            kept = [*kept, (start, causes)]
    return table_from(sorted(kept, key=lambda item: item[0]), duration)


# --------------------------------------------------------------------------------------
# the table
# --------------------------------------------------------------------------------------
def test_check_attribution_adds_the_unattributed_rest():
    table = table_from([(0.1, [(TIMER, "timer", 2e-6)])], 1.0)
    table.loc[0, "length"] = 5e-6
    checked = check_attribution(table)
    assert checked["cause"].tolist() == [TIMER, UNATTRIBUTED]
    assert checked["time"].sum() == pytest.approx(5e-6, rel=1e-12)
    assert checked.attrs["duration"] == 1.0
    # a checked table checks again unchanged, and the rest is a cause of its own
    again = check_attribution(checked)
    pd.testing.assert_frame_equal(again, checked)
    assert cause_trace(checked, keep=UNATTRIBUTED).jitter_seconds.tolist() == [
        pytest.approx(3e-6, rel=1e-12)]


@pytest.mark.parametrize("change, message", [
    (lambda t: t.drop(columns="kind"), "lacks the columns"),
    (lambda t: t.assign(time=-1e-6), "time must be a finite number"),
    (lambda t: t.assign(time=np.nan), "time must be a finite number"),
    (lambda t: t.assign(kind="daemon"), "unknown kind"),
    (lambda t: t.assign(time=1e-3), "more than its length"),
    (lambda t: t.assign(detour=0.5), "detour must be an integer"),
    (lambda t: t.assign(length=[2e-6, 3e-6]), "several values of length"),
    (lambda t: t.assign(start=0.9999999), "ends after the recording"),
    (lambda t: t.assign(cause=TIMER), "several kinds"),
    (lambda t: t.iloc[:0], "empty"),
])
def test_check_attribution_refuses_bad_tables(change, message):
    table = table_from([(0.1, [(TIMER, "timer", 2e-6), (KWORKER, "thread", 1e-6)])], 1.0)
    bad = change(table)
    bad.attrs["duration"] = 1.0
    with pytest.raises(ValueError, match=message):
        check_attribution(bad)


def test_check_attribution_needs_the_duration():
    table = table_from([(0.1, [(TIMER, "timer", 2e-6)])], 1.0)
    table.attrs = {}
    with pytest.raises(ValueError, match="duration"):
        check_attribution(table)
    with pytest.raises(TypeError, match="DataFrame"):
        check_attribution([1, 2])


def test_window_keeps_the_detours_inside():
    table = machine_table(10, duration=2.0)
    part = window(table, 0.5, 1.5)
    assert part.attrs["duration"] == pytest.approx(1.0)
    inside = table[(table["start"] >= 0.5) & (table["start"] + table["length"] <= 1.5)]
    assert len(part) == len(inside)
    np.testing.assert_allclose(part["start"], inside["start"].to_numpy() - 0.5, atol=1e-15)
    # two windows hold every row but those of a detour across their common bound
    halves = [window(table, 0.0, 1.0), window(table, 1.0, 2.0)]
    across = (table["start"] < 1.0) & (table["start"] + table["length"] > 1.0)
    assert sum(len(h) for h in halves) + int(across.sum()) == len(table)
    with pytest.raises(ValueError, match="need 0 <= start < stop"):
        window(table, 1.5, 0.5)
    with pytest.raises(ValueError, match="need 0 <= start < stop"):
        window(table, 0.0, 3.0)


# --------------------------------------------------------------------------------------
# noise per cause
# --------------------------------------------------------------------------------------
def test_noise_by_cause_adds_up():
    table = machine_table(1)
    summary = noise_by_cause(table, resamples=200)
    lengths = table.drop_duplicates("detour")["length"].sum()
    assert summary["time"].sum() == pytest.approx(lengths, rel=1e-12)
    assert summary["share"].sum() == pytest.approx(1.0, rel=1e-12)
    assert summary["noise_fraction"].sum() == pytest.approx(lengths / 5.0, rel=1e-12)
    # counts in closed form: one tick per 4 ms, an RCU softirq in every fifth tick
    ticks = (table["cause"] == TIMER).sum()
    assert summary.loc[TIMER, "detours"] == ticks
    assert summary.loc[RCU, "detours"] == math.ceil(ticks / 5)
    assert summary.loc[TIMER, "time"] == pytest.approx(ticks * 2e-6, rel=1e-12)
    assert summary.loc[TIMER, "rate"] == pytest.approx(ticks / 5.0, rel=1e-12)
    for name in ("rate", "time", "share", "noise_fraction"):
        assert (summary[f"{name}_low"] <= summary[name] * (1 + 1e-12)).all()
        assert (summary[f"{name}_high"] >= summary[name] * (1 - 1e-12)).all()
    assert summary.loc[INVISIBLE, "kind"] == "invisible"
    # a clock does not vary between blocks: the tick's rate is known to ±1 tick per block
    width = summary.loc[TIMER, "rate_high"] - summary.loc[TIMER, "rate_low"]
    assert width * 5.0 <= 20 + 1e-9


def test_noise_by_cause_intervals_cover_the_true_rate():
    """Poisson detours of one cause, rate 100/s, 2 µs each, 4 s: the 95 % intervals of the
    noise time cover the expected 800 µs in 95 % of 200 recordings (± 3 standard errors of
    the coverage)."""
    rate, duration, size, recordings = 100.0, 4.0, 2e-6, 200
    rng = np.random.default_rng(7)
    covered = 0
    for k in range(recordings):
        starts = np.sort(rng.uniform(0, duration - 1e-5, rng.poisson(rate * duration)))
        table = pd.DataFrame({"detour": np.arange(starts.size), "start": starts,
                              "length": size, "cause": KWORKER, "kind": "thread",
                              "time": size})
        table.attrs["duration"] = duration
        summary = noise_by_cause(table, resamples=400, rng=k)
        low, high = summary.loc[KWORKER, ["time_low", "time_high"]]
        covered += low <= rate * duration * size <= high
    coverage = covered / recordings
    # the bootstrap over 20 blocks estimates the variance with the factor 19/20 (the plug-in
    # variance of a mean of 20 values), so its 95 % interval covers 2 Φ(1.96 √0.95) − 1
    expected = 2 * stats.norm.cdf(1.959964 * math.sqrt(19 / 20)) - 1
    error = math.sqrt(expected * (1 - expected) / recordings)
    assert abs(coverage - expected) <= 3 * error


def test_noise_by_cause_refuses_bad_options():
    table = machine_table(2, duration=1.0)
    with pytest.raises(ValueError, match="blocks"):
        noise_by_cause(table, blocks=1)
    with pytest.raises(ValueError, match="level"):
        noise_by_cause(table, level=1.0)
    with pytest.raises(ValueError, match="resamples"):
        noise_by_cause(table, resamples=0)


# --------------------------------------------------------------------------------------
# traces and laws
# --------------------------------------------------------------------------------------
def test_removing_every_cause_leaves_no_noise():
    table = machine_table(3, duration=2.0)
    causes = sorted(table["cause"].unique())
    empty = cause_trace(table, remove=causes)
    assert empty.jitter_seconds.tolist() == [0.0]
    assert empty.duration == pytest.approx(2.0)
    law = jl.noise.from_trace(empty, 1e-3)
    assert law.mean() == 0.0
    assert float(jl.max_of_n(law, 10**6)["mean"].item()) == 0.0
    slowdown = jl.simulate(empty, n=100, work=1e-3, phases=5, rng=1)["slowdown"].item()
    assert slowdown == pytest.approx(0.0, abs=1e-12)  # rounding of the phase sums


def test_traces_of_single_causes_add_up_to_the_whole():
    table = machine_table(4, duration=2.0)
    whole = cause_trace(table)
    parts = [cause_trace(table, keep=c) for c in table["cause"].unique()]
    assert sum(p.jitter_seconds.sum() for p in parts) == pytest.approx(
        whole.jitter_seconds.sum(), rel=1e-12)
    assert whole.duration == pytest.approx(2.0, rel=1e-12)
    # removing a cause shortens each of its detours by the cause's time, starts unchanged
    without = cause_trace(table, remove=RCU)
    per = table.groupby("detour").agg(start=("start", "first"), length=("length", "first"))
    rcu = table[table["cause"] == RCU].set_index("detour")["time"]
    expected = (per["length"] - rcu.reindex(per.index, fill_value=0.0)).to_numpy()
    np.testing.assert_allclose(without.jitter_seconds, expected, rtol=1e-12)
    np.testing.assert_allclose(without.offset_seconds() + without.starts,
                               per["start"].to_numpy(), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="no cause"):
        cause_trace(table, remove="irq:eth0")


def test_event_laws_are_the_times_per_detour():
    table = machine_table(5, duration=2.0)
    laws = event_laws(table)
    assert set(laws) == set(table["cause"])
    assert laws[TIMER].mean() == pytest.approx(2e-6, rel=1e-12)
    thread = table.loc[table["cause"] == KWORKER, "time"]
    assert laws[KWORKER].mean() == pytest.approx(thread.mean(), rel=1e-12)
    invisible = table[table["cause"] == INVISIBLE].groupby("detour")["time"].sum()
    np.testing.assert_array_equal(np.sort(laws[INVISIBLE].values),
                                  np.sort(invisible.to_numpy()))
    # two rows of one cause in one detour are one value, their sum
    twice = table_from([(0.1, [(TIMER, "timer", 1e-6), (TIMER, "timer", 2e-6)])], 1.0)
    assert event_laws(twice)[TIMER].values.tolist() == [3e-6]


# --------------------------------------------------------------------------------------
# cost at scale
# --------------------------------------------------------------------------------------
def tick_and_rare_thread():
    """A 2 µs tick every 4 ms and three 50 µs preemptions 2 ms after a tick, 5 s."""
    detours = [(0.001 + k * 4e-3, [(TIMER, "timer", 2e-6)]) for k in range(1250)]
    detours += [(0.001 + k * 4e-3 + 2e-3, [(KWORKER, "thread", 50e-6)])
                for k in (100, 600, 1100)]
    return table_from(sorted(detours, key=lambda d: d[0]), 5.0)


def test_removal_cost_in_closed_form_at_large_n():
    """With work 100 µs a phase meets at most one detour; at N = 10⁶ some phase meets a
    preemption (P = 1 − (1 − 3·150 µs/5 s)^N ≈ 1 − e⁻⁹⁰), so the noise is 50 µs; without
    the kworker it is the tick's 2 µs; without the tick it stays 50 µs."""
    cost = removal_cost(tick_and_rare_thread(), n=[10**6], work=100e-6)
    cost = cost.set_index("cause")
    assert cost.loc[TIMER, "noise"] == pytest.approx(50e-6, rel=1e-9)
    assert cost.loc[KWORKER, "noise_without"] == pytest.approx(2e-6, rel=1e-9)
    assert cost.loc[TIMER, "noise_without"] == pytest.approx(50e-6, rel=1e-9)
    assert cost.loc[KWORKER, "share"] == pytest.approx(48 / 50, rel=1e-9)
    assert cost.loc[TIMER, "share"] == pytest.approx(0.0, abs=1e-9)


def test_removal_cost_at_one_process_is_the_mean_law():
    table = machine_table(6, duration=2.0)
    cost = removal_cost(table, n=[1, 1000], work=1e-3)
    for cause, group in cost.groupby("cause"):
        law = jl.noise.from_trace(cause_trace(table, remove=cause), 1e-3)
        row = group.set_index("n")
        assert row.loc[1, "noise_without"] == pytest.approx(law.mean(), rel=1e-9)
        maxofn = float(jl.max_of_n(law, 1000)["mean"].item())
        assert row.loc[1000, "noise_without"] == pytest.approx(maxofn, rel=1e-6)
    # the maximum grows with N, and removing a cause never adds noise
    assert (cost["saving"] >= -1e-15).all()
    full = cost.attrs["noise"]
    assert full[1000] > full[1]


def test_removal_cost_simulated_agrees_with_max_of_n():
    """jl.simulate's mean noise per phase at N = 1 against the exact law's mean, within
    4 standard errors of the simulated mean (phases as independent draws)."""
    table = machine_table(8, duration=2.0)
    phases, work = 1000, 1e-3
    cost = removal_cost(table, n=[1], work=work, causes=[KWORKER], method="simulate",
                        phases=phases, rng=3).iloc[0]
    law = jl.noise.from_trace(cause_trace(table), work)
    error = math.sqrt(law.sample(20000, rng=1).var() / phases)
    assert abs(cost["noise"] - law.mean()) < 4 * error
    assert cost["noise_without"] < cost["noise"]


def test_removal_cost_bootstrap_interval_holds_the_estimate():
    cost = removal_cost(tick_and_rare_thread(), n=[10], work=100e-6, resamples=8,
                        blocks=10)
    assert (cost["share_low"] <= cost["share"] + 1e-12).all()
    assert (cost["share_high"] >= cost["share"] - 1e-12).all()
    assert ((cost["share_low"] >= -1e-12) & (cost["share_high"] <= 1 + 1e-12)).all()


def test_removal_cost_refuses_bad_input():
    table = tick_and_rare_thread()
    with pytest.raises(ValueError, match="method"):
        removal_cost(table, n=10, work=1e-3, method="guess")
    with pytest.raises(ValueError, match="n must be"):
        removal_cost(table, n=[0], work=1e-3)
    with pytest.raises(ValueError, match="work"):
        removal_cost(table, n=10, work=0.0)
    with pytest.raises(ValueError, match="no cause"):
        removal_cost(table, n=10, work=1e-3, causes=["irq:eth0"])


# --------------------------------------------------------------------------------------
# periodic sources by cause
# --------------------------------------------------------------------------------------
def tick_and_100hz(rng=9, duration=6.0):
    """A 250 Hz timer interrupt, a 100 Hz hrtimer callback in detours of its own, and
    detours with no guest event at random."""
    rng = np.random.default_rng(rng)
    detours = [(0.0013 + k * 4e-3, [(TIMER, "timer", 2e-6)])
               for k in range(int(duration / 4e-3) - 1)]
    detours += [(0.0031 + k * 1e-2, [("hrtimer:foo_fn", "hrtimer", 6e-6)])
                for k in range(int(duration / 1e-2) - 1)]
    detours += [(float(s), [(INVISIBLE, "invisible", 3e-6)])
                for s in rng.uniform(0, duration - 1e-2, 200)]
    detours.sort(key=lambda d: d[0])
    kept = [detours[0]]
    for start, causes in detours[1:]:
        if start > kept[-1][0] + 20e-6:
            kept.append((start, causes))
    return table_from(kept, duration)


def test_label_sources_names_the_clock_of_each_cause():
    sources = label_sources(tick_and_100hz())
    periodic = sources.drop(index="aperiodic")
    by_cause = periodic.set_index("cause")
    assert by_cause.loc[TIMER, "period"] == pytest.approx(4e-3, rel=1e-4)
    assert by_cause.loc["hrtimer:foo_fn", "period"] == pytest.approx(1e-2, rel=1e-4)
    assert (periodic["cause_share"] == 1.0).all()
    assert sources.loc["aperiodic", "cause"] == INVISIBLE


def test_periodic_sources_by_cause():
    found = periodic_sources_by_cause(tick_and_100hz())
    timer = found.loc[TIMER]
    assert timer.loc["periodic 1", "period"] == pytest.approx(4e-3, rel=1e-4)
    assert timer.loc["periodic 1", "share"] == pytest.approx(1.0)
    assert (found.loc[INVISIBLE].index == ["aperiodic"]).all()
    only = periodic_sources_by_cause(tick_and_100hz(), causes=[TIMER])
    assert only.index.get_level_values("cause").unique().tolist() == [TIMER]
    with pytest.raises(ValueError, match="no cause"):
        periodic_sources_by_cause(tick_and_100hz(), causes=["irq:eth0"])
    with pytest.raises(ValueError, match="min_detours"):
        periodic_sources_by_cause(tick_and_100hz(), min_detours=10**6)
