"""Shipped data: values transcribed from the source papers, each with a provenance record.

The files live in the ``data/`` folder next to the package (a source checkout): a table
``data/NAME.csv`` and its provenance record ``data/NAME.md`` (paper, section or figure,
what each number is, units, checksum).
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

__all__ = ["DATA_DIR", "PAPER_VALUE_COLUMNS", "load_paper_values"]

#: the ``data/`` folder of a source checkout: the package's parent directory + ``data``
DATA_DIR = Path(__file__).resolve().parent.parent / "data"

#: columns of every table of transcribed paper values
PAPER_VALUE_COLUMNS = ("quantity", "value", "unit", "source", "note")

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def load_paper_values(name: str = "garg_de_2006") -> pd.DataFrame:
    """Load the numbers transcribed from a paper, one row per quantity.

    Parameters
    ----------
    name : str
        Table name: the file ``data/NAME.csv`` (its provenance is ``data/NAME.md``).

    Returns
    -------
    pandas.DataFrame
        Columns ``quantity`` (unique identifier), ``value`` (float, in ``unit``; times in
        seconds [s]), ``unit``, ``source`` (paper, section and figure) and ``note``.
        ``df.attrs["path"]`` records the file read.

    Raises
    ------
    ValueError
        If ``name`` is not a plain file name, or the table lacks a column or repeats a
        quantity.
    FileNotFoundError
        If ``data/NAME.csv`` does not exist (the message names the path looked at).

    Examples
    --------
    >>> from jitterlab.datasets import load_paper_values
    >>> values = load_paper_values().set_index("quantity")["value"]
    >>> round(float(values["one_way_latency"]) * 1e6, 3)  # τ, Garg & De 2006 §4.1 [µs]
    5.0
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"name must be a plain table name such as 'garg_de_2006', "
                         f"got {name!r}")
    path = DATA_DIR / f"{name}.csv"
    if not path.is_file():
        available = sorted(p.stem for p in DATA_DIR.glob("*.csv")) if DATA_DIR.is_dir() else []
        raise FileNotFoundError(
            f"no table of paper values named {name!r}: {path} does not exist (the data/ "
            "folder ships with a source checkout of jitterlab); available: "
            f"{', '.join(available) or 'none'}")
    table = pd.read_csv(path, dtype={"quantity": str, "value": float, "unit": str,
                                     "source": str, "note": str}, keep_default_na=False)
    missing = [c for c in PAPER_VALUE_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"{path} lacks the column(s) {missing}")
    repeated = table["quantity"][table["quantity"].duplicated()].tolist()
    if repeated:
        raise ValueError(f"{path} lists these quantities more than once: {repeated}")
    table = table[list(PAPER_VALUE_COLUMNS)]
    table.attrs["path"] = str(path)
    return table
