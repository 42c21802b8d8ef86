"""Record the noise of CPU 1 with its kernel causes, alone and beside a second "rank",
pinned and unpinned (issue #22, notebook 14; seed 003's pinning experiment as an analogue).

Nataraj et al. (seed 003, SC07) found the preemption of unpinned MPI ranks ("schedule") to be
a large source of noise and pinning the ranks to processors to take it away. The analogue here,
on a 2-vCPU machine: the measured loop (``jitterlab.measure.detour`` with ``kernel_events=True``:
busy loop pinned to CPU 1, its detours joined with the kernel events of CPU 1 recorded in a
private tracefs instance, ``trace_clock`` x86-tsc) runs in three arms:

* ``alone``: nothing else started;
* ``pinned``: a second "rank", ``dutyhog BUSY PERIOD`` (spins BUSY µs of every PERIOD µs and
  sleeps in between, like a rank that computes and waits for messages), pinned to CPU 0
  (``taskset -c 0``);
* ``unpinned``: the same process allowed on both CPUs (``taskset -c 0,1``): the scheduler may
  wake it on CPU 1, where it preempts the measured loop.

The arms run in turn, pair after pair (alone, pinned, unpinned, then the reverse order in the
next pair), so a drift of the machine's load spreads over all three. Every run is stored as the
chunk store of ``jitterlab.measure.detour`` (detours and the kernel events of each chunk) in
``OUTDIR/<arm>_<pair>``; ``OUTDIR/runs.csv`` lists the runs with the 1-minute load average
before and after each. :func:`jitterlab.compare.attribution.attribute_recording` reads a run back as
the attribution table.

Usage (as root, from the repository root, under the team's measurement lock)::

    flock /work/team/measure.lock .venv/bin/python -m jitterlab.recipes.record_causes_pinning \\
        data/causes_pinning --pairs 3 --seconds 3 --dutyhog /tmp/dutyhog

``--first-pair K`` adds pairs K, K+1, ... to an existing ``OUTDIR`` (a second session).
``--dutyhog`` is ``data/dutyhog.c`` built with ``gcc -O2 -o /tmp/dutyhog data/dutyhog.c``.
Until 2026-11-26 this program was the script ``data/record_causes_pinning.py`` (same
options).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import os
import subprocess
import time
from pathlib import Path

import jitterlab as jl

#: the arms, in the order of even pairs
ARMS = ("alone", "pinned", "unpinned")
#: CPUs the second rank may use in each arm (None: no second rank)
SECOND_RANK_CPUS = {"alone": None, "pinned": "0", "unpinned": "0,1"}


def arm_order(pair: int) -> tuple[str, ...]:
    """The arms of ``pair`` in the order they run: :data:`ARMS` in even pairs, reversed in
    odd ones."""
    return ARMS if pair % 2 == 0 else ARMS[::-1]


def record(outdir: Path, pairs: int, seconds: float, dutyhog: str, busy_us: int,
           period_us: int, threshold: float, first_pair: int = 0) -> None:
    """Record ``pairs`` pairs of the three arms into ``outdir`` and list them in its
    ``runs.csv``.

    Parameters
    ----------
    outdir : pathlib.Path
        The folder of the runs (new unless ``first_pair`` > 0).
    pairs : int
        Number of pairs; each runs every arm once.
    seconds : float
        Length of each run [s].
    dutyhog : str
        The built ``data/dutyhog.c``.
    busy_us, period_us : int
        The second rank spins ``busy_us`` of every ``period_us`` [µs].
    threshold : float
        Detour threshold [s].
    first_pair : int
        Number of the first pair; > 0 adds pairs to an existing recording.

    Raises
    ------
    SystemExit
        If ``first_pair`` > 0 and there is no recording to add to, or 0 and there is one.
    """
    outdir.mkdir(parents=True, exist_ok=first_pair > 0)
    listing = outdir / "runs.csv"
    if (first_pair > 0) != listing.exists():
        raise SystemExit(f"{listing}: --first-pair {first_pair} adds to an existing recording "
                         "(and only then)")
    rows = []
    for pair in range(first_pair, first_pair + pairs):
        for arm in arm_order(pair):
            load_before = os.getloadavg()[0]
            second = None
            if SECOND_RANK_CPUS[arm] is not None:
                second = subprocess.Popen(["taskset", "-c", SECOND_RANK_CPUS[arm], dutyhog,
                                           str(busy_us), str(period_us), str(seconds + 5)])
                time.sleep(0.2)  # let it start before the loop does
            started = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
            try:
                jl.measure.detour(seconds, cpu=1, threshold=threshold,
                                output=outdir / f"{arm}_{pair}", progress=False,
                                kernel_events=True)
            finally:
                if second is not None:
                    second.terminate()
                    second.wait()
            rows.append({"run": f"{arm}_{pair}", "arm": arm, "pair": pair,
                         "started_utc": started, "seconds": seconds,
                         "second_rank": (f"dutyhog {busy_us} {period_us} on CPUs "
                                         f"{SECOND_RANK_CPUS[arm]}" if second else ""),
                         "load_before": round(load_before, 2),
                         "load_after": round(os.getloadavg()[0], 2)})
            print(rows[-1], flush=True)
    with open(listing, "a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        if first_pair == 0:
            writer.writeheader()
        writer.writerows(rows)


def main(argv=None) -> None:
    """Parse the options and :func:`record` (``--help`` lists the options)."""
    parser = argparse.ArgumentParser(prog="python -m jitterlab.recipes.record_causes_pinning",
                                     description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("outdir", type=Path, help="folder of the runs and runs.csv")
    parser.add_argument("--pairs", type=int, default=3, help="pairs of runs (default 3)")
    parser.add_argument("--seconds", type=float, default=3.0,
                        help="length of each run [s] (default 3)")
    parser.add_argument("--dutyhog", required=True, help="the built data/dutyhog.c")
    parser.add_argument("--busy-us", type=int, default=2000,
                        help="the second rank spins this long [µs] (default 2000) ...")
    parser.add_argument("--period-us", type=int, default=2500,
                        help="... of every period [µs] (default 2500)")
    parser.add_argument("--threshold-ns", type=float, default=300.0,
                        help="detour threshold [ns] (default 300)")
    parser.add_argument("--first-pair", type=int, default=0,
                        help="number of the first pair; > 0 adds pairs to OUTDIR/runs.csv")
    args = parser.parse_args(argv)
    if args.pairs < 1 or not args.seconds > 0 or args.first_pair < 0:
        parser.error(f"--pairs must be at least 1, --seconds positive and --first-pair at "
                     f"least 0; got {args.pairs}, {args.seconds}, {args.first_pair}")
    if not 0 < args.busy_us <= args.period_us:
        parser.error(f"--busy-us must be positive and at most --period-us; got "
                     f"{args.busy_us} and {args.period_us}")
    record(args.outdir, args.pairs, args.seconds, args.dutyhog, args.busy_us,
           args.period_us, args.threshold_ns * 1e-9, args.first_pair)


if __name__ == "__main__":
    main()
