"""The two sides of a verdict: a prediction and a reference, each a value with its uncertainty.

:class:`Prediction` (a model's value, with the ids of the data its calibration used) and
:class:`Reference` (the paper's number or a measurement, with its source, its id and
possibly a bound), each given by an interval, a standard error or samples; compared by the
criteria of :mod:`~jitterlab.compare.verdict_criteria` in
:func:`~jitterlab.compare.verdict.verdict`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

__all__ = ["Prediction", "Reference"]


def finite_or_none(value, name: str, owner: str) -> float | None:
    """``value`` as a finite float, None for None; else an error naming it."""
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{owner}: {name} must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise ValueError(f"{owner}: {name} must be finite, got {number}")
    return number


def _ids(ids, owner: str, name: str) -> tuple[str, ...]:
    if ids is None:
        return ()
    if isinstance(ids, str):
        ids = (ids,)
    try:
        items = tuple(ids)
    except TypeError:
        raise TypeError(f"{owner}: {name} must be a string or strings, got {ids!r}") from None
    for item in items:
        if not isinstance(item, str) or not item:
            raise TypeError(f"{owner}: {name} must hold non-empty strings, got {item!r}")
    return items


@dataclass(frozen=True, init=False)
class _Quantity:
    """A value with an optional uncertainty: an interval, a standard error or samples."""

    value: float | None
    low: float | None
    high: float | None
    level: float
    standard_error: float | None
    unit: str

    def __init__(self, value=None, *, low=None, high=None, level=0.95, standard_error=None,
                 samples=None, unit=""):
        owner = type(self).__name__
        level = finite_or_none(level, "level", owner)
        if not 0.0 < level < 1.0:
            raise ValueError(f"{owner}: level must lie strictly between 0 and 1, got {level}")
        value = finite_or_none(value, "value", owner)
        low, high = finite_or_none(low, "low", owner), finite_or_none(high, "high", owner)
        standard_error = finite_or_none(standard_error, "standard_error", owner)
        if samples is not None:
            if low is not None or high is not None or standard_error is not None:
                raise ValueError(f"{owner}: give samples or an interval or a standard_error, "
                                 "not several")
            draws = np.asarray(samples, dtype=float).ravel()
            if draws.size < 2 or not np.all(np.isfinite(draws)):
                raise ValueError(f"{owner}: samples must be at least 2 finite numbers, "
                                 f"got {draws.size} values")
            if value is None:
                value = float(np.median(draws))
            low, high = (float(q) for q in np.quantile(draws, [(1 - level) / 2,
                                                              (1 + level) / 2]))
            standard_error = float(np.std(draws, ddof=1))
        shown_as_error = False
        if samples is None:
            shown_as_error = standard_error is not None and low is None
        if (low is None) != (high is None):
            raise ValueError(f"{owner}: give both low and high, or neither")
        if low is not None and low > high:
            raise ValueError(f"{owner}: low ({low}) is above high ({high})")
        if standard_error is not None:
            if standard_error < 0:
                raise ValueError(f"{owner}: standard_error must be >= 0, got {standard_error}")
            if value is None:
                raise ValueError(f"{owner}: a standard_error needs a value")
            if low is None:
                half = stats.norm.ppf((1 + level) / 2) * standard_error
                low, high = value - half, value + half
        if value is None and low is not None:
            value = (low + high) / 2
        if value is not None and low is not None and not low <= value <= high:
            raise ValueError(f"{owner}: value {value} lies outside [{low}, {high}]")
        for name, item in (("value", value), ("low", low), ("high", high), ("level", level),
                           ("standard_error", standard_error), ("unit", str(unit)),
                           ("_shown_as_error", shown_as_error)):
            object.__setattr__(self, name, item)

    @property
    def has_interval(self) -> bool:
        """Whether an uncertainty interval is known."""
        return self.low is not None

    def interval_se(self) -> float | None:
        """Standard error, given or read off a normal interval at ``level``."""
        if self.standard_error is not None:
            return self.standard_error
        if self.low is None:
            return None
        return (self.high - self.low) / (2 * stats.norm.ppf((1 + self.level) / 2))

    def text(self, digits: int = 3) -> str:
        """The value, its interval and unit as a short string."""
        if self.value is None:
            return "—"
        unit = f" {self.unit}" if self.unit else ""
        out = _number(self.value, digits)
        if self._shown_as_error:
            out += f" ± {_number(self.standard_error, 2)}"
        elif self.low is not None and self.high > self.low:
            out += f" [{_number(self.low, digits)}, {_number(self.high, digits)}]"
        return out + unit


def _number(x: float, digits: int) -> str:
    if x == 0 or (1e-3 <= abs(x) < 1e6):
        return f"{x:.{digits}g}" if abs(x) < 10 ** digits else f"{x:.0f}"
    return f"{x:.{digits - 1}e}"


@dataclass(frozen=True, init=False)
class Prediction(_Quantity):
    """What a model predicts, with its uncertainty and what it was calibrated on.

    Parameters
    ----------
    value : float, optional
        The predicted value (the samples' median when only samples are given). [unit]
    low, high : float, optional
        An interval at ``level`` around the value (e.g. a 95 % prediction interval). [unit]
    level : float
        Probability of the interval. [1]
    standard_error : float, optional
        Standard error of the value; gives a normal interval at ``level``. [unit]
    samples : array_like, optional
        Monte Carlo or bootstrap draws of the predicted quantity: the interval is their
        quantiles, the standard error their standard deviation. [unit]
    unit : str
        Unit of every number, as printed.
    calibrated_on : str or iterable of str
        Ids of the runs, table rows or recordings that fed the calibration.
    method : str
        How the value was obtained (model, calibration), as printed.
    """

    calibrated_on: tuple[str, ...] = field(default=())
    method: str = ""

    def __init__(self, value=None, *, low=None, high=None, level=0.95, standard_error=None,
                 samples=None, unit="", calibrated_on=(), method=""):
        super().__init__(value, low=low, high=high, level=level,
                         standard_error=standard_error, samples=samples, unit=unit)
        if self.value is None:
            raise ValueError("Prediction: give a value, an interval or samples")
        object.__setattr__(self, "calibrated_on", _ids(calibrated_on, "Prediction",
                                                       "calibrated_on"))
        object.__setattr__(self, "method", str(method))


@dataclass(frozen=True, init=False)
class Reference(_Quantity):
    """The number a prediction is held against: a paper's value or a measurement.

    Parameters
    ----------
    value : float, optional
        The reference value; for a limit (``bound``) the limit itself. [unit]
    low, high, level, standard_error, samples, unit
        As for :class:`Prediction`: the reference's own uncertainty.
    source : str
        Where the number comes from ("Hammond et al. 2010, Table 1", "data/measured/...").
    id : str or iterable of str, optional
        Ids of the data the reference is, checked against ``Prediction.calibrated_on``.
    bound : {None, "upper", "lower"}
        The reference is a limit: "upper" for "< value", "lower" for "> value".
    """

    source: str = ""
    id: tuple[str, ...] = field(default=())
    bound: str | None = None

    def __init__(self, value=None, *, low=None, high=None, level=0.95, standard_error=None,
                 samples=None, unit="", source="", id=None, bound=None):  # noqa: A002
        super().__init__(value, low=low, high=high, level=level,
                         standard_error=standard_error, samples=samples, unit=unit)
        if self.value is None:
            raise ValueError("Reference: give a value, an interval or samples")
        if bound not in (None, "upper", "lower"):
            raise ValueError(f"Reference: bound must be None, 'upper' or 'lower', got {bound!r}")
        object.__setattr__(self, "source", str(source))
        object.__setattr__(self, "id", _ids(id, "Reference", "id"))
        object.__setattr__(self, "bound", bound)

    def text(self, digits: int = 3) -> str:
        """The value (or the limit), its interval and unit as a short string."""
        plain = super().text(digits)
        return {"upper": "< ", "lower": "> "}.get(self.bound, "") + plain
