"""Trace: validation, units, statistics, the absolute form."""

import datetime as dt

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from jitterlab.traces.trace import Trace

# jitSim Fig. 2 (seed 000): <jitter duration, cycles to next jitter>
FIG2_JITTER = [10, 5, 25, 5, 15, 20, 10, 60, 5, 10]
FIG2_GAP = [50, 30, 20, 10, 100, 300, 20, 60, 20, 70]


def fig2(**metadata):
    return Trace(FIG2_JITTER, FIG2_GAP, unit="cycles", frequency_hz=1e9, **metadata)


# --------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"jitter": [[1.0]], "gap": [[1.0]]}, "jitter must be one-dimensional"),
        ({"jitter": [], "gap": []}, "jitter is empty"),
        ({"jitter": [1.0, 2.0], "gap": [1.0]}, "same length"),
        ({"jitter": [1.0, np.nan], "gap": [1.0, 1.0]}, "jitter must be finite"),
        ({"jitter": [1.0, 1.0], "gap": [np.inf, 1.0]}, "gap must be finite"),
        ({"jitter": [1.0, -1.0], "gap": [1.0, 1.0]}, "jitter must be non-negative"),
        ({"jitter": [1.0], "gap": [-0.5]}, "gap must be non-negative"),
        ({"jitter": [0.0, 0.0], "gap": [0.0, 0.0]}, "zero length"),
        ({"jitter": [[1.0, 2.0], [1.0]], "gap": [1.0]}, "jitter must be a one-dimensional"),
        ({"jitter": [1.0], "gap": [1.0], "unit": "ms"}, "unit must be"),
        ({"jitter": [1.0], "gap": [1.0], "unit": "cycles"}, "needs frequency_hz"),
        ({"jitter": [1.0], "gap": [1.0], "unit": "cycles", "frequency_hz": 0.0},
         "frequency_hz must be finite and > 0"),
        ({"jitter": [1.0], "gap": [1.0], "frequency_hz": np.nan}, "frequency_hz"),
    ],
)
def test_invalid_traces_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Trace(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"jitter": ["a"], "gap": [1.0]}, "jitter must be an array of numbers.*'a'"),
        ({"jitter": ["1e-6"], "gap": [1.0]}, "jitter must be an array of numbers.*'1e-6'"),
        ({"jitter": [1.0], "gap": "1 2"}, "gap must be an array of numbers"),
        ({"jitter": [True, False], "gap": [1.0, 1.0]}, "jitter must be an array of numbers"),
        ({"jitter": [1.0, "2"], "gap": [1.0, 1.0]}, "jitter must be an array of numbers"),
        ({"jitter": None, "gap": [1.0]}, "jitter must be an array of numbers"),
        ({"jitter": [1.0], "gap": [1.0], "unit": 1}, "unit must be 's' or 'cycles'"),
        ({"jitter": [1.0], "gap": [1.0], "frequency_hz": "fast"}, "frequency_hz"),
        ({"jitter": [1.0], "gap": [1.0], "frequency_hz": "1e9"}, "frequency_hz"),
        ({"jitter": [1.0], "gap": [1.0], "bad": object()}, "cannot store a object"),
        ({"jitter": [1.0], "gap": [1.0], "bad": {1: 2}}, "keys must be strings"),
    ],
)
def test_wrong_types_raise_type_error(kwargs, message):
    # strings are not times (np.array(["1e-6"], float) would silently convert them)
    with pytest.raises(TypeError, match=message):
        Trace(**kwargs)


def test_zero_length_events_are_allowed():
    trace = Trace([0.0, 1.0], [2.0, 0.0])
    assert trace.n_events == len(trace) == 2
    assert trace.duration == 3.0


# --------------------------------------------------------------------------------------
# the table and units
# --------------------------------------------------------------------------------------
def test_fig2_trace_in_cycles():
    trace = fig2(source="jitSim Fig. 2")
    assert trace.unit == "cycles" and trace.frequency_hz == 1e9
    assert trace.jitter.tolist() == FIG2_JITTER and trace.gap.tolist() == FIG2_GAP
    assert trace.duration == 845e-9
    assert trace.starts.tolist() == [x / 1e9 for x in
                                     (0, 60, 95, 140, 155, 270, 590, 620, 740, 765)]
    np.testing.assert_array_equal(trace.jitter_seconds, np.array(FIG2_JITTER) / 1e9)
    np.testing.assert_array_equal(trace.gap_seconds, np.array(FIG2_GAP) / 1e9)
    table = trace.table
    assert list(table.columns) == ["jitter", "gap"]
    assert (table.dtypes == np.float64).all()
    assert table.attrs["unit"] == "cycles" and table.attrs["source"] == "jitSim Fig. 2"
    assert repr(trace) == ("Trace(10 events, 8.45e-07 s, noise fraction 19.53%, "
                           "unit='cycles' at 1e+09 Hz)")


def test_arrays_are_read_only_and_table_is_a_copy():
    trace = fig2()
    with pytest.raises(ValueError):
        trace.jitter[0] = 1.0
    with pytest.raises(ValueError):
        trace.gap_seconds[0] = 1.0
    table = trace.table
    table.loc[0, "jitter"] = 999.0
    assert trace.jitter[0] == 10


def test_unit_conversions_are_lossless_for_integer_cycles():
    trace = fig2(source="x")
    seconds = trace.to_seconds()
    assert seconds.unit == "s" and seconds.frequency_hz == 1e9
    assert seconds.to_cycles().equals(trace)
    assert trace.to_cycles().equals(trace)
    doubled = trace.to_cycles(2e9)
    assert doubled.jitter.tolist() == [2 * x for x in FIG2_JITTER]
    assert doubled.to_cycles(1e9).equals(trace)


@given(rows=st.lists(st.tuples(st.integers(0, 2**40), st.integers(1, 2**40)), min_size=1,
                    max_size=30),
       frequency=st.floats(1e6, 1e10))
def test_integer_cycles_survive_seconds(rows, frequency):
    jitter, gap = zip(*rows, strict=True)
    trace = Trace(jitter, gap, unit="cycles", frequency_hz=frequency)
    assert trace.to_seconds().to_cycles().equals(trace)


def test_to_cycles_needs_a_frequency():
    with pytest.raises(ValueError, match="to_cycles needs frequency_hz"):
        Trace([1.0], [1.0]).to_cycles()
    assert Trace([1e-9], [2e-9]).to_cycles(1e9).jitter.tolist() == [1.0]


def test_metadata_is_kept_json_compatible():
    when = dt.datetime(2024, 5, 1, 12, 30, tzinfo=dt.UTC)
    trace = Trace([1.0], [1.0], collected_at=when, threshold=np.float32(0.5),
                  cpu=np.int64(3), daemons=((0.1, 4e-5),), day=dt.date(2024, 5, 1),
                  nested={"a": np.array([1, 2])}, empty=None)
    assert trace.attrs == {"collected_at": "2024-05-01T12:30:00+00:00", "threshold": 0.5,
                           "cpu": 3, "daemons": [[0.1, 4e-5]], "day": "2024-05-01",
                           "nested": {"a": [1, 2]}, "empty": None}
    assert type(trace.attrs["cpu"]) is int


def test_equals():
    trace = fig2(source="a")
    assert trace.equals(fig2(source="a"))
    assert trace.equals(trace.copy())
    assert not trace.equals(fig2(source="b"))
    assert not trace.equals(fig2())
    assert not trace.equals(trace.to_seconds())
    assert not trace.equals(Trace(FIG2_JITTER, FIG2_GAP, "cycles", 2e9, source="a"))
    assert not trace.equals(Trace(FIG2_GAP, FIG2_JITTER, "cycles", 1e9, source="a"))
    assert not trace.equals(FIG2_JITTER)


# --------------------------------------------------------------------------------------
# statistics
# --------------------------------------------------------------------------------------
def test_stats_of_a_hand_made_trace():
    # Σ jitter = 4, Σ gap = 12, duration 16; sorted jitter 0, 0.5, 1.5, 2 (dyadic: exact)
    trace = Trace([0.5, 1.5, 0.0, 2.0], [3.5, 0.5, 2.0, 6.0], source="hand")
    stats = trace.stats()
    assert stats.name == "hand"
    assert stats.dtype == np.float64
    exact = {"n_events": 4, "duration": 16.0, "event_rate": 0.25, "noise_fraction": 0.25,
             "mean_jitter": 1.0, "total_jitter": 4.0, "p50_jitter": 1.0,
             "max_jitter": 2.0, "mean_gap": 3.0}
    for key, value in exact.items():
        assert stats[key] == value, key
    # linear interpolation between order statistics at (n - 1)·q = 3q
    assert stats["p90_jitter"] == pytest.approx(1.5 + 0.7 * 0.5, rel=1e-15)
    assert stats["p99_jitter"] == pytest.approx(1.5 + 0.97 * 0.5, rel=1e-15)
    assert stats["p999_jitter"] == pytest.approx(1.5 + 0.997 * 0.5, rel=1e-15)
    assert stats.attrs["units"]["event_rate"] == "1/s"
    assert stats.attrs["units"]["p99_jitter"] == "s"
    assert set(stats.attrs["units"]) == set(stats.index)


def test_stats_in_cycles_are_in_seconds():
    stats = fig2().stats()
    assert stats["duration"] == 845e-9
    assert stats["total_jitter"] == pytest.approx(165e-9, rel=1e-15)
    assert stats["noise_fraction"] == pytest.approx(165 / 845, rel=1e-15)
    assert stats["max_jitter"] == 60e-9


# --------------------------------------------------------------------------------------
# absolute form
# --------------------------------------------------------------------------------------
def test_to_absolute_of_fig2():
    absolute = fig2().to_absolute()
    assert list(absolute.columns) == ["start", "duration"]
    np.testing.assert_allclose(absolute["start"] * 1e9,
                               [0, 60, 95, 140, 155, 270, 590, 620, 740, 765], atol=1e-9)
    assert absolute.attrs["total_duration"] == 845e-9


def test_from_absolute_sorts_and_wraps():
    trace = Trace.from_absolute(start=[6.0, 1.0, 3.0], duration=[1.0, 1.0, 0.0],
                                total_duration=10.0, source="x")
    assert trace.jitter.tolist() == [1.0, 0.0, 1.0]
    assert trace.gap.tolist() == [1.0, 3.0, 4.0]  # last: 10 - 7 + 1
    assert trace.attrs == {"source": "x", "offset": 1.0}
    assert trace.duration == 10.0


def test_from_absolute_default_total_repeats_the_leading_gap():
    trace = Trace.from_absolute([2.0, 5.0], [1.0, 1.0])
    assert trace.gap.tolist() == [2.0, 2.0]  # the 2 before the first event comes back
    assert trace.duration == 6.0


def test_from_absolute_in_cycles_records_offset_in_seconds():
    trace = Trace.from_absolute([100, 300], [10, 20], total_duration=1000, unit="cycles",
                                frequency_hz=1e9)
    assert trace.unit == "cycles"
    assert trace.gap.tolist() == [190.0, 780.0]
    assert trace.attrs["offset"] == 100e-9


def test_round_trip_through_absolute_keeps_rows():
    trace = Trace([1.0, 2.0, 0.0], [3.0, 0.0, 5.0], offset=4.0)
    back = Trace.from_absolute(**trace.to_absolute())
    assert back.jitter.tolist() == trace.jitter.tolist()
    assert back.gap.tolist() == trace.gap.tolist()
    assert back.attrs["offset"] == 4.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"start": [0.0, 1.0], "duration": [2.0, 1.0]},
         r"event 0 \(start 0.0 s, duration 2.0 s\) is still running when event 1"),
        ({"start": [5.0, 0.0, 1.0], "duration": [1.0, 2.0, 1.0]}, "event 1 .* event 2"),
        ({"start": [0.0, 1.0], "duration": [1.0, 1.0], "total_duration": 1.5},
         "shorter than the span"),
        ({"start": [0.0], "duration": [1.0], "total_duration": np.inf}, "finite"),
        ({"start": [-1.0], "duration": [1.0]}, "start must be non-negative"),
        ({"start": [0.0, 1.0], "duration": [1.0]}, "same length"),
        ({"start": [0.0], "duration": [1.0], "overlap": "ignore"}, "overlap must be"),
        ({"start": [0.0], "duration": [1.0], "total_duration": -1.0}, "total_duration"),
    ],
)
def test_from_absolute_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Trace.from_absolute(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"start": ["0"], "duration": [1.0]}, "start must be an array of numbers"),
        ({"start": [0.0], "duration": [1.0], "total_duration": "long"}, "total_duration"),
    ],
)
def test_from_absolute_wrong_types(kwargs, message):
    with pytest.raises(TypeError, match=message):
        Trace.from_absolute(**kwargs)


def test_overlapping_events_serialize_or_merge():
    start, duration = [0.0, 1.0, 10.0], [2.0, 2.0, 1.0]
    serial = Trace.from_absolute(start, duration, total_duration=20.0, overlap="serialize")
    assert serial.jitter.tolist() == [2.0, 2.0, 1.0]  # the second waits until 2
    assert serial.gap.tolist() == [0.0, 6.0, 9.0]
    assert serial.duration == 20.0
    merged = Trace.from_absolute(start, duration, total_duration=20.0, overlap="merge")
    assert merged.jitter.tolist() == [3.0, 1.0]
    assert merged.gap.tolist() == [7.0, 9.0]


def test_touching_and_zero_length_events_do_not_overlap():
    trace = Trace.from_absolute([0.0, 1.0, 1.0], [1.0, 1.0, 0.0], total_duration=3.0)
    assert trace.jitter.tolist() == [1.0, 0.0, 1.0]
    assert trace.gap.tolist() == [0.0, 0.0, 1.0]


@st.composite
def integer_traces(draw):
    n = draw(st.integers(1, 40))
    jitter = draw(st.lists(st.integers(0, 10**6), min_size=n, max_size=n))
    gap = draw(st.lists(st.integers(0, 10**6), min_size=n, max_size=n))
    if sum(jitter) + sum(gap) == 0:
        gap[0] = 1
    offset = draw(st.integers(0, 10**6))
    return jitter, gap, offset


@given(integer_traces(), st.randoms(use_true_random=False))
@settings(max_examples=60)
def test_absolute_and_rows_are_inverse(data, random):
    jitter, gap, offset = data
    trace = Trace(jitter, gap, offset=float(offset))
    absolute = trace.to_absolute()
    assert (absolute["start"].diff().dropna() >= 0).all()
    shuffled = absolute.sample(frac=1.0, random_state=random.randint(0, 2**31))
    back = Trace.from_absolute(shuffled["start"].to_numpy(), shuffled["duration"].to_numpy(),
                               total_duration=absolute.attrs["total_duration"])
    assert back.equals(trace)
    assert Trace.from_absolute(**absolute).equals(trace)


@given(st.lists(st.tuples(st.floats(0, 1e3), st.floats(0, 1e3)), min_size=1, max_size=40),
       st.floats(0, 1e3))
@settings(max_examples=60)
def test_absolute_round_trip_of_float_rows(rows, offset):
    jitter, gap = map(list, zip(*rows, strict=True))
    # times far below the resolution of the timeline (offset + duration) cannot survive
    assume(sum(jitter) + sum(gap) > 1e-9 * offset)
    trace = Trace(jitter, gap, offset=offset)
    back = Trace.from_absolute(**trace.to_absolute())
    # the running sums of start times round; errors stay within a few ulps of the span
    scale = 8 * np.finfo(float).eps * (offset + trace.duration)
    np.testing.assert_allclose(back.jitter, trace.jitter, rtol=0, atol=scale)
    np.testing.assert_allclose(back.gap, trace.gap, rtol=0, atol=scale)
    assert back.duration == pytest.approx(trace.duration, abs=scale * len(trace))


def test_to_absolute_needs_a_numeric_offset():
    with pytest.raises(ValueError, match="offset"):
        Trace([1.0], [1.0], offset="soon").to_absolute()


def test_table_frame_is_pandas():
    assert isinstance(fig2().to_absolute(), pd.DataFrame)
