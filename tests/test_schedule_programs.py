"""jitterlab's dedicated kernels against the same programs written as GOAL schedules
(jitterlab.schedules.programs) on the schedule engine: the tree barrier, the
dissemination barrier and the recursive-doubling all-reduce of jl.simulate, and the
wavefront of jl.apps.wavefront_simulate (progress="on_arrival"); and the round
collectives against LogGOPSim's own output on the same schedules.

Where the semantics coincide (no noise, LogGOPS with g = G = O = 0 and o the Message's
send = recv cost), every rank's end must be equal to the picosecond tick: the kernels
count in floating point seconds (the in-order ones) or in whole picoseconds (the
wavefront), so the tolerance is one tick plus the float rounding of sums of ~10^3
costs (10^-15 s each).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import jitterlab as jl
from jitterlab.schedules import programs

L, OVERHEAD = 5e-6, 1e-6
WORK = 100e-6
PHASES = 3
MESSAGE = jl.Message(send=OVERHEAD, recv=OVERHEAD, latency=L)
PARAMS = jl.LogGOPS(L=L, o=OVERHEAD, g=0.0, G=0.0)
QUIET = jl.Trace(jitter=[0.0, 0.0], gap=[1.0, 1.0])  # a trace without jitter
TICK = 1e-12


def kernel_ends(barrier, n):
    """Each task's end of the last phase from jl.simulate's event trace. [s]"""
    events = jl.simulate(QUIET, n=n, work=WORK, phases=PHASES, barrier=barrier,
                         detail="events", start="synchronized", rng=1)
    return events.data.groupby("rank")["end"].max().to_numpy()


def schedule_ends(schedule):
    return jl.simulate_schedule(schedule, PARAMS)["end"].values[0]


@pytest.mark.parametrize("n", [2, 3, 5, 8, 13])
@pytest.mark.parametrize("fanout", [2, 3])
def test_tree_barrier(n, fanout):
    expected = kernel_ends(jl.TreeBarrier(fanout=fanout, message=MESSAGE), n)
    found = schedule_ends(programs.tree_barrier(n, fanout, WORK, PHASES))
    np.testing.assert_allclose(found, expected, rtol=0, atol=2 * TICK)


@pytest.mark.parametrize("n, kind, barrier", [
    *((n, "dissemination", jl.Dissemination(MESSAGE)) for n in (2, 3, 5, 8, 13)),
    # on N not a power of two LogGOPSim's rule differs (test_recursive_doubling_by_hand)
    *((n, "recursive_doubling", jl.RecursiveDoubling(MESSAGE)) for n in (2, 4, 8, 16))])
def test_round_collectives(n, kind, barrier):
    expected = kernel_ends(barrier, n)
    found = schedule_ends(programs.round_collective(n, WORK, PHASES, kind=kind))
    np.testing.assert_allclose(found, expected, rtol=0, atol=2 * TICK)


@pytest.mark.parametrize("n, kind, barrier", [
    *((n, "recursive_doubling", jl.RecursiveDoubling(MESSAGE)) for n in (2, 3, 5, 6, 8, 13)),
    *((n, "dissemination", jl.Dissemination(MESSAGE)) for n in (3, 5, 13))])
def test_round_collectives_in_program_order(n, kind, barrier):
    """With the CPU costs written as calcs (message=), a message is taken when the program
    reaches its receive, as in the kernel: equal on every N."""
    schedule = programs.round_collective(n, WORK, PHASES, kind=kind, message=MESSAGE)
    found = jl.simulate_schedule(schedule, programs.program_order_parameters(MESSAGE))
    np.testing.assert_allclose(found["end"].values[0], kernel_ends(barrier, n), rtol=0,
                               atol=2 * TICK)


@pytest.mark.parametrize("kind, barrier_class", [("recursive_doubling", jl.RecursiveDoubling),
                                                 ("dissemination", jl.Dissemination)])
def test_round_collectives_in_program_order_unequal_costs(kind, barrier_class):
    """A send and a receive of different CPU cost (one o in LogGOPS cannot say so)."""
    message = jl.Message(send=1e-6, recv=2.5e-6, latency=4e-6)
    schedule = programs.round_collective(6, WORK, PHASES, kind=kind, message=message)
    found = jl.simulate_schedule(schedule, programs.program_order_parameters(message))
    np.testing.assert_allclose(found["end"].values[0],
                               kernel_ends(barrier_class(message), 6), rtol=0, atol=2 * TICK)


def test_recursive_doubling_by_hand():
    """N = 3, one phase of 100 µs, o = 1 µs, L = 5 µs. Ranks 1 and 2 send at 100-101 µs
    (rank 2 its fold-in, rank 1 its exchange: it sits the fold-in out); both messages
    reach rank 0 at 106 µs. LogGOPSim's CPU takes both on arrival (106-108), then rank 0
    sends to rank 1 (108-109: arrives 114, rank 1 ends 115) and the result to rank 2
    (109-110: arrives 115, rank 2 ends 116). The kernel takes rank 2's message (106-107),
    sends to rank 1 (107-108: rank 1 ends 114), takes rank 1's (108-109) and sends to
    rank 2 (109-110: rank 2 ends 116). [µs]"""
    by_arrival = jl.simulate_schedule(
        programs.round_collective(3, WORK, 1, kind="recursive_doubling"), PARAMS)
    in_order = jl.simulate_schedule(
        programs.round_collective(3, WORK, 1, kind="recursive_doubling", message=MESSAGE),
        programs.program_order_parameters(MESSAGE))
    events = jl.simulate(QUIET, n=3, work=WORK, phases=1, barrier=jl.RecursiveDoubling(MESSAGE),
                         detail="events", start="synchronized", rng=1)
    kernel = events.data.groupby("rank")["end"].max().to_numpy()
    np.testing.assert_array_equal(np.rint(by_arrival["end"].values[0] * 1e6), [110, 115, 116])
    np.testing.assert_array_equal(np.rint(in_order["end"].values[0] * 1e6), [110, 114, 116])
    np.testing.assert_array_equal(np.rint(kernel * 1e6), [110, 114, 116])


def loggopsim_rows():
    table = pd.read_csv(Path(__file__).parent / "data" / "loggopsim_round_collectives.csv")
    return [row for _, row in table.iterrows()]


@pytest.mark.parametrize("row", loggopsim_rows(),
                         ids=lambda row: f"{row['kind']}-{row['ranks']}-{row['phases']}")
def test_round_collectives_match_loggopsim(row):
    """LogGOPSim's own per-rank ends of the same schedules (LogGOPSim's rule, every N;
    tests/data/loggopsim_round_collectives.md) to the nanosecond."""
    params = jl.LogGOPS(L=row["L_ns"] * 1e-9, o=row["o_ns"] * 1e-9, g=row["g_ns"] * 1e-9,
                        G=row["G_ns"] * 1e-9)
    schedule = programs.round_collective(int(row["ranks"]), row["work_ns"] * 1e-9,
                                         int(row["phases"]), kind=row["kind"])
    found = jl.simulate_schedule(schedule, params)["end"].values[0]
    expected = np.array(row["rank_end_ns"].split(), dtype=np.int64)
    np.testing.assert_array_equal(np.rint(found * 1e9).astype(np.int64), expected)


@pytest.mark.parametrize("px, py, blocks, iterations", [(1, 2, 1, 1), (3, 2, 2, 1),
                                                        (4, 4, 3, 2), (2, 5, 1, 2)])
def test_wavefront_on_arrival(px, py, blocks, iterations):
    workload = jl.apps.Wavefront(px, py, blocks=blocks, work=WORK, iterations=iterations,
                                 message=MESSAGE)
    ds = jl.apps.wavefront_simulate(workload, progress="on_arrival")
    found = schedule_ends(programs.wavefront(px, py, blocks, WORK, iterations))
    np.testing.assert_array_equal(np.rint(found / TICK),
                                  np.rint(ds["finish"].values[0] / TICK))


def test_wavefront_matches_loggopsim_reference():
    """LogGOPSim's own totals of the 8 x 8 and 4 x 16 reference wavefronts (10 blocks of
    100 µs, 2 iterations, L = 5 µs, o = 1 µs): 17 364 000 and 17 460 000 ns."""
    for px, py, total_ns in ((8, 8, 17_364_000), (4, 16, 17_460_000)):
        ds = jl.simulate_schedule(programs.wavefront(px, py, 10, WORK, 2), PARAMS)
        assert round(float(ds["makespan"][0]) * 1e9) == total_ns


def test_bad_arguments():
    with pytest.raises(ValueError, match="kind must be"):
        programs.round_collective(4, WORK, kind="ring")
    with pytest.raises(TypeError, match="message must be a jl.Message"):
        programs.round_collective(4, WORK, message=PARAMS)
    with pytest.raises(TypeError, match="message must be a jl.Message"):
        programs.program_order_parameters(PARAMS)
    with pytest.raises(ValueError, match="fanout"):
        programs.tree_barrier(4, 1, WORK)
