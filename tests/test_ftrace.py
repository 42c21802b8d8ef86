"""jitterlab.io.read_ftrace on real recordings of this machine and documented layouts."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from jitterlab.io import LostEventsWarning, read_ftrace
from jitterlab.io.ftrace import parse_fields

DATA = Path(__file__).parent / "data"
TSC_HZ = 2.300000316e9  # calibrate_tsc on the recording machine (tests/data/ftrace_files.md)
SOFTIRQ_ACTIONS = {"HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET",
                   "SCHED", "HRTIMER", "RCU"}


@pytest.fixture(scope="module")
def tsc_trace():
    return read_ftrace(DATA / "ftrace_trace_x86tsc_cpu1.txt.gz", tsc_hz=TSC_HZ)


def test_real_x86_tsc_recording(tsc_trace):
    events = tsc_trace
    assert len(events) == 5772
    assert events.attrs["entries_in_buffer"] == events.attrs["entries_written"] == 5772
    assert events.attrs["tracer"] == "nop" and events.attrs["n_cpus"] == 2
    assert events.attrs["timestamp_unit"] == "ticks" and events.attrs["lost_events"] == 0
    assert set(events["cpu"]) == {1}  # tracing_cpumask selected CPU 1 only
    ticks = events["ticks"].to_numpy(dtype=np.int64)
    assert np.all(np.diff(ticks) >= 0)  # one CPU: the file is in time order
    np.testing.assert_array_equal(events["timestamp"].to_numpy(), ticks / TSC_HZ)
    # every timer interrupt and hrtimer callback opens and closes, in order
    for opening, closing in (("local_timer_entry", "local_timer_exit"),
                             ("hrtimer_expire_entry", "hrtimer_expire_exit"),
                             ("softirq_entry", "softirq_exit"),
                             ("irq_handler_entry", "irq_handler_exit")):
        kinds = events["event"][events["event"].isin([opening, closing])].to_list()
        assert kinds == [opening, closing] * (len(kinds) // 2)
    timer = events[events["event"] == "local_timer_entry"]
    assert set(timer["vector"]) == {236}
    assert set(events.loc[events["event"] == "softirq_entry", "action"]) <= SOFTIRQ_ACTIONS
    raw = gzip.decompress((DATA / "ftrace_trace_x86tsc_cpu1.txt.gz").read_bytes()).decode()
    names = [line.split(" name=")[1] for line in raw.splitlines() if "irq_handler_entry" in line]
    assert events.loc[events["event"] == "irq_handler_entry", "name"].to_list() == names
    assert "virtio1-req.0" in names
    assert (events.loc[events["event"] == "hrtimer_expire_entry", "function"]
            == "tick_nohz_handler").mean() > 0.9


def test_sched_switch_chains(tsc_trace):
    """The task of each line after a switch is the task switched to."""
    events = tsc_trace.reset_index(drop=True)
    switches = events.index[events["event"] == "sched_switch"]
    assert len(switches) == 1117
    assert (events.loc[switches, "prev_pid"] == events.loc[switches, "pid"]).all()
    following = switches[switches + 1 < len(events)]
    chained = (events.loc[following, "next_pid"].to_numpy()
               == events.loc[following + 1, "pid"].to_numpy())
    # in this recording 12 of the 1116 switches are followed by a line of another task:
    # all switch to a tokio-rt-worker thread whose switch back is absent from the kernel's
    # text (stats reported no lost event); a parsing error shifting columns would break
    # far more of them
    assert int((~chained).sum()) == 12
    assert set(events.loc[following[~chained], "next_comm"]) == {"tokio-rt-worker"}


def test_real_recording_in_seconds():
    events = read_ftrace(DATA / "ftrace_trace_local_cpu1.txt.gz", tsc_hz=TSC_HZ)
    assert len(events) == 2813 and events.attrs["timestamp_unit"] == "s"
    assert events["ticks"].isna().all() and events.attrs["tsc_hz"] is None
    assert np.all(np.diff(events["timestamp"].to_numpy()) >= 0)
    assert 0.9 < events["timestamp"].iloc[-1] - events["timestamp"].iloc[0] < 1.5


def test_counter_clock_without_rate_has_no_seconds():
    events = read_ftrace(DATA / "ftrace_trace_x86tsc_cpu1.txt.gz")
    assert events["timestamp"].isna().all() and events["ticks"].notna().all()


def test_trace_cmd_layouts_agree():
    """report, report -t and report -l of one recording give the same events."""
    plain = read_ftrace(DATA / "ftrace_tracecmd_report.txt.gz")
    nanoseconds = read_ftrace(DATA / "ftrace_tracecmd_report_ns.txt.gz")
    latency = read_ftrace(DATA / "ftrace_tracecmd_report_latency.txt.gz")
    for events in (plain, nanoseconds, latency):
        assert events.attrs["format"] == "trace-cmd report"
        assert events.attrs["instances"] == ["jitterlab-2615"] and events.attrs["n_cpus"] == 2
    columns = ["cpu", "event", "comm", "pid", "vector", "vec", "action", "prev_comm",
               "prev_pid", "prev_state", "next_comm", "next_pid", "woken_comm",
               "woken_pid", "target_cpu", "irq", "name", "function", "now"]
    head = nanoseconds.iloc[:len(plain)].reset_index(drop=True)
    pd.testing.assert_frame_equal(plain[columns], head[columns])
    np.testing.assert_allclose(plain["timestamp"], head["timestamp"], rtol=0, atol=0.6e-6)
    others = [name for name in columns if name != "comm"]
    pd.testing.assert_frame_equal(latency[others], plain[others].iloc[:len(latency)])
    # the latency layout cuts the comm to 8 characters ("memfd:se" for "memfd:sealed-91")
    assert all(full.startswith(cut)
               for full, cut in zip(plain["comm"], latency["comm"], strict=False))
    assert (latency["comm"] != plain["comm"].iloc[:len(latency)]).any()
    assert latency["flags"].notna().all() and plain["flags"].isna().all()
    functions = set(plain.loc[plain["event"] == "hrtimer_expire_entry", "function"])
    assert "tick_nohz_handler" in functions  # trace-cmd's "/0x0" suffix removed
    assert not any("/" in function for function in functions)


def test_documented_lost_events_are_reported():
    with pytest.warns(LostEventsWarning, match=r"CPU 0: an unknown number, CPU 3: 12"):
        events = read_ftrace(DATA / "ftrace_documented_lost.txt")
    attrs = events.attrs
    assert attrs["overwritten"] == 12 and attrs["buffer_started_cpus"] == [2]
    assert attrs["lost_events"] is None  # one count unknown
    assert [(r["cpu"], r["count"], r["line"], r["before_timestamp"]) for r in attrs["lost"]] \
        == [(3, 12, 18, 905.120101), (0, None, 21, 905.12014)]
    assert events["comm"].to_list()[4:7] == ["Web Content", "Web Content",
                                            "kworker/0:1H-kblockd"]
    switch = events[events["event"] == "sched_switch"].iloc[0]
    assert (switch["next_comm"], switch["next_pid"], switch["prev_state"]) == \
        ("Web Content", 4410, "I")
    assert events.loc[events["event"] == "softirq_entry", "action"].to_list() == ["NET_RX"]


def test_trace_pipe_with_tgid_and_without_flags():
    events = read_ftrace(DATA / "ftrace_pipe_tgid_noirqinfo.txt")
    assert events["tgid"].to_list()[:2] == [1977, pd.NA]
    assert events["flags"].isna().all()
    wakeup = events[events["event"] == "sched_wakeup"].iloc[0]
    assert (wakeup["woken_comm"], wakeup["woken_pid"], wakeup["target_cpu"]) == ("bash", 1977, 0)
    other = events[events["event"] == "workqueue_execute_start"].iloc[0]
    assert other["body"].startswith("work struct") and pd.isna(other["woken_comm"])


def test_event_filter():
    events = read_ftrace(DATA / "ftrace_pipe_tgid_noirqinfo.txt",
                         event_filter=lambda name: name.startswith("softirq"))
    assert events["event"].to_list() == ["softirq_entry", "softirq_exit"]


LINE = "          bash-1977  [000] d.h1.  100.000100: {}"


@pytest.mark.parametrize("body, why", [
    ("softirq_entry: vec=x [action=TIMER]", "fields of 'softirq_entry'"),
    ("sched_switch: prev_comm=bash prev_pid=1", "fields of 'sched_switch'"),
    ("1000000 190 99.98100 9 18 0 1007 18 1", "without an event name"),
])
def test_malformed_event_refused_naming_file_and_line(body, why):
    text = f"# tracer: nop\n{LINE.format('local_timer_entry: vector=236')}\n{LINE.format(body)}\n"
    with pytest.raises(ValueError, match=rf"<text>, line 3: .*{why}"):
        read_ftrace(text)


def test_eventless_lines():
    """trace_pipe of the osnoise tracer has no header: its summary lines are still read;
    a function-tracer line is refused."""
    summary = "   <...>-859  [000] ....  81.637220: 1000000  190  99.98100  9  18  0  1007  18  1"
    events = read_ftrace(summary + "\n")
    assert events["event"].to_list() == ["osnoise"] and events["noise"].iloc[0] == 190e-6
    with pytest.raises(ValueError, match="line 1: a line without an event name"):
        read_ftrace("  bash-1977  [000] ....  17284.993652: sys_close <-system_call_fastpath\n")


def test_malformed_line_in_file(tmp_path):
    path = tmp_path / "trace.txt"
    path.write_text(LINE.format("local_timer_entry: vector=236") + "\nthis is not a trace\n")
    with pytest.raises(ValueError, match=r"trace.txt, line 2: not an ftrace event line"):
        read_ftrace(path)


def test_mixed_clocks_refused():
    text = (LINE.format("local_timer_entry: vector=236") + "\n"
            + "  bash-1977  [000] d.h1. 8174566700725: local_timer_exit: vector=236\n")
    with pytest.raises(ValueError, match="line 2: timestamp in seconds and in counter ticks"):
        read_ftrace(text)


def test_osnoise_summary_with_wrong_percentage_refused():
    text = ("# tracer: osnoise\n"
            "   <...>-859  [000] ....  81.637220: 1000000  190  99.99100  9  18  0  1007  18  1\n")
    with pytest.raises(ValueError, match="line 2: % of CPU available 99.99100 does not follow"):
        read_ftrace(text)


def test_bad_arguments():
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_ftrace(DATA / "no_such_trace.txt")
    with pytest.raises(TypeError, match="source must be a path"):
        read_ftrace(42)
    with pytest.raises(ValueError, match="tsc_hz must be a positive rate"):
        read_ftrace(DATA / "ftrace_pipe_tgid_noirqinfo.txt", tsc_hz=0)


def test_parse_fields_of_kernel_and_trace_cmd_layouts():
    kernel = parse_fields("sched_wakeup", "comm=rcu_preempt pid=15 prio=120 target_cpu=001")
    trace_cmd = parse_fields("sched_wakeup", "rcu_preempt:15 [120] CPU:001")
    assert kernel == trace_cmd == {"woken_comm": "rcu_preempt", "woken_pid": 15,
                                   "woken_prio": 120, "target_cpu": 1}
    assert parse_fields("thread_noise", "kworker/1:2:28605 start 5.000000001 duration 7 ns") \
        == {"thread_comm": "kworker/1:2", "thread_pid": 28605, "start": 5.000000001,
            "duration": 7e-9}
    assert parse_fields("not_known", "anything") == {}
    assert parse_fields("local_timer_entry", "vector=abc") is None


def test_real_overwritten_buffer_is_reported():
    """The kernel's header (272 of 11296 events kept) matches its stats (overrun 11024)."""
    with pytest.warns(LostEventsWarning, match="11024 events overwritten"):
        events = read_ftrace(DATA / "ftrace_trace_overrun_cpu1.txt.gz")
    assert len(events) == events.attrs["entries_in_buffer"] == 272
    assert events.attrs["overwritten"] == 11024 and events.attrs["lost"] == []


def test_real_trace_pipe_lost_events_are_reported():
    with pytest.warns(LostEventsWarning, match="events lost on CPU 1: 5523"):
        events = read_ftrace(DATA / "ftrace_pipe_lost_cpu1.txt.gz")
    (lost,) = events.attrs["lost"]
    assert (lost["cpu"], lost["count"], lost["line"]) == (1, 5523, 1)
    assert lost["before_timestamp"] == events["ticks"].iloc[0]
    assert events.attrs["lost_events"] == 5523 and events.attrs["tracer"] is None


# NMIs and page faults, lines written from this kernel's formats
# (/sys/kernel/tracing/events/nmi/nmi_handler/format: "%ps() delta_ns: %lld handled: %d";
# exceptions/page_fault_user and page_fault_kernel: "address=%ps ip=%ps error_code=0x%lx")
NMI_AND_FAULTS = """# tracer: nop
 <idle>-0 [001] d.Z1. 56823611265: nmi_handler: perf_event_nmi_handler() delta_ns: 4213 handled: 1
 <idle>-0 [001] d.Z1. 56823611275: nmi_handler: nmi_cpu_backtrace_handler() delta_ns: 812 handled: 0
 bash-1977 [001] d.... 56823611285: page_fault_user: address=0x7f3b1c2d4000 ip=0x7f3b1c0a1234 \
error_code=0x6
 bash-1977 [001] d.... 56823611295: page_fault_kernel: address=0x55d0c0de1000 ip=__clear_user \
error_code=0x2
""".replace("\\\n", "")


def test_nmi_handler_and_page_faults_read_from_the_kernel_format():
    events = read_ftrace(NMI_AND_FAULTS, tsc_hz=2.3e9)
    nmi = events[events["event"] == "nmi_handler"]
    assert nmi["handler"].to_list() == ["perf_event_nmi_handler", "nmi_cpu_backtrace_handler"]
    np.testing.assert_allclose(nmi["delta"].to_numpy(), [4213e-9, 812e-9], rtol=1e-15)
    assert nmi["handled"].to_list() == [1, 0]
    faults = events[events["event"].str.startswith("page_fault")]
    assert faults["address"].to_list() == ["0x7f3b1c2d4000", "0x55d0c0de1000"]
    assert faults["ip"].to_list() == ["0x7f3b1c0a1234", "__clear_user"]
    assert faults["error_code"].to_list() == [6, 2]
    assert parse_fields("nmi_handler", "perf_event_nmi_handler() delta_ns: 4213 handled: 1") \
        == {"handler": "perf_event_nmi_handler", "delta": 4213e-9, "handled": 1}
    with pytest.raises(ValueError, match="line 2: fields of 'nmi_handler'"):
        read_ftrace(NMI_AND_FAULTS.replace("delta_ns: 4213", "delta_ns: many"))


@pytest.mark.parametrize("name", ["ftrace_trace_x86tsc_cpu1.txt.gz",
                                  "ftrace_tracecmd_report.txt.gz",
                                  "ftrace_tracecmd_report_latency.txt.gz",
                                  "ftrace_documented_lost.txt"])
def test_columns_equal_the_fields_of_each_line(name):
    """The columnar reader (one regex over the text, one per event over its bodies) gives,
    row by row, the fields that parse_fields finds in each line alone."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LostEventsWarning)
        events = read_ftrace(DATA / name)
    known = [column for column in events.columns
             if column not in ("cpu", "timestamp", "ticks", "event", "comm", "pid", "tgid",
                               "flags", "body")]
    for row in events.itertuples(index=False):
        fields = parse_fields(row.event, row.body)
        assert fields is not None
        for column in known:
            value = getattr(row, column)
            if column in fields:
                assert value == fields[column], (row, column)
            else:
                assert pd.isna(value), (row, column)


def test_a_trace_without_events_gives_the_columns_and_no_row():
    events = read_ftrace("# tracer: nop\n#\n")
    assert len(events) == 0 and events.attrs["tracer"] == "nop"
    assert list(events.columns) == ["cpu", "timestamp", "ticks", "event", "comm", "pid",
                                    "tgid", "flags", "body"]
