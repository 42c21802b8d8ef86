"""``mpiexec -n 2 jitterlab measure latency`` for real, and its pieces without MPI.

The MPI run is short (two ranks, a hundred round trips and a few hundred barriers)
and checks what must hold on any machine: the structure and units of the file, τ positive
and finite, the chunks, no overwrite without --force, and clear errors for bad input. The
command lines run in two MPI jobs (tests/mpi_jobs.py), one of two ranks and one of one;
only the killed run is a launch of its own.
"""

import hashlib
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from mpi_jobs import Call
from test_pb import (
    HAVE_MPI4PY,
    MPI_TIMEOUT,
    MPIEXEC,
    N_CPUS,
    X86,
    _alive,
    _descendants,
    needs_mpi,
    runs_once,
)

from jitterlab.cli import main
from jitterlab.io import chunks as _chunks
from jitterlab.measure import latency

# Each round trip and barrier needs both ranks on a CPU at once: beside other work a
# waiting rank spins until its peer is scheduled again, so their number sets the time of a
# run on a busy machine (300 round trips and 6 000 barriers: 288 s at load 10 to 16, 100
# and 300: 48 s; 1 and 1: 26 s). The tests need a few of each and two chunks of barriers,
# so the runs of these tests cut the barrier loop into chunks of BARRIER_CHUNK, not of
# latency._BARRIER_CHUNK (5 000), as their command-line runs below do.
ROUND_TRIPS = 100
BARRIER_CHUNK = 200
BARRIERS = BARRIER_CHUNK + 100  # two chunks of barriers
#: the command line of jitterlab, with the barriers in chunks of BARRIER_CHUNK
CLI = ("import sys; from jitterlab.measure import latency; "
       f"latency._BARRIER_CHUNK = {BARRIER_CHUNK}; "
       "from jitterlab.cli import main; sys.exit(main(sys.argv[1:]))")
#: the same in a job of tests/mpi_jobs.py
IN_CHUNKS = {"jitterlab.measure.latency:_BARRIER_CHUNK": BARRIER_CHUNK}
#: the limit on a run's planned duration lowered to 1 ms: the warm-up plans more than that
LOW_LIMIT = {"jitterlab.base.limits:MAX_PLANNED_SECONDS": 1e-3}


def latency_arguments(output, *options) -> tuple:
    """The command line of a run, after ``jitterlab``."""
    return ("measure", "latency", "--output", str(output), "--no-progress", *options)


def latency_command(output, *options, ranks=2):
    return [MPIEXEC, "-n", str(ranks), sys.executable, "-c", CLI,
            *latency_arguments(output, *options)]


#: the calls refused with a clear error: (ranks, options, message), and with 1 rank, the
#: outputs that are not netCDF files (each in a folder of its own, left empty)
BAD_INPUT = [
    (1, ["--round-trips", "0"], "round_trips must be >= 1, got 0"),
    (1, ["--barriers", "-5"], "barriers must be >= 1, got -5"),
    (1, [], "needs at least 2 MPI ranks"),
    (2, ["--barriers", "0"], "barriers must be >= 1"),
]
NOT_NETCDF = ["l.csv", "l.nc.gz"]


def _bad_input_calls(directory, ranks) -> dict:
    calls = {}
    for index, (needs, options, _) in enumerate(BAD_INPUT):
        if needs == ranks:
            folder = directory / f"bad{index}"
            folder.mkdir()
            calls[f"bad{index}"] = (folder, Call(latency_arguments(folder / "l.nc", *options),
                                                 settings=IN_CHUNKS, status=2))
    for name in NOT_NETCDF if ranks == 1 else []:
        folder = directory / name
        folder.mkdir()
        calls[name] = (folder, Call(latency_arguments(folder / name), settings=IN_CHUNKS,
                                    status=2))
    return calls


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The 2-rank calls, in one MPI job: the run ("latency"), the same run refused on its
    file ("refused"), a run refused by the lowered limit ("over_limit") and the same allowed
    with JITTERLAB_ALLOW_LARGE=1 ("allowed"), and the 2-rank bad input: (output or
    folder, CallResult) by name."""
    if not (X86 and HAVE_MPI4PY and MPIEXEC):
        pytest.skip("needs an x86 timestamp counter, mpi4py and mpiexec")

    def calls(directory):
        output = directory / "latency.nc"
        limited, allowed = directory / "limited", directory / "allowed"
        limited.mkdir()
        allowed.mkdir()
        return {
            "latency": (output, Call(latency_arguments(
                output, "--round-trips", str(ROUND_TRIPS), "--barriers", str(BARRIERS)),
                settings=IN_CHUNKS)),
            "refused": (output, Call(latency_arguments(output), settings=IN_CHUNKS,
                                     digests=(output,), status=2)),
            "over_limit": (limited, Call(latency_arguments(limited / "l.nc"),
                                         settings=LOW_LIMIT, status=2)),
            "allowed": (allowed / "l.nc", Call(latency_arguments(
                allowed / "l.nc", "--round-trips", "50", "--barriers", "50"),
                settings=LOW_LIMIT, environment={"JITTERLAB_ALLOW_LARGE": "1"})),
            **_bad_input_calls(directory, 2)}

    return runs_once(tmp_path_factory, "latency", calls)


@pytest.fixture(scope="module")
def one_rank(tmp_path_factory):
    """The 1-rank calls of BAD_INPUT and NOT_NETCDF, in one MPI job: (folder, CallResult)
    by name."""
    if not (X86 and HAVE_MPI4PY and MPIEXEC):
        pytest.skip("needs an x86 timestamp counter, mpi4py and mpiexec")
    return runs_once(tmp_path_factory, "latency-one-rank",
                     lambda directory: _bad_input_calls(directory, 1), ranks=1)


@pytest.fixture(scope="module")
def run(runs):
    """The 2-rank run: (output, CallResult, Dataset)."""
    output, process = runs["latency"]
    return output, process, latency.read_latency(output)


# --------------------------------------------------------------------------------------
# a real run under mpiexec
# --------------------------------------------------------------------------------------
@needs_mpi
def test_file_structure_units_and_provenance(run):
    output, process, ds = run
    assert latency.is_latency_file(output)
    assert not latency.store_path(output).exists()  # chunks removed after the file
    assert ds["ping_pong"].dims == ("pair", "exchange")
    assert ds.sizes["pair"] == 1 and ds.sizes["exchange"] == ROUND_TRIPS
    assert ds["initiator"].values.tolist() == [0] and ds["responder"].values.tolist() == [1]
    assert ds["barrier"].dims == ("rank", "sample")
    assert ds.sizes["rank"] == 2 and ds.sizes["sample"] == BARRIERS
    for name in ("ping_pong", "barrier"):
        assert ds[name].attrs["units"] == "s" and ds[name].attrs["long_name"]
        values = ds[name].values
        assert np.all(np.isfinite(values)) and np.all(values > 0)
        assert np.all(values < 10.0)  # seconds, not cycles
    assert ds["frequency_hz"].attrs["units"] == "Hz"
    assert np.all((ds["frequency_hz"] > 0.5e9) & (ds["frequency_hz"] < 10e9))
    assert len(set(ds["host"].values.tolist())) == 1
    assert ds["node"].values.tolist() == [0, 0]
    assert ds["cpu"].values.tolist() != [-1, -1]
    attrs = ds.attrs
    assert attrs["source"] == "jitterlab.bench.latency"
    assert attrs["round_trips"] == ROUND_TRIPS and attrs["barriers"] == BARRIERS
    assert attrs["message_bytes"] == latency.MESSAGE_BYTES
    assert attrs["n_ranks"] == 2 and attrs["n_nodes"] == 1
    assert attrs["n_cpus"] == os.cpu_count()
    assert attrs["oversubscribed"] is (N_CPUS < 2)
    assert attrs["complete"] is True and attrs["interrupted"] is False
    assert attrs["chunks"] == 3  # one pair, two blocks of barriers
    assert attrs["mpi_vendor"] and attrs["cpu_model"] and attrs["collected_at"]
    assert attrs["command"].startswith("jitterlab measure latency --output")
    # only rank 0 printed its summary
    assert process.stdout.count("latency (complete), 2 ranks on 1 node") == 1
    assert "one-way latency tau" in process.stdout


@needs_mpi
def test_tau_is_positive_finite_and_below_the_round_trip(run):
    _, _, ds = run
    summary = latency.summarize_latency(ds)
    tau = float(summary["tau"])
    assert math.isfinite(tau) and tau > 0
    assert tau == pytest.approx(float(ds["ping_pong"].median()) / 2, rel=1e-12)
    low, high = summary["tau_ci"].values
    assert low <= tau <= high and float(summary["tau_se"]) >= 0
    assert summary["tau"].attrs["units"] == "s"
    barrier = float(summary["barrier_time"])
    assert math.isfinite(barrier) and barrier > 0
    assert float(summary["tau_mean"]) >= float(ds["ping_pong"].min()) / 2


@needs_mpi
def test_no_overwrite_without_force(runs):
    output, process = runs["refused"]  # the run's file, run again
    assert process.returncode == 2 and process.statuses == [2, 2]
    assert process.stderr.count("exists; pass --force") == 1  # rank 0 only
    assert process.digests == {str(output): hashlib.sha256(output.read_bytes()).hexdigest()}


@needs_mpi
def test_killed_run_keeps_its_completed_chunks(tmp_path, capsys):
    output = tmp_path / "killed.nc"
    store = latency.store_path(output)
    # a run meant to be killed: long, so let it past the limits on duration and memory
    process = subprocess.Popen(latency_command(output, "--barriers", str(10**8)),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               cwd=tmp_path, env={**os.environ, "JITTERLAB_ALLOW_LARGE": "1"})
    started = []
    try:
        # MPI start and 3 chunks: minutes under load (more than 240 s at load 12 to 16)
        deadline = time.monotonic() + MPI_TIMEOUT
        while not (store / "chunk-000002.npz").exists():
            assert process.poll() is None, process.stderr.read().decode()
            assert time.monotonic() < deadline, "the measurement did not start"
            time.sleep(0.05)
        started = _descendants(process.pid)  # the MPI proxy and the ranks
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
        process.stderr.close()
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in started) and time.monotonic() < deadline:
            time.sleep(0.05)
        for pid in started:  # the launcher normally takes its processes with it
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert not output.exists()
    ds = latency.read_latency(store)
    chunks = len(list(store.glob("chunk-*.npz")))
    assert ds.attrs["complete"] is False and ds.attrs["chunks"] == chunks >= 3
    assert ds.sizes["pair"] == 1 and ds.sizes["exchange"] == 1000  # the default
    assert ds.sizes["sample"] == (chunks - 1) * BARRIER_CHUNK
    assert float(latency.summarize_latency(ds)["tau"]) > 0
    assert "earlier (perhaps interrupted) run" in latency.target_problem(output)
    assert main(["info", str(store)]) == 0
    assert "latency (incomplete), 2 ranks" in capsys.readouterr().out


@needs_mpi
def test_info_summarises_a_latency_file(run, capsys):
    output, _, _ = run
    assert main(["info", str(output)]) == 0
    out = capsys.readouterr().out
    assert "latency (complete), 2 ranks" in out and "one-way latency tau" in out
    assert "empty barrier" in out and "round_trips" in out


@needs_mpi
@pytest.mark.parametrize(("index", "ranks", "message"),
                         [(index, ranks, message)
                          for index, (ranks, _, message) in enumerate(BAD_INPUT)])
def test_bad_input_gives_a_clear_error(request, index, ranks, message):
    folder, process = request.getfixturevalue("one_rank" if ranks == 1 else "runs")[
        f"bad{index}"]
    assert process.returncode == 2 and process.statuses == [2] * ranks
    assert process.stderr.count(message) == 1, process.stderr  # rank 0 only
    assert list(folder.iterdir()) == []


def test_non_integer_count_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["measure", "latency", "--round-trips", "many", "--output",
              str(tmp_path / "l.nc")])
    assert stop.value.code == 2
    assert "argument --round-trips: invalid int value: 'many'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@needs_mpi
@pytest.mark.parametrize("name", NOT_NETCDF)
def test_output_must_be_netcdf(one_rank, name):
    folder, process = one_rank[name]
    assert process.returncode == 2
    assert f"cannot tell the output format from {name!r}" in process.stderr
    assert list(folder.iterdir()) == []


# --------------------------------------------------------------------------------------
# the limits on duration and memory (issue #19: the only measurement without one)
# --------------------------------------------------------------------------------------
def test_planned_seconds_adds_pairs_idle_barriers_and_barriers():
    # 4 ranks: 6 pairs of (20 + 1000) round trips of 2 µs and an idle barrier each, then
    # 20 + 10 000 barriers of 5 µs
    expected = 6 * (1020 * 2e-6 + latency._IDLE_SLEEP) + 10020 * 5e-6
    assert math.isclose(latency.planned_seconds(4, 1000, 10000, 2e-6, 5e-6), expected)


@pytest.mark.parametrize(("arguments", "message"), [
    # 2 ranks at 1 ms per round trip (a loaded machine): 4e6 round trips take 4000 s
    ((2, 4 * 10**6, 10, 1e-3, 1e-6), "would take about 1.11 h, more than the 1 h allowed"),
    # 1000 ranks: 499 500 pairs, each with its 1 ms idle barrier alone is 500 s; at 5 µs
    # per round trip (a network) the default 1000 round trips add 2 548 s
    ((1000, 1000, 10000, 5e-6, 2e-5), "499500 pairs"),
    # memory: 10^12 round trips of 24 B on rank 0
    ((2, 10**12, 10, None, None), "would allocate about 24 TB"),
])
def test_a_run_over_an_hour_or_the_memory_is_refused_with_the_figure(arguments, message):
    problem = latency.limit_problem(*arguments)
    assert message in problem and "fewer round_trips or barriers" in problem
    assert "allow_large=True" in problem


def test_allow_large_lifts_the_duration_limit_but_not_for_ever():
    assert latency.limit_problem(2, 4 * 10**6, 10, 1e-3, 1e-6, allow_large=True) is None
    assert latency.limit_problem(2, 1000, 10000, 1e-6, 1e-6) is None  # the defaults
    assert "would never end" in latency.limit_problem(2, 10, 10, math.inf, 1e-6, True)


@needs_mpi
def test_a_real_run_over_the_limit_is_refused_on_every_rank_before_it_stores(runs):
    # the limit lowered to 1 ms in both ranks: the warm-up plans more than that
    folder, process = runs["over_limit"]
    assert process.returncode == 2 and process.statuses == [2, 2], process.stderr
    assert process.stderr.count("at the warm-up's") == 1, process.stderr  # rank 0 only
    assert "more than the 1 ms allowed" in process.stderr
    assert list(folder.iterdir()) == []
    output, allowed = runs["allowed"]  # the same limit, with JITTERLAB_ALLOW_LARGE=1
    assert allowed.returncode == 0, allowed.stderr
    assert latency.read_latency(output).sizes["exchange"] == 50


def test_allow_large_must_be_a_bool(tmp_path):
    with pytest.raises(TypeError, match="allow_large must be True or False, got 'yes'"):
        latency.latency_benchmark(tmp_path / "l.nc", allow_large="yes")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"round_trips": 0}, "round_trips"), ({"round_trips": 2.5}, "round_trips"),
    ({"barriers": True}, "barriers"), ({"output": "l.csv"}, "netCDF"),
])
def test_bad_arguments_are_refused_before_mpi(tmp_path, kwargs, message):
    arguments = {"output": tmp_path / "l.nc", **kwargs}
    with pytest.raises(ValueError, match=message):
        latency.latency_benchmark(**arguments)
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------------------
# without MPI: chunks to Dataset, file round trip, summary
# --------------------------------------------------------------------------------------
def _store(path, chunks, **metadata):
    base = {"source": latency.SOURCE, "n_ranks": 3, "frequency_hz": [1e9, 2e9, 1e9],
            "tsc_calibration_spread": [0.0, 0.0, 0.0], "host": ["a", "a", "b"],
            "node": [0, 0, 1], "n_nodes": 2, "cpu": [0, 1, 0], "round_trips": 2, "barriers": 2,
            "message_bytes": 8, "oversubscribed": False}
    writer = _chunks.ChunkWriter(path, {**base, **metadata}, kind="latency")
    for chunk in chunks:
        writer.append(**chunk)
    return writer


def _pair(i, j, cycles):
    return {"phase": np.array("ping_pong"), "initiator": np.int64(i),
            "responder": np.int64(j), "cycles": np.array(cycles, dtype=np.int64)}


def test_chunks_become_a_dataset_and_round_trip(tmp_path):
    store = tmp_path / "run.nc.latency"
    writer = _store(store, [
        _pair(0, 1, [2000, 4000]), _pair(0, 2, [3000, 1000]), _pair(1, 2, [8000, 6000]),
        {"phase": np.array("barrier"), "cycles": np.array([[10, 20], [40, 60], [10, 30]])},
    ])
    incomplete = latency.read_latency(store)
    assert incomplete.attrs["complete"] is False and incomplete.attrs["chunks"] == 4
    writer.finish(chunks=4)
    ds = latency.read_latency(store)
    # each round trip in the initiator's own counter: rank 1 counts at 2 GHz
    np.testing.assert_allclose(ds["ping_pong"].values,
                               [[2e-6, 4e-6], [3e-6, 1e-6], [4e-6, 3e-6]])
    assert ds["initiator"].values.tolist() == [0, 0, 1]
    assert ds["responder"].values.tolist() == [1, 2, 2]
    np.testing.assert_allclose(ds["barrier"].values,
                               [[1e-8, 2e-8], [2e-8, 3e-8], [1e-8, 3e-8]])
    assert ds["host"].values.tolist() == ["a", "a", "b"]
    assert ds.attrs["complete"] is True and ds.attrs["oversubscribed"] is False
    path = latency.write_latency(ds, tmp_path / "run.nc")
    again = latency.read_latency(path)
    assert again.attrs == ds.attrs
    for name in ds.variables:
        np.testing.assert_array_equal(again[name].values, ds[name].values)
        assert again[name].attrs == ds[name].attrs
    summary = latency.summarize_latency(again)
    # one-way times 1, 2, 1.5, 0.5, 2, 1.5 µs: median 1.5 µs
    assert float(summary["tau"]) == pytest.approx(1.5e-6)
    np.testing.assert_allclose(summary["tau_pair"], [1.5e-6, 1e-6, 1.75e-6])
    assert float(summary["barrier_time"]) == pytest.approx(2e-8)
    assert float(summary["tau_mean"]) == pytest.approx(8.5e-6 / 6)


def test_interrupted_before_the_barriers(tmp_path, capsys):
    store = tmp_path / "cut.nc.latency"
    _store(store, [_pair(0, 1, [2000, 4000])])  # killed before the barrier loop
    ds = latency.read_latency(store)
    assert ds.sizes["sample"] == 0 and ds.attrs["complete"] is False
    summary = latency.summarize_latency(ds)  # no warning about the empty barrier loop
    assert float(summary["tau"]) == pytest.approx(1.5e-6)
    assert np.isnan(float(summary["barrier_time"]))
    assert np.isnan(summary["barrier_rank"].values).all()
    assert main(["info", str(store)]) == 0
    out = capsys.readouterr().out
    assert "latency (incomplete), 3 ranks" in out and "1.5 µs" in out
    assert "empty barrier (median): not measured" in out


def test_read_latency_errors(tmp_path):
    with pytest.raises(ValueError, match="not a latency file"):
        latency.read_latency(Path(__file__))
    _store(tmp_path / "empty.nc.latency", [])
    with pytest.raises(ValueError, match="no complete chunk"):
        latency.read_latency(tmp_path / "empty.nc.latency")
    _chunks.ChunkWriter(tmp_path / "other", {}, kind="pb")
    with pytest.raises(ValueError, match="not 'latency'"):
        latency.read_latency(tmp_path / "other")
    output = tmp_path / "x.nc"
    output.write_text("x")
    assert "exists; pass --force" in latency.target_problem(output)
    with pytest.raises(TypeError, match="latency Dataset"):
        latency.summarize_latency(xr.Dataset())


def test_median_interval_covers_the_median_at_its_confidence():
    """Exponential samples (median ln 2): the order-statistic interval of the median
    covers it in at least 95 % of 2000 seeds, within 4 binomial standard errors."""
    seeds, m = 2000, 301
    covered = 0
    for seed in range(seeds):
        values = np.random.default_rng(seed).exponential(1.0, m)
        _, low, high = latency._median_interval(values, 0.95)
        covered += low <= math.log(2) <= high
    rate = covered / seeds
    assert rate > 0.95 - 4 * math.sqrt(0.95 * 0.05 / seeds)
    ds = xr.Dataset({"ping_pong": (("pair", "exchange"), [[1.0, 2.0]]),
                     "barrier": (("rank", "sample"), [[1.0], [2.0]])},
                    coords={"pair": [0], "rank": [0, 1]})
    for confidence, error in ((1.0, ValueError), (0.0, ValueError), ("0.9", TypeError)):
        with pytest.raises(error, match="confidence"):
            latency.summarize_latency(ds, confidence=confidence)
