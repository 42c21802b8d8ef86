"""The manifest (``manifest.json``) and ``PROVENANCE.md`` of ``data/measured/``.

:func:`write_manifest` sorts the entries, writes the machine-readable manifest and the
record for people (:func:`provenance_markdown`) beside it, each file atomically, so an
interrupted recording leaves both consistent. Entries of kinds this program does not
record (the ROSS runs of issue #12) are kept with their own summary and section. The BSP
runs get a section of their own with the comparison of seed 003's estimate with the
measured cost of the injection (:func:`bsp_table`, :func:`bsp_markdown`).
"""

from __future__ import annotations

import datetime
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path

import numpy as np

from .measurement_files import plain
from .measurement_plan import BSP_SETUPS, KINDS, VARIANTS

#: the command of this program (``data/record_measurements.py`` until 2026-11-26)
PROGRAM = f"python -m {__package__}.record_measurements"
#: the line of PROVENANCE.md that says where the programs named in it live now
MOVED = ("The recording programs `data/NAME.py` live in `jitterlab/recipes/` since "
         "2026-11-26: `python -m jitterlab.recipes.NAME` (same options); the commands "
         "below are as recorded.")
MANIFEST = "manifest.json"
PROVENANCE = "PROVENANCE.md"
MANIFEST_FORMAT = "jitterlab measurements manifest"
MANIFEST_VERSION = 1


def utc_now() -> str:
    """The current time, ISO 8601 in UTC to the second."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def recording_program(command: str | None) -> str:
    """The program of a recorded command, as PROVENANCE.md names it.

    ``"python data/record_measurements.py --only bsp"`` (recorded before the move) gives
    ``"data/record_measurements.py"``, ``"python -m jitterlab.recipes.record_measurements
    --quick"`` gives ``"python -m jitterlab.recipes.record_measurements"``; no command
    gives :data:`PROGRAM`.
    """
    words = shlex.split(command or "")
    if len(words) < 2:
        return PROGRAM
    return " ".join(words[:3]) if words[1] == "-m" else words[1]


def _mean_se(values) -> tuple[float, float, float, float, int]:
    """Mean, its standard error (sample SD / sqrt(n); NaN for one value), min, max, n."""
    values = np.asarray(values, dtype=float)
    n = values.size
    se = float(np.std(values, ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
    return float(values.mean()), se, float(values.min()), float(values.max()), n


def bsp_table(entries: list[dict]) -> dict:
    """Per collective (variant), the comparison of seed 003's estimate with the measured
    cost of the injection, from the manifest entries of the BSP runs: per run its time in
    phases T (measured_duration) and T − the combined estimate; per pair (same repeat)
    the measured cost T_injected − T_clean, the injector's estimate (``run_accumulated``
    of source ``injected``), the difference of the two combined estimates, and the
    measured cost minus that difference. Each as (mean, SE, min, max, n) [s]."""
    table = {}
    for variant in BSP_SETUPS:
        runs = [e for e in entries if e["kind"] == "bsp"
                and e["variant"].removesuffix("_injected") == variant]
        if not runs:
            continue
        pairs = {}
        for entry in runs:
            pairs.setdefault(entry["repeat"], {})[bool(entry["injector"])] = entry["summary"]
        pairs = [pair for _, pair in sorted(pairs.items()) if len(pair) == 2]

        def combined(summary):
            return summary["run_accumulated"]["combined"]

        rows = {
            "run_time": [e["summary"]["measured_duration"] for e in runs],
            "run_time_minus_estimate": [e["summary"]["measured_duration"]
                                        - combined(e["summary"]) for e in runs],
            "measured_cost": [p[True]["measured_duration"] - p[False]["measured_duration"]
                              for p in pairs],
            "injector_estimate": [p[True]["run_accumulated"]["injected"] for p in pairs],
            "estimate_difference": [combined(p[True]) - combined(p[False]) for p in pairs],
        }
        rows["cost_minus_estimate_difference"] = [
            a - b for a, b in zip(rows["measured_cost"], rows["estimate_difference"],
                                  strict=True)]
        table[variant] = {key: _mean_se(values) for key, values in rows.items() if values}
        table[variant]["pairs"] = len(pairs)
    return table


_BSP_ROWS = (
    ("run_time", "run time T (time in phases), every run"),
    ("run_time_minus_estimate", "T − estimated accumulated noise (combined), every run"),
    ("measured_cost", "measured cost of the injection, T<sub>injected</sub> − "
     "T<sub>clean</sub> (paired)"),
    ("injector_estimate", "estimate for the injector, `run_accumulated` of source "
     "`injected`"),
    ("estimate_difference", "difference of the combined estimates of the two runs"),
    ("cost_minus_estimate_difference", "measured cost − difference of the combined "
     "estimates"),
)


def bsp_markdown(entries: list[dict], recordings: list[dict] = ()) -> list[str]:
    """The section of PROVENANCE.md on the BSP runs: when, the load, the table.

    Parameters
    ----------
    entries : list of dict
        The manifest's files (those of kind ``"bsp"`` are used).
    recordings : list of dict
        The manifest's recordings (``started_at``, ``command``): the last one started
        before the first BSP run names the program that recorded them.

    Returns
    -------
    list of str
        The lines (none without BSP runs).
    """
    runs = [e for e in entries if e["kind"] == "bsp" and e.get("repeat") is not None]
    if not runs:
        return []
    loads = [v for e in runs for v in (e["load_average_before"][0],
                                       e["load_average_after"][0])]
    times = sorted(e["collected_at"] for e in runs if e.get("collected_at"))
    started = [r for r in recordings if (r.get("started_at") or "") <= times[0]]
    program = recording_program(max(started, key=lambda r: r["started_at"])["command"]
                                if started else None)
    table = bsp_table(runs)
    variants = [v for v in BSP_SETUPS if v in table]
    lines = [
        "", "## BSP runs with event traces and interruptions (`bsp_*.nc`, issue #10)", "",
        f"{len(runs)} runs, recorded by `{program} --only bsp` (step 6 "
        f"of its docstring; the exact command of each file is above) from {times[0]} to "
        f"{times[-1]} UTC, interleaved: repeat r runs the polled and the blocking pair, "
        "clean first in odd repeats, injected first in even ones; the injector seed is the "
        f"repeat. 1-minute load average during the runs: {min(loads):g} to {max(loads):g} "
        "(each file's load before → after is in the table of files). Each run's "
        "`interruption_records` hold every interruption (rank, phase, start, duration, "
        "kind); `jitterlab.bench.read_bsp_interruptions` reads them.", "",
        "Per collective, mean ± standard error over the runs or pairs (min to max) [ms]:",
        "", "| | " + " | ".join(f"{v} (pairs: {table[v]['pairs']})" for v in variants)
        + " |", "|---|" + "---|" * len(variants)]
    for key, label in _BSP_ROWS:
        cells = []
        for variant in variants:
            if key not in table[variant]:
                cells.append("–")
                continue
            mean, se, low, high, n = table[variant][key]
            error = f"{1e3 * se:.1f}" if np.isfinite(se) else "–"
            cells.append(f"{1e3 * mean:.1f} ± {error} ({1e3 * low:.1f} to "
                         f"{1e3 * high:.1f}, n = {n})")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def entry_key(entry: dict) -> tuple:
    """What makes a measurement the same as another: kind, variant, CPU, ranks, work,
    injector and repeat (an entry with the same key replaces the older one)."""
    return tuple(entry.get(k) for k in ("kind", "variant", "cpu", "ranks", "work",
                                        "injector", "repeat"))


def read_manifest(output: Path) -> dict | None:
    """The manifest in the folder ``output``, or None if there is none yet.

    Raises
    ------
    SystemExit
        If ``output/manifest.json`` is not a jitterlab measurements manifest.
    """
    path = output / MANIFEST
    if not path.is_file():
        return None
    manifest = json.loads(path.read_text(encoding="utf-8"))
    if manifest.get("format") != MANIFEST_FORMAT:
        sys.exit(f"record_measurements: {path} is not a jitterlab measurements manifest")
    return manifest


def _order(entry: dict) -> tuple:
    """Sort key: this program's kinds first, then kinds recorded by other means."""
    kind, variant = entry["kind"], entry.get("variant")
    return (KINDS.index(kind) if kind in KINDS else len(KINDS), kind, entry.get("cpu") or 0,
            VARIANTS.index(variant) if variant in VARIANTS else len(VARIANTS),
            entry.get("ranks") or 0, entry.get("work") or 0.0,
            entry.get("repeat") or 0, bool(entry.get("injector")))


def write_manifest(output: Path, manifest: dict) -> None:
    """Sort the entries of ``manifest``, stamp it and write ``manifest.json`` and
    ``PROVENANCE.md`` into the folder ``output`` (each atomically)."""
    manifest["files"].sort(key=_order)
    manifest["updated_at"] = utc_now()
    manifest["quick"] = any(e.get("quick") for e in manifest["files"])
    text = json.dumps(plain(manifest), indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    write_text_atomically(output / MANIFEST, text)
    write_text_atomically(output / PROVENANCE, provenance_markdown(manifest))


def write_text_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file beside it (mode 644): the file
    appears whole or not at all."""
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        stream.write(text)
    os.chmod(temp, 0o644)
    os.replace(temp, path)


def _seconds(value) -> str:
    """A duration [s] for the key numbers: '1.234 ms', '–' for None."""
    if value is None:
        return "–"
    value = float(value)
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if abs(value) >= scale:
            return f"{value / scale:.4g} {unit}"
    return f"{value / 1e-9:.4g} ns"


def provenance_markdown(manifest: dict) -> str:
    """The text of ``PROVENANCE.md``: machine, recordings, units, files with their
    checksums and load averages, commands, key numbers, the BSP section and the sections
    of measurements recorded by other means (kept from their manifest entries)."""
    machine = manifest.get("machine", {})
    quick = [e["file"] for e in manifest["files"] if e.get("quick")]
    lines = [
        "# Provenance: measurements of one machine (`data/measured/`)",
        "",
        f"Written by `{recording_program(manifest.get('recorded_with'))}` (do not edit by "
        "hand; re-record instead).",
        MOVED,
        "The same information, machine-readable, is in `manifest.json`; load the data with",
        "`jitterlab.datasets` (`list_measurements`, `load_detour`, `load_fwq`, `load_pb`,",
        "`load_latency`).",
        "",
    ]
    if quick:
        lines += [
            f"> **Quick recording.** {len(quick)} of {len(manifest['files'])} files were "
            "recorded with `--quick` (a few seconds each, possibly on a busy machine): good "
            "for developing notebooks and tests, not for conclusions about the machine. "
            f"Re-record on a quiet machine with `{PROGRAM}`.",
            ""]
    lines += [
        "## Machine",
        "",
        f"* Host: `{machine.get('host')}`; CPU: {machine.get('cpu_model')}, "
        f"{machine.get('n_cpus')} CPUs; kernel {machine.get('os')} "
        f"`{machine.get('kernel')}`.",
        f"* jitterlab {manifest.get('jitterlab_version')}, commit "
        f"`{manifest.get('git_commit')}`"
        + (" (with uncommitted changes to `jitterlab/`)" if manifest.get("git_dirty") else "")
        + f"; Python {manifest.get('python')}; MPI: {manifest.get('mpi') or 'not used'}.",
        f"* Last update {manifest.get('updated_at')}. Recordings (each file's own command "
        "and date are below):",
        *[f"  * {r.get('started_at')}: `{r.get('command')}`"
          for r in manifest.get("recordings", [])],
        "",
        "## Units",
        "",
        "* Detour traces: `jitter` and `gap` in timestamp-counter `cycles`; the file's "
        "`frequency_hz` [Hz] converts them to seconds (`Trace.to_seconds()`).",
        "* FWQ: `iteration_time` in seconds `s` (stored as integer cycles × `scale_factor`, "
        "decoded to seconds on reading).",
        "* PB: `compute`, `barrier`, `iteration` and `bin_edges` in seconds `s`; the "
        "`*_hist` variables count iterations per bin (every iteration of the run, while "
        "the raw samples are the first `max_samples` of each rank).",
        "* Latency: `ping_pong` (round trips, dims `pair`, `exchange`) and `barrier` (dims "
        "`rank`, `sample`) in seconds `s`; the one-way latency τ is half a round trip.",
        "* Thresholds, t_min and loop times in the attributes: seconds.",
        "",
        "## Files",
        "",
        "| file | what | recorded (UTC) | quick | load before → after | bytes | SHA-256 |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for entry in manifest["files"]:
        load = (f"{entry.get('load_average_before', ['?'])[0]} → "
                f"{entry.get('load_average_after', ['?'])[0]}"
                if entry.get("load_average_before") else "–")
        lines.append(f"| `{entry['file']}` | {entry['description']} | "
                     f"{entry.get('collected_at')} | {'yes' if entry.get('quick') else 'no'} "
                     f"| {load} | {entry.get('bytes')} | `{entry.get('sha256')}` |")
    lines += ["", "## Commands", "",
              "Each ran in `data/measured/`, one after the other, with `jitterlab` and "
              "`mpiexec` from the environment named above:", ""]
    for entry in manifest["files"]:
        lines.append(f"* `{entry['file']}`: `{entry['command']}`")
        if entry.get("postprocess"):
            lines.append(f"  — then re-encoded: {entry['postprocess']['reencoded']}.")
    lines += ["", "## Key numbers", ""]
    for entry in manifest["files"]:
        s = entry.get("summary", {})
        if entry["kind"] == "detour":
            text = (f"{s.get('events')} events in {_seconds(s.get('measured_duration'))}, "
                    f"{s.get('event_rate', 0):.1f} events/s, noise fraction "
                    f"{100 * (s.get('noise_fraction') or 0):.3f} %, threshold "
                    f"{_seconds(s.get('threshold_used'))}, t_min {_seconds(s.get('t_min'))}, "
                    f"median loop time {_seconds(s.get('median_loop_time'))}, default "
                    f"threshold {_seconds(s.get('default_threshold'))}")
        elif entry["kind"] == "fwq":
            text = (f"{s.get('samples')} samples: min {_seconds(s.get('min'))}, median "
                    f"{_seconds(s.get('median'))}, mean {_seconds(s.get('mean'))}, p99 "
                    f"{_seconds(s.get('p99'))}, max {_seconds(s.get('max'))}")
        elif entry["kind"] == "latency":
            text = (f"{s.get('ranks')} ranks, {s.get('pairs')} "
                    f"pair{'s' * (s.get('pairs') != 1)} x "
                    f"{s.get('round_trips')} round trips, {s.get('barriers')} barriers: "
                    f"τ (median one-way) {_seconds(s.get('tau'))} ± "
                    f"{_seconds(s.get('tau_se'))}, empty barrier (median) "
                    f"{_seconds(s.get('barrier_time'))} ± "
                    f"{_seconds(s.get('barrier_time_se'))}"
                    + ("; oversubscribed" if s.get("oversubscribed") else ""))
        elif entry["kind"] == "bsp":
            noise = ", ".join(f"{1e3 * a:.1f} + {1e3 * b:.1f}" for a, b in zip(
                s.get("noise_injected_per_rank") or [], s.get("noise_other_per_rank") or [],
                strict=True))
            accumulated = s.get("run_accumulated") or {}
            waited = ", ".join(f"{1e3 * v:.1f}" for v in s.get("collective_noise_per_rank")
                               or [])
            text = (f"{s.get('phases')} phases of {_seconds(s.get('work'))} on "
                    f"{s.get('ranks')} ranks in {_seconds(s.get('measured_duration'))}; "
                    f"compute noise per rank (injected + other) {noise} ms, collective "
                    f"noise {waited} ms; "
                    f"{sum((s.get('interruption_records') or {}).values())} interruptions "
                    f"recorded, {sum(s.get('interruptions_lost') or [])} lost; estimated "
                    f"accumulated (seed 003): injected "
                    f"{_seconds(accumulated.get('injected'))}, combined "
                    f"{_seconds(accumulated.get('combined'))}")
        elif entry["kind"] not in KINDS:  # recorded by other means: its own words
            text = entry.get("summary_text") or entry["description"]
        else:
            means = ", ".join(_seconds(v) for v in s.get("mean_iteration") or [])
            text = (f"{s.get('ranks')} ranks, {s.get('iterations')} iterations (raw samples "
                    f"kept per rank: {s.get('samples_per_rank')}), mean iteration time per "
                    f"rank: {means}")
        lines.append(f"* `{entry['file']}`: {text}.")
    lines += bsp_markdown(manifest["files"], manifest.get("recordings", []))
    for entry in manifest["files"]:  # measurements recorded by other means keep their story
        if entry.get("provenance_section"):
            lines += ["", entry["provenance_section"].rstrip("\n")]
    return "\n".join(lines) + "\n"

