"""Keep notebooks small and checkable: outputs stay only in the cells nbval compares.

A code cell whose first line is ``# NBVAL_CHECK_OUTPUT`` keeps its text output (and an
execution count, without which nbval would not compare it); every other cell is
stored without outputs. Run after changing a notebook::

    python -m jitterlab.notebook_outputs notebooks/*.ipynb

It executes each notebook headless (as ``jitterlab reproduce`` does) and rewrites it.

:func:`output_differences` compares the checked cells of a notebook executed elsewhere (in
JupyterLab by the browser test, or by :func:`execute`) with the committed outputs by nbval's
rules (``pytest --nbval-lax --nbval-sanitize-with=notebooks/sanitize.cfg``): the same cells,
the same output fields, the same sanitizers, streams joined the same way. So a notebook runs
once in the test suite, not once for nbval and once more in the browser.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import os
import re
import sys
import tempfile
from pathlib import Path

CHECK_MARK = "# NBVAL_CHECK_OUTPUT"
_TEXT = "text/plain"


def is_checked(cell) -> bool:
    """True for a code cell whose output nbval compares."""
    return cell.get("cell_type") == "code" and cell.get("source", "").lstrip().startswith(
        CHECK_MARK)


def strip(notebook) -> object:
    """Drop every output except the text of checked cells; number the checked cells.

    The widget state a run leaves in the notebook's metadata (``widgets``) goes too.
    """
    notebook.metadata.pop("widgets", None)
    count = 0
    for cell in notebook.cells:
        if cell.get("cell_type") != "code":
            continue
        cell.metadata.pop("execution", None)
        if is_checked(cell):
            count += 1
            kept = []
            for output in cell.get("outputs", []):
                if output.get("output_type") == "stream" and output.get("name") == "stdout":
                    if kept and kept[-1].get("output_type") == "stream":
                        # one block of text, however the kernel happened to flush it
                        kept[-1]["text"] = kept[-1]["text"] + output["text"]
                    else:
                        kept.append(output)
                elif output.get("output_type") == "execute_result" and _TEXT in output.get(
                        "data", {}):
                    output["data"] = {_TEXT: output["data"][_TEXT]}
                    output["metadata"] = {}
                    output["execution_count"] = count
                    kept.append(output)
            cell.outputs = kept
            cell.execution_count = count
        else:
            cell.outputs = []
            cell.execution_count = None
    return notebook


def execute(path: Path, timeout: int = 600):
    """The notebook at ``path`` executed headless in its own folder (nothing is written).

    Raises nbclient's ``CellExecutionError`` (with the traceback) at the first cell that fails.
    """
    import nbformat
    from nbclient import NotebookClient

    path = Path(path)
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return notebook


def refresh(path: Path, timeout: int = 600) -> None:
    """Execute the notebook in its folder, strip it and write it back atomically."""
    import nbformat

    path = Path(path)
    notebook = strip(execute(path, timeout=timeout))
    handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".ipynb.tmp")
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        nbformat.write(notebook, stream)
    os.chmod(temporary, path.stat().st_mode)
    os.replace(temporary, path)


# ------------------------------------------------------------------------------------------
# comparing an executed notebook with the committed one, as nbval does
# ------------------------------------------------------------------------------------------
# nbval's comment markers (on any comment line of a cell) and their metadata tags
_MARKERS = {"NBVAL_CHECK_OUTPUT": ("check", True), "NBVAL_IGNORE_OUTPUT": ("check", False),
            "PYTEST_VALIDATE_IGNORE_OUTPUT": ("check", False),
            "NBVAL_RAISES_EXCEPTION": ("raises", True), "NBVAL_SKIP": ("skip", True)}
_TAGS = {**{name.lower().replace("_", "-"): marker for name, marker in _MARKERS.items()},
         "raises-exception": ("raises", True)}
# the keys of an output and of its data that nbval leaves out of the comparison (without
# --nbdime, images too)
IGNORED_FIELDS = frozenset({
    "metadata", "traceback", "prompt_number", "output_type", "name", "execution_count",
    "application/vnd.jupyter.widget-view+json", "image/png", "image/jpeg"})


def read_sanitizers(path: Path) -> list[tuple[str, str]]:
    """The (regex, replacement) pairs of an nbval sanitizer file, in its order.

    As nbval reads it: each ``regex:`` line with the ``replace:`` line right below it; a
    regex given twice keeps its first place and its last replacement.
    """
    pairs = re.findall(r"^regex: (.*)$\n^replace: (.*)$", Path(path).read_text(),
                       flags=re.MULTILINE)
    if not pairs:
        raise ValueError(f"{path}: no 'regex:' line followed by a 'replace:' line")
    return list(dict(pairs).items())


def sanitize(text, sanitizers) -> object:
    """``text`` with every sanitizer applied in turn; anything but a string unchanged."""
    if not isinstance(text, str):
        return text
    for regex, replacement in sanitizers:
        text = re.sub(regex, replacement, text)
    return text


def cell_options(cell) -> dict:
    """nbval's options of a code cell: ``check`` (compare its outputs), ``raises``, ``skip``.

    From its tags, then its comment lines (a marker on any comment line, as nbval reads it).
    """
    options = {"check": False, "raises": False, "skip": False}
    for tag in cell.get("metadata", {}).get("tags", []) or []:
        if tag in _TAGS:
            key, value = _TAGS[tag]
            options[key] = value
    for line in cell.get("source", "").splitlines():
        line = line.strip()
        if line.startswith("#") and line.lstrip("#").strip() in _MARKERS:
            key, value = _MARKERS[line.lstrip("#").strip()]
            options[key] = value
    return options


def join_streams(outputs) -> list:
    """The outputs with every stream joined into its first piece, per stream name, and a
    line's text before a carriage return dropped, as nbval does before comparing (a copy).

    (nbval 0.11 also means to apply backspaces, but its loop never runs; nor does this.)
    """
    joined, streams = [], {}
    for output in copy.deepcopy(list(outputs)):
        if output.get("output_type") == "stream":
            if output["name"] in streams:
                streams[output["name"]]["text"] += output["text"]
                continue
            streams[output["name"]] = output
        joined.append(output)
    for output in streams.values():
        output["text"] = re.sub(r"^.*\r(?=[^\n])", "", output["text"], flags=re.MULTILINE)
    return joined


def _fields(outputs, sanitizers) -> dict[str, list]:
    """The compared values of a cell's outputs, per field: a stream by its name, the data
    by MIME type, other keys (an error's ename and evalue) by name; sanitized, in order."""
    fields: dict[str, list] = {}
    for output in join_streams(outputs):
        if output.get("output_type") == "stream":
            items = [(output["name"], output["text"])]
        else:
            items = []
            for key, value in output.items():
                if key == "data":
                    items += list(value.items())
                else:
                    items.append((key, value))
        for key, value in items:
            if key not in IGNORED_FIELDS:
                fields.setdefault(key, []).append(sanitize(value, sanitizers))
    return fields


def _diff(committed, executed) -> str:
    lines = difflib.unified_diff(str(committed).splitlines(), str(executed).splitlines(),
                                 "committed", "this run", lineterm="", n=2)
    return "\n".join(lines)


def cell_differences(committed_outputs, executed_outputs, sanitizers) -> list[str]:
    """What differs between a checked cell's committed and newly computed outputs, by
    nbval's rules (empty when nbval would pass the cell)."""
    committed = _fields(committed_outputs, sanitizers)
    executed = _fields(executed_outputs, sanitizers)
    problems = []
    if set(committed) - set(executed):
        problems.append(f"missing output fields: {sorted(set(committed) - set(executed))}")
    if set(executed) - set(committed):
        extra = sorted(set(executed) - set(committed))
        shown = "\n".join(f"  {key}: {str(executed[key][0])[:500]!r}" for key in extra)
        problems.append(f"unexpected output fields: {extra}\n{shown}")
    if problems:
        return problems
    for key, values in committed.items():
        if len(values) != len(executed[key]):
            problems.append(f"{len(values)} committed {key!r} outputs, {len(executed[key])} in "
                            "this run (sanitized, - committed, + this run):\n"
                            + _diff("\n".join(map(str, values)),
                                    "\n".join(map(str, executed[key]))))
            continue
        for left, right in zip(values, executed[key], strict=True):
            if left != right:
                problems.append(f"{key!r} differs (sanitized, - committed, + this run):\n"
                                f"{_diff(left, right)}")
                break
    return problems


def _title(cell) -> str:
    """The first line of a cell that is not a marker, shortened: to name it in a report."""
    lines = [line for line in cell.get("source", "").splitlines()
             if line.strip() and line.lstrip("#").strip() not in _MARKERS]
    return lines[0][:70] if lines else ""


def error_outputs(notebook) -> list[str]:
    """Each error output of an executed notebook: cell number (code cells from 0, as nbval
    counts them), exception and the end of its traceback (colour codes removed)."""
    found = []
    code_cells = [cell for cell in notebook.cells if cell.get("cell_type") == "code"]
    for number, cell in enumerate(code_cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                trace = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(output.get("traceback", [])))
                found.append(f"code cell {number} ({_title(cell)}) raised "
                             f"{output.get('ename')}: {output.get('evalue')}\n{trace[-2000:]}")
    return found


def output_differences(committed, executed, sanitizers) -> list[str]:
    """What keeps the executed notebook from passing nbval against the committed one.

    ``committed`` and ``executed`` are nbformat notebooks with the same code cells (the
    executed one run from a copy of the committed one); ``sanitizers`` from
    :func:`read_sanitizers`. Reported, each as readable text: an error output in any cell
    (nbval fails a cell that raises) and every checked cell whose sanitized outputs differ,
    with a unified diff. Empty when nbval would pass every cell.
    """
    code = [cell for cell in committed.cells if cell.get("cell_type") == "code"]
    ran = [cell for cell in executed.cells if cell.get("cell_type") == "code"]
    if [cell.source for cell in code] != [cell.source for cell in ran]:
        raise ValueError("the executed notebook does not have the committed one's code cells")
    problems = error_outputs(executed)
    for number, (cell, fresh) in enumerate(zip(code, ran, strict=True)):
        options = cell_options(cell)
        if options["skip"] or options["raises"]:
            raise ValueError(f"code cell {number} is marked NBVAL_SKIP or NBVAL_RAISES_EXCEPTION;"
                             " only nbval itself honours those markers")
        if cell.get("execution_count") is None:
            if cell.get("outputs"):
                problems.append(f"code cell {number}: committed outputs on a cell never run")
            continue  # nbval compares no cell whose reference was never run
        if options["check"]:
            for problem in cell_differences(cell.get("outputs", []), fresh.get("outputs", []),
                                            sanitizers):
                problems.append(f"checked code cell {number} ({_title(cell)}): {problem}")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jitterlab.notebook_outputs",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--strip-only", action="store_true",
                        help="do not execute; only strip the stored outputs")
    parser.add_argument("--timeout", type=int, default=600,
                        help="seconds a cell may run (default 600; raise it on a busy machine)")
    args = parser.parse_args(argv)
    os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")
    os.environ.setdefault("MPLBACKEND", "Agg")
    import nbformat

    for path in args.notebooks:
        if args.strip_only:
            nbformat.write(strip(nbformat.read(path, as_version=4)), path)
        else:
            refresh(path, timeout=args.timeout)
        kept = sum(is_checked(cell) for cell in nbformat.read(path, as_version=4).cells)
        print(f"{path}: kept the outputs of {kept} checked cells")
    return 0


if __name__ == "__main__":
    sys.exit(main())
