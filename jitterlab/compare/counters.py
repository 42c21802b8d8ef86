"""Cache and TLB metrics from hardware counters: the equations of Holder & Carothers (seed 004).

The input is a tidy table (pandas DataFrame): one row per measurement (a process, a run, a
configuration), one column per counter named as PAPI names it (``PAPI_L1_DCA``,
``PAPI_L2_TCM``, ...), plus any label columns (``processors``, ``remote_fraction``,
``run``, ...). Every metric function returns a Series aligned with the table's rows; the
labels stay in the table and :func:`metrics` copies them into its result.

=====================  ==========================================================  =========
metric                 definition                                                  equation
=====================  ==========================================================  =========
``L1_MISS_RATE``       PAPI_L2_TCA / (PAPI_L1_DCA + PAPI_L1_ICA)                    1
``L2_MISS_RATE``       PAPI_L2_TCM / PAPI_L2_TCA                                    2
``L2_DATA_MISS_RATE``  1 − PAPI_L2_DCH / PAPI_L2_DCA                                3
``L3_MISS_RATE``       PAPI_L3_TCM / (PAPI_L3_TCM + PAPI_L3_TCH)                    4
``TLB_MISS_RATIO``     PAPI_TLB_TL / PAPI_TOT_CYC (· ``per``), an assumption         5
=====================  ==========================================================  =========

Equation 1 counts every access that reaches the level-2 cache as a level-1 miss.
Equation 5 (the TLB miss ratio of the paper's Fig. 5) is not printed in the paper: the
text names only the two counters it uses, PAPI_TLB_TL (TLB misses) and PAPI_TOT_CYC
(cycles). :func:`tlb_miss_ratio` *assumes* the ratio of the two, TLB misses per cycle,
optionally scaled (``per=1000`` gives misses per 1000 cycles).

Counts come from :func:`read_papi` (PAPI's ``papi_command_line`` output, or a CSV with
PAPI names as header) or :func:`read_perf_stat` (``perf stat -x,`` output, perf's generic
event names translated to PAPI presets where the two mean the same thing; see
:data:`PERF_TO_PAPI`). ``jitterlab measure counters -- CMD`` runs ``perf stat`` on a command
when the machine exposes a hardware PMU.

Errors name what is wrong: the counter an equation needs and does not find (Blue Gene/L,
for instance, has no level-1 counters, so equations 1 and 2 cannot be computed there, as
the paper notes in §3), a count that is negative, non-finite or not a number (column and
row), and a zero denominator (equation, columns and row).

References
----------
.. [1] A. Holder, C. D. Carothers, "Investigating the Memory Characteristics of a Massively
   Parallel Time Warp Kernel" (seed 004), §3, equations 1-4; §4.1 and Fig. 5 for the TLB
   miss ratio.
.. [2] S. Browne, J. Dongarra, N. Garner, G. Ho, P. Mucci, "A portable programming interface
   for performance evaluation on modern processors", Int. J. High Perform. Comput. Appl.
   14 (4), 2000 (PAPI).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..base.checks import plain_scalar
from ..io.counters import PERF_TO_PAPI, read_papi, read_perf_stat  # noqa: F401
from ..measure.counters import EVENT_SOURCES, PERF_EVENTS, measure_perf_stat, perf_counters_problem  # noqa: F401  (jl.counters.*)

__all__ = ["EQUATIONS", "PERF_TO_PAPI", "l1_miss_rate", "l2_miss_rate", "l2_data_miss_rate",
           "l3_miss_rate", "tlb_miss_ratio", "metrics", "read_perf_stat", "read_papi",
           "PERF_EVENTS", "perf_counters_problem", "measure_perf_stat"]

#: metric name -> (equation number, counters it needs, function name)
EQUATIONS = {
    "L1_MISS_RATE": (1, ("PAPI_L1_DCA", "PAPI_L1_ICA", "PAPI_L2_TCA"), "l1_miss_rate"),
    "L2_MISS_RATE": (2, ("PAPI_L2_TCM", "PAPI_L2_TCA"), "l2_miss_rate"),
    "L2_DATA_MISS_RATE": (3, ("PAPI_L2_DCH", "PAPI_L2_DCA"), "l2_data_miss_rate"),
    "L3_MISS_RATE": (4, ("PAPI_L3_TCM", "PAPI_L3_TCH"), "l3_miss_rate"),
    "TLB_MISS_RATIO": (5, ("PAPI_TLB_TL", "PAPI_TOT_CYC"), "tlb_miss_ratio"),
}


# --------------------------------------------------------------------------------------
# the equations
# --------------------------------------------------------------------------------------
def l1_miss_rate(table: pd.DataFrame) -> pd.Series:
    """Level-1 cache miss rate, equation 1 of Holder & Carothers.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per measurement with the columns ``PAPI_L2_TCA`` (level-2 accesses),
        ``PAPI_L1_DCA`` and ``PAPI_L1_ICA`` (level-1 data and instruction cache
        accesses). [count]

    Returns
    -------
    pandas.Series
        ``L1_MISS_RATE`` per row, on the table's index. [-]

    Raises
    ------
    KeyError
        If a counter is missing (the message names it and the equation).
    ValueError
        If a count is negative, non-finite or not a number, or the denominator is zero.

    Notes
    -----
    L1_MISS_RATE = PAPI_L2_TCA / (PAPI_L1_DCA + PAPI_L1_ICA): every access that reaches
    level 2 is counted as a level-1 miss.

    References
    ----------
    .. [1] Holder & Carothers (seed 004), §3, equation 1.

    Examples
    --------
    >>> import pandas as pd
    >>> from jitterlab import counters
    >>> table = pd.DataFrame({"PAPI_L1_DCA": [900], "PAPI_L1_ICA": [100], "PAPI_L2_TCA": [25]})
    >>> float(counters.l1_miss_rate(table).iloc[0])
    0.025
    """
    counts = _counts(table, "L1_MISS_RATE")
    return _ratio(table, "L1_MISS_RATE", counts["PAPI_L2_TCA"],
                  counts["PAPI_L1_DCA"] + counts["PAPI_L1_ICA"], "PAPI_L1_DCA + PAPI_L1_ICA")


def l2_miss_rate(table: pd.DataFrame) -> pd.Series:
    """Level-2 cache miss rate, equation 2 of Holder & Carothers.

    Parameters
    ----------
    table : pandas.DataFrame
        Columns ``PAPI_L2_TCM`` (level-2 misses) and ``PAPI_L2_TCA`` (level-2 accesses),
        one row per measurement. [count]

    Returns
    -------
    pandas.Series
        ``L2_MISS_RATE`` per row. [-]

    Notes
    -----
    L2_MISS_RATE = PAPI_L2_TCM / PAPI_L2_TCA.

    References
    ----------
    .. [1] Holder & Carothers (seed 004), §3, equation 2.

    Examples
    --------
    >>> import pandas as pd
    >>> from jitterlab import counters
    >>> table = pd.DataFrame({"PAPI_L2_TCA": [200, 50], "PAPI_L2_TCM": [50, 5]})
    >>> counters.l2_miss_rate(table).tolist()
    [0.25, 0.1]
    """
    counts = _counts(table, "L2_MISS_RATE")
    return _ratio(table, "L2_MISS_RATE", counts["PAPI_L2_TCM"], counts["PAPI_L2_TCA"],
                  "PAPI_L2_TCA", part="PAPI_L2_TCM")


def l2_data_miss_rate(table: pd.DataFrame) -> pd.Series:
    """Level-2 data cache miss rate, equation 3 of Holder & Carothers.

    On Blue Gene/L the level-2 "cache" is the 2 KB prefetch buffer in front of level 3,
    and these are the level-2 counters it has.

    Parameters
    ----------
    table : pandas.DataFrame
        Columns ``PAPI_L2_DCH`` (level-2 data cache hits) and ``PAPI_L2_DCA`` (level-2 data
        cache accesses), one row per measurement. [count]

    Returns
    -------
    pandas.Series
        ``L2_DATA_MISS_RATE`` per row. [-]

    Notes
    -----
    L2_DATA_MISS_RATE = 1 − PAPI_L2_DCH / PAPI_L2_DCA.

    References
    ----------
    .. [1] Holder & Carothers (seed 004), §3, equation 3.

    Examples
    --------
    >>> import pandas as pd
    >>> from jitterlab import counters
    >>> table = pd.DataFrame({"PAPI_L2_DCA": [1000], "PAPI_L2_DCH": [600]})
    >>> float(counters.l2_data_miss_rate(table).iloc[0])
    0.4
    """
    counts = _counts(table, "L2_DATA_MISS_RATE")
    hit_rate = _ratio(table, "L2_DATA_MISS_RATE", counts["PAPI_L2_DCH"],
                      counts["PAPI_L2_DCA"], "PAPI_L2_DCA", part="PAPI_L2_DCH")
    return (1.0 - hit_rate).rename("L2_DATA_MISS_RATE")


def l3_miss_rate(table: pd.DataFrame) -> pd.Series:
    """Level-3 cache miss rate, equation 4 of Holder & Carothers.

    Parameters
    ----------
    table : pandas.DataFrame
        Columns ``PAPI_L3_TCM`` (level-3 misses) and ``PAPI_L3_TCH`` (level-3 hits), one
        row per measurement. [count]

    Returns
    -------
    pandas.Series
        ``L3_MISS_RATE`` per row. [-]

    Notes
    -----
    L3_MISS_RATE = PAPI_L3_TCM / (PAPI_L3_TCM + PAPI_L3_TCH).

    References
    ----------
    .. [1] Holder & Carothers (seed 004), §3, equation 4.

    Examples
    --------
    >>> import pandas as pd
    >>> from jitterlab import counters
    >>> table = pd.DataFrame({"PAPI_L3_TCM": [3], "PAPI_L3_TCH": [97]})
    >>> float(counters.l3_miss_rate(table).iloc[0])
    0.03
    """
    counts = _counts(table, "L3_MISS_RATE")
    return _ratio(table, "L3_MISS_RATE", counts["PAPI_L3_TCM"],
                  counts["PAPI_L3_TCM"] + counts["PAPI_L3_TCH"], "PAPI_L3_TCM + PAPI_L3_TCH")


def tlb_miss_ratio(table: pd.DataFrame, per: float = 1.0) -> pd.Series:
    """TLB misses per cycle (times ``per``): the assumed equation 5 of Holder & Carothers.

    The paper plots a "TLB miss ratio (Eq. 5)" (Fig. 5) but does not print equation 5;
    its text names the two counters it is built from, PAPI_TLB_TL and PAPI_TOT_CYC. This
    function assumes the ratio of the two. The paper's y-axis values are not in the
    text, so neither the assumption nor a scale factor can be checked against it.

    Parameters
    ----------
    table : pandas.DataFrame
        Columns ``PAPI_TLB_TL`` (TLB misses, data and instruction) and ``PAPI_TOT_CYC``
        (cycles), one row per measurement. [count]
    per : float
        Cycles per unit of the result: 1 gives misses per cycle, 1000 misses per 1000
        cycles. [cycles]

    Returns
    -------
    pandas.Series
        ``TLB_MISS_RATIO`` per row. [misses per ``per`` cycles]

    Notes
    -----
    TLB_MISS_RATIO = per · PAPI_TLB_TL / PAPI_TOT_CYC (assumed).

    References
    ----------
    .. [1] Holder & Carothers (seed 004), §3 (the counters) and §4.1, Fig. 5.

    Examples
    --------
    >>> import pandas as pd
    >>> from jitterlab import counters
    >>> table = pd.DataFrame({"PAPI_TLB_TL": [40], "PAPI_TOT_CYC": [20_000]})
    >>> float(counters.tlb_miss_ratio(table, per=1000).iloc[0])
    2.0
    """
    if isinstance(per, bool) or not isinstance(per, int | float | np.number) \
            or not math.isfinite(per) or per <= 0:
        raise ValueError(f"per must be a finite number > 0 (cycles), got {per!r}")
    counts = _counts(table, "TLB_MISS_RATIO")
    ratio = _ratio(table, "TLB_MISS_RATIO", counts["PAPI_TLB_TL"], counts["PAPI_TOT_CYC"],
                   "PAPI_TOT_CYC")
    return ratio * float(per)


def metrics(table: pd.DataFrame, labels: list[str] | None = None,
            tlb_per: float = 1.0) -> pd.DataFrame:
    """Every metric of equations 1-5 that the table's counters allow, with its labels.

    Parameters
    ----------
    table : pandas.DataFrame
        Counts in PAPI-named columns, one row per measurement. [count]
    labels : list of str, optional
        Columns to copy into the result before the metrics (e.g. ``["processors",
        "remote_fraction"]``). Default: ``table.attrs["labels"]`` when a reader set it,
        else every column whose name does not start with ``PAPI_``.
    tlb_per : float
        ``per`` of :func:`tlb_miss_ratio`. [cycles]

    Returns
    -------
    pandas.DataFrame
        The label columns, then one column per computable metric (``L1_MISS_RATE``, ...,
        ``TLB_MISS_RATIO``, in equation order), on the table's index.
        ``attrs["missing"]`` maps each metric that could not be computed to the counters
        it lacks; ``attrs["equations"]`` maps each computed metric to its equation.

    Raises
    ------
    ValueError
        If no metric can be computed (the message lists what each equation needs), or a
        needed count is bad (see the metric functions).

    Examples
    --------
    >>> import pandas as pd
    >>> from jitterlab import counters
    >>> table = pd.DataFrame({"processors": [1024, 2048], "PAPI_L3_TCM": [2, 3],
    ...                       "PAPI_L3_TCH": [98, 97]})
    >>> result = counters.metrics(table)
    >>> result["L3_MISS_RATE"].tolist(), sorted(result.attrs["missing"])[:2]
    ([0.02, 0.03], ['L1_MISS_RATE', 'L2_DATA_MISS_RATE'])
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table must be a pandas DataFrame, got {type(table).__name__}")
    if labels is None:
        labels = table.attrs.get("labels")
        if labels is None:
            labels = [c for c in table.columns if not str(c).startswith("PAPI_")]
    absent = [c for c in labels if c not in table.columns]
    if absent:
        raise KeyError(f"label column(s) {absent} are not in the table; its columns are "
                       f"{list(table.columns)}")
    result = table[list(labels)].copy()
    missing, equations = {}, {}
    for name, (number, needed, function) in EQUATIONS.items():
        lacking = [c for c in needed if c not in table.columns]
        if lacking:
            missing[name] = lacking
            continue
        kwargs = {"per": tlb_per} if name == "TLB_MISS_RATIO" else {}
        result[name] = globals()[function](table, **kwargs)
        equations[name] = number
    if not equations:
        needs = "; ".join(f"equation {number} ({name}) needs {', '.join(needed)}"
                          for name, (number, needed, _) in EQUATIONS.items())
        raise ValueError(f"no metric can be computed from the columns "
                         f"{list(table.columns)}{_unavailable_note(table)}: {needs}")
    result.attrs = {"missing": missing, "equations": equations,
                    "tlb_per": float(tlb_per)}
    return result


def _counts(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The counters ``metric`` needs, as float64, checked: present, numbers, finite, >= 0."""
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table must be a pandas DataFrame, got {type(table).__name__}")
    number, needed, _ = EQUATIONS[metric]
    for column in needed:
        if column not in table.columns:
            platform = ""
            if column.startswith(("PAPI_L1_", "PAPI_L2_TC")):
                platform = (" (Blue Gene/L, for one, has no such counter: the paper could "
                            "not compute equations 1 and 2 there)")
            raise KeyError(f"equation {number} ({metric}) needs the counter {column}, which "
                           f"the table does not have{platform}{_unavailable_note(table)}; "
                           f"its columns are {list(table.columns)}")
    counts = {}
    for column in needed:
        values = table[column]
        numeric = pd.to_numeric(values, errors="coerce")
        bad = numeric.isna() & values.notna()
        if bad.any():
            row = bad.idxmax()
            raise ValueError(f"{column} is not a number in row {_row(table, row)}: "
                             f"{plain_scalar(values[row])!r} (equation {number}, {metric})")
        numeric = numeric.astype(np.float64)
        nonfinite = ~np.isfinite(numeric)
        if nonfinite.any():
            row = nonfinite.idxmax()
            raise ValueError(f"{column} is not finite in row {_row(table, row)}: "
                             f"{plain_scalar(numeric[row])!r} (equation {number}, {metric})")
        negative = numeric < 0
        if negative.any():
            row = negative.idxmax()
            raise ValueError(f"{column} is negative in row {_row(table, row)}: "
                             f"{plain_scalar(values[row])!r}; a count cannot be (equation "
                             f"{number}, {metric})")
        counts[column] = numeric
    return pd.DataFrame(counts, index=table.index)


def _ratio(table: pd.DataFrame, metric: str, numerator: pd.Series, denominator: pd.Series,
           what: str, part: str | None = None) -> pd.Series:
    """numerator / denominator; with ``part`` the numerator counts a subset of the
    denominator's events (misses or hits of the accesses), so it cannot exceed it."""
    number = EQUATIONS[metric][0]
    zero = denominator == 0
    if zero.any():
        row = zero.idxmax()
        raise ValueError(f"equation {number} ({metric}) divides by {what}, which is zero in "
                         f"row {_row(table, row)}")
    if part is not None:
        over = numerator > denominator
        if over.any():
            row = over.idxmax()
            raise ValueError(f"{part} ({plain_scalar(numerator[row])}) exceeds {what} "
                             f"({plain_scalar(denominator[row])}) in row {_row(table, row)}: they "
                             f"count a subset of the same accesses, so the counts are mixed up "
                             f"or from different runs (equation {number}, {metric})")
    return (numerator / denominator).rename(metric)


def _row(table: pd.DataFrame, row) -> str:
    """A row's index label, and its labels when the table has any (for messages)."""
    label_columns = table.attrs.get("labels")
    if label_columns is None:
        label_columns = [c for c in table.columns if not str(c).startswith("PAPI_")]
    label_columns = [c for c in label_columns if c in table.columns]
    labels = ", ".join(f"{c}={plain_scalar(table.at[row, c])!r}" for c in label_columns[:4])
    return f"{plain_scalar(row)!r}" + (f" ({labels})" if labels else "")


def _unavailable_note(table: pd.DataFrame) -> str:
    unavailable = table.attrs.get("unavailable") or {}
    if not unavailable:
        return ""
    listed = ", ".join(f"{event} {why}" for event, why in unavailable.items())
    return f" (the measurement reported {listed})"
