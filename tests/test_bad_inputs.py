"""Every bad input a clear error: one table of bad inputs across the public API and the CLI.

Each case calls the package (``import jitterlab as jl``) or the command line with one bad
argument and asserts the exception type and that the message names the argument, or the
file (and the line, for text files). Command-line cases assert a non-zero exit status and
a message on stderr naming the argument; they are raised here as :class:`CommandFailed`.
"""

from __future__ import annotations

import gzip
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import jitterlab as jl
from jitterlab.cli import main
from jitterlab.io import NotATraceError

DATA = Path(__file__).parent / "data"
EXP = jl.noise.Exponential(mean=1e-5)
NAN = math.nan
INF = math.inf


def trace():
    """jitSim Fig. 2 in cycles at 1 GHz (De & Mann, seed 000)."""
    return jl.Trace([10, 5, 25, 5, 15, 20, 10, 60, 5, 10],
                    [50, 30, 20, 10, 100, 300, 20, 60, 20, 70], unit="cycles",
                    frequency_hz=1e9)


class CommandFailed(Exception):
    """``jitterlab ARGV`` exited with a non-zero status; the message is its stderr."""


@dataclass
class Context:
    """What a case may use: a scratch folder and the captured output of the CLI."""

    tmp_path: Path
    capsys: pytest.CaptureFixture

    def file(self, name: str, content: bytes | str = b"", compress: bool = False) -> Path:
        data = content.encode() if isinstance(content, str) else content
        path = self.tmp_path / name
        path.write_bytes(gzip.compress(data) if compress else data)
        return path

    def corrupt_gz(self, name: str) -> Path:
        """A gzip file cut in the middle of its compressed stream."""
        packed = gzip.compress(trace().to_jitsim(self.tmp_path / "whole.jitsim").read_bytes())
        return self.file(name, packed[: len(packed) // 2])

    def cli(self, *argv) -> None:
        """Run ``jitterlab ARGV``; raise CommandFailed(stderr) on a non-zero exit status."""
        self.capsys.readouterr()
        try:
            status = main([str(arg) for arg in argv])
        except SystemExit as exit_info:
            status = exit_info.code
        err = self.capsys.readouterr().err
        if status not in (0, None):
            raise CommandFailed(f"exit status {status}: {err}")


def case(call, error, pattern, id):
    return pytest.param(call, error, pattern, id=id)


CASES = [
    # ---------------------------------------------------------------- max_of_n
    case(lambda c: jl.max_of_n(EXP, n=1e20), ValueError, r"\bn\b.*(1e\+?20|large)",
         "max_of_n-n=1e20"),
    case(lambda c: jl.max_of_n(EXP, n=0), ValueError, r"\bn\b", "max_of_n-n=0"),
    case(lambda c: jl.max_of_n(EXP, n=-5), ValueError, r"\bn\b", "max_of_n-n=-5"),
    case(lambda c: jl.max_of_n(EXP, n=2.5), ValueError, r"\bn\b.*2\.5", "max_of_n-n=2.5"),
    case(lambda c: jl.max_of_n(EXP, n=NAN), ValueError, r"\bn\b.*nan", "max_of_n-n=nan"),
    case(lambda c: jl.max_of_n(EXP, n="10"), TypeError, r"\bn\b", "max_of_n-n=str"),
    case(lambda c: jl.max_of_n(EXP, n=[]), ValueError, r"\bn\b", "max_of_n-n=empty"),
    case(lambda c: jl.max_of_n(EXP, n=10, method="montecarlo", replicates=2.7, rng=1),
         ValueError, r"replicates.*2\.7", "max_of_n-replicates=2.7"),
    case(lambda c: jl.max_of_n(EXP, n=10, method="montecarlo", replicates=0, rng=1),
         ValueError, "replicates", "max_of_n-replicates=0"),
    case(lambda c: jl.max_of_n(EXP, n=10, method="bogus"), ValueError, "method.*bogus",
         "max_of_n-method=bogus"),
    case(lambda c: jl.max_of_n(EXP, n=10, quantiles=[1.5]), ValueError, "quantiles",
         "max_of_n-quantiles=1.5"),
    case(lambda c: jl.max_of_n(EXP, n=10, quantiles=[NAN]), ValueError, "quantiles",
         "max_of_n-quantiles=nan"),
    case(lambda c: jl.max_of_n(EXP, n=10, tail="bogus"), ValueError, "tail.*bogus",
         "max_of_n-tail=bogus"),
    case(lambda c: jl.max_of_n("exponential", n=10), TypeError, "dist",
         "max_of_n-dist=str"),
    case(lambda c: jl.max_of_n([], n=10), ValueError, "dist", "max_of_n-dist=empty-list"),
    case(lambda c: jl.max_of_n(EXP, n=10, method="montecarlo", rng="seed"), TypeError,
         r"\brng\b", "max_of_n-rng=str"),
    # ---------------------------------------------------------------- Theorem 1, trees
    case(lambda c: jl.theorem1_bounds(EXP, n=15, tau=-1e-6), ValueError, r"\btau\b",
         "theorem1_bounds-tau<0"),
    case(lambda c: jl.theorem1_bounds(EXP, n=15, tau=NAN), ValueError, r"\btau\b",
         "theorem1_bounds-tau=nan"),
    case(lambda c: jl.theorem1_bounds(EXP, n=15, tau="1e-6"), TypeError, r"\btau\b",
         "theorem1_bounds-tau=str"),
    case(lambda c: jl.theorem1_bounds(EXP, n=15, tau=1e-6, fanout=1), ValueError, "fanout",
         "theorem1_bounds-fanout=1"),
    case(lambda c: jl.theorem1_bounds(EXP, n=15, tau=1e-6, fanout=2.5), ValueError,
         "fanout", "theorem1_bounds-fanout=2.5"),
    case(lambda c: jl.theorem1_bounds(EXP, n=1e20, tau=1e-6), ValueError, r"\bn\b",
         "theorem1_bounds-n=1e20"),
    case(lambda c: jl.theorem1_bounds(EXP, n=15, tau=1e-6, depth="bogus"), ValueError,
         "depth.*bogus", "theorem1_bounds-depth=bogus"),
    case(lambda c: jl.tree_depth(0), ValueError, r"\bn\b", "tree_depth-n=0"),
    case(lambda c: jl.tree_depth(2.5), ValueError, r"\bn\b", "tree_depth-n=2.5"),
    case(lambda c: jl.tree_depth(15, fanout=1), ValueError, "fanout", "tree_depth-fanout=1"),
    case(lambda c: jl.arrival_offsets(15, tau=-1.0), ValueError, r"\btau\b",
         "arrival_offsets-tau<0"),
    case(lambda c: jl.arrival_offsets(15, tau=INF), ValueError, r"\btau\b",
         "arrival_offsets-tau=inf"),
    case(lambda c: jl.arrival_offsets(0, tau=1e-6), ValueError, r"\bn\b",
         "arrival_offsets-n=0"),
    case(lambda c: jl.arrival_offsets(4, tau=1e-6, parent=[-1, 0]), ValueError, "parent",
         "arrival_offsets-parent-length"),
    case(lambda c: jl.barrier_time(EXP, 15, tau=-1e-6), ValueError, r"\btau\b",
         "barrier_time-tau<0"),
    case(lambda c: jl.barrier_time(EXP, 15, tau=1e-6, bound="middle"), ValueError,
         "bound.*middle", "barrier_time-bound=middle"),
    case(lambda c: jl.barrier_time(EXP, 0, tau=1e-6), ValueError, r"\bn\b",
         "barrier_time-n=0"),
    # ---------------------------------------------------------------- noise laws
    case(lambda c: jl.noise.Exponential(mean=0), ValueError, "mean", "Exponential-mean=0"),
    case(lambda c: jl.noise.Exponential(mean=-1e-6), ValueError, "mean",
         "Exponential-mean<0"),
    case(lambda c: jl.noise.Exponential(mean=NAN), ValueError, "mean",
         "Exponential-mean=nan"),
    case(lambda c: jl.noise.Exponential(mean="1e-6"), TypeError, "mean",
         "Exponential-mean=str"),
    case(lambda c: jl.noise.Pareto(alpha=0, scale=1e-6), ValueError, "alpha",
         "Pareto-alpha=0"),
    case(lambda c: jl.noise.Pareto(alpha=2.0, scale=-1e-6), ValueError, "scale",
         "Pareto-scale<0"),
    case(lambda c: jl.noise.Bernoulli(p=1.5, duration=1e-3), ValueError, r"\bp\b",
         "Bernoulli-p=1.5"),
    case(lambda c: jl.noise.Bernoulli(p=NAN, duration=1e-3), ValueError, r"\bp\b",
         "Bernoulli-p=nan"),
    case(lambda c: jl.noise.Bernoulli(p=0.1, duration=-1e-3), ValueError, "duration",
         "Bernoulli-duration<0"),
    case(lambda c: jl.noise.Uniform(high=1e-6, low=2e-6), ValueError, "high|low",
         "Uniform-high<low"),
    case(lambda c: jl.noise.Empirical([]), ValueError, "samples", "Empirical-empty"),
    case(lambda c: jl.noise.Empirical([1e-6, NAN]), ValueError, "samples",
         "Empirical-nan"),
    case(lambda c: jl.noise.Empirical([-1e-6, 2e-6]), ValueError, "samples.*negative",
         "Empirical-negative"),
    case(lambda c: jl.noise.Discrete([1e-6, 2e-6], [0.5]), ValueError, "weights",
         "Discrete-weights-length"),
    case(lambda c: jl.noise.TailedEmpirical(jl.noise.Empirical(np.arange(1, 101) * 1e-6),
                                            min_exceedances=-1),
         ValueError, "min_exceedances", "TailedEmpirical-min_exceedances<0"),
    case(lambda c: EXP.ppf(1.5), ValueError, r"\bq\b", "ppf-q=1.5"),
    case(lambda c: EXP.sample(-1, rng=1), ValueError, r"\bsize\b", "sample-size<0"),
    case(lambda c: EXP.sample(2.5, rng=1), ValueError, r"\bsize\b.*2\.5", "sample-size=2.5"),
    case(lambda c: jl.noise.Empirical("1e-6 2e-6"), TypeError, "samples", "Empirical-str"),
    case(lambda c: jl.noise.Histogram([0, 1e-6, 2e-6], [5]), ValueError, "counts|edges",
         "Histogram-length-mismatch"),
    case(lambda c: jl.noise.Histogram([2e-6, 1e-6, 0], [1, 1]), ValueError, "edges",
         "Histogram-edges-decreasing"),
    case(lambda c: jl.noise.Histogram([0, 1e-6, 2e-6], [3, -1]), ValueError, "counts",
         "Histogram-counts<0"),
    case(lambda c: jl.noise.Periodic(period=0, duration=1e-6, work=1e-3), ValueError,
         "period", "Periodic-period=0"),
    case(lambda c: jl.noise.Periodic(period=1e-3, duration=-1e-6, work=1e-3), ValueError,
         "duration", "Periodic-duration<0"),
    case(lambda c: jl.noise.Periodic(period=1e-3, duration=1e-6, work=-1e-3), ValueError,
         r"\bwork\b", "Periodic-work<0"),
    case(lambda c: jl.noise.Sum([]), ValueError, "components", "Sum-empty"),
    case(lambda c: jl.noise.Sum([EXP, 1e-6]), TypeError, "components", "Sum-not-a-law"),
    case(lambda c: jl.noise.Mixture([EXP, EXP], [0.5, -0.5]), ValueError, "weights",
         "Mixture-weights<0"),
    case(lambda c: EXP + (-1.0), ValueError, "negative", "shift-negative-time"),
    case(lambda c: EXP + NAN, ValueError, "shift|work|finite", "shift-nan"),
    case(lambda c: EXP + "1e-3", TypeError, "shift|work|str", "shift-str"),
    case(lambda c: jl.noise.from_trace(trace(), work=0), ValueError, r"\bwork\b",
         "from_trace-work=0"),
    case(lambda c: jl.noise.from_trace(trace(), work=-1e-6), ValueError, r"\bwork\b",
         "from_trace-work<0"),
    case(lambda c: jl.noise.from_trace(trace(), work=NAN), ValueError, r"\bwork\b",
         "from_trace-work=nan"),
    case(lambda c: jl.noise.from_trace([1, 2], work=1e-6), TypeError, r"\btrace\b",
         "from_trace-trace=list"),
    # ---------------------------------------------------------------- Trace
    case(lambda c: jl.Trace([], []), ValueError, "jitter", "Trace-empty"),
    case(lambda c: jl.Trace([1, 2], [1]), ValueError, "same length", "Trace-lengths"),
    case(lambda c: jl.Trace([-1], [1]), ValueError, "jitter.*negative", "Trace-jitter<0"),
    case(lambda c: jl.Trace([1], [NAN]), ValueError, "gap.*finite", "Trace-gap=nan"),
    case(lambda c: jl.Trace([[1]], [[1]]), ValueError, "jitter.*one-dimensional",
         "Trace-2d"),
    case(lambda c: jl.Trace([1], [1], unit="ms"), ValueError, "unit.*ms", "Trace-unit=ms"),
    case(lambda c: jl.Trace([1], [1], unit="cycles"), ValueError, "frequency_hz",
         "Trace-cycles-without-frequency"),
    case(lambda c: jl.Trace([1], [1], unit="cycles", frequency_hz=-1e9), ValueError,
         "frequency_hz", "Trace-frequency<0"),
    case(lambda c: jl.Trace([0], [0]), ValueError, "zero length", "Trace-zero-length"),
    case(lambda c: jl.Trace(["1e-6"], [1e-3]), TypeError, "jitter", "Trace-jitter=str"),
    case(lambda c: jl.Trace([1], [1], unit="cycles", frequency_hz="1e9"), TypeError,
         "frequency_hz", "Trace-frequency_hz=str"),
    case(lambda c: jl.Trace([1], [1], host=object()), TypeError, "host",
         "Trace-metadata-object"),
    case(lambda c: jl.Trace.from_absolute([0, 1], [2, 1]), ValueError, "overlap",
         "Trace.from_absolute-overlap"),
    case(lambda c: jl.Trace([1e-6], [1e-3]).to_cycles(), ValueError, "frequency_hz",
         "Trace.to_cycles-without-frequency"),
    # ---------------------------------------------------------------- read_trace
    case(lambda c: jl.read_trace(c.tmp_path / "missing.csv"), FileNotFoundError,
         "missing.csv", "read_trace-missing-file"),
    case(lambda c: jl.read_trace(c.corrupt_gz("cut.csv.gz")), ValueError, "cut.csv.gz",
         "read_trace-corrupt-gz"),
    case(lambda c: jl.read_trace(c.corrupt_gz("cut.trc.gz")), ValueError, "cut.trc.gz",
         "read_trace-corrupt-trc-gz"),
    case(lambda c: jl.read_trace(c.file("junk.parquet", b"junk junk\n")), ValueError,
         "junk.parquet: not a Parquet file", "read_trace-junk-parquet"),
    case(lambda c: jl.read_trace(c.file("junk.nc", b"junk junk\n")), ValueError,
         "junk.nc: not a netCDF file", "read_trace-junk-nc"),
    case(lambda c: jl.read_trace(trace().to_csv(c.tmp_path / "t.csv"), frequncy_hz=1e9),
         TypeError, "'frequncy_hz'.*takes no options", "read_trace-unknown-keyword"),
    case(lambda c: jl.read_trace(trace().to_jitsim(c.tmp_path / "t.jitsim"), units="s"),
         TypeError, "'units'.*unit, frequency_hz", "read_trace-unknown-keyword-jitsim"),
    case(lambda c: jl.read_trace(c.file("t.dat", "1\t2\n"), format="netgauge"), ValueError,
         "format 'netgauge'", "read_trace-unknown-format"),
    case(lambda c: jl.read_trace(c.file("t.dat", "1\t2\n")), ValueError, "t.dat",
         "read_trace-unknown-extension"),
    case(lambda c: jl.read_trace(c.file("ftq_0.dat", "0 100\n1000000 90\n"), format="ftq"),
         NotATraceError, r"ftq_0.dat.*read_ftq", "read_trace-format=ftq"),
    case(lambda c: jl.read_trace(c.file("x.csv", "jitter,gap\n1,2\n1,x\n")), ValueError,
         "x.csv line 3", "read_trace-csv-bad-line"),
    case(lambda c: jl.read_trace(c.file("x.trc", "0\t5\n10\t-2\n")), ValueError,
         "x.trc line 2", "read_trace-trc-negative"),
    case(lambda c: jl.read_trace(c.file("x.jitsim", "10\t50\n5\t30\n")), ValueError,
         "x.jitsim.*frequency_hz", "read_trace-jitsim-cycles-without-frequency"),
    case(lambda c: jl.read_trace(c.file("run.1", "\n".join(
        gzip.decompress((DATA / "sysjitter_raw_excerpt.1.gz").read_bytes()).decode()
        .splitlines()[:30]))), ValueError, "run.1.*n_interruptions",
         "read_trace-sysjitter-truncated"),
    case(lambda c: jl.read_trace(42), TypeError, "path", "read_trace-path=int"),
    case(lambda c: jl.io.read_fwq(c.file("fwq_0_times.dat", "2600\n"), frequency_hz="2.6e9"),
         TypeError, "frequency_hz", "io.read_fwq-frequency_hz=str"),
    case(lambda c: jl.io.read_fwq(c.file("fwq_0_times.dat", "2600\n2x00\n"),
                                  frequency_hz=2.6e9),
         ValueError, "fwq_0_times.dat line 2", "io.read_fwq-bad-line"),
    case(lambda c: jl.io.read_ftq(c.file("ftq_0.dat", "0 100\n1000000 90\n"), quantum=-1),
         ValueError, "quantum", "io.read_ftq-quantum<0"),
    case(lambda c: jl.io.read_sysjitter_summary(c.file("summary.txt", "core_i: 0 1\n"
                                                                      "int_n: 10 20\n")),
         ValueError, "summary.txt.*core=", "io.read_sysjitter_summary-several-cores"),
    # ---------------------------------------------------------------- simulate, TreeBarrier
    case(lambda c: jl.simulate([1, 2], n=4, work=1e-7, rng=1), TypeError, r"\btrace\b",
         "simulate-trace=list"),
    case(lambda c: jl.simulate(trace(), n=4, work=1e-7, phases=2.7, rng=1), ValueError,
         r"phases.*2\.7", "simulate-phases=2.7"),
    case(lambda c: jl.simulate(trace(), n=4, work=1e-7, phases=NAN, rng=1), ValueError,
         r"phases.*nan", "simulate-phases=nan"),
    case(lambda c: jl.simulate(trace(), n=4, work=1e-7, phases=0, rng=1), ValueError,
         "phases", "simulate-phases=0"),
    case(lambda c: jl.simulate(trace(), n=0, work=1e-7, rng=1), ValueError, r"\bn\b",
         "simulate-n=0"),
    case(lambda c: jl.simulate(trace(), n=1e20, work=1e-7, rng=1), ValueError, r"\bn\b",
         "simulate-n=1e20"),
    case(lambda c: jl.simulate(trace(), n=4, work=-1e-7, rng=1), ValueError, r"\bwork\b",
         "simulate-work<0"),
    case(lambda c: jl.simulate(trace(), n=4, work=NAN, rng=1), ValueError, r"\bwork\b",
         "simulate-work=nan"),
    case(lambda c: jl.simulate(trace(), n=4, work="1e-7", rng=1), TypeError, r"\bwork\b",
         "simulate-work=str"),
    case(lambda c: jl.simulate(trace(), n=4, work=1e-7, start="bogus", rng=1), ValueError,
         "start.*bogus", "simulate-start=bogus"),
    case(lambda c: jl.simulate(trace(), n=4, work=1e-7, start=[0, 1], rng=1), ValueError,
         "start", "simulate-start-rows-length"),
    case(lambda c: jl.simulate(trace(), n=4, work=1e-7, start=[0, 1, 2, 99], rng=1),
         ValueError, "start", "simulate-start-row-out-of-range"),
    case(lambda c: jl.simulate(trace(), n=4, work=1e-7, barrier="tree", rng=1), TypeError,
         "barrier", "simulate-barrier=str"),
    case(lambda c: jl.simulate(trace(), n=4, work=1e-7, detail="bogus", rng=1), TypeError,
         "detail", "simulate-detail=str"),
    case(lambda c: jl.TreeBarrier(send="1e-6"), TypeError, r"\bsend\b",
         "TreeBarrier-send=str"),
    case(lambda c: jl.TreeBarrier(recv=-1e-6), ValueError, r"\brecv\b",
         "TreeBarrier-recv<0"),
    case(lambda c: jl.TreeBarrier(latency=NAN), ValueError, r"\blatency\b",
         "TreeBarrier-latency=nan"),
    case(lambda c: jl.TreeBarrier(fanout=1), ValueError, "fanout", "TreeBarrier-fanout=1"),
    case(lambda c: jl.TreeBarrier(fanout=2.5), ValueError, "fanout",
         "TreeBarrier-fanout=2.5"),
    case(lambda c: jl.TreeBarrier(cores_per_node=0), ValueError, "cores_per_node",
         "TreeBarrier-cores_per_node=0"),
    case(lambda c: jl.TreeBarrier(cores_per_node=4, intra_node_latency=-1e-6), ValueError,
         "intra_node_latency", "TreeBarrier-intra_node_latency<0"),
    # ---------------------------------------------------------------- synthetic traces
    case(lambda c: jl.synthetic_trace(0, rng=1), ValueError, "duration",
         "synthetic_trace-duration=0"),
    case(lambda c: jl.synthetic_trace(1.0, tick_hz=-250, rng=1), ValueError, "tick_hz",
         "synthetic_trace-tick_hz<0"),
    case(lambda c: jl.synthetic_trace(1.0, interrupt_alpha=0, rng=1), ValueError,
         "interrupt_alpha", "synthetic_trace-interrupt_alpha=0"),
    case(lambda c: jl.synthetic_trace(1.0, daemons=[(0.1,)], rng=1), ValueError, "daemons",
         "synthetic_trace-daemons-malformed"),
    case(lambda c: jl.synthetic_trace(1.0, tick_spread=-0.1, rng=1), ValueError,
         "tick_spread", "synthetic_trace-tick_spread<0"),
    # ---------------------------------------------------------------- characterize, validate
    case(lambda c: jl.characterize.summarize([1, 2]), TypeError, r"(?i)\btrace\b",
         "characterize.summarize-trace=list"),
    case(lambda c: jl.characterize.find_periodic_sources(trace(), min_period=-1.0),
         ValueError, "min_period", "characterize.find_periodic_sources-min_period<0"),
    case(lambda c: jl.characterize.find_periodic_sources(trace(), min_period=1.0,
                                                         max_period=0.1),
         ValueError, "min_period|max_period", "characterize.find_periodic_sources-min>max"),
    case(lambda c: jl.validate.compare(EXP, []), ValueError, "measured",
         "validate.compare-measured-empty"),
    case(lambda c: jl.validate.compare(EXP, [1e-6, NAN]), ValueError, "measured",
         "validate.compare-measured-nan"),
    case(lambda c: jl.validate.compare(EXP, np.full(100, 1e-5), confidence=1.5),
         ValueError, "confidence", "validate.compare-confidence=1.5"),
    case(lambda c: jl.validate.compare(EXP, np.full(100, 1e-5), tau=-1e-6, n=15),
         ValueError, r"\btau\b", "validate.compare-tau<0"),
    case(lambda c: jl.validate.robust_z_scores([]), ValueError, "values",
         "validate.robust_z_scores-empty"),
    case(lambda c: jl.validate.check_independence(np.ones((1, 10))), ValueError, "ranks",
         "validate.check_independence-one-rank"),
    case(lambda c: jl.validate.anomaly_detection_power(None, [1e-5], [0.1]), TypeError,
         r"\bclean\b", "validate.anomaly_detection_power-clean=None"),
    case(lambda c: jl.correlated.GaussianCopulaMax(EXP, n=4, rho=1.5), ValueError, r"\brho\b",
         "correlated.GaussianCopulaMax-rho>1"),
    case(lambda c: jl.simulate(trace(), n=3, work=1e-6, start="random_row", phases=0),
         ValueError, "phases", "simulate-random_row-phases=0"),
    case(lambda c: jl.theorem1_bounds(EXP, n=7, depth="paper", fanout=4), ValueError, "depth",
         "theorem1_bounds-paper-depth-fanout4"),
    case(lambda c: jl.characterize.find_periodic_sources(trace(), false_alarm=2),
         ValueError, "false_alarm", "characterize.find_periodic_sources-false_alarm=2"),
    case(lambda c: jl.validate.compare(EXP, np.full(100, 1e-5), quantiles=[2]), ValueError,
         "quantiles", "validate.compare-quantiles=2"),
    case(lambda c: jl.validate.find_anomalies(None), TypeError, r"\bds\b",
         "validate.find_anomalies-ds=None"),
    # ---------------------------------------------------------------- datasets
    case(lambda c: jl.datasets.load_paper_values("no_such_paper"), FileNotFoundError,
         "no_such_paper", "datasets.load_paper_values-unknown"),
    case(lambda c: jl.datasets.load_fwq(1e-3), ValueError, r"work|0\.001|1e-03|1 ms",
         "datasets.load_fwq-work-not-recorded"),
    case(lambda c: jl.datasets.load_fwq("300us"), TypeError, r"\bwork\b",
         "datasets.load_fwq-work=str"),
    case(lambda c: jl.datasets.load_detour(cpu=9999), ValueError, "cpu",
         "datasets.load_detour-cpu-not-recorded"),
    case(lambda c: jl.datasets.load_detour(variant="bogus"), ValueError, "variant.*bogus",
         "datasets.load_detour-variant=bogus"),
    case(lambda c: jl.datasets.load_pb(ranks=3), ValueError, "ranks",
         "datasets.load_pb-ranks-not-recorded"),
    case(lambda c: jl.datasets.measurement_path("no_such_file.nc"), (ValueError,
         FileNotFoundError), "no_such_file.nc", "datasets.measurement_path-unknown"),
    # ---------------------------------------------------------------- bench (no measuring)
    case(lambda c: jl.bench.fwq(0, 10, progress=False), ValueError, r"\bwork\b",
         "bench.fwq-work=0"),
    case(lambda c: jl.bench.fwq(1e-4, 2.7, progress=False), ValueError, "samples",
         "bench.fwq-samples=2.7"),
    case(lambda c: jl.bench.fwq(1e-4, 10, kernel="bogus", progress=False), ValueError,
         "kernel.*bogus", "bench.fwq-kernel=bogus"),
    case(lambda c: jl.bench.detour(-1.0, progress=False), ValueError, "duration",
         "bench.detour-duration<0"),
    case(lambda c: jl.bench.detour(0.05, chunk_seconds=0, progress=False), ValueError,
         "chunk_seconds", "bench.detour-chunk_seconds=0"),
    case(lambda c: jl.bench.read_detour(c.tmp_path / "missing.detour"), FileNotFoundError,
         "missing.detour", "bench.read_detour-missing"),
    case(lambda c: jl.bench.read_fwq_samples(c.file("junk.nc", b"junk\n")), ValueError,
         "junk.nc", "bench.read_fwq_samples-junk"),
    case(lambda c: jl.bench.read_pb(c.tmp_path / "missing_pb.nc"), FileNotFoundError,
         "missing_pb.nc", "bench.read_pb-missing"),
    case(lambda c: jl.bench.read_latency(c.tmp_path / "missing_latency.nc"), FileNotFoundError,
         "missing_latency.nc", "bench.read_latency-missing"),
    case(lambda c: jl.bench.lcg_work(-1), ValueError, "iterations",
         "bench.lcg_work-iterations<0"),
    case(lambda c: jl.bench.calibrate_tsc(interval=0), ValueError, "interval",
         "bench.calibrate_tsc-interval=0"),
    # ---------------------------------------------------------------- command line
    case(lambda c: c.cli("measure", "detour", "--duration", "-1", "--output",
                         c.tmp_path / "t.nc"), CommandFailed, "duration",
         "cli-measure-detour-duration<0"),
    case(lambda c: c.cli("measure", "detour", "--duration", "0.05", "--chunk-seconds", "0",
                         "--output", c.tmp_path / "t.nc"), CommandFailed, "chunk",
         "cli-measure-detour-chunk-seconds=0"),
    case(lambda c: c.cli("measure", "detour", "--duration", "nan", "--output",
                         c.tmp_path / "t.nc"), CommandFailed, "duration",
         "cli-measure-detour-duration=nan"),
    case(lambda c: c.cli("measure", "fwq", "--work", "0", "--samples", "10", "--output",
                         c.tmp_path / "f.nc"), CommandFailed, "work",
         "cli-measure-fwq-work=0"),
    case(lambda c: c.cli("measure", "fwq", "--work", "1e-4", "--samples", "2.7", "--output",
                         c.tmp_path / "f.nc"), CommandFailed, "samples",
         "cli-measure-fwq-samples=2.7"),
    case(lambda c: c.cli("measure", "fwq", "--work", "1e-4", "--samples", "10", "--output",
                         c.tmp_path / "f.parquet"), CommandFailed, "f.parquet|output",
         "cli-measure-fwq-output-format"),
    case(lambda c: c.cli("info", c.tmp_path / "missing.nc"), CommandFailed, "missing.nc",
         "cli-info-missing-file"),
    case(lambda c: c.cli("info", c.file("junk.parquet", b"junk junk\n")), CommandFailed,
         "junk.parquet: not a Parquet file", "cli-info-junk-parquet"),
    case(lambda c: c.cli("info", c.corrupt_gz("cut.csv.gz")), CommandFailed, "cut.csv.gz",
         "cli-info-corrupt-gz"),
    case(lambda c: c.cli("info", c.file("x.csv", "jitter,gap\n1,2\n1,x\n")), CommandFailed,
         "x.csv line 3", "cli-info-csv-bad-line"),
    case(lambda c: c.cli("info", c.file("t.dat", "1\t2\n"), "--format", "bogus"),
         CommandFailed, "bogus", "cli-info-format=bogus"),
    case(lambda c: c.cli("info", c.file("ftq_0.dat", "0 100\n1000000 90\n")),
         CommandFailed, "read_ftq", "cli-info-ftq-file"),
    case(lambda c: c.cli("reproduce", "--timeout", "0", "--output", c.tmp_path / "r"),
         CommandFailed, "timeout", "cli-reproduce-timeout=0"),
    case(lambda c: c.cli("reproduce", "--notebooks", c.tmp_path / "no_notebooks",
                         "--output", c.tmp_path / "r"), CommandFailed, "no_notebooks",
         "cli-reproduce-notebooks-missing"),
    case(lambda c: c.cli("bogus"), CommandFailed, "bogus", "cli-unknown-command"),
    # ---------------------------------------------------------------- issue 19: sweep options,
    # sizes and planned durations
    case(lambda c: jl.sweep(jl.apps.wavefront_simulate,
                            {"workload": [jl.apps.Wavefront(2, 2, blocks=2, work=1e-4)]},
                            progress="on_arrival"), TypeError,
         r"progress='on_arrival'.*fixed=\{'progress'", "sweep-progress-on_arrival"),
    case(lambda c: jl.sweep(jl.max_of_n, {"n": [1]}, client="on_arrival", dist_or_list=EXP),
         TypeError, r"client='on_arrival'", "sweep-client-on_arrival"),
    case(lambda c: jl.sweep(jl.max_of_n, {"n": [1]}, fixed=True, dist_or_list=EXP),
         TypeError, r"fixed=True", "sweep-fixed-True"),
    case(lambda c: jl.sweep(jl.max_of_n, {"n": [1]}, rng="2024", dist_or_list=EXP,
                            progress=False), TypeError, r"\brng\b", "sweep-rng-str"),
    case(lambda c: jl.simulate(trace(), n=10**12, work=1e-4), ValueError,
         r"n=1000000000000.*64 TB.*allow_large", "simulate-n-1e12-memory"),
    case(lambda c: jl.simulate(trace(), n=10**6, work=1e-4, phases=10**6, detail=True),
         ValueError, r"detail=True.*48 TB", "simulate-detail-memory"),
    case(lambda c: jl.simulate(trace(), n=4, work=1e-4, allow_large="yes"), TypeError,
         r"allow_large", "simulate-allow_large-str"),
    case(lambda c: jl.max_of_n(EXP, n=10**10, method="montecarlo"), ValueError,
         r"1e\+14 uniforms.*replicates=10000.*method='exact'", "max_of_n-montecarlo-n-1e10"),
    case(lambda c: c.cli("measure", "bsp", "--phases", "10", "--work", "1e3", "--output",
                         c.tmp_path / "b.nc"), CommandFailed,
         r"2.78 h \(--phases 10 x --work 1000 s\)", "cli-measure-bsp-work-1e3"),
    case(lambda c: c.cli("measure", "detour", "--duration", "inf", "--force", "--output",
                         c.tmp_path / "t.nc"), CommandFailed, r"--duration inf",
         "cli-measure-detour-duration-inf-force"),
]


@pytest.mark.parametrize(("call", "error", "pattern"), CASES)
def test_bad_input_gives_a_clear_error(tmp_path, capsys, call, error, pattern):
    with pytest.raises(error, match=pattern):
        call(Context(tmp_path, capsys))


def test_the_table_is_large_and_covers_the_api_and_the_cli():
    ids = [param.id for param in CASES]
    assert len(ids) >= 60 and len(set(ids)) == len(ids)
    assert sum(name.startswith("cli-") for name in ids) >= 10
