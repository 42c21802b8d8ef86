"""Reading back what :mod:`jitterlab.recipes.record_measurements` recorded, for the manifest.

Per kind of measurement a ``describe_<kind>(path)`` (:data:`DESCRIBE`) reads the file the
benchmark wrote and returns its attributes (the machine as the measurement recorded it),
the key numbers of the manifest entry and what was done to the file afterwards: the FWQ
files are re-encoded as integer timestamp-counter cycles with zlib
(:func:`compact_netcdf`, checked against the original before it replaces the file).
"""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path

import numpy as np


def plain(value):
    """A JSON-compatible copy of ``value``: numpy scalars to Python numbers, NaN to None,
    tuples to lists, keys to strings (recursively)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def machine_of(attrs: dict) -> dict:
    """The machine (host, CPU model, number of CPUs, kernel, OS) as the measurement itself
    recorded it in its attributes ``attrs``."""
    return {key: plain(attrs.get(key)) for key in ("host", "cpu_model", "n_cpus", "kernel",
                                                   "os")}


def _integral_cycles(values: np.ndarray, frequency: float) -> np.ndarray | None:
    """``values·frequency`` rounded, if every finite value is whole cycles; else None."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return None
    cycles = finite * frequency
    # x = cycles / f in float64: x·f is within a few ulp of an integer
    tolerance = max(1e-6, 1e-13 * float(np.max(np.abs(cycles))))
    if np.max(np.abs(cycles - np.round(cycles))) > tolerance:
        return None
    return np.round(cycles)


def compact_netcdf(path: Path, frequency: float | None) -> dict:
    """Re-encode a netCDF file in place: integer cycles where exact, zlib.

    Parameters
    ----------
    path : pathlib.Path
        The netCDF file, replaced only when its decoded values, attributes and variables
        equal the original's (to within 1 ulp).
    frequency : float or None
        The timestamp-counter rate [Hz]; variables in seconds that are whole cycles are
        stored as integer cycles with ``scale_factor = 1/frequency``.

    Returns
    -------
    dict
        ``reencoded`` (what was done, in words) and ``bytes_as_written`` (the size before).

    Raises
    ------
    RuntimeError
        If re-encoding would change a value or an attribute (the file is kept).
    """
    import xarray as xr

    original = xr.load_dataset(path)
    encoding, as_cycles = {}, []
    for name, variable in {**original.data_vars, **original.coords}.items():
        if variable.dtype.kind not in "fiub" or variable.ndim == 0:
            continue
        spec = {"zlib": True, "complevel": 9, "shuffle": True}
        values = variable.values
        if (variable.dtype.kind == "f" and frequency
                and variable.attrs.get("units") == "s"):
            cycles = _integral_cycles(values, frequency)
            if cycles is not None:
                dtype = "int32" if cycles.max() < 2**31 - 1 else "int64"
                spec.update(dtype=dtype, scale_factor=np.float64(1.0 / frequency),
                            _FillValue=(np.int32(-1) if dtype == "int32" else np.int64(-1))
                            if np.isnan(values).any() else None)
                as_cycles.append(name)
            else:
                spec["_FillValue"] = None
        elif variable.dtype.kind == "f":
            spec["_FillValue"] = None
        encoding[name] = spec
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(handle)
    try:
        with warnings.catch_warnings():
            # integer storage without a fill value is intended (no NaN in those variables)
            warnings.filterwarnings("ignore", "saving variable .* as an integer dtype",
                                    category=xr.SerializationWarning)
            original.to_netcdf(temp, encoding=encoding)
        check = xr.load_dataset(temp)
        for name, variable in {**original.data_vars, **original.coords}.items():
            a, b = variable.values, check[name].values
            if a.dtype.kind == "f":
                same = np.allclose(a, b, rtol=1e-14, atol=0.0, equal_nan=True)
            else:
                same = np.array_equal(a, b)
            if not same or variable.attrs != check[name].attrs:
                raise RuntimeError(f"{path.name}: re-encoding changed {name!r}; keeping the "
                                   "file as the benchmark wrote it")
        if check.attrs != original.attrs:
            raise RuntimeError(f"{path.name}: re-encoding changed the attributes")
        before = path.stat().st_size
        os.chmod(temp, 0o644)
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise
    return {"reencoded": "netCDF4 with zlib (level 9, shuffle)"
            + (f"; {', '.join(as_cycles)} stored as integer timestamp-counter cycles with "
               "scale_factor = 1/frequency_hz (decoded values equal the originals to "
               "within 1 ulp)" if as_cycles else ""),
            "bytes_as_written": before}


def describe_detour(path: Path) -> dict:
    """Attributes, key numbers and post-processing of a detour trace (Parquet)."""
    import jitterlab as jl

    trace = jl.read_trace(path)
    attrs = trace.attrs
    stats = trace.stats()
    summary = {
        "events": int(attrs.get("events_detected", trace.n_events)),
        "measured_duration": attrs.get("measured_duration"),
        "event_rate": float(stats["event_rate"]),
        "noise_fraction": float(stats["noise_fraction"]),
        "frequency_hz": trace.frequency_hz, "t_min": attrs.get("t_min"),
        "median_loop_time": attrs.get("median_loop_time"),
        "mean_loop_time": attrs.get("mean_loop_time"),
        "threshold_used": attrs.get("threshold"),
        "default_threshold": None,
    }
    if attrs.get("t_min") is not None and attrs.get("median_loop_time") is not None:
        from jitterlab.measure.detour import THRESHOLD_MEDIAN_FACTOR, THRESHOLD_TMIN_FACTOR

        frequency = trace.frequency_hz
        cycles = np.ceil(max(THRESHOLD_TMIN_FACTOR * attrs["t_min"] * frequency,
                             THRESHOLD_MEDIAN_FACTOR * attrs["median_loop_time"] * frequency)
                         - 1e-9)
        summary["default_threshold"] = float(cycles / frequency)
    return {"attrs": attrs, "summary": plain(summary), "postprocess": None}


def describe_fwq(path: Path) -> dict:
    """Attributes, key numbers and post-processing of FWQ samples (netCDF), re-encoded
    by :func:`compact_netcdf`."""
    import jitterlab as jl

    before = jl.measure.read_fwq_samples(path)
    post = compact_netcdf(path, before.attrs.get("frequency_hz"))
    law = jl.measure.read_fwq_samples(path)
    if not np.allclose(law.sequence, before.sequence, rtol=1e-14, atol=0.0):
        raise RuntimeError(f"{path.name}: samples changed when re-encoded")
    values = law.values
    summary = {"samples": int(values.size), "min": float(values[0]),
               "median": float(np.median(values)), "mean": float(law.mean()),
               "p99": float(np.quantile(values, 0.99)), "max": float(values[-1]),
               "iterations": law.attrs.get("iterations"),
               "frequency_hz": law.attrs.get("frequency_hz")}
    return {"attrs": law.attrs, "summary": plain(summary), "postprocess": post}


def describe_pb(path: Path) -> dict:
    """Attributes, key numbers and post-processing of a Parallel Benchmark run (netCDF)."""
    import jitterlab as jl

    # stored as the benchmark wrote it: each rank converts cycles with its own counter
    # rate, so integer re-encoding with one scale factor would not be exact
    ds = jl.measure.read_pb(path)
    summary = {"ranks": int(ds.sizes["rank"]), "samples_per_rank": int(ds.sizes["sample"]),
               "iterations": plain(ds.attrs.get("iterations")),
               "mean_compute": plain(ds["compute"].mean("sample").values.tolist()),
               "mean_iteration": plain(ds["iteration"].mean("sample").values.tolist()),
               "nodes": plain(sorted({str(v) for v in ds["node"].values.tolist()}))
               if "node" in ds.coords else None,
               "random_wait": plain(ds.attrs.get("random_wait")),
               "broadcast": plain(ds.attrs.get("broadcast")),
               "oversubscribed": plain(ds.attrs.get("oversubscribed"))}
    attrs = dict(ds.attrs)
    if "host" in ds.coords and "host" not in attrs:
        attrs["host"] = ", ".join(sorted({str(h) for h in ds["host"].values.tolist()}))
    attrs.setdefault("n_cpus", os.cpu_count())  # of the host rank 0 ran on (this one)
    return {"attrs": attrs, "summary": plain(summary), "postprocess": None}


def describe_latency(path: Path) -> dict:
    """Attributes, key numbers and post-processing of a latency run (netCDF)."""
    from jitterlab.measure.latency import read_latency, summarize_latency

    # stored as the benchmark wrote it (each rank converts with its own counter rate)
    ds = read_latency(path)
    summary = summarize_latency(ds)
    numbers = {name: float(summary[name]) for name in (
        "tau", "tau_se", "tau_mean", "tau_mean_se", "barrier_time", "barrier_time_se",
        "barrier_mean", "barrier_mean_se")}
    numbers.update(ranks=int(ds.sizes["rank"]), pairs=int(ds.sizes["pair"]),
                   round_trips=int(ds.sizes["exchange"]), barriers=int(ds.sizes["sample"]),
                   oversubscribed=bool(ds.attrs.get("oversubscribed")))
    attrs = dict(ds.attrs)
    if "host" not in attrs:
        attrs["host"] = ", ".join(sorted({str(h) for h in ds["host"].values.tolist()}))
    return {"attrs": attrs, "summary": plain(numbers), "postprocess": None}


def describe_bsp(path: Path) -> dict:
    """Attributes, key numbers and post-processing of a BSP run with its event trace and
    interruptions (netCDF)."""
    import jitterlab as jl

    # stored as the benchmark wrote it: counter cycles, converted with rank 0's rate
    events = jl.measure.read_bsp(path)
    interruptions = jl.measure.read_bsp_interruptions(path)
    estimate = jl.estimate.accumulated_noise(events)
    data = events.data
    compute = data[data["kind"] == "compute"].groupby("rank")
    collective = data[data["kind"] == "collective"].groupby("rank")
    attrs = events.attrs
    summary = {
        "ranks": int(events.n_ranks), "phases": int(attrs["phases_done"]),
        "work": attrs["work"], "poll": bool(attrs["poll"]),
        "injector": bool(attrs["injector"]), "chunks": int(attrs["chunks"]),
        "measured_duration": attrs["measured_duration"],
        "makespan": float(estimate["makespan"]),
        "noise_injected_per_rank": compute["noise_injected"].sum().tolist(),
        "noise_other_per_rank": compute["noise_other"].sum().tolist(),
        "collective_noise_per_rank": collective["noise_other"].sum().tolist(),
        "injected_detours": attrs["injected_detours"],
        "injector_dropped": attrs["injector_dropped"],
        "interruption_records": interruptions.groupby("kind", observed=False).size()
        .to_dict(),
        "interruptions_lost": attrs["interruptions_lost"],
        "run_accumulated": {str(source): float(estimate["run_accumulated"].sel(
            source=source)) for source in estimate["source"].values},
        "threshold": attrs["threshold"], "wait_threshold": attrs.get("wait_threshold"),
    }
    machine = dict(attrs)
    # the run's attributes name the host of every rank (all on one host)
    machine["host"] = ", ".join(sorted({str(host) for host in attrs["host"]}))
    machine.setdefault("n_cpus", os.cpu_count())
    return {"attrs": machine, "summary": plain(summary), "postprocess": None}


DESCRIBE = {"detour": describe_detour, "fwq": describe_fwq, "pb": describe_pb,
            "latency": describe_latency, "bsp": describe_bsp}

