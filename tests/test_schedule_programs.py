"""jitterlab's dedicated kernels against the same programs written as GOAL schedules
(jitterlab.schedules.programs) on the schedule engine: the tree barrier, the
dissemination barrier and the recursive-doubling all-reduce of jl.simulate, and the
wavefront of jl.apps.wavefront_simulate (progress="on_arrival").

Where the semantics coincide (no noise, LogGOPS with g = G = O = 0 and o the Message's
send = recv cost), every rank's end must be equal to the picosecond tick: the kernels
count in floating point seconds (the in-order ones) or in whole picoseconds (the
wavefront), so the tolerance is one tick plus the float rounding of sums of ~10^3
costs (10^-15 s each).
"""

from __future__ import annotations

import numpy as np
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
    # N not a power of two: the fold rounds are not yet equal (1-2 µs apart at N = 3, 5,
    # 13; issue #23), so only powers of two are checked
    *((n, "recursive_doubling", jl.RecursiveDoubling(MESSAGE)) for n in (2, 4, 8, 16))])
def test_round_collectives(n, kind, barrier):
    expected = kernel_ends(barrier, n)
    found = schedule_ends(programs.round_collective(n, WORK, PHASES, kind=kind))
    np.testing.assert_allclose(found, expected, rtol=0, atol=2 * TICK)


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
    with pytest.raises(ValueError, match="fanout"):
        programs.tree_barrier(4, 1, WORK)
