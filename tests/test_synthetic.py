"""Synthetic traces: rates and durations of each source, merging, wrapping, co-scheduling.

Tolerances: a Poisson count with mean m has standard deviation sqrt(m); a sample mean of
n independent durations with variance v has standard error sqrt(v/n). Every statistical
check allows 5 standard errors (a false alarm about once in 1.7 million runs), and the
seeds are fixed, so the tests are deterministic.
"""

import hashlib
import math
import re

import numpy as np
import pytest
from scipy import integrate

from jitterlab import datasets
from jitterlab.datasets import load_paper_values
from jitterlab.traces.synthetic import (
    JITSIM_CONFIGURATIONS,
    JITSIM_COSCHEDULER,
    JITSIM_NODE,
    PeriodicSource,
    PoissonSource,
    capped_pareto_mean,
    coscheduled_trace,
    jitsim_coscheduled_trace,
    jitsim_trace,
    synthetic_trace,
    trace_from_sources,
)

Z = 5.0  # standard errors allowed


def capped_pareto_second_moment(alpha, scale, cap):
    """E[min(X, c)²] = s² + ∫_s^c 2x (s/x)^α dx = s² + 2 s^α (c^{2−α} − s^{2−α}) / (2 − α)."""
    return scale**2 + 2 * scale**alpha * (cap ** (2 - alpha) - scale ** (2 - alpha)) / (2 - alpha)


def test_capped_pareto_mean_matches_the_integral_of_the_tail():
    for alpha, scale, cap in [(1.8, 5e-6, 2e-3), (2.5, 1.0, 10.0), (0.7, 1.0, 50.0),
                              (1.0, 2.0, 8.0)]:
        integral = scale + integrate.quad(lambda x, a=alpha, s=scale: (s / x) ** a,
                                          scale, cap, limit=200)[0]
        assert capped_pareto_mean(alpha, scale, cap) == pytest.approx(integral, rel=1e-9)
    assert capped_pareto_mean(3.0, 1.0) == pytest.approx(1.5)
    assert capped_pareto_mean(0.5, 1.0) == math.inf
    assert capped_pareto_mean(2.0, 1.0, 0.5) == 0.5


def test_reproducible_from_rng():
    assert synthetic_trace(2.0, rng=7).equals(synthetic_trace(2.0, rng=7))
    from_generator = synthetic_trace(2.0, rng=np.random.default_rng(7))
    assert from_generator.jitter.tolist() == synthetic_trace(2.0, rng=7).jitter.tolist()
    assert from_generator.attrs["seed"] is None
    assert not synthetic_trace(2.0, rng=8).equals(synthetic_trace(2.0, rng=7))
    assert coscheduled_trace(1.0, 0.01, 0.1, rng=3).equals(coscheduled_trace(1.0, 0.01, 0.1,
                                                                             rng=3))


def test_attrs_record_the_generator():
    trace = synthetic_trace(1.0, rng=1, host="sim")
    assert trace.attrs["source"] == "synthetic"
    assert trace.attrs["generator"] == "jitterlab.synthetic.synthetic_trace"
    assert trace.attrs["seed"] == 1 and trace.attrs["host"] == "sim"
    assert trace.attrs["daemons"] == [[0.1, 40e-6]]
    assert trace.attrs["interrupt_alpha"] == 1.8 and trace.attrs["tick_hz"] == 250.0
    assert trace.duration == pytest.approx(1.0, rel=1e-12)


def test_tick_alone_is_periodic():
    duration, tick_hz, tick = 10.0, 250.0, 2.5e-6
    trace = synthetic_trace(duration, tick_hz=tick_hz, tick_duration=tick, daemons=(),
                            interrupt_rate=0.0, rng=2)
    assert trace.n_events == duration * tick_hz
    np.testing.assert_allclose(np.diff(trace.starts), 1 / tick_hz, rtol=1e-9)
    assert np.all(np.abs(trace.jitter / tick - 1) <= 0.02)
    # durations uniform on tick·[0.98, 1.02]: sd = 0.02·tick/sqrt(3)
    standard_error = 0.02 * tick / math.sqrt(3) / math.sqrt(trace.n_events)
    assert abs(trace.jitter.mean() - tick) < Z * standard_error


def test_daemons_alone():
    trace = synthetic_trace(3.0, tick_hz=0.0, daemons=((0.1, 40e-6), (0.25, 1e-4)),
                            interrupt_rate=0.0, rng=4)
    assert trace.n_events == 30 + 12
    assert sorted(set(trace.jitter.round(12).tolist())) == [40e-6, 1e-4]
    assert trace.stats()["total_jitter"] == pytest.approx(30 * 40e-6 + 12 * 1e-4)


def test_interrupts_have_the_requested_rate_and_durations():
    duration, rate, alpha, scale, cap = 60.0, 200.0, 1.8, 5e-6, 2e-3
    trace = synthetic_trace(duration, tick_hz=0.0, daemons=(), interrupt_rate=rate,
                            interrupt_alpha=alpha, interrupt_scale=scale, interrupt_cap=cap,
                            rng=5)
    expected = rate * duration
    # merging removes about expected·rate·2·E[d] ≈ 0.05 events: negligible next to sqrt(m)
    assert abs(trace.n_events - expected) < Z * math.sqrt(expected)
    mean = capped_pareto_mean(alpha, scale, cap)
    variance = capped_pareto_second_moment(alpha, scale, cap) - mean**2
    assert abs(trace.jitter.mean() - mean) < Z * math.sqrt(variance / trace.n_events)
    assert trace.jitter.min() >= scale
    # only a merged pair can exceed the cap, and merged pairs are rare
    assert np.sum(trace.jitter > cap * (1 + 1e-9)) <= 1


def test_default_trace_resembles_the_reference_machine():
    duration = 30.0
    stats = synthetic_trace(duration, rng=11).stats()
    # deterministic 250 + 10 events per second plus Poisson(50·T) interrupts
    assert abs(stats["event_rate"] - 310.0) < Z * math.sqrt(50 * duration) / duration
    # noise per second: 250·2.5 µs + 10·40 µs + 50·E[min(X, cap)]; the interrupt part has
    # standard deviation sqrt(50·T·E[min(X, cap)²]) / T
    mean = capped_pareto_mean(1.8, 5e-6, 2e-3)
    expected = 250 * 2.5e-6 + 10 * 40e-6 + 50 * mean
    sd = math.sqrt(50 * duration * capped_pareto_second_moment(1.8, 5e-6, 2e-3)) / duration
    assert abs(stats["noise_fraction"] - expected) < Z * sd


def test_overlapping_sources_merge():
    sources = [PeriodicSource(1.0, 0.3, phase=0.0), PeriodicSource(1.0, 0.3, phase=0.2)]
    trace = trace_from_sources(sources, 3.0, rng=0)
    assert trace.jitter.tolist() == pytest.approx([0.5] * 3)
    assert trace.gap.tolist() == pytest.approx([0.5] * 3)


def test_events_wrap_around_the_end():
    trace = trace_from_sources([PeriodicSource(1.0, 0.4, phase=0.8)], 3.0, rng=0)
    # events at 0.8, 1.8, 2.8; the last runs to 3.2, so 0.2 of it continues at 0
    assert trace.attrs["offset"] == 0.0
    assert trace.jitter.tolist() == pytest.approx([0.2, 0.4, 0.4, 0.2])
    assert trace.gap.tolist() == pytest.approx([0.6, 0.6, 0.6, 0.0])
    assert trace.duration == pytest.approx(3.0)
    assert trace.stats()["noise_fraction"] == pytest.approx(0.4)


def test_no_noise_gives_one_empty_event():
    trace = trace_from_sources([PoissonSource(rate=0.0, alpha=2.0, scale=1e-6)], 2.0)
    assert trace.jitter.tolist() == [0.0] and trace.gap.tolist() == [2.0]


def _phase_in_window(trace):
    """Start and end of each event relative to the start of its co-scheduler window."""
    window, offset = trace.attrs["window"], trace.attrs["window_offset"]
    start = (trace.starts - offset) % window
    start[start > window * (1 - 1e-9)] = 0.0  # rounding just below a window start
    return start, start + trace.jitter, window


def test_coscheduled_daemons_run_only_in_low_windows():
    daemons = ((0.05, 3e-3), (0.1, 1e-3))
    trace = coscheduled_trace(2.0, window=0.01, low_fraction=0.1, tick_hz=0.0,
                              interrupt_rate=0.0, daemons=daemons, rng=6)
    start, end, window = _phase_in_window(trace)
    high = 0.9 * window
    assert np.all(start >= high - 1e-12) and np.all(end <= window + 1e-12)
    # the daemon work is moved, not lost: 40·3 ms + 20·1 ms
    assert trace.stats()["total_jitter"] == pytest.approx(40 * 3e-3 + 20 * 1e-3, rel=1e-9)
    assert trace.attrs["window"] == 0.01
    # the generator's windows start at k·window; the trace's time starts at its first event
    assert trace.attrs["window_offset"] == pytest.approx(-trace.attrs["offset"] % 0.01)


def test_coscheduled_interrupts_strike_anywhere():
    trace = coscheduled_trace(5.0, window=0.01, low_fraction=0.2, daemons=(), rng=9)
    start, _, window = _phase_in_window(trace)
    assert 0 <= trace.attrs["window_offset"] < window
    in_high = np.mean(start < 0.8 * window)
    # 250 + 50 events per second spread over the cycle: about 80 % start in high windows;
    # binomial standard error sqrt(p(1 − p)/n)
    n = trace.n_events
    assert abs(in_high - 0.8) < Z * math.sqrt(0.8 * 0.2 / n) + 0.02


def test_coscheduled_default_noise_is_conserved():
    free = synthetic_trace(20.0, daemons=((0.1, 40e-6),), tick_hz=0.0, interrupt_rate=0.0,
                           rng=1)
    moved = coscheduled_trace(20.0, 0.01, 0.1, daemons=((0.1, 40e-6),), tick_hz=0.0,
                              interrupt_rate=0.0, rng=1)
    assert moved.stats()["total_jitter"] == pytest.approx(free.stats()["total_jitter"])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: synthetic_trace(-1.0), "duration must be"),
        (lambda: synthetic_trace(1.0, tick_hz=-1.0), "tick_hz"),
        (lambda: synthetic_trace(1.0, tick_duration=5e-3), "shorter than period"),
        (lambda: synthetic_trace(1.0, daemons=((0.1,),)), r"daemons\[0\] must be a pair"),
        (lambda: synthetic_trace(1.0, interrupt_alpha=0.0), "alpha"),
        (lambda: synthetic_trace(1.0, interrupt_rate=np.nan), "rate"),
        (lambda: synthetic_trace(1.0, interrupt_cap=0.0), "interrupt_cap"),
        (lambda: PeriodicSource(1.0, 0.1, phase=1.5), "phase"),
        (lambda: PeriodicSource(1.0, 0.1, spread=2.0), "spread"),
        (lambda: coscheduled_trace(1.0, 0.3, 0.1), "whole number of windows"),
        (lambda: coscheduled_trace(1.0, 0.01, 1.0), "low_fraction"),
        (lambda: coscheduled_trace(1.0, 0.0, 0.1), "window"),
    ],
)
def test_invalid_parameters(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_synthetic_attrs_survive_files(tmp_path):
    from jitterlab.io import read_trace

    trace = coscheduled_trace(0.5, 0.01, 0.1, rng=2)
    assert read_trace(trace.to_netcdf(tmp_path / "c.nc")).equals(trace)
    assert read_trace(trace.to_csv(tmp_path / "c.csv")).equals(trace)


# --------------------------------------------------------------------------------------
# the node of jitSim §4.2–4.3 and its co-scheduled variant
# --------------------------------------------------------------------------------------
def _covered(inner, outer):
    """True where an event of ``inner`` lies inside an event of ``outer`` (same timeline)."""
    start = inner.starts + inner.attrs["offset"]
    end = start + inner.jitter
    o_start = outer.starts + outer.attrs["offset"]
    o_end = o_start + outer.jitter
    k = np.searchsorted(o_start, start + 1e-12, side="right") - 1
    return (k >= 0) & (o_start[k] <= start + 1e-12) & (end <= o_end[k] + 1e-12)


def test_jitsim_node_rates_and_noise_fraction():
    """Closed form: events per second 100 + λ + Σ 1/P, noise fraction
    f·d_tick + λ·E[min(X, cap)] + Σ d/P; the Poisson part has standard deviation
    sqrt(λT) events and sqrt(λT·E[min(X, cap)²])/T of noise fraction."""
    duration, node = 60.0, JITSIM_NODE
    trace = jitsim_trace(duration, rng=12)
    stats = trace.stats()
    rate = node["interrupt_rate"]
    periodic = sum(1 / p for p, _ in node["processes"])
    expected = node["tick_hz"] + rate + periodic
    # merging (an interrupt inside a tick) removes about 0.2 % of the interrupts: far
    # below one standard error of the Poisson count
    assert abs(stats["event_rate"] - expected) < Z * math.sqrt(rate * duration) / duration
    args = node["interrupt_alpha"], node["interrupt_scale"], node["interrupt_cap"]
    mean = capped_pareto_mean(*args)
    fraction = (node["tick_hz"] * node["tick_duration"] + rate * mean
                + sum(d / p for p, d in node["processes"]))
    sd = math.sqrt(rate * duration * capped_pareto_second_moment(*args)) / duration
    assert abs(stats["noise_fraction"] - fraction) < Z * sd
    assert trace.attrs["sources"] == ["tick", "interrupts", "processes"]
    assert trace.attrs["processes"] == [[1.0, 100e-6], [5.0, 1e-3]]
    assert trace.attrs["generator"] == "jitterlab.synthetic.jitsim_trace"


def test_jitsim_isolated_cpu_keeps_only_the_100_hz_tick():
    trace = jitsim_trace(20.0, keep=JITSIM_CONFIGURATIONS["Isolated CPU"], rng=3)
    assert trace.n_events == 20 * 100
    np.testing.assert_allclose(np.diff(trace.starts), 0.01, rtol=1e-9)
    spread = JITSIM_NODE["tick_spread"]
    assert np.all(np.abs(trace.jitter / JITSIM_NODE["tick_duration"] - 1) <= spread + 1e-12)


def test_jitsim_processes_alone_are_periodic():
    duration = 30.0
    trace = jitsim_trace(duration, keep=("processes",), rng=5)
    # 30 activations of 100 µs and 6 of 1 ms; total work exact (no overlap at this seed)
    assert trace.n_events == 30 + 6
    assert trace.stats()["total_jitter"] == pytest.approx(30 * 100e-6 + 6 * 1e-3, rel=1e-9)


def test_jitsim_sources_keep_their_events_when_others_are_removed():
    full = jitsim_trace(10.0, rng=7)
    for keep in (("tick",), ("interrupts",), ("processes",), ("tick", "interrupts")):
        part = jitsim_trace(10.0, keep=keep, rng=7)
        assert part.n_events > 0
        assert _covered(part, full).all(), keep
        assert part.stats()["total_jitter"] <= full.stats()["total_jitter"]
    assert not _covered(jitsim_trace(10.0, keep=("interrupts",), rng=8), full).all()


def test_jitsim_coscheduled_defers_processes_and_overhead_to_low_windows():
    duration = 20.0
    window, low = JITSIM_COSCHEDULER["window"], JITSIM_COSCHEDULER["low_fraction"]
    trace = jitsim_coscheduled_trace(duration, keep=("processes",), rng=4)
    start, end, _ = _phase_in_window(trace)
    assert np.all(start >= (1 - low) * window - 1e-12) and np.all(end <= window + 1e-12)
    # work moved, not lost: processes + co-scheduler daemon per window + ntpdate
    ntp_period, ntp = JITSIM_COSCHEDULER["ntpdate"]
    work = (duration * (100e-6 / 1.0 + 1e-3 / 5.0)
            + duration / window * JITSIM_COSCHEDULER["coscheduler_daemon"]
            + duration / ntp_period * ntp)
    assert trace.stats()["total_jitter"] == pytest.approx(work, rel=1e-9)
    assert trace.attrs["window"] == window and trace.attrs["low_fraction"] == low


def test_jitsim_coscheduled_interrupts_and_tick_are_the_nodes():
    keep = ("tick", "interrupts")
    free = jitsim_trace(10.0, keep=keep, rng=9)
    cosched = jitsim_coscheduled_trace(10.0, keep=keep, coscheduler_daemon=0.0,
                                       ntpdate=None, rng=9)
    np.testing.assert_array_equal(free.jitter, cosched.jitter)
    np.testing.assert_array_equal(free.gap, cosched.gap)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: jitsim_trace(1.0, keep=("disk",)), ValueError, r"keep.*'disk'"),
        (lambda: jitsim_trace(1.0, keep=3), TypeError, "keep must be"),
        (lambda: jitsim_trace(1.0, processes=((1.0,),)), ValueError, r"daemons\[0\]"),
        (lambda: jitsim_trace(0.0), ValueError, "duration"),
        (lambda: jitsim_coscheduled_trace(1.0, tick=1), TypeError, r"unknown.*'tick'"),
        (lambda: jitsim_coscheduled_trace(1.0, ntpdate=(1.0,)), ValueError, "ntpdate"),
        (lambda: jitsim_coscheduled_trace(1.05), ValueError, "whole number of windows"),
        (lambda: jitsim_coscheduled_trace(1.0, coscheduler_daemon=-1), ValueError,
         "coscheduler_daemon"),
    ],
)
def test_jitsim_invalid_parameters(call, error, message):
    with pytest.raises(error, match=message):
        call()


# the numbers of jitSim §3.5 and §4 transcribed in data/de_mann_2010.csv
def test_de_mann_2010_table_and_its_provenance_record():
    table = load_paper_values("de_mann_2010")
    values = table.set_index("quantity")["value"]
    assert table["quantity"].is_unique and np.isfinite(table["value"]).all()
    assert table["source"].str.startswith("De & Mann 2010, §").all()
    record = (datasets.DATA_DIR / "de_mann_2010.md").read_text(encoding="utf-8")
    digest = hashlib.sha256((datasets.DATA_DIR / "de_mann_2010.csv").read_bytes()).hexdigest()
    assert re.search(r"\b[0-9a-f]{64}\b", record).group(0) == digest, \
        "update the checksum in data/de_mann_2010.md after editing the CSV"
    for unit in set(table["unit"]):
        assert f"`{unit}`" in record
    # the printed numbers agree with each other: 100 Hz is 10 ms, and 44.2 % -> 31.2 %
    # is the printed "30 %" reduction to the paper's rounding (29.4 %)
    assert values["tick_hz"] * values["tick_interval"] == pytest.approx(1.0)
    reduction = 1 - values["fig10_isolated_cpu_slowdown_16k"] / values[
        "fig10_baseline_slowdown_16k"]
    assert abs(reduction - values["fig10_reduction_16k"]) < 0.01
    assert values["largest_task_count"] == 2**14 == values["fig9_coscheduled_plateau_end"]
    assert JITSIM_NODE["tick_hz"] == values["tick_hz"]
