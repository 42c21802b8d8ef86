"""Optimistic parallel discrete-event simulation (Time Warp, ROSS) under noise: seed 004.

ROSS's event loop processes up to ``batch`` events per pass and, every ``gvt_interval``
passes, all processing elements (PEs) compute Global Virtual Time with all-reduces
(Holder & Carothers, seed 004, §2). Between two GVT computations a PE runs an *epoch*
of batch · gvt_interval events on its own; the all-reduces are the global
synchronisation where OS noise bites: the epoch ends for everyone when the slowest PE
is done. So a GVT epoch is a compute phase followed by a collective, and the three
methods of jitterlab apply to it directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from .._checks import check_integer, check_positive
from .._provenance import provenance_attrs
from .._random import RngLike
from ..bounds import theorem1_bounds
from ..collectives import Dissemination, RecursiveDoubling
from ..message import Message
from ..noise import NoiseModel
from ..simulate import TreeBarrier, _as_counts, simulate
from ..trace import Trace

__all__ = ["TimeWarp", "timewarp_predict"]

_COLLECTIVES = {"recursive_doubling": RecursiveDoubling, "dissemination": Dissemination,
                "tree": TreeBarrier}


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
    """

    event_cost: float
    batch: int = 4
    gvt_interval: int = 1024
    remote_fraction: float = 0.1
    efficiency: float = 1.0
    message: Message = field(default_factory=Message)
    collective: str = "recursive_doubling"
    allreduces: int = 2

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
                     rng: RngLike = None) -> xr.Dataset:
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
    commits efficiency · batch · gvt_interval events per PE and epoch, so the rate is
    N · efficiency · batch · gvt_interval / E[θ]. The bounds from a law assume, like
    Theorem 1, that the all-reduces' own sends and receives meet no noise; the
    trace-driven epochs include that noise too.

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
    counts = _as_counts(n)
    phases = check_integer("phases", phases, 2)
    barrier = model.barrier()
    work = model.epoch_work
    committed = model.efficiency * model.events_per_epoch
    collective = np.array([barrier.noiseless_time(int(count)) for count in counts])
    epoch = work + collective
    single = committed / work
    data = {
        "epoch_time": ("n", epoch, {"units": "s", "long_name": "GVT epoch without noise"}),
        "event_rate": ("n", counts * committed / epoch,
                       {"units": "1/s", "long_name": "committed events per second"}),
    }
    attrs = {"model": repr(model), "epoch_work": work, **provenance_attrs()}
    if isinstance(noise, NoiseModel):
        bounds = theorem1_bounds(noise + work, n=counts, barrier=barrier)
        lower, upper = bounds["lower"].to_numpy(), bounds["upper"].to_numpy()
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
