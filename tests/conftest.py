"""Shared pytest set-up.

``JUPYTER_PLATFORM_DIRS=1`` is set at import time, before any test module imports
jupyter_core, so that Jupyter uses the platform directories instead of warning about the
migration (``filterwarnings = error`` would turn that warning into a failure).
"""

import os

os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")
