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

The two sides are :mod:`~jitterlab.compare.verdict_quantities`'s, the criteria
:mod:`~jitterlab.compare.verdict_criteria`'s; this module judges, and re-exports both.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd

from .verdict_criteria import (
    Consistent,
    InInterval,
    RelativeDifference,
    SameSignAndOrder,
    WithinBound,
)
from .verdict_quantities import Prediction, Reference

__all__ = ["CalibrationOverlapError", "Consistent", "InInterval", "Prediction", "Reference",
           "RelativeDifference", "SameSignAndOrder", "Verdict", "VerdictTable", "WithinBound",
           "verdict"]

STATUSES = ("reproduced", "partly", "not reproduced")
SCOPES = ("reproduction", "analogue", "self-consistency")


class CalibrationOverlapError(ValueError):
    """A reference is among the data the prediction was calibrated on."""


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
