"""The committed notebooks: stripped except for the cells that nbval compares."""

import copy
import re
from pathlib import Path

import nbformat
import pytest

from jitterlab.notebook_outputs import is_checked, strip

pytest_plugins = ["pytester"]

NOTEBOOKS = sorted((Path(__file__).parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_only_checked_cells_keep_text_outputs(path):
    notebook = nbformat.read(path, as_version=4)
    checked = [cell for cell in notebook.cells if is_checked(cell)]
    assert checked, "every notebook checks some key numbers with nbval"
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        if is_checked(cell):
            assert cell.execution_count is not None, "nbval skips cells never run"
            assert cell.outputs, "a checked cell needs its stored output"
            for output in cell.outputs:
                assert set(output.get("data", {})) <= {"text/plain"}
        else:
            assert cell.outputs == [] and cell.execution_count is None
    assert path.stat().st_size < 300_000
    assert "widgets" not in notebook.metadata, "a run's widget state is not committed"


def test_strip_keeps_checked_text_and_drops_the_rest():
    notebook = nbformat.v4.new_notebook()
    checked = nbformat.v4.new_code_cell("# NBVAL_CHECK_OUTPUT\nprint(1)")
    checked.outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n"),
                       nbformat.v4.new_output("display_data", data={"image/png": "AA=="})]
    plain = nbformat.v4.new_code_cell("print(2)", execution_count=5)
    plain.outputs = [nbformat.v4.new_output("stream", name="stdout", text="2\n")]
    notebook.cells = [checked, plain]
    strip(notebook)
    assert [o["output_type"] for o in checked.outputs] == ["stream"]
    assert checked.execution_count == 1
    assert plain.outputs == [] and plain.execution_count is None


def test_strip_joins_stdout_flushed_in_pieces():
    notebook = nbformat.v4.new_notebook()
    checked = nbformat.v4.new_code_cell("# NBVAL_CHECK_OUTPUT\nprint('a'); print('b')")
    checked.outputs = [nbformat.v4.new_output("stream", name="stdout", text="a"),
                       nbformat.v4.new_output("stream", name="stdout", text="\nb\n")]
    notebook.cells = [checked]
    strip(notebook)
    assert len(checked.outputs) == 1 and checked.outputs[0]["text"] == "a\nb\n"


def test_strip_drops_the_widget_state():
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {}}
    notebook.cells = [nbformat.v4.new_code_cell("# NBVAL_CHECK_OUTPUT\nprint(1)")]
    strip(notebook)
    assert "widgets" not in notebook.metadata


# ------------------------------------------------------------------------------------------
# output_differences: the comparison the browser test makes instead of running nbval again
# ------------------------------------------------------------------------------------------
SANITIZE_CFG = Path(__file__).parents[1] / "notebooks" / "sanitize.cfg"


def stdout(text):
    return nbformat.v4.new_output("stream", name="stdout", text=text)


def result(text):
    return nbformat.v4.new_output("execute_result", data={"text/plain": text}, execution_count=1)


# (cell source, committed outputs, whether nbval passes the cell)
CASES = [
    ("# NBVAL_CHECK_OUTPUT\nprint(42)", [stdout("42\n")], True),
    ("# NBVAL_CHECK_OUTPUT\nprint(43)", [stdout("42\n")], False),
    ("# NBVAL_CHECK_OUTPUT\nprint('took 1.25 s')", [stdout("took 3.5 s\n")], True),
    ("# NBVAL_CHECK_OUTPUT\nprint('/tmp/xyz/a.nc', hex(id(1)))",
     [stdout("/tmp/other 0x7f00aa\n")], True),
    ("# NBVAL_CHECK_OUTPUT\nimport sys\nprint(1)\nprint('careful', file=sys.stderr)",
     [stdout("1\n")], False),
    ("# NBVAL_CHECK_OUTPUT\nx = 1", [stdout("1\n")], False),
    ("# NBVAL_CHECK_OUTPUT\n6 * 7", [result("42")], True),
    ("# NBVAL_CHECK_OUTPUT\n6 * 8", [result("42")], False),
    ("# NBVAL_CHECK_OUTPUT\nimport pandas as pd\npd.DataFrame({'a': [1]})",
     [result("   a\n0  1")], False),
    ("# NBVAL_CHECK_OUTPUT\nimport sys\nsys.stdout.write('a')\nsys.stdout.flush()\nprint('b')",
     [stdout("a"), stdout("b\n")], True),
    ("# NBVAL_CHECK_OUTPUT\nprint('10%\\r100%')", [stdout("100%\n")], True),
    ("print(5)", [], True),
    ("y = 2\n# NBVAL_CHECK_OUTPUT\nprint(y)", [stdout("3\n")], False),
    ("# NBVAL_IGNORE_OUTPUT\nprint(7)", [stdout("8\n")], True),
    ("# NBVAL_CHECK_OUTPUT\nfrom IPython.display import display\ndisplay(1)\ndisplay(2)",
     [nbformat.v4.new_output("display_data", data={"text/plain": "1"})], False),
    ("# NBVAL_CHECK_OUTPUT\nprint(1)", [stdout("1\n"), stdout("2\n")], False),
    ("1 / 0", [], False),
    ("# NBVAL_CHECK_OUTPUT\nprint('after the error')", [stdout("after the error\n")], True),
]


def cases_notebook():
    notebook = nbformat.v4.new_notebook(metadata={"kernelspec": {
        "name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}})
    for count, (source, outputs, _) in enumerate(CASES, start=1):
        cell = nbformat.v4.new_code_cell(source, execution_count=count if outputs else None)
        if "NBVAL_CHECK_OUTPUT" in source and not outputs:
            cell.execution_count = count  # a checked cell whose committed output is empty
        cell.outputs = outputs
        notebook.cells.append(cell)
    return notebook


@pytest.mark.slow
def test_output_differences_fails_exactly_the_cells_nbval_fails(tmp_path, pytester):
    """The same notebook under nbval (``--nbval-lax`` with notebooks/sanitize.cfg, as the
    test command ran it) and under output_differences on an nbclient execution: the same
    cells fail, and those are the ones each case expects."""
    from nbclient import NotebookClient

    from jitterlab.notebook_outputs import output_differences, read_sanitizers

    notebook = cases_notebook()
    path = pytester.path / "cases.ipynb"
    nbformat.write(notebook, path)
    outcome = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-v", "--nbval-lax", f"--nbval-sanitize-with={SANITIZE_CFG}",
        str(path))
    by_nbval = {int(number) for number, verdict in re.findall(
        r"::Cell (\d+) (PASSED|FAILED)", outcome.stdout.str()) if verdict == "FAILED"}
    assert len(re.findall(r"::Cell \d+ (?:PASSED|FAILED)", outcome.stdout.str())) == len(CASES)

    executed = nbformat.read(path, as_version=4)
    NotebookClient(executed, timeout=120, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(pytester.path)}}).execute()
    problems = output_differences(nbformat.read(path, as_version=4), executed,
                                  read_sanitizers(SANITIZE_CFG))
    by_us = {int(number) for problem in problems
             for number in re.findall(r"^(?:checked )?code cell (\d+) ", problem)}
    expected = {number for number, (*_, passes) in enumerate(CASES) if not passes}
    assert by_nbval == expected
    assert by_us == expected


def test_output_differences_reads_as_a_diff():
    from jitterlab.notebook_outputs import output_differences, read_sanitizers

    committed = nbformat.v4.new_notebook()
    committed.cells = [nbformat.v4.new_code_cell("# NBVAL_CHECK_OUTPUT\nprint(table)",
                                                 execution_count=1)]
    committed.cells[0].outputs = [stdout("N   mean\n1   20.0\n10  58.6 took 1 s\n")]
    executed = copy.deepcopy(committed)
    executed.cells[0].outputs = [stdout("N   mean\n1   20.0\n10  58.7 took 2 s\n")]
    (problem,) = output_differences(committed, executed, read_sanitizers(SANITIZE_CFG))
    assert problem.startswith("checked code cell 0 (print(table)): 'stdout' differs")
    assert "\n-10  58.6 took TIME\n+10  58.7 took TIME" in problem
    executed.cells[0].source = "print(other)"
    with pytest.raises(ValueError, match="code cells"):
        output_differences(committed, executed, [])


def test_output_differences_refuses_markers_only_nbval_honours():
    from jitterlab.notebook_outputs import output_differences

    committed = nbformat.v4.new_notebook()
    committed.cells = [nbformat.v4.new_code_cell("# NBVAL_SKIP\nprint(1)")]
    with pytest.raises(ValueError, match="NBVAL_SKIP"):
        output_differences(committed, copy.deepcopy(committed), [])


def test_read_sanitizers_keeps_the_files_order_and_names_an_empty_file(tmp_path):
    from jitterlab.notebook_outputs import read_sanitizers, sanitize

    pairs = read_sanitizers(SANITIZE_CFG)
    assert pairs[0] == (r"0x[0-9a-fA-F]+", "0xADDRESS") and len(pairs) == 6
    assert sanitize("wall time: 3.2 s at 0x1f", pairs) == "wall time TIME at 0xADDRESS"
    empty = tmp_path / "empty.cfg"
    empty.write_text("[nothing]\n")
    with pytest.raises(ValueError, match="empty.cfg"):
        read_sanitizers(empty)
