"""Tests of jitterlab.attribution: the join of detours with kernel events."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import jitterlab as jl
from jitterlab.attribution import COLUMNS, INVISIBLE, attribute_detours, cause_summary
from jitterlab.io import read_ftrace

DATA = Path(__file__).parent / "data"
TSC_FIXTURE = DATA / "ftrace_trace_x86tsc_cpu1.txt.gz"

SWITCH_OUT = ("prev_comm=loop prev_pid=7 prev_prio=120 prev_state=R ==> next_comm=kworker/1:2 "
              "next_pid=99 next_prio=120")
SWITCH_IN = ("prev_comm=kworker/1:2 prev_pid=99 prev_prio=120 prev_state=I ==> next_comm=loop "
             "next_pid=7 next_prio=120")
#: a loop (pid 7) interrupted by the tick (with its hrtimer callback and an RCU softirq),
#: a device interrupt, and a preemption by a kworker during which an interrupt arrives
NESTED = """# tracer: nop
 loop-7 [001] d.h.. 1000: local_timer_entry: vector=236
 loop-7 [001] d.h.. 1100: hrtimer_expire_entry: hrtimer=0000aa function=tick_nohz_handler now=5
 loop-7 [001] d.h.. 1300: hrtimer_expire_exit: hrtimer=0000aa
 loop-7 [001] d.h.. 1500: local_timer_exit: vector=236
 loop-7 [001] ..s.. 1600: softirq_entry: vec=9 [action=RCU]
 loop-7 [001] ..s.. 1700: softirq_exit: vec=9 [action=RCU]
 loop-7 [001] d.h.. 5000: irq_handler_entry: irq=36 name=virtio1-req.0
 loop-7 [001] d.h.. 5050: irq_handler_exit: irq=36 ret=handled
 loop-7 [001] d..2. 9000: sched_switch: """ + SWITCH_OUT + """
 kworker/1:2-99 [001] d.h.. 9200: irq_handler_entry: irq=36 name=virtio1-req.0
 kworker/1:2-99 [001] d.h.. 9300: irq_handler_exit: irq=36 ret=handled
 kworker/1:2-99 [001] d..2. 9800: sched_switch: """ + SWITCH_IN + """
"""


def nested_events():
    return read_ftrace(NESTED)


def times(table, detour):
    rows = table[table["detour"] == detour]
    return dict(zip(rows["cause"], np.round(rows["time"].to_numpy() * 1e9).astype(int),
                    strict=True))


def test_columns_and_kinds_follow_the_documented_format():
    table = attribute_detours([900, 4990, 8990, 20000], [1000, 100, 900, 50], nested_events(),
                              tsc_hz=1e9, measured_pid=7, origin=0, cpu=1, lost_events=0)
    assert tuple(table.columns) == COLUMNS
    assert table["detour"].dtype == np.int64
    assert set(table["kind"]) <= {"timer", "irq", "softirq", "hrtimer", "thread", "invisible"}
    assert table.attrs["cpu"] == 1 and table.attrs["clock"] == "x86-tsc"
    assert table.attrs["lost_events"] == 0 and table.attrs["steal_time"] is None
    first = table[table["detour"] == 0].iloc[0]
    assert first["start"] == pytest.approx(900e-9) and first["length"] == pytest.approx(1e-6)


def test_innermost_activity_owns_the_time_and_the_rest_is_not_visible():
    # detour 0: [900, 1900): tick 1000-1500 with hrtimer 1100-1300 inside, RCU 1600-1700
    # detour 1: [4990, 5090): irq 5000-5050
    # detour 2: [8990, 9890): kworker 9000-9800 with an irq 9200-9300 inside
    # detour 3: [20000, 20050): no event at all
    table = attribute_detours([900, 4990, 8990, 20000], [1000, 100, 900, 50], nested_events(),
                              tsc_hz=1e9, measured_pid=7, origin=0)
    assert times(table, 0) == {"timer interrupt": 300, "hrtimer:tick_nohz_handler": 200,
                               "softirq:RCU": 100, INVISIBLE: 400}
    assert times(table, 1) == {"irq:virtio1-req.0": 50, INVISIBLE: 50}
    assert times(table, 2) == {"thread:kworker/1:2": 700, "irq:virtio1-req.0": 100,
                               INVISIBLE: 100}
    assert times(table, 3) == {INVISIBLE: 50}
    assert table.attrs["thread_pids"] == {"kworker/1:2": [99]}
    assert table.attrs["detours_without_guest_event"] == 1
    assert table.attrs["time_without_guest_event"] == pytest.approx(50e-9)
    assert table.attrs["largest_without_guest_event"] == pytest.approx(50e-9)
    assert table.attrs["uncovered_in_guest_detours"] == pytest.approx(550e-9)


def test_a_detour_covering_part_of_an_activity_gets_only_the_overlap():
    table = attribute_detours([1200], [200], nested_events(), tsc_hz=1e9, measured_pid=7)
    assert times(table, 0) == {"hrtimer:tick_nohz_handler": 100, "timer interrupt": 100}


def test_measured_thread_is_found_from_the_context_switches():
    table = attribute_detours([8990], [900], nested_events(), tsc_hz=1e9)
    assert table.attrs["measured_pid"] == 7


def test_times_of_a_detour_add_up_to_its_length_on_a_real_recording():
    events = read_ftrace(TSC_FIXTURE, tsc_hz=2.3e9)
    ticks = events["ticks"].to_numpy(dtype=np.int64)
    # detours of 20 µs every 100 µs over the whole recording
    starts = np.arange(ticks[0], ticks[-1], 230_000, dtype=np.int64)
    lengths = np.full(starts.size, 46_000, dtype=np.int64)
    table = attribute_detours(starts, lengths, events, tsc_hz=2.3e9, measured_pid=2126)
    sums = table.groupby("detour")["time"].sum()
    lengths_s = table.groupby("detour")["length"].first()
    np.testing.assert_allclose(sums, lengths_s, rtol=1e-12)
    assert (table["time"] > 0).all()
    # the kernel's own time: every timer-interrupt tick of the fixture inside these windows
    # is found; the total of the named causes is the overlap of the windows with the
    # activity intervals computed independently here
    entry = events[events["event"] == "local_timer_entry"]["ticks"].to_numpy(dtype=np.int64)
    exit_ = events[events["event"] == "local_timer_exit"]["ticks"].to_numpy(dtype=np.int64)
    assert entry.size == exit_.size
    summary = cause_summary(table)
    assert summary["share"].sum() == pytest.approx(1.0)
    named = summary[summary["kind"] != "invisible"]
    assert {"timer interrupt", "hrtimer:tick_nohz_handler"} <= set(named["cause"])


def test_tick_time_matches_the_entry_exit_pairs_when_windows_cover_them():
    events = read_ftrace(TSC_FIXTURE, tsc_hz=2.3e9)
    kept = events[events["event"].isin(["local_timer_entry", "local_timer_exit"])]
    ticks = kept["ticks"].to_numpy(dtype=np.int64)
    entry, exit_ = ticks[0::2], ticks[1::2]
    table = attribute_detours(entry - 10, exit_ - entry + 20, kept.reset_index(drop=True),
                              tsc_hz=2.3e9, measured_pid=2126)
    tick = table[table["cause"] == "timer interrupt"]["time"].sum()
    assert tick == pytest.approx((exit_ - entry).sum() / 2.3e9, rel=1e-12)
    assert table[table["kind"] == "invisible"]["time"].sum() == pytest.approx(
        20 * entry.size / 2.3e9, rel=1e-9)


def test_bad_input_is_named():
    events = nested_events()
    with pytest.raises(ValueError, match="overlap"):
        attribute_detours([900, 950], [100, 100], events, tsc_hz=1e9, measured_pid=7)
    with pytest.raises(ValueError, match="> 0 ticks"):
        attribute_detours([900], [0], events, tsc_hz=1e9, measured_pid=7)
    with pytest.raises(TypeError, match="integer"):
        attribute_detours([900.5], [10.0], events, tsc_hz=1e9, measured_pid=7)
    with pytest.raises(ValueError, match="tsc_hz"):
        attribute_detours([900], [10], events, tsc_hz=0, measured_pid=7)
    seconds = read_ftrace("# tracer: nop\n loop-7 [001] d.h.. 1.000001: local_timer_entry: "
                          "vector=236\n")
    with pytest.raises(ValueError, match="x86-tsc"):
        attribute_detours([900], [10], seconds, tsc_hz=1e9, measured_pid=7)
    two_cpus = pd.concat([events, events.assign(cpu=0)], ignore_index=True)
    with pytest.raises(ValueError, match="several CPUs"):
        attribute_detours([900], [10], two_cpus, tsc_hz=1e9, measured_pid=7)
    with pytest.raises(ValueError, match="column"):
        cause_summary(pd.DataFrame({"detour": [0]}))


def test_exposed_at_the_top_level():
    assert jl.attribute_detours is attribute_detours
    assert jl.attribution.cause_summary is cause_summary
