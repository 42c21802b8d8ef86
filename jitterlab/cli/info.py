"""``jitterlab info FILE``: the summary of a trace, a detour run, FWQ samples or the result of
an MPI benchmark."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from .common import format_seconds, print_error, print_table
from .measure_mpi import print_bsp_summary, print_latency_summary, print_pb_summary

__all__ = ["add_info_parser"]


def add_info_parser(commands) -> None:
    """Add ``info`` to the subcommands ``commands`` of the top parser."""
    info = commands.add_parser(
        "info",
        help="summarise a trace file, a detour run directory, an FWQ file or a Parallel "
        "Benchmark result",
        description="Print the summary statistics and the attributes of a jitter trace "
        "(any file jitterlab.read_trace reads), of a detour run directory (also an "
        "interrupted one), of FWQ samples or of a Parallel Benchmark result (its netCDF "
        "file or chunk directory: per-rank mean and p99 of the compute, barrier and "
        "iteration times).",
    )
    info.add_argument("file", metavar="FILE", type=Path)
    info.add_argument("--format", metavar="NAME", default=None,
                      help="trace format, when the extension does not tell it")
    info.set_defaults(run=_info, parser=info)


def _info(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from ..io import read_trace
    from ..io.chunks import store_kind
    from ..measure import read_bsp, read_detour, read_fwq_samples, read_pb
    from ..measure.bsp import is_bsp_file
    from ..measure.fwq import is_fwq_samples_file
    from ..measure.latency import is_latency_file, read_latency
    from ..measure.pb import is_pb_file

    # the results of the benchmarks: chunk-directory kind, file test, reader, printer
    results = ((None, is_fwq_samples_file, read_fwq_samples, _print_fwq_info),
               ("pb", is_pb_file, read_pb, _print_pb_info),
               ("latency", is_latency_file, read_latency, _print_latency_info),
               ("bsp", is_bsp_file, read_bsp, print_bsp_summary))
    path: Path = args.file
    if not path.exists():
        parser.error(f"{path} does not exist")
    try:
        is_dir = path.is_dir()
        kind = store_kind(path) if is_dir else None
        for store, is_result, read, show in results:
            if (store is not None and kind == store) if is_dir else (
                    args.format is None and is_result(path)):
                show(path, read(path))
                return 0
        if is_dir:
            if kind != "detour":
                parser.error(f"{path} is a directory but not a detour run (nor a Parallel "
                             "Benchmark or latency run)")
            trace = read_detour(path)
            kind = "detour run" + ("" if trace.attrs.get("complete") else " (incomplete)")
        else:
            trace = read_trace(path, format=args.format)
            kind = "jitter trace"
    except ValueError as exc:
        return print_error(parser, str(exc))
    _print_trace_info(path, kind, trace)
    return 0


_UNIT_LABELS = {"1/s": "/s"}


def _format_stat(value: float, unit: str) -> str:
    if unit == "s":
        return format_seconds(value)
    if unit == "1" and value != int(value):
        return f"{value:.6g} ({value:.3%})"
    if unit == "1":
        return f"{int(value)}"
    return f"{value:.6g} {_UNIT_LABELS.get(unit, unit)}"


def _print_attrs(attrs: dict) -> None:
    import json

    print("attributes:")
    print_table([(key, value if isinstance(value, str) else json.dumps(value))
                  for key, value in attrs.items()])


def _print_trace_info(path: Path, kind: str, trace) -> None:
    unit = ("seconds" if trace.unit == "s"
            else f"cycles at {trace.frequency_hz / 1e9:.6g} GHz")
    print(f"{path}: {kind}, {trace.n_events} events over {format_seconds(trace.duration)} "
          f"(stored in {unit})")
    stats = trace.stats()
    units = stats.attrs["units"]
    print("statistics:")
    print_table([(key, _format_stat(value, units[key])) for key, value in stats.items()])
    _print_attrs(trace.attrs)


def _print_fwq_info(path: Path, law) -> None:
    values = law.values
    attrs = law.attrs
    print(f"{path}: FWQ samples, {values.size} quanta of w = "
          f"{format_seconds(attrs['work']) if 'work' in attrs else '?'}")
    levels = {"p50": 0.5, "p90": 0.9, "p99": 0.99, "p999": 0.999}
    quantiles = np.quantile(values, list(levels.values()))
    mean = law.mean()
    rows = [("samples", str(values.size)), ("min", format_seconds(values[0]))]
    rows += [(name, format_seconds(q)) for name, q in zip(levels, quantiles, strict=True)]
    rows += [("max", format_seconds(values[-1])), ("mean", format_seconds(mean)),
             ("mean_noise", f"{format_seconds(mean - values[0])} (mean - min)"),
             ("noise_fraction", f"{(mean - values[0]) / mean:.3%} ((mean - min) / mean)")]
    print("statistics:")
    print_table(rows)
    _print_attrs(attrs)


def _print_pb_info(path: Path, dataset) -> None:
    print_pb_summary(path, dataset)
    histogram_total = dataset["iteration_hist"].sum("bin").values
    print(f"histograms: {dataset.sizes['bin']} bins from {format_seconds(dataset['bin_edges'][1])} "
          f"to {format_seconds(dataset['bin_edges'][-2])} (plus [0, ...) and [..., inf)); "
          f"iterations counted per rank: {', '.join(map(str, histogram_total.tolist()))}")
    _print_attrs(dataset.attrs)


def _print_latency_info(path: Path, dataset) -> None:
    print_latency_summary(path, dataset)
    _print_attrs(dataset.attrs)
