"""jitterlab.measure.tracefs: the private tracefs instance, on this machine's tracefs (when
writable) and on a fake tracefs tree for the error paths."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import platform
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import jitterlab as jl
from jitterlab.compare.attribution import attribute_recording
from jitterlab.compare.causes import noise_by_cause
from jitterlab.io import LostEventsWarning, read_ftrace
from jitterlab.measure import tracefs
from jitterlab.measure.tracefs import (
    EventNotAvailableError,
    TracefsNotMountedError,
    TracefsPermissionError,
    buffer_size_kb,
    cpu_mask,
    parse_stats,
    remove_stale_instances,
    trace_instance,
)

REAL = tracefs.TRACEFS_ROOTS[0]


def tracefs_ready() -> bool:
    """Root and tracefs writable; as root, tracefs is mounted when it is not (a fresh CI
    machine has it in the kernel but unmounted)."""
    if os.geteuid() != 0:
        return False
    with contextlib.suppress(tracefs.TracefsError):
        tracefs.mount_tracefs()
    return (REAL / "instances").is_dir() and os.access(REAL / "instances", os.W_OK)


REAL_WRITABLE = tracefs_ready()
real = pytest.mark.skipif(not REAL_WRITABLE, reason=f"needs root and tracefs mounted at "
                          f"{REAL} (mount -t tracefs nodev {REAL}), or root to mount it")
X86 = platform.machine().lower() in {"x86_64", "amd64", "i686", "i386", "x86"}
real_detour = pytest.mark.skipif(not (REAL_WRITABLE and X86 and os.cpu_count() >= 2),
                                 reason="needs root, tracefs and an x86 CPU with 2 CPUs")
#: the measured CPU of the live detour runs
CPU = max(os.sched_getaffinity(0))
#: run the command line in a child process
CLI = [sys.executable, "-c", "import sys; from jitterlab.cli import main; sys.exit(main())"]


def dead_pid() -> int:
    """The pid of a process that has ended."""
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


@pytest.fixture
def fake_tracefs(tmp_path):
    root = tmp_path / "tracing"
    for path in ("instances", "per_cpu/cpu0", "per_cpu/cpu1",
                 "events/irq_vectors/local_timer_entry", "events/irq/softirq_entry"):
        (root / path).mkdir(parents=True)
    for event in ("irq_vectors/local_timer_entry", "irq/softirq_entry"):
        (root / "events" / event / "enable").write_text("0\n")
    return root


def test_not_root(monkeypatch, fake_tracefs):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(TracefsPermissionError, match="needs root.*uid 1000"):
        with trace_instance(root=fake_tracefs):
            pass


def test_not_mounted_names_where_it_looked(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    with pytest.raises(TracefsNotMountedError, match=rf"{tmp_path}.*mount -t tracefs"):
        with trace_instance(root=tmp_path):
            pass
    monkeypatch.setattr(tracefs, "TRACEFS_ROOTS", (tmp_path / "a", tmp_path / "b"))
    with pytest.raises(TracefsNotMountedError, match=rf"{tmp_path / 'a'} and {tmp_path / 'b'}"):
        with trace_instance():
            pass


def test_event_not_available_is_named(monkeypatch, fake_tracefs):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    events = ["irq_vectors:local_timer_entry", "sched:sched_switch", "irq:softirq_exit"]
    with pytest.raises(EventNotAvailableError,
                       match=r"not available .*: sched:sched_switch, irq:softirq_exit\Z"):
        with trace_instance(events, root=fake_tracefs):
            pass
    assert list((fake_tracefs / "instances").iterdir()) == []  # nothing created


def test_optional_event_missing_is_listed_not_refused(monkeypatch, fake_tracefs, caplog):
    """An optional event the kernel lacks is logged as not recorded, without an error (the
    fake tree's instance then fails at its first write, as the test below shows)."""
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    with caplog.at_level(logging.INFO, logger="jitterlab.measure.tracefs"):
        with pytest.raises(tracefs.TracefsError, match="does not exist"):
            with trace_instance(["irq_vectors:local_timer_entry"], root=fake_tracefs,
                                optional_events=["nmi:nmi_handler", "irq:softirq_entry"]):
                pass
    assert "not recorded (this kernel does not offer them): nmi:nmi_handler" in caplog.text
    assert "softirq_entry" not in caplog.text
    with pytest.raises(EventNotAvailableError, match=r"nmi:nmi_handler\Z"):
        with trace_instance(["irq_vectors:local_timer_entry", "nmi:nmi_handler"],
                            root=fake_tracefs):
            pass


@pytest.mark.parametrize("options, message", [
    ({"cpu": 2}, "CPU 2 is not in .* has 2 CPU"),
    ({"events": ["local_timer_entry"]}, "'system:event' names"),
    ({"events": []}, "'system:event' names"),
    ({"cpu": -1}, "non-negative int"),
    ({"duration": 0.0}, "positive number of seconds"),
    ({"buffer_kb": 0}, "buffer_kb must be a positive int"),
])
def test_bad_arguments(monkeypatch, fake_tracefs, options, message):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    arguments = {"events": ["irq_vectors:local_timer_entry"], "cpu": 0, "duration": 1.0,
                 **options}
    with pytest.raises(ValueError, match=message):
        with trace_instance(root=fake_tracefs, **arguments):
            pass
    assert list((fake_tracefs / "instances").iterdir()) == []


def test_instance_removed_when_setting_up_fails(monkeypatch, fake_tracefs):
    """A fake tree's mkdir makes no control files: the first write fails, naming the
    file, and the instance directory is removed all the same."""
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    with pytest.raises(tracefs.TracefsError, match=r"tracing_on does not exist"):
        with trace_instance(["irq:softirq_entry"], root=fake_tracefs):
            pass
    assert list((fake_tracefs / "instances").iterdir()) == []


def test_stale_instances_of_dead_processes_removed(fake_tracefs, caplog):
    instances = fake_tracefs / "instances"
    dead, alive = dead_pid(), os.getpid()
    for name in (f"jitterlab-{dead}", f"jitterlab-{alive}", "jitterlab-probe", "other"):
        (instances / name).mkdir()
    with caplog.at_level(logging.WARNING, logger="jitterlab.measure.tracefs"):
        removed = remove_stale_instances(fake_tracefs)
    assert removed == [instances / f"jitterlab-{dead}"]
    assert sorted(path.name for path in instances.iterdir()) == sorted(
        [f"jitterlab-{alive}", "jitterlab-probe", "other"])
    assert f"left behind by process {dead}" in caplog.text


def test_cpu_mask_and_buffer_size():
    assert [cpu_mask(cpu) for cpu in (0, 1, 31, 32, 33)] == [
        "1", "2", "80000000", "1,00000000", "2,00000000"]
    assert buffer_size_kb(10.0, events_per_second=1000, bytes_per_event=64, margin=2,
                          minimum_kb=1) == 1250  # 10 s * 1000/s * 64 B * 2 = 1.25 MiB
    assert buffer_size_kb(0.01) == 1024  # the minimum


def test_parse_stats():
    stats = parse_stats("entries: 1822\noverrun: 3\ncommit overrun: 0\nbytes: 56656\n"
                        "oldest event ts:  3700.852273\nnow ts: 8176942749438\n"
                        "dropped events: 1\nread events: 0\n")
    assert stats["overrun"] == 3 and stats["dropped events"] == 1
    assert stats["oldest event ts"] == 3700.852273 and stats["now ts"] == 8176942749438


# ---------------------------------------------------------------------------------------
# this machine's tracefs
# ---------------------------------------------------------------------------------------
@real
def test_real_recording_of_one_cpu():
    events = ("irq_vectors:local_timer_entry", "irq_vectors:local_timer_exit",
              "sched:sched_switch")
    with trace_instance(events, cpu=0, duration=0.3) as instance:
        path = instance.path
        assert path.name == f"jitterlab-{os.getpid()}" and path.is_dir()
        assert (path / "tracing_cpumask").read_text().strip().lstrip("0,") == "1"
        assert int((path / "buffer_size_kb").read_text().split()[0]) >= 1024  # page-rounded
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:
            time.sleep(0.01)  # sleeping: switches and ticks on every CPU
        text = instance.read_trace()
    assert not path.exists()
    assert instance.lost == {"overrun": 0, "commit overrun": 0, "dropped events": 0}
    offered = (REAL / "trace_clock").read_text()
    assert instance.clock == ("x86-tsc" if "x86-tsc" in offered else instance.clock)
    recorded = read_ftrace(text)
    assert len(recorded) > 0 and set(recorded["cpu"]) == {0}
    assert set(recorded["event"]) <= {name.split(":")[1] for name in events}
    assert recorded.attrs["timestamp_unit"] == ("ticks" if instance.clock_is_counter else "s")


@real
def test_real_optional_events_recorded_when_offered():
    """The default events bring the NMI and page-fault events this kernel offers; a named
    event list brings none; an optional event the kernel lacks is listed, not refused."""
    offered = tuple(event for event in tracefs.OPTIONAL_EVENTS
                    if (REAL / "events" / event.replace(":", "/")).is_dir())
    with trace_instance(cpu=0, duration=0.1) as instance:
        assert instance.events == tracefs.NOISE_EVENTS + offered
        assert instance.not_recorded == tuple(event for event in tracefs.OPTIONAL_EVENTS
                                              if event not in offered)
    with trace_instance(["sched:sched_switch"], cpu=0, duration=0.1) as instance:
        assert instance.events == ("sched:sched_switch",) and instance.not_recorded == ()
    with trace_instance(["sched:sched_switch"], cpu=0, duration=0.1,
                        optional_events=["nmi:no_such_event"]) as instance:
        assert instance.not_recorded == ("nmi:no_such_event",)
    assert not instance.path.exists()


@real
def test_real_instance_removed_on_ctrl_c():
    with pytest.raises(KeyboardInterrupt):
        with trace_instance(["sched:sched_switch"], cpu=0, duration=0.1) as instance:
            raise KeyboardInterrupt
    assert not instance.path.exists()


@real
def test_real_stale_instance_removed_and_missing_event_named(caplog):
    stale = REAL / "instances" / f"jitterlab-{dead_pid()}"
    stale.mkdir()
    try:
        with caplog.at_level(logging.WARNING, logger="jitterlab.measure.tracefs"):
            with trace_instance(["sched:sched_switch"], cpu=0, duration=0.1) as instance:
                assert instance.removed_stale == [stale]
        assert not stale.exists() and "left behind by process" in caplog.text
        with pytest.raises(EventNotAvailableError, match="irq:no_such_event"):
            with trace_instance(["irq:no_such_event"], cpu=0, duration=0.1):
                pass
    finally:
        if stale.exists():
            stale.rmdir()


@real
def test_real_lost_events_counted_and_logged(caplog):
    """An 8 KiB buffer overflows: the stats' overrun equals what the trace header says."""
    affinity = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {0})
    try:
        with caplog.at_level(logging.WARNING, logger="jitterlab.measure.tracefs"):
            with trace_instance(["sched:sched_switch", "timer:hrtimer_expire_entry",
                                 "timer:hrtimer_expire_exit"], cpu=0, duration=0.3,
                                buffer_kb=8) as instance:
                deadline = time.monotonic() + 0.3
                while time.monotonic() < deadline:
                    time.sleep(0.0005)  # a switch and an hrtimer each time
                text = instance.read_trace()
    finally:
        os.sched_setaffinity(0, affinity)
    assert instance.lost["overrun"] > 0 and "lost events on CPU 0" in caplog.text
    with pytest.warns(LostEventsWarning, match="events overwritten"):
        recorded = read_ftrace(text)
    assert recorded.attrs["overwritten"] == instance.lost["overrun"]


# --------------------------------------------------------------------------------------
# detour runs with kernel events (jitterlab measure detour --kernel-events)
# --------------------------------------------------------------------------------------
detour_module = sys.modules["jitterlab.measure.detour"]


def instances() -> list[str]:
    return sorted(path.name for path in (REAL / "instances").iterdir()
                  if path.name.startswith("jitterlab-"))


@real_detour
def test_real_detour_records_kernel_events_beside_the_detours(tmp_path):
    store = tmp_path / "run.detour"
    trace = jl.bench.detour(0.6, cpu=CPU, output=store, chunk_seconds=0.2, progress=False,
                            kernel_events=True)
    assert f"jitterlab-{os.getpid()}" not in instances()  # removed at the end
    attrs = trace.attrs
    assert attrs["trace_clock"] == "x86-tsc" and attrs["kernel_events_lost"] == {
        "overrun": 0, "commit overrun": 0, "dropped events": 0}
    # every default event is recorded; each optional one either recorded or listed as not
    recorded, missing = attrs["kernel_events"], attrs["kernel_events_not_recorded"]
    assert set(tracefs.NOISE_EVENTS) <= set(recorded)
    assert set(recorded) | set(missing) == set(tracefs.NOISE_EVENTS + tracefs.OPTIONAL_EVENTS)
    assert not set(recorded) & set(missing)
    events = jl.bench.read_kernel_events(store)
    assert events.attrs["clock_mapping"].startswith("identity")
    assert events.attrs["sync_marks"] == attrs["chunks"] >= 1  # one mark per chunk
    assert events.attrs["lost_events"] == 0 and set(events["cpu"]) == {CPU}
    ticks = events["ticks"].to_numpy(dtype=np.int64)
    table = jl.bench.detour_table(store)
    # recording starts before the first chunk and ends after the last chunk's sync mark
    assert ticks.min() <= table.attrs["tsc_origin"] and table.attrs["tsc_end"] < ticks.max()
    # the loop on a busy CPU meets the tick: CONFIG_HZ of 100 to 1000 gives >= 30 in 0.6 s
    assert (events["event"] == "local_timer_entry").sum() >= 30
    attribution = attribute_recording(store)
    sums = attribution.groupby("detour")["time"].sum()
    np.testing.assert_allclose(sums.to_numpy(), table["length"].to_numpy()[sums.index],
                               rtol=1e-9)
    assert attribution["detour"].nunique() == len(table)
    assert attribution.attrs["measured_pid"] == attrs["measured_tid"]
    assert "timer interrupt" in set(attribution["cause"])


@real_detour
def test_real_detour_with_another_trace_clock_is_mapped_by_the_sync_marks(tmp_path,
                                                                           monkeypatch):
    monkeypatch.setattr(detour_module, "trace_instance",
                        functools.partial(tracefs.trace_instance, clock="mono"))
    store = tmp_path / "mono.detour"
    trace = jl.bench.detour(0.6, cpu=CPU, output=store, chunk_seconds=0.1, progress=False,
                            kernel_events=True)
    events = jl.bench.read_kernel_events(store)
    assert events.attrs["clock"] == "mono"
    assert events.attrs["clock_mapping"].startswith("linear fit")
    assert events.attrs["sync_marks"] == trace.attrs["chunks"] >= 2  # a line needs two
    # the counter runs at tsc_hz per second of the mono clock, within the marks' brackets
    tsc_hz = jl.bench.detour_table(store).attrs["tsc_hz"]
    assert events.attrs["clock_rate"] == pytest.approx(tsc_hz, rel=1e-3)
    assert events.attrs["clock_residual_max_ticks"] < events.attrs["sync_bracket_max"] + 1000
    attribution = attribute_recording(store)
    assert "timer interrupt" in set(attribution["cause"])


def test_kernel_events_without_root_is_a_named_error(monkeypatch, tmp_path):
    if not X86:
        pytest.skip("needs the x86 timestamp counter")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(TracefsPermissionError, match="needs root"):
        jl.bench.detour(0.1, cpu=CPU, output=tmp_path / "x.detour", progress=False,
                        kernel_events=True)


def start_cli(tmp_path, name: str, seconds: float) -> subprocess.Popen:
    return subprocess.Popen(CLI + ["measure", "detour", "--duration", str(seconds), "--cpu",
                                   str(CPU), "--output", str(tmp_path / name),
                                   "--chunk-seconds", "0.2", "--no-progress",
                                   "--kernel-events"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_chunks(store, count: int, process, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while len(list(store.glob("chunk-*.npz"))) < count:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the run stored no chunk in time"
        time.sleep(0.05)


def kill_a_run_then_run_again(directory) -> tuple[int, str, str]:
    """A run killed after its second chunk, and the run after it: (pid of the killed run,
    output and error of the next run), with the checks of the killed run's remains."""
    directory.mkdir()
    killed = start_cli(directory, "killed.detour", 30)
    wait_for_chunks(directory / "killed.detour", 2, killed)
    assert f"jitterlab-{killed.pid}" in instances()
    killed.kill()  # SIGKILL: no clean-up possible
    killed.communicate()
    assert f"jitterlab-{killed.pid}" in instances()
    events = jl.bench.read_kernel_events(directory / "killed.detour")
    assert events.attrs["sync_marks"] >= 2 and len(events) > 0
    assert attribute_recording(directory / "killed.detour")["detour"].nunique() > 0
    following = start_cli(directory, "next.nc", 0.3)
    out, err = following.communicate(timeout=300)
    assert following.returncode == 0, err
    assert f"jitterlab-{killed.pid}" not in instances()
    assert "kernel events in" in out and "not visible to the guest" in out
    assert (directory / "next.nc.detour").is_dir()  # kept: it holds the events
    # the tick is among the causes; not necessarily among the 8 the CLI prints: beside busy
    # processes their threads' preemptions and other threads take more time (CI beside two
    # busy processes: timer interrupt below eight larger causes)
    causes = noise_by_cause(attribute_recording(directory / "next.nc.detour"))
    assert causes.index.str.contains("timer interrupt").any(), causes
    return killed.pid, out, err


@real_detour
def test_real_killed_run_keeps_its_events_and_the_next_run_removes_its_instance(tmp_path):
    # tracefs is the machine's: any jitterlab run with kernel events that starts between
    # the kill and the next run's own look removes the dead run's instance first (one test
    # run lost it so to a run beside it at load 12), and the next run then has nothing to
    # remove. That run must be seen removing it once; three tries, each a fresh kill
    for attempt in range(3):
        pid, _, err = kill_a_run_then_run_again(tmp_path / f"try{attempt}")
        removed = f"removed the tracefs instance {REAL}/instances/jitterlab-{pid}" in err
        if removed:
            break
    assert removed, err


@real_detour
def test_real_ctrl_c_removes_the_instance_and_keeps_the_chunks(tmp_path):
    run = start_cli(tmp_path, "stopped.detour", 30)
    wait_for_chunks(tmp_path / "stopped.detour", 1, run)
    run.send_signal(signal.SIGINT)
    out, err = run.communicate(timeout=300)  # the test took 273 s at load 12
    assert run.returncode == 130, err
    assert f"jitterlab-{run.pid}" not in instances()
    assert jl.bench.read_kernel_events(tmp_path / "stopped.detour").attrs["sync_marks"] >= 1
