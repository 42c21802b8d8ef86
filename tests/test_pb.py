"""The Parallel Benchmark: ``mpiexec -n 2 jitterlab measure pb`` for real, and its pieces.

The MPI runs are short (0.5 s of measurement, two ranks) and check what must hold on any
machine: the structure and units of the result, iteration = compute + barrier per sample,
compute >= the calibrated work, equal sample counts on every rank, the histograms against
the samples, no overwrite without --force, and a killed run's completed chunks. The two
runs and the refused one are one MPI job (tests/mpi_jobs.py); the killed run is a launch of
its own. The array-level pieces (histograms, chunks to Dataset) are checked by hand without
MPI.
"""

import fcntl
import hashlib
import importlib.util
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from mpi_jobs import Call, CallResult, run_job

import jitterlab as jl
from jitterlab.cli import main
from jitterlab.io import chunks as _chunks
from jitterlab.measure import pb

X86 = platform.machine().lower() in {"x86_64", "amd64", "i686", "i386", "x86"}
MPIEXEC = shutil.which("mpiexec", path=os.pathsep.join(
    [str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
HAVE_MPI4PY = importlib.util.find_spec("mpi4py") is not None
needs_mpi = pytest.mark.skipif(
    not (X86 and HAVE_MPI4PY and MPIEXEC),
    reason="needs an x86 timestamp counter, mpi4py and mpiexec (pip install "
    "'jitterlab[mpi]')")
WORK = 0.0002
# 0.5 s of measurement (was 1 s): what the runs' tests need is a few chunks of 0.2 s and a
# few iterations of 0.2 ms, and the run stops at the duration whatever the load
DURATION = 0.5
N_CPUS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def pb_arguments(output, *options, duration=DURATION) -> tuple:
    """The command line of a run, after ``jitterlab``."""
    return ("measure", "pb", "--work", str(WORK), "--duration", str(duration), "--output",
            str(output), "--no-progress", *options)


def pb_command(output, *options, duration=DURATION):
    return [MPIEXEC, "-n", "2", sys.executable, "-m", "jitterlab.cli",
            *pb_arguments(output, *options, duration=duration)]


#: how long a run under mpiexec may take before the test fails [s]: minutes on a busy
#: machine (a refused run's start alone took more than 120 s at load 12 to 16)
MPI_TIMEOUT = 600


def runs_once(tmp_path_factory, name: str, calls, ranks: int = 2) -> dict:
    """The calls of ``calls(directory)`` (run name -> (output file, :class:`Call`)), run
    once per test session in one MPI job (:func:`mpi_jobs.run_job`) in ``directory``:
    ``{run: (output, CallResult)}``.

    Under pytest-xdist the workers share the directory: the first worker to need the runs
    makes them under a lock while the other waits, then both read them (a module-scoped
    fixture alone ran again on every worker that took one of the module's tests: the four
    BSP runs cost 31 s on each of the two workers in CI).
    """
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        directory, lock = tmp_path_factory.mktemp(name), None
    else:
        directory = tmp_path_factory.getbasetemp().parent / f"shared-{name}"
        lock = open(directory.with_suffix(".lock"), "w")  # noqa: SIM115 (held below)
        fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        record = directory / "calls.json"
        if not record.exists():
            shutil.rmtree(directory, ignore_errors=True)  # a run that failed earlier
            directory.mkdir()
            planned = calls(directory)
            done = run_job(MPIEXEC, {run: call for run, (_, call) in planned.items()},
                           directory, ranks, MPI_TIMEOUT)
            record.write_text(json.dumps({run: (str(output), vars(done[run]))
                                          for run, (output, _) in planned.items()}))
        return {run: (Path(output), CallResult(**result))
                for run, (output, result) in json.loads(record.read_text()).items()}
    finally:
        if lock is not None:
            lock.close()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Both Fig. 3/4 settings, then a run refused on the first one's file: (output,
    CallResult, Dataset or None) by name."""
    if not (X86 and HAVE_MPI4PY and MPIEXEC):
        pytest.skip("needs an x86 timestamp counter, mpi4py and mpiexec")

    def calls(directory):
        done = {name: (directory / f"{name}.nc", Call(pb_arguments(
            directory / f"{name}.nc", *options))) for name, options in (
                ("default", ["--chunk-seconds", "0.2"]),
                ("quiet", ["--no-random-wait", "--no-broadcast", "--chunk-seconds", "0.2"]))}
        taken = done["default"][0]
        done["refused"] = (taken, Call(pb_arguments(taken), digests=(taken,), status=2))
        return done

    return {name: (output, process, jl.bench.read_pb(output) if name != "refused" else None)
            for name, (output, process) in runs_once(tmp_path_factory, "pb", calls).items()}


# --------------------------------------------------------------------------------------
# real runs under mpiexec
# --------------------------------------------------------------------------------------
@needs_mpi
@pytest.mark.parametrize("name", ["default", "quiet"])
def test_result_structure_and_units(runs, name):
    output, process, dataset = runs[name]
    assert not pb.store_path(output).exists()  # chunks removed after the file is written
    assert dataset.sizes["rank"] == 2
    n_bins = dataset.sizes["bin"]
    assert dataset.sizes["bin_edge"] == n_bins + 1
    for quantity in pb.QUANTITIES:
        variable = dataset[quantity]
        assert variable.dims == ("rank", "sample")
        assert variable.attrs["units"] == "s" and variable.attrs["long_name"]
        histogram = dataset[f"{quantity}_hist"]
        assert histogram.dims == ("rank", "bin")
        assert histogram.attrs["units"] == "1" and histogram.attrs["long_name"]
    assert dataset["bin_edges"].attrs["units"] == "s"
    assert dataset["bin_edges"].values[0] == 0 and np.isinf(dataset["bin_edges"].values[-1])
    assert dataset["frequency_hz"].attrs["units"] == "Hz"
    assert np.all((dataset["frequency_hz"] > 0.5e9) & (dataset["frequency_hz"] < 10e9))
    # coordinates: host and node per rank, the CPU each rank was pinned to
    assert len(set(dataset["host"].values.tolist())) == 1  # one host, named by MPI
    assert dataset["node"].values.tolist() == [0, 0]
    cpus = dataset["cpu"].values.tolist()
    allowed = sorted(os.sched_getaffinity(0))
    assert cpus == [allowed[0], allowed[1 % len(allowed)]]
    attrs = dataset.attrs
    random_wait = name == "default"
    assert attrs["source"] == "jitterlab.bench.pb"
    assert attrs["random_wait"] is random_wait and attrs["broadcast"] is random_wait
    assert attrs["work"] == WORK and attrs["duration"] == DURATION
    assert attrs["max_wait"] == (WORK if random_wait else 0.0)
    assert attrs["seed"] == 0 and attrs["n_ranks"] == 2 and attrs["n_nodes"] == 1
    assert attrs["n_cpus"] == os.cpu_count()
    assert attrs["oversubscribed"] is (N_CPUS < 2)
    assert attrs["complete"] is True and attrs["pinned"] is True
    assert attrs["mpi_vendor"] and attrs["mpi_library_version"]
    assert attrs["jitterlab_version"] == jl.__version__
    assert attrs["collected_at"].endswith("+00:00")
    assert attrs["command"].startswith("jitterlab measure pb --work")
    # 0.2 s chunks with the broadcast; without it the first chunk is planned from a guess
    # of the barrier time to last about 0.1 s, and on a busy machine (barrier waits of
    # milliseconds) that one chunk alone may reach the duration
    first_chunk_was_all = not random_wait and attrs["chunks"] == 1
    assert attrs["chunks"] >= 2 or first_chunk_was_all
    # the ranks stop once the measured time reaches the duration: with the broadcast at
    # the iteration that reaches it; without it after the planned number of iterations,
    # later than planned if the last chunk ran slower than the one before (5 s for 1 s
    # beside a loaded machine, so no upper bound is checked there)
    assert DURATION <= attrs["measured_duration"]
    if random_wait:
        assert attrs["measured_duration"] < DURATION + 0.1
    # only rank 0 printed its summary
    assert process.stdout.count("Parallel Benchmark") == 1
    assert "mean / p99" in process.stdout


@needs_mpi
@pytest.mark.parametrize("name", ["default", "quiet"])
def test_samples_add_up_and_histograms_count_them(runs, name):
    _, _, dataset = runs[name]
    compute = dataset["compute"].values  # dataset.compute is xarray's method
    barrier = dataset["barrier"].values
    iteration = dataset["iteration"].values
    # the same number of samples on both ranks, all of them real
    assert compute.shape == barrier.shape == iteration.shape
    # how many iterations fit in the second depends on the load beside the test (thousands
    # on a quiet machine, 26 seen at load 12): the checks below need a few, not many
    assert compute.shape[1] == dataset.attrs["samples"] == dataset.attrs["iterations"] >= 2
    assert np.all(np.isfinite(iteration))
    np.testing.assert_allclose(iteration, compute + barrier, rtol=0, atol=1e-6)
    # the LCG loop runs at the speed the calibration measured only roughly: on a shared VM
    # its undisturbed quantum varies by several per cent between the calibration and the
    # run (179.9 µs for 200 µs calibrated in one test run with two busy processes beside)
    assert np.all(compute >= 0.8 * WORK)
    assert np.all(barrier >= 0)
    # each rank's own calibration: the undisturbed quantum is the work
    np.testing.assert_allclose(dataset["calibrated_work"], WORK, rtol=0.01)
    edges = dataset["bin_edges"].values
    for quantity in pb.QUANTITIES:
        counts = dataset[f"{quantity}_hist"].values
        expected = np.stack([np.histogram(dataset[quantity].values[rank], edges)[0]
                             for rank in range(2)])
        np.testing.assert_array_equal(counts, expected)
        assert counts.sum(axis=1).tolist() == [dataset.attrs["iterations"]] * 2


@needs_mpi
def test_no_overwrite_without_force(runs):
    output, process, _ = runs["refused"]  # the default run's file, run again
    assert process.returncode == 2 and process.statuses == [2, 2]
    assert process.stderr.count("exists; pass --force") == 1  # rank 0 only
    assert process.digests == {str(output): hashlib.sha256(output.read_bytes()).hexdigest()}
    assert not pb.store_path(output).exists()


@needs_mpi
def test_info_summarises_a_pb_file(runs, capsys):
    output, _, dataset = runs["default"]
    assert main(["info", str(output)]) == 0
    out = capsys.readouterr().out
    assert "Parallel Benchmark (complete), 2 ranks on 1 node" in out
    assert "compute" in out and "barrier" in out and "iteration" in out
    # mean / p99 of three times on two ranks, each in the unit its size needs (a loaded
    # machine's barrier waits reach milliseconds)
    pairs = re.findall(r"\d[\d.]* (?:ns|µs|ms|s) / \d[\d.]* (?:ns|µs|ms|s)\b", out)
    assert len(pairs) >= 6, out
    assert "mpi_vendor" in out and "iterations counted per rank" in out


def _children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    return children


def _descendants(pid: int) -> list[int]:
    children, found, stack = _children(), [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@needs_mpi
def test_killed_run_keeps_its_completed_chunks(tmp_path, capsys):
    output = tmp_path / "killed.nc"
    store = pb.store_path(output)
    process = subprocess.Popen(pb_command(output, "--chunk-seconds", "0.25", duration=30),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               cwd=tmp_path)
    started = []
    try:
        deadline = time.monotonic() + 60
        while not (store / "chunk-000001.npz").exists():
            assert process.poll() is None, process.stderr.read().decode()
            assert time.monotonic() < deadline, "the measurement did not start"
            time.sleep(0.05)
        started = _descendants(process.pid)  # the MPI proxy and the ranks
        time.sleep(0.3)
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
    assert process.returncode == -signal.SIGKILL
    assert not output.exists()
    dataset = jl.bench.read_pb(store)
    chunks = len(list(store.glob("chunk-*.npz")))
    assert dataset.attrs["complete"] is False
    assert dataset.attrs["chunks"] == chunks >= 2
    assert dataset.attrs["measured_duration"] < 30
    iterations = dataset.attrs["iterations"]
    assert dataset["iteration"].shape == (2, iterations)
    assert dataset["iteration_hist"].sum("bin").values.tolist() == [iterations] * 2
    np.testing.assert_allclose(dataset["iteration"],
                               dataset["compute"] + dataset["barrier"], rtol=0, atol=1e-6)
    assert "earlier (perhaps interrupted) run" in pb.target_problem(output)
    assert main(["info", str(store)]) == 0
    assert "Parallel Benchmark (incomplete)" in capsys.readouterr().out


# --------------------------------------------------------------------------------------
# without MPI: arguments, histograms, chunks to Dataset
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("kwargs", "message"), [
    ({"work": 0}, "work"), ({"duration": -1.0}, "duration"),
    ({"chunk_seconds": 0}, "chunk_seconds"), ({"max_wait": -1e-6}, "max_wait"),
    ({"seed": -1}, "seed"), ({"seed": 1.5}, "seed"), ({"max_samples": -1}, "max_samples"),
    ({"random_wait": "yes"}, "random_wait"), ({"output": "pb.csv"}, "netCDF"),
    ({"hist_bins": [1e-6, 1e-6]}, "hist_bins"), ({"hist_bins": [-1.0, 1.0]}, "hist_bins"),
])
def test_bad_arguments_are_refused_before_mpi(tmp_path, kwargs, message):
    arguments = {"work": 1e-4, "duration": 1.0, "output": tmp_path / "pb.nc", **kwargs}
    with pytest.raises(ValueError, match=message):
        jl.bench.parallel_benchmark(**arguments)
    assert list(tmp_path.iterdir()) == []


def test_default_bins_are_log_spaced_from_zero_to_ten_seconds():
    edges = pb.default_hist_bins()
    assert edges[0] == 0 and edges[1] == pytest.approx(1e-8) and edges[-1] == pytest.approx(10)
    assert edges.size == 9 * pb.HIST_BINS_PER_DECADE + 2
    ratios = edges[2:] / edges[1:-1]
    np.testing.assert_allclose(ratios, 10 ** (1 / pb.HIST_BINS_PER_DECADE), rtol=1e-9)
    assert pb._check_edges([1e-6, 2e-6]).tolist() == [0.0, 1e-6, 2e-6]  # 0 prepended


def test_sparse_histogram_counts_like_numpy():
    rng = np.random.default_rng(1)
    frequency = 2.5e9
    out = rng.integers(0, 10**7, size=(3, 500), dtype=np.int64)
    edges = np.array([0.0, 1e-4, 1e-3, 2e-3])  # plus [2 ms, inf)
    index, count = pb._sparse_histogram(out, 400, frequency, edges)
    dense = np.zeros(3 * 4, dtype=np.int64)
    dense[index] = count
    for q in range(3):
        expected = np.histogram(out[q, :400] / frequency, np.append(edges, np.inf))[0]
        np.testing.assert_array_equal(dense[4 * q:4 * q + 4], expected)
    assert count.sum() == 3 * 400 and np.all(count > 0)


def _store(path, chunks, **metadata):
    base = {"n_ranks": 2, "frequency_hz": [1e9, 2e9], "bin_edges": [0.0, 1e-6, 1e-5],
            "host": ["a", "b"], "node": [0, 1], "cpu": [3, 3], "lcg_iterations": [10, 20],
            "calibrated_work": [1e-6, 1e-6], "tsc_calibration_spread": [0.0, 0.0],
            "calibration_extrapolated": [False, False], "source": pb.SOURCE, "work": 1e-6,
            "random_wait": True, "broadcast": False, "max_samples": None}
    writer = _chunks.ChunkWriter(path, {**base, **metadata}, kind="pb")
    for chunk in chunks:
        writer.append(**chunk)
    return writer


def _chunk(compute, barrier, iterations, seconds, hist):
    compute, barrier = np.array(compute, dtype=np.int64), np.array(barrier, dtype=np.int64)
    rank, index, count = (np.array(column) for column in zip(*hist, strict=True))
    return {"compute": compute, "barrier": barrier, "iteration": compute + barrier,
            "iterations": np.int64(iterations), "seconds": np.float64(seconds),
            "hist_rank": rank.astype(np.int32), "hist_index": index.astype(np.int64),
            "hist_count": count.astype(np.int64)}


def test_chunks_become_a_dataset(tmp_path):
    store = tmp_path / "run.nc.pb"
    # rank 0 counts at 1 GHz, rank 1 at 2 GHz; 3 bins per quantity: [0,1µs) [1µs,10µs) [10µs,∞)
    _store(store, [
        _chunk([[2000, 3000], [4000, 6000]], [[100, 0], [200, 2000]], 2, 0.5,
               [(0, 1, 2), (0, 3, 2), (0, 7, 2), (1, 1, 2), (1, 3, 1), (1, 4, 1),
                (1, 7, 2)]),
        _chunk([[12000], [2000]], [[0], [0]], 1, 0.25,
               [(0, 2, 1), (0, 3, 1), (0, 8, 1), (1, 1, 1), (1, 3, 1), (1, 7, 1)]),
    ])
    dataset = jl.bench.read_pb(store)
    np.testing.assert_allclose(dataset["compute"].values,
                               [[2e-6, 3e-6, 12e-6], [2e-6, 3e-6, 1e-6]])
    np.testing.assert_allclose(dataset["barrier"].values, [[1e-7, 0, 0], [1e-7, 1e-6, 0]])
    assert dataset["compute_hist"].values.tolist() == [[0, 2, 1], [0, 3, 0]]
    assert dataset["barrier_hist"].values.tolist() == [[3, 0, 0], [2, 1, 0]]
    assert dataset["iteration_hist"].values.tolist() == [[0, 2, 1], [0, 3, 0]]
    assert dataset["bin_edges"].values.tolist() == [0.0, 1e-6, 1e-5, np.inf]
    assert dataset["host"].values.tolist() == ["a", "b"]
    assert dataset["node"].values.tolist() == [0, 1] and dataset["cpu"].values.tolist() == [3, 3]
    attrs = dataset.attrs
    assert attrs["iterations"] == 3 and attrs["samples"] == 3 and attrs["chunks"] == 2
    assert attrs["measured_duration"] == pytest.approx(0.75)
    assert attrs["complete"] is False and "max_samples" not in attrs
    # written and read back: the same Dataset, booleans restored
    path = jl.bench.write_pb(dataset, tmp_path / "run.nc")
    again = jl.bench.read_pb(path)
    assert again.attrs == attrs
    for name in dataset.variables:
        np.testing.assert_array_equal(again[name].values, dataset[name].values)
        assert again[name].attrs == dataset[name].attrs


def test_samples_capped_but_histograms_complete(tmp_path):
    store = tmp_path / "capped.nc.pb"
    empty = np.zeros((2, 0), dtype=np.int64)
    _store(store, [
        _chunk([[2000], [4000]], [[0], [0]], 3, 0.5,
               [(0, 1, 3), (0, 3, 3), (0, 7, 3), (1, 1, 3), (1, 3, 3), (1, 7, 3)]),
        {**_chunk([[0], [0]], [[0], [0]], 5, 0.5,
                  [(0, 1, 5), (0, 3, 5), (0, 7, 5), (1, 1, 5), (1, 3, 5), (1, 7, 5)]),
         "compute": empty, "barrier": empty, "iteration": empty},
    ], max_samples=1)
    dataset = jl.bench.read_pb(store)
    assert dataset.sizes["sample"] == 1 and dataset.attrs["iterations"] == 8
    assert dataset["compute_hist"].sum("bin").values.tolist() == [8, 8]
    assert dataset.attrs["max_samples"] == 1


def test_read_pb_errors(tmp_path):
    with pytest.raises(ValueError, match="not a Parallel Benchmark"):
        jl.bench.read_pb(Path(__file__))
    _store(tmp_path / "empty.nc.pb", [])
    with pytest.raises(ValueError, match="no complete chunk"):
        jl.bench.read_pb(tmp_path / "empty.nc.pb")
    detour_store = tmp_path / "other"
    _chunks.ChunkWriter(detour_store, {}, kind="detour")
    with pytest.raises(ValueError, match="not 'pb'"):
        jl.bench.read_pb(detour_store)
    output = tmp_path / "other.nc"
    (tmp_path / "other.nc.pb").mkdir()
    (tmp_path / "other.nc.pb" / "notes.txt").write_text("mine")
    assert "not a Parallel Benchmark chunk directory" in pb.target_problem(output, True)
    output.write_text("x")
    assert "exists; pass --force" in pb.target_problem(output)


def test_histogram_law_covers_every_iteration_of_a_shipped_run():
    from jitterlab.datasets import load_pb

    run = load_pb(ranks=2)
    law = jl.bench.histogram_law(run, "compute", 0)
    counts = run["compute_hist"].sel(rank=0).values
    assert counts.sum() == run.attrs["iterations"] > run.sizes["sample"]
    # uniform inside each bin: the law's mean is the count-weighted mean of the midpoints
    edges = run["bin_edges"].values[:-1]
    middle = (edges[:-1] + edges[1:]) / 2
    assert law.mean() == pytest.approx(np.dot(counts[:-1], middle) / counts.sum(), rel=1e-12)
    with pytest.raises(ValueError, match="quantity"):
        jl.bench.histogram_law(run, "wait", 0)
    overflow = run.copy(deep=True)
    overflow["compute_hist"].values[0, -1] = 3
    with pytest.raises(ValueError, match="beyond the histogram's last finite edge"):
        jl.bench.histogram_law(overflow, "compute", 0)
