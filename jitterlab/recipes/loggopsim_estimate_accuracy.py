"""Accuracy of the noise-effect estimate against LogGOPSim: writes loggopsim_estimate_accuracy.csv.

Seed 003 (Nataraj et al., SC07) estimates what noise cost a run from the run's own
timeline. jitterlab's estimate is exact on its own simulations (self-consistency); this
program asks an independent simulator. LogGOPSim (spcl/LogGOPSim, Hoefler et al., SC10),
built outside the project, runs each schedule once without noise and ``--runs`` times with
a noise trace, writing each noisy run's per-rank timeline with ``-V``. The timeline is read
with :func:`jitterlab.io.read_loggopsim_timeline` (the noise LogGOPSim injected into each
interval, see its docstring), its accumulated noise estimated with
:func:`jitterlab.estimate.accumulated_noise`, and compared with the truth LogGOPSim
prints: the noisy minus the noiseless "Maximum finishing time".

Schedules (GOAL text written here; every receive is posted at the start, so no message
is unexpected; every computation is followed by a send, so its noise is known):

* ``dissemination``: ``iterations`` times: compute ``work``, then an all-reduce by
  dissemination (step j: send to rank r + 2^j, receive from r − 2^j, mod N; the send of
  step j + 1 waits for the receive of step j);
* ``ring``: ``iterations`` times: compute ``work``, send to the right and to the left
  neighbour (ring), receive from both (the next computation waits for both receives):
  a halo exchange with no global synchronisation.

LogGP: L = 5 µs, o = 1 µs, g = G = O = 0, 1-byte messages. Noise traces: ``devref``
(``tests/data/devref.trc.gz``: 250 Hz tick of ~2.5 µs, a 40 µs daemon every 100 ms,
~50/s Pareto interrupts) and ``100Hz_100us`` (a 100 µs detour every 10 ms, 30 s).
LogGOPSim draws each rank's offset into the trace from a generator seeded with the
clock's second, so each noisy run starts in a new second.

Run from the repository root:
``python -m jitterlab.recipes.loggopsim_estimate_accuracy [--loggopsim DIR] [--runs R]``
(DIR holds the ``LogGOPSim`` and ``txt2bin`` binaries). Rows are appended as they are
done; a second run completes the missing cases. Until 2026-11-26 this program was the
script ``data/loggopsim_estimate_accuracy.py`` (same options).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jitterlab as jl

from . import DATA_DIR

#: the table this program writes, and the noise trace ``devref``
OUT = DATA_DIR / "loggopsim_estimate_accuracy.csv"
DEVREF = DATA_DIR.parent / "tests" / "data" / "devref.trc.gz"
#: LogGP's L and o [ns]
LATENCY_NS, OVERHEAD_NS = 5000, 1000
#: (pattern, noise, ranks, work [ns], iterations), in the order they run
CASES = [(pattern, noise, ranks, work, 10)  # the small cases first
         for ranks, work in ((64, 1_000_000), (256, 1_000_000), (1024, 1_000_000))
         for noise in ("devref", "100Hz_100us")
         for pattern in ("dissemination", "ring")]
#: columns of the table
FIELDS = ["pattern", "noise", "ranks", "work_ns", "iterations", "run", "clock_second",
          "quiet_ns", "noisy_ns", "true_cost_ns", "estimate_ns", "error",
          "trace_noise_ns", "absorbed_noise_ns", "loggopsim_noise_ns", "intervals",
          "loggopsim_seconds", "read_seconds"]
FINISH = re.compile(r"Maximum finishing time at host \d+: (\d+)")
PER_RANK = re.compile(r"noise per rank: ([\d,]+)")


def goal_schedule(pattern: str, ranks: int, iterations: int, work_ns: int) -> str:
    """The GOAL text of a schedule (see the module docstring), in program order.

    Parameters
    ----------
    pattern : {"dissemination", "ring"}
        The communication after each computation.
    ranks, iterations : int
        Number of ranks, and of computations per rank.
    work_ns : int
        Length of each computation [ns].

    Raises
    ------
    ValueError
        For an unknown pattern.
    """
    steps = max(1, (ranks - 1).bit_length())
    lines = [f"num_ranks {ranks}", ""]
    for r in range(ranks):
        block: list[str] = []

        def op(text: str, requires, block=block) -> str:
            label = f"l{len(block) + 1}"  # unique: the block grows with every op
            block.append(f"{label}: {text}")
            block.extend(f"{label} requires {q}" for q in requires)
            return label

        after: list[str] = []
        for it in range(iterations):
            compute = op(f"calc {work_ns}", after)
            if pattern == "dissemination":
                last, received = compute, None
                for j in range(steps):
                    tag = it * steps + j
                    last = op(f"send 1b to {(r + (1 << j)) % ranks} tag {tag}",
                              [last] + ([received] if received else []))
                    received = op(f"recv 1b from {(r - (1 << j)) % ranks} tag {tag}", [])
                after = [last, received]
            elif pattern == "ring":
                left, right = (r - 1) % ranks, (r + 1) % ranks
                to_right = op(f"send 1b to {right} tag {2 * it}", [compute])
                to_left = op(f"send 1b to {left} tag {2 * it + 1}", [to_right])
                from_left = op(f"recv 1b from {left} tag {2 * it}", [])
                from_right = op(f"recv 1b from {right} tag {2 * it + 1}", [])
                after = [to_left, from_left, from_right]
            else:
                raise ValueError(f"unknown pattern {pattern!r}")
        lines += [f"rank {r} {{", *block, "}", ""]
    return "\n".join(lines)


def noise_file(name: str, folder: Path) -> Path:
    """The noise trace as LogGOPSim reads it (uncompressed)."""
    path = folder / f"{name}.trc"
    if name == "devref":
        path.write_bytes(gzip.decompress(DEVREF.read_bytes()))
    else:
        count = 3000  # 30 s
        jl.Trace(jitter=[100e-6] * count, gap=[9.9e-3] * count,
                 source="100 us every 10 ms").to_loggopsim(path)
    return path


def run_loggopsim(binary: Path, schedule: Path, noise: Path | None, viz: Path | None):
    """LogGOPSim's total [ns], its printed noise per rank (or None) and its wall time."""
    command = [binary, "-f", schedule, "-L", LATENCY_NS, "-o", OVERHEAD_NS, "-g", 0, "-G", 0,
               "-b"]
    if noise is not None:
        command += ["--noise-trace", noise]
    if viz is not None:
        command += ["-V", viz]
    began = time.perf_counter()
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True,
                          check=True)
    seconds = time.perf_counter() - began
    return (*parse_output(done.stdout), seconds)


def parse_output(stdout: str) -> tuple[int, int | None]:
    """LogGOPSim's "Maximum finishing time" [ns] and the sum of its printed noise per rank
    [ns] (None when it prints none) from its standard output.

    Raises
    ------
    RuntimeError
        If the output has no finishing time (LogGOPSim did not finish, or ran without
        ``-b``).
    """
    match = FINISH.search(stdout)
    if match is None:
        raise RuntimeError(f"no finishing time in LogGOPSim's output:\n{stdout}")
    per_rank = PER_RANK.search(stdout)
    injected = (sum(int(v) for v in per_rank.group(1).strip(",").split(","))
                if per_rank else None)
    return int(match.group(1)), injected


def check_quiet_gaps(viz: Path, goal: Path) -> None:
    """Without noise no computation may be followed by a gap (its noise would be wrong)."""
    events = jl.io.read_loggopsim_timeline(viz, goal, latency=LATENCY_NS * 1e-9)
    if events.noise("combined").max() > 0:
        raise RuntimeError(f"{viz.name}: the noiseless run shows a gap after a computation "
                           f"or a noise line; the schedule breaks the reader's rule")


def evaluate_run(viz: Path, goal: Path, quiet_ns: int, noisy_ns: int,
                 injected: int | None) -> dict:
    """The estimate of one noisy run against its truth, from its ``-V`` timeline.

    Parameters
    ----------
    viz, goal : pathlib.Path
        The run's ``-V`` file and the GOAL text of its schedule.
    quiet_ns, noisy_ns : int
        LogGOPSim's finishing times without and with noise [ns].
    injected : int or None
        The noise LogGOPSim printed it injected, summed over the ranks [ns].

    Returns
    -------
    dict
        The columns ``true_cost_ns`` to ``intervals`` and ``read_seconds`` of a row.

    Raises
    ------
    RuntimeError
        If the timeline does not end at ``noisy_ns`` or does not hold the injected noise.
    """
    began = time.perf_counter()
    events = jl.io.read_loggopsim_timeline(viz, goal, latency=LATENCY_NS * 1e-9)
    ds = jl.estimate.accumulated_noise(events, sources="combined")
    read_seconds = time.perf_counter() - began
    if round(events.attrs["makespan"] * 1e9) != noisy_ns:
        raise RuntimeError(f"the timeline ends at {events.attrs['makespan']} s, "
                           f"LogGOPSim printed {noisy_ns} ns")
    total_noise = round(float(events.noise("combined").sum()) * 1e9)
    absorbed = round(events.attrs["absorbed_noise"] * 1e9)
    if injected is not None and injected != total_noise + absorbed:
        raise RuntimeError(f"the timeline holds {total_noise} + {absorbed} ns "
                           f"of noise, LogGOPSim injected {injected} ns")
    estimate = float(ds["run_accumulated"].sel(source="combined")) * 1e9
    truth = noisy_ns - quiet_ns
    return {"true_cost_ns": truth, "estimate_ns": round(estimate, 1),
            "error": estimate / truth - 1 if truth > 0 else float("nan"),
            "trace_noise_ns": total_noise, "absorbed_noise_ns": absorbed,
            "loggopsim_noise_ns": "" if injected is None else injected,
            "intervals": len(events), "read_seconds": round(read_seconds, 2),
            "estimate": estimate}


def append_row(row: dict, path: Path = OUT) -> None:
    """Append one row to the CSV table ``path`` (with the header when the file is new)."""
    new = not path.exists()
    with path.open("a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        if new:
            writer.writeheader()
        writer.writerow(row)


def done_runs(path: Path = OUT) -> set:
    """(pattern, noise, ranks, work [ns], run) of every row of the table ``path``."""
    if not path.exists():
        return set()
    with path.open() as f:
        return {(r["pattern"], r["noise"], int(r["ranks"]), int(r["work_ns"]), int(r["run"]))
                for r in csv.DictReader(f)}


def main(argv=None) -> int:
    """Run every case of :data:`CASES` ``--runs`` times (those not in the table yet).

    Returns
    -------
    int
        0, or 1 when LogGOPSim is not built in ``--loggopsim``.
    """
    parser = argparse.ArgumentParser(
        prog="python -m jitterlab.recipes.loggopsim_estimate_accuracy",
        description=__doc__.splitlines()[0])
    parser.add_argument("--loggopsim", type=Path,
                        default=Path("/work/ext/loggopsim/src_tree/src/LogGOPSim"),
                        help="folder of the LogGOPSim and txt2bin binaries")
    parser.add_argument("--runs", type=int, default=5, help="noisy runs per case")
    parser.add_argument("--output", type=Path, default=OUT,
                        help="the table to append to (default data/loggopsim_estimate_"
                        "accuracy.csv)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error(f"--runs must be at least 1, got {args.runs}")
    simulator, converter = args.loggopsim / "LogGOPSim", args.loggopsim / "txt2bin"
    if not simulator.is_file() or not converter.is_file():
        print(f"LogGOPSim is not built in {args.loggopsim}; see data/"
              f"loggopsim_estimate_accuracy.md for how it was built")
        return 1
    done = done_runs(args.output)
    with tempfile.TemporaryDirectory(prefix="jl-loggopsim-") as tmp:
        folder = Path(tmp)
        noises = {name: noise_file(name, folder) for name in ("devref", "100Hz_100us")}
        for pattern, noise, ranks, work_ns, iterations in CASES:
            todo = [k for k in range(args.runs)
                    if (pattern, noise, ranks, work_ns, k) not in done]
            if not todo:
                continue
            goal, schedule = folder / "s.goal", folder / "s.bin"
            goal.write_text(goal_schedule(pattern, ranks, iterations, work_ns))
            subprocess.run([str(converter), "-i", str(goal), "-o", str(schedule)],
                           capture_output=True, check=True)
            quiet_viz = folder / "quiet.viz"
            quiet, _, _ = run_loggopsim(simulator, schedule, None, quiet_viz)
            check_quiet_gaps(quiet_viz, goal)
            quiet_viz.unlink()
            second = None
            for k in todo:
                while int(time.time()) == second:  # a new clock second: a new seed
                    time.sleep(1.05 - time.time() % 1.0)
                viz = folder / "noisy.viz"
                clock_second = int(time.time())
                noisy, injected, sim_seconds = run_loggopsim(simulator, schedule,
                                                             noises[noise], viz)
                second = int(time.time())
                result = evaluate_run(viz, goal, quiet, noisy, injected)
                estimate, truth = result.pop("estimate"), result["true_cost_ns"]
                row = {"pattern": pattern, "noise": noise, "ranks": ranks, "work_ns": work_ns,
                       "iterations": iterations, "run": k, "clock_second": clock_second,
                       "quiet_ns": quiet, "noisy_ns": noisy, **result,
                       "loggopsim_seconds": round(sim_seconds, 2)}
                append_row({field: row[field] for field in FIELDS}, args.output)
                print(f"{pattern:13s} {noise:11s} N={ranks:5d} w={work_ns / 1e3:6.0f} us "
                      f"run {k}: truth {truth:8d} ns estimate {estimate:10.1f} ns "
                      f"error {row['error']:+.3%}", flush=True)
                viz.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
