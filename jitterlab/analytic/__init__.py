"""The analytic methods: max-of-N, Theorem 1 and their asymptotics.

:func:`~jitterlab.analytic.maxofn.max_of_n` (the law of the slowest of N processes),
:func:`~jitterlab.analytic.bounds.theorem1_bounds` (Garg & De's bounds with a tree
barrier), :mod:`~jitterlab.analytic.asymptotics` (extreme-value limits) and
:mod:`~jitterlab.analytic.correlated` (max-of-N when the processes' noise is correlated).
They take the barrier's shape from :mod:`jitterlab.sim.barriers`.
"""
