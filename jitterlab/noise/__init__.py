"""Noise models: frozen distributions of the noise δ, in seconds (``+ w`` gives w + δ).

Every model has ``cdf``, ``sf``, ``ppf``, ``isf``, ``mean`` and ``sample(size, rng=)``;
``model + w`` shifts it by the work ``w`` and ``model_a + model_b`` adds independent
sources.
"""

from ._base import Mixture, NoiseModel, Shifted, Sum
from .discrete import (
    Bernoulli,
    Discrete,
    Empirical,
    Histogram,
    TailedEmpirical,
    TailedHistogram,
    TailWarning,
)
from .parametric import Exponential, Pareto, Uniform
from .periodic import Periodic
from .piecewise import Piecewise
from .trace_law import from_trace

__all__ = [
    "NoiseModel", "Shifted", "Sum", "Mixture",
    "Exponential", "Pareto", "Uniform",
    "Discrete", "Bernoulli", "Empirical", "Histogram", "TailedEmpirical", "TailedHistogram",
    "TailWarning",
    "Periodic", "Piecewise", "from_trace",
]
