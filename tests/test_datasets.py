"""Shipped paper values: loader, provenance record and consistency with the package."""

import hashlib
import re

import numpy as np
import pytest

import jitterlab as jl
from jitterlab import datasets
from jitterlab.datasets import PAPER_VALUE_COLUMNS, load_paper_values


@pytest.fixture(scope="module")
def table():
    return load_paper_values("garg_de_2006")


@pytest.fixture(scope="module")
def values(table):
    return table.set_index("quantity")["value"]


def test_columns_and_types(table):
    assert tuple(table.columns) == PAPER_VALUE_COLUMNS
    assert table["value"].dtype == np.float64
    assert table["quantity"].is_unique
    assert np.isfinite(table["value"]).all()
    assert set(table["unit"]) <= {"s", "Hz", "flop/s", "count", "id", "-"}
    assert table["source"].str.startswith("Garg & De 2006, §").all()
    assert (table["note"].str.len() > 0).all()
    assert table.attrs["path"].endswith("garg_de_2006.csv")


def test_transcribed_numbers(values):
    assert values["one_way_latency"] == 5e-6
    assert values["latency_term_32_nodes"] == 40e-6
    assert values["sdsc256_gap_mean_theta_minus_mean_max"] == 50e-6
    assert values["sdsc1024_w300us_mean_max"] == 1.93e-3
    assert (values["sdsc1024_w300us_mean_theta_low"],
            values["sdsc1024_w300us_mean_theta_high"]) == (2.54e-3, 2.93e-3)
    assert values[["sdsc256_work", "testbed_work_large", "sdsc1024_work_large"]].tolist() == [
        300e-6, 83e-3, 13e-3]
    assert values["sdsc256_processes"] == values["sdsc256_nodes"] * 8
    assert values["sdsc1024_processes"] == values["sdsc1024_nodes"] * 8
    assert values["anomalous_node_last_process"] - values["anomalous_node_first_process"] + 1 \
        == values["anomalous_node_processes"]


def test_latency_term_agrees_with_theorem1(values):
    """2·τ·log2((N+1)/2) for N + 1 = 32 tree nodes, Garg & De 2006 §4.1."""
    n = int(values["latency_term_tree_nodes"]) - 1
    ds = jl.theorem1_bounds(jl.noise.Exponential(mean=20e-6) + 300e-6, n=n,
                            tau=values["one_way_latency"])
    assert float(ds["latency"][0]) == pytest.approx(values["latency_term_32_nodes"], rel=1e-12)


def test_provenance_record_matches_the_table(table):
    csv_path = datasets.DATA_DIR / "garg_de_2006.csv"
    record = (datasets.DATA_DIR / "garg_de_2006.md").read_text(encoding="utf-8")
    digest = hashlib.sha256(csv_path.read_bytes()).hexdigest()
    assert re.search(r"\b[0-9a-f]{64}\b", record).group(0) == digest, \
        "update the checksum in data/garg_de_2006.md after editing the CSV"
    assert "Garg" in record and "HiPC" in record
    for unit in set(table["unit"]):
        assert f"`{unit}`" in record


def test_missing_table_names_the_path():
    with pytest.raises(FileNotFoundError, match=r"data.no_such_paper\.csv.*garg_de_2006"):
        load_paper_values("no_such_paper")


def test_missing_data_folder(monkeypatch, tmp_path):
    monkeypatch.setattr(datasets, "DATA_DIR", tmp_path / "data")
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "data"))):
        load_paper_values()


@pytest.mark.parametrize("name", ["../pyproject", "a/b", "", None, ".hidden"])
def test_bad_name(name):
    with pytest.raises(ValueError, match="plain table name"):
        load_paper_values(name)


def test_malformed_table(monkeypatch, tmp_path):
    monkeypatch.setattr(datasets, "DATA_DIR", tmp_path)
    (tmp_path / "twice.csv").write_text("quantity,value,unit,source,note\n"
                                        "a,1,s,x,y\na,2,s,x,y\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"more than once: \['a'\]"):
        load_paper_values("twice")
    (tmp_path / "short.csv").write_text("quantity,value\na,1\n", encoding="utf-8")
    with pytest.raises(ValueError, match="lacks the column"):
        load_paper_values("short")
