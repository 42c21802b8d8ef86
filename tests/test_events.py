"""Event traces (jitterlab.traces.events): the data model, its checks and its files."""

import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jitterlab as jl
from jitterlab.testing import random_events


def rows(**columns):
    """A two-rank trace: rank 0 computes and sends to rank 1, which receives, then both
    enter collective 0. Keyword arguments replace whole columns."""
    base = {"rank": [0, 0, 0, 1, 1],
            "seq": [0, 1, 2, 0, 1],
            "kind": ["compute", "send", "collective", "recv", "collective"],
            "start": [0.0, 2.0, 3.0, 0.0, 3.0],
            "end": [2.0, 3.0, 4.0, 3.0, 4.0],
            "peer": [-1, 1, -1, 0, -1],
            "tag": [0, 7, 0, 7, 0],
            "noise_combined": [1.0, 0.0, 0.0, 0.0, 0.0]}
    base.update(columns)
    return pd.DataFrame(base)


def test_a_valid_trace_and_its_properties():
    trace = jl.EventTrace(rows(), latency=0.5, source="hand", machine="none")
    assert trace.n_ranks == 2 and len(trace) == 5
    assert trace.sources == ["combined"]
    assert trace.latency == 0.5
    assert trace.attrs == {"source": "hand", "machine": "none", "units": "s"}
    assert list(trace.data["kind"].cat.categories) == list(jl.events.KINDS)
    assert "5 intervals, 2 ranks" in repr(trace)


def test_rows_in_any_order_are_sorted_by_rank_and_seq():
    ordered = jl.EventTrace(rows())
    shuffled = jl.EventTrace(rows().sample(frac=1.0, random_state=3))
    assert shuffled.equals(ordered)
    assert shuffled.data["seq"].tolist() == [0, 1, 2, 0, 1]


def test_combined_is_the_sum_of_the_sources_when_not_given():
    frame = rows().drop(columns="noise_combined")
    frame["noise_tick"] = [0.5, 0.0, 0.0, 0.25, 0.0]
    frame["noise_daemon"] = [0.5, 0.0, 0.0, 0.0, 0.0]
    trace = jl.EventTrace(frame)
    assert trace.noise("combined").tolist() == [1.0, 0.0, 0.0, 0.25, 0.0]
    with pytest.raises(ValueError, match="no noise source 'disk'"):
        trace.noise("disk")


def test_the_sum_of_the_sources_must_fit_the_interval():
    frame = rows().drop(columns="noise_combined")
    frame["noise_tick"] = [1.5, 0.0, 0.0, 0.0, 0.0]
    frame["noise_daemon"] = [1.5, 0.0, 0.0, 0.0, 0.0]
    trace = jl.EventTrace(frame)  # each source alone fits
    with pytest.raises(ValueError, match=r"rank 0, interval seq 0: noise 'combined \(sum"):
        trace.noise("combined")


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize("change, message", [
    ({"tag": [0, 7, 0, 8, 0]}, r"rank 0, interval seq 1: send to rank 1 with tag 7 has no "
                               r"matching recv on rank 1"),
    ({"kind": ["compute", "compute", "collective", "recv", "collective"],
      "peer": [-1, -1, -1, 0, -1]},
     r"rank 1, interval seq 0: recv from rank 0 with tag 7 has no matching send"),
    ({"start": [0.0, 1.5, 3.0, 0.0, 3.0]},
     r"rank 0, interval seq 1: out of order: it starts at 1.5 s, before the previous "
     r"interval \(seq 0\) ends at 2 s"),
    ({"end": [2.0, 1.5, 4.0, 3.0, 4.0], "start": [0.0, 2.0, 3.0, 0.0, 3.0]},
     r"rank 0, interval seq 1: negative duration"),
    ({"noise_combined": [2.5, 0.0, 0.0, 0.0, 0.0]},
     r"rank 0, interval seq 0: noise 'combined' of 2.5 s is longer than the interval"),
    ({"noise_combined": [1.0, -0.1, 0.0, 0.0, 0.0]},
     r"rank 0, interval seq 1: noise 'combined' must be finite and >= 0"),
    ({"noise_combined": [np.nan, 0.0, 0.0, 0.0, 0.0]},
     r"rank 0, interval seq 0: noise 'combined' must be finite"),
    ({"tag": [0, 7, 0, 7, 1]}, r"collective instance \(tag\) 0 is missing on rank 1"),
    ({"seq": [0, 1, 3, 0, 1]}, r"rank 0, interval seq 3: seq should be 2"),
    ({"seq": [0, 1, 1, 0, 1]}, r"rank 0, interval seq 1: seq is duplicated"),
    ({"kind": ["compute", "send", "barrier", "recv", "collective"]},
     r"rank 0, interval seq 2: kind 'barrier' is not one of"),
    ({"peer": [-1, 0, -1, 0, -1]}, r"rank 0, interval seq 1: send with peer 0: the peer "
                                   r"must be another rank"),
    ({"peer": [-1, 5, -1, 0, -1]}, r"send with peer 5: the peer must be another rank"),
    ({"peer": [1, 1, -1, 0, -1]}, r"rank 0, interval seq 0: a compute interval has peer 1"),
    ({"rank": [0, 0, 0, 2, 2]}, r"ranks must be numbered 0 to 2; rank 1 has no intervals"),
    ({"rank": [0.0, 0.0, 0.0, 1.5, 1.0]}, r"column 'rank' must hold integers"),
    ({"start": [0.0, 2.0, 3.0, np.inf, 3.0]}, r"rank 1, interval seq 0: start and end must "
                                              r"be finite"),
    ({"start": [0.0, 3.5, 4.0, 0.0, 4.0], "end": [2.0, 4.0, 5.0, 3.0, 5.0]},
     r"rank 1, interval seq 0: recv from rank 0 \(tag 7\) ends at 3 s, before its send "
     r"starts \(3.5 s\)"),
])
def test_a_malformed_trace_is_refused_naming_rank_and_interval(change, message):
    with pytest.raises(ValueError, match=message):
        jl.EventTrace(rows(**change))


def test_a_duplicated_message_is_refused():
    frame = pd.concat([rows(), pd.DataFrame({
        "rank": [0, 1], "seq": [3, 2], "kind": ["send", "recv"], "start": [4.0, 4.0],
        "end": [4.0, 4.0], "peer": [1, 0], "tag": [7, 7], "noise_combined": [0.0, 0.0]})])
    with pytest.raises(ValueError, match=r"message rank 0 -> rank 1 with tag 7 is "
                                         r"duplicated \(2 sends, 2 recvs"):
        jl.EventTrace(frame)


def test_a_collective_twice_on_a_rank_is_refused():
    frame = pd.concat([rows(), pd.DataFrame({
        "rank": [0], "seq": [3], "kind": ["collective"], "start": [4.0], "end": [4.0],
        "peer": [-1], "tag": [0], "noise_combined": [0.0]})])
    with pytest.raises(ValueError, match=r"rank 0, interval seq 3: collective instance "
                                         r"\(tag\) 0 appears twice on this rank"):
        jl.EventTrace(frame)


def test_a_recv_may_end_at_its_send_plus_latency_but_not_before():
    jl.EventTrace(rows(), latency=1.0)  # send starts at 2, recv ends at 3
    with pytest.raises(ValueError, match="plus the latency 1.5 s"):
        jl.EventTrace(rows(), latency=1.5)


@pytest.mark.parametrize("frame, error, message", [
    (rows().drop(columns="peer"), ValueError, r"lacks the columns \['peer'\]"),
    (rows().drop(columns="noise_combined"), ValueError, "no noise column"),
    (rows().iloc[:0], ValueError, "no intervals"),
    (rows().to_dict(), TypeError, "must be a pandas DataFrame"),
])
def test_missing_columns_and_wrong_types(frame, error, message):
    with pytest.raises(error, match=message):
        jl.EventTrace(frame)


def test_a_negative_latency_is_refused():
    with pytest.raises(ValueError, match="latency must be finite and >= 0"):
        jl.EventTrace(rows(), latency=-1e-6)


# ---------------------------------------------------------------------- files
@pytest.mark.parametrize("suffix", [".parquet", ".nc"])
def test_round_trip(tmp_path, suffix):
    trace = random_events(5, n_ranks=5, steps=20, latency=0.01)
    path = jl.write_events(trace, tmp_path / f"run{suffix}")
    back = jl.read_events(path)
    assert back.equals(trace)
    assert back.file == str(path)
    assert back.sources == ["tick", "daemon", "combined"]


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), ranks=st.integers(1, 6),
       suffix=st.sampled_from([".parquet", ".nc"]))
def test_round_trip_of_random_traces(seed, ranks, suffix, tmp_path_factory):
    trace = random_events(seed, n_ranks=ranks, steps=8, irregular=bool(seed % 2))
    path = jl.write_events(trace, tmp_path_factory.mktemp("rt") / f"t{suffix}")
    assert jl.read_events(path).equals(trace)


@pytest.mark.parametrize("suffix", [".parquet", ".nc"])
def test_a_simulated_run_round_trips_with_its_attrs(tmp_path, suffix):
    trace = jl.simulate(jl.Trace(jitter=[1e-6], gap=[99e-6]), n=8, work=50e-6, phases=3,
                        rng=2, detail="events")
    back = jl.read_events(jl.write_events(trace, tmp_path / f"sim{suffix}"))
    assert back.equals(trace)
    assert back.attrs["noiseless_makespan"] == pytest.approx(150e-6, rel=1e-12)


@pytest.mark.parametrize("suffix", [".parquet", ".nc"])
def test_the_write_is_atomic(tmp_path, suffix, monkeypatch):
    path = tmp_path / f"run{suffix}"
    first = random_events(1)
    jl.write_events(first, path)
    before = path.read_bytes()
    import pyarrow.parquet as pq
    import xarray as xr

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", broken)
    monkeypatch.setattr(xr.Dataset, "to_netcdf", broken)
    with pytest.raises(OSError, match="disk full"):
        jl.write_events(random_events(2), path, overwrite=True)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == [path.name]  # no temporary file left behind


@pytest.mark.parametrize("suffix, kind", [(".parquet", "Parquet"), (".nc", "netCDF")])
def test_a_truncated_file_gives_an_error_naming_it(tmp_path, suffix, kind):
    path = jl.write_events(random_events(3), tmp_path / f"cut{suffix}")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=rf"cut{suffix}: not a readable {kind} file"):
        jl.read_events(path)
    path.write_bytes(b"\x00" * 100)
    with pytest.raises(ValueError, match=rf"cut{suffix}: not a readable {kind} file"):
        jl.read_events(path)


def test_other_files_are_refused_naming_them(tmp_path):
    plain = tmp_path / "plain.parquet"
    rows().to_parquet(plain)
    with pytest.raises(ValueError, match="plain.parquet: not a jitterlab event trace"):
        jl.read_events(plain)
    with pytest.raises(ValueError, match="run.csv: unknown event-trace format"):
        jl.read_events(tmp_path / "run.csv")
    with pytest.raises(ValueError, match="run.csv: unknown event-trace format"):
        jl.write_events(random_events(1), tmp_path / "run.csv")
    with pytest.raises(FileNotFoundError, match="missing.nc"):
        jl.read_events(tmp_path / "missing.nc")
    with pytest.raises(TypeError, match="must be a jl.EventTrace"):
        jl.write_events(rows(), tmp_path / "x.parquet")


def test_a_malformed_trace_in_a_file_names_the_file_rank_and_interval(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "bad.parquet"
    table = pa.Table.from_pandas(rows(start=[0.0, 1.5, 3.0, 0.0, 3.0]), preserve_index=False)
    table = table.replace_schema_metadata({b"jitterlab_events": b'{"latency": 0.0}'})
    pq.write_table(table, path)
    with pytest.raises(ValueError, match=r"bad.parquet: rank 0, interval seq 1: out of order"):
        jl.read_events(path)


@pytest.mark.parametrize("metadata, message", [
    (b"{not json", r"meta.parquet: damaged event-trace metadata"),
    (b'{"latency": "fast"}', r"meta.parquet: latency must be a number, got 'fast'"),
    (b'{"latency": -1.0}', r"latency must be finite and >= 0"),
])
def test_damaged_metadata_is_refused_naming_the_file(tmp_path, metadata, message):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "meta.parquet"
    table = pa.Table.from_pandas(rows(), preserve_index=False)
    pq.write_table(table.replace_schema_metadata({b"jitterlab_events": metadata}), path)
    with pytest.raises(ValueError, match=message):
        jl.read_events(path)


def test_unknown_kind_codes_in_netcdf_are_refused_naming_the_file(tmp_path):
    import xarray as xr

    path = jl.write_events(jl.EventTrace(rows()), tmp_path / "codes.nc")
    with xr.open_dataset(path) as dataset:
        changed = dataset.load()
    changed["kind"].values[2] = 9
    changed.to_netcdf(tmp_path / "bad.nc")
    with pytest.raises(ValueError, match=r"bad.nc: variable 'kind' must hold codes 0 to 3"):
        jl.read_events(tmp_path / "bad.nc")


def test_a_collective_left_before_the_last_rank_enters_is_refused():
    # an MPI_Bcast's root leaves at 1 s, before rank 1 enters at 3 s; with barrier
    # semantics a trace without any noise got -2 s of accumulated noise
    frame = pd.DataFrame({"rank": [0, 0, 1, 1], "seq": [0, 1, 0, 1],
                          "kind": ["collective", "compute", "compute", "collective"],
                          "start": [0.0, 1.0, 0.0, 3.0], "end": [1.0, 4.0, 3.0, 3.5],
                          "peer": [-1] * 4, "tag": [0] * 4, "noise_combined": [0.0] * 4})
    with pytest.raises(ValueError, match="rank 0, interval seq 0: collective instance "
                       r"\(tag\) 0 ends at 1 s, before rank 1 enters it at 3 s: it does not "
                       "synchronise"):
        jl.EventTrace(frame)
    # leaving exactly when the last rank enters is barrier-like
    synchronised = frame.assign(start=[0.0, 3.0, 0.0, 3.0], end=[3.0, 6.0, 3.0, 3.5])
    ds = jl.estimate.accumulated_noise(jl.EventTrace(synchronised))
    assert float(ds["run_accumulated"][0]) == 0.0


@pytest.mark.parametrize("suffix", [".parquet", ".nc"])
def test_every_writer_refuses_to_replace_a_file_unless_asked(tmp_path, suffix):
    path = jl.write_events(random_events(1), tmp_path / f"run{suffix}")
    before = path.read_bytes()
    with pytest.raises(FileExistsError, match="exists; pass overwrite=True"):
        jl.write_events(random_events(2), path)
    assert path.read_bytes() == before
    jl.write_events(random_events(2), path, overwrite=True)
    assert jl.read_events(path).equals(random_events(2))


@pytest.mark.parametrize("writer", ["to_csv", "to_parquet", "to_netcdf", "to_jitsim",
                                    "to_loggopsim"])
def test_trace_writers_refuse_to_replace_a_file_unless_asked(tmp_path, writer):
    trace = jl.Trace(jitter=[1e-6, 2e-6], gap=[1e-3, 2e-3])
    path = tmp_path / "trace.out"
    path.write_text("a user's file")
    with pytest.raises(FileExistsError, match="exists; pass overwrite=True"):
        getattr(trace, writer)(path)
    assert path.read_text() == "a user's file"
    getattr(trace, writer)(path, overwrite=True)
    assert path.read_bytes() != b"a user's file"


@pytest.mark.parametrize("suffix", [".parquet", ".nc"])
def test_attrs_keep_their_types_or_are_refused(tmp_path, suffix):
    trace = random_events(1)
    trace.attrs.update(seed=np.int64(3), work=np.float32(0.5), ok=True, none=None,
                       shape=(2, 3), label="x")
    back = jl.read_events(jl.write_events(trace, tmp_path / f"a{suffix}"))
    kept = {key: back.attrs[key] for key in ("seed", "work", "ok", "none", "shape", "label")}
    assert kept == {"seed": 3, "work": 0.5, "ok": True, "none": None, "shape": [2, 3],
                    "label": "x"}
    assert type(kept["seed"]) is int and type(kept["work"]) is float
    trace.attrs["object"] = object()
    with pytest.raises(TypeError, match=r"attrs\['object'\]: cannot store a object value"):
        jl.write_events(trace, tmp_path / f"b{suffix}")
    assert not (tmp_path / f"b{suffix}").exists()
