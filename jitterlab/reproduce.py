"""Run the notebooks headless and write a report: the main job behind ``jitterlab reproduce``.

Every notebook is executed in a fresh ``python3`` kernel whose working directory is the
notebook's folder, so relative paths such as ``../data/...`` resolve as they do in JupyterLab.
For each notebook ``NAME.ipynb`` the report folder receives

* ``notebooks/NAME.ipynb``: the executed notebook (partially executed if a cell failed),
* ``NAME.html``: the same notebook exported to HTML,
* ``figures/NAME_cellK_M.png``: the ``M``-th PNG image shown by cell ``K`` (both counted
  from 1, ``K`` being the cell's position in the notebook, markdown cells included),

and, for the whole run, ``index.html`` and ``summary.md``. Each file is written to a temporary
name in its folder and then renamed, so a reader never sees a half-written file.

nbclient and nbconvert are imported only when a notebook is run.
"""

from __future__ import annotations

import base64
import fnmatch
import glob
import html
import logging
import os
import re
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd
from tqdm import tqdm

__all__ = ["reproduce", "find_notebooks", "default_notebooks_dir", "KERNEL_NAME", "KERNEL_ENV"]

logger = logging.getLogger(__name__)

#: Jupyter kernel used for every notebook, whatever the notebook's own metadata says.
KERNEL_NAME = "python3"

#: Environment variables set for the kernels (on top of the current environment). The
#: matplotlib backend is the headless inline one (it renders with Agg): plain ``Agg`` would also
#: run without a display, but then ``plt.show()`` puts no image in the notebook.
KERNEL_ENV = {
    "JUPYTER_PLATFORM_DIRS": "1",
    "MPLBACKEND": "module://matplotlib_inline.backend_inline",
}

_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_ERROR_TAIL_LINES = 6


@dataclass
class _Result:
    notebook: str
    source: str
    status: str = "ok"
    seconds: float = 0.0
    figures: int = 0
    cell: int | None = None
    error: str = ""
    executed: str = ""
    html: str = ""


def default_notebooks_dir() -> Path:
    """Return the folder of notebooks to run when none is given.

    ``notebooks/`` in the current working directory if it exists, otherwise the ``notebooks/``
    folder next to the package in a source checkout (which may not exist for an installed
    wheel).
    """
    here = Path.cwd() / "notebooks"
    if here.is_dir():
        return here
    return Path(__file__).resolve().parent.parent / "notebooks"


def find_notebooks(notebooks_dir: str | os.PathLike, pattern: str | None = None) -> list[Path]:
    """List the notebooks ``notebooks_dir/*.ipynb`` to run, sorted by file name.

    Parameters
    ----------
    notebooks_dir : path
        Folder holding the notebooks (not searched recursively).
    pattern : str, optional
        Keep only notebooks whose file name or stem matches this shell-style pattern
        (``fig*``); a pattern without wildcards keeps names that contain it.

    Raises
    ------
    FileNotFoundError
        If ``notebooks_dir`` is not a directory.
    """
    folder = Path(notebooks_dir)
    if not folder.is_dir():
        raise FileNotFoundError(f"notebooks directory not found: {folder}")
    paths = sorted(folder.glob("*.ipynb"), key=lambda p: p.name)
    if pattern:
        paths = [p for p in paths if _matches(p, pattern)]
    return paths


def _matches(path: Path, pattern: str) -> bool:
    if any(ch in pattern for ch in "*?["):
        return fnmatch.fnmatch(path.name, pattern) or fnmatch.fnmatch(path.stem, pattern)
    return pattern in path.name


def reproduce(
    notebooks_dir: str | os.PathLike,
    output_dir: str | os.PathLike,
    timeout: float = 600,
    pattern: str | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Execute every notebook of a folder headless and write the executed notebooks and a report.

    A failing notebook does not stop the others: its failure is recorded in the result and
    what it produced until the failure is still written.

    Parameters
    ----------
    notebooks_dir : path
        Folder of ``*.ipynb`` files, run in order of file name.
    output_dir : path
        Report folder; created if missing. Files of earlier runs are overwritten.
    timeout : float, default 600
        Longest time one cell may run before it counts as failed. [s]
    pattern : str, optional
        Run only the notebooks matching this pattern (see :func:`find_notebooks`).
    progress : bool, default True
        Show a tqdm progress bar over the notebooks.

    Returns
    -------
    pandas.DataFrame
        One row per notebook with columns ``notebook`` (name without suffix), ``source`` (path
        of the notebook), ``status`` (``"ok"`` or ``"FAILED"``), ``seconds`` (run time [s]),
        ``figures`` (number of PNG files written), ``cell`` (1-based position of the failing
        cell, or missing), ``error`` (last lines of the error message, empty if ok),
        ``executed`` and ``html`` (paths of the written notebook and HTML file).

    Raises
    ------
    FileNotFoundError
        If ``notebooks_dir`` does not exist or holds no matching notebook.
    """
    paths = find_notebooks(notebooks_dir, pattern)
    if not paths:
        wanted = f" matching {pattern!r}" if pattern else ""
        raise FileNotFoundError(f"no notebooks{wanted} in {Path(notebooks_dir)}")

    out = Path(output_dir)
    for sub in (out, out / "notebooks", out / "figures"):
        sub.mkdir(parents=True, exist_ok=True)

    results = []
    bar = tqdm(paths, desc="notebooks", unit="nb", disable=not progress)
    for path in bar:
        bar.set_postfix_str(path.name)
        logger.info("running %s", path)
        result = _run_one(path, out, timeout)
        if result.status == "ok":
            logger.info("%s ok in %.1f s, %d figures", path.name, result.seconds, result.figures)
        else:
            logger.warning("%s failed at cell %s: %s", path.name, result.cell, result.error)
        results.append(result)
    bar.close()

    frame = pd.DataFrame([asdict(r) for r in results])
    frame["cell"] = frame["cell"].astype("Int64")
    _write_text(out / "summary.md", _summary_markdown(frame, out))
    _write_text(out / "index.html", _summary_html(frame, out))
    return frame


def _run_one(path: Path, out: Path, timeout: float) -> _Result:
    """Execute one notebook and write its outputs; never raises for a notebook's own failure."""
    nbformat = _import_jupyter()[1]
    result = _Result(notebook=path.stem, source=str(path))
    started = time.perf_counter()
    nb = None
    try:
        nb = nbformat.read(path, as_version=4)
        _execute(nb, path, timeout, result)
    except Exception as exc:  # any failure of a notebook is reported, not raised
        result.status = "FAILED"
        result.error = _error_tail(exc)
    result.seconds = time.perf_counter() - started
    if nb is None:
        return result

    executed = out / "notebooks" / f"{path.stem}.ipynb"
    _write_text(executed, nbformat.writes(nb))
    result.executed = str(executed)
    result.figures = _write_figures(nb, out / "figures", path.stem)
    try:
        page = out / f"{path.stem}.html"
        _write_text(page, _to_html(nb))
        result.html = str(page)
    except Exception as exc:
        result.status = "FAILED"
        result.error = (result.error + "\n" if result.error else "") + (
            "HTML export failed: " + _error_tail(exc)
        )
    return result


def _execute(nb, path: Path, timeout: float, result: _Result) -> None:
    nbclient = _import_jupyter()[0]

    def remember_cell(cell, cell_index, **kwargs):
        result.cell = cell_index + 1

    client = nbclient.NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=KERNEL_NAME,
        resources={"metadata": {"path": str(path.parent.resolve())}},
        on_cell_start=remember_cell,
        # The kernel's own log goes to our stderr; keep its routine warnings off the screen.
        extra_arguments=["--IPKernelApp.log_level=ERROR"],
    )
    client.execute(env={**os.environ, **KERNEL_ENV})
    result.cell = None


def _import_jupyter():
    """Import nbclient and nbformat on first use (slow imports kept out of ``import jitterlab``)."""
    # Opt in to the platform directories now rather than see jupyter_core warn about them.
    os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")
    import nbclient
    import nbformat

    return nbclient, nbformat


#: printed tables keep their lines in the HTML export (scrolled sideways), not wrapped
#: mid-row as JupyterLab's style does
_NO_WRAP_STYLE = ("<style>.jp-OutputArea-output pre {white-space: pre; word-break: normal; "
                  "word-wrap: normal;}</style>")


def _to_html(nb) -> str:
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter().from_notebook_node(nb)
    return body.replace("</head>", _NO_WRAP_STYLE + "\n</head>", 1)


def _error_tail(exc: BaseException) -> str:
    """The last few meaningful lines of an exception's message, without terminal colours."""
    from nbclient.exceptions import CellExecutionError

    if isinstance(exc, CellExecutionError):
        text = exc.traceback or f"{exc.ename}: {exc.evalue}"
        lines = _ANSI_ESCAPE.sub("", text).splitlines()
        # The traceback proper follows the last rule of dashes (nbclient puts the cell's
        # source and printed output above it).
        rules = [i for i, line in enumerate(lines) if line.strip() and not line.strip("-")]
        if rules:
            lines = lines[rules[-1] + 1 :]
        lines = [line.rstrip() for line in lines if line.strip()]
        return "\n".join(lines[-_ERROR_TAIL_LINES:])
    first = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {first[0] if first else ''}".rstrip(": ")


def _write_figures(nb, folder: Path, stem: str) -> int:
    """Write every PNG output of the notebook to ``folder``; return how many were written."""
    for stale in folder.glob(f"{glob.escape(stem)}_cell*_*.png"):
        stale.unlink()
    count = 0
    for k, cell in enumerate(nb.cells, start=1):
        images = [
            o["data"]["image/png"]
            for o in cell.get("outputs", [])
            if "image/png" in o.get("data", {})
        ]
        for m, image in enumerate(images, start=1):
            if isinstance(image, list):  # nbformat may keep multi-line strings as lists
                image = "".join(image)
            _write_bytes(folder / f"{stem}_cell{k}_{m}.png", base64.b64decode(image))
            count += 1
    return count


def _summary_markdown(frame: pd.DataFrame, out: Path) -> str:
    lines = [
        "# jitterlab reproduce: summary",
        "",
        _headline(frame),
        "",
        "| notebook | status | time [s] | figures | links |",
        "| --- | --- | ---: | ---: | --- |",
    ]
    for row in frame.itertuples():
        links = [f"[notebook]({_relative(row.executed, out)})"] if row.executed else []
        if row.html:
            links.append(f"[html]({_relative(row.html, out)})")
        status = row.status if row.status == "ok" else f"**{row.status}**"
        lines.append(
            f"| {row.notebook} | {status} | {row.seconds:.1f} | {row.figures} | "
            f"{' '.join(links)} |"
        )
    failed = frame[frame["status"] != "ok"]
    for row in failed.itertuples():
        where = f", cell {row.cell}" if not pd.isna(row.cell) else ""
        lines += ["", f"## {row.notebook}: FAILED{where}", "", "```", row.error, "```"]
    return "\n".join(lines) + "\n"


def _summary_html(frame: pd.DataFrame, out: Path) -> str:
    esc = html.escape
    rows = []
    for row in frame.itertuples():
        links = []
        if row.html:
            links.append(f'<a href="{esc(_relative(row.html, out))}">html</a>')
        if row.executed:
            links.append(f'<a href="{esc(_relative(row.executed, out))}">notebook</a>')
        status = row.status
        if row.status != "ok" and not pd.isna(row.cell):
            status += f" (cell {row.cell})"
        error = f"<pre>{esc(row.error)}</pre>" if row.error else ""
        rows.append(
            f'<tr class="{esc(row.status.lower())}"><td>{esc(row.notebook)}</td>'
            f"<td>{esc(status)}</td><td>{row.seconds:.1f}</td><td>{row.figures}</td>"
            f"<td>{' '.join(links)}</td><td>{error}</td></tr>"
        )
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>jitterlab reproduce</title>
<style>
body {{ font-family: sans-serif; margin: 2em; }}
table {{ border-collapse: collapse; }}
th, td {{ border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }}
tr.failed td:nth-child(2) {{ color: #b00; font-weight: bold; }}
pre {{ margin: 0; white-space: pre-wrap; }}
</style>
</head>
<body>
<h1>jitterlab reproduce</h1>
<p>{esc(_headline(frame))}</p>
<table>
<tr><th>notebook</th><th>status</th><th>time [s]</th><th>figures</th><th>links</th>
<th>error</th></tr>
{chr(10).join(rows)}
</table>
</body>
</html>
"""


def _headline(frame: pd.DataFrame) -> str:
    failed = int((frame["status"] != "ok").sum())
    notebooks, figures = len(frame), int(frame["figures"].sum())
    return (
        f"{notebooks} notebook{'s' * (notebooks != 1)}: {notebooks - failed} ok, "
        f"{failed} FAILED; {figures} figure{'s' * (figures != 1)}; "
        f"{frame['seconds'].sum():.1f} s in total."
    )


def _relative(path: str, out: Path) -> str:
    return Path(os.path.relpath(path, out)).as_posix()


def _write_text(path: Path, text: str) -> None:
    _write_bytes(path, text.encode("utf-8"))


def _write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "xb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
