"""Every notebook executed once: in JupyterLab in a real headless Chromium (Run All Cells, then
look at the page), and the checked outputs of that very execution compared with the committed ones.

A JupyterLab server (this venv's ``jupyter lab``) is started on 127.0.0.1, on a free port,
with a random token, over a temporary copy of the notebooks (the repository's other folders
are linked in, so ``../data`` and ``../tests/data`` resolve; the committed notebooks are never
written). Playwright for Python drives the system's Chromium (Debian's ``chromium``, found on
PATH or through ``JITTERLAB_CHROMIUM``; no browser is downloaded). Each page loads JupyterLab
once, in a workspace of its own, and runs one notebook after the other: it opens the notebook
(the command behind File > Open), runs it with Run > Run All Cells, brings the launcher's tab
to the front while it runs (so that Chromium lays out and paints its outputs once, not at
each output), and once the kernel is idle shows the notebook again, which must show

* no error: no error output (a traceback), and no code cell left unexecuted;
* every figure rendered: each image of an output decoded (and at least one where the notebook
  draws);
* every widget rendered (the explorer of :func:`jitterlab.explore`, tqdm's widget progress
  bars), not "Error displaying widget"; text progress bars are plain stderr text;
* for the explorer, a new figure after a change of its noise menu, made in the browser.

Then the notebook is saved from the page (File > Save Notebook, into the temporary copy),
photographed, and closed with its kernel shut down before the page takes the next. The saved
copy must pass what nbval checks (``pytest --nbval-lax`` with
``notebooks/sanitize.cfg``, which no longer runs by default: the notebooks are not in
``testpaths``): no cell raised, and every ``# NBVAL_CHECK_OUTPUT`` cell's output equals the
committed one after the sanitizers (:func:`jitterlab.notebook_outputs.output_differences`,
which follows nbval's rules and whose agreement with nbval is tested here).

A screenshot of each notebook goes to ``reports/browser/NAME.jpg`` (a long one continues
in ``NAME-2.jpg``, ...; ``reports/`` is not tracked), the run times to ``summary.txt``.
``JITTERLAB_BROWSER_PAGES`` (default 2) notebooks run at once, each in its own kernel; the
next one's Run All starts as soon as one is idle, in another page, before that one is saved
and photographed (so at most one page more than that). Loading JupyterLab once per page
instead of once per notebook saves about 4 CPU-s of Chromium per load (8 notebooks on a quiet
machine: Chromium 87 -> 66 CPU-s).
``summary.txt`` also gives the CPU time of each notebook's kernel (start-up, Run All, the
checks) and of the whole run by kind of process (Chromium, the server, the kernels,
Playwright's driver, pytest), read from /proc (:class:`CpuMeter`); ``cpu.json`` has the same
figures, and with ``JITTERLAB_BROWSER_STEPS=1`` (one notebook at a time, for measuring) the
CPU time of each step of each notebook by kind of process.
Under pytest-xdist (CI: ``-n 2 --dist loadgroup``) the notebook tests are one group
(``NOTEBOOK_GROUP``), the largest, so one worker starts it first while the other worker takes
the other tests; the numba cache was warmed before the workers started (``tests/conftest.py``),
so the notebooks' kernels load the kernels instead of compiling them. In one process the
notebook tests run at the end of the session. With
``JITTERLAB_BROWSER_BACKGROUND=1``
the run starts instead in a subprocess (this file run as a script) as soon as pytest has
collected the tests (``tests/conftest.py``), beside the other tests, and the notebook tests
collect its results (on 2 CPUs this was not faster: see ``BACKGROUND``); that subprocess
first warms the numba cache (``warm_numba_cache`` of ``tests/conftest.py``).
Without Chromium the page tests are skipped with a warning on the terminal, and the notebooks
are executed headless with nbclient instead, so that their checked outputs are still compared.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest

from jitterlab.notebook_outputs import execute, output_differences, read_sanitizers

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SCREENSHOTS = ROOT / "reports" / "browser"
SANITIZERS = read_sanitizers(ROOT / "notebooks" / "sanitize.cfg")
PAGES = int(os.environ.get("JITTERLAB_BROWSER_PAGES", "2"))
# for measuring the run, not for CI: one notebook at a time, with no overlap, and the CPU time
# of each step (load Lab, open, run, save, check, screenshot, close) by kind of process in
# reports/browser/cpu.json
STEPS = os.environ.get("JITTERLAB_BROWSER_STEPS", "0") == "1"
NOTEBOOK_TIMEOUT = 900.0  # one notebook, from Run All to idle [s]
SAVE_TIMEOUT = 120.0  # File > Save Notebook until the file is written [s]
PAGE_TIMEOUT_MS = 300_000  # a page opening, its kernel starting, the explorer redrawing [ms]
SERVER_TIMEOUT = 300.0  # server start [s]; a busy shared machine took more than 60 s
SCREENSHOT_MAX_HEIGHT = 16_000  # [px]
# JPEG, not PNG: Chromium's browser process encodes the shot, and a notebook's 1280 x 16 000 px
# PNG cost more than the drawing (three notebooks, each photographed both ways in one run, the
# order alternated: 10.3 CPU-s of Chromium as PNG, 6.2 as JPEG at quality 80, 6.9 at 90; files
# of the same size, 1-3.5 MB a part)
SCREENSHOT_QUALITY = 80
# Debian's launcher adds --enable-gpu-rasterization, which headless Chromium does in SwiftShader
# (the GPU emulated on the CPU); --disable-gpu rasterizes in software. The same notebooks' output
# (07, 11, 13 replayed without their computations) alternated with the default: Chromium
# 39.4 -> 36.5 and 34.8 -> 30.5 CPU-s (niced beside teammates' work, load 8-10: suggestive only)
CHROMIUM_ARGS = ["--disable-gpu"]
VIEWPORT = {"width": 1280, "height": 900}  # a page's size while its notebook runs [px]
# how often a wait in the page looks again [ms]: Playwright's default looks at every animation
# frame, which makes Chromium draw 60 frames a second for as long as the wait lasts
POLL_MS = 250
# opt-in: measured on the quiet machine, CI took 787 s of pytest with it and 773 s without
# (the notebooks' kernels and the unit tests slowed each other: 966 against 746 CPU-s; in
# that fresh clone the notebooks' kernels, started at once, compiled numba's kernels beside
# the tests that compiled them too: the background run now warms the cache first, unmeasured)
BACKGROUND = os.environ.get("JITTERLAB_BROWSER_BACKGROUND", "0") == "1"
# the tests that need the notebooks' runs (NOTEBOOK_TESTS: moved to the end of a session in
# one process; under pytest-xdist, as CI runs, one unit of work, NOTEBOOK_GROUP, the largest,
# so one worker starts them first while the other takes the rest of the tests)
from conftest import NOTEBOOK_GROUP, NOTEBOOK_TESTS  # noqa: E402

# JupyterLab settings for the run: every cell attached to the page (so that the checks see
# them all), the notebook's kernel started without asking, no autosave, no news or update
# checks (they would ask for the network)
SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {
        "windowingMode": "none", "autoStartDefaultKernel": True},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False},
}


def find_chromium() -> str | None:
    """The Chromium to drive: ``JITTERLAB_CHROMIUM``, else ``chromium`` on PATH."""
    given = os.environ.get("JITTERLAB_CHROMIUM")
    if given:
        return given if Path(given).is_file() else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")  # /proc's unit of CPU time [1/s]


def _processes() -> dict[int, tuple[int, float, float]]:
    """pid -> (parent pid, CPU time of the process, CPU time of the children it waited for)
    [s], from /proc (empty where there is none)."""
    table = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        table[int(entry.name)] = (int(fields[1]),
                                  (int(fields[11]) + int(fields[12])) / CLOCK_TICKS,
                                  (int(fields[13]) + int(fields[14])) / CLOCK_TICKS)
    return table


def _command(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


@dataclass
class CpuMeter:
    """CPU time [s] of this process and its descendants by kind, read from /proc at each
    :meth:`sample`: ``chromium``, ``server`` (jupyter lab), ``kernels`` (with the processes
    a kernel started, counted once it has waited for them), ``driver`` (Playwright's node)
    and ``pytest`` (this process, from the meter's creation). A process counts up to its
    last sample, so the run samples before anything ends (a kernel before its shutdown,
    Chromium before it closes); ``totals`` holds the last sample."""
    server_pid: int | None = None
    seen: dict = field(default_factory=dict)  # pid -> [kind, is a kernel itself, CPU-s]
    totals: dict = field(default_factory=dict)
    own: float = field(default_factory=lambda: sum(os.times()[:2]))

    def _kind(self, pid: int, table) -> tuple[str, bool]:
        first = pid
        while pid in table and pid != os.getpid():
            command = _command(pid)
            if b"ipykernel" in command:
                return "kernels", pid == first
            if pid == self.server_pid:
                return "server", False
            if b"chrom" in command.split(b"\0")[0]:
                return "chromium", False
            pid = table[pid][0]
        return "driver", False

    def sample(self) -> dict[str, float]:
        table = _processes()
        children: dict[int, list[int]] = {}
        for pid, (parent, _, _) in table.items():
            children.setdefault(parent, []).append(pid)
        stack = list(children.get(os.getpid(), ()))
        while stack:
            pid = stack.pop()
            stack.extend(children.get(pid, ()))
            entry = self.seen.setdefault(pid, [*self._kind(pid, table), 0.0])
            if entry[0] != "kernels" or entry[1]:  # a kernel's children: in its own count
                entry[2] = table[pid][1] + (table[pid][2] if entry[1] else 0.0)
        totals = dict.fromkeys(("chromium", "server", "kernels", "driver"), 0.0)
        for kind, _, seconds in self.seen.values():
            totals[kind] += seconds
        totals["pytest"] = sum(os.times()[:2]) - self.own
        self.totals = totals
        return totals

    @staticmethod
    def kernel(pid: int | None) -> float:
        """The CPU time [s] of one kernel (and of the processes it waited for)."""
        process = _processes().get(pid) if pid else None
        return process[1] + process[2] if process else float("nan")


def kernel_pid(kernel_id: str) -> int | None:
    """The process of the kernel whose connection file is ``kernel-<kernel_id>.json``."""
    for entry in Path("/proc").glob("[0-9]*"):
        if f"kernel-{kernel_id}.json".encode() in _command(int(entry.name)):
            return int(entry.name)
    return None


def _code_cells(path: Path) -> list[str]:
    """The sources of a notebook's code cells."""
    return ["".join(cell["source"]) for cell in json.loads(path.read_text())["cells"]
            if cell["cell_type"] == "code"]


def draws_figures(path: Path) -> bool:
    """True for a notebook whose code shows a matplotlib figure or the explorer."""
    return bool(re.search(r"plt\.show\(|\.explore\(", "\n".join(_code_cells(path))))


def hides_code(path: Path) -> bool:
    """True for a notebook with a collapsed code cell (``source_hidden``, as its solutions)."""
    return any(cell.get("metadata", {}).get("jupyter", {}).get("source_hidden")
               for cell in json.loads(path.read_text())["cells"] if cell["cell_type"] == "code")


def uses_explorer(path: Path) -> bool:
    return ".explore(" in "\n".join(_code_cells(path))


def shows_sweep_progress(path: Path) -> bool:
    """True for a notebook with a cell that runs :func:`jitterlab.sweep` with its progress
    bar (a tqdm widget in JupyterLab)."""
    return any("jl.sweep(" in code and "progress=False" not in code
               for code in _code_cells(path))


# --------------------------------------------------------------------------------------
# the server
# --------------------------------------------------------------------------------------
@dataclass
class Server:
    url: str
    token: str
    process: subprocess.Popen
    log: Path
    root: Path  # the folder served, with the copies of the notebooks in notebooks/

    def lab_url(self, workspace: str) -> str:
        """JupyterLab in a workspace of its own, reset to the default layout."""
        return f"{self.url}/lab/workspaces/{workspace}?reset&token={self.token}"

    def stop(self) -> None:
        """Ask the server to shut down (it stops its kernels), then make sure it is gone."""
        if self.process.poll() is None:
            request = urllib.request.Request(f"{self.url}/api/shutdown", method="POST",
                                             headers={"Authorization": f"token {self.token}"})
            try:
                urllib.request.urlopen(request, timeout=10).close()
                self.process.wait(timeout=30)
            except Exception:  # noqa: BLE001 - whatever went wrong, end the process below
                pass
        end_process(self.process, 15.0)


def end_process(process: subprocess.Popen, grace: float) -> None:
    """SIGTERM a process still running, and SIGKILL it after ``grace`` seconds [s]."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def lay_out_root(tmp: Path, repository: Path = ROOT) -> Path:
    """A copy of the notebooks next to links to the repository's other top-level entries."""
    root = tmp / "root"
    (root / "notebooks").mkdir(parents=True)
    for entry in repository.iterdir():
        if entry.name not in ("notebooks", "reports") and not entry.name.startswith("."):
            (root / entry.name).symlink_to(entry)
    for source in (repository / "notebooks").iterdir():
        if source.is_file():
            shutil.copy2(source, root / "notebooks" / source.name)
    return root


def start_server(tmp: Path, repository: Path = ROOT) -> Server:
    root = lay_out_root(tmp, repository)
    settings = tmp / "user-settings"
    for name, values in SETTINGS.items():
        path = settings / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    port, token = free_port(), secrets.token_hex(24)
    jupyter = Path(sys.executable).with_name("jupyter")
    env = {**os.environ, "JUPYTER_PLATFORM_DIRS": "1",
           "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
           "JUPYTER_CONFIG_DIR": str(tmp / "config")}
    env.pop("MPLBACKEND", None)  # the kernel's own default: inline figures
    # the server and the kernels write the bytecode of what they import (as Python does by
    # default), so each module is compiled once, not once per kernel: where
    # PYTHONDONTWRITEBYTECODE is set and the packages were installed without .pyc files (uv's
    # default), importing numpy, pandas, xarray, scipy.stats, matplotlib and jitterlab took
    # 5.8-6.4 CPU-s per kernel instead of 1.5-2.0 (notebooks 02, 03 and 09 in a fresh clone,
    # niced at load 7: kernels 44.3 -> 34.7 CPU-s; the first two kernels compile, 09 14.8 -> 8.6)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    log = tmp / "jupyterlab.log"
    with open(log, "wb") as stream:
        process = subprocess.Popen(
            [str(jupyter), "lab", "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1",
             f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
             f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
             f"--LabApp.user_settings_dir={settings}",
             f"--LabApp.workspaces_dir={tmp / 'workspaces'}",
             # window.jupyterapp: the pages open and close notebooks through its commands
             "--LabApp.expose_app_in_browser=True"],
            cwd=root, env=env, stdout=stream, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL)
    server = Server(f"http://127.0.0.1:{port}", token, process, log, root)
    deadline = time.monotonic() + SERVER_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with {process.returncode}:\n"
                               f"{log.read_text(errors='replace')[-3000:]}")
        try:
            with urllib.request.urlopen(f"{server.url}/api/status?token={token}", timeout=2):
                return server
        except OSError:
            time.sleep(0.5)
    server.stop()
    raise RuntimeError(f"jupyter lab did not answer within {SERVER_TIMEOUT:g} s:\n"
                       f"{log.read_text(errors='replace')[-3000:]}")


# --------------------------------------------------------------------------------------
# one notebook in one page
# --------------------------------------------------------------------------------------
# the state of the notebook in the page (its panel's id: also while the notebook is hidden),
# read in the browser
_STATE_JS = """(id) => {
  const panel = document.getElementById(id);
  if (!panel) return null;
  const cells = [...panel.querySelectorAll('.jp-Notebook .jp-CodeCell')];
  const prompts = cells.map(c => {
    const p = c.querySelector('.jp-InputArea-prompt');
    return p ? p.textContent.trim() : '';
  });
  const indicator = panel.querySelector('.jp-Notebook-ExecutionIndicator');
  return {cells: cells.length, prompts,
          indicator: indicator ? indicator.getAttribute('data-status') : null};
}"""

_CHECK_JS = """() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const outputs = [...panel.querySelectorAll('.jp-OutputArea-output')];
  const stderr = [...panel.querySelectorAll(
      '.jp-RenderedText[data-mime-type="application/vnd.jupyter.stderr"]')];
  const errors = stderr.filter(e => /Traceback|^\\s*\\w*(Error|Exception)\\b/m.test(e.textContent))
                       .map(e => e.textContent.slice(-1500));
  const images = [...panel.querySelectorAll('.jp-OutputArea-output img')];
  const broken = images.filter(i => !(i.complete && i.naturalWidth > 0)).length;
  const widgetOutputs = [...panel.querySelectorAll('.jp-OutputArea-output > .jupyter-widgets')];
  const widgetFailures = outputs.filter(o => /Error displaying widget|Loading widget/.test(
      o.textContent)).map(o => o.textContent.slice(0, 300));
  const progressWidgets = panel.querySelectorAll('.jp-OutputArea-output .widget-hprogress').length;
  const textProgress = stderr.filter(e => /\\d+%\\|/.test(e.textContent)).length;
  const otherStderr = stderr.filter(e => !/Traceback/.test(e.textContent) &&
                                         !/\\d+%\\|/.test(e.textContent))
                            .map(e => e.textContent.slice(0, 300));
  return {images: images.length, broken, widgets: widgetOutputs.length,
          widgetImages: panel.querySelectorAll('.jupyter-widgets img').length,
          widgetFailures, errors, progressWidgets, textProgress, otherStderr};
}"""


@dataclass
class Run:
    path: Path
    page: object = None
    panel: str = ""  # the id of the notebook's panel in the page
    started: float = 0.0
    seconds: float = 0.0
    idle_since: float | None = None
    state: dict = field(default_factory=dict)
    checks: dict = field(default_factory=dict)
    problems: list = field(default_factory=list)
    kernel: int | None = None  # the kernel's process id
    cpu: dict = field(default_factory=dict)  # CPU time [s] by step, and by kind of process
    screenshot: Path | None = None
    executed: object = None  # the notebook as saved after the run (nbformat)
    committed: object = None  # the notebook it ran from, as committed (nbformat)


# a notebook opened in the page's JupyterLab (File > Open as a user would, through the
# command behind it), and closed with its kernel shut down, so that the page takes the next
_OPEN_JS = """async (path) => {
  const widget = await window.jupyterapp.commands.execute('docmanager:open',
                                                          {path, factory: 'Notebook'});
  await widget.context.ready;
  await widget.sessionContext.ready;
  return [widget.id, widget.sessionContext.session.kernel.id]; }"""

# the launcher's tab brought to the front (the notebook's tab goes on running behind it)
_HIDE_JS = """async () => {
  const app = window.jupyterapp;
  const launcher = Array.from(app.shell.widgets('main')).find(w => !w.sessionContext)
                   || await app.commands.execute('launcher:create');
  app.shell.activateById(launcher.id); }"""

_CLOSE_JS = """async () => {
  for (const widget of Array.from(window.jupyterapp.shell.widgets('main'))) {
    if (!widget.sessionContext) continue;  // the launcher
    try { await widget.sessionContext.shutdown(); } catch (error) { }
    widget.context.model.dirty = false;  // the explorer's redraw: no "save changes?" dialog
    widget.dispose();
  } }"""


def open_lab(browser, server: Server, workspace: str):
    """A page with JupyterLab loaded (once per page: each load of the whole Lab app cost
    about 4 CPU-s of Chromium), in a workspace of its own; the notebooks are opened in it
    one after the other."""
    page = browser.new_page(viewport=VIEWPORT)
    # clicks and screenshots wait as long as the rest (Playwright's default, 30 s, ran out in
    # a screenshot beside a loaded machine: "waiting for fonts to load", load 7-10)
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    page.goto(server.lab_url(workspace), wait_until="domcontentloaded")
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.commands"
                           ".hasCommand('docmanager:open')", timeout=PAGE_TIMEOUT_MS,
                           polling=POLL_MS)
    page.evaluate("async () => { await window.jupyterapp.restored; }")
    return page


def _open_and_run_all(page, run: Run) -> None:
    run.panel, kernel_id = page.evaluate(_OPEN_JS, f"notebooks/{run.path.name}")
    page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").first.wait_for(timeout=PAGE_TIMEOUT_MS)
    # the kernel must be up before Run All, or the first cells wait in a queue unseen
    page.wait_for_function(
        """() => { const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
                   const i = panel && panel.querySelector('.jp-Notebook-ExecutionIndicator');
                   const name = panel && panel.querySelector('.jp-Toolbar-kernelName');
                   return i && name && i.getAttribute('data-status') === 'idle'
                          && !/No Kernel/.test(name.textContent); }""",
        timeout=PAGE_TIMEOUT_MS, polling=POLL_MS)
    run.kernel = kernel_pid(kernel_id)
    run.cpu["kernel start-up"] = CpuMeter.kernel(run.kernel)
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
    run.started = time.monotonic()
    # the notebook runs behind the launcher's tab: its outputs are laid out and painted
    # once, when it is shown again to be saved and checked, instead of at every output
    # (Chromium 3.4-5.4 -> 1.9-2.0 CPU-s while notebook 03 ran, in two runs each)
    page.evaluate(_HIDE_JS)


def _show(run: Run) -> None:
    """The notebook's tab brought back to the front (File > Save acts on it)."""
    run.page.evaluate("(id) => window.jupyterapp.shell.activateById(id)", run.panel)


def _close_notebook(page) -> None:
    """The page's notebook closed, its kernel shut down, the page as it was before."""
    page.evaluate(_CLOSE_JS)
    page.set_viewport_size(VIEWPORT)


def _finished(run: Run) -> bool:
    """Idle, with no cell running or waiting, for two consecutive seconds."""
    state = run.page.evaluate(_STATE_JS, run.panel)
    run.state = state or {}
    busy = (state is None or state["indicator"] != "idle"
            or any(p in ("[*]:", "[*]") for p in state["prompts"]))
    # Run All marks every queued cell [*] at once, so idle with no [*] means done
    if busy:
        run.idle_since = None
        return False
    if run.idle_since is None:
        run.idle_since = time.monotonic()
    return time.monotonic() - run.idle_since >= 2.0


def _save(run: Run, server: Server) -> None:
    """File > Save Notebook, then read the saved copy (outputs as the page holds them)."""
    saved = server.root / "notebooks" / run.path.name
    before = saved.stat().st_mtime_ns
    page = run.page
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^File$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Save Notebook$")).click()
    deadline = time.monotonic() + SAVE_TIMEOUT
    while time.monotonic() < deadline:
        if saved.stat().st_mtime_ns != before:
            try:  # the server writes atomically; a read may still race its rename
                run.executed = nbformat.read(saved, as_version=4)
                return
            except (OSError, ValueError):
                pass
        time.sleep(0.2)
    run.problems.append(f"the notebook was not saved within {SAVE_TIMEOUT:g} s")


def _expand_all_code(page) -> None:
    """View > Expand All Code: a collapsed input (the notebooks' "# Solution" cells) hides
    its execution prompt, so the prompts are read with every input shown."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^View$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Expand All Code$")).click()
    page.wait_for_timeout(500)


def _check(run: Run) -> None:
    page = run.page
    page.wait_for_timeout(1000)  # late widget views and image decoding
    if hides_code(run.path):
        _expand_all_code(page)
        run.state = page.evaluate(_STATE_JS, run.panel) or run.state
    checks = page.evaluate(_CHECK_JS)
    run.checks = checks
    not_run = [i + 1 for i, p in enumerate(run.state.get("prompts", []))
               if not re.fullmatch(r"\[\d+\]:?", p)]
    if not_run:
        run.problems.append(f"code cells not executed (counted from 1): {not_run}")
    if checks["errors"]:
        run.problems.append("error output:\n" + "\n---\n".join(checks["errors"]))
    if checks["broken"]:
        run.problems.append(f"{checks['broken']} of {checks['images']} images not rendered")
    if draws_figures(run.path) and checks["images"] == 0:
        run.problems.append("the notebook draws figures but the page shows no image")
    if checks["widgetFailures"]:
        run.problems.append(f"widgets not rendered: {checks['widgetFailures']}")
    if shows_sweep_progress(run.path) and checks["progressWidgets"] == 0:
        run.problems.append("the notebook runs jl.sweep with its progress bar, but the page "
                            "shows no progress widget")
    if uses_explorer(run.path) and not run.problems:
        _check_explorer(run)


def _check_explorer(run: Run) -> None:
    """The explorer is drawn, and draws again after a change made in the browser."""
    page = run.page
    image = page.locator(".jupyter-widgets.widget-image").first
    if image.count() == 0 or not page.locator(".jupyter-widgets .widget-slider").count():
        run.problems.append("the explorer's figure or sliders are missing")
        return
    before = image.get_attribute("src")
    menu = page.locator(".widget-dropdown select").first
    menu.select_option(label="Pareto")
    try:
        page.wait_for_function(
            """(before) => { const i = document.querySelector(
                   '.jp-NotebookPanel:not(.lm-mod-hidden) .jupyter-widgets.widget-image');
                 return i && i.getAttribute('src') !== before && i.complete
                        && i.naturalWidth > 0; }""", arg=before, timeout=PAGE_TIMEOUT_MS,
            polling=POLL_MS)
    except Exception as error:  # noqa: BLE001 - reported as a problem of this notebook
        run.problems.append(f"the explorer did not redraw after choosing Pareto: {error}")
        return
    status = page.locator(".jupyter-widgets.widget-html").first.inner_text()
    if "Pareto" not in (page.locator(".widget-dropdown select").first.input_value()) or \
            "cannot compute" in status:
        run.problems.append(f"the explorer's status after the change: {status!r}")


def _screenshot(run: Run) -> None:
    """The whole notebook: the page made as tall as the notebook (up to
    SCREENSHOT_MAX_HEIGHT); a longer notebook continues in NAME-2.jpg, NAME-3.jpg, ..."""
    page = run.page
    scroll_js = """(top) => {
        const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
        if (!panel) return [0, 0];
        const boxes = [...panel.querySelectorAll('.jp-Notebook, .jp-WindowedPanel-outer')];
        boxes.forEach(b => { b.scrollTop = top; });
        const box = boxes.reduce((a, b) => (b.scrollHeight > a.scrollHeight ? b : a));
        // the end of the last cell, not scrollHeight: the notebook pads its end (to scroll
        // past it) by a share of the window's height
        const cells = panel.querySelectorAll('.jp-Notebook .jp-Cell');
        const last = cells.length ? cells[cells.length - 1].getBoundingClientRect().bottom
                                  : box.getBoundingClientRect().bottom;
        const end = last - box.getBoundingClientRect().top + box.scrollTop;
        return [Math.ceil(end), box.clientHeight]; }"""
    height, _ = page.evaluate(scroll_js, 0)
    page.set_viewport_size({"width": 1280, "height": int(min(max(height + 200, 900),
                                                           SCREENSHOT_MAX_HEIGHT))})
    page.wait_for_timeout(500)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    run.screenshot = SCREENSHOTS / f"{run.path.stem}.jpg"
    page.screenshot(path=str(run.screenshot), type="jpeg", quality=SCREENSHOT_QUALITY)
    height, visible = page.evaluate(scroll_js, 0)
    part, top = 1, 0
    while visible > 0 and top + visible < height:
        top += visible
        part += 1
        page.evaluate(scroll_js, top)
        page.wait_for_timeout(300)
        page.screenshot(path=str(SCREENSHOTS / f"{run.path.stem}-{part}.jpg"), type="jpeg",
                        quality=SCREENSHOT_QUALITY)


def run_notebooks(paths, server: Server, chromium: str, pages: int,
                  meter: CpuMeter | None = None) -> dict[str, Run]:
    """Run every notebook, ``pages`` at a time, each in its own kernel. A page (one load of
    JupyterLab) holds one notebook at a time and takes the next once that one is checked,
    photographed and closed: ``pages + 1`` pages at most, as the next Run All starts while
    the last notebook is still being checked (with ``STEPS``, one page and no overlap).
    ``meter`` ends with the CPU time of the whole run by kind of process."""
    from playwright.sync_api import sync_playwright

    meter = meter if meter is not None else CpuMeter()
    meter.server_pid = server.process.pid
    pages = 1 if STEPS else pages
    last = meter.sample()

    def charge(run: Run, step: str) -> None:
        """With ``STEPS``: the CPU time by kind since the last step, as this run's step."""
        nonlocal last
        if STEPS:
            now = meter.sample()
            run.cpu[step] = {kind: round(now[kind] - last[kind], 2) for kind in now}
            last = now

    waiting = [Run(path) for path in paths]
    done: dict[str, Run] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True,
                                             args=CHROMIUM_ARGS)
        try:
            running: list[Run] = []
            free: list = []  # pages whose notebook is closed
            loaded = 0

            def start_waiting():
                nonlocal loaded
                while waiting and len(running) < pages:
                    run = waiting.pop(0)
                    try:
                        charge(run, "before")
                        if not free:
                            loaded += 1
                            free.append(open_lab(browser, server, f"w{loaded}"))
                            charge(run, "load Lab")
                        run.page = free.pop()
                        _open_and_run_all(run.page, run)
                        charge(run, "open")
                        running.append(run)
                    except Exception as error:  # noqa: BLE001 - a failure of this notebook
                        run.problems.append(f"could not open and run it: {error}")
                        done[run.path.name] = _close(run, free, False)

            while waiting or running:
                start_waiting()
                for run in list(running):
                    try:
                        finished = _finished(run)
                    except Exception as error:  # noqa: BLE001
                        run.problems.append(f"page failed while running: {error}")
                        finished = True
                    timed_out = time.monotonic() - run.started > NOTEBOOK_TIMEOUT
                    if finished or timed_out:
                        run.seconds = time.monotonic() - run.started
                        run.cpu["kernel run"] = meter.kernel(run.kernel) - run.cpu[
                            "kernel start-up"]
                        charge(run, "run")
                        if timed_out and not finished:
                            run.problems.append(f"not idle after {NOTEBOOK_TIMEOUT:g} s")
                        # the next notebook's Run All goes on while this one is saved,
                        # checked and photographed (its kernel is idle by now)
                        running.remove(run)
                        if not STEPS:
                            start_waiting()
                        healthy = not timed_out
                        try:
                            _show(run)
                            _save(run, server)
                            charge(run, "save")
                            _check(run)
                            charge(run, "check")
                            _screenshot(run)
                            charge(run, "screenshot")
                        except Exception as error:  # noqa: BLE001
                            run.problems.append(f"checking the page failed: {error}")
                            healthy = False
                        run.cpu["kernel"] = meter.kernel(run.kernel)
                        meter.sample()  # before the kernel ends
                        done[run.path.name] = _close(run, free, healthy)
                        charge(run, "close")
                time.sleep(0.5)
            meter.sample()
        finally:
            browser.close()
    return done


def _close(run: Run, free: list, reuse: bool) -> Run:
    """The run's notebook closed; its page goes back to ``free`` if ``reuse`` and closing
    worked, else the page is closed (a new one is loaded when needed)."""
    if run.page is not None:
        try:
            if not reuse:
                raise RuntimeError("a page that failed is not reused")
            _close_notebook(run.page)
            free.append(run.page)
        except Exception:  # noqa: BLE001 - whatever went wrong, this page is done
            run.page.close()
        run.page = None
    return run


# --------------------------------------------------------------------------------------
# the tests
# --------------------------------------------------------------------------------------
CHROMIUM_MISSING = ("WARNING: Chromium not found (apt-get install chromium, or set "
                    "JITTERLAB_CHROMIUM): the JupyterLab browser tests of tests/test_browser.py "
                    "are SKIPPED")


def _warn(request, message: str) -> None:
    """A line on the terminal that shows even under -q, and on stderr."""
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.ensure_newline()
        reporter.write_line(message, yellow=True, bold=True)
    print(message, file=sys.stderr)


@pytest.fixture(scope="module")
def chromium(request):
    path = find_chromium()
    if path is None:
        _warn(request, CHROMIUM_MISSING)
        pytest.skip(CHROMIUM_MISSING)
    return path


def execute_headless(paths) -> dict[str, Run]:
    """Without a browser: each notebook executed by nbclient in its own folder, as nbval
    ran it; an execution error becomes the run's problem."""
    runs = {}
    for path in paths:
        run = Run(path)
        run.started = time.monotonic()
        try:
            run.executed = execute(path, timeout=int(NOTEBOOK_TIMEOUT))
        except Exception as error:  # noqa: BLE001 - nbclient's CellExecutionError and kin
            run.problems.append(f"headless execution failed: {error}")
        run.seconds = time.monotonic() - run.started
        runs[path.name] = run
    return runs


def run_in_jupyterlab(paths, chromium: str, pages: int = PAGES,
                      meter: CpuMeter | None = None) -> dict[str, Run]:
    """Every notebook of ``paths`` in one JupyterLab server (stopped whatever happens);
    ``meter`` ends with the CPU time of the run by kind of process."""
    for path in paths:  # no screenshot of an earlier run left behind
        for old in (shot for suffix in (".jpg", ".png")  # .png: older runs' shots
                    for shot in (*SCREENSHOTS.glob(f"{path.stem}{suffix}"),
                                 *SCREENSHOTS.glob(f"{path.stem}-*{suffix}"))):
            old.unlink()
    with tempfile.TemporaryDirectory(prefix="jitterlab-browser-") as folder:
        server = start_server(Path(folder))
        try:
            runs = run_notebooks(paths, server, chromium, pages, meter)
        finally:
            server.stop()
        assert server.process.poll() is not None
    return runs


def write_runs(runs: dict[str, Run], folder: Path) -> None:
    """What the tests read of each run: NAME.json (times, checks, problems, screenshot)
    and NAME.ipynb (the saved copy), written by the background run."""
    for name, run in runs.items():
        if run.executed is not None:
            nbformat.write(run.executed, folder / name)
        (folder / f"{name}.json").write_text(json.dumps({
            "seconds": run.seconds, "checks": run.checks, "problems": run.problems,
            "screenshot": str(run.screenshot) if run.screenshot else None, "cpu": run.cpu}))


def read_runs(paths, folder: Path) -> dict[str, Run]:
    runs = {}
    for path in paths:
        run = Run(path)
        written = folder / f"{path.name}.json"
        if not written.is_file():
            run.problems.append("the background run wrote no result for this notebook")
        else:
            values = json.loads(written.read_text())
            run.seconds, run.checks, run.problems, run.cpu = (
                values["seconds"], values["checks"], values["problems"], values["cpu"])
            run.screenshot = Path(values["screenshot"]) if values["screenshot"] else None
            if (folder / path.name).is_file():
                run.executed = nbformat.read(folder / path.name, as_version=4)
        runs[path.name] = run
    return runs


@dataclass
class BackgroundRun:
    """The notebooks' JupyterLab run in a subprocess, started after collection."""
    process: subprocess.Popen
    folder: Path
    paths: list
    started: float
    log: object
    finished: float | None = None
    cpu: dict = field(default_factory=dict)  # of the run by kind of process [s]

    def collect(self) -> dict[str, Run]:
        """Wait for the run to end and read what it wrote."""
        limit = NOTEBOOK_TIMEOUT * len(self.paths) + 600
        try:
            self.process.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            self.stop()
            raise RuntimeError(
                f"the background JupyterLab run took more than {limit:g} s") from None
        if self.process.returncode != 0:
            self.log.seek(0)
            raise RuntimeError(f"the background JupyterLab run exited with "
                               f"{self.process.returncode}:\n{self.log.read()[-3000:]}")
        finished = json.loads((self.folder / "finished.json").read_text())
        self.finished, self.cpu = float(finished["time"]), finished["cpu"]
        return read_runs(self.paths, self.folder)

    def stop(self) -> None:
        """End the run if it still goes (its server and kernels stop with it), drop its files."""
        end_process(self.process, 60.0)
        self.log.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def start_in_background(config, paths) -> None:
    """Start the JupyterLab run of ``paths`` in a subprocess (called by conftest.py once
    the tests are collected); nothing without Chromium or with the background turned off."""
    if not BACKGROUND or not paths or find_chromium() is None:
        return
    folder = Path(tempfile.mkdtemp(prefix="jitterlab-browser-results-"))
    log = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
    process = subprocess.Popen([sys.executable, __file__, str(folder), *map(str, paths)],
                               cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log,
                               stderr=subprocess.STDOUT)
    config.jitterlab_browser_run = BackgroundRun(process, folder, list(paths),
                                                 time.monotonic(), log)


@pytest.fixture(scope="module")
def notebook_runs(request, numba_warm_up):
    """Each selected notebook executed once: in JupyterLab when Chromium is there (from
    the background run if it covers them), else headless; with the committed copy it ran
    from. Under pytest-xdist the numba cache is warmed first (``numba_warm_up``)."""
    selected = list(dict.fromkeys(
        item.callspec.params["path"] for item in request.session.items
        if getattr(item, "originalname", "") in NOTEBOOK_TESTS))
    committed = {path.name: nbformat.read(path, as_version=4) for path in selected}
    chromium_path = find_chromium()
    background = getattr(request.config, "jitterlab_browser_run", None)
    started, meter = time.monotonic(), CpuMeter()
    if chromium_path is None:
        _warn(request, "WARNING: without Chromium the notebooks are executed headless (nbclient)"
                       " to compare their checked outputs")
        runs = execute_headless(selected)
    elif background is not None and set(selected) <= set(background.paths):
        started = background.started
        try:
            runs = background.collect()
            meter.totals = background.cpu
        finally:
            background.stop()
    else:
        runs = run_in_jupyterlab(selected, chromium_path, meter=meter)
    ended = background.finished if background is not None and background.finished else None
    total = (ended or time.monotonic()) - started
    for name, run in runs.items():
        run.committed = committed[name]
    lines = [f"{name}: {run.seconds:.0f} s, {run.checks.get('images', 0)} images, "
             f"{run.checks.get('widgets', 0)} widgets, {run.checks.get('progressWidgets', 0)} "
             f"widget and {run.checks.get('textProgress', 0)} text progress bars, "
             + (f"kernel {run.cpu['kernel start-up']:.1f} + {run.cpu['kernel run']:.1f} + "
                f"{run.cpu['kernel'] - run.cpu['kernel start-up'] - run.cpu['kernel run']:.1f}"
                " CPU-s (start-up + Run All + checks), " if "kernel" in run.cpu else "")
             + f"{'ok' if not run.problems else 'PROBLEMS'}" for name, run in runs.items()]
    how = (f"{1 if STEPS else PAGES} at a time in JupyterLab" if chromium_path
           else "headless, one at a time")
    if background is not None and chromium_path:
        how += ", in the background beside the other tests"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    (SCREENSHOTS / "summary.txt").write_text(
        f"{len(runs)} notebooks, {how}, {total:.0f} s in all\n" + "\n".join(lines) + "\n"
        + (f"before them, {numba_warm_up}\n" if numba_warm_up else "")
        + ("CPU time [s]: " + ", ".join(f"{kind} {seconds:.1f}" for kind, seconds in
                                        meter.totals.items())
           + f", {sum(meter.totals.values()):.1f} in all\n" if meter.totals else ""))
    (SCREENSHOTS / "cpu.json").write_text(json.dumps(
        {"totals": meter.totals, "notebooks": {name: run.cpu for name, run in runs.items()}},
        indent=1))
    return runs


@pytest.mark.slow
@pytest.mark.xdist_group(NOTEBOOK_GROUP)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_in_jupyterlab(chromium, notebook_runs, path):
    run = notebook_runs[path.name]
    assert run.screenshot is not None and run.screenshot.is_file()
    assert not run.problems, f"{path.name} in JupyterLab:\n" + "\n".join(run.problems)


@pytest.mark.slow
@pytest.mark.xdist_group(NOTEBOOK_GROUP)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_checked_outputs_match_the_committed_ones(notebook_runs, path):
    """What nbval checked, on the one execution above: no cell raised, and each checked
    cell's output equals the committed one after notebooks/sanitize.cfg."""
    run = notebook_runs[path.name]
    assert run.executed is not None, (f"{path.name}: no executed copy to compare:\n"
                                      + "\n".join(run.problems))
    differences = output_differences(run.committed, run.executed, SANITIZERS)
    assert not differences, (f"{path.name} differs from its committed outputs (refresh it with "
                             f"python -m jitterlab.notebook_outputs notebooks/{path.name} if "
                             "the change is meant):\n\n" + "\n\n".join(differences))


@pytest.mark.slow
def test_the_checks_catch_what_they_look_for(chromium, tmp_path, monkeypatch):
    """A small notebook with a widget, both kinds of progress bar, a warning (in a collapsed
    cell), two checked cells (one whose committed output differs only where sanitize.cfg
    replaces a time, one whose number changed), an error and a cell after it: the widgets
    and bars are counted, the warning passes, the collapsed cell counts as run, the error and
    the cell that Run All never reached are reported; the saved copy gives the error and the
    changed number, and nothing else."""
    notebook = nbformat.v4.new_notebook(metadata={"kernelspec": {
        "name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}})
    notebook.cells = [nbformat.v4.new_code_cell(code) for code in (
        "import ipywidgets\nfrom tqdm.notebook import tqdm\nfor i in tqdm(range(3)):\n    pass\n"
        "ipywidgets.IntSlider()",
        "from tqdm import tqdm\nfor i in tqdm(range(3)):\n    pass",
        "import warnings\nwarnings.warn('only a warning')",
        "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()",
        "# NBVAL_CHECK_OUTPUT\nprint('took 0.25 s'); print(6 * 7)",
        "# NBVAL_CHECK_OUTPUT\n6 * 7",
        "1 / 0",
        "print('never reached')")]
    notebook.cells[2].metadata["jupyter"] = {"source_hidden": True}  # as a "# Solution" cell
    notebook.cells[4].execution_count, notebook.cells[5].execution_count = 1, 2
    notebook.cells[4].outputs = [nbformat.v4.new_output("stream", name="stdout",
                                                        text="took 3 s\n42\n")]
    notebook.cells[5].outputs = [nbformat.v4.new_output(
        "execute_result", data={"text/plain": "41"}, execution_count=2)]
    repository = tmp_path / "repository"
    (repository / "notebooks").mkdir(parents=True)
    path = repository / "notebooks" / "small.ipynb"
    nbformat.write(notebook, path)
    monkeypatch.setattr(sys.modules[__name__], "SCREENSHOTS", tmp_path / "screenshots")
    server = start_server(tmp_path / "server", repository)
    try:
        run = run_notebooks([path], server, chromium, 1)["small.ipynb"]
    finally:
        server.stop()
    assert server.process.poll() is not None
    assert run.checks["widgets"] == 2 and run.checks["progressWidgets"] == 1
    assert run.checks["textProgress"] == 1 and run.checks["images"] == 1
    assert any("only a warning" in text for text in run.checks["otherStderr"])
    assert run.problems[0] == "code cells not executed (counted from 1): [8]"
    assert "ZeroDivisionError" in run.problems[1]
    assert len(run.problems) == 2
    assert run.screenshot.is_file()
    raised, changed = output_differences(notebook, run.executed, SANITIZERS)
    assert raised.startswith("code cell 6 (1 / 0) raised ZeroDivisionError")
    assert changed.startswith("checked code cell 5 (6 * 7): 'text/plain' differs")
    assert "\n-41\n+42" in changed


def test_which_notebooks_must_show_a_sweep_progress_bar(tmp_path):
    def notebook(code):
        path = tmp_path / f"{len(list(tmp_path.iterdir()))}.ipynb"
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)]), path)
        return path

    assert shows_sweep_progress(notebook("swept = jl.sweep(f, grid)"))
    assert not shows_sweep_progress(notebook("swept = jl.sweep(f, grid, progress=False)"))
    assert not shows_sweep_progress(notebook("jl.simulate(trace)"))
    assert shows_sweep_progress(ROOT / "notebooks" / "11_collectives_under_noise.ipynb")


def test_find_chromium_honours_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("JITTERLAB_CHROMIUM", str(tmp_path / "nowhere"))
    assert find_chromium() is None
    fake = tmp_path / "chromium"
    fake.write_text("")
    monkeypatch.setenv("JITTERLAB_CHROMIUM", str(fake))
    assert find_chromium() == str(fake)


def test_a_missing_chromium_skips_loudly(monkeypatch, pytester):
    """Without Chromium the browser tests skip, and say so on the terminal."""
    pytester.makepyfile(test_inner=f"""
import importlib.util
import sys

spec = importlib.util.spec_from_file_location("browser", {str(Path(__file__))!r})
browser = importlib.util.module_from_spec(spec)
sys.modules["browser"] = browser  # dataclasses look their module up there
spec.loader.exec_module(browser)
chromium = browser.chromium


def test_needs_chromium(chromium):
    pass
""")
    monkeypatch.setenv("JITTERLAB_CHROMIUM", "/nonexistent/chromium")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*WARNING: Chromium not found*SKIPPED*"])


def main(argv) -> int:
    """``python tests/test_browser.py FOLDER NOTEBOOK...``: the background run (see
    :func:`start_in_background`); a SIGTERM, or the end of the pytest process that started
    it, stops the server before the process ends."""
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))
    parent = os.getppid()

    def end_with_the_parent():  # pytest killed outright: no sessionfinish stops this run
        while os.getppid() == parent:
            time.sleep(2.0)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=end_with_the_parent, daemon=True).start()
    folder, paths = Path(argv[0]), [Path(path) for path in argv[1:]]
    chromium = find_chromium()
    if chromium is None:
        print(CHROMIUM_MISSING, file=sys.stderr)
        return 2
    if os.environ.get("JITTERLAB_NUMBA_WARM_UP", "") != "0":
        # the notebooks' kernels then load the numba kernels instead of each compiling them
        # beside the tests (which did, in a fresh clone, when this run started at once)
        from conftest import warm_numba_cache

        print(warm_numba_cache())
    meter = CpuMeter()
    write_runs(run_in_jupyterlab(paths, chromium, meter=meter), folder)
    # time.monotonic is one clock for the whole machine (CLOCK_MONOTONIC): the parent
    # reads when the run ended, not when it collected the results
    (folder / "finished.json").write_text(json.dumps({"time": time.monotonic(),
                                                      "cpu": meter.totals}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


def test_the_notebook_tests_are_one_xdist_group():
    """Under ``--dist loadgroup`` (CI's ``-n 2``) every notebook test is in one unit of work,
    the tests that share a costly fixture are one unit per fixture, and every other test is a
    unit of its own."""
    from conftest import notebook_group_scope

    for name in NOTEBOOK_TESTS:
        for path in NOTEBOOKS[:2]:
            nodeid = f"tests/test_browser.py::{name}[{path.name}]"
            assert notebook_group_scope(nodeid) == NOTEBOOK_GROUP
    for nodeid in ("tests/test_browser.py::test_the_checks_catch_what_they_look_for",
                   "tests/test_kernels.py::test_notebook_runs_in_jupyterlab[x]",
                   "tests/test_recipes.py::test_bad_arguments_are_refused[a@b]"):
        assert notebook_group_scope(nodeid) == nodeid
    assert notebook_group_scope(f"tests/test_browser.py::{NOTEBOOK_TESTS[0]}[01.ipynb]@"
                                f"{NOTEBOOK_GROUP}") == NOTEBOOK_GROUP
    for nodeid in ("tests/test_docs_site.py::test_every_page_is_built",
                   "tests/test_docs_site.py::test_x[y]"):
        assert notebook_group_scope(nodeid) == "docs_site"
    assert notebook_group_scope(
        "tests/test_recipes.py::test_help_runs_as_a_module[record_measurements]") == "recipes_help"
