"""Optimistic parallel discrete-event simulation (Time Warp, ROSS) under noise: seed 004.

ROSS's event loop processes up to ``batch`` events per pass and, every ``gvt_interval``
passes, all processing elements (PEs) compute Global Virtual Time with all-reduces
(Holder & Carothers, seed 004, §2). Between two GVT computations a PE runs an *epoch*
of batch · gvt_interval events on its own; the all-reduces are the global
synchronisation where OS noise bites: the epoch ends for everyone when the slowest PE
is done. So a GVT epoch is a compute phase followed by a collective, and the three
methods of jitterlab apply to it directly.

Optimism has a price the epoch alone does not show: a PE that runs ahead processes
events that a late message from another PE proves premature, and rolls them back. The
model carries it as rolled-back events per committed event, ρ = rollback_coefficient ·
remote_fraction · (events_per_epoch / 1024) ** rollback_exponent: no remote events, no
rollbacks; the more events a PE may process between two GVT computations (the further it
may run ahead), the more it rolls back. :func:`calibrate_timewarp` fits the costs and
this term on measured ROSS runs and records the workload (LPs per PE, starting events
per LP) it holds for; :func:`timewarp_predict` refuses another workload unless told to
extrapolate, and then warns.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import xarray as xr
from scipy.optimize import nnls

from ..analytic.bounds import theorem1_bounds
from ..base.checks import check_integer, check_positive
from ..base.provenance import provenance_attrs
from ..base.rng import RngLike
from ..noise import NoiseModel
from ..sim.barriers import TreeBarrier
from ..sim.collectives import Dissemination, RecursiveDoubling
from ..sim.message import Message
from ..sim.replay import task_counts
from ..sim.simulate import simulate
from ..traces.trace import Trace

__all__ = ["ROLLBACK_REFERENCE_EVENTS", "TimeWarp", "TimeWarpCalibration", "Workload",
           "WorkloadMismatchError", "WorkloadWarning", "calibrate_timewarp",
           "phold_network_fraction", "timewarp_predict"]

#: events per epoch at which the rollback term equals rollback_coefficient · remote_fraction
ROLLBACK_REFERENCE_EVENTS = 1024

_COLLECTIVES = {"recursive_doubling": RecursiveDoubling, "dissemination": Dissemination,
                "tree": TreeBarrier}


class WorkloadMismatchError(ValueError):
    """A prediction asked for a workload other than the one the model was calibrated on."""


class WorkloadWarning(UserWarning):
    """A model is applied, on request, to a workload it was not calibrated on."""


@dataclass(frozen=True)
class Workload:
    """The simulated model's load per PE, on which a calibrated TimeWarp holds.

    Parameters
    ----------
    lps_per_pe : int
        Logical processes per PE (PHOLD's ``--nlp``). [-]
    start_events : int
        Events each LP starts with (PHOLD's ``--start-events``): the event population,
        which sets how far ahead a PE can run and so its rollbacks. [-]
    """

    lps_per_pe: int
    start_events: int

    def __post_init__(self):
        object.__setattr__(self, "lps_per_pe", check_integer("lps_per_pe", self.lps_per_pe, 1))
        object.__setattr__(self, "start_events",
                           check_integer("start_events", self.start_events, 1))

    def differences(self, other: Workload) -> dict[str, tuple[int, int]]:
        """The fields in which ``other`` differs: name → (this value, other's value)."""
        if not isinstance(other, Workload):
            raise TypeError(f"workload must be a jl.apps.timewarp.Workload, got "
                            f"{type(other).__name__}")
        return {name: (getattr(self, name), getattr(other, name))
                for name in ("lps_per_pe", "start_events")
                if getattr(self, name) != getattr(other, name)}


def phold_network_fraction(remote_fraction, pes):
    """Fraction of PHOLD's events that cross the network between PEs. [-]

    PHOLD sends an event with probability ``remote_fraction`` to an LP drawn from all
    LPs, the sender's own PE included, so (P − 1)/P of those leave the PE.
    """
    remote = np.asarray(remote_fraction, dtype=float)
    pes = np.asarray(pes, dtype=float)
    if np.any((remote < 0) | (remote > 1)) or np.any(pes < 1):
        raise ValueError(f"remote_fraction must lie in [0, 1] and pes be >= 1, got "
                         f"{remote_fraction!r} and {pes!r}")
    return remote * (pes - 1) / pes


@dataclass(frozen=True)
class TimeWarp:
    """A Time Warp run as GVT epochs: compute, then ``allreduces`` collectives.

    Parameters
    ----------
    event_cost : float
        CPU time to process one event, rollbacks and the event's share of the kernel's
        bookkeeping included. [s]
    batch : int
        Events processed per pass of the event loop (ROSS's ``--batch``). [-]
    gvt_interval : int
        Passes between GVT computations (ROSS's ``--gvt-interval``). [-]
    remote_fraction : float
        Fraction of events sent to another PE; each costs its sender ``message.send`` and
        its receiver ``message.recv`` of CPU time. [-]
    efficiency : float
        Committed / processed events (what rollbacks leave). [-]
    message : jitterlab.Message
        Cost of one message, for remote events and for the all-reduces.
    collective : {"recursive_doubling", "dissemination", "tree"}
        The all-reduce's communication pattern.
    allreduces : int
        All-reduces per GVT computation (ROSS sums sent − received until it is zero, then
        takes the minimum of the local virtual times: at least two). [-]
    rollback_coefficient : float
        Rolled-back events per committed event per unit of ``remote_fraction`` at
        :data:`ROLLBACK_REFERENCE_EVENTS` events per epoch (0: no rollbacks). [-]
    rollback_exponent : float
        How the rollbacks grow with the events per epoch (the optimism GVT allows). [-]
    workload : Workload, optional
        The workload the costs were calibrated on; :func:`timewarp_predict` checks it.
    """

    event_cost: float
    batch: int = 4
    gvt_interval: int = 1024
    remote_fraction: float = 0.1
    efficiency: float = 1.0
    message: Message = field(default_factory=Message)
    collective: str = "recursive_doubling"
    allreduces: int = 2
    rollback_coefficient: float = 0.0
    rollback_exponent: float = 1.0
    workload: Workload | None = None

    def __post_init__(self):
        object.__setattr__(self, "event_cost", check_positive("event_cost", self.event_cost))
        object.__setattr__(self, "batch", check_integer("batch", self.batch, 1))
        object.__setattr__(self, "gvt_interval",
                           check_integer("gvt_interval", self.gvt_interval, 1))
        for name in ("remote_fraction", "efficiency"):
            value = check_positive(name, getattr(self, name), allow_zero=True)
            if value > 1.0:
                raise ValueError(f"{name} must lie in [0, 1], got {value!r}")
            object.__setattr__(self, name, value)
        if self.efficiency == 0.0:
            raise ValueError("efficiency must be > 0 (no event would ever commit)")
        if not isinstance(self.message, Message):
            raise TypeError(f"message must be a jl.Message, got {type(self.message).__name__}")
        if self.collective not in _COLLECTIVES:
            raise ValueError(f"collective must be one of {sorted(_COLLECTIVES)}, got "
                             f"{self.collective!r}")
        object.__setattr__(self, "allreduces", check_integer("allreduces", self.allreduces, 1))
        object.__setattr__(self, "rollback_coefficient", check_positive(
            "rollback_coefficient", self.rollback_coefficient, allow_zero=True))
        exponent = self.rollback_exponent
        if not isinstance(exponent, (int, float)) or not np.isfinite(exponent):
            raise ValueError(f"rollback_exponent must be a finite number, got {exponent!r}")
        object.__setattr__(self, "rollback_exponent", float(exponent))
        if self.workload is not None and not isinstance(self.workload, Workload):
            raise TypeError(f"workload must be a jl.apps.timewarp.Workload or None, got "
                            f"{type(self.workload).__name__}")

    @property
    def events_per_epoch(self) -> int:
        """Events a PE processes between two GVT computations. [-]"""
        return self.batch * self.gvt_interval

    @property
    def epoch_work(self) -> float:
        """CPU time of one PE's epoch without noise: events and their remote messages. [s]"""
        per_event = self.event_cost + self.remote_fraction * (self.message.send
                                                              + self.message.recv)
        return self.events_per_epoch * per_event

    @property
    def rolled_back_per_committed(self) -> float:
        """ρ: events rolled back per committed event (ROSS's efficiency is 1 − ρ). [-]"""
        return (self.rollback_coefficient * self.remote_fraction
                * (self.events_per_epoch / ROLLBACK_REFERENCE_EVENTS) ** self.rollback_exponent)

    @property
    def ross_efficiency(self) -> float:
        """1 − ρ, as ROSS prints it (below 0 when more events roll back than commit). [-]"""
        return 1.0 - self.rolled_back_per_committed

    @property
    def committed_per_epoch(self) -> float:
        """Events a PE commits per epoch: efficiency · events_per_epoch / (1 + ρ). [-]"""
        return self.efficiency * self.events_per_epoch / (1.0 + self.rolled_back_per_committed)

    def barrier(self):
        """The GVT all-reduces as one collective: ``allreduces`` times the message costs.

        Running k all-reduces back to back costs, without noise, exactly k times one of
        them; under noise the k are taken as one collective with k-fold CPU and wire
        times (they meet the noise of one stretch of the trace, not k separate ones).
        """
        k = self.allreduces
        m = self.message
        scaled = Message(send=k * m.send, recv=k * m.recv, latency=k * m.wire_time())
        if self.collective == "tree":
            return TreeBarrier(message=scaled)
        return _COLLECTIVES[self.collective](scaled)


def timewarp_predict(model: TimeWarp, n, noise=None, phases: int = 50,
                     rng: RngLike = None, *, workload: Workload | None = None,
                     extrapolate: bool = False) -> xr.Dataset:
    """Committed event rate of a Time Warp run on N PEs, without and with noise.

    Parameters
    ----------
    model : TimeWarp
        The run.
    n : int or sequence of int
        Numbers of PEs N (dimension ``n``). [-]
    noise : jitterlab.noise law or jitterlab.Trace, optional
        A law of the noise δ of one epoch's compute: bounds from Theorem 1's analogue
        (max-of-N, plus the collective's critical path). A Trace: trace-driven
        simulation of ``phases`` epochs (:func:`jitterlab.simulate`).
    phases : int
        Epochs simulated per N with a Trace. [-]
    rng : int or numpy.random.Generator, optional
        Seed of the trace simulation.
    workload : Workload, optional
        The workload to predict. When the model records the workload it was calibrated
        on and this one differs, the prediction is refused (:class:`WorkloadMismatchError`)
        unless ``extrapolate`` is true; then it warns (:class:`WorkloadWarning`) and
        ``attrs["extrapolated"]`` names the differences.
    extrapolate : bool
        Predict another workload than the calibration's, with a warning.

    Returns
    -------
    xarray.Dataset
        Over ``n``: ``epoch_time`` [s] and ``event_rate`` (committed events per second,
        all PEs) [1/s] without noise; with a law ``epoch_time_lower``/``_upper`` and
        ``event_rate_lower``/``_upper``; with a Trace ``epoch_time_noisy`` and
        ``event_rate_noisy``; ``parallel_efficiency`` = rate / (N × the rate of one PE
        without noise) [-].

    Notes
    -----
    An epoch lasts θ = max_i(w + δ_i) + C(N), with w = batch · gvt_interval ·
    (event_cost + remote_fraction · (send + recv)) and C(N) the all-reduces; the run
    commits efficiency · batch · gvt_interval / (1 + ρ) events per PE and epoch (ρ the
    rolled-back events per committed one), so the rate is N · that / E[θ];
    ``parallel_efficiency`` compares with one PE, which rolls nothing back. The bounds
    from a law assume, like Theorem 1, that the all-reduces' own sends and receives meet
    no noise; the trace-driven epochs include that noise too. The lower bound on E[θ] is
    E[max_i(w + δ_i)] plus what must follow the last PE's entry (every round of a round
    collective, the broadcast down a tree: depth × one-way message), and never below the
    noiseless epoch: noise cannot speed a run up, so ``event_rate_upper`` never exceeds
    the noiseless ``event_rate``.

    Examples
    --------
    >>> import jitterlab as jl
    >>> model = jl.apps.TimeWarp(event_cost=5e-6, message=jl.Message(latency=2e-6))
    >>> ds = jl.apps.timewarp_predict(model, n=[1, 1024])
    >>> [round(float(r) / 1e6, 1) for r in ds["event_rate"]]  # [M events/s]
    [0.2, 204.4]
    """
    if not isinstance(model, TimeWarp):
        raise TypeError(f"model must be a jl.apps.TimeWarp, got {type(model).__name__}")
    counts = task_counts(n)
    phases = check_integer("phases", phases, 2)
    extrapolated = _check_workload(model, workload, extrapolate)
    barrier = model.barrier()
    work = model.epoch_work
    committed = model.committed_per_epoch
    collective = np.array([barrier.noiseless_time(int(count)) for count in counts])
    epoch = work + collective
    single = model.efficiency * model.events_per_epoch / work
    data = {
        "epoch_time": ("n", epoch, {"units": "s", "long_name": "GVT epoch without noise"}),
        "event_rate": ("n", counts * committed / epoch,
                       {"units": "1/s", "long_name": "committed events per second"}),
    }
    attrs = {"model": repr(model), "epoch_work": work,
             "rolled_back_per_committed": model.rolled_back_per_committed,
             **provenance_attrs()}
    if extrapolated:
        attrs["extrapolated"] = extrapolated
    if isinstance(noise, NoiseModel):
        bounds = theorem1_bounds(noise + work, n=counts, barrier=barrier)
        upper = bounds["upper"].to_numpy()
        # after the last PE enters, its contribution still has to reach every PE: all the
        # rounds of a round collective, at least the broadcast down a tree; and noise can
        # only delay, so the noiseless epoch is a lower bound too
        after_last = collective if not isinstance(barrier, TreeBarrier) else (
            bounds["depth"].to_numpy() * barrier.message.one_way)
        lower = np.maximum(bounds["lower"].to_numpy() + after_last, epoch)
        data.update({
            "epoch_time_lower": ("n", lower, {"units": "s"}),
            "epoch_time_upper": ("n", upper, {"units": "s"}),
            "event_rate_lower": ("n", counts * committed / upper, {"units": "1/s"}),
            "event_rate_upper": ("n", counts * committed / lower, {"units": "1/s"}),
        })
        rate = counts * committed / upper
    elif isinstance(noise, Trace):
        noisy = np.array([float(simulate(noise, n=int(count), work=work, phases=phases,
                                         barrier=barrier, rng=rng)["phase_time"][1:].mean())
                          for count in counts])
        data.update({
            "epoch_time_noisy": ("n", noisy, {"units": "s", "long_name":
                                              "mean GVT epoch, trace-driven (first dropped)"}),
            "event_rate_noisy": ("n", counts * committed / noisy, {"units": "1/s"}),
        })
        rate = counts * committed / noisy
    elif noise is None:
        rate = counts * committed / epoch
    else:
        raise TypeError(f"noise must be None, a jl.noise law or a jl.Trace, got "
                        f"{type(noise).__name__}")
    data["parallel_efficiency"] = ("n", rate / (counts * single),
                                   {"units": "1", "long_name": "rate / (N × one PE's rate)"})
    return xr.Dataset(data, coords={"n": ("n", counts, {"long_name": "PEs"})}, attrs=attrs)


def _check_workload(model: TimeWarp, workload, extrapolate: bool) -> str:
    """'' when the workload is the calibration's (or either is unknown); else refuse, or
    warn and say how it differs."""
    if workload is None or model.workload is None:
        if workload is not None and not isinstance(workload, Workload):
            raise TypeError(f"workload must be a jl.apps.timewarp.Workload or None, got "
                            f"{type(workload).__name__}")
        return ""
    differences = model.workload.differences(workload)
    if not differences:
        return ""
    text = ", ".join(f"{name} {ours} in the calibration, {theirs} here"
                     for name, (ours, theirs) in differences.items())
    if not extrapolate:
        raise WorkloadMismatchError(
            f"the model was calibrated on another workload ({text}): its event cost and "
            "rollback term need not hold; calibrate on runs of this workload, or pass "
            "extrapolate=True to predict anyway (with a warning)")
    warnings.warn(f"extrapolating the Time Warp model to another workload ({text})",
                  WorkloadWarning, stacklevel=3)
    return text


# --------------------------------------------------------------------------------------
# calibration on measured ROSS runs
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TimeWarpCalibration:
    """Costs and rollback term of a TimeWarp model, fitted on measured runs.

    Parameters
    ----------
    event_cost : float
        CPU time per committed event on 1 PE (sequential runs). [s]
    network_cost : float
        CPU time per event that crosses the network, sender and receiver together
        (``send`` + ``recv`` of the model's message; the all-reduces pay it too). [s]
    latency : float
        Wire time of a message, as the all-reduces see it. [s]
    rollback_coefficient, rollback_exponent : float
        The rollback term of :class:`TimeWarp`. [-]
    workload : Workload
        The workload of the runs.
    calibrated_on : tuple of str
        Ids (``run`` numbers as text) of the runs used.
    """

    event_cost: float
    network_cost: float
    latency: float
    rollback_coefficient: float
    rollback_exponent: float
    workload: Workload
    calibrated_on: tuple[str, ...]

    def model(self, batch: int, gvt_interval: int, remote_percent: float,
              pes: int) -> TimeWarp:
        """The TimeWarp of one PHOLD configuration (``remote_percent`` as ``--remote``
        × 100 on ``pes`` PEs)."""
        half = self.network_cost / 2
        return TimeWarp(event_cost=self.event_cost, batch=batch, gvt_interval=gvt_interval,
                        remote_fraction=float(phold_network_fraction(remote_percent / 100, pes)),
                        message=Message(send=half, recv=half, latency=self.latency),
                        rollback_coefficient=self.rollback_coefficient,
                        rollback_exponent=self.rollback_exponent, workload=self.workload)

    def predict(self, configurations: pd.DataFrame, *, extrapolate: bool = False
                ) -> pd.DataFrame:
        """Noiseless committed rate [1/s] and ROSS efficiency [-] of each configuration.

        ``configurations`` needs ``pes``, ``batch``, ``gvt_interval``, ``remote_percent``,
        ``nlp`` and ``start_events``; the result has ``event_rate_per_s`` and
        ``efficiency`` on the same index. A workload other than the calibration's is
        refused unless ``extrapolate`` (then a :class:`WorkloadWarning`).
        """
        _need_columns(configurations, ("pes", "batch", "gvt_interval", "remote_percent",
                                       "nlp", "start_events"), "configurations")
        rates, efficiencies = [], []
        for row in configurations.itertuples():
            model = self.model(int(row.batch), int(row.gvt_interval), float(row.remote_percent),
                               int(row.pes))
            _check_workload(model, Workload(int(row.nlp), int(row.start_events)), extrapolate)
            # timewarp_predict's noiseless rate, without building its Dataset
            epoch = model.epoch_work + model.barrier().noiseless_time(int(row.pes))
            rates.append(int(row.pes) * model.committed_per_epoch / epoch)
            efficiencies.append(model.ross_efficiency)
        return pd.DataFrame({"event_rate_per_s": rates, "efficiency": efficiencies},
                            index=configurations.index)


_RUN_COLUMNS = ("run", "pes", "synch", "batch", "gvt_interval", "remote_percent", "nlp",
                "start_events", "committed_events", "events_rolled_back", "event_rate_per_s")
_CONFIGURATION = ["pes", "batch", "gvt_interval", "remote_percent"]


def _need_columns(table, columns, name: str) -> None:
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas DataFrame, got {type(table).__name__}")
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ValueError(f"{name} lacks the column(s) {missing} (ROSS PHOLD runs, as "
                         "jl.datasets.load_ross_phold() gives them)")


def calibrate_timewarp(runs: pd.DataFrame, *, allreduces: int = 2) -> TimeWarpCalibration:
    """Fit a TimeWarp's costs and rollback term on measured ROSS PHOLD runs.

    Parameters
    ----------
    runs : pandas.DataFrame
        The calibration runs (rows of :func:`jitterlab.datasets.load_ross_phold`): some
        sequential (``synch`` 1, 1 PE) and optimistic runs on more PEs at two or more
        values of batch · gvt_interval, one workload (``nlp``, ``start_events``).
    allreduces : int
        All-reduces per GVT computation. [-]

    Returns
    -------
    TimeWarpCalibration

    Notes
    -----
    Per configuration the medians over its repeats are used. The event cost is the
    sequential runs' time per committed event. The rollback term is a least-squares line
    in logarithms, log(ρ / f) = log(coefficient) + exponent · log(E / 1024), over the
    parallel configurations with rollbacks (ρ = events rolled back / committed; f the
    network fraction of :func:`phold_network_fraction`; E = batch · gvt_interval). The
    network cost and the latency are then a non-negative least-squares fit, in relative
    residuals, of the measured time per committed event and PE, (1 + ρ)(event_cost + f ·
    network_cost + C / E), with C the all-reduces of one GVT computation (linear in both).

    Raises
    ------
    ValueError
        Missing columns, no sequential or no parallel run, several workloads, or the
        rollbacks seen at fewer than two values of E.
    """
    _need_columns(runs, _RUN_COLUMNS, "runs")
    # the columns used, without the table's attrs: pandas deep-copies attrs into every
    # result, and the manifest entry of load_ross_phold made that 3/4 of a calibration's
    # time (notebook 13's 200 bootstrap refits: 5.7 CPU-s)
    runs = runs.loc[:, list(_RUN_COLUMNS)]
    runs.attrs = {}
    workloads = runs[["nlp", "start_events"]].drop_duplicates()
    if len(workloads) != 1:
        raise ValueError(f"the calibration runs mix {len(workloads)} workloads (nlp, "
                         f"start_events): {workloads.to_numpy().tolist()}; calibrate on one")
    workload = Workload(int(workloads["nlp"].iloc[0]), int(workloads["start_events"].iloc[0]))
    sequential = runs[(runs["synch"] == 1) & (runs["pes"] == 1)]
    parallel = runs[runs["pes"] > 1]
    if sequential.empty or parallel.empty:
        raise ValueError("the calibration needs sequential runs (synch 1 on 1 PE) for the "
                         "event cost and optimistic runs on more PEs for the rest; got "
                         f"{len(sequential)} and {len(parallel)}")
    event_cost = float(np.median(1.0 / sequential["event_rate_per_s"]))

    table = parallel.assign(
        rho=parallel["events_rolled_back"] / parallel["committed_events"],
        seconds=parallel["pes"] / parallel["event_rate_per_s"])
    table = table.groupby(_CONFIGURATION, as_index=False)[["rho", "seconds"]].median()
    table["events"] = table["batch"] * table["gvt_interval"]
    table["network"] = phold_network_fraction(table["remote_percent"] / 100, table["pes"])

    rolling = table[(table["rho"] > 0) & (table["network"] > 0)]
    if rolling.empty:
        coefficient, exponent = 0.0, 1.0
    elif rolling["events"].nunique() < 2:
        raise ValueError("the rollbacks were seen at one value of batch · gvt_interval "
                         f"only ({sorted(rolling['events'].unique())}): the rollback term "
                         "needs two or more")
    else:
        x = np.log(rolling["events"] / ROLLBACK_REFERENCE_EVENTS)
        y = np.log(rolling["rho"] / rolling["network"])
        exponent, intercept = np.polyfit(x, y, 1)
        coefficient = float(np.exp(intercept))

    rho = coefficient * table["network"] * (table["events"] / ROLLBACK_REFERENCE_EVENTS) \
        ** exponent
    # the all-reduces of one GVT computation on P PEs, per unit of send+recv and of latency
    per_cost, per_latency = [], []
    for pes in table["pes"]:
        unit_cpu = TimeWarp(event_cost=1.0, message=Message(send=0.5, recv=0.5),
                            allreduces=allreduces)
        unit_wire = TimeWarp(event_cost=1.0, message=Message(latency=1.0),
                             allreduces=allreduces)
        per_cost.append(unit_cpu.barrier().noiseless_time(int(pes)))
        per_latency.append(unit_wire.barrier().noiseless_time(int(pes)))
    scale = 1.0 + rho.to_numpy()
    design = np.column_stack([scale * (table["network"] + np.array(per_cost) / table["events"]),
                              scale * np.array(per_latency) / table["events"]])
    seconds = table["seconds"].to_numpy()
    target = seconds - scale * event_cost
    # relative residuals: a configuration 100 times slower does not weigh 100 times more
    (network_cost, latency), _ = nnls(design / seconds[:, None], target / seconds)
    return TimeWarpCalibration(
        event_cost=event_cost, network_cost=float(network_cost), latency=float(latency),
        rollback_coefficient=coefficient, rollback_exponent=float(exponent),
        workload=workload, calibrated_on=tuple(str(r) for r in runs["run"]))
