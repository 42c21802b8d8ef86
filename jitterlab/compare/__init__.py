"""Models against measurements: verdicts, estimation, characterization, attribution.

:mod:`~jitterlab.compare.validate` and :mod:`~jitterlab.compare.verdict` (predictions
against measured distributions, verdicts with declared criteria),
:mod:`~jitterlab.compare.estimate` (noise effect from event traces, seed 003),
:mod:`~jitterlab.compare.characterize` and :mod:`~jitterlab.compare.stationarity`
(what a recording's noise is like, and whether it stays so), :mod:`~jitterlab.compare.counters`
(hardware counters), :mod:`~jitterlab.compare.attribution` and
:mod:`~jitterlab.compare.causes` (each detour's kernel cause).
"""
