"""A classroom explorer: the three methods side by side, redrawn as the widgets move.

:func:`explore` builds ipywidgets controls for the noise (a law of :mod:`jitterlab.noise`
with its parameters, or a shipped detour trace), the largest N, the work w, the one-hop
latency, the message overhead and the barrier, and one figure that shows, against N,

1. max-of-N, E[max_i (w + δ_i)] (:func:`jitterlab.max_of_n`, exact);
2. Theorem 1's band for E[θ] (:func:`jitterlab.theorem1_bounds`, Garg & De 2006);
3. the trace-driven simulation's mean phase time (:func:`jitterlab.simulate`, De & Mann
   2010) with ±2 standard errors over independent runs.

The numbers come from :func:`explore_values`, a plain function that returns a Dataset,
so the explorer's figure can be checked (and reused) without widgets. The simulation is
kept small so that a change redraws within a second or two: at most
:data:`SIMULATED_N_MAX` tasks, :data:`RUNS` runs of :data:`PHASES` phases; the figure
states these caps.

ipywidgets (the ``notebooks`` extra) and matplotlib are imported only when a figure or the
widget is made.
"""

from __future__ import annotations

import functools
import math
import time

import numba
import numpy as np
import xarray as xr

from .analytic.bounds import theorem1_bounds
from .base.checks import check_integer, check_positive
from .base.threads import map_on_threads
from .noise import NoiseModel, Periodic, from_trace
from .sim.barriers import TreeBarrier
from .sim.collectives import Dissemination, RecursiveDoubling
from .sim.message import Message
from .sim.simulate import simulate
from .traces.trace import Trace

# plot_explore is served by __getattr__ below, from jitterlab.plotting.explorer
__all__ = ["explore", "explore_values", "law_trace", "make_barrier", "plot_explore",  # noqa: F822
           "BARRIERS", "SIMULATED_N_MAX", "RUNS", "PHASES", "TRACE_EVENTS"]

#: barrier names accepted by :func:`make_barrier` and :func:`explore_values`
BARRIERS = ("none", "TreeBarrier", "Dissemination", "RecursiveDoubling")
#: largest N simulated by default (the analytic curves go further) [-]
SIMULATED_N_MAX = 4096
#: independent simulation runs; their spread gives the standard error [-]
RUNS = 8
#: phases per simulation run [-]
PHASES = 16
#: detours drawn from a noise law to make the trace that the simulation replays [-]
TRACE_EVENTS = 2**18

_US = 1e6  # seconds to microseconds


def __getattr__(name: str):
    """:func:`plot_explore` lives in :mod:`jitterlab.plotting.explorer`; it is imported from
    here on first use, so that the numbers of :func:`explore_values` need no matplotlib."""
    if name == "plot_explore":
        from .plotting.explorer import plot_explore

        return plot_explore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --------------------------------------------------------------------------------------
# the computation
# --------------------------------------------------------------------------------------
def make_barrier(kind: str, latency: float = 0.0, overhead: float = 0.0):
    """The barrier of the explorer: none, a binary tree or a round-based collective.

    Parameters
    ----------
    kind : {"none", "TreeBarrier", "Dissemination", "RecursiveDoubling"}
        "none": every task waits for the slowest at no cost (jitSim §3.4); otherwise a
        :class:`jitterlab.TreeBarrier` (fanout 2), :class:`jitterlab.Dissemination` or
        :class:`jitterlab.RecursiveDoubling`.
    latency : float
        One-hop wire latency L of a message, not hit by noise. [s]
    overhead : float
        CPU time of one send and of one receive (LogGP's o), consumed on the trace, so
        jitter can strike it. [s]

    Returns
    -------
    None or TreeBarrier or Dissemination or RecursiveDoubling

    Raises
    ------
    ValueError
        ``kind`` is not one of :data:`BARRIERS`, or a time is negative or not finite.
    TypeError
        A time is not a number.

    Examples
    --------
    >>> from jitterlab.explore import make_barrier
    >>> round(make_barrier("TreeBarrier", latency=5e-6, overhead=1e-6).tau * 1e6, 6)  # [µs]
    8.0
    """
    message = Message(send=overhead, recv=overhead, latency=latency)
    if kind == "none":
        return None
    if kind == "TreeBarrier":
        return TreeBarrier(fanout=2, message=message)
    if kind == "Dissemination":
        return Dissemination(message)
    if kind == "RecursiveDoubling":
        return RecursiveDoubling(message)
    raise ValueError(f"barrier must be one of {BARRIERS}, got {kind!r}")


def law_trace(noise: NoiseModel, work: float, events: int = TRACE_EVENTS, rng=0) -> Trace:
    """A trace for the simulation of a noise law: one detour drawn from it per w of compute.

    Parameters
    ----------
    noise : jitterlab.noise.NoiseModel
        Law of the noise δ. A :class:`jitterlab.noise.Periodic` law becomes its source
        instead, one detour of ``duration`` every ``period`` (a one-row trace).
    work : float
        Work per phase w: the gap after each detour. [s]
    events : int
        Number of detours drawn. [-]
    rng : int or numpy.random.Generator
        Seed of the draws.

    Returns
    -------
    jitterlab.Trace
        Rows (δ_i, w) with δ_i independent draws of ``noise``.

    Notes
    -----
    Work w that starts at a random time inside a gap meets exactly the next detour, a
    fresh draw of the law; one that starts inside a detour (probability
    ρ = E[δ]/(w + E[δ])) waits out its remainder and then meets none. So the law of δ in
    this trace (:func:`jitterlab.noise.from_trace`) is the law itself with weight
    1 − ρ, and differs from it by a term of order ρ: negligible for noise much shorter
    than the work, visible when E[δ] approaches w. With N tasks on ``events`` rows the
    tasks of one phase meet distinct detours while N is well below ``events``.

    Examples
    --------
    >>> import jitterlab as jl
    >>> from jitterlab.explore import law_trace
    >>> trace = law_trace(jl.noise.Exponential(mean=1e-5), work=1e-3, events=1000, rng=1)
    >>> len(trace.gap), float(trace.gap_seconds[0])
    (1000, 0.001)
    """
    work = check_positive("work", work)
    if isinstance(noise, Periodic):
        return Trace(jitter=[noise.duration], gap=[noise.period - noise.duration],
                     source=f"{noise.describe()} as its source")
    if not isinstance(noise, NoiseModel):
        raise TypeError(f"noise must be a jl.noise law, got {type(noise).__name__}")
    events = check_integer("events", events, 1)
    jitter = np.asarray(noise.sample(events, rng=rng), dtype=float)
    if not np.all(np.isfinite(jitter)):
        raise ValueError(f"{noise.describe()} drew a non-finite detour; the simulation "
                         "needs finite noise")
    return Trace(jitter=jitter, gap=np.full(events, work),
                 source=f"{events} detours drawn from {noise.describe()}, one per w")


@functools.lru_cache(maxsize=2)
def _drawn_trace(noise: NoiseModel, work: float, events: int, seed: int) -> Trace:
    """:func:`law_trace` of one law object (laws compare by identity), kept for the next
    redraw: a change of N, barrier, latency or overhead replays the same trace (about 11 ms
    of drawing and packing saved per redraw, issue #20)."""
    return law_trace(noise, work, events, rng=seed)


@functools.lru_cache(maxsize=2)
def _trace_law(trace: Trace, work: float) -> NoiseModel:
    """The law of δ met by work w on ``trace`` (:func:`jitterlab.noise.from_trace`), one
    object per trace object and work, so that the bounds of the next redraw are kept too."""
    return from_trace(trace, work)


@functools.lru_cache(maxsize=4)
def _bounds(law: NoiseModel, work: float, grid: tuple, model):
    """Theorem 1's bounds (and max-of-N, the lower one) of one law object at one work and
    barrier, kept for the next redraw: a change of the simulation alone recomputes nothing
    here (laws compare by identity, barriers by their fields)."""
    return theorem1_bounds(law + work, n=np.array(grid, dtype=np.int64), barrier=model)


@functools.lru_cache(maxsize=4)
def _run_means(trace: Trace, work: float, sim_n: tuple, phases: int, model,
               seeds: tuple) -> np.ndarray:
    """Mean phase time of each run (one seed each) at each simulated N [s], shape (runs, N).

    The runs are independent, so they go to numba's threads whole, one thread per run
    (:func:`jitterlab.base.threads.map_on_threads`): no thread waits for another but at
    the end, and one that loses its CPU to another process holds up nobody (the tree's
    runs 55 -> 37 ms on two threads, quiet; the same results bit for bit, issue #20).
    Kept for the next redraw (traces compare by identity; they are read-only): a change of
    the largest N of the analytic curves replays nothing (about 60 ms per redraw, #20)."""
    def mean_phase_times(seed: int) -> np.ndarray:
        return simulate(trace, list(sim_n), work, phases=phases, barrier=model,
                        rng=seed)["phase_time"].mean("phase").values

    threads = min(numba.get_num_threads(), len(seeds))
    per_run = np.array(map_on_threads(mean_phase_times, list(seeds), threads))
    per_run.flags.writeable = False
    return per_run


def _n_grid(n_max: int) -> np.ndarray:
    """Powers of two up to ``n_max``, and ``n_max`` itself."""
    powers = 2 ** np.arange(int(math.floor(math.log2(n_max))) + 1, dtype=np.int64)
    return np.unique(np.append(powers, n_max))


def _simulated(grid: np.ndarray, cap: int) -> np.ndarray:
    """Every other N of the grid up to ``cap``, counted down from the largest one."""
    below = grid[grid <= cap]
    return below[::-1][::2][::-1]


def _describe_source(noise) -> str:
    if isinstance(noise, Trace):
        source, cpu = noise.attrs.get("source"), noise.attrs.get("cpu")
        name = f"trace {source}" if source else "trace"
        name += "" if cpu is None else f", CPU {cpu}"
        return f"{name} ({len(noise.gap)} events, {noise.duration:.3g} s)"
    return noise.describe()


def explore_values(noise, n_max: int = 2**16, work: float = 1e-3, barrier: str = "TreeBarrier",
                   latency: float = 5e-6, overhead: float = 1e-6,
                   simulated_n_max: int = SIMULATED_N_MAX, runs: int = RUNS,
                   phases: int = PHASES, events: int = TRACE_EVENTS, rng: int = 0) -> xr.Dataset:
    """The explorer's numbers: max-of-N, Theorem 1 and simulation for one configuration.

    Parameters
    ----------
    noise : jitterlab.noise.NoiseModel or jitterlab.Trace
        A law of the noise δ, or a jitter trace. For a trace, max-of-N and Theorem 1 use
        its law ``jl.noise.from_trace(trace, work)`` and the simulation replays it; for a
        law, max-of-N and Theorem 1 use the law and the simulation replays
        :func:`law_trace` (one detour drawn from the law per w of compute).
    n_max : int
        Largest number of processes N of the analytic curves; they are computed at the
        powers of two up to it and at ``n_max``. [-]
    work : float
        Work per phase w. [s]
    barrier : {"none", "TreeBarrier", "Dissemination", "RecursiveDoubling"}
        See :func:`make_barrier`.
    latency : float
        One-hop wire latency L. [s]
    overhead : float
        CPU time of one send and of one receive. [s]
    simulated_n_max : int
        Largest N simulated; every other N of the grid up to it, counted down from the
        largest, is simulated. [-]
    runs : int
        Independent simulation runs (>= 2), each from its own random start points. [-]
    phases : int
        Phases per run. [-]
    events : int
        Detours drawn by :func:`law_trace` for a law. [-]
    rng : int
        Seed; the trace's seed and the runs' seeds derive from it
        (``numpy.random.SeedSequence(rng).generate_state(runs + 1)``: the first for the
        trace, then one per run) and are stored in the attributes.

    Returns
    -------
    xarray.Dataset
        On dim ``n``: ``max_of_n``, E[max_i (w + δ_i)] [s]; ``lower`` and ``upper``,
        Theorem 1's bounds on E[θ] [s]; ``simulation``, the mean phase time over
        ``runs`` × ``phases`` phases [s], and ``simulation_se``, the standard error of
        that mean from the spread of the runs' means [s], both NaN where N was not
        simulated; ``simulated`` (bool). Attributes: ``source``, ``work``, ``barrier``,
        ``tau`` (one-hop time of the barrier, or NaN) [s], ``phases``, ``runs``,
        ``simulated_n_max``, ``trace_seed``, ``run_seeds``, ``simulated_trace`` (what the
        simulation replayed, in words) and ``seconds`` (time taken) [s].

    Raises
    ------
    TypeError
        ``noise`` is neither a law nor a trace, or a number has the wrong type.
    ValueError
        A count is below its minimum (``runs`` < 2), a time is negative (``work`` <= 0),
        or ``barrier`` is unknown.

    Notes
    -----
    E[θ] is bounded by max-of-N below and by max-of-N plus the barrier's noiseless
    critical path above (2τ·D for the tree, rounds × one hop for the others; Garg & De,
    Theorem 1). The simulation charges the sends and receives on the trace, so jitter
    can push a phase beyond the upper bound (notebook 05, section (c)); its runs start
    at independent random times, and its phases within a run are not independent,
    hence the standard error across runs.

    References
    ----------
    .. [1] R. Garg, P. De, "Impact of Noise on Scaling of Collectives: An Empirical
       Evaluation", HiPC 2006 (seed 001), Theorem 1.
    .. [2] P. De, V. Mann, "jitSim", Euro-Par 2010 workshops (seed 000).

    Examples
    --------
    >>> import jitterlab as jl
    >>> from jitterlab.explore import explore_values
    >>> ds = explore_values(jl.noise.Exponential(mean=1e-5), n_max=1024, barrier="none",
    ...                     simulated_n_max=64, phases=2, events=4096)
    >>> round(float(ds["max_of_n"].sel(n=1024) - 1e-3) * 1e6, 2)  # 10 µs · H_1024 [µs]
    75.09
    """
    started = time.perf_counter()
    if not isinstance(noise, NoiseModel | Trace):
        raise TypeError(f"noise must be a jl.noise law or a jl.Trace, got "
                        f"{type(noise).__name__}")
    n_max = check_integer("n_max", n_max, 1)
    work = check_positive("work", work)
    simulated_n_max = check_integer("simulated_n_max", simulated_n_max, 1)
    runs = check_integer("runs", runs, 2)
    phases = check_integer("phases", phases, 1)
    if isinstance(rng, bool) or not isinstance(rng, int | np.integer) or rng < 0:
        raise TypeError(f"rng must be a non-negative int seed, got {rng!r}")
    model = make_barrier(barrier, latency, overhead)

    seeds = np.random.SeedSequence(int(rng)).generate_state(runs + 1, dtype=np.uint64)
    seeds = [int(s) & (2**63 - 1) for s in seeds]
    if isinstance(noise, Trace):
        trace, law = noise, _trace_law(noise, work)
        simulated_trace = "the trace itself"
    elif isinstance(noise, Periodic):  # replayed as its source, at this work
        trace = _drawn_trace(noise, work, events, seeds[0])  # one row: no draws
        law = _trace_law(trace, work)
        simulated_trace = "its source, one detour every period"
    else:
        trace, law = _drawn_trace(noise, work, events, seeds[0]), noise
        simulated_trace = f"{events} detours drawn from the law, one per w of compute"

    grid = _n_grid(n_max)
    # Theorem 1's lower bound is max-of-N itself (the same call with the same arguments)
    bounds = _bounds(law, work, tuple(grid.tolist()), model)
    sim_n = _simulated(grid, simulated_n_max)
    per_run = _run_means(trace, work, tuple(sim_n.tolist()), phases, model, tuple(seeds[1:]))
    simulation = np.full(grid.size, np.nan)
    simulation_se = np.full(grid.size, np.nan)
    where = np.searchsorted(grid, sim_n)
    simulation[where] = per_run.mean(axis=0)
    simulation_se[where] = per_run.std(axis=0, ddof=1) / math.sqrt(runs)

    if isinstance(model, TreeBarrier):
        tau = model.tau
    elif model is not None:
        tau = model.hop()
    else:
        tau = math.nan
    seconds = time.perf_counter() - started
    return xr.Dataset(
        {"max_of_n": ("n", bounds["lower"].values.copy(),
                      {"units": "s", "long_name": "E[max_i (w + δ_i)]"}),
         "lower": ("n", bounds["lower"].values.copy(),
                   {"units": "s", "long_name": "Theorem 1 lower bound on E[θ]"}),
         "upper": ("n", bounds["upper"].values.copy(),
                   {"units": "s", "long_name": "Theorem 1 upper bound on E[θ]"}),
         "simulation": ("n", simulation,
                        {"units": "s", "long_name": "simulated mean phase time"}),
         "simulation_se": ("n", simulation_se,
                           {"units": "s", "long_name": "standard error of the simulated mean"}),
         "simulated": ("n", np.isin(grid, sim_n))},
        coords={"n": ("n", grid, {"long_name": "number of processes N"})},
        attrs={"source": _describe_source(noise), "work": work,
               "barrier": model.describe() if model is not None else "wait for the slowest",
               "tau": tau, "phases": phases, "runs": runs,
               "simulated_n_max": int(sim_n.max()), "trace_seed": seeds[0],
               "run_seeds": seeds[1:], "simulated_trace": simulated_trace,
               "seconds": seconds})


# --------------------------------------------------------------------------------------
# the widget
# --------------------------------------------------------------------------------------
_LAWS = {
    # name: (builder from the parameters in µs, [(parameter, label, default, low, high, step)])
    "Exponential": (lambda p: _law("Exponential", mean=p["mean"] / _US),
                    [("mean", "mean [µs]", 10.0, 0.1, 1000.0, 0.1)]),
    "Pareto": (lambda p: _law("Pareto", alpha=p["alpha"], scale=p["scale"] / _US),
               [("alpha", "α [-]", 1.8, 1.05, 4.0, 0.05),
                ("scale", "scale [µs]", 5.0, 0.1, 500.0, 0.1)]),
    "Bernoulli": (lambda p: _law("Bernoulli", p=p["p"], duration=p["duration"] / _US),
                  [("p", "p [-]", 0.01, 0.0001, 1.0, 0.0001),
                   ("duration", "duration [µs]", 100.0, 1.0, 5000.0, 1.0)]),
    "Uniform": (lambda p: _law("Uniform", high=p["high"] / _US),
                [("high", "high [µs]", 20.0, 0.1, 1000.0, 0.1)]),
    "Periodic": (lambda p: _periodic_trace(p["period"] / _US, p["duration"] / _US),
                 [("period", "period [µs]", 4000.0, 10.0, 1e6, 10.0),
                  ("duration", "duration [µs]", 2.5, 0.1, 5000.0, 0.1)]),
}
_TRACES = {"detour trace, CPU 0": 0, "detour trace, CPU 1": 1}


def _periodic_trace(period: float, duration: float) -> Trace:
    """One detour of ``duration`` every ``period`` [s], as a one-row trace."""
    if not duration < period:
        raise ValueError(f"the detour ({duration * _US:g} µs) must be shorter than the "
                         f"period ({period * _US:g} µs)")
    return Trace(jitter=[duration], gap=[period - duration],
                 source=f"periodic: {duration * _US:g} µs every {period * _US:g} µs")


def _law(name: str, **params) -> NoiseModel:
    from . import noise

    return getattr(noise, name)(**params)


def explore(noise=None):
    """Widgets and one figure that put max-of-N, Theorem 1 and simulation side by side.

    Pick a noise law and its parameters (or a shipped detour trace), the largest N, the
    work w, the one-hop latency, the message overhead and the barrier; the figure is
    redrawn after each change (within a second or two: the simulation is capped at
    :data:`SIMULATED_N_MAX` tasks, :data:`RUNS` runs of :data:`PHASES` phases, and says
    so in its legend). The numbers behind it come from :func:`explore_values`.

    Parameters
    ----------
    noise : jitterlab.noise.NoiseModel or jitterlab.Trace, optional
        Your own law of δ or trace, offered first in the noise menu and shown at start;
        default an exponential law of mean 10 µs.

    Returns
    -------
    ipywidgets.VBox
        The explorer; it displays itself as the last expression of a notebook cell. Its
        attribute ``controls`` maps names to the widgets (``source``, ``n_max``,
        ``work``, ``latency``, ``overhead``, ``barrier`` and the law's parameters),
        ``figure`` is the image and ``status`` the line under it; ``values`` holds the
        Dataset of the last update.

    Raises
    ------
    TypeError
        ``noise`` is neither a law nor a trace.
    ImportError
        ipywidgets is not installed (``pip install -e '.[notebooks]'``).

    Examples
    --------
    In a notebook::

        import jitterlab as jl
        jl.explore()
    """
    import ipywidgets as widgets

    from .datasets import load_detour
    from .plotting import task_count_label
    from .plotting.explorer import explorer_png

    if noise is not None and not isinstance(noise, NoiseModel | Trace):
        raise TypeError(f"noise must be a jl.noise law or a jl.Trace, got "
                        f"{type(noise).__name__}")
    given = {} if noise is None else {
        f"yours: {_describe_source(noise)}"[:60]: noise}
    style = {"description_width": "140px"}
    wide = widgets.Layout(width="400px")

    source = widgets.Dropdown(options=[*given, *_LAWS, *_TRACES], description="noise",
                              style=style, layout=wide)
    parameters = {name: {key: widgets.BoundedFloatText(
        value=default, min=low, max=high, step=step, description=label, style=style,
        layout=wide) for key, label, default, low, high, step in specs}
        for name, (_, specs) in _LAWS.items()}
    parameter_box = widgets.VBox()
    n_values = [2**k for k in range(21)]
    n_max = widgets.SelectionSlider(
        options=[(task_count_label(v), v) for v in n_values], value=2**16,
        description="largest N [-]", continuous_update=False, style=style, layout=wide)
    work = widgets.FloatLogSlider(value=1000.0, base=10, min=1, max=5, step=0.05,
                                  description="work w [µs]", continuous_update=False,
                                  style=style, layout=wide, readout_format=".4g")
    right_style = {"description_width": "170px"}  # room for "one-hop latency L [µs]"
    right = widgets.Layout(width="430px")
    barrier = widgets.Dropdown(options=list(BARRIERS), value="TreeBarrier",
                               description="barrier", style=right_style, layout=right)
    latency = widgets.FloatSlider(value=5.0, min=0.0, max=50.0, step=0.5,
                                  description="one-hop latency L [µs]",
                                  continuous_update=False, style=right_style, layout=right)
    overhead = widgets.FloatSlider(value=1.0, min=0.0, max=10.0, step=0.1,
                                   description="send = recv o [µs]",
                                   continuous_update=False, style=right_style, layout=right)
    figure = widgets.Image(format="png", layout=widgets.Layout(max_width="800px"))
    status = widgets.HTML()
    traces: dict[int, Trace] = {}
    built: dict = {}  # the law of the last redraw and its parameters

    def chosen_noise():
        name = source.value
        if name in given:
            return given[name]
        if name in _TRACES:
            cpu = _TRACES[name]
            if cpu not in traces:
                traces[cpu] = load_detour(cpu=cpu)
            return traces[cpu]
        build, _ = _LAWS[name]
        values = tuple((key, w.value) for key, w in parameters[name].items())
        if built.get("key") != (name, values):  # the same law object while its parameters
            built["key"], built["law"] = (name, values), build(dict(values))  # stay
        return built["law"]

    def update(_change=None):
        parameter_box.children = tuple(parameters.get(source.value, {}).values())
        message_controls = barrier.value != "none"
        latency.disabled = overhead.disabled = not message_controls
        try:
            ds = explore_values(chosen_noise(), n_max=n_max.value, work=work.value / _US,
                                barrier=barrier.value, latency=latency.value / _US,
                                overhead=overhead.value / _US)
        except Exception as error:  # shown to the user, the widget stays usable
            status.value = (f"<span style='color:#b00'>cannot compute: "
                            f"{type(error).__name__}: {error}</span>")
            return
        box.values = ds
        figure.value = explorer_png(ds)
        largest = ds.attrs["simulated_n_max"]
        at = ds.sel(n=largest)
        status.value = (
            f"at N = {largest}: max-of-N {(float(at['max_of_n']) - ds.attrs['work']) * _US:.3g}"
            f" µs, Theorem 1 upper {(float(at['upper']) - ds.attrs['work']) * _US:.3g} µs, "
            f"simulation {(float(at['simulation']) - ds.attrs['work']) * _US:.3g} ± "
            f"{float(at['simulation_se']) * _US:.2g} µs above w (computed in "
            f"{ds.attrs['seconds']:.2f} s)")

    controls = {"source": source, "n_max": n_max, "work": work, "barrier": barrier,
                "latency": latency, "overhead": overhead}
    for name, group in parameters.items():
        for key, widget in group.items():
            controls[f"{name}.{key}"] = widget
    columns = widgets.HBox([widgets.VBox([source, parameter_box, n_max, work]),
                            widgets.VBox([barrier, latency, overhead])],
                           layout=widgets.Layout(flex_flow="row wrap"))  # narrow: one column
    box = widgets.VBox([columns, figure, status])
    box.controls, box.figure, box.status, box.values = controls, figure, status, None
    for widget in controls.values():
        widget.observe(update, names="value")
    update()
    return box
