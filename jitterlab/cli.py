"""Command line: ``jitterlab reproduce`` and ``jitterlab --version``.

The work is done in :mod:`jitterlab.reproduce`; this module only parses arguments and prints.
Jupyter packages are imported only when a command needs them.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from . import __version__

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
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``jitterlab`` command line and return its exit status."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    return args.run(args, args.parser)


def _reproduce(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    # Before any jupyter package is imported: use the platform directories without a warning.
    os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")
    import pandas as pd

    from .reproduce import default_notebooks_dir, find_notebooks, reproduce

    _configure_logging(args.verbose)
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


def _configure_logging(verbose: bool) -> None:
    """Show the library's log records with ``-v``; otherwise the CLI's own messages suffice."""
    log = logging.getLogger("jitterlab")
    if verbose:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
    elif not log.handlers:
        log.addHandler(logging.NullHandler())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
