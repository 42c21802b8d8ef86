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
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from ..base.checks import plain_scalar

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

#: perf's generic event names and the PAPI preset that counts the same thing. Loads are
#: not all accesses: ``L1-dcache-loads`` is PAPI_L1_DCR (data cache *reads*), not
#: PAPI_L1_DCA, which also counts writes (``L1-dcache-stores``, PAPI_L1_DCW). The
#: instruction cache is only read, so its loads are its accesses (PAPI_L1_ICA).
#: ``dTLB-load-misses`` leaves out the misses of stores, which PAPI_TLB_DM includes: it
#: is mapped to PAPI_TLB_DM all the same, as the closest preset (a lower bound of it).
#: perf's last-level-cache events (``LLC-loads``, ``LLC-load-misses``) and
#: ``cache-references``/``cache-misses`` keep their perf names: which level they count
#: depends on the CPU.
PERF_TO_PAPI = {
    "cycles": "PAPI_TOT_CYC",
    "cpu-cycles": "PAPI_TOT_CYC",
    "instructions": "PAPI_TOT_INS",
    "branches": "PAPI_BR_INS",
    "branch-instructions": "PAPI_BR_INS",
    "branch-misses": "PAPI_BR_MSP",
    "L1-dcache-loads": "PAPI_L1_DCR",
    "L1-dcache-load-misses": "PAPI_L1_LDM",
    "L1-dcache-stores": "PAPI_L1_DCW",
    "L1-dcache-store-misses": "PAPI_L1_STM",
    "L1-icache-loads": "PAPI_L1_ICA",
    "L1-icache-load-misses": "PAPI_L1_ICM",
    "dTLB-load-misses": "PAPI_TLB_DM",
    "iTLB-load-misses": "PAPI_TLB_IM",
}

#: the events ``jitterlab measure counters`` asks perf for by default: perf's generic
#: hardware and cache events (which of them a CPU offers varies)
PERF_EVENTS = ("cycles", "instructions", "L1-dcache-loads", "L1-dcache-load-misses",
               "L1-icache-load-misses", "LLC-loads", "LLC-load-misses", "dTLB-load-misses",
               "iTLB-load-misses")

#: where Linux lists the performance-monitoring units perf can use
EVENT_SOURCES = Path("/sys/bus/event_source/devices")

#: values perf prints instead of a count
_PERF_UNAVAILABLE = ("<not supported>", "<not counted>")
#: a perf ``-A``/``--per-*`` aggregation identifier: CPU3, S0, S0-D0-C1, N0, ...
_PERF_AGGREGATE = re.compile(r"^(CPU\d+|[SDLNC]\d+(-[SDLNCT]\d+)*)$")


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


# --------------------------------------------------------------------------------------
# readers
# --------------------------------------------------------------------------------------
def read_perf_stat(path: str | Path, names: dict[str, str] | None = None) -> pd.DataFrame:
    """Read the output of ``perf stat -x,`` (``-o FILE`` or its standard error).

    perf prints one line per event and, with ``-I``, per interval, with ``-A`` or
    ``--per-*`` per CPU, core or socket. The fields are, in order: the interval's end
    time (``-I``), the CPU/core/socket identifier and the number of CPUs aggregated
    (``-A``, ``--per-*``), the count, its unit, the event name, the variance in percent
    (``-r``), the counter's run time, the percentage of the time it ran (below 100 when
    perf multiplexed counters and scaled the count), and an optional derived metric
    and its unit. Lines starting with ``#`` and blank lines are skipped; metric-only
    continuation lines (empty count and event) are skipped too.

    Parameters
    ----------
    path : str or Path
        The file perf wrote.
    names : dict, optional
        Extra perf event name -> PAPI name translations, taking precedence over
        :data:`PERF_TO_PAPI` (for CPU-specific events, e.g.
        ``{"l2_rqsts.references": "PAPI_L2_TCA"}``).

    Returns
    -------
    pandas.DataFrame
        One row per measurement (one, or one per interval and/or CPU), one column per
        counted event: PAPI names where :data:`PERF_TO_PAPI` (or ``names``) has one,
        perf's names otherwise (modifiers such as ``:u`` are kept: ``cycles:u`` is not
        translated). Label columns: ``time`` [s] with ``-I``, ``cpu`` (perf's CPU,
        core or socket identifier) with ``-A`` or ``--per-*``. ``attrs``: ``labels``,
        ``perf_events`` (column -> perf's event name), ``units`` (perf's unit, e.g.
        ``msec`` for ``task-clock``), ``running_percent`` (lowest per event; below 100
        the count was scaled), ``variance_percent`` (``-r``: perf's relative standard
        deviation of the mean, largest per event), ``cpus_aggregated`` (``--per-*``),
        ``unavailable`` (events perf printed as ``<not supported>`` or ``<not
        counted>`` in every row: not columns), ``path``.

    Raises
    ------
    ValueError
        If a line is not in perf's format (the message gives the line number), or the
        file has no event lines.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from jitterlab.compare.counters import read_perf_stat
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "perf.csv"
    >>> _ = path.write_text("4000,,cycles,1000,100.00,,\\n"
    ...                     "<not supported>,,L1-dcache-loads,0,100.00,,\\n"
    ...                     "12,,dTLB-load-misses,1000,100.00,,\\n")
    >>> table = read_perf_stat(path)
    >>> table.columns.tolist(), table.attrs["unavailable"]
    (['PAPI_TOT_CYC', 'PAPI_TLB_DM'], {'L1-dcache-loads': 'as <not supported>'})
    """
    path = Path(path)
    translate = {**PERF_TO_PAPI, **(names or {})}
    records, status = [], {}
    has_time = has_cpu = False
    for number, line in enumerate(_whole_text(path).splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        fields = [f.strip() for f in stripped.split(",")]
        record = {}
        if len(fields) > 2 and _is_float(fields[0]) and (
                _PERF_AGGREGATE.match(fields[1])
                or (_is_count(fields[1]) and _is_unit_then_event(fields[2:]))
                or (fields[1] == "" and fields[3:4] == [""])):
            record["time"] = float(fields.pop(0))
            has_time = True
        if fields and _PERF_AGGREGATE.match(fields[0]):
            record["cpu"] = fields.pop(0)
            has_cpu = True
            if len(fields) > 1 and fields[0].isdigit() and _is_count(fields[1]):
                record["cpus_aggregated"] = int(fields.pop(0))
        if len(fields) < 5:
            raise ValueError(f"{path}, line {number}: not perf stat -x, output (expected "
                             f"count,unit,event,run time,percent[,...]): {line!r}")
        value, unit, event = fields[0], fields[1], fields[2]
        if event == "" and value in ("", *_PERF_UNAVAILABLE):
            continue  # a further derived metric of the line above
        if not event or not _is_count(value):
            raise ValueError(f"{path}, line {number}: not perf stat -x, output (no event "
                             f"name or count): {line!r}")
        rest = fields[3:]
        variance = None
        if rest and rest[0].endswith("%"):
            variance = float(rest.pop(0).rstrip("%"))
        if len(rest) < 2 or not _is_float(rest[0]) or not _is_float(rest[1]):
            raise ValueError(f"{path}, line {number}: not perf stat -x, output (run time and "
                             f"percentage expected after the event): {line!r}")
        column = translate.get(event, event)
        record.update(column=column, event=event, unit=unit, running=float(rest[1]),
                      variance=variance,
                      value=np.nan if value in _PERF_UNAVAILABLE else float(value))
        if value in _PERF_UNAVAILABLE:
            status.setdefault(column, value)
        records.append(record)
    if not records:
        raise ValueError(f"{path}: no perf stat -x, event lines in the file")
    events = pd.DataFrame.from_records(records)
    labels = [c for c, present in (("time", has_time), ("cpu", has_cpu)) if present]
    clash = events.groupby("column")["event"].nunique()
    if (clash > 1).any():
        name = clash[clash > 1].index[0]
        raise ValueError(f"{path}: several perf events translate to {name}: "
                         f"{sorted(set(events.loc[events['column'] == name, 'event']))}")
    if events.duplicated(subset=[*labels, "column"]).any():
        twice = events.loc[events.duplicated(subset=[*labels, "column"]), "event"].iloc[0]
        raise ValueError(f"{path}: the event {twice} appears twice in one measurement")
    if labels:
        rows = pd.MultiIndex.from_frame(events[labels].drop_duplicates())
        table = events.pivot(index=labels, columns="column", values="value")
        table = table.reindex(rows.droplevel(list(range(1, len(labels))))
                              if len(labels) == 1 else rows).reset_index()
    else:
        table = pd.DataFrame([events.set_index("column")["value"]]).reset_index(drop=True)
    table.columns.name = None
    order = labels + list(dict.fromkeys(events["column"]))
    table = table[order]
    unavailable = {}
    for column in list(dict.fromkeys(events["column"])):
        if table[column].isna().all():
            event = events.loc[events["column"] == column, "event"].iloc[0]
            unavailable[event] = f"as {status.get(column, '<not counted>')}"
            table = table.drop(columns=column)
    counted = events[events["column"].isin(table.columns)]
    table.attrs = {
        "labels": labels,
        "perf_events": dict(zip(counted["column"], counted["event"], strict=False)),
        "units": {c: u for c, u in zip(counted["column"], counted["unit"], strict=False) if u},
        "running_percent": counted.groupby("column", sort=False)["running"].min().to_dict(),
        "variance_percent": counted.dropna(subset=["variance"]).groupby(
            "column", sort=False)["variance"].max().to_dict(),
        "cpus_aggregated": _per_column(counted, "cpus_aggregated", int),
        "unavailable": unavailable,
        "path": str(path),
    }
    return table


def read_papi(path: str | Path) -> pd.DataFrame:
    """Read PAPI counts: ``papi_command_line`` output, or a CSV with PAPI names as header.

    Two layouts are recognised from the file's first line that is not blank:

    * **papi_command_line output**: lines ``EVENT : <tab>VALUE [UNITS]`` (VALUE an
      integer, a float, an unsigned integer followed by ``(u)`` with ``-u``, or
      hexadecimal ``0X...`` with ``-x``). Other lines (the banner, ``Successfully
      added: ...``, the dashed closing line) are skipped; ``Failed adding: EVENT``
      records the event in ``attrs["unavailable"]``. Event names may be native events
      containing colons (``perf::CYCLES``). A name already seen in the current
      measurement, or a dashed line, starts a new measurement (row), so the outputs of
      several runs concatenated into one file give one row each, labelled ``run`` 0, 1,
      .... The last measurement must be closed by the dashed line papi_command_line
      prints at its end: output cut short is refused, not read as a smaller count.
    * **CSV**: a header line naming the columns (at least one starting with ``PAPI_``),
      then one row per measurement; the other columns are labels (``processors``,
      ``remote_fraction``, ``run``, ...). Every ``PAPI_`` cell must be a number (not
      empty, not a boolean).

    Either way the file must end with a newline: a file that ends inside a line was cut
    short.

    Parameters
    ----------
    path : str or Path
        The file.

    Returns
    -------
    pandas.DataFrame
        One row per measurement, counters in columns named as in the file; label columns
        in ``attrs["labels"]`` (``run`` for papi_command_line output), ``attrs["units"]``
        the units papi_command_line printed, ``attrs["unavailable"]`` events PAPI could
        not add, ``attrs["path"]``.

    Raises
    ------
    ValueError
        If the file is in neither layout, or a value cannot be read (the message gives
        the line number).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from jitterlab.compare.counters import read_papi
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "papi.txt"
    >>> _ = path.write_text("PAPI_L3_TCM : \\t30 \\nPAPI_L3_TCH : \\t970 \\n---------\\n")
    >>> read_papi(path).to_dict("records")
    [{'run': 0, 'PAPI_L3_TCM': 30, 'PAPI_L3_TCH': 970}]
    """
    path = Path(path)
    text = _whole_text(path)
    lines = text.splitlines()
    first = next((line for line in lines if line.strip()), None)
    if first is None:
        raise ValueError(f"{path}: the file is empty")
    if "," in first and any(f.strip().startswith("PAPI_") for f in first.split(",")):
        counters = [f.strip() for f in first.split(",") if f.strip().startswith("PAPI_")]
        table = pd.read_csv(path, dtype=dict.fromkeys(counters, str))
        for column in counters:
            values = [None if isinstance(v, float) else _papi_value(v) for v in table[column]]
            bad = [i for i, v in enumerate(values) if v is None]
            if bad:
                raise ValueError(f"{path}, line {bad[0] + 2}: counter {column} must be a count, "
                                 f"got {table[column].iat[bad[0]]!r}")
            table[column] = pd.Series(values, index=table.index).infer_objects()
        labels = [c for c in table.columns if not str(c).startswith("PAPI_")]
        table.attrs = {"labels": labels, "units": {}, "unavailable": {}, "path": str(path)}
        return table
    rows, current, units, unavailable = [], {}, {}, {}
    last_value = 0  # line of the last value read
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped.startswith("----"):
            if current:
                rows.append(current)
                current = {}
            continue
        if stripped.startswith("Failed adding:"):
            unavailable[stripped.partition(":")[2].strip()] = "as failed to add"
            continue
        if " : " not in line or stripped.startswith(("Successfully added", "because:")):
            continue
        name, _, value_text = line.partition(" : ")
        name = name.strip()
        if not name or " " in name:
            continue
        value_text = value_text.strip()
        token, _, unit = value_text.partition(" ")
        value = _papi_value(token)
        if value is None:
            raise ValueError(f"{path}, line {number}: cannot read the value of {name}: "
                             f"{value_text!r}")
        if name in current:
            rows.append(current)
            current = {}
        current[name] = value
        last_value = number
        if unit.strip():
            units[name] = unit.strip()
    if current:
        raise ValueError(f"{path}, line {last_value}: the last measurement is not closed by "
                         f"papi_command_line's dashed line: the output was cut short, so its "
                         f"last value may be incomplete")
    if not rows:
        raise ValueError(f"{path}: neither papi_command_line output (lines 'EVENT : value') "
                         "nor a CSV whose header names PAPI counters (PAPI_...)")
    table = pd.DataFrame(rows)
    table.insert(0, "run", np.arange(len(table)))
    table.attrs = {"labels": ["run"], "units": units, "unavailable": unavailable,
                   "path": str(path)}
    return table


def _per_column(events: pd.DataFrame, field: str, kind) -> dict:
    """The largest ``field`` of each column's event lines, where perf printed one."""
    if field not in events:
        return {}
    present = events.dropna(subset=[field])
    return {column: kind(value) for column, value in
            present.groupby("column", sort=False)[field].max().items()}


def _papi_value(token: str):
    """A papi_command_line value: 123, -5, 1.250, 123(u), 0X1F; None if none of these."""
    token = token.strip()
    if token.endswith("(u)"):
        token = token[:-3]
    try:
        if token.upper().startswith("0X"):
            return int(token, 16)
        if re.fullmatch(r"[-+]?\d+", token):
            return int(token)
        return float(token)
    except ValueError:
        return None


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _is_count(text: str) -> bool:
    return text in _PERF_UNAVAILABLE or _is_float(text)


def _is_unit_then_event(fields: list[str]) -> bool:
    """After a count: a (possibly empty) unit, then a non-empty event name."""
    return len(fields) >= 2 and fields[1] != "" and not _is_float(fields[1])


# --------------------------------------------------------------------------------------
# measuring with perf
# --------------------------------------------------------------------------------------
def perf_counters_problem(perf: str = "perf", event_sources: str | Path = EVENT_SOURCES,
                          ) -> str | None:
    """Why this machine cannot count hardware events with perf, or None if it can.

    Three checks, in order: the ``perf`` program is on the PATH; Linux lists a core
    performance-monitoring unit (``cpu``, ``cpu_core``/``cpu_atom`` on hybrid x86, an
    ``armv*`` PMU on Arm) under ``/sys/bus/event_source/devices``; and ``perf stat -e
    cycles -- true`` counts cycles (it prints ``<not supported>`` where the kernel or a
    hypervisor hides the PMU, and fails when ``perf_event_paranoid`` forbids counting).

    Parameters
    ----------
    perf : str
        The perf program.
    event_sources : str or Path
        The folder listing the PMUs (for tests).

    Returns
    -------
    str or None
        A sentence saying what is missing, or None.
    """
    if shutil.which(perf) is None:
        return (f"{perf!r} is not installed (or not on the PATH): install perf (Debian/"
                "Ubuntu: linux-perf or linux-tools) to count hardware events")
    sources = Path(event_sources)
    pmus = sorted(p.name for p in sources.iterdir()) if sources.is_dir() else []
    core = [name for name in pmus
            if name in ("cpu", "cpu_core", "cpu_atom") or name.startswith("armv")]
    if not core:
        listed = ", ".join(pmus) if pmus else "nothing"
        return (f"this machine exposes no hardware performance-monitoring unit: there is no "
                f"{sources / 'cpu'} (it lists {listed}); virtual machines usually hide the "
                "PMU, so only software events (task-clock, page-faults, ...) can be counted")
    try:
        probe = subprocess.run([perf, "stat", "-x,", "-e", "cycles", "--", "true"],
                               capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{perf} stat could not run: {exc}"
    lines = [line for line in probe.stderr.splitlines() if ",cycles," in line]
    if probe.returncode != 0 or not lines:
        paranoid = _read_text("/proc/sys/kernel/perf_event_paranoid")
        detail = probe.stderr.strip().splitlines()[:3]
        return (f"{perf} stat cannot count cycles here (exit status {probe.returncode}, "
                f"kernel.perf_event_paranoid = {paranoid}): {' '.join(detail)}")
    value = lines[0].split(",")[0]
    if value in _PERF_UNAVAILABLE:
        return (f"{perf} stat reports cycles as {value}: the kernel offers no hardware "
                "counters to this machine (typical of a virtual machine)")
    return None


#: runs the command under perf and writes its exit status to the file given as $0:
#: perf stat's own exit status is not the command's every time (on this machine, loaded,
#: it was 0 for a command that exited with 3 in 1 of 200 runs)
_STATUS_WRAPPER = ("/bin/sh", "-c", '"$@"; status=$?; echo "$status" > "$0"; exit "$status"')


def measure_perf_stat(command: list[str], events=PERF_EVENTS,
                      names: dict[str, str] | None = None, perf: str = "perf",
                      check: bool = True) -> tuple[pd.DataFrame, int]:
    """Run ``perf stat -x, -e EVENTS -- COMMAND`` and read its counts.

    The command runs under a POSIX shell (``/bin/sh``) that records its exit status,
    since perf's own exit status is not always the command's; the counts include that
    shell's start (here about 0.2 ms of task-clock and 15 page faults).

    Parameters
    ----------
    command : list of str
        The program and its arguments.
    events : sequence of str
        perf event names (default :data:`PERF_EVENTS`).
    names : dict, optional
        Extra perf -> PAPI name translations, as for :func:`read_perf_stat`.
    perf : str
        The perf program.
    check : bool
        First ask :func:`perf_counters_problem` and raise if hardware events cannot be
        counted. ``False`` runs perf regardless (software events such as ``task-clock``
        work without a PMU).

    Returns
    -------
    (pandas.DataFrame, int)
        The table of :func:`read_perf_stat` (``attrs["command"]`` the perf command line
        with the command, ``attrs["status_wrapper"]`` the shell around the command) and
        the command's exit status.

    Raises
    ------
    RuntimeError
        If ``check`` and the machine cannot count hardware events (the message says
        why), or perf itself fails.
    ValueError
        If ``command`` or ``events`` is empty.
    """
    command = [str(part) for part in command]
    events = [str(event) for event in events]
    if not command:
        raise ValueError("command is empty: give the program to run")
    if not events:
        raise ValueError("events is empty: give at least one perf event")
    if check:
        problem = perf_counters_problem(perf)
        if problem is not None:
            raise RuntimeError(problem)
    with tempfile.TemporaryDirectory(prefix="jitterlab-perf-") as folder:
        output = Path(folder) / "perf_stat.csv"
        status_file = Path(folder) / "status"
        argv = [perf, "stat", "-x,", "-o", str(output), "-e", ",".join(events), "--"]
        try:
            completed = subprocess.run([*argv, *_STATUS_WRAPPER, str(status_file), *command],
                                       check=False)
        except OSError as exc:
            raise RuntimeError(f"could not start {perf}: {exc}") from None
        shown = " ".join([*argv, *command])
        if not output.is_file() or not output.read_text(encoding="utf-8").strip():
            raise RuntimeError(f"{shown} wrote no counts (exit status "
                               f"{completed.returncode})")
        try:
            table = read_perf_stat(output, names=names)
        except ValueError as exc:
            raise RuntimeError(f"{shown}: {exc} (exit status "
                               f"{completed.returncode})") from None
        try:
            status = int(status_file.read_text(encoding="ascii"))
        except (OSError, ValueError):  # the shell did not get to write it (perf killed it)
            status = completed.returncode
    table.attrs["path"] = None
    table.attrs["command"] = " ".join([*argv[:4], "<tmp>", *argv[5:], *command])
    table.attrs["status_wrapper"] = " ".join(_STATUS_WRAPPER[:2]) + f" {_STATUS_WRAPPER[2]!r}"
    return table, status


def _whole_text(path: Path) -> str:
    """The text of a counter file, refused when its last line has no newline (a file cut
    short mid-number would otherwise be read as a smaller, complete count)."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not a text file of counts ({err.reason} at byte "
                         f"{err.start})") from None
    if text and not text.endswith("\n"):
        number = text.count("\n") + 1
        raise ValueError(f"{path}, line {number}: the file ends inside a line (no newline "
                         f"after {text.splitlines()[-1][-40:]!r}): it was cut short; if the "
                         f"line is complete, end it with a newline")
    return text


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except OSError:
        return "unknown"
