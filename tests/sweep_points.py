"""Sweep points that kill their Dask worker, for tests/test_sweep.py.

They live apart from the test module because a Dask worker imports the module of the
function it runs: a worker restarted after a death imported tests/test_sweep.py (numba,
pytest, jitterlab and the module's own set-up, about 2.5 CPU-s) before its first point;
this module imports only xarray.
"""

import os

import xarray as xr


def exits_at_three(k, work, offset):
    """Ends its worker process at k = 3, work = 2, as a segfault or the out-of-memory killer
    would."""
    if k == 3 and work == 2.0:
        os._exit(1)
    return xr.Dataset({"value": ((), k * work + float(offset.sum()))})


def exits_always(k):
    """Kills its worker at every point, as points too big for a worker's memory would."""
    if k >= 0:
        os._exit(1)
    return xr.Dataset({"value": ((), float(k))})
