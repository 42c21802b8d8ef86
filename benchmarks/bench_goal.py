"""Benchmark: jl.simulate_schedule against LogGOPSim on the same schedules, same run.

Workloads (noiseless, LogGOPSim's default parameters L=2500, o=1500, g=1000, G=6 ns,
S=65535 B):

* ``allreduce_recursive_doubling(65536, 8 B × 65536)``: 65 536 ranks, 4.26 M operations;
* ``allreduce_ring(512, 8 B × 512)``: 512 ranks, 1.05 M operations;
* ``alltoall_linear(256, 8 B, compute=2 µs)`` (only with ``--only alltoall_compute_256``):
  196 K operations whose messages queue for busy CPUs; in LogGOPSim every CPU grant sends
  the waiting events around the queue again (41.6 M events), jitterlab parks them per host
  (:mod:`jitterlab.sim.schedules.parking`; same count of events).

The schedules come from :mod:`jitterlab.sim.schedules.generators` (equal to Schedgen2's); their
GOAL text and LogGOPSim's binary form (``txt2bin``) are made once in ``--workdir`` and not
timed. Timed: LogGOPSim's run (``LogGOPSim -f s.bin -b``, wall time of the process, which
includes reading its binary schedule; the best of ``--loggopsim-repeat``) and
``jl.simulate_schedule`` on the Schedule in memory (wall time, after a warm-up call that
loads the compiled kernel; includes the set-up of the kernel's arrays and the xarray
result). Both makespans are printed and must agree.

jitterlab keeps a schedule's laid-out arrays with the schedule
(:func:`jitterlab.sim.schedules.arguments.schedule_layout`), so two figures are timed:
the *first call* on a schedule (the layout dropped before each call with ``forget_layout``:
what a new schedule costs, the figure compared with LogGOPSim) and a *repeated call* (the
layout kept: other costs or noise on the same schedule). Each is the best of ``--repeat``
calls; all calls are printed, in order (the process's first large call pays fresh memory).

Printed: wall times, the ratio to LogGOPSim, operations and events per second; the split
of the same first calls into the set-up (``prepare_arguments``), the event loop
(``kernel.simulate_arrays``) and the rest (checks, result), timed by wrappers around those
two steps inside the timed calls (so the split adds up to the whole call); and memory: the
Schedule's arrays per operation, the kept layout per operation (its arrays' sizes), and the
peak resident memory a first call adds (VmHWM, reset before the call, in a fresh child
process) per operation. ``--busy`` runs one ``python3 -c "while True: pass"`` at normal
priority beside the measurements (killed at the end).

Timing-sensitive: run it under the team's measurement lock, at normal priority::

    flock /work/team/measure.lock python benchmarks/bench_goal.py \\
        --loggopsim /work/ext/loggopsim/src_tree/src/LogGOPSim

(or ``/work/team/quiet.sh python benchmarks/bench_goal.py ...``, which takes the lock itself;
``--loggopsim`` is the folder holding the ``LogGOPSim`` and ``txt2bin`` binaries, built
outside the project as in ``tests/data/goal/PROVENANCE.md``.)
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import jitterlab as jl
from jitterlab.sim.schedules import arguments, generators, kernel
from jitterlab.sim.schedules import simulate as simulate_module

FINISH = re.compile(r"Maximum finishing time at host \d+: (\d+)")
WORKLOADS = {
    "recdoub_65536": lambda: generators.allreduce_recursive_doubling(65536, 8 * 65536),
    "ring_512": lambda: generators.allreduce_ring(512, 8 * 512),
    "alltoall_compute_256": lambda: generators.alltoall_linear(256, 8, compute=2e-6),
}
#: run by default (the others with --only)
DEFAULT = ("recdoub_65536", "ring_512")


def vm_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def child_memory(name: str) -> None:
    """Print (JSON) the peak resident memory a first call adds, in this process."""
    schedule = WORKLOADS[name]()
    params = jl.LogGOPS.from_loggopsim()
    jl.simulate_schedule(generators.allreduce_ring(8, 64), params)
    Path("/proc/self/clear_refs").write_text("5")  # the peak so far (the generator's) is reset
    before = vm_kib("VmRSS")
    jl.simulate_schedule(schedule, params)
    def root(array):
        while isinstance(array.base, np.ndarray):
            array = array.base
        return array

    own = {id(root(getattr(schedule, name))) for name in arguments.COLUMNS}
    buffers = {id(root(a)): root(a) for a in arguments.schedule_layout(schedule)
               if isinstance(a, np.ndarray)}
    kept = sum(a.nbytes for key, a in buffers.items() if key not in own)
    print(json.dumps({"added_kib": vm_kib("VmHWM") - before, "kept_bytes": kept,
                      "schedule_bytes": schedule.nbytes, "operations": schedule.n_operations}))


class StepTimer:
    """Wall time [s] of the set-up and of the event loop inside ``jl.simulate_schedule``
    (wrappers around ``prepare_arguments`` and ``kernel.simulate_arrays``), summed since
    the last ``reset``."""

    def __init__(self):
        self.setup = self.loop = 0.0
        self.prepare = simulate_module.prepare_arguments
        self.simulate = kernel.simulate_arrays

    def timed(self, function, field):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                setattr(self, field, getattr(self, field) + time.perf_counter() - start)
        return wrapper

    def __enter__(self):
        simulate_module.prepare_arguments = self.timed(self.prepare, "setup")
        kernel.simulate_arrays = self.timed(self.simulate, "loop")
        return self

    def __exit__(self, *exc):
        simulate_module.prepare_arguments, kernel.simulate_arrays = self.prepare, self.simulate

    def reset(self):
        self.setup = self.loop = 0.0


def timed_calls(schedule, params, repeat: int, first: bool):
    """``repeat`` calls: [(whole, set-up, loop)] [s] and the last result; ``first``: the
    kept layout dropped before each call."""
    calls, result = [], None
    with StepTimer() as steps:
        for _ in range(repeat):
            if first:
                arguments.forget_layout(schedule)
            steps.reset()
            start = time.perf_counter()
            result = jl.simulate_schedule(schedule, params)
            calls.append((time.perf_counter() - start, steps.setup, steps.loop))
    return calls, result


def prepare(name: str, workdir: Path, txt2bin: Path):
    schedule = WORKLOADS[name]()
    goal, binary = workdir / f"{name}.goal", workdir / f"{name}.bin"
    if not binary.exists():
        schedule.to_goal(goal, overwrite=True)
        subprocess.run([str(txt2bin), "-i", str(goal), "-o", str(binary)], check=True,
                       stdout=subprocess.DEVNULL)
    return schedule, binary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--loggopsim", type=Path, required=True,
                        help="folder with the LogGOPSim and txt2bin binaries")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/jitterlab-bench-goal"))
    parser.add_argument("--only", choices=sorted(WORKLOADS), action="append")
    parser.add_argument("--repeat", type=int, default=3,
                        help="jitterlab calls of each kind (best kept)")
    parser.add_argument("--loggopsim-repeat", type=int, default=2,
                        help="LogGOPSim runs (best kept)")
    parser.add_argument("--busy", action="store_true",
                        help="run one busy loop at normal priority beside the measurements")
    parser.add_argument("--child-memory", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_memory:
        child_memory(args.child_memory)
        return
    args.workdir.mkdir(parents=True, exist_ok=True)
    params = jl.LogGOPS.from_loggopsim()
    jl.simulate_schedule(generators.allreduce_ring(8, 64), params)  # load the kernel
    prepared = [(name, *prepare(name, args.workdir, args.loggopsim / "txt2bin"))
                for name in args.only or DEFAULT]
    busy = subprocess.Popen(["python3", "-c", "while True: pass"]) if args.busy else None
    try:
        measure(args, params, prepared, busy is not None)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()


def measure(args, params, prepared, busy: bool) -> None:
    print(f"load before: {Path('/proc/loadavg').read_text().strip()}"
          + (" (one busy loop beside)" if busy else ""))
    for name, schedule, binary in prepared:
        loggopsim_s = np.inf
        for _ in range(args.loggopsim_repeat):
            start = time.perf_counter()
            out = subprocess.run([str(args.loggopsim / "LogGOPSim"), "-f", str(binary), "-b"]
                                 + params.loggopsim_arguments(), check=True,
                                 capture_output=True, text=True).stdout
            loggopsim_s = min(loggopsim_s, time.perf_counter() - start)
        loggopsim_ns = int(FINISH.search(out).group(1))
        first, result = timed_calls(schedule, params, args.repeat, first=True)
        again, _ = timed_calls(schedule, params, args.repeat, first=False)
        ours_ns = int(np.rint(float(result["makespan"][0]) * 1e9))
        memory = json.loads(subprocess.run(
            [sys.executable, __file__, "--loggopsim", str(args.loggopsim),
             "--child-memory", name], check=True, capture_output=True, text=True).stdout)
        n, events = schedule.n_operations, result.attrs["events_per_run"]
        best, setup, loop = min(first)
        kept = min(again)[0]
        print(f"{name}: {schedule.num_ranks} ranks, {n} operations, {events} events")
        print(f"  makespan: LogGOPSim {loggopsim_ns} ns, jitterlab {ours_ns} ns "
              f"({'equal' if ours_ns == loggopsim_ns else 'DIFFERENT'})")
        print(f"  wall time: LogGOPSim {loggopsim_s:.3f} s (best of {args.loggopsim_repeat}), "
              f"jitterlab first call {best:.3f} s (best of {args.repeat}); "
              f"ratio {loggopsim_s / best:.2f}x")
        print(f"  jitterlab: {n / best / 1e6:.2f} M operations/s, "
              f"{events / best / 1e6:.2f} M events/s")
        print(f"  split of that call: set-up {setup:.3f} s ({setup / n * 1e9:.0f} ns/operation), "
              f"loop {loop:.3f} s ({loop / events * 1e9:.0f} ns/event), "
              f"rest {best - setup - loop:.3f} s")
        print("  first calls in order (whole/set-up/loop) [s]: " + ", ".join(
            f"{w:.3f}/{s:.3f}/{lo:.3f}" for w, s, lo in first))
        print(f"  repeated call (layout kept): {kept:.3f} s (best of {args.repeat}), ratio "
              f"{loggopsim_s / kept:.2f}x, {n / kept / 1e6:.2f} M operations/s; in order: "
              + ", ".join(f"{w:.3f}" for w, _, _ in again))
        print(f"  memory: schedule {memory['schedule_bytes'] / n:.1f} B/operation; kept "
              f"layout {memory['kept_bytes'] / n:.1f} B/operation (its arrays' sizes, pages "
              f"never written included); a first call's peak adds "
              f"{memory['added_kib'] * 1024 / n:.1f} B/operation (resident)")
    print(f"load after: {Path('/proc/loadavg').read_text().strip()}")


if __name__ == "__main__":
    main()
