"""What is the noise of this machine? Detours attributed to their kernel causes (issue #22).

Run as root with tracefs, timing-sensitive parts on a quiet machine, one part per batch of
less than 3 minutes (``quiet.sh`` takes the team's measurement lock and pauses its niced
work)::

    /work/team/quiet.sh python benchmarks/bench_attribution.py --parts machine \
        --seconds 16 --save data/kernel_events/cpu1_16s.detour
    /work/team/quiet.sh python benchmarks/bench_attribution.py --parts overhead --pairs 6
    python benchmarks/bench_attribution.py --parts speed

Prints up to four parts (``--parts``, default the first three):

1. A recording of this machine (default 60 s on CPU 1, threshold 300 ns) with its kernel
   events (``jl.bench.detour(..., kernel_events=True)``), joined by
   ``jl.attribution.attribute_recording``: the share of detour time attributed to named guest
   causes and the share *not visible to the guest*, with the evidence: the CPU's steal time,
   the detours with no guest event (number, rate, time, sizes) and how many of the detours
   above 100 µs have a guest event.
2. Injected noise on the measured CPU (``data/dutyhog.c`` under SCHED_FIFO: 1 ms every
   10 ms, and an hrtimer-driven 50 µs every 500 µs): the share of the injected time
   attributed to ``thread:dutyhog`` with its standard error (criterion: >= 95 %), and the
   share of injected detours that show the ``hrtimer:hrtimer_wakeup`` callback.
3. The overhead of recording kernel events on the loop: interleaved pairs (ABBA order) of
   recordings with and without, the noise fraction of each, the mean paired difference with
   its standard error.
4. The speed of ``attribute_recording`` on a shipped recording, in the same process against
   the old code read from git: the ftrace reader now (column by column) against the
   line-by-line reader at commit ``PARSER_BEFORE`` (``read_kernel_events`` with each), the
   join now against the join at commit ``BEFORE``, and the whole. ``--busy`` runs the part
   again beside one busy process (a spinning Python process, not pinned).

With ``--save DIR`` the recording of part 1 is kept there (chunk store: detours and kernel
events) and the figures are written to ``DIR.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPOSITORY = Path(__file__).resolve().parent.parent
DUTYHOG = REPOSITORY / "data" / "dutyhog.c"
#: the injected-noise configurations: (label, busy [µs], period [µs])
INJECTIONS = (("1 ms every 10 ms", 1000, 10_000), ("hrtimer-driven 50 us every 500 us", 50, 500))
#: the commit whose attribute_detours the speed part compares with (before the sweep by
#: detour: a pandas to_dict row loop and a segment-detour overlap join)
BEFORE = "0a07a19"
#: the commit whose read_ftrace (a regex match, a dict and list appends per line) the speed
#: part compares the column-by-column reader with
PARSER_BEFORE = "e5420c0"
#: a detour this long or longer is "large" (the issue's quick check: all of them invisible)
LARGE = 100e-6


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def record(seconds: float, cpu: int, threshold: float, store: Path, kernel_events: bool):
    import jitterlab as jl

    return jl.bench.detour(seconds, cpu=cpu, threshold=threshold, output=store,
                           overwrite=True, progress=False, kernel_events=kernel_events)


def machine_part(seconds: float, cpu: int, threshold: float, store: Path) -> dict:
    from jitterlab.compare.attribution import attribute_recording
    from jitterlab.compare.causes import noise_by_cause

    trace = record(seconds, cpu, threshold, store, kernel_events=True)
    table = attribute_recording(store)
    summary = noise_by_cause(table).reset_index()
    attrs = table.attrs
    detours = table.drop_duplicates("detour")
    total = float(detours["length"].sum())
    invisible = float(table.loc[table["kind"] == "invisible", "time"].sum())
    named = total - invisible
    guest = table[table["kind"] != "invisible"].groupby("detour").size()
    has_guest = detours["detour"].isin(guest.index).to_numpy()
    lengths = detours["length"].to_numpy()
    large = lengths >= LARGE
    measured = attrs["measured_duration"]
    steal = attrs["steal_time"]
    figures = {
        "seconds": measured, "cpu": cpu, "threshold": threshold,
        "detours": int(lengths.size), "detour_rate": lengths.size / measured,
        "noise_fraction": float(trace.stats()["noise_fraction"]),
        "detour_time": total, "named_share": named / total,
        "not_visible_share": invisible / total,
        "by_kind": {kind: float(t / total) for kind, t
                    in table.groupby("kind")["time"].sum().items()},
        "top_causes": [{"cause": row.cause, "share": float(row.share),
                        "detours": int(row.detours)} for row in summary.head(10).itertuples()],
        "steal_time": steal,
        "steal_fraction": None if steal is None else steal / attrs["duration"],
        "detours_without_guest_event": attrs["detours_without_guest_event"],
        "share_of_detours_without_guest_event": float(np.mean(~has_guest)),
        "rate_without_guest_event": attrs["rate_without_guest_event"],
        "time_without_guest_event_share": attrs["time_without_guest_event"] / total,
        "largest_without_guest_event": attrs["largest_without_guest_event"],
        "median_without_guest_event": (float(np.median(lengths[~has_guest]))
                                       if (~has_guest).any() else None),
        "p99_without_guest_event": (float(np.quantile(lengths[~has_guest], 0.99))
                                    if (~has_guest).any() else None),
        "uncovered_in_guest_detours_share": attrs["uncovered_in_guest_detours"] / total,
        "large_detours": int(large.sum()),
        "large_detours_with_guest_event": int((large & has_guest).sum()),
        "lost_events": attrs["lost_events"], "clock": attrs["clock"],
    }
    threads = float(table.loc[table["kind"] == "thread", "time"].sum())
    figures["named_share_without_threads"] = (named - threads) / (total - threads)
    figures["not_visible_share_without_threads"] = invisible / (total - threads)
    print(f"\n1. This machine: {measured:.1f} s on CPU {cpu}, threshold {threshold * 1e9:.0f} ns,"
          f" trace clock {attrs['clock']}, {attrs['lost_events']} kernel events lost")
    print(f"   {figures['detours']} detours ({figures['detour_rate']:.0f}/s), noise fraction "
          f"{figures['noise_fraction']:.3%}")
    print(f"   detour time attributed to named guest causes: {figures['named_share']:.1%}; "
          f"not visible to the guest: {figures['not_visible_share']:.1%}")
    for kind, share in sorted(figures["by_kind"].items(), key=lambda item: -item[1]):
        print(f"     {kind:10s} {share:7.2%}")
    for row in figures["top_causes"]:
        print(f"     {row['share']:7.2%} in {row['detours']:6d} detours  {row['cause']}")
    print("   evidence for the part not visible to the guest:")
    print("     steal time over the recording: "
          + ("not reported" if steal is None
             else f"{steal:.3g} s ({figures['steal_fraction']:.3%} of the time; /proc/stat "
                  "counts in 10 ms ticks)"))
    print(f"     detours with no guest event: {figures['detours_without_guest_event']} "
          f"({figures['share_of_detours_without_guest_event']:.1%} of the detours, "
          f"{figures['rate_without_guest_event']:.0f}/s), "
          f"{figures['time_without_guest_event_share']:.1%} of the detour time; median "
          f"{_us(figures['median_without_guest_event'])}, 99th percentile "
          f"{_us(figures['p99_without_guest_event'])}, largest "
          f"{_us(figures['largest_without_guest_event'])}")
    print(f"     uncovered time inside detours with guest events (entry/exit paths and "
          f"host): {figures['uncovered_in_guest_detours_share']:.1%} of the detour time")
    print(f"     detours >= {LARGE * 1e6:.0f} us: {figures['large_detours']}, of which "
          f"{figures['large_detours_with_guest_event']} have a guest event")
    print(f"   without preemption by other threads (on a shared machine, mostly other users' "
          f"work): named {figures['named_share_without_threads']:.1%}, not visible "
          f"{figures['not_visible_share_without_threads']:.1%} of the remaining detour time")
    return figures


def _us(value) -> str:
    return "-" if value is None else f"{value * 1e6:.3g} us"


def injection_part(cpu: int, threshold: float, workdir: Path, seconds: float) -> list[dict]:
    import jitterlab as jl
    from jitterlab.compare.attribution import attribute_recording, injected_noise_recovery

    binary = workdir / "dutyhog"
    subprocess.run(["gcc", "-O2", "-o", str(binary), str(DUTYHOG)], check=True)
    results = []
    print(f"\n2. Injected noise on CPU {cpu} (dutyhog under SCHED_FIFO, {seconds:.0f} s each)")
    for label, busy, period in INJECTIONS:
        store, log = workdir / f"inject_{busy}.detour", workdir / f"spins_{busy}.txt"
        hog = subprocess.Popen(["chrt", "-f", "1", "taskset", "-c", str(cpu), str(binary),
                                str(busy), str(period), "600", str(log)])
        time.sleep(0.2)
        try:
            record(seconds, cpu, threshold, store, kernel_events=True)
        finally:
            hog.terminate()  # it ends after the current spin and writes its log
            hog.wait(timeout=120)
        table = jl.bench.detour_table(store)
        origin, tsc_hz = table.attrs["tsc_origin"], table.attrs["tsc_hz"]
        spins = np.loadtxt(log, dtype=np.int64, ndmin=2)
        result = injected_noise_recovery(
            attribute_recording(store), (spins[:, 0] - origin) / tsc_hz,
            (spins[:, 1] - origin) / tsc_hz, "thread:dutyhog",
            spans=(np.asarray(table.attrs["spans"]) - origin) / tsc_hz,
            companion="hrtimer:hrtimer_wakeup")
        lower = result["ratio"] - 2.326 * result["standard_error"]
        interval = (result["ratio"] - 1.960 * result["standard_error"],
                    result["ratio"] + 1.960 * result["standard_error"])
        result.update(label=label, busy_us=busy, period_us=period, lower_99=lower,
                      interval_95=list(interval), meets_95=bool(lower >= 0.95),
                      other_causes=dict(list(result["other_causes"].items())[:5]))
        print(f"   {label}: {result['injections']} spins, {result['injected'] * 1e3:.1f} ms "
              f"injected in the measured time; attributed to thread:dutyhog "
              f"{result['ratio']:.2%} +- {result['standard_error']:.2%} (95 % interval "
              f"[{interval[0]:.2%}, {interval[1]:.2%}]; one-sided 99 % lower "
              f"bound {lower:.2%}: {'meets' if lower >= 0.95 else 'misses'} >= 95 %); "
              f"hrtimer:hrtimer_wakeup in {result['companion_share']:.1%} of the "
              f"{result['detours']} injected detours; elsewhere "
              f"{result['elsewhere'] * 1e3:.2f} ms")
        results.append(result)
    return results


def overhead_part(cpu: int, threshold: float, workdir: Path, pairs: int,
                  seconds: float) -> dict:
    print(f"\n3. Overhead of recording kernel events: {pairs} interleaved pairs of {seconds:.0f} s"
          " (ABBA order), noise fraction without / with")
    runs = {False: {"all": [], "short": []}, True: {"all": [], "short": []}}
    for pair in range(pairs):
        order = (False, True) if pair % 2 == 0 else (True, False)
        for events in order:
            trace = record(seconds, cpu, threshold, workdir / f"pair_{pair}_{events}.detour",
                           kernel_events=events)
            jitter = trace.jitter_seconds
            runs[events]["all"].append(float(trace.stats()["noise_fraction"]))
            runs[events]["short"].append(float(jitter[jitter < LARGE].sum() / trace.duration))
            shutil.rmtree(workdir / f"pair_{pair}_{events}.detour")
        print(f"   pair {pair + 1}: all detours {runs[False]['all'][-1]:.4%} / "
              f"{runs[True]['all'][-1]:.4%}; detours < {LARGE * 1e6:.0f} us "
              f"{runs[False]['short'][-1]:.4%} / {runs[True]['short'][-1]:.4%}")
    result = {"pairs": pairs, "seconds": seconds}
    for part, label in (("all", "all detours"),
                        ("short", f"detours < {LARGE * 1e6:.0f} us (interrupt level, where "
                                  "the tracepoints' cost lands; preemptions excluded)")):
        without, with_events = np.array(runs[False][part]), np.array(runs[True][part])
        difference = with_events - without
        mean = float(difference.mean())
        error = float(difference.std(ddof=1) / math.sqrt(pairs)) if pairs > 1 else math.nan
        print(f"   noise fraction, {label}: without {without.mean():.4%}, with "
              f"{with_events.mean():.4%}; difference {mean:+.4%} +- {error:.4%} "
              "(paired, standard error)")
        result[part] = {"without": without.tolist(), "with": with_events.tolist(),
                        "difference": mean, "standard_error": error}
    return result


def _module_at(commit: str, path: str, package: str):
    """The module at ``path`` as it was at ``commit`` (read with git), in ``package``."""
    import importlib.util

    source = subprocess.run(["git", "-C", str(REPOSITORY), "show", f"{commit}:{path}"],
                            capture_output=True, text=True, check=True).stdout
    name = f"{package}.{Path(path).stem}_at_{commit}"
    spec = importlib.util.spec_from_loader(name, loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = package
    sys.modules[name] = module
    exec(compile(source, f"{path}@{commit}", "exec"), module.__dict__)
    return module


def _timed(repeats: int, function):
    """(result, best wall time of ``repeats`` calls [s])."""
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - began)
    return result, min(times)


def speed_part(store: Path, repeats: int) -> dict:
    """Time of attribute_recording's parts on one recording, now and with the old reader
    and join, in this process (best of ``repeats``, wall clock, alternating)."""
    import pandas as pd

    import jitterlab.io.detour as detour_io
    from jitterlab.compare.attribution import attribute_detours

    old_reader = _module_at(PARSER_BEFORE, "jitterlab/io/ftrace.py", "jitterlab.io")
    new_reader = detour_io.read_ftrace
    times: dict[str, list[float]] = {"read_old": [], "read_now": []}
    for _ in range(repeats):  # alternate, so that a change of load hits both
        detour_io.read_ftrace = old_reader.read_ftrace
        try:
            old_events, spent = _timed(1, lambda: detour_io.read_kernel_events(store))
        finally:
            detour_io.read_ftrace = new_reader
        times["read_old"].append(spent)
        events, spent = _timed(1, lambda: detour_io.read_kernel_events(store))
        times["read_now"].append(spent)
    pd.testing.assert_frame_equal(old_events, events)  # same result
    read_old, read_now = min(times["read_old"]), min(times["read_now"])
    detours, read_detours = _timed(repeats, lambda: detour_io.detour_table(store))
    events = events[events["cpu"] == detours.attrs["cpu"]].reset_index(drop=True)
    arguments = (detours["tsc_start"].to_numpy(), detours["tsc_length"].to_numpy(), events)
    options = {"tsc_hz": detours.attrs["tsc_hz"], "measured_pid": detours.attrs["measured_tid"],
               "origin": detours.attrs["tsc_origin"], "end": detours.attrs["tsc_end"]}
    before = _module_at(BEFORE, "jitterlab/attribution.py", "jitterlab")
    _, join_before = _timed(repeats, lambda: before.attribute_detours(*arguments, **options))
    _, join_now = _timed(repeats, lambda: attribute_detours(*arguments, **options))
    result = {"store": str(store), "detours": len(detours), "events": len(events),
              "repeats": repeats, "read_kernel_events_old_reader": read_old,
              "read_kernel_events": read_now, "read_ratio": read_old / read_now,
              "detour_table": read_detours, "join_before": join_before, "join_now": join_now,
              "join_ratio": join_before / join_now,
              "total_ratio": ((read_old + read_detours + join_before)
                              / (read_now + read_detours + join_now)),
              "load": loadavg()}
    print(f"\n4. Speed of attribute_recording on {store.name} ({len(detours)} detours, "
          f"{len(events)} events; best of {repeats}, wall clock, this process; load "
          f"{result['load']})")
    print(f"   read_kernel_events: with the reader at {PARSER_BEFORE} {read_old:.3f} s, now "
          f"{read_now:.3f} s: {result['read_ratio']:.2f} times faster (same frame)")
    print(f"   detour_table {read_detours:.3f} s")
    print(f"   join (attribute_detours): at {BEFORE} {join_before:.3f} s, now {join_now:.3f} s:"
          f" {result['join_ratio']:.2f} times faster")
    print(f"   the whole of attribute_recording: {result['total_ratio']:.2f} times faster")
    return result


def beside_busy(function):
    """``function()`` while one busy process spins (started before, ended after)."""
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        return function()
    finally:
        busy.kill()
        busy.wait()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)))
    parser.add_argument("--threshold-ns", type=float, default=300.0)
    parser.add_argument("--inject-seconds", type=float, default=5.0)
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--pair-seconds", type=float, default=10.0)
    parser.add_argument("--parts", default="machine,injected,overhead",
                        help="comma-separated parts to run (machine, injected, overhead, "
                             "speed); "
                             "on a shared machine run each under /work/team/quiet.sh in "
                             "batches under 3 minutes")
    parser.add_argument("--speed-store", type=Path,
                        default=REPOSITORY / "data" / "kernel_events" / "cpu1_16s.detour",
                        help="the recording the speed part attributes")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--busy", action="store_true",
                        help="run the speed part a second time beside one busy process")
    parser.add_argument("--save", type=Path, default=None,
                        help="keep the recording of part 1 in this directory, figures in .json")
    parser.add_argument("--figures", type=Path, default=None,
                        help="write the printed figures of every part run to this JSON file")
    args = parser.parse_args(argv)
    threshold = args.threshold_ns * 1e-9
    parts = {part.strip() for part in args.parts.split(",") if part.strip()}
    unknown = parts - {"machine", "injected", "overhead", "speed"}
    if unknown:
        parser.error(f"unknown part(s) {sorted(unknown)}: use machine, injected, overhead, "
                     "speed")
    before = loadavg()
    print(f"load average before: {before}")
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with tempfile.TemporaryDirectory(prefix="bench_attribution_") as temporary:
        workdir = Path(temporary)
        store = args.save if args.save is not None else workdir / "machine.detour"
        figures = {"started": started, "command": " ".join(sys.argv),
                   "load_before": before}
        if "machine" in parts:
            figures["machine"] = machine_part(args.seconds, args.cpu, threshold, store)
        if "injected" in parts:
            figures["injected"] = injection_part(args.cpu, threshold, workdir,
                                                 args.inject_seconds)
        if "overhead" in parts:
            figures["overhead"] = overhead_part(args.cpu, threshold, workdir, args.pairs,
                                                args.pair_seconds)
        if "speed" in parts:
            figures["speed"] = speed_part(args.speed_store, args.repeats)
            if args.busy:
                print("\n   ... and beside one busy process:")
                figures["speed_beside_busy"] = beside_busy(
                    lambda: speed_part(args.speed_store, args.repeats))
    figures["load_after"] = loadavg()
    print(f"\nload average after: {figures['load_after']}")
    if args.save is not None and "machine" in parts:
        path = args.save.with_name(args.save.name + ".json")
        path.write_text(json.dumps(figures, indent=1, default=float) + "\n")
        print(f"recording kept in {args.save}, figures in {path}")
    if args.figures is not None:
        args.figures.write_text(json.dumps(figures, indent=1, default=float) + "\n")
        print(f"figures in {args.figures}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
