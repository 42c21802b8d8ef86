"""Plots of max-of-N results and Theorem 1 bounds (the only module that imports matplotlib).

Every function draws on the given Axes (or a new one), labels the axes with their units
and returns the Axes. Results are stored in seconds and drawn in microseconds.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr

__all__ = ["plot_max_of_n", "plot_bounds"]

#: seconds to microseconds
MICROSECONDS = 1e6
#: half-width of the Monte Carlo error bars, in standard errors
ERROR_BAR_SE = 2.0
N_LABEL = "number of processes N"


def _axes(ax):
    if ax is None:
        _, ax = plt.subplots()
    return ax


def _quantile_values(ds: xr.Dataset, variable: str, level: float, label: str) -> np.ndarray:
    levels = ds["quantile"].values
    match = np.flatnonzero(np.isclose(levels, level, rtol=0, atol=1e-12))
    if match.size == 0:
        raise ValueError(f"result {label!r} has no quantile level {level}; it has "
                         f"{levels.tolist()}")
    return ds[variable].isel(quantile=int(match[0])).values


def plot_max_of_n(results: Mapping[str, xr.Dataset], ax=None, per_work: float | None = None,
                  band: tuple[float, float] | None = None,
                  band_label: str = "{label}: {low:g}–{high:g} quantile band", **kwargs):
    """Plot E[max of N] against N on a logarithmic N axis, one line per result.

    Parameters
    ----------
    results : mapping of str to xarray.Dataset
        Legend label → output of :func:`jitterlab.max_of_n` (a Dataset with ``mean``
        on dim ``n``). [s]
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure when omitted.
    per_work : float, optional
        Work per phase w. When given, the y axis shows E[max]/w (dimensionless: the
        relative slowdown for noise-only results, one plus it for results of w + δ)
        instead of microseconds. [s]
    band : (float, float), optional
        Two quantile levels, e.g. ``(0.5, 0.99)``; for every result with a
        ``quantiles`` variable the region between them is shaded in the line's colour.
        [-]
    band_label : str
        Legend entry of each band, formatted with ``label`` (the result's key), ``low``
        and ``high`` (the two levels).
    **kwargs
        Passed to :meth:`~matplotlib.axes.Axes.plot` (or ``errorbar``) for every result,
        for example ``color="C0"`` or ``linestyle="--"``.

    Returns
    -------
    matplotlib.axes.Axes

    Notes
    -----
    A result with a ``mean_se`` variable (Monte Carlo) is drawn as markers with error
    bars of ±2 standard errors and no connecting line; the others as lines.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import jitterlab as jl
    >>> from jitterlab.plotting import plot_max_of_n
    >>> ds = jl.max_of_n(jl.noise.Exponential(mean=20e-6), n=[1, 10, 100, 1000])
    >>> ax = plot_max_of_n({"Exponential, mean 20 µs": ds})
    >>> ax.get_ylabel()
    'E[max of N] [µs]'
    """
    if not isinstance(results, Mapping) or not results:
        raise ValueError("results must be a non-empty mapping of label -> Dataset")
    if per_work is not None and not (np.isfinite(per_work) and per_work > 0):
        raise ValueError(f"per_work must be a finite time > 0 [s], got {per_work!r}")
    if band is not None and len(band) != 2:
        raise ValueError(f"band must be two quantile levels, got {band!r}")
    ax = _axes(ax)
    factor = 1.0 / per_work if per_work is not None else MICROSECONDS
    for label, ds in results.items():
        if not isinstance(ds, xr.Dataset) or "mean" not in ds or "n" not in ds.dims:
            raise ValueError(f"result {label!r} must be a Dataset with 'mean' on dim 'n' "
                             "(the output of jitterlab.max_of_n)")
        n = ds["n"].values
        mean = ds["mean"].values * factor
        if "mean_se" in ds:
            style = {"marker": "o", "linestyle": "none", "capsize": 3, "markersize": 4,
                     **kwargs}
            drawn = ax.errorbar(n, mean, yerr=ERROR_BAR_SE * ds["mean_se"].values * factor,
                                label=label, **style)
            color = drawn.lines[0].get_color()
        else:
            (line,) = ax.plot(n, mean, label=label, **kwargs)
            color = line.get_color()
        if band is not None and "quantiles" in ds:
            low = _quantile_values(ds, "quantiles", band[0], label) * factor
            high = _quantile_values(ds, "quantiles", band[1], label) * factor
            ax.fill_between(n, low, high, color=color, alpha=0.2, linewidth=0,
                            label=band_label.format(label=label, low=band[0], high=band[1]))
    ax.set_xscale("log")
    ax.set_xlabel(N_LABEL)
    ax.set_ylabel("E[max of N] / w [-]" if per_work is not None else "E[max of N] [µs]")
    ax.legend()
    return ax


def plot_bounds(ds: xr.Dataset, ax=None, measured: Mapping[str, tuple] | None = None,
                label: str = "Theorem 1", **kwargs):
    """Plot the Theorem 1 bounds on E[θ] against N, the band between them shaded.

    Parameters
    ----------
    ds : xarray.Dataset
        Output of :func:`jitterlab.theorem1_bounds` (``lower`` and ``upper`` on dim
        ``n``). [s]
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure when omitted.
    measured : mapping of str to (n, value), optional
        Measured or published points to show as markers: label → (N, E[θ]); ``n`` and
        ``value`` may be numbers or equal-length arrays. [-], [s]
    label : str
        Legend prefix of the bounds.
    **kwargs
        Passed to :meth:`~matplotlib.axes.Axes.plot` for both bound lines (e.g.
        ``color``).

    Returns
    -------
    matplotlib.axes.Axes

    Notes
    -----
    Garg & De (2006), Theorem 1: max_i(w_i + δ_i) <= θ <= max_i(w_i + δ_i) + 2τ·D.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import jitterlab as jl
    >>> from jitterlab.plotting import plot_bounds
    >>> ds = jl.theorem1_bounds(jl.noise.Exponential(mean=20e-6) + 300e-6, n=[1, 31, 1023],
    ...                         tau=5e-6)
    >>> ax = plot_bounds(ds, measured={"a measurement": (31, 400e-6)})
    >>> ax.get_ylabel()
    'E[θ] [µs]'
    """
    if not isinstance(ds, xr.Dataset) or not {"lower", "upper"} <= set(ds.data_vars):
        raise ValueError("ds must be a Dataset with 'lower' and 'upper' "
                         "(the output of jitterlab.theorem1_bounds)")
    ax = _axes(ax)
    n = ds["n"].values
    lower = ds["lower"].values * MICROSECONDS
    upper = ds["upper"].values * MICROSECONDS
    style = {"color": "C0", **kwargs}
    (low_line,) = ax.plot(n, lower, label=f"{label} lower bound: E[max(w + δ)]",
                          **{"linestyle": "-", **style})
    ax.plot(n, upper, label=f"{label} upper bound: + 2τ·D", **{"linestyle": "--", **style})
    ax.fill_between(n, lower, upper, color=low_line.get_color(), alpha=0.2, linewidth=0)
    for i, (point_label, point) in enumerate((measured or {}).items()):
        try:
            point_n, value = point
        except (TypeError, ValueError):
            raise ValueError(f"measured[{point_label!r}] must be a pair (n, value)") from None
        ax.plot(np.atleast_1d(point_n), np.atleast_1d(value) * MICROSECONDS,
                marker="os^Dv"[i % 5], linestyle="none", color=f"C{(i + 1) % 10}",
                label=point_label)
    ax.set_xscale("log")
    ax.set_xlabel(N_LABEL)
    ax.set_ylabel("E[θ] [µs]")
    ax.legend()
    return ax
