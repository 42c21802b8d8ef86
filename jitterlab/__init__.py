"""jitterlab: how much does operating-system noise slow a parallel program at N processes?

Three methods side by side: distribution-based max-of-N (:func:`max_of_n`), the
Theorem 1 bounds of Garg & De (:func:`theorem1_bounds`), and trace-driven simulation.
"""

from importlib.metadata import PackageNotFoundError, version

from . import noise
from .bounds import arrival_offsets, barrier_time, theorem1_bounds, tree_depth
from .maxofn import max_of_n

try:
    __version__ = version("jitterlab")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"

__all__ = ["noise", "max_of_n", "theorem1_bounds", "tree_depth", "arrival_offsets",
           "barrier_time", "__version__"]
