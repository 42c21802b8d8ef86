"""What is recorded: jitter traces and event traces, and how they are written.

:class:`~jitterlab.traces.trace.Trace` (jitter durations and the gaps between them),
:class:`~jitterlab.traces.events.EventTrace` (per-rank compute and message intervals),
synthetic traces (:mod:`~jitterlab.traces.synthetic`, built from the noise sources of
:mod:`~jitterlab.traces.noise_sources`, with a co-scheduler's windows from
:mod:`~jitterlab.traces.coscheduling` and jitSim's node from
:mod:`~jitterlab.traces.jitsim_node`) and the writers of every trace format
(:mod:`~jitterlab.traces.writers`). Reading files is :mod:`jitterlab.io`'s job.
"""
