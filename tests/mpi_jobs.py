"""Several ``jitterlab`` command lines in one MPI job, for the tests of the MPI benchmarks
(tests/test_pb.py, test_latency.py, test_measure_bsp.py).

Every launch of ``mpiexec`` starts its ranks afresh, and each rank imports jitterlab, numba,
pandas and mpi4py and loads its kernels before it measures anything: of a short BSP run's
4.5-5 CPU-s, the launch is most (one job of the four BSP runs of test_measure_bsp: 7.1 and
6.4 CPU-s; the same four runs launched one by one: 20.8 and 18.6 CPU-s, niced, load 10-15).
So each test module runs its command lines, one after the other, in one job (``run_job``):
each rank calls ``jitterlab.cli.main`` with each command line, as ``python -m jitterlab.cli``
would, catches the ``SystemExit`` of a refused one, and writes what the call printed
(file descriptors 1 and 2, so the MPI library's own messages too) to files of its own, per
call and rank: a call's ``stdout`` and ``stderr`` are those of its ranks, in rank order, and
nothing of another call. The exit status of every rank is kept (a benchmark promises the
same status on every rank). A call may set module attributes (``"module:name"``) and
environment variables for its duration, and ask for the SHA-256 of files just before it
runs (to check that a refused run left them alone).

Run by the ranks as a script: ``mpiexec -n N python tests/mpi_jobs.py CALLS.json FOLDER``.
It imports only mpi4py and jitterlab's command line, not pytest or the test modules.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

RESULTS = "results.json"  # written by rank 0 into the job's folder


@dataclass(frozen=True)
class Call:
    """One command line of ``jitterlab`` (without the program name) in a job."""

    argv: tuple[str, ...]
    #: module attributes set for the call and restored after: ``"module:name"`` -> value
    settings: dict = field(default_factory=dict)
    #: environment variables set for the call and restored after
    environment: dict = field(default_factory=dict)
    #: files whose SHA-256 rank 0 records just before the call (None: absent)
    digests: tuple[str, ...] = ()
    #: the exit status every rank must return (the job fails otherwise)
    status: int = 0

    def as_dict(self) -> dict:
        return {"argv": [str(word) for word in self.argv], "settings": self.settings,
                "environment": self.environment, "digests": [str(p) for p in self.digests]}


@dataclass(frozen=True)
class CallResult:
    """What one call of a job did: its command line, exit status (of every rank), and what
    its ranks printed, in rank order."""

    args: list
    returncode: int
    statuses: list
    stdout: str
    stderr: str
    digests: dict


def run_job(mpiexec: str, calls: dict, directory: Path, ranks: int = 2,
            timeout: float = 600.0) -> dict:
    """Run ``calls`` (name -> :class:`Call`, in order) in one ``mpiexec -n ranks`` job in
    ``directory``; returns name -> :class:`CallResult`. Fails (AssertionError) if the job
    fails or a call ends with another status than its ``status``. ``timeout`` is per call
    [s]."""
    folder = directory / ".mpi-job"
    folder.mkdir(parents=True, exist_ok=True)
    names = list(calls)
    (folder / "calls.json").write_text(json.dumps([calls[name].as_dict() for name in names]))
    process = subprocess.run(
        [mpiexec, "-n", str(ranks), sys.executable, str(Path(__file__).resolve()),
         str(folder / "calls.json"), str(folder)], capture_output=True, text=True,
        timeout=timeout * len(calls), cwd=directory)
    assert process.returncode == 0, process.stderr + process.stdout
    results = json.loads((folder / RESULTS).read_text())
    done = {}
    for index, name in enumerate(names):
        statuses = results[index]["statuses"]
        outputs = {stream: "".join(
            (folder / f"{index}-{rank}.{stream}").read_text(errors="replace")
            for rank in range(ranks)) for stream in ("out", "err")}
        done[name] = CallResult(["jitterlab", *calls[name].argv], max(statuses), statuses,
                                outputs["out"], outputs["err"], results[index]["digests"])
        assert statuses == [calls[name].status] * ranks, (name, statuses, outputs["err"])
    return done


def _digest(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def _call(main, call: dict, out: Path, err: Path) -> int:
    """Run one call with its settings and environment, fds 1 and 2 into ``out``, ``err``."""
    restore = []
    for target, value in call["settings"].items():
        module_name, name = target.split(":")
        module = importlib.import_module(module_name)
        restore.append((module, name, getattr(module, name)))
        setattr(module, name, value)
    environment = dict(os.environ)
    os.environ.update(call["environment"])
    sys.stdout.flush()
    sys.stderr.flush()
    kept = os.dup(1), os.dup(2)
    with open(out, "w") as stdout, open(err, "w") as stderr:
        os.dup2(stdout.fileno(), 1)
        os.dup2(stderr.fileno(), 2)
        try:
            status = main(call["argv"]) or 0
        except SystemExit as exit:  # argparse's usage errors
            status = exit.code if isinstance(exit.code, int) else 0 if exit.code is None else 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(kept[0], 1)
            os.dup2(kept[1], 2)
            for descriptor in kept:
                os.close(descriptor)
            os.environ.clear()
            os.environ.update(environment)
            for module, name, value in reversed(restore):
                setattr(module, name, value)
    return status


def _job(calls_path: str, folder: str) -> None:
    from mpi4py import MPI

    from jitterlab.cli import main

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    results = []
    for index, call in enumerate(json.loads(Path(calls_path).read_text())):
        comm.Barrier()  # the previous call has ended on every rank
        digests = {path: _digest(path) for path in call["digests"]} if rank == 0 else {}
        status = _call(main, call, Path(folder, f"{index}-{rank}.out"),
                       Path(folder, f"{index}-{rank}.err"))
        statuses = comm.gather(status, root=0)
        results.append({"statuses": statuses, "digests": digests})
    if rank == 0:
        Path(folder, RESULTS).write_text(json.dumps(results))


if __name__ == "__main__":
    _job(*sys.argv[1:3])
