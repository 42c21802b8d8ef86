"""Command line: ``jitterlab reproduce``, ``jitterlab measure``, ``jitterlab info``,
``jitterlab docs`` and ``jitterlab --version``.

The work is done in :mod:`jitterlab.reproduce` and :mod:`jitterlab.measure`; this package only
parses arguments and prints. Jupyter packages are imported only when a command needs them.
Here are the top parser and the small commands (reproduce, stationarity, docs); ``measure``
is in :mod:`jitterlab.cli.measure` (its MPI benchmarks in :mod:`jitterlab.cli.measure_mpi`),
``info`` in :mod:`jitterlab.cli.info`, and what they share in :mod:`jitterlab.cli.common`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .. import __version__
from .common import configure_logging
from .info import add_info_parser
from .measure import add_measure_parsers, check_planned_duration

__all__ = ["main"]


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jitterlab",
        description="Predict and measure the slowdown that operating-system noise causes "
        "in bulk-synchronous parallel programs.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    rep = commands.add_parser(
        "reproduce",
        help="run every notebook headless and write executed notebooks, figures and a summary",
        description="Run every notebooks/*.ipynb (sorted by name) in a fresh python3 kernel, "
        "from the notebook's own folder, and write the executed notebooks, their HTML export, "
        "their PNG figures and a summary (index.html, summary.md) to the output folder. "
        "Exits with status 1 if any notebook failed.",
    )
    rep.add_argument(
        "--notebooks",
        metavar="DIR",
        type=Path,
        default=None,
        help="folder of notebooks (default: ./notebooks, else the notebooks/ folder of the "
        "source checkout)",
    )
    rep.add_argument(
        "--output",
        metavar="DIR",
        type=Path,
        default=Path("reports"),
        help="report folder (default: ./reports)",
    )
    rep.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=float,
        default=600.0,
        help="longest time one cell may run (default: 600)",
    )
    rep.add_argument(
        "--only",
        metavar="PATTERN",
        default=None,
        help="run only notebooks whose name matches this shell pattern (e.g. 'fig*'); "
        "a plain word selects names containing it",
    )
    rep.add_argument("-v", "--verbose", action="store_true", help="log each notebook")
    rep.set_defaults(run=_reproduce, parser=rep)

    add_measure_parsers(commands)
    add_info_parser(commands)
    _add_stationarity_parser(commands)
    _add_docs_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``jitterlab`` command line and return its exit status."""
    parser = _build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    args.argv = argv
    if args.command == "measure":
        check_planned_duration(args)
    return args.run(args, args.parser)


def _reproduce(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    # Before any jupyter package is imported: use the platform directories without a warning.
    os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")
    import pandas as pd

    from ..reproduce import default_notebooks_dir, find_notebooks, reproduce

    configure_logging(args.verbose)
    if args.timeout <= 0:
        parser.error("--timeout must be positive")
    notebooks_dir = args.notebooks if args.notebooks is not None else default_notebooks_dir()
    try:
        paths = find_notebooks(notebooks_dir, args.only)
    except FileNotFoundError as exc:
        parser.error(str(exc))
    if not paths:
        wanted = f" matching {args.only!r}" if args.only else ""
        parser.error(f"no notebooks{wanted} in {notebooks_dir}")

    print(f"Running {_count(len(paths))} from {notebooks_dir} into {args.output}")
    results = reproduce(notebooks_dir, args.output, timeout=args.timeout, pattern=args.only)

    failed = results[results["status"] != "ok"]
    for row in failed.itertuples():
        where = "" if pd.isna(row.cell) else f", cell {row.cell}"
        print(f"\nFAILED: {row.source}{where}", file=sys.stderr)
        for line in row.error.splitlines():
            print(f"    {line}", file=sys.stderr)

    print(
        f"\n{_count(len(results))}: {len(results) - len(failed)} ok, {len(failed)} FAILED. "
        f"Report: {args.output / 'index.html'}"
    )
    return 1 if len(failed) else 0


def _count(n: int) -> str:
    return f"{n} notebook" if n == 1 else f"{n} notebooks"


# --------------------------------------------------------------------------------------
# jitterlab stationarity [FILE ...]
# --------------------------------------------------------------------------------------
def _add_stationarity_parser(commands) -> None:
    check = commands.add_parser(
        "stationarity",
        help="test whether the shipped recordings' noise stays the same over each recording",
        description="Run jl.characterize.stationarity on the recordings shipped in "
        "data/measured/ (or the files named): detour rate and size per window, their "
        "p-values, change points and a verdict per recording; printed, or written as CSV.",
    )
    check.add_argument("files", nargs="*", metavar="FILE",
                       help="files of data/measured/ (default: every one)")
    check.add_argument("-o", "--output", metavar="CSV", type=Path, default=None,
                       help="write the table here instead of printing it")
    check.set_defaults(run=_stationarity, parser=check)


def _stationarity(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from ..recording_checks import report_recordings

    if args.output is not None and args.output.exists():
        parser.error(f"{args.output} exists; remove it first (nothing is overwritten)")
    try:
        report_recordings(args.files or None, args.output)
    except (KeyError, FileNotFoundError, ValueError) as exc:
        parser.error(str(exc))
    return 0


# --------------------------------------------------------------------------------------
# jitterlab docs
# --------------------------------------------------------------------------------------
def _add_docs_parser(commands) -> None:
    docs = commands.add_parser(
        "docs",
        help="build the documentation site (HTML) from docs/, the docstrings and the notebooks",
        description="Build the HTML documentation site with Sphinx: the pages of docs/, an API "
        "reference from the docstrings and one page per notebook. Notebooks are not run: a "
        "notebook is shown with the outputs of its executed copy from `jitterlab reproduce` "
        "(REPORTS/notebooks/NAME.ipynb) when that copy has the notebook's current code, and as "
        "committed otherwise, with a note on its page. Needs the docs extra "
        "(pip install 'jitterlab[docs]').",
    )
    docs.add_argument("-o", "--output", metavar="DIR", type=Path, default=None,
                      help="folder of the HTML site (default: docs/_build/html)")
    docs.add_argument("--open", action="store_true",
                      help="open the front page in a web browser when the build is done")
    docs.add_argument("--reports", metavar="DIR", type=Path, default=Path("reports"),
                      help="output folder of `jitterlab reproduce` (default: ./reports)")
    docs.add_argument("--notebooks", metavar="DIR", type=Path, default=None,
                      help="folder of notebooks (default: as for `jitterlab reproduce`)")
    docs.add_argument("-W", "--warnings-as-errors", action="store_true",
                      help="fail on any Sphinx warning, as the tests do")
    docs.add_argument("-v", "--verbose", action="store_true",
                      help="print Sphinx's progress, not only its warnings")
    docs.set_defaults(run=_docs, parser=docs)


def _docs(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from ..docs_site import DocsBuildError, build

    try:
        site = build(args.output, notebooks_dir=args.notebooks, reports_dir=args.reports,
                     warnings_as_errors=args.warnings_as_errors, verbose=args.verbose)
    except ImportError as exc:
        print(f"jitterlab docs: {exc}", file=sys.stderr)
        return 1
    except FileNotFoundError as exc:
        parser.error(str(exc))
    except DocsBuildError as exc:
        print(exc, file=sys.stderr)
        return 1
    if site.log.strip():
        print(site.log.rstrip(), file=sys.stderr)
    shown = sum(page.state in ("executed", "failed") for page in site.notebooks)
    print(f"Site written to {site.index} in {site.seconds:.0f} s; {shown} of "
          f"{_count(len(site.notebooks))} with outputs from {args.reports}.")
    if args.open:
        import webbrowser

        webbrowser.open(site.index.resolve().as_uri())
    return 0
