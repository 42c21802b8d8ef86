"""Synthetic traces: rates and durations of each source, merging, wrapping, co-scheduling.

Tolerances: a Poisson count with mean m has standard deviation sqrt(m); a sample mean of
n independent durations with variance v has standard error sqrt(v/n). Every statistical
check allows 5 standard errors (a false alarm about once in 1.7 million runs), and the
seeds are fixed, so the tests are deterministic.
"""

import math

import numpy as np
import pytest
from scipy import integrate

from jitterlab.synthetic import (
    PeriodicSource,
    PoissonSource,
    capped_pareto_mean,
    coscheduled_trace,
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
