"""The ``jitterlab`` command line, with real kernels on two tiny notebooks."""

import contextlib
import io
from importlib.metadata import entry_points

import nbformat
import pytest

import jitterlab
from jitterlab.cli import main

PLOT_CELLS = [
    nbformat.v4.new_markdown_cell("# A plot"),
    nbformat.v4.new_code_cell(
        "import matplotlib.pyplot as plt\n"
        "value = float(open('../data/value.txt').read())\n"
        "print('value', value)"
    ),
    nbformat.v4.new_code_cell("fig, ax = plt.subplots()\nax.plot([0, 1], [0, value])\nplt.show()"),
]
FAIL_CELLS = [
    nbformat.v4.new_code_cell("x = 1"),
    nbformat.v4.new_code_cell("raise ValueError('deliberate failure in a test notebook')"),
    nbformat.v4.new_code_cell("y = 2"),
]


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"jitterlab {jitterlab.__version__}"


def test_entry_point_is_declared():
    (script,) = entry_points(group="console_scripts", name="jitterlab")
    assert script.value == "jitterlab.cli:main"


@pytest.fixture(scope="module")
def reproduced(tmp_path_factory):
    """Run ``jitterlab reproduce`` once on a plotting and a failing notebook."""
    root = tmp_path_factory.mktemp("project")
    (root / "data").mkdir()
    (root / "data" / "value.txt").write_text("2.5\n")
    notebooks = root / "notebooks"
    notebooks.mkdir()
    nbformat.write(nbformat.v4.new_notebook(cells=PLOT_CELLS), notebooks / "a_plot.ipynb")
    nbformat.write(nbformat.v4.new_notebook(cells=FAIL_CELLS), notebooks / "b_fail.ipynb")
    output = root / "reports"
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(
            ["reproduce", "--notebooks", str(notebooks), "--output", str(output), "--timeout", "60"]
        )
    return status, output, out.getvalue(), err.getvalue()


def test_reproduce_exit_status_and_message(reproduced):
    status, output, out, err = reproduced
    assert status == 1
    assert "2 notebooks: 1 ok, 1 FAILED" in out
    assert "FAILED: " in err and "b_fail.ipynb, cell 2" in err
    assert "ValueError: deliberate failure in a test notebook" in err
    assert "a_plot" not in err.split("FAILED: ", 1)[1]


def test_reproduce_writes_executed_notebook(reproduced):
    output = reproduced[1]
    executed = nbformat.read(output / "notebooks" / "a_plot.ipynb", as_version=4)
    printed = "".join(o.get("text", "") for o in executed.cells[1].outputs)
    assert "value 2.5" in printed  # ran from the notebook's folder: ../data resolved
    html = (output / "a_plot.html").read_text()
    assert html.lstrip().lower().startswith("<!doctype html")
    # printed tables are not wrapped: the no-wrap rule comes last in the head, after
    # nbconvert's own (pre-wrap) style of output text
    from jitterlab.reproduce import _NO_WRAP_STYLE
    head = html.split("</head>", 1)[0]
    assert head.rstrip().endswith(_NO_WRAP_STYLE) and "pre-wrap" in head


def test_reproduce_extracts_figure(reproduced):
    output = reproduced[1]
    figures = sorted(p.name for p in (output / "figures").iterdir())
    assert figures == ["a_plot_cell3_1.png"]
    assert (output / "figures" / figures[0]).read_bytes().startswith(b"\x89PNG")


def test_reproduce_keeps_failing_notebook(reproduced):
    output = reproduced[1]
    executed = nbformat.read(output / "notebooks" / "b_fail.ipynb", as_version=4)
    assert executed.cells[1].outputs[0]["ename"] == "ValueError"
    assert executed.cells[2].outputs == []


def test_reproduce_summary(reproduced):
    output = reproduced[1]
    summary = (output / "summary.md").read_text()
    assert "| a_plot | ok |" in summary
    assert "| b_fail | **FAILED** |" in summary
    assert "b_fail: FAILED, cell 2" in summary
    page = (output / "index.html").read_text()
    assert 'href="a_plot.html"' in page and 'href="notebooks/b_fail.ipynb"' in page
    assert not list(output.rglob("*.tmp"))


def test_missing_notebooks_dir(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["reproduce", "--notebooks", str(tmp_path / "nowhere")])
    assert exit_info.value.code == 2
    assert "notebooks directory not found" in capsys.readouterr().err


def test_no_matching_notebook(tmp_path, capsys):
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "only.ipynb")
    with pytest.raises(SystemExit) as exit_info:
        main(["reproduce", "--notebooks", str(tmp_path), "--only", "other*"])
    assert exit_info.value.code == 2
    assert "no notebooks matching 'other*'" in capsys.readouterr().err
