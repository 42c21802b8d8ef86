"""LogGOPSim reference results for GOAL schedules: writes tests/data/goal/.

Issue #23 asks that jitterlab's schedule engine equals LogGOPSim to the nanosecond on
LogGOPSim's own example schedule and on Schedgen2-generated collectives. This program makes
the references; it needs LogGOPSim (spcl/LogGOPSim) built outside the project.

Schedules (Schedgen2, LogGOPSim's Python generator, called as a program):

* all-reduce by ring (reduce-scatter then all-gather) and by recursive doubling,
* broadcast and reduce on a binomial tree,
* linear all-to-all, and the same with a computation before every send,

at 16, 64, 256, 1024 and 4096 ranks, with messages of 8 B, 4096 B (only the
O(ranks log ranks) patterns) and 32 768 B each: below every parameter set's rendezvous
threshold S, at or between, and above. Patterns whose operation count grows as ranks² are
cut: the ring stops at 1024 ranks (at 4096 Schedgen2 would hold 67 million Python objects),
the all-to-alls at 256 ranks with 8 B only (LogGOPSim took 6 minutes for the three
parameter sets of the 256-rank all-to-all on the shared machine; at 1024 ranks it would
take hours). Schedgen2's ``--datasize`` is the whole vector of the all-reduces, so it is the
message size times the ranks (every message is then at least the given size). Plus
``binary_tree_32.goal`` from LogGOPSim's source tree.

Each schedule is converted with ``txt2bin`` and run without noise under three LogGOPS
parameter sets (``PARAMETERS``: g, G and O non-zero, S set). LogGOPSim prints every
rank's end ("Host i: t", the rank's CPU free time) only for up to 16 ranks; for more
ranks the per-rank ends come from a second build of the same commit whose only change
is that limit (``allhosts.patch``, the ``p <= 16`` test removed). The program checks that
both builds agree: the same per-rank lines up to 16 ranks, the same "Maximum finishing
time" above.

Noisy set: LogGOPSim with ``--noise-trace`` on traces written by jitterlab
(``jl.Trace.to_loggopsim``), ``--runs`` runs per case. LogGOPSim seeds each rank's start in
the trace with the clock's second, so each run starts in a new second (recorded).

Written (tests/data/goal/): ``cases.csv`` (one row per schedule: its Schedgen2 arguments,
operation and dependency counts, the SHA-256 of its canonical text (:func:`canonical_text`)
and its shipped file, if any), ``<case>.goal.gz`` for schedules of at most
``SHIP_MAX_OPERATIONS`` operations (the others are regenerated from ``cases.csv``),
``results.csv.gz`` (one row per noiseless run: parameters, makespan, every rank's end in
rank order), ``noisy.csv`` (one row per noisy run) and the noise traces ``*.trc.gz``.

Run from the repository root::

    python -m jitterlab.recipes.make_goal_references [--loggopsim DIR] [--allhosts DIR]
        [--schedgen2 DIR] [--runs R] [--only PATTERN]

Rows already in ``results.csv.gz`` / ``noisy.csv`` are kept; a rerun completes the rest.
Until 2026-11-26 this program was the script ``data/make_goal_references.py`` (same
options), the name ``tests/data/goal/PROVENANCE.md`` records.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import io
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import DATA_DIR

#: the folder this program writes, the test data beside ``data/``
TESTS_DATA = DATA_DIR.parent / "tests" / "data"
OUT = TESTS_DATA / "goal"
#: where LogGOPSim and its allhosts build are, outside the project
EXT = Path("/work/ext/loggopsim")
#: the largest schedule shipped as a file [operations]; larger ones are regenerated
SHIP_MAX_OPERATIONS = 40_000

#: LogGOPS parameter sets [ns, ns, ns, ns per byte, ns per byte, bytes]
PARAMETERS = {
    "A": dict(L=2500, o=1500, g=1000, G=6, O=1, S=4096),  # LogGOPSim's defaults, O and S set
    "B": dict(L=5000, o=200, g=3000, G=1, O=2, S=16384),  # gap-bound, O above G
    "C": dict(L=1000, o=800, g=100, G=25, O=10, S=256),  # bandwidth-bound, small S
}
#: ranks of the O(ranks log ranks) schedules, and of those that grow as ranks²
SMALL_SCALES = (16, 64, 256, 1024, 4096)
QUADRATIC_SCALES = (16, 64, 256, 1024)
COMPUTE_NS = 2000  # the computation before each send of the all-to-all with compute

#: columns of cases.csv, results.csv.gz and noisy.csv
CASE_FIELDS = ["case", "generator", "collective", "pattern", "ranks", "message_bytes",
               "datasize", "compute_ns", "operations", "dependencies", "canonical_sha256",
               "file", "schedgen2_arguments"]
RESULT_FIELDS = ["case", "parameters", "L", "o", "g", "G", "O", "S", "makespan_ns",
                 "rank_end_ns"]
NOISY_FIELDS = ["case", "trace", "cosched", "parameters", "run", "clock_second",
                "makespan_ns", "rank_end_ns", "noise_per_rank_ns"]
#: LogGOPSim's per-rank end, finishing time and injected noise per rank
HOST = re.compile(r"^Host (\d+): (\d+)$", re.MULTILINE)
FINISH = re.compile(r"Maximum finishing time at host \d+: (\d+)")
NOISE = re.compile(r"noise per rank: ([\d,]*)")


def schedgen2_cases() -> list[dict]:
    """The Schedgen2 schedules: name, collective, pattern, ranks, message size, arguments."""
    cases = []

    def add(collective, pattern, ranks, message, datasize, compute=0, extra=()):
        name = f"{collective}_{pattern}{'_compute' if compute else ''}_{ranks}_{message}b"
        arguments = [collective, "--ptrn", pattern, "--comm_size", str(ranks),
                     "--datasize", str(datasize), *extra]
        if compute:
            arguments += ["--compute_time_dependency", str(compute)]
        cases.append(dict(case=name, generator="Schedgen2", collective=collective,
                          pattern=pattern, ranks=ranks, message_bytes=message,
                          datasize=datasize, compute_ns=compute,
                          schedgen2_arguments=" ".join(arguments)))

    for ranks in SMALL_SCALES:
        for message in (8, 4096, 32768):
            add("allreduce", "recdoub", ranks, message, message * ranks)
            add("bcast", "binomialtree", ranks, message, message)
            add("reduce", "binomialtree", ranks, message, message)
    for ranks in QUADRATIC_SCALES:
        for message in (8, 32768):
            add("allreduce", "ring", ranks, message, message * ranks)
            if ranks <= 64 or (ranks == 256 and message == 8):
                add("alltoall", "linear", ranks, message, message)
                add("alltoall", "linear", ranks, message, message, compute=COMPUTE_NS)
    # the schedule of the noisy set: recursive doubling with 200 us of work after each step
    add("allreduce", "recdoub", 64, 8, 8 * 64, compute=200_000)
    return cases


def canonical_text(goal: str) -> tuple[str, int, int]:
    """The canonical text of a GOAL schedule of sends, receives and computations.

    Labels are replaced by each operation's index in its rank (the order written), and
    each rank's dependencies are sorted and written once: per rank ``rank r``, then one
    line per operation (``i send SIZE PEER TAG``, ``i recv SIZE PEER TAG``, ``i calc
    SIZE``, with `` cpu C`` / `` nic N`` when given), then ``i requires j`` and
    ``i irequires j``. Two schedules that LogGOPSim runs alike have the same text.

    Returns
    -------
    (text, operations, dependencies)
    """
    operation = re.compile(r"^(\w+):\s*(send|recv|calc)\s+(\d+)b?(?:\s+(?:to|from)\s+(\d+))?"
                           r"(?:\s+tag\s+(\d+))?(?:\s+cpu\s+(\d+))?(?:\s+nic\s+(\d+))?$")
    dependency = re.compile(r"^(\w+)\s+(requires|irequires)\s+(\w+)$")
    out, n_operations, n_dependencies = [], 0, 0
    labels: dict[str, int] = {}
    edges: set[tuple[int, str, int]] = set()

    def close():
        nonlocal n_dependencies
        out.extend(f"{a} {kind} {b}" for a, kind, b in sorted(edges))
        n_dependencies += len(edges)

    for number, raw in enumerate(goal.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("num_ranks") or line == "}":
            continue
        if line.startswith("rank "):
            if labels:
                close()
            out.append(f"rank {line.split()[1]}")
            labels, edges = {}, set()
            continue
        match = operation.match(line)
        if match:
            label, kind, size, peer, tag, cpu, nic = match.groups()
            labels[label] = len(labels)
            text = f"{labels[label]} {kind} {size}"
            if kind != "calc":
                text += f" {peer} {tag}"
            text += (f" cpu {cpu}" if cpu else "") + (f" nic {nic}" if nic else "")
            out.append(text)
            n_operations += 1
            continue
        match = dependency.match(line)
        if match is None:
            raise ValueError(f"line {number}: not understood: {line[:60]!r}")
        edges.add((labels[match.group(1)], match.group(2), labels[match.group(3)]))
    close()
    return "\n".join(out) + "\n", n_operations, n_dependencies


def run(command: list, **kwargs) -> str:
    """The standard output of ``command``; RuntimeError with its output if it fails."""
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True,
                          **kwargs)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, command))} failed:\n{done.stdout[-2000:]}"
                           f"\n{done.stderr[-2000:]}")
    return done.stdout


def loggopsim_command(binary: Path, schedule: Path, values: dict) -> list:
    """LogGOPSim's command for ``schedule`` (binary) under the parameter set ``values``."""
    return [binary, "-f", schedule, *[x for k in "LogGOS" for x in (f"-{k}", values[k])]]


def noiseless_run(original: Path, allhosts: Path, schedule: Path, ranks: int,
                  values: dict) -> tuple[int, list[int]]:
    """Makespan and per-rank ends [ns], checked between the two builds."""
    text = run(loggopsim_command(allhosts, schedule, values))
    ends = [int(t) for _, t in HOST.findall(text)]
    if [int(i) for i, _ in HOST.findall(text)] != list(range(ranks)):
        raise RuntimeError(f"no per-rank ends for {ranks} ranks in:\n{text[-2000:]}")
    if ranks <= 16:
        reference = run(loggopsim_command(original, schedule, values))
        if HOST.findall(reference) != HOST.findall(text):
            raise RuntimeError("the two LogGOPSim builds print different ends")
    else:
        reference = run(loggopsim_command(original, schedule, values) + ["-b"])
        match = FINISH.search(reference)
        if match is None or int(match.group(1)) != max(ends):
            raise RuntimeError(f"the builds disagree on the makespan: {reference[-500:]}, "
                               f"{max(ends)}")
    return max(ends), ends


def read_rows(path: Path) -> list[dict]:
    """The rows of a CSV (gzip if the name ends in .gz); none if it does not exist."""
    if not path.exists():
        return []
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", newline="") as f:
        return list(csv.DictReader(f))


def write_rows(path: Path, fields: list[str], rows: list[dict]) -> None:
    """Write a CSV (gzip without a timestamp if the name ends in .gz) atomically."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    data = buffer.getvalue().encode()
    if path.suffix == ".gz":
        data = gzip.compress(data, compresslevel=9, mtime=0)
    partial = path.with_suffix(path.suffix + ".partial")
    partial.write_bytes(data)
    partial.replace(path)


def write_gzip(path: Path, text: str) -> None:
    """Write ``text`` gzip-compressed without a timestamp (the same bytes every time)."""
    path.write_bytes(gzip.compress(text.encode(), compresslevel=9, mtime=0))


def noise_traces(folder: Path) -> dict[str, Path]:
    """The noise traces, written by jitterlab (shipped gzip-compressed, run uncompressed)."""
    import jitterlab as jl

    devref = jl.io.loggopsim.read(TESTS_DATA / "devref.trc.gz")
    count = 3000  # 30 s
    traces = {"100Hz_100us": jl.Trace(jitter=[100e-6] * count, gap=[9.9e-3] * count,
                                      source="100 us every 10 ms"),
              "devref": devref}
    paths = {}
    for name, trace in traces.items():
        path = folder / f"{name}.trc"
        jl.io.loggopsim.write(trace, path, overwrite=True)
        write_gzip(OUT / f"{name}.trc.gz", path.read_text())
        paths[name] = path
    return paths


#: noisy cases: (case in cases.csv, trace, cosched, parameter set)
NOISY = [("allreduce_recdoub_compute_64_8b", "100Hz_100us", False, "A"),
         ("allreduce_recdoub_compute_64_8b", "devref", False, "A"),
         ("allreduce_recdoub_compute_64_8b", "100Hz_100us", True, "A")]


def main(argv=None) -> int:
    """Make the references that are missing (see the module docstring).

    Returns
    -------
    int
        0, or 1 when a LogGOPSim build or Schedgen2 is missing.
    """
    parser = argparse.ArgumentParser(prog="python -m jitterlab.recipes.make_goal_references",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--loggopsim", type=Path, default=EXT / "src_tree/src/LogGOPSim",
                        help="folder of the LogGOPSim and txt2bin binaries")
    parser.add_argument("--allhosts", type=Path, default=EXT / "allhosts",
                        help="folder of the LogGOPSim build that prints every rank's end")
    parser.add_argument("--schedgen2", type=Path, default=EXT / "src_tree/src/Schedgen2",
                        help="Schedgen2's folder (schedgen.py)")
    parser.add_argument("--runs", type=int, default=150, help="noisy runs per case")
    parser.add_argument("--only", default="", help="only cases whose name contains this")
    parser.add_argument("--no-noisy", action="store_true", help="skip the noisy set")
    args = parser.parse_args(argv)
    if args.runs < 0:
        parser.error(f"--runs must be at least 0, got {args.runs}")
    original, converter = args.loggopsim / "LogGOPSim", args.loggopsim / "txt2bin"
    allhosts = args.allhosts / "LogGOPSim"
    for needed in (original, converter, allhosts, args.schedgen2 / "schedgen.py"):
        if not needed.is_file():
            print(f"{needed} is missing; see tests/data/goal/PROVENANCE.md for the builds")
            return 1
    OUT.mkdir(parents=True, exist_ok=True)
    cases_path, results_path = OUT / "cases.csv", OUT / "results.csv.gz"
    cases = {row["case"]: row for row in read_rows(cases_path)}
    results = read_rows(results_path)
    done = {(r["case"], r["parameters"]) for r in results}
    wanted = [dict(case="binary_tree_32", generator="LogGOPSim source tree",
                   collective="bcast", pattern="binomialtree", ranks=32, message_bytes=1,
                   datasize=1, compute_ns=0, schedgen2_arguments="")] + schedgen2_cases()
    wanted = [c for c in wanted if args.only in c["case"]]
    with tempfile.TemporaryDirectory(prefix="jl-goal-") as tmp:
        folder = Path(tmp)
        for case in wanted:
            name = case["case"]
            if all((name, p) in done for p in PARAMETERS) and name in cases:
                continue
            goal = folder / "s.goal"
            began = time.perf_counter()
            if case["generator"] == "Schedgen2":
                run([sys.executable, args.schedgen2 / "schedgen.py",
                     *case["schedgen2_arguments"].split(), "--output", goal],
                    cwd=args.schedgen2)
            else:
                goal.write_text((args.loggopsim / "binary_tree_32.goal").read_text())
            text = goal.read_text()
            canonical, n_operations, n_dependencies = canonical_text(text)
            shipped = n_operations <= SHIP_MAX_OPERATIONS
            if shipped:
                write_gzip(OUT / f"{name}.goal.gz", text)
            case.update(operations=n_operations, dependencies=n_dependencies,
                        canonical_sha256=hashlib.sha256(canonical.encode()).hexdigest(),
                        file=f"{name}.goal.gz" if shipped else "")
            cases[name] = case
            schedule = folder / "s.bin"
            run([converter, "-i", goal, "-o", schedule])
            for label, values in PARAMETERS.items():
                if (name, label) in done:
                    continue
                makespan, ends = noiseless_run(original, allhosts, schedule,
                                               int(case["ranks"]), values)
                results.append(dict(case=name, parameters=label, **values,
                                    makespan_ns=makespan,
                                    rank_end_ns=" ".join(map(str, ends))))
                done.add((name, label))
            write_rows(cases_path, CASE_FIELDS, list(cases.values()))
            write_rows(results_path, RESULT_FIELDS, results)
            print(f"{name}: {n_operations} operations, "
                  f"{time.perf_counter() - began:.1f} s", flush=True)
        if not args.no_noisy:
            noisy_runs(args, original, folder)
    return 0


def noisy_runs(args, original: Path, folder: Path) -> None:
    """LogGOPSim with noise traces, ``args.runs`` runs per case, one clock second each."""
    noisy_path = OUT / "noisy.csv"
    rows = read_rows(noisy_path)
    traces = noise_traces(folder)
    goal, schedule = folder / "noisy.goal", folder / "noisy.bin"
    second = None
    for case, trace, cosched, label in NOISY:
        goal.write_bytes(gzip.decompress((OUT / f"{case}.goal.gz").read_bytes()))
        run([args.loggopsim / "txt2bin", "-i", goal, "-o", schedule])
        k = sum(1 for r in rows if (r["case"], r["trace"], r["cosched"]) ==
                (case, trace, str(cosched)))
        while k < args.runs:
            while int(time.time()) == second:  # a new clock second: a new seed
                time.sleep(1.02 - time.time() % 1.0)
            clock_second = int(time.time())
            command = loggopsim_command(args.allhosts / "LogGOPSim", schedule,
                                        PARAMETERS[label]) + ["--noise-trace", traces[trace]]
            if cosched:
                command.append("--noise-cosched")
            text = run(command)
            second = int(time.time())
            if second != clock_second:
                continue  # the seed's second is not known: run again
            ends = [int(t) for _, t in HOST.findall(text)]
            noise = NOISE.search(text)
            rows.append(dict(case=case, trace=trace, cosched=cosched, parameters=label,
                             run=k, clock_second=clock_second, makespan_ns=max(ends),
                             rank_end_ns=" ".join(map(str, ends)),
                             noise_per_rank_ns=noise.group(1).strip(",").replace(",", " ")))
            k += 1
        write_rows(noisy_path, NOISY_FIELDS, rows)
        print(f"noisy {case} {trace} cosched={cosched}: {args.runs} runs", flush=True)


if __name__ == "__main__":
    sys.exit(main())
