"""Importers of established noise tools: sysjitter (raw and summary), FTQ, FWQ."""

import gzip
import math
from pathlib import Path

import numpy as np
import pytest

from jitterlab.io import (
    EXTENSIONS,
    FORMATS,
    NotATraceError,
    read_ftq,
    read_fwq,
    read_sysjitter_summary,
    read_trace,
)
from jitterlab.io.sysjitter import page_first_rows, read_buffer_layout
from jitterlab.noise import Empirical

DATA = Path(__file__).parent / "data"
EXCERPT = DATA / "sysjitter_raw_excerpt.1.gz"
SUMMARY = DATA / "sysjitter_cpu1_20s_thr300.txt"
REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "sysjitter"
FULL_RAW = REFERENCE / "sysjitter_raw_thr300.1.gz"
MHZ = 2597


def excerpt_lines():
    return gzip.decompress(EXCERPT.read_bytes()).decode().splitlines()


def header_and_rows(lines):
    header = [line for line in lines if line.startswith("#")]
    rows = [line for line in lines if line.strip() and not line.startswith("#")]
    return header, rows


def raw_columns(rows):
    return np.array([row.split() for row in rows], dtype=np.int64)


def header_values(lines):
    values = {}
    for line in lines:
        if line.startswith("# ") and ":" in line:
            key, value = line[2:].split(":", 1)
            parts = value.split()
            unit = parts[1] if len(parts) > 1 else ""
            values[f"{key}_{unit}" if key.startswith("total_") else key] = parts[0]
    return values


def write(path, lines, compress=False):
    text = "\n".join(lines) + "\n"
    if compress:
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


# --------------------------------------------------------------------------------------
# registry
# --------------------------------------------------------------------------------------
def test_new_formats_are_registered():
    assert FORMATS["sysjitter"] == "sysjitter"
    assert "ftq" not in FORMATS and "fwq" not in FORMATS  # not traces: read_ftq, read_fwq
    assert set(EXTENSIONS.values()) <= set(FORMATS)


@pytest.mark.parametrize("name", ["run.3", "run.3.gz", "sysjitter_raw_excerpt.1.gz", "cpu1",
                                  "raw.txt"])
def test_sysjitter_raw_file_is_recognised_from_its_header(tmp_path, name):
    path = tmp_path / name
    data = EXCERPT.read_bytes()
    path.write_bytes(data if name.endswith(".gz") else gzip.decompress(data))
    trace = read_trace(path)
    reference = read_trace(EXCERPT, format="sysjitter")
    np.testing.assert_array_equal(trace.jitter, reference.jitter)
    np.testing.assert_array_equal(trace.gap, reference.gap)
    assert trace.attrs["source"] == "sysjitter" and trace.attrs["file"] == name
    assert read_trace(path, unit="cycles").unit == "cycles"  # its options pass through


def test_summary_is_recognised_and_refused_by_name_of_its_reader(tmp_path):
    path = tmp_path / "sysjitter.out"
    path.write_bytes(SUMMARY.read_bytes())
    with pytest.raises(NotATraceError, match="sysjitter.out.*read_sysjitter_summary"):
        read_trace(path)


# --------------------------------------------------------------------------------------
# sysjitter raw files
# --------------------------------------------------------------------------------------
def test_excerpt_matches_its_header():
    lines = excerpt_lines()
    header = header_values(lines)
    columns = raw_columns(header_and_rows(lines)[1])
    trace = read_trace(EXCERPT, format="sysjitter", unit="cycles")
    assert trace.n_events == int(header["n_interruptions"]) == 2000
    assert trace.attrs["n_interruptions"] == 2000
    assert trace.unit == "cycles" and trace.frequency_hz == MHZ * 1e6
    # durations: the exact cycle counts, in time order
    np.testing.assert_array_equal(trace.jitter, columns[:, 2])
    assert trace.jitter.sum() == int(header["total_interruption_cycles"])
    assert trace.duration * trace.frequency_hz == pytest.approx(
        int(header["total_runtime_cycles"]), abs=1e-3)
    noise_percent = float(header["interruption"].rstrip("%"))
    assert trace.stats()["noise_fraction"] * 100 == pytest.approx(noise_percent, abs=1e-6)
    # starts: each interruption ends at its timestamp (to the nanosecond), none overlap
    start = np.rint((trace.starts + trace.offset_seconds()) * trace.frequency_hz)
    end = start.astype(np.int64) + trace.jitter.astype(np.int64)
    np.testing.assert_array_equal(end * 1000 // MHZ, columns[:, 0])
    assert np.all(trace.gap >= 0)
    assert trace.attrs["source"] == "sysjitter"
    assert trace.attrs["threshold"] == 3e-7
    assert trace.attrs["cpu_mhz"] == MHZ
    assert trace.attrs["total_runtime_cycles"] == int(header["total_runtime_cycles"])
    assert trace.attrs["sorted"] is False


def test_excerpt_in_seconds_is_the_cycle_trace_converted():
    seconds = read_trace(EXCERPT, format="sysjitter")
    cycles = read_trace(EXCERPT, format="sysjitter", unit="cycles")
    assert seconds.unit == "s"
    assert seconds.equals(cycles.to_seconds())
    assert seconds.to_cycles().equals(cycles)
    assert seconds.attrs["offset"] == cycles.attrs["offset"]


def test_sorted_raw_layout_gives_the_same_events(tmp_path):
    lines = excerpt_lines()
    header, rows = header_and_rows(lines)
    columns = raw_columns(rows)
    order = np.argsort(columns[:, 2], kind="stable")
    sorted_rows = [f"{c[0]:16d} {c[2]:10d} {c[3]:10d}" for c in columns[order]]
    titles = ["#      Timestamp   <== interruption =>", "#         (nsec)   (cycles)     (nsec)"]
    path = write(tmp_path / "sorted.1", [*header[:-2], *titles, *sorted_rows])
    back = read_trace(path, format="sysjitter")
    reference = read_trace(EXCERPT, format="sysjitter")
    assert back.attrs["sorted"] is True
    np.testing.assert_array_equal(back.jitter, reference.jitter)
    np.testing.assert_array_equal(back.gap, reference.gap)



# sysjitter page-first rows (the first store into a page of its buffer that was not resident)
def shim_line(size, offset, pages, absent):
    ranges = "".join(f" {a}-{b}" for a, b in absent)
    n_absent = sum(b - a + 1 for a, b in absent)
    return (f"mincore_shim: bytes {size} address 0x7f0000000{offset:03x} offset_in_page "
            f"{offset} page_size 4096 pages {pages} absent{ranges} n_absent {n_absent}")


def test_page_first_rows_follow_the_buffer_layout():
    # a buffer 2928 bytes into its page: page p >= 1 starts at record (4096 p - 2928) / 16
    rows = page_first_rows(9000, 2928, [(34, 36)])
    assert rows.tolist() == [8521, 8777]
    assert all((r * 16 + 2928) % 4096 == 0 for r in rows)
    assert page_first_rows(600, 0, [(0, 2), (5, 5)]).tolist() == [0, 256, 512]
    assert page_first_rows(100, 2928, []).size == 0


@pytest.mark.parametrize("options, message", [
    ({"offset_in_page": 8}, "multiple of record_bytes"),
    ({"offset_in_page": 4096}, "below page_size"),
    ({"absent_pages": [(3, 2)]}, "first <= last"),
    ({"n_rows": -1}, "n_rows must be a whole number"),
])
def test_page_first_rows_refuse_bad_layouts(options, message):
    arguments = {"n_rows": 100, "offset_in_page": 16, "absent_pages": [(1, 2)], **options}
    with pytest.raises(ValueError, match=message):
        page_first_rows(**arguments)


def test_sysjitter_reader_flags_page_first_rows(tmp_path):
    # the sizing run's buffer first, then the measuring one: the last line counts
    shim = write(tmp_path / "shim.txt", [shim_line(16000000, 16, 3907, [(1, 3906)]),
                                         shim_line(40000, 2928, 11, [(3, 6), (8, 8), (9, 10)])])
    plain = read_trace(EXCERPT, format="sysjitter")
    flagged = read_trace(EXCERPT, format="sysjitter", buffer=shim)
    # page 9 starts at row 2121, beyond the excerpt's 2000 rows
    expected = [(4096 * p - 2928) // 16 for p in (3, 4, 5, 6, 8)]
    assert flagged.attrs["page_first_rows"] == expected
    assert flagged.attrs["buffer"] == read_buffer_layout(shim)
    assert flagged.attrs["buffer"]["absent_pages"] == [[3, 6], [8, 8], [9, 10]]
    np.testing.assert_array_equal(flagged.jitter, plain.jitter)
    assert "page_first_rows" not in plain.attrs
    # the rows come back as the file's rows: the excerpt's durations on those lines
    durations = raw_columns(header_and_rows(excerpt_lines())[1])[:, 2]
    cycles = read_trace(EXCERPT, format="sysjitter", unit="cycles", buffer=shim)
    np.testing.assert_array_equal(cycles.jitter[expected], durations[expected])


def test_sysjitter_reader_refuses_a_layout_that_cannot_apply(tmp_path):
    small = write(tmp_path / "small.txt", [shim_line(16 * 1999, 2928, 9, [(1, 8)])])
    with pytest.raises(ValueError, match="2000 rows of 16 bytes do not fit"):
        read_trace(EXCERPT, format="sysjitter", buffer=small)
    empty = write(tmp_path / "empty.txt", ["no shim output here"])
    with pytest.raises(ValueError, match="no 'mincore_shim:' line"):
        read_trace(EXCERPT, format="sysjitter", buffer=empty)
    broken = write(tmp_path / "broken.txt", [shim_line(40000, 2928, 11, [(3, 6)])
                                             .replace("n_absent 4", "n_absent 5")])
    with pytest.raises(ValueError, match="add up to 4 pages"):
        read_buffer_layout(broken)
    header, rows = header_and_rows(excerpt_lines())
    columns = raw_columns(rows)
    titles = ["#      Timestamp   <== interruption =>", "#         (nsec)   (cycles)     (nsec)"]
    sorted_file = write(tmp_path / "sorted.1", [*header[:-2], *titles, *(
        f"{c[0]:16d} {c[2]:10d} {c[3]:10d}" for c in columns[np.argsort(columns[:, 2])])])
    layout = {"bytes": 40000, "offset_in_page": 2928, "page_size": 4096,
              "absent_pages": [[3, 6]]}
    with pytest.raises(ValueError, match="written with --sort"):
        read_trace(sorted_file, format="sysjitter", buffer=layout)


def test_sysjitter_summary():
    summary = read_sysjitter_summary(SUMMARY)
    assert summary["n_events"] == 31570
    assert summary["core"] == 1
    assert summary["cpu_mhz"] == MHZ
    assert summary["threshold"] == 3e-7
    assert summary["duration"] == 19.993275508
    assert summary["event_rate"] == 1579.031
    assert summary["noise_fraction"] == pytest.approx(0.02062)
    assert summary["p50_jitter"] == 1.461e-6
    assert summary["max_jitter"] == 0.020902077
    assert summary["total_jitter"] == 0.41222921
    assert summary.attrs["command"].startswith("./sysjitter/sysjitter --cores 1")
    assert summary.attrs["units"]["event_rate"] == "1/s"
    assert summary.attrs["keys"]["p99_jitter"] == "int_99(ns)"
    assert "runtime(s)" not in summary.index


def test_summary_is_not_a_trace():
    with pytest.raises(NotATraceError, match="read_sysjitter_summary"):
        read_trace(SUMMARY, format="sysjitter")
    assert issubclass(NotATraceError, ValueError)
    with pytest.raises(NotATraceError, match="raw file"):
        read_sysjitter_summary(EXCERPT)


def test_summary_of_several_cores(tmp_path):
    path = write(tmp_path / "summary.txt", [
        "core_i: 0 1", "threshold(ns): 300 300", "cpu_mhz: 2597 2597",
        "int_n: 10 20", "int_median(ns): 500 700", "int_total(%): 1.5 2.5",
        "frc_start: 1f 2a"])
    with pytest.raises(ValueError, match="cores 0, 1; choose one with core="):
        read_sysjitter_summary(path)
    core1 = read_sysjitter_summary(path, core=1)
    assert core1["n_events"] == 20 and core1["p50_jitter"] == 7e-7
    assert core1["noise_fraction"] == 0.025 and core1["frc_start"] == 0x2a
    assert core1.name == "sysjitter core 1"
    with pytest.raises(ValueError, match="no core 5"):
        read_sysjitter_summary(path, core=5)


@pytest.mark.parametrize("lines, message", [
    (["core_i: 1", "int_n 31570"], "line 2: expected a sysjitter summary line"),
    (["core_i: 1", "int_n: many"], "line 2: expected 'int_n: <number> ...'"),
    (["core_i: 0 1", "int_n: 3"], "line 2: expected 2 value"),
])
def test_malformed_summaries(tmp_path, lines, message):
    path = write(tmp_path / "bad_summary.txt", lines)
    with pytest.raises(ValueError, match=f"bad_summary.txt {message}"):
        read_sysjitter_summary(path)


@pytest.mark.skipif(not FULL_RAW.exists(), reason="the reference sysjitter run is not present")
def test_full_reference_capture():
    trace = read_trace(FULL_RAW, format="sysjitter")
    stats = trace.stats()
    assert trace.n_events == 31570
    assert stats["noise_fraction"] == pytest.approx(0.0206, abs=5e-4)
    assert stats["event_rate"] == pytest.approx(1579, abs=1)
    summary = read_sysjitter_summary(SUMMARY)
    assert stats["total_jitter"] == pytest.approx(summary["total_jitter"], abs=1e-9)
    assert stats["duration"] == pytest.approx(summary["duration"], abs=1e-9)
    assert stats["event_rate"] == pytest.approx(summary["event_rate"], abs=1e-3)
    # sysjitter's order statistics sorted[int(n·q)], in truncated nanoseconds
    cycles = np.sort(read_trace(FULL_RAW, format="sysjitter", unit="cycles").jitter)
    n = cycles.size
    for key, q in [("min_jitter", 0.0), ("p50_jitter", 0.5), ("p90_jitter", 0.9),
                   ("p99_jitter", 0.99), ("p999_jitter", 0.999)]:
        ns = int(cycles[int(n * q)]) * 1000 // MHZ
        assert ns == round(summary[key] * 1e9), key


@pytest.mark.parametrize("edit, message", [
    (lambda h, r: (h, [*r[:5], "  12  3  4", *r[6:]]), r"line 17: expected '<timestamp ns>"),
    (lambda h, r: (h, [*r[:5], "12 x 4 5", *r[6:]]), r"line 17: expected '<timestamp ns>"),
    (lambda h, r: (h, r[:-1]), "announces 2000 interruptions .* 1999 rows; is it truncated"),
    (lambda h, r: (h, [*r[:3], r[3].rsplit(" ", 1)[0] + " 9999", *r[4:]]),
     "line 15: the duration 9999 ns does not match"),
    (lambda h, r: (h[1:], r), "no '# cpu_mhz:' line"),
    (lambda h, r: ([h[0], "# threshold: 300us", *h[2:]], r), "line 2: expected threshold in 'ns'"),
    (lambda h, r: (h, [r[1], r[0], *r[2:]]), "line 13: timestamps must not decrease"),
    (lambda h, r: (h, [*r[:10], r[10] + " 7", *r[11:]]), r"line 22: expected"),
])
def test_malformed_raw_files(tmp_path, edit, message):
    header, rows = header_and_rows(excerpt_lines())
    header, rows = edit(header, rows)
    path = write(tmp_path / "bad.1", [*header, *rows], compress=True)
    with pytest.raises(ValueError, match=f"bad.1 {message}|bad.1: .*{message}"):
        read_trace(path, format="sysjitter")


def test_raw_file_without_interruptions(tmp_path):
    path = write(tmp_path / "quiet.0", ["# cpu_mhz: 2597", "# threshold: 300ns",
                                        "# n_interruptions: 0"])
    with pytest.raises(ValueError, match="quiet.0: sysjitter recorded no interruption"):
        read_trace(path, format="sysjitter")


def test_overlapping_interruptions(tmp_path):
    lines = ["# cpu_mhz: 1000", "# threshold: 300ns", "# n_interruptions: 2",
             "# interruption: 1%", "# total_interruption: 1500 cycles",
             "# total_runtime: 10000 cycles",
             "1000 0 500 500",  # runs 500-1000 ns
             "1100 0 1000 1000"]  # would start at 100 ns, inside the first
    path = write(tmp_path / "overlap.0", lines)
    with pytest.raises(ValueError, match="overlap.0 line [78]: the interruption overlaps the "
                                         "one on line [78].*overlap='serialize'"):
        read_trace(path, format="sysjitter")
    trace = read_trace(path, format="sysjitter", overlap="serialize", unit="cycles")
    np.testing.assert_array_equal(trace.jitter, [1000, 500])  # sorted by start
    assert trace.duration * trace.frequency_hz == 10000


# --------------------------------------------------------------------------------------
# FTQ
# --------------------------------------------------------------------------------------
FTQ_LINES = ["# Frequency 1000.000000", "# Ticks per ns: 2.6", "# thread 0, core 0",
             "# Total count is 575", "# Max possible work is 600", "# Fraction is 0.958333",
             "0 100", "1000000 100", "2000000 75", "3000000 100", "4000000 100", "5000000 100"]


def test_ftq_counts_and_noise(tmp_path):
    ftq = read_ftq(write(tmp_path / "ftq_0.dat", FTQ_LINES, compress=True))
    assert ftq.quantum == 1e-3
    assert ftq.n_quanta == 6
    np.testing.assert_array_equal(ftq.count, [100, 100, 75, 100, 100, 100])
    np.testing.assert_allclose(ftq.time, np.arange(6) * 1e-3)
    np.testing.assert_allclose(ftq.lost_time, [0, 0, 2.5e-4, 0, 0, 0])
    assert isinstance(ftq.noise, Empirical)
    assert ftq.noise.mean() == pytest.approx(2.5e-4 / 6)
    assert ftq.noise_fraction() == pytest.approx(2.5e-4 / 6e-3)
    assert ftq.attrs["total_count"] == 575 and ftq.attrs["max_possible_work"] == 600
    assert ftq.attrs["fraction"] == 0.958333
    assert "thread 0, core 0" in ftq.attrs["comment"]
    ds = ftq.to_dataset()
    assert ds.sizes["quantum_index"] == 6 and ds["lost_time"].attrs["units"] == "s"
    trace = ftq.to_trace()
    assert trace.n_events == 1 and trace.duration == pytest.approx(6e-3)
    assert trace.jitter_seconds[0] == pytest.approx(2.5e-4)


def test_ftq_quantum_from_the_time_stamps_or_given(tmp_path):
    path = write(tmp_path / "ftq.dat", ["0 50", "2000000 40", "4000000 50"])
    assert read_ftq(path).quantum == 2e-3
    assert read_ftq(path, quantum=1e-3, max_count=100).lost_time.tolist() == \
        pytest.approx([5e-4, 6e-4, 5e-4])
    with pytest.raises(TypeError, match="quantum must be a real number"):
        read_ftq(path, quantum="1e-3")
    with pytest.raises(ValueError, match="max_count must be finite and > 0"):
        read_ftq(path, max_count=math.nan)
    counts = write(tmp_path / "ftq_counts.dat", ["50", "40", "50"])
    with pytest.raises(ValueError, match="pass quantum="):
        read_ftq(counts)
    assert read_ftq(counts, quantum=1e-3).time.tolist() == pytest.approx([0, 1e-3, 2e-3])


def test_ftq_is_not_a_trace(tmp_path):
    path = write(tmp_path / "ftq_0.dat", FTQ_LINES)
    with pytest.raises(NotATraceError, match=r"ftq_0.dat.*read_ftq\(path"):
        read_trace(path, format="ftq")


@pytest.mark.parametrize("name", ["ftq_0.dat", "ftq_0.dat.gz", "run7.out"])
def test_ftq_file_without_format_points_to_read_ftq(tmp_path, name):
    path = write(tmp_path / name, FTQ_LINES, compress=name.endswith(".gz"))
    with pytest.raises(NotATraceError, match=rf"{name}: FTQ output.*read_ftq\(path"):
        read_trace(path)


@pytest.mark.parametrize("lines, message", [
    (["0 100", "1000000 x"], "line 2: expected '<time ns> <count>'"),
    (["0 100", "1000000 100 7"], "line 2: expected '<time ns> <count>'"),
    (["0 100", "2000000 90", "1000000 100"], "line 3: time stamps must not decrease"),
    (["0 0", "1000000 0"], "max_count must be finite and > 0"),
    (["# Frequency 1000"], "expected FTQ rows"),
])
def test_malformed_ftq(tmp_path, lines, message):
    with pytest.raises(ValueError, match=f"bad_ftq.dat:? {message}"):
        read_ftq(write(tmp_path / "bad_ftq.dat", lines))


# --------------------------------------------------------------------------------------
# FWQ
# --------------------------------------------------------------------------------------
def test_fwq_samples(tmp_path):
    path = write(tmp_path / "fwq_0_times.dat", ["# fwq", "2600", "2600", "5200"],
                 compress=True)
    law = read_fwq(path, frequency_hz=2.6e9)
    assert isinstance(law, Empirical)
    np.testing.assert_allclose(law.values, [1e-6, 1e-6, 2e-6])
    rated = write(tmp_path / "fwq_rated.dat", ["# Ticks per ns: 2.6", "2600", "5200"])
    np.testing.assert_allclose(read_fwq(rated).values, [1e-6, 2e-6])
    with pytest.raises(ValueError, match="pass frequency_hz="):
        read_fwq(path)
    with pytest.raises(ValueError, match="frequency_hz must be finite and > 0"):
        read_fwq(path, frequency_hz=-1)
    with pytest.raises(TypeError, match="frequency_hz must be a real number"):
        read_fwq(path, frequency_hz="2.6e9")
    zero_rate = write(tmp_path / "fwq_zero.dat", ["# cpu_mhz: 0", "2600"])
    with pytest.raises(ValueError, match="fwq_zero.dat: the tick rate of the header"):
        read_fwq(zero_rate)
    with pytest.raises(NotATraceError, match=r"fwq_0_times.dat.*read_fwq\(path"):
        read_trace(path, format="fwq")
    with pytest.raises(NotATraceError, match=r"fwq_0_times.dat: FWQ output.*read_fwq\(path"):
        read_trace(path)  # recognised from the name FWQ gives its files


@pytest.mark.parametrize("lines, message", [
    (["2600", "26 00"], "line 2: expected '<ticks>'"),
    (["2600", "-5"], "line 2: expected finite non-negative numbers '<ticks>'"),
    (["# nothing"], "expected FWQ samples"),
])
def test_malformed_fwq(tmp_path, lines, message):
    with pytest.raises(ValueError, match=f"bad_fwq.dat:? {message}"):
        read_fwq(write(tmp_path / "bad_fwq.dat", lines), frequency_hz=1e9)


def test_fwq_law_feeds_max_of_n(tmp_path):
    import jitterlab as jl

    rng = np.random.default_rng(4)
    ticks = np.rint(2.6e9 * (1e-3 + rng.exponential(1e-5, 5000))).astype(np.int64)
    path = write(tmp_path / "fwq.dat", [str(t) for t in ticks])
    law = read_fwq(path, frequency_hz=2.6e9)
    ds = jl.max_of_n(law, n=[1, 8])
    assert float(ds["mean"].sel(n=1)) == pytest.approx(law.mean())
    assert math.isfinite(float(ds["mean"].sel(n=8)))


@pytest.mark.parametrize(("writer", "format"), [("to_csv", "jitterlab"),
                                                ("to_jitsim", "jitsim"),
                                                ("to_loggopsim", "loggopsim"),
                                                ("to_parquet", "jitterlab"),
                                                ("to_netcdf", "jitterlab")])
def test_files_jitterlab_wrote_are_recognised_under_any_name(tmp_path, writer, format):
    from jitterlab.traces.trace import Trace

    trace = Trace([10, 5], [50, 30], unit="cycles", frequency_hz=1e9)
    path = getattr(trace, writer)(tmp_path / "trace.out")
    assert read_trace(path).equals(read_trace(path, format=format))
    assert read_trace(path).equals(trace)
