"""``jitterlab measure ...`` with bad inputs, as a careful user would type them (issue #19).

One table: the command line, the exit status and a fragment of the message (stderr). Every
row fails before anything is measured or written: argparse's checks (status 2), the CLI's
planned-duration rule (status 2, "--force"), or the benchmark function's own checks, which
the CLI turns into usage errors (status 2). The MPI benchmarks run here without mpiexec, as
one rank (an MPI singleton), so their rows need mpi4py; the ranks' own checks under mpiexec
are in test_pb.py, test_latency.py and test_measure_bsp.py. Unwritable outputs are not
tabulated: the tests may run as root, who may write anywhere.
"""

import importlib.util
import platform

import pytest

from jitterlab.cli import main

X86 = platform.machine().lower() in {"x86_64", "amd64", "i686", "i386", "x86"}
HAVE_MPI4PY = importlib.util.find_spec("mpi4py") is not None
MPI = pytest.mark.skipif(not HAVE_MPI4PY, reason="the MPI benchmarks need mpi4py")
TSC = pytest.mark.skipif(not X86, reason="the check needs the x86 timestamp counter")

#: a CPU this process may not run on
ABSENT_CPU = "4096"

CASES = [
    # --- detour: durations, CPU, threshold, chunks, output, options
    (["detour", "--duration", "-1"], 2, "duration must be finite and > 0 seconds, got -1.0"),
    (["detour", "--duration", "0"], 2, "duration must be finite and > 0 seconds, got 0.0"),
    (["detour", "--duration", "nan"], 2, "duration must be finite and > 0 seconds, got nan"),
    (["detour", "--duration", "inf"], 2, "the run would never end (--duration inf s)"),
    (["detour", "--duration", "abc"], 2, "argument --duration: invalid float value: 'abc'"),
    (["detour", "--duration", "1e9"], 2, "31.7 years (--duration 1e+09 s), more than the 1 h "
                                         "allowed without --force"),
    (["detour", "--duration", "0.1", "--cpu", ABSENT_CPU], 2,
     f"cpu={ABSENT_CPU} is not in this process's CPU affinity set"),
    (["detour", "--duration", "0.1", "--cpu", "-1"], 2, "cpu must be >= 0, got -1"),
    (["detour", "--duration", "0.1", "--cpu", "one"], 2, "argument --cpu: invalid int value"),
    (["detour", "--duration", "0.1", "--threshold", "-5"], 2,
     "threshold must be finite and > 0 seconds, got -5e-09"),
    (["detour", "--duration", "0.1", "--threshold", "nan"], 2,
     "threshold must be finite and > 0 seconds, got nan"),
    (["detour", "--duration", "0.1", "--chunk-seconds", "0"], 2,
     "chunk_seconds must be finite and > 0 seconds, got 0.0"),
    (["detour", "--duration", "0.1", "--chunk-seconds", "nan"], 2,
     "chunk_seconds must be finite and > 0 seconds, got nan"),
    (["detour", "--duration", "0.1", "--output", "{existing}"], 2,
     "exists; pass --force to overwrite it"),
    (["detour", "--duration", "0.1", "--output", "d.txt"], 2,
     "cannot tell the output format from 'd.txt'"),
    (["detour", "--duration", "0.1", "--bogus"], 2, "unrecognized arguments: --bogus"),
    (["detour"], 2, "the following arguments are required: --duration"),
    # --- fwq
    (["fwq", "--work", "-1", "--samples", "10"], 2, "work must be finite and > 0 seconds"),
    (["fwq", "--work", "0", "--samples", "10"], 2, "work must be finite and > 0 seconds, got 0"),
    (["fwq", "--work", "nan", "--samples", "10"], 2,
     "work must be finite and > 0 seconds, got nan"),
    (["fwq", "--work", "inf", "--samples", "10"], 2, "the run would never end"),
    (["fwq", "--work", "1e3", "--samples", "10"], 2,
     "at least 2.78 h (--samples 10 x --work 1000 s), more than the 1 h allowed without --force"),
    (["fwq", "--work", "1e-4", "--samples", "0"], 2, "samples must be >= 1, got 0"),
    (["fwq", "--work", "1e-4", "--samples", "-5"], 2, "samples must be >= 1, got -5"),
    (["fwq", "--work", "1e-4", "--samples", "2.5"], 2, "argument --samples: invalid int value"),
    (["fwq", "--work", "1e-4", "--samples", "1e3"], 2, "argument --samples: invalid int value"),
    (["fwq", "--work", "1e-4", "--samples", "10", "--cpu", ABSENT_CPU], 2,
     "is not in this process's CPU affinity set"),
    (["fwq", "--work", "1e-4", "--samples", "10", "--cpu", "-1"], 2, "cpu must be >= 0"),
    (["fwq", "--work", "1e-4", "--samples", "10", "--output", "{existing}"], 2,
     "exists; pass --force to overwrite it"),
    (["fwq", "--work", "1e-4", "--samples", "10", "--output", "f.txt"], 2,
     "cannot tell the output format from 'f.txt': use .nc or .csv"),
    (["fwq", "--work", "1e-4", "--samples", "10", "--output", ""], 2,
     "cannot tell the output format from ''"),
    (["fwq", "--work", "1e-4", "--samples", "10", "--unknown", "3"], 2,
     "unrecognized arguments: --unknown 3"),
    pytest.param(["fwq", "--work", "1e-12", "--samples", "10"], 2,
                 "is shorter than one timed LCG step", marks=TSC),
    # --- pb (one MPI rank)
    pytest.param(["pb", "--work", "-1", "--duration", "1"], 2,
                 "work must be finite and > 0 seconds, got -1.0", marks=MPI),
    pytest.param(["pb", "--work", "nan", "--duration", "1"], 2,
                 "work must be finite and > 0 seconds, got nan", marks=MPI),
    pytest.param(["pb", "--work", "1e-4", "--duration", "0"], 2,
                 "duration must be finite and > 0 seconds, got 0.0", marks=MPI),
    pytest.param(["pb", "--work", "1e-4", "--duration", "nan"], 2,
                 "duration must be finite and > 0 seconds, got nan", marks=MPI),
    # ran one 1000 s iteration (more with the random wait) though --duration said 1 s
    pytest.param(["pb", "--work", "1e3", "--duration", "1"], 2,
                 "work (1000 s) is longer than duration (1 s)", marks=MPI),
    (["pb", "--work", "1e-4", "--duration", "1e5"], 2,
     "at least 1.16 days (--duration 100000 s), more than the 1 h allowed without --force"),
    pytest.param(["pb", "--work", "1e-4", "--duration", "1", "--max-wait", "-1"], 2,
                 "max_wait must be finite and >= 0 seconds, got -1.0", marks=MPI),
    pytest.param(["pb", "--work", "1e-4", "--duration", "1", "--max-wait", "nan"], 2,
                 "max_wait must be finite and >= 0 seconds, got nan", marks=MPI),
    pytest.param(["pb", "--work", "1e-4", "--duration", "1", "--seed", "-1"], 2,
                 "seed must be >= 0, got -1", marks=MPI),
    pytest.param(["pb", "--work", "1e-4", "--duration", "1", "--chunk-seconds", "0"], 2,
                 "chunk_seconds must be finite and > 0 seconds, got 0.0", marks=MPI),
    pytest.param(["pb", "--work", "1e-4", "--duration", "1", "--output", "{existing}"], 2,
                 "exists; pass --force (overwrite=True) to replace it", marks=MPI),
    pytest.param(["pb", "--work", "1e-4", "--duration", "1", "--output", "p.csv"], 2,
                 "cannot tell the output format from 'p.csv': use .nc", marks=MPI),
    (["pb", "--work", "1e-4"], 2, "the following arguments are required: --duration"),
    # --- latency (one MPI rank: refused for that, after the argument checks)
    pytest.param(["latency", "--round-trips", "-1"], 2, "round_trips must be >= 1, got -1",
                 marks=MPI),
    pytest.param(["latency", "--barriers", "0"], 2, "barriers must be >= 1, got 0", marks=MPI),
    (["latency", "--round-trips", "nan"], 2, "argument --round-trips: invalid int value: 'nan'"),
    pytest.param(["latency"], 2, "the latency benchmark needs at least 2 MPI ranks", marks=MPI),
    pytest.param(["latency", "--output", "{existing}"], 2, "exists; pass --force", marks=MPI),
    # --- bsp
    pytest.param(["bsp", "--phases", "0", "--work", "1e-4"], 2, "phases must be >= 1, got 0",
                 marks=MPI),
    pytest.param(["bsp", "--phases", "-1", "--work", "1e-4"], 2, "phases must be >= 1, got -1",
                 marks=MPI),
    (["bsp", "--phases", "2.5", "--work", "1e-4"], 2, "argument --phases: invalid int value"),
    (["bsp", "--phases", "1000000000", "--work", "1e-3"], 2,
     "at least 11.6 days (--phases 1000000000 x --work 0.001 s)"),
    pytest.param(["bsp", "--phases", "10", "--work", "-1"], 2,
                 "work must be finite and > 0 seconds, got -1.0", marks=MPI),
    pytest.param(["bsp", "--phases", "10", "--work", "nan"], 2,
                 "work must be finite and > 0 seconds, got nan", marks=MPI),
    pytest.param(["bsp", "--phases", "10", "--work", "1e-4", "--inject-period", "0",
                  "--inject-duration", "1e-5"], 2,
                 "inject_period must be finite and > 0 seconds, got 0.0", marks=MPI),
    pytest.param(["bsp", "--phases", "10", "--work", "1e-4", "--inject-period", "nan",
                  "--inject-duration", "1e-5"], 2,
                 "inject_period must be finite and > 0 seconds, got nan", marks=MPI),
    pytest.param(["bsp", "--phases", "10", "--work", "1e-4", "--inject-period", "1e-4",
                  "--inject-duration", "1e-3"], 2,
                 "inject_duration (0.001 s) must be shorter than inject_period (0.0001 s)",
                 marks=MPI),
    pytest.param(["bsp", "--phases", "10", "--work", "1e-4", "--inject-period", "1e-4"], 2,
                 "give both inject_period and inject_duration (or neither)", marks=MPI),
    pytest.param(["bsp", "--phases", "10", "--work", "1e-4", "--inject-period", "1e-3",
                  "--inject-duration", "1e-5", "--inject-seed", "-1"], 2,
                 "inject_seed must be >= 0, got -1", marks=MPI),
    pytest.param(["bsp", "--phases", "10", "--work", "1e-4", "--threshold", "-1"], 2,
                 "threshold must be finite and > 0 seconds, got -1.0", marks=MPI),
    pytest.param(["bsp", "--phases", "10", "--work", "1e-4", "--threshold", "nan"], 2,
                 "threshold must be finite and > 0 seconds, got nan", marks=MPI),
    (["bsp", "--phases", "10", "--work", "1e-4", "--collective", "bogus"], 2,
     "argument --collective: invalid choice: 'bogus'"),
    pytest.param(["bsp", "--phases", "10", "--work", "1e-4", "--chunk-seconds", "0"], 2,
                 "chunk_seconds must be finite and > 0 seconds, got 0.0", marks=MPI),
    pytest.param(["bsp", "--phases", "10", "--work", "1e-4", "--output", "{existing}"], 2,
                 "exists; pass --force (overwrite=True) to replace it", marks=MPI),
    pytest.param(["bsp", "--phases", "10", "--work", "1e-4", "--output", "b.csv"], 2,
                 "cannot tell the output format from 'b.csv': use .nc", marks=MPI),
    # --- counters
    (["counters"], 2, "give the command to measure after --"),
    (["counters", "--map", "bad", "--", "true"], 2, "--map takes PERF=PAPI, got 'bad'"),
    (["counters", "--output", "{existing}", "--", "true"], 2, "exists; pass --force"),
]

#: the output each benchmark is given when the row names none
_DEFAULT_OUTPUT = {"detour": "d.nc", "fwq": "f.nc", "pb": "p.nc", "latency": "l.nc",
                   "bsp": "b.nc"}


@pytest.mark.parametrize(("argv", "status", "message"), CASES)
def test_a_bad_measure_command_stops_with_a_clear_message(argv, status, message, tmp_path,
                                                          capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    existing = tmp_path / ("exists.csv" if argv[0] == "counters" else "exists.nc")
    existing.write_bytes(b"mine")
    argv = [str(existing) if value == "{existing}" else value for value in argv]
    if "--output" not in argv and argv[0] in _DEFAULT_OUTPUT and "--" not in argv:
        argv += ["--output", _DEFAULT_OUTPUT[argv[0]]]
    try:
        code = main(["measure", *argv, "--no-progress"] if argv[0] != "counters" else
                    ["measure", *argv])
    except SystemExit as stop:
        code = stop.code
    err = capsys.readouterr().err
    assert code == status, err
    assert message in err
    # nothing measured or written: the existing file is untouched, nothing else appeared
    assert existing.read_bytes() == b"mine"
    assert sorted(path.name for path in tmp_path.iterdir()) == [existing.name]


def test_every_measure_subcommand_is_tabulated():
    tabulated = {(case.values if hasattr(case, "values") else case)[0][0] for case in CASES}
    assert tabulated == {"detour", "fwq", "pb", "latency", "bsp", "counters"}
    assert len(CASES) >= 60
