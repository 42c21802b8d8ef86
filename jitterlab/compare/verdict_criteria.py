"""The criteria of a verdict, each declared before the numbers are seen.

:class:`InInterval`, :class:`Consistent`, :class:`RelativeDifference`,
:class:`SameSignAndOrder` and :class:`WithinBound`: each judges a
:class:`~jitterlab.compare.verdict_quantities.Prediction` against a
:class:`~jitterlab.compare.verdict_quantities.Reference` ("reproduced", "partly" or "not
reproduced", with the numbers it computed) and describes itself as text, for
:func:`~jitterlab.compare.verdict.verdict`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import stats

from .verdict_quantities import Prediction, Reference, finite_or_none

__all__ = ["Consistent", "InInterval", "RelativeDifference", "SameSignAndOrder", "WithinBound"]


def _check_level(level, owner: str) -> None:
    if not 0.0 < float(level) < 1.0:
        raise ValueError(f"{owner}: level must lie strictly between 0 and 1, got {level}")


def _need_interval(quantity: Prediction | Reference, who: str, criterion: str) -> None:
    if not quantity.has_interval:
        raise ValueError(f"{criterion}: the {who} needs an uncertainty (low/high, "
                         "standard_error or samples)")


def _no_bound(reference: Reference, criterion: str) -> None:
    if reference.bound is not None:
        raise ValueError(f"{criterion}: the reference is a limit ({reference.bound}); "
                         "use WithinBound")


@dataclass(frozen=True)
class InInterval:
    """The reference lies in the prediction's interval at ``level``.

    Reproduced when the reference value lies in the prediction interval; partly when only the
    reference's own interval overlaps it; not reproduced otherwise. With ``max_half_width``, a
    wide interval cannot pass: when the interval's half-width, (high − low) / 2, exceeds
    ``max_half_width`` times the predicted value, a reference inside it is only partly.

    Parameters
    ----------
    level : float
        Probability of the prediction interval used (a normal interval is rescaled). [1]
    max_half_width : float, optional
        Largest half-width of the interval, relative to the predicted value, for which a
        reference inside it counts as reproduced (0.25: at most ± 25 %). [1]
    """

    level: float = 0.95
    max_half_width: float | None = None

    def __post_init__(self):
        _check_level(self.level, "InInterval")
        if self.max_half_width is not None:
            width = finite_or_none(self.max_half_width, "max_half_width", "InInterval")
            if not width > 0:
                raise ValueError(f"InInterval: max_half_width must be > 0 (a fraction of the "
                                 f"predicted value), got {self.max_half_width}")

    def describe(self) -> str:
        text = (f"reproduced if the reference lies in the prediction's {100 * self.level:g} % "
                "interval")
        if self.max_half_width is None:
            return text
        return (f"{text} and that interval spans at most ± {100 * self.max_half_width:g} % of "
                "the predicted value (partly: in a wider interval, or only the reference's "
                "interval overlaps)")

    def judge(self, prediction: Prediction, reference: Reference) -> tuple[str, dict]:
        _no_bound(reference, "InInterval")
        _need_interval(prediction, "prediction", "InInterval")
        low, high = prediction.low, prediction.high
        if not math.isclose(prediction.level, self.level):
            se = prediction.interval_se()
            half = stats.norm.ppf((1 + self.level) / 2) * se
            low, high = prediction.value - half, prediction.value + half
        details = {"interval low": low, "interval high": high}
        if self.max_half_width is not None:
            if prediction.value == 0:
                raise ValueError("InInterval: max_half_width is relative to the predicted "
                                 "value, which is 0; give an interval criterion without it")
            details["interval half-width / value"] = (high - low) / 2 / abs(prediction.value)
        if low <= reference.value <= high:
            if self.max_half_width is not None and \
                    details["interval half-width / value"] > self.max_half_width:
                return "partly", details
            return "reproduced", details
        if reference.has_interval and reference.low <= high and low <= reference.high:
            return "partly", details
        return "not reproduced", details


@dataclass(frozen=True)
class Consistent:
    """Prediction and reference agree within their combined standard errors.

    With z = |p − r| / √(se_p² + se_r²): reproduced when z is below the two-sided normal
    quantile of ``level``, partly when below twice that, not reproduced otherwise.
    """

    level: float = 0.95

    def __post_init__(self):
        _check_level(self.level, "Consistent")

    def describe(self) -> str:
        return (f"reproduced if the difference lies within the {100 * self.level:g} % band of the "
                "combined errors")

    def judge(self, prediction: Prediction, reference: Reference) -> tuple[str, dict]:
        _no_bound(reference, "Consistent")
        se_p, se_r = prediction.interval_se(), reference.interval_se()
        if se_p is None and se_r is None:
            raise ValueError("Consistent: the prediction or the reference needs an uncertainty")
        combined = math.hypot(se_p or 0.0, se_r or 0.0)
        difference = prediction.value - reference.value
        limit = stats.norm.ppf((1 + self.level) / 2)
        z = math.inf if combined == 0 and difference != 0 else (
            0.0 if difference == 0 else abs(difference) / combined)
        details = {"difference": difference, "combined se": combined, "z": z}
        if z < limit:
            return "reproduced", details
        return ("partly" if z < 2 * limit else "not reproduced"), details


@dataclass(frozen=True)
class RelativeDifference:
    """|p − r| / |r| below ``tolerance`` (reproduced) or below ``partly`` (partly)."""

    tolerance: float = 0.10
    partly: float | None = None

    def __post_init__(self):
        if not float(self.tolerance) > 0:
            raise ValueError(f"RelativeDifference: tolerance must be > 0, got {self.tolerance}")
        if self.partly is not None and not float(self.partly) > float(self.tolerance):
            raise ValueError(f"RelativeDifference: partly ({self.partly}) must exceed "
                             f"tolerance ({self.tolerance})")

    def describe(self) -> str:
        text = f"reproduced if the relative difference < {100 * self.tolerance:g} %"
        if self.partly is not None:
            text += f" (partly: < {100 * self.partly:g} %)"
        return text

    def judge(self, prediction: Prediction, reference: Reference) -> tuple[str, dict]:
        _no_bound(reference, "RelativeDifference")
        if reference.value == 0:
            raise ValueError("RelativeDifference: the reference is 0; use Consistent")
        relative = (prediction.value - reference.value) / abs(reference.value)
        details = {"relative difference": round(relative, 12)}
        if abs(relative) < self.tolerance:
            return "reproduced", details
        if self.partly is not None and abs(relative) < self.partly:
            return "partly", details
        return "not reproduced", details


@dataclass(frozen=True)
class SameSignAndOrder:
    """Same sign and within a factor ``factor`` (reproduced); same sign only (partly)."""

    factor: float = 10.0

    def __post_init__(self):
        if not float(self.factor) > 1:
            raise ValueError(f"SameSignAndOrder: factor must be > 1, got {self.factor}")

    def describe(self) -> str:
        return f"reproduced if of the same sign and within a factor {self.factor:g}"

    def judge(self, prediction: Prediction, reference: Reference) -> tuple[str, dict]:
        _no_bound(reference, "SameSignAndOrder")
        p, r = prediction.value, reference.value
        if p == 0 or r == 0:
            return "not reproduced", {"ratio": math.nan}
        ratio = p / r
        details = {"ratio": ratio}
        if ratio <= 0:
            return "not reproduced", details
        if 1 / self.factor <= ratio <= self.factor:
            return "reproduced", details
        return "partly", details


@dataclass(frozen=True)
class WithinBound:
    """The prediction respects the reference's limit (``Reference(bound=...)``).

    Reproduced when the whole prediction interval is on the allowed side (or the value, when no
    interval is known); partly when only the value is; not reproduced otherwise.
    """

    def describe(self) -> str:
        return "reproduced if the prediction's interval lies within the reference's limit"

    def judge(self, prediction: Prediction, reference: Reference) -> tuple[str, dict]:
        if reference.bound is None:
            raise ValueError("WithinBound: the reference has no bound; give "
                             "Reference(..., bound='upper' or 'lower')")
        upper = reference.bound == "upper"

        def allowed(x):
            return x < reference.value if upper else x > reference.value

        far = (prediction.high if upper else prediction.low) if prediction.has_interval \
            else prediction.value
        details = {"margin": (reference.value - prediction.value) if upper
                   else (prediction.value - reference.value)}
        if allowed(prediction.value) and allowed(far):
            return "reproduced", details
        if allowed(prediction.value):
            return "partly", details
        return "not reproduced", details
