"""Counting hardware events of a command with ``perf stat`` (``jitterlab measure counters``).

:func:`perf_counters_problem` says why this machine cannot count (no ``perf``, no hardware
PMU, a paranoid setting), or None; :func:`measure_perf_stat` runs a command under
``perf stat -x,`` and reads the counts with :func:`jitterlab.io.counters.read_perf_stat`.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pandas as pd

from ..io.counters import PERF_UNAVAILABLE, read_perf_stat

__all__ = ["measure_perf_stat", "perf_counters_problem", "PERF_EVENTS", "EVENT_SOURCES"]

#: the events ``jitterlab measure counters`` asks perf for by default: perf's generic
#: hardware and cache events (which of them a CPU offers varies)
PERF_EVENTS = ("cycles", "instructions", "L1-dcache-loads", "L1-dcache-load-misses",
               "L1-icache-load-misses", "LLC-loads", "LLC-load-misses", "dTLB-load-misses",
               "iTLB-load-misses")


#: where Linux lists the performance-monitoring units perf can use
EVENT_SOURCES = Path("/sys/bus/event_source/devices")


# --------------------------------------------------------------------------------------
# measuring with perf
# --------------------------------------------------------------------------------------
def perf_counters_problem(perf: str = "perf", event_sources: str | Path = EVENT_SOURCES,
                          ) -> str | None:
    """Why this machine cannot count hardware events with perf, or None if it can.

    Three checks, in order: the ``perf`` program is on the PATH; Linux lists a core
    performance-monitoring unit (``cpu``, ``cpu_core``/``cpu_atom`` on hybrid x86, an
    ``armv*`` PMU on Arm) under ``/sys/bus/event_source/devices``; and ``perf stat -e
    cycles -- true`` counts cycles (it prints ``<not supported>`` where the kernel or a
    hypervisor hides the PMU, and fails when ``perf_event_paranoid`` forbids counting).

    Parameters
    ----------
    perf : str
        The perf program.
    event_sources : str or Path
        The folder listing the PMUs (for tests).

    Returns
    -------
    str or None
        A sentence saying what is missing, or None.
    """
    if shutil.which(perf) is None:
        return (f"{perf!r} is not installed (or not on the PATH): install perf (Debian/"
                "Ubuntu: linux-perf or linux-tools) to count hardware events")
    sources = Path(event_sources)
    pmus = sorted(p.name for p in sources.iterdir()) if sources.is_dir() else []
    core = [name for name in pmus
            if name in ("cpu", "cpu_core", "cpu_atom") or name.startswith("armv")]
    if not core:
        listed = ", ".join(pmus) if pmus else "nothing"
        return (f"this machine exposes no hardware performance-monitoring unit: there is no "
                f"{sources / 'cpu'} (it lists {listed}); virtual machines usually hide the "
                "PMU, so only software events (task-clock, page-faults, ...) can be counted")
    try:
        probe = subprocess.run([perf, "stat", "-x,", "-e", "cycles", "--", "true"],
                               capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{perf} stat could not run: {exc}"
    lines = [line for line in probe.stderr.splitlines() if ",cycles," in line]
    if probe.returncode != 0 or not lines:
        paranoid = _read_text("/proc/sys/kernel/perf_event_paranoid")
        detail = probe.stderr.strip().splitlines()[:3]
        return (f"{perf} stat cannot count cycles here (exit status {probe.returncode}, "
                f"kernel.perf_event_paranoid = {paranoid}): {' '.join(detail)}")
    value = lines[0].split(",")[0]
    if value in PERF_UNAVAILABLE:
        return (f"{perf} stat reports cycles as {value}: the kernel offers no hardware "
                "counters to this machine (typical of a virtual machine)")
    return None


#: runs the command under perf and writes its exit status to the file given as $0:
#: perf stat's own exit status is not the command's every time (on this machine, loaded,
#: it was 0 for a command that exited with 3 in 1 of 200 runs)
_STATUS_WRAPPER = ("/bin/sh", "-c", '"$@"; status=$?; echo "$status" > "$0"; exit "$status"')


def measure_perf_stat(command: list[str], events=PERF_EVENTS,
                      names: dict[str, str] | None = None, perf: str = "perf",
                      check: bool = True) -> tuple[pd.DataFrame, int]:
    """Run ``perf stat -x, -e EVENTS -- COMMAND`` and read its counts.

    The command runs under a POSIX shell (``/bin/sh``) that records its exit status,
    since perf's own exit status is not always the command's; the counts include that
    shell's start (here about 0.2 ms of task-clock and 15 page faults).

    Parameters
    ----------
    command : list of str
        The program and its arguments.
    events : sequence of str
        perf event names (default :data:`PERF_EVENTS`).
    names : dict, optional
        Extra perf -> PAPI name translations, as for :func:`read_perf_stat`.
    perf : str
        The perf program.
    check : bool
        First ask :func:`perf_counters_problem` and raise if hardware events cannot be
        counted. ``False`` runs perf regardless (software events such as ``task-clock``
        work without a PMU).

    Returns
    -------
    (pandas.DataFrame, int)
        The table of :func:`read_perf_stat` (``attrs["command"]`` the perf command line
        with the command, ``attrs["status_wrapper"]`` the shell around the command) and
        the command's exit status.

    Raises
    ------
    RuntimeError
        If ``check`` and the machine cannot count hardware events (the message says
        why), or perf itself fails.
    ValueError
        If ``command`` or ``events`` is empty.
    """
    command = [str(part) for part in command]
    events = [str(event) for event in events]
    if not command:
        raise ValueError("command is empty: give the program to run")
    if not events:
        raise ValueError("events is empty: give at least one perf event")
    if check:
        problem = perf_counters_problem(perf)
        if problem is not None:
            raise RuntimeError(problem)
    with tempfile.TemporaryDirectory(prefix="jitterlab-perf-") as folder:
        output = Path(folder) / "perf_stat.csv"
        status_file = Path(folder) / "status"
        argv = [perf, "stat", "-x,", "-o", str(output), "-e", ",".join(events), "--"]
        try:
            completed = subprocess.run([*argv, *_STATUS_WRAPPER, str(status_file), *command],
                                       check=False)
        except OSError as exc:
            raise RuntimeError(f"could not start {perf}: {exc}") from None
        shown = " ".join([*argv, *command])
        if not output.is_file() or not output.read_text(encoding="utf-8").strip():
            raise RuntimeError(f"{shown} wrote no counts (exit status "
                               f"{completed.returncode})")
        try:
            table = read_perf_stat(output, names=names)
        except ValueError as exc:
            raise RuntimeError(f"{shown}: {exc} (exit status "
                               f"{completed.returncode})") from None
        try:
            status = int(status_file.read_text(encoding="ascii"))
        except (OSError, ValueError):  # the shell did not get to write it (perf killed it)
            status = completed.returncode
    table.attrs["path"] = None
    table.attrs["command"] = " ".join([*argv[:4], "<tmp>", *argv[5:], *command])
    table.attrs["status_wrapper"] = " ".join(_STATUS_WRAPPER[:2]) + f" {_STATUS_WRAPPER[2]!r}"
    return table, status


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except OSError:
        return "unknown"
