"""Readers of the osnoise tracer and of rtla osnoise top/hist, on files written in the
layouts of the Linux sources (tests/data/osnoise_files.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from jitterlab.io import (
    LostEventsWarning,
    read_osnoise_events,
    read_osnoise_periods,
    read_rtla_osnoise_hist,
    read_rtla_osnoise_top,
)

DATA = Path(__file__).parent / "data"


def test_tracepoints():
    events = read_osnoise_events(DATA / "osnoise_trace_tracer.txt")
    assert events["source"].to_list() == ["irq", "irq", "softirq", "thread", "sample", "nmi",
                                          "sample"]
    irq = events[events["source"] == "irq"]
    assert irq["name"].to_list() == ["local_timer", "virtio1-req.0"]
    assert irq["vector"].to_list() == [236, 36]
    softirq = events[events["source"] == "softirq"].iloc[0]
    assert (softirq["action"], softirq["vec"]) == ("TIMER", 1)
    thread = events[events["source"] == "thread"].iloc[0]
    assert (thread["thread_comm"], thread["thread_pid"]) == ("kworker/1:2", 28605)
    samples = events[events["source"] == "sample"]
    assert samples["interference"].to_list() == [4, 0]  # "interferences 4", "interference 0"
    np.testing.assert_allclose(events["duration"], np.array(
        [2210, 3302, 4187, 41330, 305402, 1120, 1601]) * 1e-9, rtol=1e-15)
    assert events["start"].iloc[0] == pytest.approx(413.306098412, abs=1e-12)
    # the interferences of the first sample lie inside it
    sample = samples.iloc[0]
    inside = events.iloc[:4]
    assert (inside["start"] >= sample["start"]).all()
    assert (inside["start"] + inside["duration"] <= sample["start"] + sample["duration"]).all()


def test_tracer_periods():
    periods = read_osnoise_periods(DATA / "osnoise_trace_tracer.txt")
    assert periods["cpu"].to_list() == [0, 1, 0, 1, 0]
    assert periods["runtime"].to_list() == [1.0, 1.0, 1.0, 1.0, 0.9]
    np.testing.assert_allclose(periods["noise"], [244e-6, 3127e-6, 198e-6, 8710e-6, 0])
    available = 100 * (periods["runtime"] - periods["noise"]) / periods["runtime"]
    np.testing.assert_allclose(periods["cpu_available_percent"], available, atol=1e-5)
    assert periods["irq_count"].to_list() == [1004, 1002, 1001, 1009, 0]


def test_periods_need_the_osnoise_tracer():
    with pytest.raises(ValueError, match="not the osnoise tracer's output.*'nop'"):
        read_osnoise_periods(DATA / "ftrace_trace_local_cpu1.txt.gz")


def test_rtla_top():
    top = read_rtla_osnoise_top(DATA / "osnoise_rtla_top.txt")
    assert list(top.index) == [0, 1, 2, 3]
    assert top.attrs["mode"] == "osnoise" and top.attrs["duration"] == 60.0
    assert top.loc[1, "noise"] == pytest.approx(0.362004, abs=1e-12)
    assert top.loc[1, "max_single_noise"] == pytest.approx(131e-6)
    assert top["periods"].to_list() == [60] * 4 and top["runtime"].to_list() == [54.0] * 4
    assert top.loc[3, ["hw_count", "irq_count", "thread_count"]].to_list() == [301, 54166, 11]


def test_rtla_top_refreshes_escapes_and_missed_events():
    with pytest.warns(LostEventsWarning, match="12 events missed"):
        top = read_rtla_osnoise_top(DATA / "osnoise_rtla_top_refresh.txt")
    assert top.attrs["updates"] == 2 and top.attrs["duration"] == 2.0
    assert top.attrs["missed_events"] == 12 and top.attrs["missed_percent"] == 0.35
    assert top["periods"].to_list() == [2, 2]  # the last refresh


def test_rtla_hwnoise():
    top = read_rtla_osnoise_top(DATA / "osnoise_rtla_hwnoise.txt")
    assert top.attrs["mode"] == "hwnoise"
    assert "irq_count" not in top and top.loc[0, "hw_count"] == 55
    assert top.loc[1, "cpu_available_percent"] == 100.0


def test_rtla_top_errors():
    text = (DATA / "osnoise_rtla_top.txt").read_text()
    with pytest.raises(ValueError, match=r"<text>, line 4: % CPU available 99.47865"):
        read_rtla_osnoise_top(text.replace("99.47864", "99.47865"))
    with pytest.raises(ValueError, match="line 3: not a line of rtla osnoise top"):
        read_rtla_osnoise_top(text.replace("CPU Period", "Period CPU"))
    with pytest.raises(ValueError, match="no per-CPU row"):
        read_rtla_osnoise_top("\n".join(text.splitlines()[:3]) + "\n")
    with pytest.warns(LostEventsWarning, match="unknown number"):
        top = read_rtla_osnoise_top(
            text + "unknown number of events missed, results might not be accurate\n")
    assert top.attrs["missed_events"] is None


def test_rtla_hist():
    histogram = read_rtla_osnoise_hist(DATA / "osnoise_rtla_hist.txt")
    assert list(histogram.counts.columns) == [0, 1, 3]
    np.testing.assert_allclose(histogram.counts.index, [0, 10e-6, 20e-6, 40e-6, 90e-6])
    assert histogram.counts[1].to_list() == [48820, 11005, 31, 0, 1]
    assert histogram.over.to_list() == [0, 2, 0]
    assert histogram.summary["count"].to_list() == [59347, 59859, 54111]
    np.testing.assert_allclose(histogram.summary["avg"], [1.73e-6, 2.41e-6, 1.02e-6])
    np.testing.assert_allclose(histogram.summary["max"], [44e-6, 312e-6, 41e-6])
    assert histogram.duration == 120.0 and histogram.time_unit == 1e-6


def test_rtla_hist_without_samples():
    histogram = read_rtla_osnoise_hist(DATA / "osnoise_rtla_hist_empty.txt")
    assert histogram.counts.empty and histogram.time_unit == 1e-9
    assert histogram.duration == 10.0


def test_rtla_hist_errors():
    text = (DATA / "osnoise_rtla_hist.txt").read_text()
    with pytest.raises(ValueError, match=r"line 11: the buckets and 'over' of CPU\(s\) \[1\]"):
        read_rtla_osnoise_hist(text.replace("59859", "59860"))
    with pytest.raises(ValueError, match="line 6: 2 value"):
        read_rtla_osnoise_hist(text.replace("10         9120     11005      3102",
                                            "10         9120     11005"))
    with pytest.raises(ValueError, match="--no-index"):
        read_rtla_osnoise_hist(text.replace("Index   CPU-000", "  CPU-000"))
    with pytest.raises(ValueError, match="not rtla osnoise hist output"):
        read_rtla_osnoise_hist(text.replace("RTLA osnoise histogram",
                                            "RTLA timerlat histogram"))
