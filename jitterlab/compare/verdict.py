"""Verdicts computed, not typed: a prediction against a reference under a declared criterion.

A comparison with a paper or a measurement has three parts, fixed in this order:

1. the **criterion**, declared before any number is seen (:class:`InInterval`,
   :class:`Consistent`, :class:`RelativeDifference`, :class:`SameSignAndOrder`,
   :class:`WithinBound`);
2. the **prediction** (:class:`Prediction`): a value with its uncertainty, and the ids of the
   data its calibration used (``calibrated_on``);
3. the **reference** (:class:`Reference`): the paper's number or a measurement, with its source
   and the id of the data it is.

:func:`verdict` applies the criterion and returns a :class:`Verdict` ("reproduced", "partly" or
"not reproduced", the numbers side by side and the criterion as text). It refuses a reference
that fed the prediction's calibration (:class:`CalibrationOverlapError`): a fit is not a test of
itself. :class:`VerdictTable` collects the verdicts of a notebook and shows them as one table
that updates in place.

Examples
--------
>>> from jitterlab.compare.validate import Prediction, Reference, RelativeDifference, verdict
>>> v = verdict(Prediction(104.0, unit="s"), Reference(100.0, unit="s", source="Table 1"),
...             RelativeDifference(0.10), claim="run time at 64 cores")
>>> v.status
'reproduced'
>>> v.details["relative difference"]
0.04
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

__all__ = ["CalibrationOverlapError", "Consistent", "InInterval", "Prediction", "Reference",
           "RelativeDifference", "SameSignAndOrder", "Verdict", "VerdictTable", "WithinBound",
           "verdict"]

STATUSES = ("reproduced", "partly", "not reproduced")
SCOPES = ("reproduction", "analogue", "self-consistency")


class CalibrationOverlapError(ValueError):
    """A reference is among the data the prediction was calibrated on."""


# --------------------------------------------------------------------------------------
# the two sides: a value with its uncertainty
# --------------------------------------------------------------------------------------
def _finite(value, name: str, owner: str) -> float | None:
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
        level = _finite(level, "level", owner)
        if not 0.0 < level < 1.0:
            raise ValueError(f"{owner}: level must lie strictly between 0 and 1, got {level}")
        value = _finite(value, "value", owner)
        low, high = _finite(low, "low", owner), _finite(high, "high", owner)
        standard_error = _finite(standard_error, "standard_error", owner)
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


# --------------------------------------------------------------------------------------
# criteria
# --------------------------------------------------------------------------------------
def _check_level(level, owner: str) -> None:
    if not 0.0 < float(level) < 1.0:
        raise ValueError(f"{owner}: level must lie strictly between 0 and 1, got {level}")


def _need_interval(quantity: _Quantity, who: str, criterion: str) -> None:
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
            width = _finite(self.max_half_width, "max_half_width", "InInterval")
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


# --------------------------------------------------------------------------------------
# the verdict
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Verdict:
    """The outcome of one comparison, with its numbers and its criterion."""

    claim: str
    status: str
    scope: str
    criterion: str
    prediction: Prediction
    reference: Reference
    details: dict
    needs: str | None = None

    @property
    def label(self) -> str:
        """The status with its scope, e.g. ``"analogue: partly"``."""
        if self.scope == "reproduction":
            return self.status
        return f"{self.scope}: {self.status}"

    def as_dict(self) -> dict:
        """One row of a verdict table."""
        return {"claim": self.claim, "prediction": self.prediction.text(),
                "reference": self.reference.text(), "source": self.reference.source,
                "criterion": self.criterion, "verdict": self.label,
                "needs": self.needs or ""}

    def __str__(self) -> str:
        text = (f"{self.claim}: {self.label} — {self.prediction.text()} against "
                f"{self.reference.text()} ({self.criterion})")
        return text + (f"; to reproduce it needs {self.needs}" if self.needs else "")


def verdict(prediction: Prediction, reference: Reference, criterion, *, claim: str,
            scope: str = "reproduction", needs: str | None = None) -> Verdict:
    """Judge a prediction against a reference by a criterion declared beforehand.

    Parameters
    ----------
    prediction : Prediction
        The model's value with its uncertainty and ``calibrated_on``.
    reference : Reference
        The paper's value or a measurement.
    criterion : InInterval, Consistent, RelativeDifference, SameSignAndOrder or WithinBound
        The rule, chosen before the numbers were seen.
    claim : str
        What is checked, as it appears in the table ("Table 1, 64 cores").
    scope : {"reproduction", "analogue", "self-consistency"}
        "analogue": this machine can show the mechanism only (give ``needs``);
        "self-consistency": jitterlab checked against itself, not against the paper.
    needs : str, optional
        For an analogue: what reproducing the original would need ("1 024 nodes").

    Returns
    -------
    Verdict

    Raises
    ------
    CalibrationOverlapError
        When an id of the reference is among ``prediction.calibrated_on``.
    """
    if not isinstance(prediction, Prediction):
        raise TypeError(f"verdict: prediction must be a Prediction, got "
                        f"{type(prediction).__name__}")
    if not isinstance(reference, Reference):
        raise TypeError(f"verdict: reference must be a Reference, got "
                        f"{type(reference).__name__}")
    if not (hasattr(criterion, "judge") and hasattr(criterion, "describe")):
        raise TypeError("verdict: criterion must be one of InInterval, Consistent, "
                        "RelativeDifference, SameSignAndOrder, WithinBound (an instance), "
                        f"got {criterion!r}")
    if not isinstance(claim, str) or not claim.strip():
        raise ValueError("verdict: claim must be a non-empty string naming what is checked")
    if scope not in SCOPES:
        raise ValueError(f"verdict: scope must be one of {SCOPES}, got {scope!r}")
    if scope == "analogue" and not needs:
        raise ValueError("verdict: an analogue must say what reproducing the original needs "
                         "(needs=...)")
    overlap = sorted(set(reference.id) & set(prediction.calibrated_on))
    if overlap:
        raise CalibrationOverlapError(
            f"verdict for {claim!r}: the reference {', '.join(overlap)} fed the prediction's "
            "calibration; a fit is not a test of itself — compare with data left out of the fit")
    if prediction.unit != reference.unit:
        raise ValueError(f"verdict for {claim!r}: the prediction is in {prediction.unit!r} "
                         f"and the reference in {reference.unit!r}")
    status, details = criterion.judge(prediction, reference)
    return Verdict(claim=claim, status=status, scope=scope, criterion=criterion.describe(),
                   prediction=prediction, reference=reference, details=dict(details),
                   needs=needs)


class VerdictTable:
    """The verdicts of a notebook, shown as one table that updates in place.

    Call :meth:`show` in a cell at the top of a notebook; every :meth:`add` later redraws that
    display (in Jupyter), and ``print(table)`` gives the final markdown text (for a cell nbval
    checks).
    """

    COLUMNS = ("claim", "prediction", "reference", "source", "criterion", "verdict")

    def __init__(self, title: str = ""):
        self.title = str(title)
        self._verdicts: list[Verdict] = []
        self._handle = None

    def add(self, item: Verdict) -> Verdict:
        """Append a verdict (replacing one with the same claim) and redraw the table."""
        if not isinstance(item, Verdict):
            raise TypeError(f"VerdictTable.add: expected a Verdict, got {type(item).__name__}")
        self._verdicts = [v for v in self._verdicts if v.claim != item.claim] + [item]
        if self._handle is not None:
            self._handle.update(self._display_object())
        return item

    def extend(self, items: Iterable[Verdict]) -> None:
        """Add several verdicts."""
        for item in items:
            self.add(item)

    def __len__(self) -> int:
        return len(self._verdicts)

    def __iter__(self):
        return iter(self._verdicts)

    def to_frame(self) -> pd.DataFrame:
        """One row per verdict."""
        rows = [v.as_dict() for v in self._verdicts]
        frame = pd.DataFrame(rows, columns=[*self.COLUMNS, "needs"])
        return frame

    def counts(self) -> dict[str, int]:
        """How many verdicts have each label."""
        out: dict[str, int] = {}
        for v in self._verdicts:
            out[v.label] = out.get(v.label, 0) + 1
        return out

    def to_markdown(self) -> str:
        """The table as markdown (a title line, then a pipe table)."""
        lines = [f"**{self.title}**", ""] if self.title else []
        if not self._verdicts:
            return "\n".join(lines + ["(no verdict yet: the cells below add them as they run)"])
        lines.append("| " + " | ".join(self.COLUMNS) + " |")
        lines.append("|" + "---|" * len(self.COLUMNS))
        for v in self._verdicts:
            row = v.as_dict()
            verdict_text = row["verdict"] + (f" (needs {row['needs']})" if row["needs"] else "")
            cells = [row[c] for c in self.COLUMNS[:-1]] + [verdict_text]
            lines.append("| " + " | ".join(str(c).replace("|", "/") for c in cells) + " |")
        return "\n".join(lines)

    __str__ = to_markdown

    def _display_object(self):
        from IPython.display import Markdown

        return Markdown(self.to_markdown())

    def show(self):
        """Display the table (in Jupyter) and keep redrawing it as verdicts are added."""
        from IPython.display import display

        self._handle = display(self._display_object(), display_id=True)
        return None

    def _repr_markdown_(self) -> str:
        return self.to_markdown()
