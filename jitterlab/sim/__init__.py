"""Trace-driven simulation: one replay engine, the barriers and collectives, GOAL schedules.

:mod:`~jitterlab.sim.replay` and :mod:`~jitterlab.sim.replay_kernels` are the engine
every simulator shares (a task's clock advanced through a jitter trace);
:mod:`~jitterlab.sim.simulate` runs bulk-synchronous phases on it (jitSim) with a
:class:`~jitterlab.sim.barriers.TreeBarrier` or a collective
(:mod:`~jitterlab.sim.collectives`, costs by :class:`~jitterlab.sim.message.Message`);
:mod:`~jitterlab.sim.event_output` turns runs into event traces; and
:mod:`jitterlab.sim.schedules` runs any GOAL schedule with LogGOPSim's semantics.
"""
