"""jitterlab.compare.counters (Holder & Carothers, seed 004): the miss-rate equations on
hand-computed tables, the errors for missing counters and bad counts, the perf stat and PAPI
readers on files in the tools' real formats, ``jitterlab measure counters``, and the paper's numbers
in data/holder_carothers_2011.csv."""

import doctest
import hashlib
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from jitterlab import counters, datasets
from jitterlab.cli import main
from jitterlab.datasets import PAPER_VALUE_COLUMNS, load_paper_values

DATA = Path(__file__).parent / "data"
HAS_PERF = shutil.which("perf") is not None
NO_PMU = counters.perf_counters_problem() is not None


def run(argv, capsys):
    """Exit status, stdout and stderr of ``jitterlab ARGV`` (argparse errors included)."""
    try:
        status = main(argv)
    except SystemExit as exit_info:
        status = exit_info.code
    captured = capsys.readouterr()
    return status, captured.out, captured.err


# --------------------------------------------------------------------------------------
# the equations, on tables whose answers are worked out by hand
# --------------------------------------------------------------------------------------
@pytest.fixture
def z800():
    """Counts of the kind the paper had on the HP Z800: level 1, level 2, TLB, cycles."""
    return pd.DataFrame({
        "processors": [1, 2, 4],
        "remote_fraction": [0.1, 0.1, 0.5],
        "PAPI_L1_DCA": [800, 3000, 1_000_000],
        "PAPI_L1_ICA": [200, 1000, 0],
        "PAPI_L2_TCA": [50, 100, 20_000],
        "PAPI_L2_TCM": [40, 25, 20_000],
        "PAPI_TLB_TL": [3, 0, 250],
        "PAPI_TOT_CYC": [1000, 4000, 500_000],
    })


@pytest.fixture
def bgl():
    """Counts of the kind the paper had on Blue Gene/L: level-2 data, level 3, no level 1."""
    return pd.DataFrame({
        "processors": [1024, 1024, 2048],
        "remote_fraction": [0.10, 0.50, 0.10],
        "PAPI_L2_DCA": [800_000, 900_000, 400_000],
        "PAPI_L2_DCH": [560_000, 585_000, 400_000],
        "PAPI_L3_TCM": [2500, 3000, 0],
        "PAPI_L3_TCH": [97_500, 97_000, 48_600],
    })


def test_equations_1_2_and_5(z800):
    # eq. 1: 50/1000, 100/4000, 20000/1e6; eq. 2: 40/50, 25/100, 1; eq. 5: 3/1000, 0, 250/5e5
    assert counters.l1_miss_rate(z800).tolist() == [0.05, 0.025, 0.02]
    assert counters.l2_miss_rate(z800).tolist() == [0.8, 0.25, 1.0]
    assert counters.tlb_miss_ratio(z800).tolist() == [0.003, 0.0, 0.0005]
    np.testing.assert_allclose(counters.tlb_miss_ratio(z800, per=1000), [3.0, 0.0, 0.5],
                               rtol=1e-15)
    assert counters.l1_miss_rate(z800).name == "L1_MISS_RATE"
    # the result follows the table's index, whatever it is
    shifted = z800.set_index(pd.Index([10, 20, 30], name="run"))
    assert counters.l2_miss_rate(shifted).index.tolist() == [10, 20, 30]


def test_equations_3_and_4(bgl):
    # eq. 3: 1 - 560/800, 1 - 585/900, 1 - 1; eq. 4: 2500/100000, 3000/100000, 0
    np.testing.assert_allclose(counters.l2_data_miss_rate(bgl), [0.3, 0.35, 0.0],
                               rtol=0, atol=1e-15)
    assert counters.l3_miss_rate(bgl).tolist() == [0.025, 0.03, 0.0]
    assert counters.l2_data_miss_rate(bgl).name == "L2_DATA_MISS_RATE"


def test_metrics_keeps_labels_and_lists_what_it_cannot_compute(z800, bgl):
    result = counters.metrics(bgl)
    assert list(result.columns) == ["processors", "remote_fraction", "L2_DATA_MISS_RATE",
                                    "L3_MISS_RATE"]
    assert result["processors"].tolist() == [1024, 1024, 2048]
    assert result.attrs["equations"] == {"L2_DATA_MISS_RATE": 3, "L3_MISS_RATE": 4}
    # as on Blue Gene/L in the paper: equations 1 and 2 cannot be computed
    assert result.attrs["missing"] == {
        "L1_MISS_RATE": ["PAPI_L1_DCA", "PAPI_L1_ICA", "PAPI_L2_TCA"],
        "L2_MISS_RATE": ["PAPI_L2_TCM", "PAPI_L2_TCA"],
        "TLB_MISS_RATIO": ["PAPI_TLB_TL", "PAPI_TOT_CYC"]}
    both = counters.metrics(pd.concat([z800, bgl], axis=1).iloc[:, :8].join(bgl.iloc[:, 2:]),
                            labels=["processors"], tlb_per=1000)
    assert list(both.columns) == ["processors", *counters.EQUATIONS]
    assert both["TLB_MISS_RATIO"].tolist() == [3.0, 0.0, 0.5]
    assert both.attrs["missing"] == {}
    with pytest.raises(KeyError, match=r"label column\(s\) \['nodes'\]"):
        counters.metrics(bgl, labels=["nodes"])


def test_missing_counter_names_the_counter_and_the_equation(bgl):
    with pytest.raises(KeyError, match=r"equation 1 \(L1_MISS_RATE\) needs the counter "
                       r"PAPI_L1_DCA.*Blue Gene/L"):
        counters.l1_miss_rate(bgl)
    with pytest.raises(KeyError, match=r"equation 2 \(L2_MISS_RATE\) needs the counter "
                       r"PAPI_L2_TCM"):
        counters.l2_miss_rate(bgl)
    with pytest.raises(KeyError, match=r"equation 5 \(TLB_MISS_RATIO\) needs the counter "
                       r"PAPI_TLB_TL"):
        counters.tlb_miss_ratio(bgl)
    with pytest.raises(KeyError, match=r"equation 4 .* PAPI_L3_TCH"):
        counters.l3_miss_rate(bgl.drop(columns="PAPI_L3_TCH"))
    with pytest.raises(ValueError, match=r"no metric can be computed.*equation 1 "
                       r"\(L1_MISS_RATE\) needs PAPI_L1_DCA, PAPI_L1_ICA, PAPI_L2_TCA"):
        counters.metrics(bgl[["processors"]])


@pytest.mark.parametrize(("value", "problem"), [
    (-1, "is negative"), (np.nan, "is not finite"), (np.inf, "is not finite"),
    ("12k", "is not a number")])
def test_bad_counts_name_the_column_and_the_row(bgl, value, problem):
    table = bgl.astype({"PAPI_L3_TCH": object})
    table.loc[1, "PAPI_L3_TCH"] = value
    with pytest.raises(ValueError, match=rf"PAPI_L3_TCH {problem} in row 1 \(processors="
                       rf"1024, remote_fraction=0.5\).*equation 4"):
        counters.l3_miss_rate(table)
    with pytest.raises(ValueError, match=rf"PAPI_L3_TCH {problem} in row 1"):
        counters.metrics(table)
    counters.l2_data_miss_rate(table)  # equation 3 does not use the bad column


@pytest.mark.parametrize(("function", "zeroed", "denominator"), [
    (counters.l1_miss_rate, ["PAPI_L1_DCA", "PAPI_L1_ICA"], "PAPI_L1_DCA \\+ PAPI_L1_ICA"),
    (counters.l2_miss_rate, ["PAPI_L2_TCA", "PAPI_L2_TCM"], "PAPI_L2_TCA"),
    (counters.tlb_miss_ratio, ["PAPI_TOT_CYC"], "PAPI_TOT_CYC")])
def test_zero_denominators(z800, function, zeroed, denominator):
    z800.loc[2, zeroed] = 0
    with pytest.raises(ValueError, match=rf"divides by {denominator}, which is zero in row 2 "
                       r"\(processors=4"):
        function(z800)


def test_zero_denominators_of_equations_3_and_4(bgl):
    bgl.loc[0, ["PAPI_L2_DCA", "PAPI_L2_DCH"]] = 0
    with pytest.raises(ValueError, match=r"equation 3 .* divides by PAPI_L2_DCA, which is "
                       r"zero in row 0"):
        counters.l2_data_miss_rate(bgl)
    bgl.loc[2, ["PAPI_L3_TCM", "PAPI_L3_TCH"]] = 0
    with pytest.raises(ValueError, match=r"equation 4 .* PAPI_L3_TCM \+ PAPI_L3_TCH, which "
                       r"is zero in row 2"):
        counters.l3_miss_rate(bgl)


@pytest.mark.parametrize("per", [0, -1000, np.nan, np.inf, "1000", True])
def test_bad_tlb_scale(z800, per):
    with pytest.raises(ValueError, match="per must be a finite number > 0"):
        counters.tlb_miss_ratio(z800, per=per)


def test_not_a_table():
    with pytest.raises(TypeError, match="pandas DataFrame"):
        counters.l3_miss_rate({"PAPI_L3_TCM": [1], "PAPI_L3_TCH": [2]})
    with pytest.raises(TypeError, match="pandas DataFrame"):
        counters.metrics([1, 2])


def test_docstring_examples():
    assert doctest.testmod(counters, optionflags=doctest.ELLIPSIS).failed == 0


# --------------------------------------------------------------------------------------
# readers
# --------------------------------------------------------------------------------------
def test_read_perf_stat_translates_perf_names():
    table = counters.read_perf_stat(DATA / "perf_stat_basic.csv")
    assert list(table.columns) == [
        "task-clock", "PAPI_TOT_CYC", "PAPI_TOT_INS", "PAPI_L1_DCR", "PAPI_L1_LDM",
        "PAPI_L1_ICM", "LLC-loads", "LLC-load-misses", "PAPI_TLB_DM", "PAPI_TLB_IM"]
    assert len(table) == 1 and table.attrs["labels"] == []
    row = table.iloc[0]
    assert row["PAPI_TOT_CYC"] == 4021337611 and row["task-clock"] == 1523.84
    assert row["PAPI_L1_LDM"] / row["PAPI_L1_DCR"] == pytest.approx(0.05, abs=5e-5)
    assert table.attrs["units"] == {"task-clock": "msec"}
    assert table.attrs["perf_events"]["PAPI_L1_DCR"] == "L1-dcache-loads"
    assert table.attrs["running_percent"]["PAPI_L1_DCR"] == 75.0
    assert table.attrs["running_percent"]["PAPI_TOT_CYC"] == 100.0
    assert table.attrs["unavailable"] == {"L1-dcache-stores": "as <not supported>"}
    # the generic perf events give none of the paper's counters: the error says so and
    # names what perf could not count
    with pytest.raises(ValueError, match=r"no metric can be computed.*L1-dcache-stores as "
                       r"<not supported>"):
        counters.metrics(table)
    # CPU-specific events can be named as PAPI counters
    named = counters.read_perf_stat(DATA / "perf_stat_basic.csv", names={
        "LLC-load-misses": "PAPI_L3_TCM", "LLC-loads": "PAPI_L3_TCA"})
    assert {"PAPI_L3_TCM", "PAPI_L3_TCA"} <= set(named.columns)


def test_read_perf_stat_real_repeat_output():
    # recorded on this project's VM: perf stat -r 3, hardware events <not supported>
    table = counters.read_perf_stat(DATA / "perf_stat_repeat.csv")
    assert list(table.columns) == ["task-clock", "page-faults"]
    assert table.loc[0, "page-faults"] == 49
    assert table.attrs["variance_percent"] == {"task-clock": 1.33, "page-faults": 1.36}
    assert table.attrs["unavailable"] == {"cycles": "as <not supported>",
                                          "instructions": "as <not supported>"}


def test_read_perf_stat_real_per_socket_output():
    table = counters.read_perf_stat(DATA / "perf_stat_per_socket.csv")
    assert table.to_dict("records") == [{"cpu": "S0", "task-clock": 104.27}]
    assert table.attrs["labels"] == ["cpu"]
    assert table.attrs["cpus_aggregated"] == {"task-clock": 2}
    assert table.attrs["unavailable"] == {"cycles": "as <not supported>"}


def test_read_perf_stat_real_interval_output():
    # recorded on this project's VM: perf stat -I 100 on sleep 0.25, two intervals
    table = counters.read_perf_stat(DATA / "perf_stat_interval.csv")
    assert table.to_dict("records") == [
        {"time": 0.100151554, "task-clock": 1.06, "page-faults": 77.0},
        {"time": 0.252748748, "task-clock": 0.07, "page-faults": 0.0}]
    assert table.attrs["labels"] == ["time"]
    assert table.attrs["unavailable"] == {"cycles": "as <not supported>"}


def test_read_perf_stat_intervals_and_cpus():
    table = counters.read_perf_stat(DATA / "perf_stat_interval_cpu.csv",
                                    names={"instructions": "PAPI_TLB_TL"})
    assert list(table.columns) == ["time", "cpu", "PAPI_TOT_CYC", "PAPI_TLB_TL"]
    assert table["time"].tolist() == [1.001234567, 1.001234567, 2.002468, 2.002468]
    assert table["cpu"].tolist() == ["CPU0", "CPU1", "CPU0", "CPU1"]
    assert table["PAPI_TOT_CYC"].tolist() == [401234567, 398765432, 405000000, 399000000]
    assert np.isnan(table.loc[1, "PAPI_TLB_TL"])  # <not counted> in that interval only
    assert table.attrs["running_percent"]["PAPI_TLB_TL"] == 0.0
    # the uncounted interval is named by its labels
    with pytest.raises(ValueError, match=r"PAPI_TLB_TL is not finite in row 1 \(time="
                       r"1.001234567, cpu='CPU1'\)"):
        counters.tlb_miss_ratio(table)
    ratios = counters.tlb_miss_ratio(table.drop(index=1))
    assert ratios[0] == 612345678 / 401234567


@pytest.mark.parametrize(("text", "message"), [
    ("", "no perf stat -x, event lines"),
    ("# started on Sun Nov 22 11:23:29 2026\n\n", "no perf stat -x, event lines"),
    ("cycles 1234\n", "line 1: not perf stat -x, output"),
    ("1234,,cycles\n", "line 1: not perf stat -x, output"),
    ("1234,,cycles,abc,100.00,,\n", "line 1: not perf stat -x, output .run time"),
    ("12,,cycles,10,100.00,,\nx12,,instructions,10,100.00,,\n", "line 2: not perf stat"),
    ("12,,cycles,10,100.00,,\n13,,cycles,10,100.00,,\n", "the event cycles appears twice"),
    ("12,,cycles,10,100.00,,\n13,,cpu-cycles,10,100.00,,\n",
     r"several perf events translate to PAPI_TOT_CYC: \['cpu-cycles', 'cycles'\]"),
])
def test_read_perf_stat_refuses_other_files(tmp_path, text, message):
    path = tmp_path / "perf.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        counters.read_perf_stat(path)


def test_read_papi_command_line_output():
    table = counters.read_papi(DATA / "papi_command_line.txt")
    assert table.to_dict("records") == [{
        "run": 0, "PAPI_TOT_CYC": 209871456, "PAPI_L1_DCA": 61230005,
        "PAPI_L1_ICA": 38769995, "PAPI_L2_TCA": 2500000, "PAPI_L2_TCM": 1750000}]
    assert table.attrs["labels"] == ["run"]
    assert table.attrs["unavailable"] == {"PAPI_L3_TCH": "as failed to add"}
    result = counters.metrics(table)
    assert result["L1_MISS_RATE"].tolist() == [0.025]  # 2.5e6 / (61230005 + 38769995)
    assert result["L2_MISS_RATE"].tolist() == [0.7]
    with pytest.raises(KeyError, match=r"PAPI_L3_TCM.*PAPI_L3_TCH as failed to add"):
        counters.l3_miss_rate(table)


def test_read_papi_concatenated_runs_unsigned_and_hex():
    table = counters.read_papi(DATA / "papi_command_line_two_runs.txt")
    assert table["run"].tolist() == [0, 1]
    assert table["perf::PERF_COUNT_HW_CPU_CYCLES"].tolist() == [50_000_000, 50_000_032]
    assert counters.l3_miss_rate(table).tolist() == [0.03, 0.025]


def test_read_papi_csv(tmp_path, bgl):
    path = tmp_path / "bgl.csv"
    bgl.to_csv(path, index=False)
    table = counters.read_papi(path)
    pd.testing.assert_frame_equal(table, bgl)
    assert table.attrs["labels"] == ["processors", "remote_fraction"]
    assert counters.metrics(table)["L3_MISS_RATE"].tolist() == [0.025, 0.03, 0.0]


@pytest.mark.parametrize(("text", "message"), [
    ("", "the file is empty"),
    ("\n\n", "the file is empty"),
    ("run,cycles\n0,12\n", "neither papi_command_line output"),
    ("Successfully added: PAPI_TOT_CYC\n", "neither papi_command_line output"),
    ("PAPI_TOT_CYC : \t12 \nPAPI_L1_DCA : \tmany \n", "line 2: cannot read the value of "
     "PAPI_L1_DCA: 'many'"),
])
def test_read_papi_refuses_other_files(tmp_path, text, message):
    path = tmp_path / "papi.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        counters.read_papi(path)


# --------------------------------------------------------------------------------------
# jitterlab measure counters
# --------------------------------------------------------------------------------------
def test_problem_without_perf_or_pmu(tmp_path):
    assert "'no-such-perf-program' is not installed" in counters.perf_counters_problem(
        "no-such-perf-program")
    if HAS_PERF:
        (tmp_path / "software").mkdir()
        problem = counters.perf_counters_problem(event_sources=tmp_path)
        assert "no hardware performance-monitoring unit" in problem
        assert "it lists software" in problem


@pytest.mark.skipif(not NO_PMU, reason="this machine can count hardware events")
def test_measure_counters_says_plainly_there_is_no_pmu(tmp_path, capsys):
    marker = tmp_path / "ran"
    status, out, err = run(["measure", "counters", "--", "touch", str(marker)], capsys)
    assert status == 1 and out == ""
    assert "cannot count hardware events on this machine" in err
    assert "Nothing was run." in err
    assert not marker.exists()
    with pytest.raises(RuntimeError, match=re.escape(counters.perf_counters_problem())):
        counters.measure_perf_stat(["touch", str(marker)])
    assert not marker.exists()


@pytest.mark.skipif(NO_PMU, reason="this machine has no hardware PMU for perf")
def test_measure_counters_with_a_pmu(tmp_path, capsys):
    output = tmp_path / "counts.csv"
    status, out, _ = run(["measure", "counters", "--output", str(output), "--", "true"],
                         capsys)
    assert status == 0
    assert "PAPI_TOT_CYC (cycles)" in out
    assert "PAPI_TOT_CYC" in pd.read_csv(output).columns


@pytest.mark.skipif(not HAS_PERF, reason="needs perf")
def test_measure_counters_runs_perf_and_prints(tmp_path, capsys, monkeypatch):
    # software events count without a PMU; pretend the PMU check passed
    monkeypatch.setattr(counters, "perf_counters_problem", lambda perf="perf": None)
    output = tmp_path / "counts.csv"
    status, out, _ = run(["measure", "counters", "-e", "task-clock,page-faults",
                          "--map", "page-faults=PAPI_TLB_TL", "--output", str(output),
                          "--", "sh", "-c", "exit 3"], capsys)
    assert status == 3  # the command's exit status
    assert "perf stat -x, -o <tmp> -e task-clock,page-faults -- sh -c exit 3" in out
    assert "PAPI_TLB_TL (page-faults)" in out and "task-clock" in out
    assert "No metric of Holder & Carothers' equations 1-5" in out
    written = pd.read_csv(output)
    assert list(written.columns) == ["task-clock", "PAPI_TLB_TL"]
    assert written.loc[0, "PAPI_TLB_TL"] > 0 and written.loc[0, "task-clock"] > 0
    status, _, err = run(["measure", "counters", "--output", str(output), "--", "true"],
                         capsys)
    assert status == 2 and "exists; pass --force" in err
    table, status = counters.measure_perf_stat(["true"], events=["task-clock"], check=False)
    assert status == 0 and list(table.columns) == ["task-clock"]
    assert table.attrs["command"] == "perf stat -x, -o <tmp> -e task-clock -- true"


def test_measure_perf_stat_returns_the_commands_status_when_perf_does_not(tmp_path):
    # a perf that writes counts, runs the command and exits 0 whatever the command did,
    # as perf stat itself did now and then on a loaded machine
    fake = tmp_path / "perf"
    fake.write_text("#!/bin/sh\n"
                    "out=$4\n"
                    "while [ \"$1\" != -- ]; do shift; done\n"
                    "shift\n"
                    "\"$@\"\n"
                    "printf '1.5,msec,task-clock,1500,100.00,,\\n' > \"$out\"\n"
                    "exit 0\n")
    fake.chmod(0o755)
    for code in (0, 3, 42):
        table, status = counters.measure_perf_stat(["sh", "-c", f"exit {code}"],
                                                   events=["task-clock"], perf=str(fake),
                                                   check=False)
        assert status == code
        assert table.loc[0, "task-clock"] == 1.5
        assert table.attrs["command"].endswith(f"-e task-clock -- sh -c exit {code}")
        assert table.attrs["status_wrapper"].startswith("/bin/sh -c")


@pytest.mark.parametrize(("argv", "message"), [
    (["measure", "counters"], "give the command to measure after --"),
    (["measure", "counters", "--"], "give the command to measure after --"),
    (["measure", "counters", "--map", "cycles", "--", "true"], "--map takes PERF=PAPI"),
    (["measure", "counters", "-e", ",", "--", "true"], "--events lists no event"),
])
def test_measure_counters_usage_errors(capsys, argv, message):
    status, _, err = run(argv, capsys)
    assert status == 2 and message in err


def test_measure_perf_stat_bad_arguments():
    with pytest.raises(ValueError, match="command is empty"):
        counters.measure_perf_stat([])
    with pytest.raises(ValueError, match="events is empty"):
        counters.measure_perf_stat(["true"], events=[])


# --------------------------------------------------------------------------------------
# the paper's numbers
# --------------------------------------------------------------------------------------
NAME = "holder_carothers_2011"


@pytest.fixture(scope="module")
def values():
    return load_paper_values(NAME).set_index("quantity")["value"]


def test_paper_values_checksum_and_layout():
    record = (datasets.DATA_DIR / f"{NAME}.md").read_text(encoding="utf-8")
    recorded = re.search(r"\b[0-9a-f]{64}\b", record).group(0)
    digest = hashlib.sha256((datasets.DATA_DIR / f"{NAME}.csv").read_bytes()).hexdigest()
    assert recorded == digest, f"update the checksum in data/{NAME}.md after editing the CSV"
    table = load_paper_values(NAME)
    assert tuple(table.columns) == PAPER_VALUE_COLUMNS
    assert table["source"].str.match(r"Holder & Carothers 2011, §[2-6]").all()
    assert (table["note"].str.len() > 0).all() and np.isfinite(table["value"]).all()
    for unit in set(table["unit"]):
        assert f"`{unit}`" in record


def test_published_rates_as_the_issue_lists_them(values):
    assert values["ross_bgl_event_rate"] == 853e6
    assert values["ross_bgl_processors"] == 16384
    assert values["ross_bgl_remote_fraction"] == 0.10
    assert values["ross_bgp_event_rate"] == 12.26e9
    assert values["ross_bgp_processors"] == 65536
    assert (values["musik_optimistic_event_rate"], values["musik_optimistic_processors"]) == (
        214e6, 8192)
    assert (values["musik_conservative_event_rate"],
            values["musik_conservative_processors"]) == (530e6, 16384)
    assert (values["dsim_event_rate"], values["dsim_processors"]) == (228e6, 1024)
    assert (values["phold_lps"], values["phold_events_per_lp"], values["kps_per_pe"],
            values["batch"], values["gvt_interval"]) == (1048576, 10, 16, 4, 1024)
    assert values["weak_scaling_lps_per_processor"] == 1024
    assert (values["remote_fraction_low"], values["remote_fraction_high"]) == (0.10, 1.0)


def test_paper_values_agree_with_each_other(values):
    # 10 million events per unit of simulation time: end time 10 gives "about 100 million"
    # events per Z800 run, end time 100 "about 1 billion" per Blue Gene/L run
    rate = values["phold_events_per_unit_time"]
    assert rate * values["phold_end_time_z800"] == values["phold_events_z800_run"]
    assert rate * values["phold_end_time"] == values["phold_events_bgl_run"]
    # a million LPs with 10 events each hold 10.5 million events: the same order
    assert values["phold_lps"] * values["phold_events_per_lp"] == pytest.approx(rate, rel=0.05)
    assert 0 < values["bgl_l3_miss_rate_low"] < values["bgl_l3_miss_rate_high"] < 1
    # per-processor rates: ROSS on BG/P is faster per processor than on BG/L
    bgl = values["ross_bgl_event_rate"] / values["ross_bgl_processors"]
    bgp = values["ross_bgp_event_rate"] / values["ross_bgp_processors"]
    assert 52e3 < bgl < 52.1e3 and 187e3 < bgp < 187.1e3
