"""Trace file formats: lossless round trips, the LogGOPSim reference trace, bad input."""

import datetime as dt
import gzip
import math
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jitterlab.io import EXTENSIONS, FORMATS, NotATraceError, read_trace
from jitterlab.io.common import atomic_write
from jitterlab.traces.synthetic import capped_pareto_mean
from jitterlab.traces.trace import Trace

DATA = Path(__file__).parent / "data"
DEVREF = DATA / "devref.trc.gz"

FIG2_JITTER = [10, 5, 25, 5, 15, 20, 10, 60, 5, 10]
FIG2_GAP = [50, 30, 20, 10, 100, 300, 20, 60, 20, 70]

METADATA = {
    "source": "jitSim Fig. 2",
    "host": "node-ä1",
    "collected_at": dt.datetime(2010, 8, 31, 9, 0, tzinfo=dt.UTC),
    "threshold": 1e-7,
    "t_min": None,
    "cpu": 3,
    "flag": True,
    "nested": {"a": [1, 2.5, None, {"b": "x: y"}], "empty": {}},
    "odd key: with colon\nand newline": "v",
    "comment": "line one\nline two",
}

WRITERS = {
    "csv": "to_csv", "csv.gz": "to_csv", "parquet": "to_parquet", "parquet.gz": "to_parquet",
    "nc": "to_netcdf", "nc.gz": "to_netcdf", "jitsim": "to_jitsim", "tsv": "to_jitsim",
    "jitsim.gz": "to_jitsim", "trc": "to_loggopsim", "trc.gz": "to_loggopsim",
}


def fig2(**metadata):
    return Trace(FIG2_JITTER, FIG2_GAP, unit="cycles", frequency_hz=1e9, **metadata)


def write(trace, directory, extension):
    return getattr(trace, WRITERS[extension])(Path(directory) / f"trace.{extension}")


# --------------------------------------------------------------------------------------
# round trips
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("extension", list(WRITERS))
def test_fig2_round_trips_through_every_format(tmp_path, extension):
    trace = fig2(**METADATA)
    path = write(trace, tmp_path, extension)
    assert path.exists()
    back = read_trace(path)
    assert back.equals(trace), back.attrs
    assert back.attrs["collected_at"] == "2010-08-31T09:00:00+00:00"
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left


@pytest.mark.parametrize("extension", ["csv.gz", "nc.gz", "parquet.gz", "trc.gz"])
def test_gz_files_are_gzip(tmp_path, extension):
    path = write(fig2(), tmp_path, extension)
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    assert read_trace(path, format=EXTENSIONS["." + extension.split(".")[0]]).equals(fig2())


def test_compression_is_recognised_from_the_content(tmp_path):
    path = fig2().to_csv(tmp_path / "plain.csv")
    packed = tmp_path / "packed.csv"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    assert read_trace(packed).equals(fig2())


def test_jitsim_table_matches_the_paper(tmp_path):
    text = fig2().to_jitsim(tmp_path / "fig2.jitsim").read_text()
    table = [line for line in text.splitlines() if not line.startswith("#")]
    assert table[0] == "jitter_duration\tcycles_to_next_jitter"
    assert table[1:] == [f"{j}\t{g}" for j, g in zip(FIG2_JITTER, FIG2_GAP, strict=True)]
    assert "# frequency_hz: 1000000000.0" in text


def test_loggopsim_file_of_fig2(tmp_path):
    text = fig2(offset=2e-6).to_loggopsim(tmp_path / "fig2.trc").read_text()
    rows = [line for line in text.splitlines() if not line.startswith("#")]
    assert rows[:3] == ["2000\t10", "2060\t5", "2095\t25"]
    assert "# duration_ns: 845" in text.splitlines()


def _attr_values():
    scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
               | st.floats(allow_nan=False) | st.text(max_size=8))
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                        | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                        max_leaves=6)


_RESERVED = {"unit", "frequency_hz", "duration_ns", "jitterlab_trace_json_keys",
             "jitterlab_trace_other_attrs", "jitterlab_trace_format"}
attr_dicts = st.dictionaries(st.text(min_size=1, max_size=10).filter(
    lambda k: k not in _RESERVED and k not in ("offset", "jitter", "gap")), _attr_values(),
    max_size=4)
times = st.floats(0, 1e9, allow_nan=False, allow_infinity=False)


@st.composite
def traces(draw):
    n = draw(st.integers(1, 20))
    jitter = draw(st.lists(times, min_size=n, max_size=n))
    gap = draw(st.lists(times, min_size=n, max_size=n))
    if sum(jitter) + sum(gap) == 0:
        gap[0] = 1.0
    unit = draw(st.sampled_from(["s", "cycles"]))
    frequencies = st.floats(1.0, 1e10)
    frequency = draw(frequencies if unit == "cycles" else st.none() | frequencies)
    return Trace(jitter, gap, unit, frequency, **draw(attr_dicts))


@given(trace=traces(), extension=st.sampled_from(["csv", "parquet", "nc", "jitsim"]))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_random_traces_round_trip(trace, extension):
    with tempfile.TemporaryDirectory() as directory:
        back = read_trace(write(trace, directory, extension))
    assert back.equals(trace), (trace.attrs, back.attrs)


@st.composite
def nanosecond_traces(draw):
    """Traces in seconds on a 1 ns grid (times k/1e9), which LogGOPSim keeps exactly."""
    n = draw(st.integers(1, 20))
    ns = st.integers(0, 10**10)
    jitter = draw(st.lists(ns, min_size=n, max_size=n))
    gap = draw(st.lists(ns, min_size=n, max_size=n))
    if sum(jitter) + sum(gap) == 0:
        gap[0] = 1
    metadata = draw(attr_dicts)
    offset = draw(st.none() | st.integers(0, 10**10))
    if offset is not None:
        metadata["offset"] = offset / 1e9
    frequency = draw(st.none() | st.floats(1e6, 1e10))
    return Trace(np.array(jitter) / 1e9, np.array(gap) / 1e9, "s", frequency, **metadata)


@given(trace=nanosecond_traces())
@settings(max_examples=60, deadline=None)
def test_nanosecond_traces_round_trip_through_loggopsim(trace):
    with tempfile.TemporaryDirectory() as directory:
        back = read_trace(write(trace, directory, "trc"))
    assert back.equals(trace), (trace.attrs, back.attrs)


def test_loggopsim_rounds_to_nanoseconds(tmp_path):
    trace = Trace([1.4e-9, 2.6e-9], [3.3e-9, 0.2e-9])
    back = read_trace(trace.to_loggopsim(tmp_path / "x.trc"))
    # starts 0 and 4.7 ns, ends 1.4 and 7.3 ns, cycle 7.5 ns -> 0/1, 5/2 ns, total 8 ns
    assert (back.jitter * 1e9).round(9).tolist() == [1.0, 2.0]
    assert (back.gap * 1e9).round(9).tolist() == [4.0, 1.0]


# --------------------------------------------------------------------------------------
# the LogGOPSim reference trace
# --------------------------------------------------------------------------------------
def test_devref_reference_trace():
    trace = read_trace(DEVREF)
    lines = gzip.decompress(DEVREF.read_bytes()).decode().splitlines()
    assert len(lines) == 9313
    n_comments = sum(line.startswith("#") for line in lines)
    assert n_comments == 1
    assert trace.n_events == len(lines) - n_comments == 9312
    assert trace.unit == "s"
    assert "250 Hz tick" in trace.attrs["comment"]
    # first event: 1300000 ns for 2262 ns, next at 5300000 ns
    assert trace.attrs["offset"] == 1300000 / 1e9
    assert trace.jitter[0] == 2262 / 1e9
    assert trace.gap[0] == (5300000 - 1302262) / 1e9
    stats = trace.stats()
    assert stats["duration"] == pytest.approx(30.0, abs=0.01)
    # 250 Hz tick + 10 Hz daemon, deterministic, + Poisson interrupts at 50/s: the count
    # of interrupts over T = 30 s has standard deviation sqrt(50·T) ≈ 39, i.e. 1.3 per
    # second; allow 5 standard deviations
    sd_rate = math.sqrt(50 * 30) / 30
    assert abs(stats["event_rate"] - 310) < 5 * sd_rate
    # noise: ticks 250·2.5 µs + daemon 10·40 µs + 50·E[min(Pareto(1.8, 5 µs), 2 ms)] per s
    expected = 250 * 2.5e-6 + 10 * 40e-6 + 50 * capped_pareto_mean(1.8, 5e-6, 2e-3)
    assert stats["noise_fraction"] == pytest.approx(expected, rel=0.15)
    assert stats["p50_jitter"] == pytest.approx(2.5e-6, rel=0.1)


def test_devref_overlap_rules():
    # the reference file has one pair of events that overlap by 1 ns (lines 697 and 698)
    assert read_trace(DEVREF, overlap="merge").n_events == 9311
    with pytest.raises(ValueError, match="devref.trc.gz line 698: .* line 697"):
        read_trace(DEVREF, overlap="raise")


def test_overlapping_loggopsim_events(tmp_path):
    path = tmp_path / "x.trc"
    path.write_text("3\t1\n0\t5\n")
    with pytest.raises(ValueError, match="x.trc line 1: the event overlaps the one on line 2"):
        read_trace(path, overlap="raise")
    serial = read_trace(path)  # the event at 3 ns waits until 5 ns
    assert (serial.jitter * 1e9).tolist() == [5.0, 1.0]
    assert (serial.gap * 1e9).tolist() == [0.0, 0.0]
    assert "offset" not in serial.attrs
    merged = read_trace(path, overlap="merge")
    assert (merged.jitter * 1e9).tolist() == [5.0] and merged.gap.tolist() == [0.0]


def test_reading_the_paper_table_needs_a_frequency(tmp_path):
    path = tmp_path / "paper.tsv"
    rows = "".join(f"{j}\t{g}\n" for j, g in zip(FIG2_JITTER, FIG2_GAP, strict=True))
    path.write_text("Jitter duration\tCycles_to_next_jitter\n" + rows)
    with pytest.raises(ValueError, match="paper.tsv: the trace is in cycles"):
        read_trace(path)
    assert read_trace(path, frequency_hz=1e9).equals(fig2())
    bare = tmp_path / "bare.jitsim"
    bare.write_text(rows.replace("\t", "  "))
    seconds = read_trace(bare, unit="s")
    assert seconds.unit == "s" and seconds.jitter.tolist() == FIG2_JITTER


def test_plain_csv_defaults_to_seconds(tmp_path):
    path = tmp_path / "plain.csv"
    path.write_text("jitter,gap\n0.5, 1.5\n\n0,2\n")
    trace = read_trace(path)
    assert trace.unit == "s" and trace.attrs == {}
    assert trace.jitter.tolist() == [0.5, 0.0] and trace.gap.tolist() == [1.5, 2.0]


# --------------------------------------------------------------------------------------
# format selection
# --------------------------------------------------------------------------------------
def test_registry():
    # only what read_trace reads: FTQ and FWQ output are not traces (read_ftq, read_fwq)
    assert set(FORMATS) == {"jitterlab", "jitsim", "loggopsim", "sysjitter", "detour"}
    assert set(EXTENSIONS.values()) <= set(FORMATS)


def test_unknown_extension_and_format(tmp_path):
    path = tmp_path / "trace.dat"
    path.write_text("1\t2\n")
    with pytest.raises(ValueError, match=r"trace.dat.*'jitterlab'.*'jitsim'.*'loggopsim'"):
        read_trace(path)
    with pytest.raises(ValueError, match="unknown trace format 'netgauge'"):
        read_trace(path, format="netgauge")
    assert read_trace(str(path), format="loggopsim").n_events == 1
    with pytest.raises(ValueError) as info:
        read_trace(path)
    assert "'ftq'" not in str(info.value) and "read_ftq" in str(info.value)


def test_missing_file_is_named(tmp_path):
    for name in ("missing.csv", "missing.3", "missing.jitsim.gz"):
        with pytest.raises(FileNotFoundError, match=name):
            read_trace(tmp_path / name)


@pytest.mark.parametrize(("path", "format"), [(3, None), (None, None), ("x.csv", 3),
                                              ("x.csv", ["jitsim"])])
def test_path_and_format_of_the_wrong_type(path, format):
    with pytest.raises(TypeError, match="path" if format is None else "format"):
        read_trace(path, format=format)


@pytest.mark.parametrize(("name", "format", "keyword", "accepted"), [
    ("x.jitsim", None, "frequency", "unit, frequency_hz"),
    ("x.csv", None, "unit", "no options"),
    ("x.trc", "loggopsim", "overlaps", "overlap"),
    ("x.1", "sysjitter", "cycles", "unit, overlap"),
])
def test_unknown_keyword_names_it_and_the_accepted_ones(tmp_path, name, format, keyword,
                                                        accepted):
    path = fig2().to_jitsim(tmp_path / name)
    with pytest.raises(TypeError, match=f"'{keyword}'.*{format or ''}.*{accepted}"):
        read_trace(path, format=format, **{keyword: 1})


@pytest.mark.parametrize(("name", "format", "options", "error", "message"), [
    ("x.jitsim", None, {"unit": "ms"}, ValueError, r"unit must be one of .*'ms'"),
    ("x.jitsim", None, {"unit": 1}, TypeError, "unit must be one of"),
    ("x.jitsim", None, {"frequency_hz": "1e9"}, TypeError, "frequency_hz must be a real"),
    ("x.jitsim", None, {"frequency_hz": -1e9}, ValueError, "frequency_hz must be finite"),
    ("x.trc", None, {"overlap": "ignore"}, ValueError, r"overlap must be one of .*'ignore'"),
    ("x.trc", None, {"overlap": None}, TypeError, "overlap must be one of"),
    ("x.1", "sysjitter", {"unit": "ns"}, ValueError, r"unit must be one of .*'ns'"),
    ("x.1", "sysjitter", {"overlap": "drop"}, ValueError, r"overlap must be one of .*'drop'"),
])
def test_bad_option_values_name_the_option(tmp_path, name, format, options, error, message):
    # checked before the file is read (the file here is not even of that format)
    path = tmp_path / name
    path.write_text("not a trace\n")
    with pytest.raises(error, match=message):
        read_trace(path, format=format, **options)


# --------------------------------------------------------------------------------------
# corrupt compressed and binary files
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["trace.csv.gz", "trace.jitsim.gz", "trace.parquet.gz",
                                  "trace.nc.gz", "trace.trc.gz", "packed.csv"])
@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_corrupt_gzip_names_the_file(tmp_path, name, damage):
    packed = gzip.compress(fig2().to_jitsim(tmp_path / "source.jitsim").read_bytes())
    data = packed[:len(packed) // 2] if damage == "truncated" else packed[:10] + b"\0" * 40
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(ValueError, match=rf"{name}: not a readable gzip file"):
        read_trace(path, format="loggopsim" if name.startswith("trace.trc") else None)


@pytest.mark.parametrize(("name", "kind"), [
    ("junk.parquet", "Parquet"), ("junk.nc", "netCDF"), ("junk.parquet.gz", "Parquet"),
    ("junk.nc.gz", "netCDF"),
])
@pytest.mark.parametrize("content", [b"junk junk junk\n", b"jitter,gap\n1,2\n", b""])
def test_junk_binary_files_are_not_reported_as_csv(tmp_path, name, kind, content):
    path = tmp_path / name
    path.write_bytes(gzip.compress(content) if name.endswith(".gz") else content)
    with pytest.raises(ValueError, match=rf"{name}: not a {kind} file") as info:
        read_trace(path)
    assert "header" not in str(info.value)


def test_damaged_netcdf_names_the_file(tmp_path):
    path = fig2().to_netcdf(tmp_path / "cut.nc")
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(ValueError, match="cut.nc: not a readable netCDF file"):
        read_trace(path)


# --------------------------------------------------------------------------------------
# malformed files
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("devref.trc", "# c\n1\t2\n3\t4\n5\t6\n7\t8\n9\t10\nabc\n",
         r"devref.trc line 7: expected '<start ns>\\t<duration ns>', got 'abc'"),
        ("x.trc", "1\t2\t3\n", r"x.trc line 1: expected '<start ns>\\t<duration ns>'"),
        ("x.trc", "10\t2\n5\tnan\n", "x.trc line 2: expected finite non-negative"),
        ("x.trc", "10\t2\n-5\t1\n", "x.trc line 2: expected finite non-negative"),
        ("x.trc", "# duration_ns: 4\n0\t5\n", "x.trc: total_duration .* shorter"),
        ("x.trc", '# duration_ns: "long"\n0\t5\n', "x.trc: metadata 'duration_ns'"),
        ("x.trc", "# only a comment\n", "x.trc: expected lines"),
        ("x.jitsim", "# frequency_hz: 1e9\n10\t50\n5\n", r"x.jitsim line 3: expected"),
        ("x.jitsim", "# frequency_hz: 1e9\nfoo\tbar\n", r"x.jitsim line 2: expected"),
        ("x.csv", "jitter;gap\n1;2\n", "x.csv line 1: expected the header 'jitter,gap'"),
        ("x.csv", "# unit: \"s\"\njitter,gap\n1,2\n1,x\n", "x.csv line 4: expected"),
        ("x.csv", "jitter,gap\n", "x.csv: the table has no rows"),
        ("x.csv", "# unit: \"ms\"\njitter,gap\n1,2\n", "x.csv: unit must be"),
        ("x.csv", "jitter,gap\n0,0\n", "x.csv: the trace has zero length"),
    ],
)
def test_malformed_text_files(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_trace(path)


def test_malformed_binary_files(tmp_path):
    bad = tmp_path / "x.parquet"
    bad.write_bytes(b"PAR1 not really")
    with pytest.raises(ValueError, match="x.parquet: not a readable Parquet file"):
        read_trace(bad)
    binary = tmp_path / "x.csv"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ValueError, match="x.csv: not a UTF-8 text file"):
        read_trace(binary)


def test_parquet_without_trace_columns(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "other.parquet"
    pq.write_table(pa.table({"start": [1.0]}), path)
    with pytest.raises(ValueError, match="expected columns 'jitter' and 'gap'"):
        read_trace(path)


def test_reserved_metadata_keys_are_refused(tmp_path):
    trace = fig2()
    trace.attrs["unit"] = "oops"
    with pytest.raises(ValueError, match="reserved"):
        trace.to_csv(tmp_path / "x.csv")
    with pytest.raises(ValueError, match="reserved"):
        fig2(duration_ns=5).to_loggopsim(tmp_path / "x.trc")
    assert not list(tmp_path.iterdir())


def test_loggopsim_refuses_lines_it_cannot_read(tmp_path):
    with pytest.raises(ValueError, match="longer than the 1023 bytes"):
        fig2(notes="x" * 2000).to_loggopsim(tmp_path / "x.trc")


def test_failed_write_keeps_the_old_file(tmp_path):
    path = fig2().to_csv(tmp_path / "keep.csv")
    before = path.read_bytes()

    def broken(temp):
        temp.write_text("partial")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic_write(path, broken)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["keep.csv"]


@pytest.mark.parametrize(("name", "reader"), [
    ("fwq_cpu1_w300us.nc", "jitterlab.measure.read_fwq_samples"),
    ("pb_2ranks_w300us.nc", "jitterlab.measure.read_pb"),
])
def test_benchmark_results_point_to_their_reader(name, reader):
    path = Path(__file__).parents[1] / "data" / "measured" / name
    with pytest.raises(NotATraceError, match=rf"{name} holds .*{reader}\(path\)"):
        read_trace(path)


@pytest.mark.parametrize("name", ["samples.csv", "samples.csv.gz", "bare.nc"])
def test_fwq_samples_files_point_to_their_reader(tmp_path, name):
    import jitterlab as jl

    path = jl.bench.write_fwq_samples(jl.noise.Empirical([1e-6, 2e-6]), tmp_path / name)
    with pytest.raises(NotATraceError, match=rf"{name} holds FWQ samples.*read_fwq_samples"):
        read_trace(path)


# --------------------------------------------------------------------------------------
# the one writer rule, in the atomic write itself (issue #19)
# --------------------------------------------------------------------------------------
def test_atomic_write_refuses_an_existing_file_before_writing(tmp_path):
    path = tmp_path / "kept.csv"
    path.write_text("mine")
    calls = []
    with pytest.raises(FileExistsError, match="kept.csv exists; pass overwrite=True"):
        atomic_write(path, calls.append, overwrite=False)
    assert calls == [] and path.read_text() == "mine"
    with pytest.raises(TypeError, match="overwrite must be True or False, got 'yes'"):
        atomic_write(path, calls.append, overwrite="yes")


@pytest.mark.parametrize("name", ["raced.csv", "raced.csv.gz"])
def test_a_file_that_appears_during_the_write_is_not_replaced(tmp_path, name):
    path = tmp_path / name

    def slow_writer(temp):  # another process creates the file while this one writes
        temp.write_text("# jitterlab trace\n")
        path.write_text("theirs")

    with pytest.raises(FileExistsError, match=f"{name} appeared while it was being written"):
        atomic_write(path, slow_writer, overwrite=False)
    assert path.read_text() == "theirs"
    assert os.listdir(tmp_path) == [name]  # no temporary file left
    atomic_write(path, lambda temp: temp.write_text("replaced"), overwrite=True)
    assert path.read_bytes().startswith(b"\x1f\x8b") == name.endswith(".gz")


@pytest.mark.parametrize("writer", ["write_csv", "write_parquet", "write_netcdf"])
def test_every_native_writer_refuses_an_existing_file_unless_asked(tmp_path, writer):
    from jitterlab.io import native

    trace = fig2()
    path = tmp_path / {"write_csv": "t.csv.gz", "write_parquet": "t.parquet",
                       "write_netcdf": "t.nc"}[writer]
    getattr(native, writer)(trace, path)
    before = path.read_bytes()
    with pytest.raises(FileExistsError, match="exists; pass overwrite=True"):
        getattr(native, writer)(trace, path)
    assert path.read_bytes() == before
    getattr(native, writer)(trace, path, overwrite=True)
    assert read_trace(path).n_events == trace.n_events


def test_a_missing_directory_is_named_not_a_temporary_file(tmp_path):
    calls = []
    with pytest.raises(FileNotFoundError, match=r"cannot write .*nodir/t\.csv: the directory "
                                                r".*nodir does not exist"):
        atomic_write(tmp_path / "nodir" / "t.csv", calls.append, overwrite=False)
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileNotFoundError, match=r"file is not a directory"):
        atomic_write(tmp_path / "file" / "t.csv", calls.append)
    (tmp_path / "folder.nc").mkdir()
    with pytest.raises(IsADirectoryError, match=r"folder\.nc: it is a directory"):
        atomic_write(tmp_path / "folder.nc", calls.append, overwrite=True)
    assert calls == []


@pytest.mark.parametrize("module", ["jitsim", "loggopsim"])
def test_the_simulator_formats_keep_an_existing_file_unless_told(tmp_path, module):
    """The one writer rule also for jl.io.jitsim.write and jl.io.loggopsim.write."""
    import importlib

    write = importlib.import_module(f"jitterlab.io.{module}").write
    trace = Trace(jitter=[1e-6, 2e-6], gap=[1e-3, 1e-3], source="two")
    path = tmp_path / f"kept.{module}"
    path.write_text("measured\n")
    with pytest.raises(FileExistsError, match="pass overwrite=True"):
        write(trace, path)
    assert path.read_text() == "measured\n"
    write(trace, path, overwrite=True)
    assert path.read_text() != "measured\n"


@pytest.mark.parametrize("name", ["samples.nc", "samples.csv"])
def test_fwq_samples_keep_an_existing_file_unless_told(tmp_path, name):
    import jitterlab as jl

    path = tmp_path / name
    path.write_text("measured\n")
    law = jl.noise.Empirical([1e-6, 2e-6])
    with pytest.raises(FileExistsError, match="pass overwrite=True"):
        jl.bench.write_fwq_samples(law, path)
    assert path.read_text() == "measured\n"
    jl.bench.write_fwq_samples(law, path, overwrite=True)
    assert jl.bench.read_fwq_samples(path).values.size == 2


def test_benchmark_datasets_keep_an_existing_file_unless_told(tmp_path):
    import xarray as xr

    from jitterlab.measure.runfiles import write_dataset

    path = tmp_path / "run.nc"
    path.write_text("measured\n")
    dataset = xr.Dataset({"x": ("i", np.arange(3.0))})
    with pytest.raises(FileExistsError, match="pass overwrite=True"):
        write_dataset(dataset, path, compressed=["x"], what="test Dataset")
    assert path.read_text() == "measured\n"
    write_dataset(dataset, path, compressed=["x"], what="test Dataset", overwrite=True)
    assert xr.open_dataset(path)["x"].size == 3
