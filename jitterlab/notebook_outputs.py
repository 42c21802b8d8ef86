"""Keep notebooks small and checkable: outputs stay only in the cells nbval compares.

A code cell whose first line is ``# NBVAL_CHECK_OUTPUT`` keeps its text output (and an
execution count, without which nbval would not compare it); every other cell is
stored without outputs. Run after changing a notebook::

    python -m jitterlab.notebook_outputs notebooks/*.ipynb

It executes each notebook headless (as ``jitterlab reproduce`` does) and rewrites it.
"""

from __future__ import annotations

import argparse
import os
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


def refresh(path: Path, timeout: int = 600) -> None:
    """Execute the notebook in its folder, strip it and write it back atomically."""
    import nbformat
    from nbclient import NotebookClient

    path = Path(path)
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    strip(notebook)
    handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".ipynb.tmp")
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        nbformat.write(notebook, stream)
    os.chmod(temporary, path.stat().st_mode)
    os.replace(temporary, path)


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
