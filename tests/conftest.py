"""Shared pytest set-up.

``JUPYTER_PLATFORM_DIRS=1`` is set at import time, before any test module imports
jupyter_core, so that Jupyter uses the platform directories instead of warning about the
migration (``filterwarnings = error`` would turn that warning into a failure).

Hypothesis has no deadline per example: its default (200 ms) is a wall-time assertion that
fails on a shared, busy machine (and on the example that first compiles a numba kernel);
a test that needs a time limit says so itself. Under CI (``CI`` set) hypothesis runs
derandomized: the same examples every run, so a submission is judged on the code, not on the
draw; local runs keep exploring new ones.

The tests that read the notebooks' JupyterLab run (``tests/test_browser.py``) are moved to
the end of the session; with ``JITTERLAB_BROWSER_BACKGROUND=1`` the run starts in a
subprocess as soon as the tests are collected, beside the other tests, and a run still going
when the session ends is stopped.

The numba kernels are compiled once per clone (``cache=True`` writes them to ``__pycache__``).
In a fresh clone (CI) each kernel was compiled by the first test that called it, on the
critical path (the tree barrier alone: 130 s of one test), and again by a notebook or a test
of the other worker that reached it meanwhile. So under pytest-xdist (``-n 2``, as CI runs),
a session over ``WARM_UP_MODULES`` or more test files first compiles the kernels that the
tests and notebooks call, :func:`warm_numba_cache`, before the workers start: two
subprocesses on the two CPUs that share its groups of calls (one kernel, one process); every
test and notebook kernel then loads them from the cache instead of compiling them again.
Where the cache is already warm this only loads it (a few seconds). In one process such a
session starts the warm-up instead in a subprocess at nice 9 beside the tests (a test that
reaches a kernel first compiles it itself). ``JITTERLAB_NUMBA_WARM_UP=0`` turns it off, ``=1``
on whatever the session's size.
"""

import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import pytest
from hypothesis import settings

os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")
# Python writes no bytecode where PYTHONDONTWRITEBYTECODE is set (this machine and CI's set it):
# then every xdist worker, subprocess test, MPI rank, Dask worker and notebook kernel compiled
# numpy, pandas, scipy, xarray, matplotlib and jitterlab from source again, about 4 CPU-s each
# (imports 5.8-6.4 CPU-s without .pyc, 1.5-2.0 with). The session's processes, all started
# after this line, write it once and read it after.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False
# OpenBLAS hands a large dot product to its threads, which then spin for a while after it:
# on two CPUs shared by a test session, its workers and the notebooks' kernels that costs
# CPU and buys nothing (the BLAS work here is small). One BLAS thread in the processes the
# session starts (workers, subprocesses, the JupyterLab server and its kernels): notebook 07
# 24.9 -> 16.7 CPU-s, one np.dot of 10^4 values then 0.2 s idle 54-100 ms -> 0.2 ms (h12-2).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

settings.register_profile("shared-machine", deadline=None)
settings.register_profile("ci", parent=settings.get_profile("shared-machine"),
                          derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "shared-machine")


# the tests of tests/test_browser.py that read the notebooks' JupyterLab run, and their group
# under pytest-xdist
NOTEBOOK_TESTS = ("test_notebook_runs_in_jupyterlab",
                  "test_checked_outputs_match_the_committed_ones")
NOTEBOOK_GROUP = "notebooks"


def _needs_notebook_runs(item) -> bool:
    """True for a test of tests/test_browser.py that reads the notebooks' JupyterLab runs."""
    return (item.nodeid.split("::")[0].endswith("test_browser.py")
            and getattr(item, "originalname", "") in NOTEBOOK_TESTS)


#: tests that share an expensive fixture, as their ``xdist_group`` marks say, or that must not
#: run beside each other: path -> (group, test function, tuple of them, or None for the whole
#: module). The scheduler below reads only node ids, and xdist 3.8's ``NAME@group`` renaming
#: does not reach it under pytest 9.2, so they are named here.
SHARED_FIXTURE_GROUPS = {
    "tests/test_docs_site.py": ("docs_site", None),  # the Sphinx site, about 30 CPU-s
    "tests/test_recipes.py": ("recipes_help", "test_help_runs_as_a_module"),  # 8 programs
    # the live runs with kernel events: a run that starts removes the tracefs instance of a
    # run killed beside it, which test_tracefs' killed-run test must see its own next run
    # remove (it tried three times, 37 CPU-s, and the Ctrl-C test failed, with the two
    # tests on the two workers at once)
    "tests/test_tracefs.py": ("tracefs", None),
    "tests/test_attribution.py": ("tracefs", (
        "test_live_injected_thread_is_attributed_to_it",
        "test_live_hrtimer_driven_load_is_attributed_with_its_hrtimer")),
    # module fixtures that ran once on each worker: `jitterlab reproduce` of two notebooks
    # (2.8 CPU-s, twice in a -n 2 run), and the two-process Dask cluster (each worker
    # process imports jitterlab; the first test on each worker waited 16-19 s for one)
    "tests/test_cli.py": ("cli_reproduce", (
        "test_reproduce_exit_status_and_message", "test_reproduce_writes_executed_notebook",
        "test_reproduce_extracts_figure", "test_reproduce_keeps_failing_notebook",
        "test_reproduce_summary")),
    "tests/test_sweep.py": ("sweep_cluster", (
        "test_two_workers_give_the_serial_dataset_bit_for_bit",
        "test_several_points_per_task_give_the_same_dataset",
        "test_montecarlo_max_of_n_on_two_workers_is_the_serial_one",
        "test_failures_on_the_cluster_are_the_serial_ones")),
}


def notebook_group_scope(nodeid: str) -> str:
    """The unit of work of a test under ``--dist loadgroup``: ``NOTEBOOK_GROUP`` for the
    notebook tests, the group of :data:`SHARED_FIXTURE_GROUPS` (or of an ``@group`` suffix
    that xdist appended) for the tests that share a fixture, else the test alone."""
    _, at, suffix = nodeid.rpartition("@")
    if at and "]" not in suffix and "::" not in suffix and "/" not in suffix:
        return suffix
    path, _, rest = nodeid.partition("::")
    function = rest.split("[")[0]
    if path.endswith("test_browser.py") and function in NOTEBOOK_TESTS:
        return NOTEBOOK_GROUP
    for module, (group, only) in SHARED_FIXTURE_GROUPS.items():
        if path.endswith(module) and (only is None or function in (
                (only,) if isinstance(only, str) else only)):
            return group
    return nodeid


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` by ``notebook_group_scope``: the notebook tests are one unit, the
    largest, which xdist hands out first, so one worker starts the notebooks while the other
    takes the other tests. (xdist 3.8's own loadgroup renames the tests ``NAME@group``, which
    pytest 9.2 no longer reads back: the group fell apart, and each worker ran every notebook.)
    """
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class NotebooksAsOneGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return notebook_group_scope(nodeid)

    return NotebooksAsOneGroup(config, log)


def pytest_collection_modifyitems(session, config, items):
    """The notebook tests go last: they wait for the JupyterLab run in the background."""
    items[:] = ([item for item in items if not _needs_notebook_runs(item)]
                + [item for item in items if _needs_notebook_runs(item)])


WARM_UP_MODULES = 10  # test files in a session from which the numba warm-up starts
# the warm-up yields to the tests when they want both CPUs; below 10, which the team's
# quiet.sh pauses
WARM_UP_NICE = 9
WARM_UP_PROCESSES = 2  # the warm-up before the workers: one per CPU of CI's machine
WARM_UP_TIMEOUT = 900.0  # the warm-up before the workers, at most [s] (fresh clone: ~80 s)


def xdist_worker() -> str | None:
    """The pytest-xdist worker this process is (``gw0``, ``gw1``, ...), None outside xdist."""
    return os.environ.get("PYTEST_XDIST_WORKER")


def load_benchmark(name: str):
    """The module of ``benchmarks/<name>.py`` (loaded once), registered in ``sys.modules``
    by its name: numba's disk cache finds a cached parallel kernel's module there."""
    import importlib.util

    if name not in sys.modules:
        path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def warm_up_wanted(items) -> bool:
    """True for a session whose tests come from ``WARM_UP_MODULES`` or more files, or with
    ``JITTERLAB_NUMBA_WARM_UP=1``; never with ``=0``."""
    wanted = os.environ.get("JITTERLAB_NUMBA_WARM_UP", "")
    modules = {item.nodeid.split("::")[0] for item in items}
    return wanted == "1" or (wanted != "0" and len(modules) >= WARM_UP_MODULES)


WARM_UP_VARIANTS = ("one-thread", "parallel")


def next_share(counter: Path) -> int:
    """The next item of work shared by processes through ``counter`` (a file holding how
    many items were taken, locked while it is read and written): 0, 1, 2, ..."""
    import fcntl

    with open(counter, "a+", encoding="ascii") as stream:
        fcntl.flock(stream, fcntl.LOCK_EX)
        stream.seek(0)
        taken = int(stream.read().strip() or 0)
        stream.seek(0)
        stream.truncate()
        stream.write(str(taken + 1))
    return taken


def warm_numba_cache(variants=WARM_UP_VARIANTS, shared: Path | None = None) -> str:
    """Compile (or load from the cache) the numba kernels that the tests and notebooks call,
    through the public API on small inputs: the one-thread variants, the parallel ones or
    both, in that order (:func:`jitterlab.base.threads.kernel_threads` picks either, by the free
    CPUs); returns what it did, in one line.

    With ``shared`` (a counter file, :func:`next_share`) several processes share the work:
    each takes the next group of calls that compile the same kernels (the largest first)
    until none is left, so no two compile one kernel at once."""
    import numba
    import numpy as np

    import jitterlab as jl
    from jitterlab.sim.replay_kernels import trace_table
    from jitterlab.testing import random_events

    wavefront_predict, wavefront_simulate = jl.apps.wavefront_predict, jl.apps.wavefront_simulate
    Empirical, Exponential = jl.noise.Empirical, jl.noise.Exponential
    approximate_timeline = jl.estimate.approximate_timeline
    accumulated_noise = jl.estimate.accumulated_noise

    started = time.monotonic()
    draw = np.random.default_rng(0)
    trace = jl.Trace(jitter=draw.exponential(3e-6, 200), gap=draw.exponential(1e-3, 200))
    quiet = jl.Trace(jitter=[0.0], gap=[1.0])
    message = jl.Message(send=1e-6, recv=1e-6, latency=5e-6)
    wavefront = jl.apps.Wavefront(2, 2, blocks=3, work=1e-5, iterations=2, message=message)
    goal = Path(os.environ.get("TMPDIR", "/tmp")) / f"jitterlab-warm-up-{os.getpid()}.goal"
    goal.write_text("num_ranks 2\nrank 0 {\na: send 8b to 1 tag 5\nb: calc 100 cpu 0\n"
                    "b requires a\n}\nrank 1 {\nc: recv 8b from 0 tag 5\n}\n")

    def frozen_tree_kernel():
        with load_benchmark("bench_simulate").old_tree_kernel():
            jl.simulate(trace, n=7, work=1e-4, phases=2, barrier=jl.TreeBarrier(), rng=0)

    def simulations(barriers, sizes):
        calls = []
        for barrier in barriers:
            for start in ("random", "random_row", "synchronized"):
                calls.append(lambda barrier=barrier, start=start: jl.simulate(
                    trace, n=sizes, work=1e-4, phases=2, start=start, barrier=barrier,
                    rng=0))
            calls.append(lambda barrier=barrier: jl.simulate(
                trace, n=300, work=1e-4, phases=2, barrier=barrier, rng=0, detail=True))
            calls.append(lambda barrier=barrier: jl.simulate(
                quiet, n=300, work=1e-4, phases=2, barrier=barrier, rng=0))
        return calls

    def groups(variant):
        """Groups of calls that compile the same kernels, each with True where it compiles
        other kernels in the two variants, the largest first: the schedule's event loop
        (28 CPU-s into an empty cache, one process, niced), then the tree barrier (13 CPU-s
        one thread, 5 more parallel), so that the two processes before the workers end
        close together (taken second, after one of the tree's variants, the event loop
        ended its process 9 s after the other in session 12's CI run: 43 and 52 s). The
        parallel variant's simulations
        have no task count below ``PARALLEL_MIN_TASKS`` (256), which would compile the
        one-thread kernels."""
        # another N for the parallel variant: the noiseless reference of (N, barrier) is
        # kept (lru_cache), and the one-thread variant's N = 300 in the same process would
        # leave the parallel noiseless tree uncompiled
        sizes = [1, 300] if variant == "one-thread" else [301]
        return [
            # the event loop: as the public path's njit wrapper calls it, and as Python calls
            # it (detail="events"; the tests that call the loop directly take that one: 13.7
            # CPU-s of test_matched_send_of_each_receive in CI when it was left out)
            (False, [lambda: jl.simulate_schedule(jl.read_goal(goal), jl.LogGOPS(
                L=3e-6, o=1e-6, g=2e-6, G=2e-9, O=5e-10, S=4096)),
                     lambda: jl.simulate_schedule(jl.read_goal(goal), jl.LogGOPS(
                         L=3e-6, o=1e-6, g=2e-6, G=2e-9, O=5e-10, S=4096), detail="events")]),
            (True, simulations([jl.TreeBarrier(), jl.TreeBarrier(message=message)], sizes)),
            (True, simulations([None], sizes)),
            # run_rounds has no parallel variant: the one-thread sizes compile all of it; an
            # event trace needs each round's partners (notebook 15's GOAL programs too)
            (False, [*simulations([jl.Dissemination(message), jl.RecursiveDoubling(message)],
                                  [1, 300]),
                     lambda: jl.simulate(trace, n=4, work=1e-4, phases=2, rng=0,
                                         barrier=jl.Dissemination(message), detail="events")]),
            (True, [lambda: jl.max_of_n(Exponential(mean=1e-5) + 1e-4, n=[1, 1000]),
                    lambda: jl.max_of_n(Empirical(draw.exponential(1e-5, 20_000)),
                                        n=[1, 1000, 10**9]),
                    # one N: the parallel variant's step sum (several N run on one thread
                    # each)
                    lambda: jl.max_of_n(Empirical(draw.exponential(1e-5, 20_000)), n=1000),
                    lambda: jl.max_of_n(Exponential(mean=1.0), n=[1, 64],
                                        method="montecarlo", replicates=100, rng=0)]),
            # the wavefront: the block recurrence, and the simulation pass by pass and on
            # arrival (notebook 10's kernel compiled these two in the browser run)
            (False, [lambda: wavefront_predict(wavefront),
                     lambda: wavefront_predict(wavefront, trace),
                     lambda: wavefront_simulate(wavefront, detail=True),
                     lambda: wavefront_simulate(wavefront, trace, progress="on_arrival",
                                                rng=0)]),
            # the timeline estimate; a trace with an any_order column (read from a file) gives
            # it read-only flags, one without a noise_combined column a writable sum of the
            # sources: two more signatures (notebook 12 and test_otf2 compiled them)
            (False, [lambda: approximate_timeline(random_events(0)),
                     lambda: accumulated_noise(random_events(1)),
                     lambda: accumulated_noise(jl.EventTrace(
                         random_events(2).data.assign(any_order=False))),
                     lambda: accumulated_noise(jl.EventTrace(
                         random_events(3).data.drop(columns="noise_combined")))]),
            # tests/test_kernels compares the tree kernel with the frozen one of before issue
            # #13 (benchmarks/bench_simulate.py) and builds trace tables from writable arrays:
            # its first such test compiled them, 7 CPU-s, on both workers in one CI run
            (False, [frozen_tree_kernel,
                     lambda: trace_table(np.zeros(2), np.ones(2))])]

    # a group that compiles the same kernels in both variants runs once, in the first: the
    # two processes compiled the schedule's event loop, the wavefront's, the estimate's,
    # run_rounds and more each at the same time (fresh clone, niced, load 1.6-1.9: 30
    # kernels saved by both processes, 146.7 CPU-s in 75.5 s; once: 5, the tree's shared
    # callees, 105.5 CPU-s in 57.1 s)
    counts = {"one-thread": 1, "parallel": numba.get_num_threads()}
    per_variant = {variant: groups(variant) for variant in variants}
    if shared is None:  # one thread first: beside this process the tests find one CPU free
        order = [(variant, index) for variant in variants
                 for index in range(len(per_variant[variant]))]
    else:  # each group's two variants one after the other: the largest first
        order = [(variant, index) for index in range(len(per_variant[variants[0]]))
                 for variant in sorted(variants, reverse=True)]
    work = [(counts[variant], per_variant[variant][index][1]) for variant, index in order
            if per_variant[variant][index][0] or variant == variants[0]]
    done = 0
    threads_setting = os.environ.get("JITTERLAB_THREADS")
    os.environ["JITTERLAB_THREADS"] = "all"  # the parallel variants too, beside busy tests
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            index = -1
            while True:
                index = index + 1 if shared is None else next_share(shared)
                if index >= len(work):
                    break
                threads, group = work[index]
                numba.set_num_threads(threads)
                done += 1
                for call in group:
                    try:
                        call()
                    except Exception as error:  # noqa: BLE001 - the tests will report it
                        print(f"numba warm-up: {error!r}", file=sys.stderr)
    finally:
        goal.unlink(missing_ok=True)
        if threads_setting is None:
            del os.environ["JITTERLAB_THREADS"]
        else:
            os.environ["JITTERLAB_THREADS"] = threads_setting
    return (f"numba warm-up: {done} of {len(work)} groups of calls "
            f"({' and '.join(variants)} variants) in {time.monotonic() - started:.0f} s")


def _warm_up_args(argv) -> tuple:
    """``conftest.py --warm-numba-cache [--shared COUNTER] [VARIANT ...]``"""
    shared = None
    if argv[:1] == ["--shared"]:
        shared, argv = Path(argv[1]), argv[2:]
    return tuple(argv) or WARM_UP_VARIANTS, shared


WARMED = "JITTERLAB_NUMBA_WARMED"  # what the warm-up before the workers did (their env)


def test_files(config) -> int:
    """How many test files the command line names (``testpaths`` without arguments)."""
    base = config.invocation_params.dir
    files = set()
    for argument in config.args:
        path = Path(base, argument.split("::")[0])
        if path.is_dir():
            files.update(path.rglob("test_*.py"))
        elif path.is_file():
            files.add(path)
    return len(files)


def warm_up_environment() -> dict:
    """The warm-up's environment: OpenMP threads that sleep instead of spinning while they
    wait (``OMP_WAIT_POLICY=PASSIVE``, unless set). The warm-up only compiles, and its calls
    with two threads in each of two processes on two CPUs waited for each other spinning:
    the two processes took 188 CPU-s with the default policy (fresh cache, niced, load 8-10)
    and 138 CPU-s passive (load 2-11), one process 99. The numba cache does not depend on it.
    """
    return {"OMP_WAIT_POLICY": "PASSIVE", **os.environ}


def warm_up_before_workers() -> str:
    """The numba cache warmed by ``WARM_UP_PROCESSES`` subprocesses at once, which share the
    groups of calls, and waited for; returns what they did (a broken warm-up only costs
    time)."""
    started = time.monotonic()
    processes = []
    with tempfile.TemporaryDirectory(prefix="jitterlab-warm-up-") as folder:
        for _ in range(WARM_UP_PROCESSES):
            log = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
            processes.append((subprocess.Popen(
                [sys.executable, str(Path(__file__).resolve()), "--warm-numba-cache",
                 "--shared", str(Path(folder) / "taken")],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=warm_up_environment()), log))
        try:
            lines = [WarmUp(process, log).report(WARM_UP_TIMEOUT)
                     for process, log in processes]
        finally:  # interrupted (Ctrl-C): no warm-up left running
            for process, _ in processes:
                if process.poll() is None:
                    process.kill()
                    process.wait()
    return "; ".join(lines) + (f" ({WARM_UP_PROCESSES} processes before the workers "
                               f"started, {time.monotonic() - started:.0f} s)")


def pytest_configure(config):
    """Under pytest-xdist (the controller, before it starts the workers): warm the numba cache
    for a session over ``WARM_UP_MODULES`` or more test files (``JITTERLAB_NUMBA_WARM_UP``:
    ``0`` never, ``1`` always); the workers inherit what it did in ``JITTERLAB_NUMBA_WARMED``."""
    if (hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None)
            or config.option.collectonly):
        return
    wanted = os.environ.get("JITTERLAB_NUMBA_WARM_UP", "")
    if wanted == "1" or (wanted != "0" and test_files(config) >= WARM_UP_MODULES):
        config.jitterlab_warmed = warm_up_before_workers()
        os.environ[WARMED] = config.jitterlab_warmed


@pytest.fixture(scope="session")
def numba_warm_up(request) -> str:
    """What warmed the numba cache before the notebooks' kernels started: under pytest-xdist
    the warm-up before the workers (:func:`pytest_configure`), "" without one (in one process
    the warm-up is a subprocess started after collection)."""
    return os.environ.get(WARMED, "") if xdist_worker() is not None else ""


def _start_warm_up(session) -> None:
    if not warm_up_wanted(session.items):
        return
    log = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
    process = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--warm-numba-cache"],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        env=warm_up_environment(), preexec_fn=lambda: os.nice(WARM_UP_NICE))
    session.config.jitterlab_warm_up = WarmUp(process, log)


class WarmUp:
    """The numba warm-up subprocess and its output."""

    def __init__(self, process: subprocess.Popen, log):
        self.process, self.log = process, log

    def report(self, wait: float = 0.0) -> str:
        """What the warm-up printed (its time, or what went wrong: a broken warm-up only
        costs time), after waiting up to ``wait`` seconds for it to end [s]; stops it if it
        is still going."""
        if wait:
            try:
                self.process.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                pass
        stopped = self.process.poll() is None
        if stopped:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:  # paused (SIGSTOP) or stuck
                self.process.kill()
                self.process.wait()
        self.log.seek(0)
        text = self.log.read().strip()
        self.log.close()
        if stopped:
            text += "\nnumba warm-up: stopped" + (f" after {wait:g} s" if wait else
                                                 " at the end of the session")
        elif self.process.returncode:
            text += f"\nnumba warm-up: exit status {self.process.returncode}"
        return text[-3000:].strip()


def pytest_collection_finish(session):
    """In one process: start the notebooks' JupyterLab run if it is to overlap the other tests
    (``tests/test_browser.py``: ``start_in_background``; it warms the numba cache first),
    else the numba warm-up alone. Under pytest-xdist the warm-up ran before the workers."""
    if session.config.option.collectonly or xdist_worker() is not None:
        return
    items = [item for item in session.items if _needs_notebook_runs(item)]
    if items:
        paths = list(dict.fromkeys(item.callspec.params["path"] for item in items))
        items[0].module.start_in_background(session.config, paths)
    if getattr(session.config, "jitterlab_browser_run", None) is None:
        _start_warm_up(session)


def pytest_sessionfinish(session):
    """Stop a background run that the session no longer waits for (-x, Ctrl-C)."""
    background = getattr(session.config, "jitterlab_browser_run", None)
    if background is not None:
        background.stop()


def pytest_addoption(parser):
    parser.addoption(
        "--cpu-durations", type=int, default=None, metavar="N",
        help="show the N tests that took the most CPU time: user + system time of the test's "
             "process and of the children it waited for, setup + call + teardown [s] (N=0: "
             "all); and the tests that mostly waited (wall time well above CPU time)")


CPU_MARK = pytest.StashKey[float]()  # the process's CPU time at the end of the last phase [s]
CPU_PROPERTY = "cpu_seconds"  # the report's user property holding its phase's CPU time [s]
WAITING_SHOWN = 15  # tests listed as waiting by --cpu-durations


def process_cpu_seconds() -> float:
    """User + system time of this process (all its threads) and of the children it has
    waited for [s]. A child still running, or never waited for, is not counted."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def pytest_runtest_logstart(nodeid, location):
    """--cpu-durations: the CPU time at the start of a test (before its setup)."""
    _cpu_start[0] = process_cpu_seconds()


_cpu_start = [0.0]  # the CPU time at the start of the current test [s] (one test at a time)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """--cpu-durations: each phase's report carries the CPU time the phase took, as the user
    property ``cpu_seconds`` (a list of its own, so it travels from an xdist worker alone)."""
    report = yield
    if item.config.getoption("cpu_durations") is not None:
        now = process_cpu_seconds()
        start = item.stash.get(CPU_MARK, None) if call.when != "setup" else None
        used = now - (_cpu_start[0] if start is None else start)
        item.stash[CPU_MARK] = now
        report.user_properties = [*report.user_properties, (CPU_PROPERTY, used)]
    return report


def pytest_runtest_logreport(report):
    """--cpu-durations (in the controller under xdist): add up each test's phases."""
    for name, value in report.user_properties:
        if name == CPU_PROPERTY:
            cpu, wall = _cpu_per_test.get(report.nodeid, (0.0, 0.0))
            _cpu_per_test[report.nodeid] = (cpu + value, wall + report.duration)


_cpu_per_test: dict = {}  # node id -> (CPU time, wall time) of setup + call + teardown [s]


def cpu_durations_lines(per_test: dict, shown: int) -> list:
    """The lines of --cpu-durations' summary: the ``shown`` tests (0: all) with the most CPU
    time, then those that waited most (wall time above twice their CPU time)."""
    total_cpu = sum(cpu for cpu, _ in per_test.values())
    total_wall = sum(wall for _, wall in per_test.values())
    ranked = sorted(per_test.items(), key=lambda entry: -entry[1][0])
    lines = [f"CPU time of {len(per_test)} tests: {total_cpu:.1f} CPU-s in {total_wall:.1f} s "
             f"of the workers' wall time (setup + call + teardown, with waited-for children)",
             "    CPU-s   wall-s  test"]
    lines += [f"{cpu:9.2f}{wall:9.2f}  {nodeid}"
              for nodeid, (cpu, wall) in ranked[:shown or None]]
    waiting = sorted(((wall - cpu, nodeid, cpu, wall)
                      for nodeid, (cpu, wall) in per_test.items()
                      if wall > 2 * cpu and wall - cpu > 1.0), reverse=True)
    if waiting:
        lines += [f"tests that mostly waited (wall time above twice their CPU time; "
                  f"{min(WAITING_SHOWN, len(waiting))} of {len(waiting)}):",
                  "    CPU-s   wall-s  test"]
        lines += [f"{cpu:9.2f}{wall:9.2f}  {nodeid}"
                  for _, nodeid, cpu, wall in waiting[:WAITING_SHOWN]]
    return lines


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """How long the numba warm-up took, and its errors (a broken warm-up only costs time);
    with --cpu-durations, the CPU time per test."""
    shown = config.getoption("cpu_durations")
    if shown is not None and _cpu_per_test:
        terminalreporter.write_sep("=", "CPU time per test (--cpu-durations)")
        for line in cpu_durations_lines(_cpu_per_test, shown):
            terminalreporter.write_line(line)
    if getattr(config, "jitterlab_warmed", None):
        terminalreporter.write_line(config.jitterlab_warmed)
    warm_up = getattr(config, "jitterlab_warm_up", None)
    if warm_up is not None:
        config.jitterlab_warm_up = None
        terminalreporter.write_line(warm_up.report())


def pytest_unconfigure(config):
    """A session ended without a terminal summary still stops the warm-up."""
    warm_up = getattr(config, "jitterlab_warm_up", None)
    if warm_up is not None:
        config.jitterlab_warm_up = None
        warm_up.report()


if __name__ == "__main__" and sys.argv[1:2] == ["--warm-numba-cache"]:
    print(warm_numba_cache(*_warm_up_args(sys.argv[2:])))
