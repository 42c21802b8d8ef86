"""What is recorded: jitter traces and event traces, and how they are written.

:class:`~jitterlab.traces.trace.Trace` (jitter durations and the gaps between them),
:class:`~jitterlab.traces.events.EventTrace` (per-rank compute and message intervals),
synthetic traces (:mod:`~jitterlab.traces.synthetic`) and the writers of every trace
format (:mod:`~jitterlab.traces.writers`). Reading files is :mod:`jitterlab.io`'s job.
"""
