"""A strictly periodic noise source (timer tick, periodic daemon) seen by a window of work.

References
----------
.. [1] P. De, V. Mann, "jitSim: A Simulator for Predicting Scalability of Parallel
   Applications in Presence of OS Jitter", Euro-Par 2010 workshops (seed 000): the
   timer tick and periodic daemons as the main sources of jitter.
"""

from __future__ import annotations

import math

from ._base import NoiseModel, check_positive
from .piecewise import Piecewise

__all__ = ["Periodic"]


class Periodic(Piecewise):
    """The noise δ met by ``work`` of compute that starts at a uniformly random phase
    of a source that steals ``duration`` every ``period`` (point masses plus one
    uniform piece, see :class:`Piecewise`).

    Parameters
    ----------
    period : float
        Time between the starts of two consecutive detours, e.g. 4 ms for a 250 Hz tick. [s]
    duration : float
        Length of each detour; must be shorter than ``period``. [s]
    work : float
        Undisturbed compute time of the window; must be > 0. The law is still that of
        the noise δ (add ``work`` for the phase time). [s]

    Notes
    -----
    Let c = period − duration be the compute available per period and
    w/c = m + f (m an integer, 0 <= f < 1). A window that starts in compute meets
    m detours with probability 1 − f and m + 1 with probability f; one that starts
    inside a detour (probability duration/period) first waits out its uniform
    remainder, then meets ceil(w/c) − 1 more. A detour that begins exactly when the
    work completes is not counted (the convention of jitSim, seed 000 §3). So the
    noise takes one or two values plus a small uniform part: periodic noise is
    *bounded*, and E[max of N] saturates near (m + 1)·duration.

    Examples
    --------
    >>> tick = Periodic(period=4e-3, duration=2.5e-6, work=1e-3)
    >>> round(tick.mean() / 1e-6, 6)  # ≈ work·duration/period plus the wait-out [µs]
    0.625782
    """

    def __init__(self, period: float, duration: float, work: float):
        self.period = check_positive("period", period)
        self.duration = check_positive("duration", duration)
        self.work = check_positive("work", work)
        if self.duration >= self.period:
            raise ValueError(f"duration ({self.duration:g} s) must be shorter than period "
                             f"({self.period:g} s)")
        d = self.duration
        compute = self.period - d
        m, f = divmod(self.work / compute, 1.0)
        # starting inside a detour: wait out U(0, d], then ceil(w/c) - 1 more detours
        later = max(math.ceil(self.work / compute) - 1, 0) * d
        in_compute = compute / self.period
        super().__init__(atom_values=[m * d, (m + 1) * d],
                         atom_weights=[in_compute * (1.0 - f), in_compute * f],
                         segment_low=[later], segment_high=[later + d],
                         segment_weights=[d / self.period])

    @property
    def params(self) -> dict:
        return {"period": self.period, "duration": self.duration, "work": self.work}

    def describe(self) -> str:
        return NoiseModel.describe(self)

    def with_work(self, work: float) -> Periodic:
        """The same source seen by a window of a different ``work``. [s]"""
        return Periodic(period=self.period, duration=self.duration, work=work)
