"""The foundations every room of jitterlab stands on, importing nothing else of it.

Argument checks (:mod:`~jitterlab.base.checks`), reproducible random streams
(:mod:`~jitterlab.base.rng`), numerical integration (:mod:`~jitterlab.base.integrate`),
provenance attributes (:mod:`~jitterlab.base.provenance`), the thread count of the
numba kernels (:mod:`~jitterlab.base.threads`), size limits
(:mod:`~jitterlab.base.limits`), names imported on first use
(:mod:`~jitterlab.base.lazy`), checks of a table's columns (:mod:`~jitterlab.base.tables`)
and atomic file writes (:mod:`~jitterlab.base.files`).
"""
