"""jl.explore: its numbers come from max_of_n, theorem1_bounds and simulate; the widget reacts."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from numpy.testing import assert_allclose, assert_array_equal  # noqa: E402
from scipy import stats  # noqa: E402

import jitterlab as jl  # noqa: E402
from jitterlab.explore import (  # noqa: E402
    BARRIERS,
    explore_values,
    law_trace,
    make_barrier,
    plot_explore,
)

WORK = 1e-3
SMALL = {"n_max": 1024, "simulated_n_max": 256, "runs": 3, "phases": 4, "events": 4096}


@pytest.fixture(scope="module")
def trace():
    return jl.synthetic_trace(duration=2.0, rng=5)


def direct_simulation(trace, ds, barrier):
    """Mean phase time and its standard error from jl.simulate, run by hand with the seeds."""
    n = ds["n"].values[ds["simulated"].values]
    per_run = np.array([jl.simulate(trace, n, ds.attrs["work"], phases=ds.attrs["phases"],
                                    barrier=barrier, rng=seed)["phase_time"].mean("phase").values
                        for seed in ds.attrs["run_seeds"]])
    return n, per_run.mean(axis=0), per_run.std(axis=0, ddof=1) / np.sqrt(per_run.shape[0])


@pytest.mark.parametrize("kind", BARRIERS)
def test_trace_values_are_the_direct_calls(trace, kind):
    ds = explore_values(trace, work=WORK, barrier=kind, latency=4e-6, overhead=0.5e-6,
                        rng=11, **{k: v for k, v in SMALL.items() if k != "events"})
    barrier = make_barrier(kind, latency=4e-6, overhead=0.5e-6)
    law = jl.noise.from_trace(trace, WORK) + WORK
    n = ds["n"].values
    assert_array_equal(ds["max_of_n"], jl.max_of_n(law, n=n)["mean"])
    bounds = jl.theorem1_bounds(law, n=n, barrier=barrier)
    assert_array_equal(ds["lower"], bounds["lower"])
    assert_array_equal(ds["upper"], bounds["upper"])
    simulated_n, mean, se = direct_simulation(trace, ds, barrier)
    assert_array_equal(ds["simulation"].sel(n=simulated_n), mean)
    assert_allclose(ds["simulation_se"].sel(n=simulated_n), se, rtol=1e-12)
    assert np.isnan(ds["simulation"].where(~ds["simulated"], drop=True)).all()
    if kind == "none":
        assert_array_equal(ds["upper"], ds["lower"])
        assert np.isnan(ds.attrs["tau"])
    else:
        assert (ds["upper"].sel(n=1) == ds["lower"].sel(n=1)).all()  # one process: no hop
        assert (ds["upper"].sel(n=slice(2, None)) > ds["lower"].sel(n=slice(2, None))).all()


def test_law_values_are_the_direct_calls():
    noise = jl.noise.Pareto(alpha=2.5, scale=3e-6)
    ds = explore_values(noise, work=WORK, barrier="TreeBarrier", latency=5e-6, overhead=1e-6,
                        rng=3, **SMALL)
    barrier = make_barrier("TreeBarrier", latency=5e-6, overhead=1e-6)
    assert ds.attrs["tau"] == pytest.approx(8e-6, rel=1e-12)  # L + 1.5 (s + r)
    n = ds["n"].values
    assert_array_equal(ds["max_of_n"], jl.max_of_n(noise + WORK, n=n)["mean"])
    assert_array_equal(ds["upper"],
                       jl.theorem1_bounds(noise + WORK, n=n, tau=barrier.tau)["upper"])
    replayed = law_trace(noise, WORK, SMALL["events"], rng=ds.attrs["trace_seed"])
    simulated_n, mean, _ = direct_simulation(replayed, ds, barrier)
    assert_array_equal(ds["simulation"].sel(n=simulated_n), mean)


def test_grid_and_simulated_counts():
    ds = explore_values(jl.noise.Exponential(mean=1e-6), n_max=1000, simulated_n_max=100,
                        runs=2, phases=1, events=512, barrier="none")
    assert ds["n"].values.tolist() == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000]
    # every other N up to the cap, counted down from the largest one below it
    assert ds["n"].values[ds["simulated"].values].tolist() == [1, 4, 16, 64]
    assert ds.attrs["simulated_n_max"] == 64


def test_seeds_derive_from_rng_only():
    kwargs = dict(n_max=64, simulated_n_max=64, runs=2, phases=2, events=256)
    first = explore_values(jl.noise.Exponential(mean=1e-5), rng=4, **kwargs)
    again = explore_values(jl.noise.Exponential(mean=1e-5), rng=4, **kwargs)
    other = explore_values(jl.noise.Exponential(mean=1e-5), rng=5, **kwargs)
    assert_array_equal(first["simulation"], again["simulation"])
    assert first.attrs["run_seeds"] == again.attrs["run_seeds"]
    assert first.attrs["run_seeds"] != other.attrs["run_seeds"]
    assert len(set(first.attrs["run_seeds"]) | {first.attrs["trace_seed"]}) == 3


def test_simulation_agrees_with_max_of_n_of_its_trace():
    """Detours much shorter than w: the ideal-barrier walk through the trace is max-of-N of
    the trace's own law (notebook 05, section (a)), within the runs' sampling error. With
    16 runs the mean over runs is t-distributed with 15 degrees of freedom; the bound is
    its two-sided 0.1 % level split over the 7 simulated N (Bonferroni)."""
    noise = jl.noise.Exponential(mean=10e-6)
    ds = explore_values(noise, n_max=4096, work=WORK, barrier="none", runs=16, rng=2026)
    simulated = ds.sel(n=ds["simulated"])
    replayed = law_trace(noise, WORK, rng=ds.attrs["trace_seed"])
    own = jl.max_of_n(jl.noise.from_trace(replayed, WORK) + WORK, n=simulated["n"].values)
    z = (simulated["simulation"] - own["mean"]) / simulated["simulation_se"]
    assert simulated.sizes["n"] == 7
    assert (np.abs(z) < stats.t.ppf(1 - 0.001 / (2 * 7), df=15)).all(), z.values


def test_periodic_law_is_replayed_as_its_source():
    tick = jl.noise.Periodic(period=4e-3, duration=2.5e-6, work=WORK)
    trace = law_trace(tick, WORK)
    assert trace.jitter_seconds.tolist() == [2.5e-6]
    assert trace.gap_seconds[0] == pytest.approx(4e-3 - 2.5e-6, rel=1e-12)
    # at another work the law is rebuilt from the source, not the law's own work
    ds = explore_values(tick, work=2 * WORK, n_max=16, simulated_n_max=16, runs=2, phases=2,
                        barrier="none")
    expected = jl.noise.Periodic(period=4e-3, duration=2.5e-6, work=2 * WORK) + 2 * WORK
    assert_allclose(ds["max_of_n"], jl.max_of_n(expected, n=ds["n"].values)["mean"],
                    rtol=1e-12)


def test_law_trace_rows_are_draws_of_the_law():
    noise = jl.noise.Uniform(high=20e-6)
    trace = law_trace(noise, 2e-3, events=100, rng=9)
    assert_array_equal(trace.jitter_seconds, noise.sample(100, rng=9))
    assert_array_equal(trace.gap_seconds, np.full(100, 2e-3))


def test_make_barrier():
    assert make_barrier("none", 1e-6, 1e-6) is None
    tree = make_barrier("TreeBarrier", latency=5e-6, overhead=1e-6)
    assert isinstance(tree, jl.TreeBarrier) and tree.fanout == 2
    dissemination = make_barrier("Dissemination", latency=5e-6, overhead=1e-6)
    assert isinstance(dissemination, jl.Dissemination)
    assert dissemination.hop() == pytest.approx(7e-6, rel=1e-12)
    assert isinstance(make_barrier("RecursiveDoubling"), jl.RecursiveDoubling)


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"noise": "exponential"}, TypeError, "noise must be"),
    ({"noise": [1e-6]}, TypeError, "noise must be"),
    ({"barrier": "tree"}, ValueError, "barrier must be one of"),
    ({"work": 0.0}, ValueError, "work"),
    ({"work": "1ms"}, TypeError, "work"),
    ({"n_max": 0}, ValueError, "n_max"),
    ({"runs": 1}, ValueError, "runs"),
    ({"phases": 0}, ValueError, "phases"),
    ({"latency": -1e-6}, ValueError, "latency"),
    ({"overhead": float("nan")}, ValueError, "send"),
    ({"rng": -1}, TypeError, "rng"),
    ({"rng": 1.5}, TypeError, "rng"),
])
def test_bad_input_errors(kwargs, error, match):
    arguments = {"noise": jl.noise.Exponential(mean=1e-6), "n_max": 8, "simulated_n_max": 8,
                 "runs": 2, "phases": 1, "events": 64, **kwargs}
    with pytest.raises(error, match=match):
        explore_values(**arguments)


def test_law_trace_refuses_infinite_noise():
    with pytest.raises(TypeError, match="noise must be"):
        law_trace(1e-6, WORK)
    with pytest.raises(ValueError, match="work"):
        law_trace(jl.noise.Exponential(mean=1e-6), -1.0)


def test_figure_shows_the_three_methods(trace):
    ds = explore_values(trace, barrier="TreeBarrier", **{k: v for k, v in SMALL.items()
                                                         if k != "events"})
    ax = plot_explore(ds)
    labels = [text.get_text() for text in ax.get_legend().get_texts()]
    assert any(label.startswith("max-of-N") for label in labels)
    assert any(label.startswith("Theorem 1 band") for label in labels)
    assert any(f"N ≤ {ds.attrs['simulated_n_max']}" in label and "±2 SE" in label
               for label in labels)
    assert ax.get_ylabel() == "E[θ] − w [µs]"
    upper = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    assert_allclose(upper[0].get_ydata(), (ds["upper"].values - ds.attrs["work"]) * 1e6)


def test_kept_results_are_the_fresh_ones_and_stay_unchanged():
    """A redraw reuses the bounds and runs of the same law object (#20): the numbers are
    those of an equal law computed afresh, and changing a returned array in place does
    not change the next result."""
    law = jl.noise.Exponential(mean=1e-5)
    kwargs = dict(n_max=256, simulated_n_max=64, runs=2, phases=2, events=512, rng=7)
    first = explore_values(law, **kwargs)
    first["simulation"].values[:] = 0.0
    first["max_of_n"].values[:] = 0.0
    first["upper"].values[:] = 0.0
    again = explore_values(law, **kwargs)
    fresh = explore_values(jl.noise.Exponential(mean=1e-5), **kwargs)
    for name in ("max_of_n", "lower", "upper", "simulation", "simulation_se"):
        assert_array_equal(again[name], fresh[name])
    wider = explore_values(law, **{**kwargs, "n_max": 1024})  # the same runs, more N
    assert_array_equal(wider["simulation"].sel(n=wider["simulated"]),
                       fresh["simulation"].sel(n=fresh["simulated"]))


def decoded(png: bytes) -> np.ndarray:
    import io

    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))


def test_redrawn_png_is_a_new_figure_to_the_pixel(trace):
    """The widget's PNG comes from one kept figure at 90 dpi, its text painted from layers
    kept from earlier redraws (#20); each redraw must be what a new figure saved at that
    resolution shows, whatever the previous redraws were: the same to the pixel outside
    the kept artists and the legend, and within 2 of 255 levels inside them (their pixels
    are blended once more, from 8-bit layers: half a level from the layer's colour, half
    from its opacity, half from the rounding; one more from Agg's own rounding)."""
    import io

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from jitterlab.plotting.explorer import PNG_DPI, explorer_png, kept_artists, new_axes

    small = {k: v for k, v in SMALL.items() if k != "events"}
    changes = [dict(noise=jl.noise.Exponential(mean=1e-5)),
               dict(noise=jl.noise.Exponential(mean=5e-5), n_max=2**14, work=1e-4),
               dict(noise=jl.noise.Pareto(alpha=1.8, scale=5e-6), barrier="none"),
               dict(noise=trace, barrier="Dissemination", latency=2e-5),
               dict(noise=jl.noise.Exponential(mean=1e-5), n_max=64, work=1e-2),
               dict(noise=jl.noise.Exponential(mean=1e-5))]
    for change in changes:
        ds = explore_values(**{**small, **change, "n_max": change.get("n_max", 1024)})
        ax = plot_explore(ds, ax=new_axes(dpi=PNG_DPI))
        canvas = FigureCanvasAgg(ax.figure)
        saved = io.BytesIO()
        ax.figure.savefig(saved, format="png", dpi=PNG_DPI)
        expected, got = decoded(saved.getvalue()), decoded(explorer_png(ds))
        assert got.shape == expected.shape
        difference = np.abs(got.astype(int) - expected).max(axis=2)
        assert difference.max() <= 2
        renderer = canvas.get_renderer()
        outside = np.ones(difference.shape, dtype=bool)
        height = difference.shape[0]
        for artist in [*kept_artists(ax), ax.get_legend()]:
            box = artist.get_tightbbox(renderer)  # [pixels from the bottom left]
            # two pixels more on each side: the frame's edge line and antialiasing
            outside[max(height - int(np.ceil(box.y1)) - 2, 0):height - int(box.y0) + 2,
                    max(int(box.x0) - 2, 0):int(np.ceil(box.x1)) + 2] = False
        assert outside.sum() > difference.size // 2
        rows, columns = np.nonzero(difference * outside)
        assert rows.size == 0, (change, "pixels changed outside the kept artists",
                                rows[:10], columns[:10])


def test_kept_layer_paints_its_pixels_over_an_image():
    """A kept layer paints opaque pixels as they are, leaves transparent ones alone and
    blends the others by their opacity (straight alpha, as Agg draws)."""
    from jitterlab.plotting.explorer import KeptLayer

    layer = np.zeros((2, 3, 4), dtype=np.uint8)
    layer[0, 0] = [10, 20, 30, 255]  # opaque
    layer[1, 2] = [0, 0, 0, 51]  # black at 20 %
    image = np.full((2, 3, 4), 200, dtype=np.uint8)
    KeptLayer(layer).paint(image)
    expected = np.full((2, 3, 4), 200, dtype=np.uint8)
    expected[0, 0, :3] = [10, 20, 30]
    expected[1, 2, :3] = 160  # 0.2 · 0 + 0.8 · 200
    assert_array_equal(image, expected)


def test_png_bytes_round_trip_and_bad_input():
    from jitterlab.plotting.explorer import png_bytes

    image = np.random.default_rng(3).integers(0, 256, size=(7, 5, 4), dtype=np.uint8)
    png = png_bytes(image, 90)
    assert png.startswith(b"\x89PNG")
    assert_array_equal(decoded(png), image)
    with pytest.raises(ValueError, match="RGBA image of uint8"):
        png_bytes(image[..., :3], 90)
    with pytest.raises(ValueError, match="RGBA image of uint8"):
        png_bytes(image.astype(float), 90)


# --------------------------------------------------------------------------------------
# the widget (ipywidgets runs without a kernel or a browser)
# --------------------------------------------------------------------------------------
@pytest.mark.slow
def test_widget_builds_and_redraws():
    import ipywidgets

    box = jl.explore()
    assert isinstance(box, ipywidgets.VBox)
    first = bytes(box.figure.value)
    assert first.startswith(b"\x89PNG")
    assert box.values.attrs["source"] == "Exponential(mean=1e-05)"
    box.controls["work"].value = 100.0  # µs
    assert box.values.attrs["work"] == pytest.approx(100e-6)
    assert bytes(box.figure.value) != first
    assert "at N = 4096" in box.status.value
    box.controls["barrier"].value = "none"
    assert box.controls["latency"].disabled and box.controls["overhead"].disabled
    assert box.values.attrs["barrier"] == "wait for the slowest"


@pytest.mark.slow
def test_widget_switches_laws_and_shows_their_parameters():
    box = jl.explore()
    parameter_box = box.children[0].children[0].children[1]
    box.controls["source"].value = "Bernoulli"
    assert [w.description for w in parameter_box.children] == ["p [-]", "duration [µs]"]
    assert box.values.attrs["source"] == "Bernoulli(p=0.01, duration=0.0001)"
    box.controls["Bernoulli.p"].value = 0.5
    assert box.values.attrs["source"] == "Bernoulli(p=0.5, duration=0.0001)"
    box.controls["source"].value = "detour trace, CPU 1"
    assert parameter_box.children == ()
    assert box.values.attrs["source"].startswith("trace jitterlab.bench.detour, CPU 1")


@pytest.mark.slow
def test_widget_reports_a_bad_value_and_stays_usable():
    box = jl.explore()
    box.controls["source"].value = "Periodic"
    shown = bytes(box.figure.value)
    box.controls["Periodic.duration"].value = 5000.0  # longer than the 4000 µs period
    assert "cannot compute" in box.status.value and "shorter than the period" in box.status.value
    assert bytes(box.figure.value) == shown
    box.controls["Periodic.duration"].value = 10.0
    assert "cannot compute" not in box.status.value
    assert bytes(box.figure.value) != shown


def test_widget_offers_your_own_noise(trace):
    box = jl.explore(trace)
    assert box.controls["source"].value.startswith("yours: trace")
    assert box.values.attrs["source"].startswith("trace")
    with pytest.raises(TypeError, match="noise must be"):
        jl.explore("exponential")


def test_docstring_examples():
    import doctest
    import importlib

    # jl.explore is the function; the module is reached by its full name
    module = importlib.import_module("jitterlab.explore")
    assert doctest.testmod(module).attempted >= 3
    assert doctest.testmod(module).failed == 0
