"""Characterising traces: summary statistics and periodic noise sources."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import jitterlab as jl
from jitterlab.compare.characterize import find_periodic_sources, summarize
from jitterlab.traces.synthetic import PeriodicSource, PoissonSource, trace_from_sources
from jitterlab.traces.trace import Trace

DATA = Path(__file__).parent / "data"
DEVREF = DATA / "devref.trc.gz"
FULL_RAW = (Path(__file__).resolve().parents[2] / "shared" / "reference" / "sysjitter"
            / "sysjitter_raw_thr300.1.gz")


def periodic_rows(sources):
    return sources.drop(index="aperiodic")


def nominal_shares(trace, duration, periodic):
    """Expected share of each (period, detour) source: its total detour time / Σ jitter."""
    total = float(np.sum(trace.jitter_seconds))
    return {period: duration / period * length / total for period, length in periodic}


def match(sources, period, rel=1e-3):
    rows = periodic_rows(sources)
    hit = rows[np.isclose(rows["period"], period, rtol=rel)]
    assert len(hit) == 1, f"period {period} s not found once in\n{rows}"
    return hit.iloc[0]


# --------------------------------------------------------------------------------------
# summarize
# --------------------------------------------------------------------------------------
def test_summarize_lists_the_largest_detours():
    trace = Trace(jitter=[1e-6, 5e-6, 2e-6, 5e-6], gap=[1e-3, 2e-3, 1e-3, 1e-3],
                  offset=10.0, source="toy")
    summary = summarize(trace, top=5)
    assert summary.name == "toy"
    assert summary["n_events"] == 4
    assert summary["duration"] == pytest.approx(5.013e-3)
    assert summary["event_rate"] == pytest.approx(4 / 5.013e-3)
    assert summary["noise_fraction"] == pytest.approx(13e-6 / 5.013e-3)
    assert summary["max_jitter"] == 5e-6
    assert summary["longest_gap"] == 2e-3
    # ties in time order, starts on the absolute timeline (offset included)
    assert summary["largest_1"] == 5e-6 and summary["largest_1_start"] == pytest.approx(10.001001)
    assert summary["largest_2"] == 5e-6 and summary["largest_2_start"] == pytest.approx(10.004008)
    assert summary["largest_3"] == 2e-6 and summary["largest_4"] == 1e-6
    assert math.isnan(summary["largest_5"]) and math.isnan(summary["largest_5_start"])
    assert summary.attrs["units"]["largest_1_start"] == "s"
    stats = trace.stats()
    for key in ("p50_jitter", "p99_jitter", "mean_gap", "total_jitter"):
        assert summary[key] == stats[key]


def test_summarize_converts_cycles():
    trace = Trace([10, 50], [990, 950], unit="cycles", frequency_hz=1e9)
    summary = summarize(trace, top=1)
    assert summary["largest_1"] == pytest.approx(5e-8)
    assert summary["largest_1_start"] == pytest.approx(1e-6)
    with pytest.raises(TypeError, match="expected a jitterlab Trace"):
        summarize([1, 2])


# --------------------------------------------------------------------------------------
# periodic sources: the LogGOPSim reference trace
# --------------------------------------------------------------------------------------
def test_devref_tick_and_daemon():
    trace = jl.read_trace(DEVREF)
    sources = find_periodic_sources(trace)
    assert len(periodic_rows(sources)) == 2
    tick, daemon = match(sources, 4e-3), match(sources, 0.1)
    assert tick["period"] == pytest.approx(4e-3, rel=1e-6)
    assert daemon["period"] == pytest.approx(0.1, rel=1e-6)
    assert tick["phase"] == pytest.approx(1.3e-3, abs=1e-7)  # the first tick, 1 300 000 ns
    assert daemon["phase"] == pytest.approx(7e-3, abs=1e-7)
    assert tick["regularity"] > 0.99 and daemon["regularity"] == 1.0
    assert daemon["n_events"] == 300 and daemon["typical_duration"] == pytest.approx(40e-6)
    assert tick["typical_duration"] == pytest.approx(2.5e-6, rel=0.05)
    # the generator's nominal shares: 250 Hz × 2.5 µs and 10 Hz × 40 µs over 30 s
    expected = nominal_shares(trace, trace.duration, [(4e-3, 2.5e-6), (0.1, 40e-6)])
    assert tick["share"] == pytest.approx(expected[4e-3], abs=0.02)
    assert daemon["share"] == pytest.approx(expected[0.1], abs=0.005)
    assert sources["share"].sum() == pytest.approx(1.0)
    assert sources["n_events"].sum() == trace.n_events
    assert sources.loc["aperiodic", "events_per_second"] == pytest.approx(50, abs=5)
    assert sources.attrs["units"]["period"] == "s"


# --------------------------------------------------------------------------------------
# periodic sources: synthetic traces with known sources
# --------------------------------------------------------------------------------------
CASES = {
    "default": dict(),
    "three periodic": dict(tick_hz=100, tick_duration=5e-6,
                           daemons=((0.1, 40e-6), (0.5, 300e-6))),
    "busy": dict(daemons=((0.03, 20e-6),), interrupt_rate=200),
    "sparse heavy daemon": dict(tick_hz=1000, tick_duration=1e-6, daemons=((1.0, 1e-3),)),
}


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("case", list(CASES))
def test_synthetic_sources_are_found(case, seed):
    parameters = CASES[case]
    duration = 30.0
    trace = jl.synthetic_trace(duration, rng=seed, **parameters)
    tick_hz = parameters.get("tick_hz", 250.0)
    periodic = [(1 / tick_hz, parameters.get("tick_duration", 2.5e-6)),
                *parameters.get("daemons", ((0.1, 40e-6),))]
    sources = find_periodic_sources(trace)
    assert len(periodic_rows(sources)) == len(periodic), sources
    expected = nominal_shares(trace, duration, periodic)
    for period, _ in periodic:
        row = match(sources, period)
        assert row["period"] == pytest.approx(period, rel=1e-3)
        assert row["share"] == pytest.approx(expected[period], abs=0.02)
        assert row["regularity"] > 0.95
    aperiodic = 1 - sum(expected.values())
    assert sources.loc["aperiodic", "share"] == pytest.approx(aperiodic, abs=0.03)


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_no_periodic_source_in_poisson_noise(seed):
    trace = jl.synthetic_trace(20.0, tick_hz=0, daemons=(), interrupt_rate=300, rng=seed)
    sources = find_periodic_sources(trace)
    assert list(sources.index) == ["aperiodic"]
    assert sources.loc["aperiodic", "share"] == 1.0
    assert sources.loc["aperiodic", "n_events"] == trace.n_events


def test_source_with_drifting_clock_and_jittered_ticks():
    # a tick 40 ppm off nominal with 3 µs timing jitter, plus interrupts
    rng = np.random.default_rng(11)
    period = 4e-3 * (1 + 4e-5)
    starts = 1e-3 + period * np.arange(5000) + rng.normal(0, 3e-6, 5000)
    durations = rng.uniform(2e-6, 4e-6, 5000)
    noise_starts = rng.uniform(0, 20.0, 1000)
    noise = 5e-6 * (1 + rng.pareto(1.8, 1000))
    trace = Trace.from_absolute(np.concatenate([starts, noise_starts]),
                                np.concatenate([durations, np.minimum(noise, 1e-3)]),
                                total_duration=20.01, overlap="merge")
    sources = find_periodic_sources(trace)
    tick = match(sources, period, rel=1e-5)
    assert tick["timing_spread"] == pytest.approx(3e-6, rel=0.2)
    assert tick["regularity"] > 0.98


def test_same_clock_phases_are_one_source():
    # a 100 Hz tick and its follow-up work 300 µs later: one source, two phases
    tick = PeriodicSource(0.01, 5e-6, phase=0.002, name="tick")
    follow_up = PeriodicSource(0.01, 20e-6, phase=0.0023, name="softirq")
    interrupts = PoissonSource(40.0, 1.8, 5e-6, cap=1e-3)
    trace = trace_from_sources([tick, follow_up, interrupts], 20.0, rng=2)
    sources = find_periodic_sources(trace)
    assert len(periodic_rows(sources)) == 1
    row = match(sources, 0.01)
    assert row["n_phases"] == 2
    assert row["n_events"] == pytest.approx(4000, abs=10)


def test_bad_arguments():
    trace = jl.synthetic_trace(2.0, rng=0)
    with pytest.raises(ValueError, match="0 < min_period < max_period"):
        find_periodic_sources(trace, min_period=1.0, max_period=0.5)
    with pytest.raises(ValueError, match="false_alarm"):
        find_periodic_sources(trace, false_alarm=2.0)
    with pytest.raises(ValueError, match="tolerance"):
        find_periodic_sources(trace, tolerance=-1.0)
    with pytest.raises(TypeError, match="expected a jitterlab Trace"):
        find_periodic_sources(np.ones(3))


def test_explicit_tolerance():
    trace = jl.read_trace(DEVREF)
    sources = find_periodic_sources(trace, tolerance=5e-6)
    assert match(sources, 4e-3)["tolerance"] == 5e-6
    assert match(sources, 0.1)["n_events"] == 300


@pytest.mark.skipif(not FULL_RAW.exists(), reason="the reference sysjitter run is not present")
def test_sysjitter_reference_capture():
    trace = jl.read_trace(FULL_RAW, format="sysjitter")
    sources = find_periodic_sources(trace)
    top = periodic_rows(sources).iloc[0]
    # the 250 Hz tick, seen on sysjitter's clock (integer cpu_mhz: about 0.03 % fast)
    assert top["frequency"] == pytest.approx(250.0, rel=1e-3)
    assert top["share"] > 0.5 and top["regularity"] > 0.9
    assert sources["share"].sum() == pytest.approx(1.0)


def test_label_events_names_the_source_of_every_event():
    from jitterlab.compare.characterize import label_events

    trace = jl.synthetic_trace(duration=10.0, rng=1)
    sources, labels = label_events(trace)
    pd.testing.assert_frame_equal(sources, find_periodic_sources(trace))
    assert labels.size == trace.jitter.size
    for name, row in sources.iterrows():  # counts and noise per label are the table's
        chosen = labels == name
        assert chosen.sum() == row["n_events"]
        assert np.isclose(trace.jitter_seconds[chosen].sum(), row["total_jitter"])
    # the tick's events sit on its lattice
    tick = sources.loc["periodic 1"]
    starts = trace.offset_seconds() + trace.starts
    offset = (starts[labels == "periodic 1"] - tick["phase"]) % tick["period"]
    offset = np.minimum(offset, tick["period"] - offset)
    assert offset.max() <= tick["tolerance"] * 1.0001
