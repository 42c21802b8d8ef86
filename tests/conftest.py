"""Shared pytest set-up.

``JUPYTER_PLATFORM_DIRS=1`` is set at import time, before any test module imports
jupyter_core, so that Jupyter uses the platform directories instead of warning about the
migration (``filterwarnings = error`` would turn that warning into a failure).

Hypothesis has no deadline per example: its default (200 ms) is a wall-time assertion that
fails on a shared, busy machine (and on the example that first compiles a numba kernel);
a test that needs a time limit says so itself. Under CI (``CI`` set) hypothesis runs
derandomized: the same examples every run, so a submission is judged on the code, not on the
draw; local runs keep exploring new ones.

The tests that read the notebooks' JupyterLab run (``tests/test_browser.py``) are moved to
the end of the session; with ``JITTERLAB_BROWSER_BACKGROUND=1`` the run starts in a
subprocess as soon as the tests are collected, beside the other tests, and a run still going
when the session ends is stopped.
"""

import os

from hypothesis import settings

os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")

settings.register_profile("shared-machine", deadline=None)
settings.register_profile("ci", parent=settings.get_profile("shared-machine"),
                          derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "shared-machine")


def _needs_notebook_runs(item) -> bool:
    """True for a test of tests/test_browser.py that reads the notebooks' JupyterLab runs."""
    module = getattr(item, "module", None)
    return getattr(item, "originalname", "") in getattr(module, "NOTEBOOK_TESTS", ())


def pytest_collection_modifyitems(session, config, items):
    """The notebook tests go last: they wait for the JupyterLab run in the background."""
    items[:] = ([item for item in items if not _needs_notebook_runs(item)]
                + [item for item in items if _needs_notebook_runs(item)])


def pytest_collection_finish(session):
    """Start the notebooks' JupyterLab run now, to overlap the other tests
    (``tests/test_browser.py``: ``start_in_background``)."""
    items = [item for item in session.items if _needs_notebook_runs(item)]
    if items and not session.config.option.collectonly:
        paths = list(dict.fromkeys(item.callspec.params["path"] for item in items))
        items[0].module.start_in_background(session.config, paths)


def pytest_sessionfinish(session):
    """Stop a background run that the session no longer waits for (-x, Ctrl-C)."""
    background = getattr(session.config, "jitterlab_browser_run", None)
    if background is not None:
        background.stop()
