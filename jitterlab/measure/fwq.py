"""Fixed Work Quantum (FWQ): time many repetitions of the same small piece of work.

Each sample times one quantum of work ``w`` — a fixed number of iterations of a linear
congruential generator, the ``do_work`` of Garg & De's Parallel Benchmark — with the
timestamp counter. Undisturbed, a sample takes ``w``; a sample hit by the operating
system takes ``w + δ``. The samples give the per-process law of ``w + δ`` that the
max-of-N method needs (:class:`jitterlab.noise.Empirical`).

References
----------
.. [1] R. Garg, P. De, "Impact of Noise on Scaling of Collectives: An Empirical
   Evaluation", HiPC 2006 (seed 001), §3.1, Algorithm 1 and eq. (3).
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import numba
import numpy as np
from tqdm import tqdm

from ._machine import check_integer, check_seconds, machine_attrs, pinned, resolve_cpu, utc_now
from ._tsc import calibrate_tsc, check_cycle_counter, read_tsc

if TYPE_CHECKING:  # the law's module imports scipy.stats: an MPI rank of the PB needs none of it
    from ..noise import Empirical

__all__ = ["fwq", "lcg_work", "read_fwq_samples", "write_fwq_samples", "LCG_A", "LCG_B",
           "LCG_P", "SOURCE"]

SOURCE = "jitterlab.bench.fwq"  # the files' format marker (kept)
#: multiplier, increment and modulus of the LCG: Park & Miller's "minimal standard"
#: generator as revised in 1993 (C++ ``std::minstd_rand``), x ← 48271·x mod (2^31 − 1).
#: The modulus is prime on purpose: with a power of two the compiler may merge successive
#: steps (the low bits of a·(a·x + b) + b need no intermediate reduction) and the work
#: would no longer grow with the number of iterations.
LCG_A = 48271
LCG_B = 0
LCG_P = 2**31 - 1
KERNELS = ("lcg",)
#: calibration: the minimum of this many timed quanta is taken as the undisturbed time
_TRIALS = 7
#: calibration runs at most this long a quantum and extrapolates beyond it [s]
_CALIBRATION_MAX = 0.01
#: the calibrated minimum must lie this close to the target [1]
_CALIBRATION_TOLERANCE = 2e-3
#: the progress bar is updated about this often [s]
_BLOCK_SECONDS = 0.25
_CSV_MARKER = "# jitterlab fwq samples"
_CSV_HEADER = "iteration_time"
_NC_JSON = "jitterlab_fwq"
FORMAT_VERSION = 1


@numba.njit(cache=True)
def lcg_steps(iterations, x):
    for _ in range(iterations):
        x = (LCG_A * x + LCG_B) % LCG_P
    return x


def _lcg_python(iterations: int, seed: int) -> int:
    """Reference implementation of :func:`lcg_work` in plain Python."""
    x = seed
    for _ in range(iterations):
        x = (LCG_A * x + LCG_B) % LCG_P
    return x


def _check_seed(seed) -> int:
    seed = check_integer("seed", seed, 1)
    if seed >= LCG_P:
        raise ValueError(f"seed must be < p = 2**31 - 1, got {seed!r}")
    return seed


def lcg_work(iterations: int, seed: int = 1) -> int:
    """The work kernel of Garg & De's Parallel Benchmark: iterate an LCG.

    Parameters
    ----------
    iterations : int
        Number of steps, >= 0. [1]
    seed : int, default 1
        The start value ``x_0``, in ``[1, p)`` (0 is a fixed point of the generator).

    Returns
    -------
    int
        ``x_iterations``. Returning it (and feeding it to the next call) keeps the
        compiler from removing the work.

    Notes
    -----
    Eq. (3) of [1]_, ``x_{j+1} = (a·x_j + b) mod p``, with ``a`` = 48271, ``b`` = 0 and
    ``p`` = 2^31 − 1 (:data:`LCG_A`, :data:`LCG_B`, :data:`LCG_P`): the "minimal
    standard" generator of Park & Miller [2]_ (period p − 1). Each step depends on the
    previous one through a multiplication and a reduction modulo a prime, so the time
    is proportional to ``iterations``. Compiled with numba; ``a·x + b`` < 2^47 never
    overflows int64.

    References
    ----------
    .. [1] R. Garg, P. De, HiPC 2006 (seed 001), §3.1, eq. (3).
    .. [2] S. K. Park, K. W. Miller, P. K. Stockmeyer, "Another test case for a random
       number generator", Communications of the ACM 36(7), 1993 (the multiplier 48271).

    Examples
    --------
    >>> lcg_work(2, seed=1)
    182605794
    """
    iterations = check_integer("iterations", iterations, 0)
    seed = _check_seed(seed)
    return int(lcg_steps(np.int64(iterations), np.int64(seed)))


@numba.njit(cache=True)
def _fwq_loop(iterations, x, out):
    """Time ``out.size`` quanta of ``iterations`` LCG steps each [cycles]; returns x."""
    for i in range(out.size):
        begin = read_tsc()
        x = lcg_steps(iterations, x)
        end = read_tsc()
        out[i] = end - begin
    return x


class Quanta:
    """Times quanta of the LCG on the calling thread, chaining the LCG state."""

    def __init__(self, seed: int, trials: int):
        self.x = np.int64(seed)
        self.buffer = np.full(trials, -1, dtype=np.int64)

    def minimum(self, iterations: int, max_rounds: int = 16) -> int:
        """The undisturbed time of one quantum of ``iterations`` steps. [cycles]

        Times rounds of trials until two of them lie within the calibration tolerance of
        the smallest, the sign that the floor, a quantum no noise touched, was reached
        (on a noisy machine few quanta are untouched); at most ``max_rounds`` rounds.
        """
        times = []
        for _ in range(max_rounds):
            self.x = _fwq_loop(np.int64(iterations), self.x, self.buffer)
            times.extend(self.buffer.tolist())
            least = min(times)
            if sum(t <= least * (1.0 + _CALIBRATION_TOLERANCE) for t in times) >= 2:
                break
        return int(least)


def calibrate_quanta(quanta: Quanta, work_cycles: float, frequency: float) -> dict:
    """Number of LCG iterations whose undisturbed quantum lasts ``work_cycles``.

    Fits time = overhead + slope·iterations on minima of a few trials, then corrects
    the count until the minimum is within ``_CALIBRATION_TOLERANCE`` of the target
    (or ``_CALIBRATION_MAX`` for longer work, extrapolated linearly).
    """
    target = min(work_cycles, _CALIBRATION_MAX * frequency)
    n = 64
    small = quanta.minimum(n)
    while True:  # grow until a quantum takes a sizeable part of the target
        large = quanta.minimum(2 * n)
        if large >= target / 4 or n >= 2**40:
            break
        n, small = 2 * n, large
    slope = max((large - small) / n, 1e-3)
    overhead = max(small - slope * n, 0.0)
    if work_cycles < overhead + slope:
        raise ValueError(f"work={work_cycles / frequency!r} s is shorter than one timed LCG "
                         f"step ({(overhead + slope) / frequency:.3g} s)")
    iterations = max(1, round((target - overhead) / slope))
    measured = quanta.minimum(iterations)
    for _ in range(32):  # a noisy machine may need more corrections than a quiet one
        if abs(measured - target) <= _CALIBRATION_TOLERANCE * target:
            break
        iterations = max(1, iterations + round((target - measured) / slope))
        measured = quanta.minimum(iterations)
    extrapolated = work_cycles > target
    if extrapolated:
        iterations = max(1, round(iterations * (work_cycles - overhead)
                                  / max(measured - overhead, 1.0)))
        measured = measured * work_cycles / target
    return {"iterations": int(iterations), "calibrated_work": measured / frequency,
            "cycles_per_iteration": slope, "timing_overhead": overhead / frequency,
            "calibration_extrapolated": extrapolated}


def fwq(work: float, samples: int, cpu: int | None = None, kernel: str = "lcg",
        progress: bool = True, *, seed: int = 1, command: str | None = None) -> Empirical:
    """Fixed Work Quantum benchmark: measured times ``w + δ`` of a fixed quantum of work.

    Parameters
    ----------
    work : float
        Undisturbed length ``w`` of one quantum. The number of LCG iterations is
        calibrated so that the minimum of several timed quanta equals it (within 0.2%;
        quanta longer than 10 ms are extrapolated linearly from a 10 ms calibration). [s]
    samples : int
        Number of quanta to time. [1]
    cpu : int, optional
        CPU to pin to (restored afterwards); default the highest-numbered CPU of the
        affinity set.
    kernel : {"lcg"}
        The work: :func:`lcg_work` (Garg & De eq. 3).
    progress : bool, default True
        Show a tqdm progress bar (on stderr).
    seed : int, default 1
        Start value of the LCG.
    command : str, optional
        Recorded in ``attrs["command"]`` (default: this call).

    Returns
    -------
    jitterlab.noise.Empirical
        The law of the measured quantum times ``w + δ`` [s], with two extra attributes:
        ``sequence`` (the samples in the order they were measured, read-only) and
        ``attrs`` (dict): ``source`` = ``"jitterlab.bench.fwq"``, ``work`` [s],
        ``samples``, ``cpu``, ``frequency_hz`` [Hz], ``work_kernel`` (``"lcg"``) with
        ``lcg_a``, ``lcg_b``, ``lcg_p`` and ``seed``; the calibration: ``iterations``,
        ``calibrated_work`` [s], ``cycles_per_iteration``, ``timing_overhead`` [s],
        ``calibration_extrapolated``, ``calibration_trials``; ``host``, ``kernel``
        (operating-system release), ``cpu_model``, ``collected_at`` (ISO UTC),
        ``measured_duration`` [s], ``command``, ``tsc_calibration_spread``,
        ``tsc_invariant``, ``jitterlab_version``.

    Raises
    ------
    ValueError
        For a non-positive ``work`` or one shorter than a single timed LCG step,
        ``samples`` < 1, a ``cpu`` outside the affinity set or an unknown ``kernel``.
    jitterlab.measure.CycleCounterError
        On a machine without an x86 timestamp counter.

    Notes
    -----
    Each quantum is timed inside a numba kernel by reading the timestamp counter before
    and after the LCG loop; the times go into a preallocated array, nothing is
    allocated inside. The LCG state runs on from quantum to quantum.

    References
    ----------
    .. [1] R. Garg, P. De, HiPC 2006 (seed 001), §3.1.

    Examples
    --------
    >>> law = fwq(100e-6, 1000, cpu=1, progress=False)    # doctest: +SKIP
    >>> law.attrs["iterations"], law.mean() - law.lower    # doctest: +SKIP
    """
    requested = (work, samples, cpu)
    work = check_seconds("work", work)
    samples = check_integer("samples", samples, 1)
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    seed = _check_seed(seed)
    cpu = resolve_cpu(cpu)
    check_cycle_counter()
    if command is None:
        command = (f"jitterlab.measure.fwq(work={requested[0]!r}, samples={requested[1]!r}, "
                   f"cpu={requested[2]!r}, kernel={kernel!r})")

    times = np.full(samples, -1, dtype=np.int64)
    block = max(1, int(_BLOCK_SECONDS / work))
    bar = tqdm(total=samples, unit="sample", desc=f"fwq cpu {cpu}", disable=not progress)
    with bar, pinned(cpu):
        calibration = calibrate_tsc()
        frequency = calibration.frequency_hz
        quanta = Quanta(seed, _TRIALS)
        fit = calibrate_quanta(quanta, work * frequency, frequency)
        collected_at = utc_now()
        x = quanta.x
        for begin in range(0, samples, block):
            stop = min(begin + block, samples)
            x = _fwq_loop(np.int64(fit["iterations"]), x, times[begin:stop])
            bar.update(stop - begin)
    sequence = times / frequency
    sequence.flags.writeable = False
    from ..noise import Empirical

    law = Empirical(sequence)
    law.sequence = sequence
    law.attrs = {
        "source": SOURCE, "work": work, "samples": samples, "cpu": cpu,
        "frequency_hz": frequency, "unit": "s", "work_kernel": kernel, "lcg_a": LCG_A,
        "lcg_b": LCG_B, "lcg_p": LCG_P, "seed": seed, **fit,
        "calibration_trials": _TRIALS, **machine_attrs(), "collected_at": collected_at,
        "measured_duration": float(sequence.sum()), "command": command,
        "tsc_calibration_spread": calibration.relative_spread,
        "tsc_invariant": calibration.invariant,
    }
    return law


# --------------------------------------------------------------------------------------
# files
# --------------------------------------------------------------------------------------
def _suffix(path) -> str:
    name = Path(path).name.lower()
    name = name.removesuffix(".gz")
    return Path(name).suffix


def write_fwq_samples(law: Empirical, path, *, overwrite: bool = False) -> Path:
    """Write FWQ samples with their attributes: netCDF (``.nc``) or CSV (``.csv[.gz]``).

    Parameters
    ----------
    law : jitterlab.noise.Empirical
        A result of :func:`fwq` (its ``sequence`` and ``attrs`` are written; any
        Empirical works, with its sorted values and no attributes).
    path : path-like
        ``.nc``: variable ``iteration_time`` [s] on dimension ``sample``, the attributes
        as global attributes (and all of them as JSON in ``jitterlab_fwq``). ``.csv``:
        ``# key: <json>`` lines, a header ``iteration_time`` and one sample per line.
        Written atomically.
    overwrite : bool, default False
        Replace an existing file; without it an existing ``path`` is refused
        (FileExistsError) and kept.

    Returns
    -------
    pathlib.Path
    """
    from ..io.common import atomic_write

    values = np.asarray(getattr(law, "sequence", law.values), dtype=np.float64)
    attrs = dict(getattr(law, "attrs", {}))
    suffix = _suffix(path)
    if suffix == ".nc":
        import xarray as xr

        if Path(path).name.lower().endswith(".gz"):
            raise ValueError(f"{Path(path).name}: write netCDF without .gz (it compresses "
                             "internally)")
        plain = {key: value for key, value in attrs.items()
                 if isinstance(value, str | int | float) and not isinstance(value, bool)}
        plain[_NC_JSON] = json.dumps(attrs)
        dataset = xr.Dataset(
            {"iteration_time": ("sample", values,
                                {"units": "s", "long_name": "time of one quantum of work, w + δ"})},
            attrs=plain)
        encoding = {"iteration_time": {"_FillValue": None}}
        return atomic_write(path, lambda temp: dataset.to_netcdf(temp, encoding=encoding),
                            overwrite=overwrite)
    if suffix == ".csv":
        lines = [f"{_CSV_MARKER} (version {FORMAT_VERSION})"]
        lines += [f"# {key}: {json.dumps(value)}" for key, value in attrs.items()]
        lines += [_CSV_HEADER, *map(repr, values.tolist())]
        text = "".join(f"{line}\n" for line in lines)
        return atomic_write(path, lambda temp: temp.write_text(text, encoding="utf-8"),
                            overwrite=overwrite)
    raise ValueError(f"{Path(path).name}: write FWQ samples as .nc or .csv (optionally .csv.gz)")


def is_fwq_samples_file(path) -> bool:
    """True if ``path`` is a file written by :func:`write_fwq_samples`."""
    path = Path(path)
    if not path.is_file():
        return False
    suffix = _suffix(path)
    if suffix == ".csv":
        with open(path, "rb") as stream:
            head = stream.read(64)
        if head[:2] == b"\x1f\x8b":
            try:
                with gzip.open(path, "rb") as stream:
                    head = stream.read(64)
            except (OSError, EOFError):  # a damaged .gz: the trace reader names it
                return False
        return head.startswith(_CSV_MARKER.encode())
    if suffix == ".nc":
        try:
            import netCDF4

            with netCDF4.Dataset(path) as handle:
                return _NC_JSON in handle.ncattrs()
        except OSError:
            return False
    return False


def read_fwq_samples(path) -> Empirical:
    """Read FWQ samples written by :func:`write_fwq_samples` (or ``jitterlab measure fwq``).

    Returns
    -------
    jitterlab.noise.Empirical
        With ``sequence`` (samples in measured order) [s] and ``attrs``, as :func:`fwq`.

    Raises
    ------
    ValueError
        If the file is not an FWQ file of jitterlab or is malformed.
    """
    path = Path(path)
    name = path.name
    if not is_fwq_samples_file(path):
        raise ValueError(f"{name}: not a jitterlab FWQ file (.nc or .csv from write_fwq_samples)")
    if _suffix(path) == ".nc":
        import xarray as xr

        with xr.open_dataset(path) as dataset:
            values = dataset["iteration_time"].to_numpy().astype(np.float64)
            attrs = json.loads(dataset.attrs[_NC_JSON])
    else:
        data = path.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        attrs, values = {}, []
        header_seen = False
        for number, line in enumerate(data.decode("utf-8").split("\n"), start=1):
            line = line.strip()
            if not line or line.startswith(_CSV_MARKER):
                continue
            if line.startswith("#"):
                key, sep, raw = line[1:].strip().partition(": ")
                if sep:
                    try:
                        attrs[key] = json.loads(raw)
                    except ValueError:
                        raise ValueError(f"{name} line {number}: bad metadata value "
                                         f"{raw!r}") from None
                continue
            if not header_seen:
                if line != _CSV_HEADER:
                    raise ValueError(f"{name} line {number}: expected the header "
                                     f"{_CSV_HEADER!r}, got {line!r}")
                header_seen = True
                continue
            try:
                values.append(float(line))
            except ValueError:
                raise ValueError(f"{name} line {number}: expected a number, "
                                 f"got {line!r}") from None
        values = np.array(values, dtype=np.float64)
    if not np.all(np.isfinite(values)) or math.prod(values.shape) == 0:
        raise ValueError(f"{name}: expected a non-empty column of finite times")
    values.flags.writeable = False
    from ..noise import Empirical

    law = Empirical(values)
    law.sequence = values
    law.attrs = attrs
    return law
