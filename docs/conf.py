"""Sphinx configuration of the jitterlab documentation site.

Build the site with ``jitterlab docs`` (:mod:`jitterlab.docs_site`), not with a bare
``sphinx-build docs``: the command first copies these pages into a staging folder together
with the notebooks (the executed copies written by ``jitterlab reproduce`` when they exist)
and a generated ``notebooks/index.md``, which ``index.md`` lists in its table of contents.
The build works offline (no intersphinx inventories, no remote assets). Reading the site needs
no network either, except for formulas written with the ``:math:`` role: Sphinx has the
browser load MathJax from its CDN on those pages, and without it they show their TeX source.
"""

from __future__ import annotations

import re
import sys
import types

from sphinx.search.en import SearchEnglish

import jitterlab

# myst-nb reads notebooks with nbformat, which imports jsonschema; jsonschema imports
# rfc3987_syntax when it is installed (a dependency of jupyter-events), and that builds 38
# Lark grammars at import: 1.8 CPU-s of a build (profiled 2026-11-26), for "iri" formats
# that no notebook schema uses. Marking the module absent makes jsonschema skip it; conf.py
# runs in the build's own process (see jitterlab.docs_site), before the extensions load.
sys.modules.setdefault("rfc3987_syntax", None)

project = "jitterlab"
author = "the jitterlab developers"
copyright = "the jitterlab developers, BSD-3-Clause"  # noqa: A001 - Sphinx's option name
release = jitterlab.__version__
version = release

extensions = [
    "myst_nb",  # Markdown pages (MyST) and notebooks; includes myst_parser
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
]

templates_path = ["_templates"]
html_static_path = ["_static"]
html_css_files = ["jitterlab.css"]
exclude_patterns = ["_build", "**/.ipynb_checkpoints", "Thumbs.db", ".DS_Store"]
root_doc = "index"

# --- pages and notebooks (myst-nb) -------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 3
# Notebooks are never run by Sphinx: the outputs are those of `jitterlab reproduce` (or none).
nb_execution_mode = "off"
# Progress bars write to stderr; keep them on the page, as in JupyterLab.
nb_output_stderr = "show"
# An ipywidgets output (a tqdm bar drawn as a widget) would need the widget JavaScript from a
# CDN; the pages show its plain-text form instead.
nb_mime_priority_overrides = [
    ("html", "application/vnd.jupyter.widget-view+json", None),
]

# --- API reference (autosummary + numpydoc) ----------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autosummary_ignore_module_all = False  # a module page lists exactly the module's __all__


def _public_constants() -> dict[str, list[str]]:
    """Names in each public module's ``__all__`` that are neither callables nor modules.

    autosummary lists only the module attributes that have a doc comment (``#:``); the module
    template takes this list instead, so that every constant of ``__all__`` gets its page.
    """
    constants = {}
    for name in jitterlab.__all__:
        module = getattr(jitterlab, name)
        if isinstance(module, types.ModuleType):
            names = [member for member in getattr(module, "__all__", [])
                     if not callable(getattr(module, member))
                     and not isinstance(getattr(module, member), types.ModuleType)]
            # the page of jl.<name> is named after the public name, the module after its home
            constants[f"jitterlab.{name}"] = constants[module.__name__] = names
    return constants


autosummary_context = {"public_constants": _public_constants()}
autodoc_typehints = "none"  # the numpydoc "Parameters" sections carry the types and units
numpydoc_show_class_members = False  # the class template lists the members itself
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

nitpicky = False

suppress_warnings = [
    # numpydoc turns each "References" section into citations with unique labels; the module
    # docstrings list their papers there without citing them in the text ([1]_), which is
    # the house style (STYLE.md), so Sphinx would call every such citation unreferenced.
    "ref.citation",
]

# Some docstrings write absolute values in prose, |r| or |Σ w_j exp(2πi f s_j)|, which
# reStructuredText reads as substitution references ("Undefined substitution referenced").
# The package defines no substitutions, so such a pair of bars in running text is escaped
# before numpydoc and docutils see it. Doctest lines, line blocks and table rows ("| ", "+-")
# are left alone, and so are inline literals and bars next to a backtick (roles).
_ABSOLUTE_VALUE = re.compile(r"(?<![\\`|])\|(?=[^\s|])([^|`\n]*?[^\s|\\])\|(?![`_|])")

_INLINE_LITERAL = re.compile(r"(``.+?``)")


def _escape_absolute_values(app, what, name, obj, options, lines):
    for i, line in enumerate(lines):
        text = line.lstrip()
        if text.startswith((">>>", "...", "| ", "+-", "+=")):
            continue
        parts = _INLINE_LITERAL.split(line)  # odd items are ``literals``: kept as they are
        parts[::2] = [_ABSOLUTE_VALUE.sub(r"\\|\1\\|", part) for part in parts[::2]]
        lines[i] = "".join(parts)


# --- HTML ---------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"jitterlab {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 4,  # the page titles are long; the rest go under "More"
    "use_edit_page_button": False,
    # no icon links, analytics or version switcher: the site must build and read offline
}
html_last_updated_fmt = None
html_show_sourcelink = True


class EnglishStemmedOnce(SearchEnglish):
    """Sphinx's English search index with each word stemmed once per build, not once per page.

    Sphinx keeps the stems of one page only, so the Porter stemmer (pure Python) ran 52 058 times
    over the 278 pages: 8.6 % of the build's CPU time (cProfile, 2026-11-26). A stem depends
    on the word alone, so the index is the same.
    """

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        self.stems: dict[str, str] = {}

    def stem(self, word: str) -> str:
        stemmed = self.stems.get(word)
        if stemmed is None:
            stemmed = self.stems[word] = super().stem(word)
        return stemmed


def setup(app):
    app.add_search_language(EnglishStemmedOnce)  # replaces "en", the site's language
    # priority below numpydoc's (500), so the docstring is escaped before numpydoc parses it
    app.connect("autodoc-process-docstring", _escape_absolute_values, priority=400)
