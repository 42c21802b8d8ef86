"""Accuracy of the noise-effect estimate against simulations: writes estimate_accuracy.csv.

Seed 003's study (Nataraj et al., SC07): a BSP program (compute, then a barrier) in
strong scaling, 32 to 2 048 ranks, several noise levels and compute grains; how far is
the estimated accumulated noise from the true delay? Here the runs are simulated
(``jl.simulate``), so the true delay is known exactly: the noisy makespan minus the
makespan of the same run on a trace without jitter. Each row is one run of
:func:`jitterlab.estimate.against_simulation`.

* ranks N: 32, 128, 512, 2 048; strong scaling: the work of a phase, N·w, is 32 ms or
  320 ms (w = 1 ms or 10 ms at 32 ranks, 15.6 µs or 156 µs at 2 048);
* noise: injected periodic detours at a random phase per rank (100 Hz × 100 µs,
  1 kHz × 25 µs, 10 Hz × 2.5 ms), and this machine's measured detour trace (CPU 1);
* barrier: "ideal" (every rank waits for the slowest: a hardware barrier network like
  BG/L's) for 10 000 phases, as the seed; a binary tree of messages (send and receive
  1 µs of CPU, 2 µs on the wire) for 1 000 phases (the event trace holds 5 intervals per
  rank and phase), estimated from the messages and from the opaque view (each barrier
  one collective interval, as a tracer of MPI_Barrier records it).

Run from the repository root: ``python -m jitterlab.recipes.estimate_accuracy`` (about 15
minutes on the 2-vCPU machine; until 2026-11-26 the script ``data/estimate_accuracy.py``).
Rows are appended as they are done, so an interrupted run keeps them and a second run
completes the missing ones. ``--output``, ``--noise``, ``--barrier``, ``--ranks``,
``--phase-work`` and ``--phases`` run a smaller grid elsewhere (a quick check); each run's
seed is its position in the grid, so the default grid gives the shipped seeds.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np

import jitterlab as jl

from . import DATA_DIR

#: the table this program writes
OUT = DATA_DIR / "estimate_accuracy.csv"
#: the grid: ranks N, work of a phase over all ranks, noise (period, detour) [s] or the
#: measured trace (None), barriers (barrier, phases)
RANKS = (32, 128, 512, 2048)
PHASE_WORK = (32e-3, 320e-3)  # N·w, the work of one phase over all ranks [s]
NOISE = {"100Hz_100us": (10e-3, 100e-6), "1kHz_25us": (1e-3, 25e-6),
         "10Hz_2.5ms": (100e-3, 2.5e-3), "measured_cpu1": None}
#: the barriers: kind → (message costs of a tree barrier [s], or None: ideal; phases); the
#: barrier itself is made when a run needs it (building it imports the simulator)
BARRIERS = {"ideal": (None, 10_000),
            "tree": ({"send": 1e-6, "recv": 1e-6, "latency": 2e-6}, 1_000)}
#: columns of the table
FIELDS = ["noise", "barrier_kind", "n", "phase_work", "work", "phases", "barrier",
          "intervals", "makespan", "noiseless_makespan", "true_cost", "estimate", "error",
          "opaque_estimate", "opaque_error", "seed", "seconds"]


def noise_trace(name: str) -> jl.Trace:
    """The noise of a key of :data:`NOISE`: a periodic detour, or CPU 1's shipped trace."""
    if NOISE[name] is None:
        return jl.datasets.load_detour(cpu=1)
    period, detour = NOISE[name]
    return jl.Trace(jitter=[detour], gap=[period - detour],
                    source=f"injected: {detour * 1e6:g} us every {period * 1e3:g} ms")


def done_keys(path: Path = OUT) -> set:
    """(noise, barrier kind, ranks, phase work [s]) of every row of the table ``path``."""
    if not path.exists():
        return set()
    with path.open() as f:
        return {(r["noise"], r["barrier_kind"], int(r["n"]), float(r["phase_work"]))
                for r in csv.DictReader(f)}


def grid(noises=tuple(NOISE), barriers=tuple(BARRIERS), phase_works=PHASE_WORK,
         ranks=RANKS) -> list[tuple[int, str, str, int, float]]:
    """The runs, in order: (seed, noise, barrier kind, ranks, phase work [s]); the seed is
    the run's position in the grid."""
    return [(seed, *case) for seed, case in enumerate(
        (name, kind, n, g) for name in noises for kind in barriers for g in phase_works
        for n in ranks)]


def parse_args(argv=None) -> argparse.Namespace:
    """The options (``--help`` lists them); the defaults are the shipped study."""
    parser = argparse.ArgumentParser(prog="python -m jitterlab.recipes.estimate_accuracy",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=OUT,
                        help="the table to append to (default data/estimate_accuracy.csv)")
    parser.add_argument("--noise", nargs="+", choices=list(NOISE), default=list(NOISE),
                        help="the noises (default: all)")
    parser.add_argument("--barrier", nargs="+", choices=list(BARRIERS),
                        default=list(BARRIERS), help="the barriers (default: both)")
    parser.add_argument("--ranks", nargs="+", type=int, default=list(RANKS),
                        help="the numbers of ranks (default 32 128 512 2048)")
    parser.add_argument("--phase-work", nargs="+", type=float, default=list(PHASE_WORK),
                        help="work of one phase over all ranks [s] (default 0.032 0.32)")
    parser.add_argument("--phases", type=int, default=None,
                        help="phases of every run (default 10 000 with the ideal barrier, "
                        "1 000 with the tree)")
    args = parser.parse_args(argv)
    for name in ("ranks", "phase_work"):
        bad = [v for v in getattr(args, name) if not v > 0]
        if bad:
            parser.error(f"--{name.replace('_', '-')} must be positive, got {bad}")
    if args.phases is not None and args.phases < 1:
        parser.error(f"--phases must be at least 1, got {args.phases}")
    return args


def main(argv=None) -> int:
    """Run the grid's runs that are not in the table yet, appending a row per run.

    Returns
    -------
    int
        0.
    """
    args = parse_args(argv)
    from jitterlab.io.chunks import append_csv_row  # jitterlab.io is heavy: not for --help

    with np.errstate(all="ignore"):
        done = done_keys(args.output)
        for seed, name, kind, n, phase_work in grid(args.noise, args.barrier, args.phase_work,
                                                    args.ranks):
            if (name, kind, n, phase_work) in done:
                continue
            message, phases = BARRIERS[kind]
            barrier = None if message is None else jl.TreeBarrier(message=jl.Message(**message))
            phases = phases if args.phases is None else args.phases
            began = time.perf_counter()
            result = jl.estimate.against_simulation(noise_trace(name), n, phase_work / n, phases,
                                                    barrier=barrier, rng=seed)
            row = {"noise": name, "barrier_kind": kind, "phase_work": phase_work, "seed": seed,
                   "seconds": round(time.perf_counter() - began, 2), **result}
            append_csv_row(args.output, row, FIELDS)
            print(f"{name:14s} {kind:5s} N={n:5d} w={phase_work / n * 1e6:8.1f} us "
                  f"error {result['error']:+.2e} opaque {result['opaque_error']:+.3%} "
                  f"({row['seconds']} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
