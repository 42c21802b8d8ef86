"""OTF2 archives as event traces (jitterlab.io.otf2): reading, writing, bad input.

The shipped archive ``tests/data/events_small.otf2`` is written by :func:`write_program`
with :data:`SMALL` (run this file, ``python tests/test_otf2.py``, to write it again); it is
encoded as Score-P encodes an MPI run, not as jitterlab writes, and
:func:`test_the_shipped_archive_is_the_small_program` checks it against the intervals
worked out by hand in :func:`small_expected`.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jitterlab as jl
from jitterlab.io import read_otf2_events, write_otf2_events
from jitterlab.testing import random_events

otf2 = pytest.importorskip("otf2")

DATA = Path(__file__).parent / "data"
SHIPPED = DATA / "events_small.otf2"
#: timer of the hand-written archives: microseconds, starting at 1 s
RESOLUTION = 10**6
OFFSET = 10**6
STRIDE = 2**32
NS = 1e-9  # the timer resolution of the archives jitterlab writes [s]

# A program per rank: ("enter"|"leave", time [µs], region, counters) with counters =
# (noise_tick [ns], noise_daemon [µs]) accumulated, or None for no sample;
# ("send"|"recv", time, peer, tag); ("begin", time); ("end", time, communicator).
SMALL = {
    0: [("enter", 0, "main", (0, 0)),
        ("enter", 10, "solve", (0, 0)), ("leave", 40, "solve", (2000, 1)),
        ("enter", 50, "MPI_Send", (2000, 1)), ("send", 50, 1, 5),
        ("leave", 55, "MPI_Send", (2000, 1)),
        ("enter", 60, "MPI_Send", (2000, 1)), ("send", 60, 1, 5),
        ("leave", 65, "MPI_Send", (2000, 1)),
        ("enter", 70, "MPI_Recv", (2000, 1)), ("recv", 90, 1, 5),
        ("leave", 90, "MPI_Recv", (5000, 1)),
        ("enter", 100, "MPI_Allreduce", (5000, 1)), ("begin", 100), ("end", 130, "world"),
        ("leave", 130, "MPI_Allreduce", (5000, 3)),
        ("leave", 140, "main", (6000, 3))],
    1: [("enter", 0, "main", (0, 0)),
        ("enter", 5, "MPI_Recv", (0, 0)), ("recv", 52, 0, 5),
        ("leave", 52, "MPI_Recv", (1000, 0)),
        ("enter", 53, "MPI_Recv", (1000, 0)), ("recv", 66, 0, 5),
        ("leave", 66, "MPI_Recv", (1000, 0)),
        ("enter", 80, "MPI_Send", (1000, 4)), ("send", 80, 0, 5),
        ("leave", 82, "MPI_Send", (1000, 4)),
        ("enter", 95, "MPI_Allreduce", (1000, 4)), ("begin", 95), ("end", 130, "world"),
        ("leave", 130, "MPI_Allreduce", (1000, 4)),
        ("leave", 135, "main", (1500, 4))],
    2: [("enter", 0, "init", (0, 0)), ("leave", 10, "init", (0, 2)),
        ("enter", 20, "main", (0, 2)),
        ("enter", 99, "MPI_Allreduce", (7000, 52)), ("begin", 99), ("end", 130, "world"),
        ("leave", 130, "MPI_Allreduce", (7000, 52)),
        ("leave", 131, "main", (7000, 52))],
}


def small_expected() -> pd.DataFrame:
    """The intervals of SMALL, worked out by hand: (rank, kind, start, end [µs], peer,
    tag, noise_tick [ns], noise_daemon [µs])."""
    rows = [
        (0, "compute", 0, 50, -1, 0, 2000, 1),  # main and solve, up to MPI_Send
        (0, "send", 50, 55, 1, 5, 0, 0),
        (0, "compute", 55, 60, -1, 0, 0, 0),
        (0, "send", 60, 65, 1, 5 + STRIDE, 0, 0),  # tag 5 again: its 2nd use 0 -> 1
        (0, "compute", 65, 70, -1, 0, 0, 0),
        (0, "recv", 70, 90, 1, 5, 3000, 0),
        (0, "compute", 90, 100, -1, 0, 0, 0),
        (0, "collective", 100, 130, -1, 0, 0, 2),
        (0, "compute", 130, 140, -1, 0, 1000, 0),
        (1, "compute", 0, 5, -1, 0, 0, 0),
        (1, "recv", 5, 52, 0, 5, 1000, 0),
        (1, "compute", 52, 53, -1, 0, 0, 0),
        (1, "recv", 53, 66, 0, 5 + STRIDE, 0, 0),
        (1, "compute", 66, 80, -1, 0, 0, 4),
        (1, "send", 80, 82, 0, 5, 0, 0),
        (1, "compute", 82, 95, -1, 0, 0, 0),
        (1, "collective", 95, 130, -1, 0, 0, 0),
        (1, "compute", 130, 135, -1, 0, 500, 0),
        (2, "compute", 0, 10, -1, 0, 0, 2),  # init, then a gap outside every region
        (2, "compute", 20, 99, -1, 0, 7000, 50),
        (2, "collective", 99, 130, -1, 0, 0, 0),
        (2, "compute", 130, 131, -1, 0, 0, 0),
    ]
    frame = pd.DataFrame(rows, columns=["rank", "kind", "start", "end", "peer", "tag",
                                        "tick", "daemon"])
    frame["seq"] = frame.groupby("rank").cumcount()
    for name in ("start", "end"):
        frame[name] = frame[name].to_numpy() / 10**6
    frame["noise_tick"] = frame.pop("tick").to_numpy() / 10**9
    frame["noise_daemon"] = frame.pop("daemon").to_numpy() / 10**6
    return frame


def write_program(path, program, *, metrics_after=False, units=("s", "us"),
                  communicators=None, with_metrics=True) -> Path:
    """Write ``program`` (see SMALL) as Score-P writes an MPI run: one location group
    per rank, MPI_COMM_WORLD, counters sampled just before every Enter and Leave (after
    them with ``metrics_after``), timer in µs from 1 s. Returns the anchor file."""
    n_ranks = len(program)
    with otf2.writer.open(str(path), archive_name="traces",
                          timer_resolution=RESOLUTION) as writer:
        writer.creator = "tests/test_otf2.py (Score-P style)"
        d = writer.definitions
        root = d.system_tree_node("node")
        locations = [d.location("Master thread", group=d.location_group(
            f"MPI Rank {rank}", system_tree_parent=root)) for rank in range(n_ranks)]
        d.group("", group_type=otf2.GroupType.COMM_LOCATIONS, paradigm=otf2.Paradigm.MPI,
                members=locations)
        members = {"world": list(range(n_ranks)), **(communicators or {})}
        comms = {name: d.comm("MPI_COMM_WORLD" if name == "world" else name, group=d.group(
            name, group_type=otf2.GroupType.COMM_GROUP, paradigm=otf2.Paradigm.MPI,
            members=ranks)) for name, ranks in members.items()}
        regions = {}
        counters = d.metric_class(
            [d.metric_member("noise_tick", unit=units[0], exponent=-9 if units[0] == "s"
                             else 0, metric_mode=otf2.MetricMode.ACCUMULATED_START,
                             value_type=otf2.Type.UINT64),
             d.metric_member("noise_daemon", unit=units[1],
                             metric_mode=otf2.MetricMode.ACCUMULATED_START,
                             value_type=otf2.Type.UINT64)],
            occurrence=otf2.MetricOccurrence.SYNCHRONOUS_STRICT) if with_metrics else None
        for rank, records in program.items():
            events = writer.event_writer_from_location(locations[rank])
            for record in records:
                what, time = record[0], OFFSET + record[1]
                if what in ("enter", "leave"):
                    name, values = record[2], record[3]
                    if name not in regions:
                        mpi = name.startswith("MPI_")
                        regions[name] = d.region(name, paradigm=otf2.Paradigm.MPI if mpi
                                                 else otf2.Paradigm.USER)
                    region_record = events.enter if what == "enter" else events.leave
                    if values is not None and counters is not None and not metrics_after:
                        events.metric(time, counters, list(values))
                    region_record(time, regions[name])
                    if values is not None and counters is not None and metrics_after:
                        events.metric(time, counters, list(values))
                elif what == "send":
                    events.mpi_send(time, record[2], comms["world"], record[3], 8)
                elif what == "recv":
                    events.mpi_recv(time, record[2], comms["world"], record[3], 8)
                elif what == "begin":
                    events.mpi_collective_begin(time)
                elif what == "end":
                    events.mpi_collective_end(time, otf2.CollectiveOp.ALLREDUCE,
                                              comms[record[2]], otf2.Undefined.UINT32, 8, 8)
    return Path(path) / "traces.otf2"


def inserted(program, rank, index, record):
    """A copy of ``program`` with ``record`` inserted before record ``index`` of ``rank``."""
    copy = {r: list(records) for r, records in program.items()}
    copy[rank].insert(index, record)
    return copy


def changed(program, rank, index, record=None):
    """A copy of ``program`` with record ``index`` of ``rank`` replaced (None: removed)."""
    copy = {r: list(records) for r, records in program.items()}
    if record is None:
        del copy[rank][index]
    else:
        copy[rank][index] = record
    return copy


def assert_close(back: jl.EventTrace, trace: jl.EventTrace, times=0.5 * NS, noise=NS):
    """Same intervals; times within ``times`` and noise within ``noise`` [s]."""
    exact = ["rank", "seq", "kind", "peer", "tag"]
    pd.testing.assert_frame_equal(back.data[exact], trace.data[exact])
    assert back.sources == trace.sources
    for name in ("start", "end"):
        error = np.abs(back.data[name].to_numpy() - trace.data[name].to_numpy())
        assert error.max() <= times + 4 * np.finfo(float).eps * trace.data[name].abs().max()
    for source in trace.sources:
        assert np.abs(back.noise(source) - trace.noise(source)).max() <= noise


# ---------------------------------------------------------------------- reading
def test_the_shipped_archive_is_the_small_program(tmp_path):
    back = read_otf2_events(SHIPPED)
    expected = jl.EventTrace(small_expected())
    assert back.data.equals(expected.data)
    assert back.attrs["source"] == "otf2" and back.attrs["timer_resolution_hz"] == 10**6
    assert back.file == str(SHIPPED / "traces.otf2") and back.latency == 0.0
    # the generator still writes it
    fresh = read_otf2_events(write_program(tmp_path / "small", SMALL))
    assert fresh.data.equals(back.data)


def test_samples_just_after_the_region_records_give_the_same_trace(tmp_path):
    after = read_otf2_events(write_program(tmp_path / "after", SMALL, metrics_after=True))
    assert after.data.equals(jl.EventTrace(small_expected()).data)


def test_a_reused_tag_is_matched_in_order_and_renumbered():
    trace = read_otf2_events(SHIPPED)
    sends, recvs = trace.message_pairs()
    data = trace.data
    pairs = sorted((int(data["rank"].iat[s]), int(data["seq"].iat[s]),
                    int(data["rank"].iat[r]), int(data["seq"].iat[r]), int(data["tag"].iat[s]))
                   for s, r in zip(sends, recvs, strict=True))
    # MPI's order: the 1st send 0 -> 1 with tag 5 meets the 1st such receive, the 2nd the 2nd
    assert pairs == [(0, 1, 1, 1, 5), (0, 3, 1, 3, 5 + STRIDE), (1, 5, 0, 5, 5)]
    assert (data["tag"] % STRIDE)[data["kind"].isin(["send", "recv"])].eq(5).all()


def test_metric_units(tmp_path):
    # the same counters as unit "ns" (tick, exponent 0) and daemon ×1000 in ns
    program = {rank: [record[:3] + ((record[3][0], record[3][1] * 1000),)
                      if record[0] in ("enter", "leave") else record for record in records]
               for rank, records in SMALL.items()}
    back = read_otf2_events(write_program(tmp_path / "ns", program, units=("ns", "ns")))
    assert back.data.equals(jl.EventTrace(small_expected()).data)


def test_the_metrics_option_names_members_and_sources(tmp_path):
    back = read_otf2_events(SHIPPED, metrics={"noise_daemon": "daemon"})
    assert back.sources == ["daemon"]
    assert back.data["noise_daemon"].equals(small_expected()["noise_daemon"])
    assert read_otf2_events(SHIPPED, metrics="noise_tick").sources == ["tick"]
    assert read_otf2_events(SHIPPED, latency=1e-6).latency == 1e-6
    with pytest.raises(ValueError, match=r"recv from rank 0 \(tag 5\) ends at 5.2e-05 s, "
                                         r"before its send starts"):
        read_otf2_events(SHIPPED, latency=3e-6)  # the first message took 2 µs


# ---------------------------------------------------------------------- round trip
def test_round_trip_of_the_small_program_is_exact(tmp_path):
    trace = jl.EventTrace(small_expected(), latency=1e-6, source="hand", machine="none")
    anchor = write_otf2_events(trace, tmp_path / "small.otf2")
    assert anchor == tmp_path / "small.otf2" / "traces.otf2"
    back = read_otf2_events(anchor)
    assert back.equals(trace)
    assert read_otf2_events(tmp_path / "small.otf2").equals(trace)  # the directory


def test_round_trip_of_negative_times_is_exact(tmp_path):
    frame = small_expected()
    for name in ("start", "end"):  # 1 ms earlier, still whole microseconds
        frame[name] = (np.rint(frame[name].to_numpy() * 10**6) - 1000) / 10**6
    trace = jl.EventTrace(frame)
    assert trace.data["start"].min() == -1e-3
    assert read_otf2_events(write_otf2_events(trace, tmp_path / "early")).equals(trace)


def test_round_trip_of_a_random_program_to_the_timer_resolution(tmp_path):
    trace = random_events(5, n_ranks=5, steps=20, latency=0.01)
    back = read_otf2_events(write_otf2_events(trace, tmp_path / "run"))
    assert back.latency == trace.latency and back.attrs == trace.attrs
    assert_close(back, trace)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), ranks=st.integers(1, 5), irregular=st.booleans())
def test_round_trip_of_random_programs(seed, ranks, irregular, tmp_path_factory):
    trace = random_events(seed, n_ranks=ranks, steps=8, irregular=irregular)
    path = tmp_path_factory.mktemp("otf2") / "run"
    assert_close(read_otf2_events(write_otf2_events(trace, path)), trace)


def test_a_simulated_run_round_trips_with_its_attrs(tmp_path):
    trace = jl.simulate(jl.Trace(jitter=[1e-6], gap=[99e-6]), n=8, work=50e-6, phases=3,
                        rng=2, detail="events")
    back = read_otf2_events(write_otf2_events(trace, tmp_path / "sim"))
    assert back.attrs == trace.attrs
    assert_close(back, trace)


def test_tags_that_share_their_mpi_tag_come_back(tmp_path):
    frame = small_expected()
    frame.loc[frame["tag"] == 5 + STRIDE, "tag"] = 5 + 7 * STRIDE
    frame.loc[frame["kind"] == "collective", "tag"] = -3
    trace = jl.EventTrace(frame)
    assert read_otf2_events(write_otf2_events(trace, tmp_path / "tags")).equals(trace)


def test_accumulated_noise_is_the_same_after_the_round_trip(tmp_path):
    for trace in (read_otf2_events(SHIPPED), jl.EventTrace(small_expected(), latency=2e-6)):
        back = read_otf2_events(write_otf2_events(trace, tmp_path / "run", overwrite=True))
        before = jl.estimate.accumulated_noise(trace)
        after = jl.estimate.accumulated_noise(back)
        for name in ("accumulated", "local", "run_accumulated"):
            assert np.abs(after[name] - before[name]).max().item() <= NS


def test_accumulated_noise_of_an_off_grid_program_within_the_rounding(tmp_path):
    # times rounded to 0.5 ns, noise to 1 ns per interval: a rank's approximated end
    # moves by at most the sum over the intervals it waits through
    trace = random_events(7, n_ranks=4, steps=12)
    back = read_otf2_events(write_otf2_events(trace, tmp_path / "run"))
    before = jl.estimate.accumulated_noise(trace)
    after = jl.estimate.accumulated_noise(back)
    bound = (len(trace) + 1) * NS
    assert np.abs(after["accumulated"] - before["accumulated"]).max().item() <= bound
    assert np.abs(after["local"] - before["local"]).max().item() <= len(trace) * NS


def test_write_replaces_only_when_asked(tmp_path):
    trace = random_events(1, n_ranks=2, steps=4)
    path = tmp_path / "run"
    write_otf2_events(trace, path)
    with pytest.raises(FileExistsError, match="run exists; pass overwrite=True"):
        write_otf2_events(random_events(2, n_ranks=3, steps=4), path)
    assert read_otf2_events(path).n_ranks == 2
    write_otf2_events(random_events(2, n_ranks=3, steps=4), path, overwrite=True)
    assert read_otf2_events(path).n_ranks == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # no temporary left
    with pytest.raises(TypeError, match="must be a jl.EventTrace"):
        write_otf2_events(trace.data, tmp_path / "x")


# ---------------------------------------------------------------------- bad input
def test_a_missing_archive_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothere.otf2: no such OTF2 archive"):
        read_otf2_events(tmp_path / "nothere.otf2")
    with pytest.raises(ValueError, match="holds one anchor file .* found none"):
        read_otf2_events(tmp_path)


@pytest.mark.parametrize("damage, message", [
    # OTF2 reads an empty or cut event file either as an error or as fewer records
    ("evt-half", r"traces.otf2: .*rank 1 \(MPI Rank 1/Master thread\)"),
    ("evt-empty", r"traces.otf2: .*rank 1 \(MPI Rank 1/Master thread\)"),
    ("evt-missing", r"traces.otf2: .*rank 1 \(MPI Rank 1/Master thread\)"),
    ("anchor-half", r"traces.otf2: not a readable OTF2 archive"),
    ("anchor-zeros", r"traces.otf2: not a readable OTF2 archive"),
    ("def-half", r"traces.otf2: not a readable OTF2 archive"),
])
def test_a_damaged_archive_is_refused_naming_it(tmp_path, damage, message):
    anchor = write_program(tmp_path / "cut", SMALL)
    part, how = damage.split("-")
    target = {"evt": tmp_path / "cut" / "traces" / "1.evt", "anchor": anchor,
              "def": tmp_path / "cut" / "traces.def"}[part]
    data = target.read_bytes()
    if how == "missing":
        target.unlink()
    else:
        target.write_bytes({"half": data[: len(data) // 2], "empty": b"",
                            "zeros": bytes(len(data))}[how])
    with pytest.raises(ValueError, match=message) as error:
        read_otf2_events(anchor)
    assert "damaged or truncated" in str(error.value)


@pytest.mark.parametrize("program, message", [
    (changed(SMALL, 1, 5),  # rank 1 never receives the 2nd message with tag 5
     r"rank 0 \(MPI Rank 0/Master thread\), interval seq 3 \(MPI_Send at 6e-05 s\): send "
     r"to rank 1 with MPI tag 5 \(the 2nd such message\) has no matching receive on rank 1 "
     r"\(2 sends, 1 receives\)"),
    (changed(SMALL, 1, 8, ("send", 80, 0, 6)),
     r"rank 0 .*interval seq 5 \(MPI_Recv at 7e-05 s\): recv from rank 1 with MPI tag 5 "
     r"\(the 1st such message\) has no matching send on rank 1"),
    (changed(SMALL, 0, 15, ("leave", 130, "main", (5000, 3))),
     r"rank 0 .*Leave record at 0.00013 s: Leave of region 'main' while the open region "
     r"is 'MPI_Allreduce'"),
    (changed(SMALL, 2, 7),
     r"rank 2 \(MPI Rank 2/Master thread\): region 'main' entered at 2e-05 s is never "
     r"left"),
    (changed(SMALL, 1, 14, ("leave", 135, "main", None)),
     r"rank 1 .*interval seq 8 \(compute, 0.00013 s to 0.000135 s\): no sample of metric "
     r"'noise_tick' at its end \(0.000135 s\)"),
    (changed(SMALL, 0, 0, ("enter", 0, "main", (3000, 0))),
     r"rank 0, interval seq 0: noise 'tick' must be finite and >= 0"),
    (changed(SMALL, 0, 16, ("leave", 140, "main", (90000, 3))),
     r"rank 0, interval seq 8: noise 'tick' of 8.5e-05 s is longer than the interval"),
    (inserted(SMALL, 0, 5, ("recv", 52, 1, 5)),
     r"rank 0 .*MpiRecv record at 5.2e-05 s: region 'MPI_Send' already holds a send"),
    (changed(SMALL, 0, 13),
     r"rank 0 .*MpiCollectiveEnd record at 0.00013 s: MpiCollectiveEnd without "
     r"MpiCollectiveBegin in region 'MPI_Allreduce'"),
    (changed(SMALL, 0, 14),
     r"rank 0 .*Leave record at 0.00013 s: region 'MPI_Allreduce' has an "
     r"MpiCollectiveBegin without MpiCollectiveEnd"),
])
def test_a_malformed_program_is_refused_naming_file_rank_and_interval(tmp_path, program,
                                                                      message):
    anchor = write_program(tmp_path / "bad", program)
    with pytest.raises(ValueError, match=r"bad/traces.otf2: " + message):
        read_otf2_events(anchor)


def test_a_collective_on_part_of_the_ranks_is_refused(tmp_path):
    program = {rank: [r if r[0] != "end" else ("end", r[1], "half") for r in records]
               for rank, records in SMALL.items()}
    anchor = write_program(tmp_path / "bad", program, communicators={"half": [0, 1]})
    with pytest.raises(ValueError, match=r"rank 0 .*MpiCollectiveEnd record at 0.00013 s: "
                                         r"collective on communicator 'half' of 2 ranks"):
        read_otf2_events(anchor)


def test_an_archive_without_noise_metrics_is_refused_naming_it(tmp_path):
    anchor = write_program(tmp_path / "quiet", SMALL, with_metrics=False)
    with pytest.raises(ValueError, match=r"quiet/traces.otf2: no noise metric in the "
                                         r"archive: .*noise_<source>"):
        read_otf2_events(anchor)
    with pytest.raises(ValueError, match=r"no metric member 'noise_disk'"):
        read_otf2_events(SHIPPED, metrics=["noise_disk"])


def test_a_noise_metric_in_an_unknown_unit_is_refused(tmp_path):
    anchor = write_program(tmp_path / "cycles", SMALL, units=("cycles", "us"))
    with pytest.raises(ValueError, match=r"metric 'noise_tick' has unit 'cycles'"):
        read_otf2_events(anchor)


if __name__ == "__main__":  # write the shipped archive again
    import shutil

    shutil.rmtree(SHIPPED, ignore_errors=True)
    print(write_program(SHIPPED, SMALL))


def test_read_events_reads_an_otf2_archive_by_its_suffix():
    # jl.read_events dispatches on ".otf2", for the directory and for its anchor file
    for path in (SHIPPED, SHIPPED / "traces.otf2"):
        assert jl.read_events(path).equals(read_otf2_events(SHIPPED))


def test_any_order_receives_survive_the_round_trip(tmp_path):
    # a tree barrier's children are received in any order; dropping the flag moved the
    # estimate of a simulated run from 4.5 to 3.5 µs
    trace = jl.synthetic_trace(duration=2.0, rng=1)
    run = jl.simulate(trace, n=15, work=1e-4, phases=5, barrier=jl.TreeBarrier(), rng=3,
                      detail="events")
    assert run.any_order().any()
    back = read_otf2_events(write_otf2_events(run, tmp_path / "tree"))
    np.testing.assert_array_equal(back.any_order(), run.any_order())
    before = jl.estimate.accumulated_noise(run)["run_accumulated"].item()
    after = jl.estimate.accumulated_noise(back)["run_accumulated"].item()
    truth = run.attrs["makespan"] - run.attrs["noiseless_makespan"]
    assert before == pytest.approx(truth, abs=1e-12)
    assert abs(after - before) <= NS


def test_a_rooted_collective_is_refused_naming_it(tmp_path):
    import otf2

    path = tmp_path / "bcast"
    with otf2.writer.open(str(path), archive_name="traces", timer_resolution=10**9) as writer:
        d = writer.definitions
        root = d.system_tree_node("machine")
        locations = [d.location("Master thread", group=d.location_group(
            f"MPI Rank {r}", system_tree_parent=root)) for r in range(2)]
        d.group("MPI_COMM_WORLD locations", group_type=otf2.GroupType.COMM_LOCATIONS,
                paradigm=otf2.Paradigm.MPI, members=locations)
        world = d.comm("MPI_COMM_WORLD", group=d.group(
            "MPI_COMM_WORLD", group_type=otf2.GroupType.COMM_GROUP,
            paradigm=otf2.Paradigm.MPI, members=[0, 1]))
        bcast = d.region("MPI_Bcast", paradigm=otf2.Paradigm.MPI,
                         region_role=otf2.RegionRole.COLL_ONE2ALL)
        members = [d.metric_member("noise_combined", "noise", value_type=otf2.Type.UINT64,
                                   metric_mode=otf2.MetricMode.ACCUMULATED_START,
                                   base=otf2.Base.DECIMAL, exponent=-9, unit="s")]
        counters = d.metric_class(members)
        for rank in range(2):
            events = writer.event_writer_from_location(locations[rank])
            events.metric(10, counters, [0])
            events.enter(10, bcast)
            events.mpi_collective_begin(10)
            events.mpi_collective_end(20, otf2.CollectiveOp.BCAST, world, 0, 8, 8)
            events.metric(20, counters, [0])
            events.leave(20, bcast)
    with pytest.raises(ValueError, match="region 'MPI_Bcast' is a BCAST collective, in which "
                       "ranks do not all wait for each other"):
        read_otf2_events(path / "traces.otf2")
