"""Readers refuse what they cannot read whole (issue #19): ROSS summaries, PAPI and perf."""

from pathlib import Path

import pytest

import jitterlab as jl
from jitterlab.compare.counters import read_papi, read_perf_stat

DATA = Path(__file__).parent / "data"
ROSS = (DATA / "ross_phold_opt2.txt").read_text()


def test_a_ross_log_of_two_runs_is_refused_not_read_as_its_first():
    with pytest.raises(ValueError, match=r"2 runs' statistics \(a 'TW Library Statistics:' "
                       r"block on lines 40, \d+\); read each run's output on its own"):
        jl.io.read_ross_summary(ROSS + ROSS)


def test_ross_numbers_are_read_whole():
    # "1,532,361.1" was read as 1.0
    grouped = ROSS.replace("1532361.1", "1,532,361.1").replace("3064615", "3,064,615")
    summary = jl.io.read_ross_summary(grouped)
    assert summary["event_rate_per_s"] == 1532361.1
    assert summary["total_events_processed"] == 3064615
    # counts beyond 2**53 keep every digit (float64 would round this one to ...992)
    big = jl.io.read_ross_summary(ROSS.replace("3064615", "9007199254740993"))
    assert big["committed_events"] == 9007199254740993
    assert type(big["committed_events"]) is int
    with pytest.raises(ValueError, match=r"line 57: 'Net Events Processed' is a count, got "
                       r"'1,234.5'"):
        jl.io.read_ross_summary(ROSS.replace(
            "Net Events Processed                                   3064615",
            "Net Events Processed 1,234.5"))
    with pytest.raises(ValueError, match="is followed by '12x', not a number"):
        jl.io.read_ross_summary(ROSS.replace(
            "Total Roll Backs                                             0",
            "Total Roll Backs 12x"))


def test_a_ross_statistic_printed_twice_must_agree():
    # ROSS prints Total GVT Computations in two blocks; they must say the same
    changed = ROSS.replace("Total GVT Computations                                     375",
                           "Total GVT Computations                                     376", 1)
    with pytest.raises(ValueError, match="'Total GVT Computations' is printed with different "
                       "values on lines 55, 106"):
        jl.io.read_ross_summary(changed)


def test_papi_output_cut_mid_number_is_refused(tmp_path):
    text = (DATA / "papi_command_line.txt").read_text()
    whole = read_papi(DATA / "papi_command_line.txt")
    assert len(whole) == 1
    closing = text.rstrip("\n").rfind("\n")
    body = text[:closing + 1]  # without the closing dashed line
    last_value = body.rstrip("\n").rsplit("\n", 1)[-1]
    cut = tmp_path / "cut.txt"
    cut.write_text(body.rstrip("\n")[:-3] + "\n")  # the last value lost its last digits
    with pytest.raises(ValueError, match="not closed by papi_command_line's dashed line"):
        read_papi(cut)
    cut.write_text(body.rstrip("\n")[:-3])  # no newline at all
    with pytest.raises(ValueError, match="ends inside a line"):
        read_papi(cut)
    assert last_value  # the fixture ends with a value line before its dashes


def test_papi_csv_counters_must_be_counts(tmp_path):
    path = tmp_path / "papi.csv"
    path.write_text("processors,PAPI_L3_TCM,PAPI_L3_TCH\n2,30,970\n4,True,900\n")
    with pytest.raises(ValueError, match="line 3: counter PAPI_L3_TCM must be a count"):
        read_papi(path)
    path.write_text("processors,PAPI_L3_TCM,PAPI_L3_TCH\n2,30,970\n4,,900\n")
    with pytest.raises(ValueError, match="line 3: counter PAPI_L3_TCM must be a count"):
        read_papi(path)
    path.write_text("processors,PAPI_L3_TCM,PAPI_L3_TCH\n2,30,970\n4,31,9")
    with pytest.raises(ValueError, match="ends inside a line"):
        read_papi(path)


def test_perf_output_cut_short_is_refused(tmp_path):
    text = (DATA / "perf_stat_basic.csv").read_text()
    cut = tmp_path / "perf.csv"
    cut.write_text(text.rstrip("\n")[:-2])
    with pytest.raises(ValueError, match="ends inside a line"):
        read_perf_stat(cut)
