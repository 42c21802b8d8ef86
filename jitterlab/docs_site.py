"""Build the documentation site: ``jitterlab docs``.

The site is made with Sphinx from three sources:

* the Markdown pages of ``docs/`` (MyST), with ``docs/conf.py``;
* an API reference generated from the numpydoc docstrings (``docs/api.md``, autosummary);
* the notebooks of ``notebooks/``, rendered by myst-nb **without running them**. When
  ``jitterlab reproduce`` has written an executed copy of a notebook
  (``reports/notebooks/NAME.ipynb``) whose code is that of the current notebook, the page shows
  that copy with all its outputs; otherwise it shows the notebook as committed (only the cells
  checked by nbval keep their outputs) and says so at the top of the page.

The pages are copied into a temporary staging folder together with the chosen notebooks and a
generated ``notebooks/index.md``, and ``python -m sphinx`` runs there in a subprocess, so that a
build sees exactly the files named here and Sphinx's global state stays out of the caller.

Sphinx, myst-nb, numpydoc and the pydata theme come with the ``docs`` extra (also part of the
``test`` extra): ``pip install -e '.[docs]'``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from .reproduce import default_notebooks_dir, find_notebooks

__all__ = [
    "NOTEBOOK_STATES",
    "DocsBuildError",
    "NotebookPage",
    "SiteBuild",
    "build",
    "default_docs_dir",
    "notebook_page",
    "stage",
]

#: what a notebook page shows, by state
NOTEBOOK_STATES = {
    "executed": "all outputs, from the executed copy written by `jitterlab reproduce`",
    "failed": "outputs up to the failing cell, from the executed copy of a failed "
    "`jitterlab reproduce` run",
    "stale": "not run: the executed copy from `jitterlab reproduce` has other code than the "
    "current notebook",
    "not run": "not run: no executed copy from `jitterlab reproduce`",
}

#: the staged folder of notebook pages (inside the Sphinx source folder)
_NOTEBOOK_FOLDER = "notebooks"
#: folders of ``docs/`` that are never copied into the staging folder
_SKIPPED = {"_build", _NOTEBOOK_FOLDER, ".ipynb_checkpoints", "__pycache__", "generated"}
#: modules Sphinx needs, by the distribution that provides them
_REQUIRED = {"sphinx": "sphinx", "myst_nb": "myst-nb", "numpydoc": "numpydoc",
             "pydata_sphinx_theme": "pydata-sphinx-theme"}


class DocsBuildError(RuntimeError):
    """Sphinx failed (or, with ``warnings_as_errors``, warned); ``log`` holds its output."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


@dataclasses.dataclass(frozen=True)
class NotebookPage:
    """One notebook as it appears on the site.

    Attributes
    ----------
    name : str
        File stem of the notebook (``01_max_of_n``); the page is ``notebooks/NAME.html``.
    title : str
        The notebook's first Markdown heading (its page title).
    state : str
        One of :data:`NOTEBOOK_STATES`.
    source : pathlib.Path
        The committed notebook.
    executed : pathlib.Path or None
        The executed copy the page shows, when ``state`` is ``"executed"`` or ``"failed"``.
    failed_cell : int or None
        Position (from 1, counting every cell) of the first cell with an error output.
    """

    name: str
    title: str
    state: str
    source: Path
    executed: Path | None = None
    failed_cell: int | None = None


@dataclasses.dataclass(frozen=True)
class SiteBuild:
    """Result of :func:`build`.

    Attributes
    ----------
    index : pathlib.Path
        The site's front page (``OUTPUT/index.html``).
    notebooks : list of NotebookPage
        The notebook pages, in order of file name.
    seconds : float
        Wall time of the build (staging and Sphinx). [s]
    log : str
        What Sphinx printed (its warnings, or everything with ``verbose``).
    """

    index: Path
    notebooks: list[NotebookPage]
    seconds: float
    log: str


def default_docs_dir() -> Path:
    """Return the folder of documentation pages to build when none is given.

    ``docs/`` in the current working directory if it holds a ``conf.py``, otherwise the
    ``docs/`` folder next to the package in a source checkout.
    """
    here = Path.cwd() / "docs"
    if (here / "conf.py").is_file():
        return here
    return Path(__file__).resolve().parent.parent / "docs"


def notebook_page(source: str | os.PathLike, reports_dir: str | os.PathLike | None) -> tuple[
    dict, NotebookPage
]:
    """Choose what the page of one notebook shows and return it with a banner at the top.

    Parameters
    ----------
    source : path
        The committed notebook ``NAME.ipynb``.
    reports_dir : path or None
        Output folder of ``jitterlab reproduce`` (its executed copies are
        ``reports_dir/notebooks/NAME.ipynb``); ``None`` to render every notebook unexecuted.

    Returns
    -------
    notebook : dict
        The notebook (nbformat 4 JSON) to render: the executed copy when there is one whose
        code cells have the same sources as ``source``, otherwise ``source`` itself. A note
        naming where the outputs come from is added under its title.
    page : NotebookPage
        What was chosen.
    """
    source = Path(source)
    committed = _read_notebook(source)
    candidate = None if reports_dir is None else Path(reports_dir) / "notebooks" / source.name
    state, executed, notebook, failed_cell = "not run", None, committed, None
    if candidate is not None and candidate.is_file():
        copy = _read_notebook(candidate)
        if _code(copy) == _code(committed):
            executed, notebook = candidate, copy
            failed_cell = _first_error(copy)
            state = "executed" if failed_cell is None else "failed"
        else:
            state = "stale"
    page = NotebookPage(
        name=source.stem,
        title=_title(notebook) or source.stem,
        state=state,
        source=source,
        executed=executed,
        failed_cell=failed_cell,
    )
    _add_banner(notebook, _banner(page, candidate))
    return notebook, page


def stage(
    docs_dir: str | os.PathLike,
    notebooks_dir: str | os.PathLike,
    reports_dir: str | os.PathLike | None,
    staging_dir: str | os.PathLike,
) -> list[NotebookPage]:
    """Lay out a Sphinx source folder: the pages of ``docs_dir`` plus the notebook pages.

    Parameters
    ----------
    docs_dir : path
        Folder with ``conf.py``, ``index.md`` and the other pages.
    notebooks_dir : path
        Folder of ``*.ipynb`` notebooks.
    reports_dir : path or None
        Output folder of ``jitterlab reproduce`` (see :func:`notebook_page`).
    staging_dir : path
        Empty or missing folder to write into.

    Returns
    -------
    list of NotebookPage
        The notebook pages written to ``staging_dir/notebooks/``, in order of file name,
        listed by the generated ``staging_dir/notebooks/index.md``.
    """
    docs_dir, staging_dir = Path(docs_dir), Path(staging_dir)
    if not (docs_dir / "conf.py").is_file():
        raise FileNotFoundError(f"no conf.py in the documentation folder {docs_dir}")
    shutil.copytree(
        docs_dir,
        staging_dir,
        ignore=lambda folder, names: [n for n in names if n in _SKIPPED and
                                      Path(folder) == docs_dir],
        dirs_exist_ok=True,
    )
    target = staging_dir / _NOTEBOOK_FOLDER
    target.mkdir(parents=True, exist_ok=True)
    pages = []
    for path in find_notebooks(notebooks_dir):
        notebook, page = notebook_page(path, reports_dir)
        (target / path.name).write_text(json.dumps(notebook, ensure_ascii=False, indent=1),
                                        encoding="utf-8")
        pages.append(page)
    (target / "index.md").write_text(_notebooks_index(pages, reports_dir), encoding="utf-8")
    return pages


def build(
    output: str | os.PathLike | None = None,
    *,
    docs_dir: str | os.PathLike | None = None,
    notebooks_dir: str | os.PathLike | None = None,
    reports_dir: str | os.PathLike | None = "reports",
    warnings_as_errors: bool = False,
    verbose: bool = False,
) -> SiteBuild:
    """Build the HTML documentation site.

    Parameters
    ----------
    output : path, optional
        Folder for the HTML site (created; files of an earlier build are overwritten).
        Default: ``_build/html`` inside ``docs_dir``.
    docs_dir : path, optional
        Folder of the Markdown pages and ``conf.py``; default :func:`default_docs_dir`.
    notebooks_dir : path, optional
        Folder of the notebooks; default that of ``jitterlab reproduce``
        (:func:`jitterlab.reproduce.default_notebooks_dir`).
    reports_dir : path or None, optional
        Output folder of ``jitterlab reproduce`` whose executed notebooks are shown
        (default ``reports``, relative to the working directory); ``None`` renders every
        notebook unexecuted.
    warnings_as_errors : bool, optional
        Fail on any Sphinx warning (``sphinx-build -W --keep-going``).
    verbose : bool, optional
        Keep Sphinx's progress messages in the log, not only its warnings.

    Returns
    -------
    SiteBuild
        Front page, notebook pages, build time and Sphinx's log.

    Raises
    ------
    ImportError
        If Sphinx or one of its extensions is not installed.
    DocsBuildError
        If Sphinx fails, or warns while ``warnings_as_errors`` is set.
    """
    started = time.perf_counter()
    _check_installed()
    docs_dir = Path(docs_dir) if docs_dir is not None else default_docs_dir()
    notebooks_dir = Path(notebooks_dir) if notebooks_dir is not None else default_notebooks_dir()
    output = Path(output) if output is not None else docs_dir / "_build" / "html"
    with tempfile.TemporaryDirectory(prefix="jitterlab-docs-") as tmp:
        source = Path(tmp) / "source"
        pages = stage(docs_dir, notebooks_dir, reports_dir, source)
        command = [sys.executable, "-m", "sphinx", "-b", "html",
                   "-d", str(Path(tmp) / "doctrees")]
        if warnings_as_errors:
            command.append("--fail-on-warning")
        if not verbose:
            command.append("--quiet")
        command += [str(source), str(output)]
        # Python's own deprecation warnings from Sphinx's dependencies are not Sphinx warnings.
        env = {**os.environ, "JUPYTER_PLATFORM_DIRS": "1", "PYTHONWARNINGS": "ignore"}
        run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, env=env, check=False)
        log = run.stdout.replace(str(source / _NOTEBOOK_FOLDER) + os.sep, "notebooks/")
        log = log.replace(str(source) + os.sep, "docs/")
    if run.returncode != 0:
        why = "warned (warnings are errors)" if warnings_as_errors else "failed"
        raise DocsBuildError(f"Sphinx {why} (exit status {run.returncode}):\n{log}", log)
    return SiteBuild(index=output / "index.html", notebooks=pages,
                     seconds=time.perf_counter() - started, log=log)


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------
def _check_installed() -> None:
    import importlib.util

    missing = [dist for module, dist in _REQUIRED.items()
               if importlib.util.find_spec(module) is None]
    if missing:
        raise ImportError(
            f"building the documentation needs {', '.join(missing)}: "
            "pip install -e '.[docs]'"
        )


def _read_notebook(path: Path) -> dict:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    if notebook.get("nbformat") != 4:
        raise ValueError(f"{path}: not an nbformat 4 notebook")
    return notebook


def _text(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _code(notebook: dict) -> list[str]:
    return [_text(c) for c in notebook["cells"] if c.get("cell_type") == "code"]


def _first_error(notebook: dict) -> int | None:
    for position, cell in enumerate(notebook["cells"], start=1):
        if any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
            return position
    return None


def _title(notebook: dict) -> str | None:
    for cell in notebook["cells"]:
        if cell.get("cell_type") == "markdown":
            for line in _text(cell).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return None


def _banner(page: NotebookPage, candidate: Path | None) -> str:
    if page.state == "executed":
        when = datetime.fromtimestamp(page.executed.stat().st_mtime, UTC)
        return (
            ":::{note}\nThe outputs on this page are those of `jitterlab reproduce` "
            f"(executed copy written {when:%Y-%m-%d %H:%M} UTC).\n:::"
        )
    if page.state == "failed":
        return (
            ":::{warning}\nThe `jitterlab reproduce` run that wrote the outputs on this page "
            f"failed in cell {page.failed_cell}: the cells after it have no output.\n:::"
        )
    rerun = ("Run `jitterlab reproduce` and then `jitterlab docs` to see every output; "
             "only the cells checked by the tests keep their output in the committed notebook.")
    if page.state == "stale":
        return (
            ":::{note}\nThis notebook was **not run** for this page: the executed copy written "
            "by `jitterlab reproduce` was made from another version of its code, so the "
            f"notebook is shown as committed. {rerun}\n:::"
        )
    looked = "" if candidate is None else f" (no `{candidate.parent.name}/{candidate.name}`"
    looked += "" if candidate is None else f" in `{candidate.parent.parent}`)"
    return (
        ":::{note}\nThis notebook was **not run** for this page: there is no executed copy from "
        f"`jitterlab reproduce`{looked}, so the notebook is shown as committed. {rerun}\n:::"
    )


def _add_banner(notebook: dict, banner: str) -> None:
    """Put ``banner`` under the title of the first cell, or in a new first cell."""
    cells = notebook["cells"]
    if cells and cells[0].get("cell_type") == "markdown":
        head, _, rest = _text(cells[0]).partition("\n")
        if head.startswith("# "):
            cells[0]["source"] = f"{head}\n\n{banner}\n{rest}"
            return
    cells.insert(0, {"cell_type": "markdown", "metadata": {}, "source": banner})


def _notebooks_index(pages: list[NotebookPage], reports_dir) -> str:
    ran = sum(p.state in ("executed", "failed") for p in pages)
    where = "" if reports_dir is None else f" (executed copies looked for in `{reports_dir}`)"
    lines = [
        "# Notebooks",
        "",
        "Worked examples, one per paper figure or topic. `jitterlab reproduce` runs them all;",
        "the site shows the executed copies it wrote when they match the current notebooks,",
        "and the notebooks as committed otherwise, without running them.",
        f"This build: {ran} of {len(pages)} notebooks with outputs{where}.",
        "",
        "| notebook | outputs on its page |",
        "| --- | --- |",
    ]
    for page in pages:
        state = NOTEBOOK_STATES[page.state]
        if page.state == "failed":
            state += f" (cell {page.failed_cell})"
        title = page.title.replace("|", "\\|")
        lines.append(f"| [{title}]({page.name}.ipynb) | {state} |")
    lines += ["", "```{toctree}", ":hidden:", ":maxdepth: 1", ""]
    lines += [page.name for page in pages]
    lines += ["```", ""]
    return "\n".join(lines)
