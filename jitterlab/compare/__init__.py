"""Models against measurements: verdicts, estimation, characterization, attribution.

:mod:`~jitterlab.compare.validate` and :mod:`~jitterlab.compare.verdict` (predictions
against measured distributions, verdicts with declared criteria; their two sides in
:mod:`~jitterlab.compare.verdict_quantities`, the criteria in
:mod:`~jitterlab.compare.verdict_criteria`),
:mod:`~jitterlab.compare.estimate` (noise effect from event traces, seed 003),
:mod:`~jitterlab.compare.characterize` and :mod:`~jitterlab.compare.stationarity`
(what a recording's noise is like, and whether it stays so; the change-point test in
:mod:`~jitterlab.compare.cusum`), :mod:`~jitterlab.compare.counters`
(hardware counters), :mod:`~jitterlab.compare.attribution` and
:mod:`~jitterlab.compare.causes` (each detour's kernel cause; the checked table in
:mod:`~jitterlab.compare.cause_table`, removing a cause in
:mod:`~jitterlab.compare.cause_removal`, periodic sources by cause in
:mod:`~jitterlab.compare.cause_sources`).
"""
