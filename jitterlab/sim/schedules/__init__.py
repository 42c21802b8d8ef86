"""GOAL communication schedules (LogGOPSim's format) and their simulation under noise.

:class:`Schedule` holds a schedule as columns of numpy arrays (see
:mod:`jitterlab.traces.schedule`); :func:`read_goal` and :meth:`Schedule.to_goal`
read and write LogGOPSim's GOAL text; :class:`LogGOPS` holds the cost parameters and
:func:`simulate_schedule` runs a schedule with LogGOPSim's semantics, without noise (equal
to LogGOPSim to the nanosecond) or under a noise trace or law; :mod:`generators` builds the
schedules of common collectives and patterns as LogGOPSim's Schedgen2 does, and
:mod:`programs` jitterlab's own programs (tree barrier, round collectives, wavefront).
``simulate_schedule(..., detail="events")`` gives a run's :class:`~jitterlab.EventTrace`
(:mod:`jitterlab.schedules.tracing`), and ``EventTrace.to_schedule()`` a schedule from a
trace.
"""

from ...traces.schedule import (
    ANY_SOURCE,
    ANY_TAG,
    CALC,
    RECV,
    SEND,
    Schedule,
    dependencies_from_pairs,
)
from . import generators, programs
from .goal import GoalSyntaxError, read_goal, write_goal
from .loggops import LogGOPS
from .simulate import DeadlockError, simulate_schedule

__all__ = ["Schedule", "LogGOPS", "simulate_schedule", "DeadlockError", "read_goal",
           "write_goal", "GoalSyntaxError", "SEND", "RECV", "CALC", "ANY_SOURCE", "ANY_TAG",
           "dependencies_from_pairs", "generators", "programs"]
