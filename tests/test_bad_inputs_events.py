"""Bad inputs to the modules added in wave 2 (event traces, estimation, OTF2, collectives,
counters, ROSS reader): each gives a clear error naming the argument, column or file
(issue #19; the core's table is tests/test_bad_inputs.py)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

import jitterlab as jl
from jitterlab.testing import random_events

DATA = Path(__file__).parent / "data"
OTF2 = DATA / "events_small.otf2" / "traces.otf2"
QUIET = jl.Trace(jitter=[1e-6], gap=[1e-3])


def rows(**columns):
    base = {"rank": [0, 0, 1], "seq": [0, 1, 0], "kind": ["compute", "send", "recv"],
            "start": [0.0, 2.0, 0.0], "end": [2.0, 2.0, 2.5], "peer": [-1, 1, 0],
            "tag": [0, 7, 7], "noise_combined": [1.0, 0.0, 0.0]}
    return pd.DataFrame({**base, **columns})


def events():
    return random_events(1, n_ranks=3, steps=6)


def counts(**columns):
    return pd.DataFrame(columns)


CASES = [
    # ------------------------------------------------------------------ EventTrace
    (lambda p: jl.EventTrace([1, 2]), TypeError, "data must be a pandas DataFrame"),
    (lambda p: jl.EventTrace(rows(), latency=math.nan), ValueError, "latency"),
    (lambda p: jl.EventTrace(rows(), latency="1"), TypeError, "latency"),
    (lambda p: jl.EventTrace(rows(rank=["a", "a", "b"])), ValueError, "column 'rank'"),
    (lambda p: jl.EventTrace(rows(start=["x", 2.0, 0.0])), ValueError, "column 'start'"),
    (lambda p: jl.EventTrace(rows(noise_combined=[math.nan, 0, 0])), ValueError,
     "rank 0, interval seq 0: noise 'combined'"),
    (lambda p: jl.EventTrace(rows(any_order=["yes", "no", "no"])), ValueError,
     "column 'any_order'"),
    (lambda p: jl.EventTrace(rows(peer=[-1, 1.5, 0])), ValueError, "column 'peer'"),
    (lambda p: jl.EventTrace(rows().iloc[:0]), ValueError, "no intervals"),
    (lambda p: jl.EventTrace(rows(kind=[None, "send", "recv"])), ValueError,
     "rank 0, interval seq 0: kind"),
    (lambda p: jl.EventTrace(rows(tag=[0, 2**70, 2**70])), ValueError, "column 'tag'"),
    # ------------------------------------------------------------------ estimate
    (lambda p: jl.estimate.accumulated_noise(rows()), TypeError, "events must be a jl.EventTrace"),
    (lambda p: jl.estimate.accumulated_noise(events(), "bogus"), ValueError,
     "no noise source 'bogus'"),
    (lambda p: jl.estimate.accumulated_noise(events(), 5), TypeError, "sources must be"),
    (lambda p: jl.estimate.approximate_timeline(None), TypeError, "events must be"),
    (lambda p: jl.estimate.against_simulation(QUIET, 0, 1e-4, 3, rng=1), ValueError,
     r"\bn must"),
    (lambda p: jl.estimate.against_simulation(QUIET, 4, -1, 3, rng=1), ValueError, "work"),
    (lambda p: jl.estimate.against_simulation("x", 4, 1e-4, 3, rng=1), TypeError, "trace"),
    (lambda p: jl.estimate.split_noise(events(), pd.DataFrame({"rank": [0], "seq": [0],
                                                               "duration": [0.0]}),
                                       source="who"), ValueError, r"lack the columns \['who'\]"),
    # ------------------------------------------------------------------ collectives, Message
    (lambda p: jl.Message(send=-1), ValueError, "send"),
    (lambda p: jl.Message(latency=math.nan), ValueError, "latency"),
    (lambda p: jl.Dissemination(1), TypeError, "message must be a jl.Message"),
    (lambda p: jl.RecursiveDoubling(jl.TreeBarrier()), TypeError, "message must be a jl.Message"),
    (lambda p: jl.Dissemination().rounds(0), ValueError, r"^n must be >= 1"),
    (lambda p: jl.theorem1_bounds(jl.noise.Exponential(mean=1e-5) + 1e-3, n=7, tau=1e-6,
                                  barrier=jl.TreeBarrier()), ValueError, "give barrier or tau"),
    # ------------------------------------------------------------------ event files
    (lambda p: jl.read_events(p / "missing.parquet"), FileNotFoundError, "missing.parquet"),
    (lambda p: jl.read_events(p / "x.txt"), ValueError, "x.txt: unknown event-trace format"),
    (lambda p: jl.write_events(rows(), p / "x.parquet"), TypeError, "trace must be"),
    (lambda p: jl.write_events(events(), 5), TypeError, "path must be"),
    (lambda p: jl.io.read_otf2_events(OTF2, latency=-1), ValueError, "latency"),
    (lambda p: jl.io.read_otf2_events(OTF2, metrics=5), TypeError, "metrics must be"),
    (lambda p: jl.io.read_otf2_events(p / "none.otf2"), FileNotFoundError, "none.otf2"),
    (lambda p: jl.io.write_otf2_events(events(), p / "a", overwrite="yes"), TypeError,
     "overwrite must be True or False"),
    # ------------------------------------------------------------------ counters
    (lambda p: jl.counters.metrics([1, 2]), TypeError, "table must be a pandas DataFrame"),
    (lambda p: jl.counters.l2_miss_rate(counts(PAPI_L2_TCM=["a"], PAPI_L2_TCA=["b"])),
     ValueError, "PAPI_L2_TCM is not a number in row 0"),
    (lambda p: jl.counters.l2_miss_rate(counts(PAPI_L2_TCM=[-1], PAPI_L2_TCA=[10])),
     ValueError, "PAPI_L2_TCM is negative"),
    (lambda p: jl.counters.l2_miss_rate(counts(PAPI_L2_TCM=[20], PAPI_L2_TCA=[10])),
     ValueError, r"PAPI_L2_TCM \(20(\.0)?\) exceeds PAPI_L2_TCA \(10(\.0)?\) in row 0"),
    (lambda p: jl.counters.l2_data_miss_rate(counts(PAPI_L2_DCH=[20], PAPI_L2_DCA=[10])),
     ValueError, "PAPI_L2_DCH .* exceeds PAPI_L2_DCA"),
    (lambda p: jl.counters.tlb_miss_ratio(counts(PAPI_TLB_TL=[1], PAPI_TOT_CYC=[10]), per=0),
     ValueError, "per must be"),
    (lambda p: jl.counters.read_perf_stat(DATA / "events_small.otf2" / "traces.otf2"),
     ValueError, "traces.otf2: not a text file of counts"),
    # ------------------------------------------------------------------ ROSS
    (lambda p: jl.io.read_ross_summary(5), TypeError, "source must be a path"),
    (lambda p: jl.io.read_ross_summary(str(p / "ross.txt")), FileNotFoundError,
     "ross.txt: no such file"),
]


@pytest.mark.parametrize(("call", "error", "pattern"), CASES,
                         ids=[f"case{i}" for i in range(len(CASES))])
def test_bad_input_gives_a_clear_error(tmp_path, call, error, pattern):
    with pytest.raises(error, match=pattern):
        call(tmp_path)
