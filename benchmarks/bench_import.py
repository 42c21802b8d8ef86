"""How long a fresh process takes to import jitterlab, and to reach its first result.

Each case runs in fresh interpreters (``python -X importtime -c ...``), five times; the
median wall time is printed beside that of an empty interpreter (``python -c pass``), the
baseline measured in the same run, and the largest self-times of ``-X importtime`` say where
the time goes. ``import jitterlab`` itself imports the public names on first use
(``docs/architecture.md``), so the later cases show what a notebook or a CLI call pays when it
uses them. Goal (issue #20): ``import jitterlab`` <= 1 s on a quiet machine.

Usage: ``python benchmarks/bench_import.py [--repeats 5]``
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

CASES = {
    "python -c pass (baseline)": "pass",
    "import jitterlab": "import jitterlab",
    "jl.Trace (numpy, pandas)": "import jitterlab as jl; jl.Trace",
    "jl.max_of_n (scipy, xarray, numba)": "import jitterlab as jl; jl.max_of_n",
    "jl.simulate": "import jitterlab as jl; jl.simulate",
    "jitterlab --help": "import jitterlab.cli as c; c.main(['--help'])",
}


def run(code: str) -> tuple[float, list[tuple[int, str]]]:
    """Wall time [s] of one fresh interpreter running ``code``, and its import self-times."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code],
                          capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    rows = []
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            fields = line.split("|")
            try:
                rows.append((int(fields[0].split(":")[1]), fields[2].strip()))
            except ValueError:
                continue  # the header line
    return wall, rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    medians = {}
    for label, code in CASES.items():
        walls, last = [], []
        for _ in range(args.repeats):
            wall, rows = run(code)
            walls.append(wall)
            last = rows
        medians[label] = statistics.median(walls)
        base = medians.get("python -c pass (baseline)", medians[label])
        top = sorted(last, reverse=True)[:4]
        heavy = ", ".join(f"{name} {us / 1e3:.0f} ms" for us, name in top)
        print(f"{label:38s} median {medians[label]:6.3f} s "
              f"(x{medians[label] / base:5.1f} of the empty interpreter)  largest: {heavy}")
    goal = medians["import jitterlab"]
    print(f"\nimport jitterlab: {goal:.3f} s (goal <= 1 s) -> "
          f"{'met' if goal <= 1.0 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
