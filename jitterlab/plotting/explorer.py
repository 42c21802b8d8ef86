"""The explorer's figure: E[θ] − w against N by max-of-N, Theorem 1 and simulation.

:func:`plot_explore` draws a result of :func:`jitterlab.explore.explore_values`;
:func:`explorer_png` draws it into one kept figure and returns PNG bytes, as the widget of
:func:`jitterlab.explore` shows them on every redraw; the text that stays the same from
one redraw to the next (title, x axis, labels, note, legend) is painted from pixels kept
from earlier redraws (:class:`KeptLayer`).
"""

from __future__ import annotations

import collections

import numpy as np
import xarray as xr

from .scaling import MICROSECONDS, log2_task_axis

__all__ = ["plot_explore", "explorer_png", "reused_axes", "new_axes", "PNG_DPI",
           "png_bytes", "kept_artists", "KeptLayer", "LEGEND"]


#: where and how large the explorer's legend is drawn (keywords of ``Axes.legend``)
LEGEND = {"loc": "upper left", "fontsize": 8.5}


def plot_explore(ds: xr.Dataset, ax=None, *, legend: bool = True):
    """Draw an :func:`~jitterlab.explore.explore_values` result: E[θ] − w against N. [µs]

    Parameters
    ----------
    ds : xarray.Dataset
        Output of :func:`jitterlab.explore.explore_values`.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure (not registered with pyplot) when omitted.
    legend : bool
        Add the legend (``ax.legend(**LEGEND)``); :func:`explorer_png` adds it only when
        no earlier redraw drew the same one.

    Returns
    -------
    matplotlib.axes.Axes
    """
    import matplotlib as mpl
    from matplotlib.collections import LineCollection
    from matplotlib.ticker import FuncFormatter, NullLocator

    if ax is None:
        ax = new_axes()
    n = ds["n"].values
    work = float(ds.attrs["work"])

    def above(values):
        """Microseconds above the work; 0 (no noise met) is left off the log axis."""
        out = (np.asarray(values, dtype=float) - work) * MICROSECONDS
        return np.where(out > 0, out, np.nan)

    barrier = ds.attrs["barrier"]
    has_barrier = barrier != "wait for the slowest"
    if has_barrier:
        ax.fill_between(n, above(ds["lower"]), above(ds["upper"]), color="C0", alpha=0.15,
                        linewidth=0, label="Theorem 1 band for E[θ]")
        ax.plot(n, above(ds["upper"]), color="C0", linestyle="--",
                label="Theorem 1 upper bound: max-of-N + critical path")
    ax.plot(n, above(ds["max_of_n"]), color="C0", linewidth=2,
            label="max-of-N (exact)" + (" = Theorem 1 lower bound" if has_barrier else ""))
    simulated = ds["simulated"].values
    ax.errorbar(n[simulated], above(ds["simulation"].values[simulated]),
                yerr=2 * ds["simulation_se"].values[simulated] * MICROSECONDS, fmt="o", color="C3",
                markersize=5, capsize=3,
                label=(f"simulation, {ds.attrs['runs']} runs × {ds.attrs['phases']} phases "
                       f"(±2 SE), N ≤ {ds.attrs['simulated_n_max']}"))
    ax.set_yscale("log")
    # no minor ticks on the y axis: each tick is a few artists to lay out on every redraw
    ax.yaxis.set_minor_locator(NullLocator())
    # plain numbers (1, 10, 100 µs), not 10^k: mathtext costs about 13 ms per redraw (#20)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    log2_task_axis(ax, 1, int(n.max()))
    ax.set_xlabel("number of processes N")
    ax.set_ylabel("E[θ] − w [µs]")
    tau = ds.attrs["tau"]
    hop = "" if not has_barrier else f", one hop {tau * MICROSECONDS:.3g} µs"
    ax.set_title(f"{ds.attrs['source']}\nw = {work * MICROSECONDS:.4g} µs, {barrier.split('(')[0]}"
                 f"{hop}", fontsize=10, y=1.0)  # a fixed y: no search for overlaps per redraw
    ax.grid(True, axis="y", which="major", alpha=0.3)
    # the x grid as lines of their own, not the x axis's: explorer_png keeps the x axis
    # (ticks, numbers, label) as pixels painted over the data, which must stay over the grid
    grid_style = {key[5:]: value for key, value in mpl.rcParams.items()
                  if key in ("grid.color", "grid.linestyle", "grid.linewidth")}
    ax.add_collection(LineCollection(
        [[(x, 0), (x, 1)] for x in ax.get_xticks()],  # clipped to the axes
        transform=ax.get_xaxis_transform(), alpha=0.3, zorder=1.5, **grid_style),
        autolim=False)
    if legend:
        ax.legend(**LEGEND)
    ax.text(0.99, 0.01, f"the simulation replays {ds.attrs['simulated_trace']}",
            transform=ax.transAxes, ha="right", va="bottom", fontsize=7.5, color="0.35")
    return ax


#: the resolution of the widget's PNG [dots per inch]
PNG_DPI = 90

_REUSED: dict = {}  # the axes that every redraw draws into, on a figure of PNG_DPI


def reused_axes():
    """The explorer's axes, emptied of the last redraw's data artists. Its ticks, labels
    and renderer are kept: a new figure costs about 17 ms more per redraw (issue #20),
    and the picture is the same to the pixel. The figure is made at :data:`PNG_DPI` with
    its own Agg canvas, so a redraw draws it as it is, without the dots per inch that
    ``savefig`` would change and change back (about 16 ms less per redraw)."""
    ax = _REUSED.get("ax")
    if ax is None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        ax = _REUSED["ax"] = new_axes(dpi=PNG_DPI)
        FigureCanvasAgg(ax.figure)
        return ax
    for artist in [*ax.lines, *ax.collections, *ax.texts, *ax.patches]:
        artist.remove()
    ax.containers.clear()
    if ax.legend_ is not None:
        ax.legend_.remove()
    ax.relim()  # forget the old data limits
    return ax


def new_axes(dpi: float | None = None):
    """Axes on a new figure of the explorer's size (not registered with pyplot), at
    ``dpi`` dots per inch (default matplotlib's ``figure.dpi``)."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8.5, 5.2), dpi=dpi)
    # fixed margins: a layout engine would draw the figure twice per redraw (issue #20)
    figure.subplots_adjust(left=0.085, right=0.985, bottom=0.1, top=0.895)
    return figure.add_subplot()


def explorer_png(ds: xr.Dataset) -> bytes:
    """The figure of ``ds`` as PNG bytes at :data:`PNG_DPI` (no pyplot, no display needed):
    the pixels of ``plot_explore(ds).figure.savefig(..., dpi=PNG_DPI)``, within 2 of 255
    levels where a kept artist or the legend lies (see :func:`kept_artists`)."""
    ax = plot_explore(ds, ax=reused_axes(), legend=False)
    canvas = ax.figure.canvas
    kept = kept_artists(ax)
    for artist in kept:
        artist.set_visible(False)
    canvas.draw()  # the rest
    layers = [_layer(canvas, _layer_key(artist), lambda artist=artist: artist)
              for artist in kept]
    handles, labels = ax.get_legend_handles_labels()  # the legend, above all of them
    layers.append(_layer(canvas, ("legend", tuple(labels),
                                  tuple(type(handle).__name__ for handle in handles)),
                         lambda: ax.legend(**LEGEND)))
    for artist in kept:  # the axes as plot_explore left them, for whoever draws them next
        artist.set_visible(True)
    image = np.asarray(canvas.buffer_rgba())
    for layer in layers:
        layer.paint(image)
    return png_bytes(image, PNG_DPI)


def kept_artists(ax) -> list:
    """The artists of the explorer's axes that a redraw takes from earlier redraws as
    pixels, painted over the rest, in this order; then the legend.

    They are the title, the x axis (its ticks, numbers and label; not its grid, which
    :func:`plot_explore` draws as lines of their own), the y axis's label and the note:
    drawing text anew was most of a redraw (issue #20), and they stay the same over most
    changes. Each lies above the artists it overlaps in the figure, or, for the x axis's
    ticks, is the same black as the spine under them."""
    return sorted([ax.title, ax.xaxis, ax.yaxis.label, *ax.texts],
                  key=lambda artist: artist.get_zorder())


class KeptLayer:
    """The pixels of one artist drawn alone on a transparent canvas, kept to be painted
    over other redraws: where the artist covers a pixel, its colour premultiplied by its
    opacity, and what it leaves of the pixel below (1 − opacity).

    Parameters
    ----------
    rgba : numpy.ndarray
        The canvas with the artist alone, shape (height, width, 4), uint8, straight alpha.
    """

    def __init__(self, rgba: np.ndarray):
        pixels = np.asarray(rgba).reshape(-1, 4)
        self.index = np.flatnonzero(pixels[:, 3])
        opacity = pixels[self.index, 3:].astype(np.float32) / 255
        self.colour = pixels[self.index, :3] * opacity
        self.below = 1 - opacity

    def paint(self, image: np.ndarray) -> None:
        """Paint the layer over ``image`` (the canvas's RGBA pixels, changed in place)."""
        pixels = image.reshape(-1, 4)
        blended = self.colour + pixels[self.index, :3] * self.below
        pixels[self.index, :3] = np.rint(blended)


_LAYERS: collections.OrderedDict = collections.OrderedDict()  # key -> KeptLayer
_LAYERS_KEPT = 16  # a few titles and label positions, the legend with and without barrier


def _layer_key(artist) -> tuple:
    """What decides the pixels of a kept artist on the explorer's fixed axes."""
    if hasattr(artist, "get_majorticklocs"):  # the x axis: its view, ticks and words
        ticks = artist.get_majorticklocs()
        return ("axis", tuple(artist.get_view_interval()), tuple(ticks),
                tuple(artist.get_minorticklocs()),
                tuple(artist.get_major_formatter().format_ticks(ticks)),
                artist.label.get_text())
    return ("text", artist.get_text(), tuple(artist.get_position()), artist.get_rotation(),
            artist.get_fontsize(), str(artist.get_color()), artist.get_ha(), artist.get_va())


def _layer(canvas, key: tuple, artist_of) -> KeptLayer:
    """The kept layer of ``key``; on a miss, the artist made by ``artist_of()`` drawn alone.
    The canvas's pixels are left as they were."""
    key = (id(canvas), key)
    layer = _LAYERS.get(key)
    if layer is not None:
        _LAYERS.move_to_end(key)
        return layer
    artist = artist_of()
    renderer = canvas.get_renderer()
    drawn = canvas.copy_from_bbox(canvas.figure.bbox)
    renderer.clear()  # transparent
    artist.set_visible(True)
    artist.draw(renderer)
    artist.set_visible(False)
    layer = _LAYERS[key] = KeptLayer(np.asarray(canvas.buffer_rgba()))
    canvas.restore_region(drawn)
    while len(_LAYERS) > _LAYERS_KEPT:
        _LAYERS.popitem(last=False)
    return layer


def png_bytes(rgba: np.ndarray, dpi: float) -> bytes:
    """A PNG of an 8-bit RGBA image, made for speed: every row filtered by "Up" (minus the
    row above) and compressed by zlib at level 1.

    The PNG is shown once and thrown away: this takes about 4 ms for the explorer's
    765 × 468 pixels where PIL at its fastest level takes about 12 (issue #20); the pixels
    are the same, the file about 7 % larger.

    Parameters
    ----------
    rgba : numpy.ndarray
        The image, shape (height, width, 4), dtype uint8, top row first.
    dpi : float
        Resolution written into the file [dots per inch].

    Returns
    -------
    bytes
    """
    import struct
    import zlib

    rgba = np.asarray(rgba)
    if rgba.dtype != np.uint8 or rgba.ndim != 3 or rgba.shape[2] != 4:
        raise ValueError(f"need an RGBA image of uint8, shape (height, width, 4), got "
                         f"{rgba.dtype} of shape {rgba.shape}")
    height, width, _ = rgba.shape
    rows = rgba.reshape(height, width * 4)
    filtered = np.empty((height, width * 4 + 1), dtype=np.uint8)
    filtered[:, 0] = 2  # filter type "Up"; the first row's "row above" is zeros
    filtered[0, 1:] = rows[0]
    np.subtract(rows[1:], rows[:-1], out=filtered[1:, 1:])  # modulo 256, as PNG wants
    per_metre = round(dpi / 0.0254)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data)))

    return b"".join([b"\x89PNG\r\n\x1a\n",
                     chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)),
                     chunk(b"pHYs", struct.pack(">IIB", per_metre, per_metre, 1)),
                     chunk(b"IDAT", zlib.compress(filtered.tobytes(), 1)),
                     chunk(b"IEND", b"")])
