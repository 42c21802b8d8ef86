"""The documentation site: ``jitterlab docs`` builds it with warnings as errors.

One build (about 20 s: no notebook is executed) of the real pages, docstrings and notebooks,
with a fake report folder in which one notebook has an executed copy and another an outdated
one; then checks on the HTML it wrote. The choice of what a notebook page shows is tested
on small notebooks without Sphinx.
"""

from __future__ import annotations

import copy
import html
import json
import re
import types
from pathlib import Path

import pytest

import jitterlab as jl
from jitterlab import cli
from jitterlab.docs_site import NOTEBOOK_STATES, notebook_page, stage

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
NOTEBOOKS = ROOT / "notebooks"
MARKER = "output written only by this test's fake reproduce run"
#: one xdist worker runs this module, so that the site is built once in CI, not on each worker
pytestmark = pytest.mark.xdist_group("docs_site")


def _notebook(*cells):
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": list(cells)}


def _markdown(text):
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def _code(text, outputs=()):
    return {"cell_type": "code", "metadata": {}, "execution_count": None, "source": text,
            "outputs": list(outputs)}


def _stream(text):
    return {"output_type": "stream", "name": "stdout", "text": text}


def _write(path: Path, notebook: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(notebook), encoding="utf-8")
    return path


def _text(path: Path) -> str:
    """Visible text of an HTML page (tags removed, entities decoded, spaces collapsed)."""
    page = path.read_text(encoding="utf-8")
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


# --------------------------------------------------------------------------------------
# what a notebook page shows (no Sphinx)
# --------------------------------------------------------------------------------------
SOURCE = _notebook(_markdown("# A title\n\nSome text."), _code("x = 1"), _code("print(x)"))


def test_notebook_without_executed_copy_is_shown_as_committed(tmp_path):
    source = _write(tmp_path / "nb" / "a.ipynb", SOURCE)
    for reports in (tmp_path / "reports", None):
        notebook, page = notebook_page(source, reports)
        assert page.state == "not run" and page.executed is None
        assert page.title == "A title"
        assert [c["source"] for c in notebook["cells"][1:]] == ["x = 1", "print(x)"]
        first = notebook["cells"][0]["source"]
        assert first.startswith("# A title\n\n:::{note}") and first.endswith("Some text.")
        assert "**not run**" in first


def test_executed_copy_with_the_same_code_is_used(tmp_path):
    source = _write(tmp_path / "nb" / "a.ipynb", SOURCE)
    executed = copy.deepcopy(SOURCE)
    executed["cells"][2]["outputs"] = [_stream("1\n")]
    copy_path = _write(tmp_path / "reports" / "notebooks" / "a.ipynb", executed)
    notebook, page = notebook_page(source, tmp_path / "reports")
    assert (page.state, page.executed, page.failed_cell) == ("executed", copy_path, None)
    assert notebook["cells"][2]["outputs"] == [_stream("1\n")]
    assert "outputs on this page are those of `jitterlab reproduce`" in notebook["cells"][0][
        "source"]


def test_failed_copy_names_the_failing_cell(tmp_path):
    source = _write(tmp_path / "nb" / "a.ipynb", SOURCE)
    executed = copy.deepcopy(SOURCE)
    executed["cells"][2]["outputs"] = [{"output_type": "error", "ename": "NameError",
                                        "evalue": "x", "traceback": []}]
    _write(tmp_path / "reports" / "notebooks" / "a.ipynb", executed)
    notebook, page = notebook_page(source, tmp_path / "reports")
    assert (page.state, page.failed_cell) == ("failed", 3)
    assert "failed in cell 3" in notebook["cells"][0]["source"]


def test_copy_of_other_code_is_not_used(tmp_path):
    source = _write(tmp_path / "nb" / "a.ipynb", SOURCE)
    older = copy.deepcopy(SOURCE)
    older["cells"][1]["source"] = "x = 2"
    older["cells"][2]["outputs"] = [_stream("2\n")]
    _write(tmp_path / "reports" / "notebooks" / "a.ipynb", older)
    notebook, page = notebook_page(source, tmp_path / "reports")
    assert (page.state, page.executed) == ("stale", None)
    assert notebook["cells"][2]["outputs"] == []
    assert "another version of its code" in notebook["cells"][0]["source"]


def test_notebook_without_title_gets_a_banner_cell(tmp_path):
    source = _write(tmp_path / "b.ipynb", _notebook(_code("1")))
    notebook, page = notebook_page(source, None)
    assert page.title == "b"
    assert notebook["cells"][0]["cell_type"] == "markdown"
    assert notebook["cells"][1]["source"] == "1"


def test_stage_lays_out_pages_and_notebooks(tmp_path):
    _write(tmp_path / "nb" / "b.ipynb", SOURCE)
    _write(tmp_path / "nb" / "a.ipynb", SOURCE)
    pages = stage(DOCS, tmp_path / "nb", None, tmp_path / "staged")
    assert [p.name for p in pages] == ["a", "b"]
    staged = tmp_path / "staged"
    assert (staged / "conf.py").read_bytes() == (DOCS / "conf.py").read_bytes()
    assert {p.name for p in DOCS.glob("*.md")} <= {p.name for p in staged.glob("*.md")}
    index = (staged / "notebooks" / "index.md").read_text(encoding="utf-8")
    assert "0 of 2 notebooks with outputs" in index
    assert index.count(NOTEBOOK_STATES["not run"]) == 2
    assert re.search(r":hidden:\n:maxdepth: 1\n\na\nb\n```", index)
    with pytest.raises(FileNotFoundError, match="conf.py"):
        stage(tmp_path / "nb", tmp_path / "nb", None, tmp_path / "other")


# --------------------------------------------------------------------------------------
# the site, built once by the command line with warnings as errors
# --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Build the site from a fake report: notebook 1 executed, notebook 2 outdated."""
    tmp = tmp_path_factory.mktemp("docs")
    sources = sorted(NOTEBOOKS.glob("*.ipynb"))
    executed = json.loads(sources[0].read_text(encoding="utf-8"))
    first_code = next(c for c in executed["cells"] if c["cell_type"] == "code")
    first_code["outputs"] = [_stream(MARKER + "\n")]
    _write(tmp / "reports" / "notebooks" / sources[0].name, executed)
    outdated = json.loads(sources[1].read_text(encoding="utf-8"))
    first_code = next(c for c in outdated["cells"] if c["cell_type"] == "code")
    first_code["source"] = "# an older version\n" + "".join(first_code["source"])
    _write(tmp / "reports" / "notebooks" / sources[1].name, outdated)

    out = tmp / "html"
    status = cli.main(["docs", "-o", str(out), "--reports", str(tmp / "reports"),
                       "--notebooks", str(NOTEBOOKS), "-W"])
    assert status == 0, "Sphinx warned or failed: see the captured stderr"
    return types.SimpleNamespace(out=out, notebooks=sources)


@pytest.mark.slow
def test_every_page_is_built(site):
    assert (site.out / "index.html").is_file()
    for page in DOCS.glob("*.md"):
        assert (site.out / f"{page.stem}.html").is_file(), page.name
    front = _text(site.out / "index.html")
    for title in ("Concepts", "API reference", "Notebooks"):
        assert title in front


def test_every_notebook_has_a_page_that_says_where_its_outputs_come_from(site):
    index = _text(site.out / "notebooks" / "index.html")
    assert f"1 of {len(site.notebooks)} notebooks with outputs" in index
    for path in site.notebooks:
        assert (site.out / "notebooks" / f"{path.stem}.html").is_file(), path.name
    executed, outdated, *others = (
        _text(site.out / "notebooks" / f"{p.stem}.html") for p in site.notebooks
    )
    assert MARKER in executed
    assert "outputs on this page are those of jitterlab reproduce" in executed
    assert "another version of its code" in outdated and MARKER not in outdated
    for page in others:
        assert "This notebook was not run for this page: there is no executed copy" in page


def _public(module) -> list[str]:
    return [name for name in module.__all__
            if not name.startswith("_") and not isinstance(getattr(module, name),
                                                           types.ModuleType)]


def test_api_reference_has_every_public_name(site):
    generated = site.out / "generated"
    api = _text(site.out / "api.html")
    for name in _public(jl):
        assert (generated / f"jitterlab.{name}.html").is_file(), f"jl.{name} not in docs/api.rst"
        assert name in api
    modules = [n for n in jl.__all__ if isinstance(getattr(jl, n), types.ModuleType)]
    assert {"apps", "estimate", "io", "bench"} <= set(modules)
    for module_name in modules:
        assert (generated / f"jitterlab.{module_name}.html").is_file(), (
            f"jl.{module_name} not in docs/api.rst")
        module = getattr(jl, module_name)
        for name in _public(module):
            page = generated / f"jitterlab.{module_name}.{name}.html"
            assert page.is_file(), f"jl.{module_name}.{name}"


def test_api_pages_carry_the_numpydoc_sections(site):
    page = (site.out / "generated" / "jitterlab.max_of_n.html").read_text(encoding="utf-8")
    assert 'id="jitterlab.max_of_n"' in page
    text = _text(site.out / "generated" / "jitterlab.max_of_n.html")
    for section in ("Parameters", "Returns", "References"):
        assert section in text
    trace = (site.out / "generated" / "jitterlab.Trace.html").read_text(encoding="utf-8")
    assert 'id="jitterlab.Trace.to_csv"' in trace  # class pages document their methods


def test_internal_links_resolve(site):
    broken = []
    pages = [p for p in site.out.rglob("*.html") if "_static" not in p.relative_to(site.out).parts]
    assert len(pages) > 100
    for page in pages:
        for target in re.findall(r'href="([^"#?]+)(?:[#?][^"]*)?"',
                                 page.read_text(encoding="utf-8")):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, mailto:, ...
                continue
            if not (page.parent / html.unescape(target)).exists():
                broken.append(f"{page.relative_to(site.out)} -> {target}")
    assert broken == []
