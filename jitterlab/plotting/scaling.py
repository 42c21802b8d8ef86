"""Plots against the number of processes: max-of-N, Theorem 1 bounds, simulated slowdown.

Every ``plot_*`` function draws on the given Axes (or a new one, :func:`axes_or_new`),
labels the axes with their units and returns the Axes. Results are stored in seconds and
drawn in microseconds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

__all__ = ["plot_max_of_n", "plot_bounds", "plot_slowdown", "log2_task_axis",
           "task_count_label"]

#: seconds to microseconds
MICROSECONDS = 1e6
#: half-width of the Monte Carlo error bars, in standard errors
ERROR_BAR_SE = 2.0
N_LABEL = "number of processes N"


def axes_or_new(ax):
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
                  band_label: str = "{label}: {low:g}–{high:g} quantile band",
                  band_step: str | None = None, **kwargs):
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
    band_step : {None, "post"}, optional
        Draw the band as a step function of N ("post": each value holds until the next
        N). Quantiles of a law with atoms (Bernoulli, a tick, a measured sample) jump
        between integer N; give a dense N grid and ``"post"`` so that the jumps are
        drawn as jumps, not as slanted wedges.
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
    if band_step not in (None, "pre", "post", "mid"):
        raise ValueError(f"band_step must be None, 'pre', 'post' or 'mid', got {band_step!r}")
    ax = axes_or_new(ax)
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
            ax.fill_between(n, low, high, color=color, alpha=0.2, linewidth=0, step=band_step,
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
    ax = axes_or_new(ax)
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


# --------------------------------------------------------------------------------------
# slowdown against the number of tasks (jitSim Fig. 7-10)
# --------------------------------------------------------------------------------------
def task_count_label(value, _position=None) -> str:
    """1, 2, ..., 512, 1K, 2K, ..., 512K, 1M, ... (binary prefixes, as jitSim's axes)."""
    value = round(value)
    for size, suffix in ((2**20, "M"), (2**10, "K")):
        if value >= size and value % size == 0:
            return f"{value // size}{suffix}"
    return f"{value}"


def log2_task_axis(ax, n_min: int, n_max: int) -> None:
    """Make the x axis of ``ax`` a log2 axis of task counts from ``n_min`` to ``n_max``.

    Major ticks at powers of two (every other one beyond 12 of them), labelled 1, 2, ...,
    512, 1K, 2K, ... as in jitSim's figures; minor ticks at the remaining powers.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        Axes to change.
    n_min, n_max : int
        Smallest and largest number of tasks shown. [-]
    """
    if not 1 <= n_min <= n_max:
        raise ValueError(f"need 1 <= n_min <= n_max, got {n_min!r} and {n_max!r}")
    ax.set_xscale("log", base=2)
    low, high = math.floor(math.log2(n_min)), math.ceil(math.log2(n_max))
    powers = 2.0 ** np.arange(low, high + 1)
    step = 1 if powers.size <= 12 else 2
    ax.xaxis.set_major_locator(FixedLocator(powers[::step]))
    ax.xaxis.set_major_formatter(FuncFormatter(task_count_label))
    ax.xaxis.set_minor_locator(FixedLocator(powers))
    ax.xaxis.set_minor_formatter(NullFormatter())


def plot_slowdown(results: Mapping[str, xr.Dataset], ax=None, percent: bool = True,
                  band: bool = True, **kwargs):
    """Plot the simulated slowdown against the number of tasks N (log2 N axis).

    Parameters
    ----------
    results : mapping of str to xarray.Dataset
        Legend label → output of :func:`jitterlab.simulate` called with a sequence of
        task counts (``slowdown`` on dim ``n``). A further dimension (for example
        ``seed``, from ``xr.concat`` of runs with different ``rng``) is summarised: the
        line is the mean over it and the band its range. [-]
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure when omitted.
    percent : bool, default True
        Draw the slowdown in percent; otherwise as a fraction. [-]
    band : bool, default True
        Shade the min–max range over the extra dimension, when there is one.
    **kwargs
        Passed to :meth:`~matplotlib.axes.Axes.plot` for every result (e.g. ``marker``,
        ``color``, ``linestyle``).

    Returns
    -------
    matplotlib.axes.Axes

    Notes
    -----
    The slowdown is (mean phase time) / (phase time without jitter) − 1 (De & Mann 2010,
    §3.4). The x axis is logarithmic in base 2 with ticks labelled 1, 2, ..., 1K, 2K, ...
    as in jitSim's Fig. 7–10.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import jitterlab as jl
    >>> from jitterlab.plotting import plot_slowdown
    >>> trace = jl.synthetic_trace(duration=10.0, rng=1)
    >>> ds = jl.simulate(trace, n=[1, 16, 256, 4096], work=1e-3, phases=10, rng=2)
    >>> ax = plot_slowdown({"synthetic, w = 1 ms": ds})
    >>> ax.get_ylabel()
    'slowdown [%]'
    """
    if not isinstance(results, Mapping) or not results:
        raise ValueError("results must be a non-empty mapping of label -> Dataset")
    ax = axes_or_new(ax)
    factor = 100.0 if percent else 1.0
    n_min, n_max = math.inf, 0
    style = {"marker": "o", "markersize": 4, **kwargs}
    for label, ds in results.items():
        if not isinstance(ds, xr.Dataset) or "slowdown" not in ds \
                or "n" not in ds["slowdown"].dims:
            raise ValueError(f"result {label!r} must be a Dataset with 'slowdown' on dim "
                             "'n' (jitterlab.simulate with a sequence of n)")
        slowdown = ds["slowdown"] * factor
        others = [d for d in slowdown.dims if d != "n"]
        n = ds["n"].values
        mean = slowdown.mean(others).transpose("n").values if others \
            else slowdown.values
        (line,) = ax.plot(n, mean, label=label, **style)
        if others and band:
            ax.fill_between(n, slowdown.min(others).transpose("n").values,
                            slowdown.max(others).transpose("n").values,
                            color=line.get_color(), alpha=0.2, linewidth=0)
        n_min, n_max = min(n_min, int(n.min())), max(n_max, int(n.max()))
    log2_task_axis(ax, n_min, n_max)
    ax.set_xlabel("number of tasks N")
    ax.set_ylabel("slowdown [%]" if percent else "slowdown [-]")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend()
    return ax
















