"""Plots draw the expected artists, in microseconds, with labelled axes."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import xarray as xr  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.container import ErrorbarContainer  # noqa: E402

import jitterlab as jl  # noqa: E402
from jitterlab.plotting import plot_bounds, plot_max_of_n  # noqa: E402

N = [1, 10, 100, 1000]
NOISE = jl.noise.Exponential(mean=20e-6)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def exact():
    return jl.max_of_n(NOISE, n=N, quantiles=(0.5, 0.99))


@pytest.fixture(scope="module")
def montecarlo():
    return jl.max_of_n(NOISE, n=N, method="montecarlo", replicates=200, rng=3)


def test_max_of_n_lines_in_microseconds(exact):
    ax = plot_max_of_n({"exact": exact, "other": exact * 2})
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == ["exact", "other"]
    np.testing.assert_allclose(lines[0].get_xdata(), N)
    np.testing.assert_allclose(lines[0].get_ydata(), exact["mean"].values * 1e6)
    assert ax.get_xscale() == "log"
    assert "N" in ax.get_xlabel()
    assert ax.get_ylabel() == "E[max of N] [µs]"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["exact", "other"]


def test_max_of_n_error_bars_are_two_standard_errors(montecarlo):
    ax = plot_max_of_n({"Monte Carlo": montecarlo})
    (container,) = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert container.get_label() == "Monte Carlo"
    marker_line = container.lines[0]
    np.testing.assert_allclose(marker_line.get_ydata(), montecarlo["mean"].values * 1e6)
    segments = container.lines[2][0].get_segments()
    half_widths = np.array([abs(s[1, 1] - s[0, 1]) / 2 for s in segments])
    np.testing.assert_allclose(half_widths, 2 * montecarlo["mean_se"].values * 1e6, rtol=1e-12)


def test_max_of_n_quantile_band(exact):
    ax = plot_max_of_n({"exact": exact}, band=(0.5, 0.99))
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 1
    vertices = bands[0].get_paths()[0].vertices[:, 1]
    assert vertices.max() == pytest.approx(exact["quantiles"].values.max() * 1e6)
    assert bands[0].get_label() == "exact: 0.5–0.99 quantile band"
    ax = plot_max_of_n({"exact": exact}, band=(0.5, 0.99), band_label="{low:g} to {high:g}")
    assert [c for c in ax.collections if isinstance(c, PolyCollection)][0].get_label() \
        == "0.5 to 0.99"
    with pytest.raises(ValueError, match="quantile level 0.9"):
        plot_max_of_n({"exact": exact}, band=(0.5, 0.9))


def test_max_of_n_per_work_is_dimensionless(exact):
    ax = plot_max_of_n({"exact": exact}, per_work=1e-3)
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), exact["mean"].values / 1e-3)
    assert ax.get_ylabel() == "E[max of N] / w [-]"
    with pytest.raises(ValueError, match="per_work"):
        plot_max_of_n({"exact": exact}, per_work=0.0)


def test_max_of_n_draws_on_given_axes_and_forwards_style(exact):
    fig, ax = plt.subplots()
    out = plot_max_of_n({"exact": exact}, ax=ax, color="C3", linestyle="--")
    assert out is ax
    line = ax.get_lines()[0]
    assert line.get_linestyle() == "--"
    assert matplotlib.colors.same_color(line.get_color(), "C3")


@pytest.mark.parametrize("results", [{}, [], {"x": xr.Dataset()}, {"x": 3.0}])
def test_max_of_n_bad_input(results):
    with pytest.raises(ValueError, match="results|result 'x'"):
        plot_max_of_n(results)


def test_bounds_band_and_measured_points():
    ds = jl.theorem1_bounds(NOISE + 300e-6, n=[1, 3, 31, 1023], tau=5e-6)
    ax = plot_bounds(ds, measured={"paper": (31, 400e-6), "runs": ([3, 31], [350e-6, 390e-6])})
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels[2:] == ["paper", "runs"]
    lower, upper = ax.get_lines()[:2]
    np.testing.assert_allclose(lower.get_ydata(), ds["lower"].values * 1e6)
    np.testing.assert_allclose(upper.get_ydata(), ds["upper"].values * 1e6)
    np.testing.assert_allclose(upper.get_ydata() - lower.get_ydata(),
                               [0.0, 10.0, 40.0, 90.0])  # 2·5 µs·D with D = 0, 1, 4, 9
    np.testing.assert_allclose(ax.get_lines()[3].get_ydata(), [350.0, 390.0])
    assert len([c for c in ax.collections if isinstance(c, PolyCollection)]) == 1
    assert ax.get_xscale() == "log"
    assert ax.get_ylabel() == "E[θ] [µs]"
    assert len(ax.get_legend().get_texts()) == 4


def test_bounds_bad_input():
    with pytest.raises(ValueError, match="lower"):
        plot_bounds(jl.max_of_n(NOISE, n=[1, 2]))
    ds = jl.theorem1_bounds(NOISE, n=[1, 2], tau=1e-6)
    with pytest.raises(ValueError, match="pair"):
        plot_bounds(ds, measured={"bad": 3.0})
