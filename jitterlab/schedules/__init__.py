"""GOAL communication schedules (LogGOPSim's format) and their simulation under noise.

:class:`Schedule` holds a schedule as columns of numpy arrays (see
:mod:`jitterlab.schedules.schedule`); :func:`read_goal` and :meth:`Schedule.to_goal`
read and write LogGOPSim's GOAL text.
"""

from .goal import GoalSyntaxError, read_goal, write_goal
from .schedule import (
    ANY_SOURCE,
    ANY_TAG,
    CALC,
    RECV,
    SEND,
    Schedule,
    dependencies_from_pairs,
)

__all__ = ["Schedule", "read_goal", "write_goal", "GoalSyntaxError", "SEND", "RECV", "CALC",
           "ANY_SOURCE", "ANY_TAG", "dependencies_from_pairs"]
