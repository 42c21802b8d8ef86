"""Shared pytest set-up.

``JUPYTER_PLATFORM_DIRS=1`` is set at import time, before any test module imports
jupyter_core, so that Jupyter uses the platform directories instead of warning about the
migration (``filterwarnings = error`` would turn that warning into a failure).

Under CI (``CI`` set) hypothesis runs derandomized: the same examples every run, so a
submission is judged on the code, not on the draw; local runs keep exploring new ones.
"""

import os

from hypothesis import settings

os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
