"""Hardware counter files: ``perf stat -x,`` output and PAPI's, as one tidy table.

:func:`read_perf_stat` reads ``perf stat -x,`` output, translating perf's generic event names
to PAPI presets where the two mean the same thing (:data:`PERF_TO_PAPI`); :func:`read_papi`
reads ``papi_command_line`` output or a CSV with PAPI names as header. Both give one row per
measurement and one column per counter, the input of :func:`jitterlab.counters.metrics`.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["read_perf_stat", "read_papi", "PERF_TO_PAPI", "PERF_UNAVAILABLE"]

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


#: values perf prints instead of a count
PERF_UNAVAILABLE = ("<not supported>", "<not counted>")


#: a perf ``-A``/``--per-*`` aggregation identifier: CPU3, S0, S0-D0-C1, N0, ...
_PERF_AGGREGATE = re.compile(r"^(CPU\d+|[SDLNC]\d+(-[SDLNCT]\d+)*)$")


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
        if event == "" and value in ("", *PERF_UNAVAILABLE):
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
                      value=np.nan if value in PERF_UNAVAILABLE else float(value))
        if value in PERF_UNAVAILABLE:
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
    return text in PERF_UNAVAILABLE or _is_float(text)


def _is_unit_then_event(fields: list[str]) -> bool:
    """After a count: a (possibly empty) unit, then a non-empty event name."""
    return len(fields) >= 2 and fields[1] != "" and not _is_float(fields[1])


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


