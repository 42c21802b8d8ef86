"""The committed notebooks: stripped except for the cells that nbval compares."""

from pathlib import Path

import nbformat
import pytest

from jitterlab.notebook_outputs import is_checked, strip

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
