"""Shared pytest set-up.

``JUPYTER_PLATFORM_DIRS=1`` is set at import time, before any test module imports
jupyter_core, so that Jupyter uses the platform directories instead of warning about the
migration (``filterwarnings = error`` would turn that warning into a failure).

Hypothesis has no deadline per example: its default (200 ms) is a wall-time assertion that
fails on a shared, busy machine (and on the example that first compiles a numba kernel);
a test that needs a time limit says so itself. Under CI (``CI`` set) hypothesis runs
derandomized: the same examples every run, so a submission is judged on the code, not on the
draw; local runs keep exploring new ones.
"""

import os

from hypothesis import settings

os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")

settings.register_profile("shared-machine", deadline=None)
settings.register_profile("ci", parent=settings.get_profile("shared-machine"),
                          derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "shared-machine")
