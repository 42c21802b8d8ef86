"""What the commands of :mod:`jitterlab.cli` share: logging, error messages, the output
options of ``measure`` and the set-up of a benchmark's parser, the MPI rank a launcher
gives, and the printing of times and tables."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

__all__ = ["configure_logging", "add_output_options", "add_keep_chunks_option",
           "finish_benchmark_parser", "launcher_rank", "quiet_unless_first_rank",
           "command_line", "print_error", "file_suffix", "format_seconds", "print_table"]

#: environment variables in which MPI launchers give the rank of a process
_RANK_VARIABLES = ("PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_RANK")


def configure_logging(verbose: bool) -> None:
    """Show the library's log records with ``-v``; otherwise the CLI's own messages suffice."""
    log = logging.getLogger("jitterlab")
    if verbose:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
    elif not log.handlers:
        log.addHandler(logging.NullHandler())


def add_output_options(parser: argparse.ArgumentParser, help_text: str, *,
                       short: bool = False) -> None:
    """Add --output FILE (described by ``help_text``; also -o with ``short``), --force and
    --no-progress to ``parser``."""
    names = ("-o", "--output") if short else ("--output",)
    parser.add_argument(*names, metavar="FILE", type=Path, required=True, help=help_text)
    parser.add_argument("--force", action="store_true",
                        help="overwrite FILE (and an earlier run's chunks) if it exists, and "
                        "run even when the run is planned to take more than an hour")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def add_keep_chunks_option(parser: argparse.ArgumentParser, chunks: str) -> None:
    """Add --keep-chunks: keep the chunk directory ``FILE<chunks>/`` after writing FILE."""
    parser.add_argument("--keep-chunks", action="store_true",
                        help=f"keep FILE{chunks}/ after writing FILE")


def finish_benchmark_parser(parser: argparse.ArgumentParser, run, chunks: str | None = None,
                            mpi: bool = False) -> None:
    """End the parser of a ``measure`` benchmark: --keep-chunks for a run stored in the
    chunk directory ``FILE<chunks>/``, with ``mpi`` the argparse errors printed by rank 0
    only, and ``run(args, parser)`` (-> exit status) as what the command does."""
    if chunks is not None:
        add_keep_chunks_option(parser, chunks)
    if mpi:
        quiet_unless_first_rank(parser)
    parser.set_defaults(run=run, parser=parser)


def launcher_rank() -> int | None:
    """The MPI rank the launcher gave this process (before MPI is initialised), or None."""
    for name in _RANK_VARIABLES:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return None


def quiet_unless_first_rank(parser: argparse.ArgumentParser) -> None:
    """Under mpiexec, let only rank 0 print argparse's usage errors (all exit with 2)."""
    if launcher_rank() not in (None, 0):
        parser.print_usage = lambda file=None: None
        parser.exit = lambda status=0, message=None: sys.exit(status)


def command_line(args: argparse.Namespace) -> str:
    """The command as typed, for the provenance of a measurement: ``jitterlab measure ...``."""
    import shlex

    return shlex.join(["jitterlab", *args.argv])


def print_error(parser: argparse.ArgumentParser, message: str, status: int = 1) -> int:
    """Print ``prog: error: message`` to stderr and return the exit status ``status``."""
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return status


def file_suffix(path: Path) -> str:
    """The extension of ``path`` after removing ``.gz``, lower case: ``.csv`` for ``x.CSV.gz``."""
    name = path.name.lower().removesuffix(".gz")
    return Path(name).suffix


def format_seconds(value: float) -> str:
    """A time with an SI prefix, 4 significant digits: ``1.461 µs``."""
    value = float(value)
    magnitude = abs(value)
    for scale, prefix in ((1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n")):
        if magnitude >= scale:
            return f"{value / scale:.4g} {prefix}s"
    return f"{value / 1e-9:.4g} ns" if value else "0 s"


def print_table(rows: list[tuple[str, str]], indent: str = "  ") -> None:
    """Print (key, value) rows as two aligned columns."""
    width = max((len(key) for key, _ in rows), default=0)
    for key, value in rows:
        print(f"{indent}{key.ljust(width)}  {value}")
