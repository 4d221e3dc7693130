"""Test tiers: a test's folder is its tier.
- ``tests/unit/``: the fast tier (``pytest -m "not live"``): no server, browser or app; a test there marked
  ``live`` stops the collection, naming it;
- ``tests/live/``: every test is ``live`` (tritonserver, the app through AppTest, ``streamlit run``);
- ``tests/browser/``: every test is ``live`` and ``browser`` (Chromium through Playwright).
A topic with tests of both kinds has a file in each folder (``tests/unit/test_trace.py`` and
``tests/live/test_trace_live.py``; helpers both use in ``tests/_shared/<topic>.py``). A test module anywhere else
under tests/ stops the collection. The markers ``app`` (runs a Streamlit page through AppTest), ``browser`` outside
tests/browser/, ``slow`` and ``timing`` are written on the tests themselves.

The proof that the fast tier starts nothing: when the selected tests hold no live test, starting tritonserver,
Chromium (Playwright's driver) or ``streamlit run`` fails loudly, here and in child Python processes (through
``tests/_tier_guard/``), and any attempt fails the session, naming the test. Under pytest-xdist (``-n 2``) the
workers log their attempts to the main process's file, and the main process fails the run: a worker's own exit
status is not what pytest-xdist reports.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from _tier_guard.live_guard import GUARD_ENV, forbid_live_processes

GUARD_DIR = Path(__file__).with_name("_tier_guard")
GUARD_LOG = pytest.StashKey[str]()  # the file refused starts are written to, owned by the main process
WORKER_KEY = "tk_tier_guard_log"  # the same path, as pytest-xdist hands it to each worker


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "live: needs tritonserver, a browser or the running app (every test in tests/live and tests/browser)",
    )
    config.addinivalue_line("markers", "app: runs a Streamlit page through AppTest (marked on the test)")
    worker = getattr(config, "workerinput", None)
    if worker is not None:
        config.stash[GUARD_LOG] = worker[WORKER_KEY]
    else:
        fd, log = tempfile.mkstemp(prefix="tk-no-live-", suffix=".log")
        os.close(fd)
        config.stash[GUARD_LOG] = log


def pytest_unconfigure(config: pytest.Config) -> None:
    """The log goes with the main process, also after runs without a session (``--help``, ``--markers``)."""
    if not hasattr(config, "workerinput") and GUARD_LOG in config.stash:
        Path(config.stash[GUARD_LOG]).unlink(missing_ok=True)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: the main process tells each worker its log
def pytest_configure_node(node) -> None:
    node.workerinput[WORKER_KEY] = node.config.stash[GUARD_LOG]


TESTS_DIR = Path(__file__).resolve().parent


def tier_folder(item: pytest.Item) -> str | None:
    """ "unit", "live" or "browser": the tier folder under tests/ that holds the test's module, or None."""
    try:
        parts = Path(str(item.path)).resolve().relative_to(TESTS_DIR).parts
    except ValueError:
        return None
    return parts[0] if len(parts) > 1 and parts[0] in ("unit", "live", "browser") else None


FOLDER_MARKS = {"unit": set(), "live": {"live"}, "browser": {"live", "browser"}}


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects anything
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    misplaced = []
    for item in items:
        folder = tier_folder(item)
        if folder is None:
            if Path(str(item.path)).resolve().is_relative_to(TESTS_DIR):
                misplaced.append(f"{item.nodeid}: not in tests/unit, tests/live or tests/browser")
            continue  # outside this suite (tests/unit/test_tiers.py runs the plugin on probe modules)
        if folder == "unit" and item.get_closest_marker("live"):
            misplaced.append(f"{item.nodeid}: marked live in tests/unit (move it to tests/live)")
        present = {m.name for m in item.iter_markers()}
        for name in sorted(FOLDER_MARKS[folder] - present):
            item.add_marker(name)
    if misplaced:
        raise pytest.UsageError("a test's folder is its tier:\n" + "\n".join(misplaced))


def pytest_collection_finish(session: pytest.Session) -> None:
    """No live test selected: refuse every server, browser and app start from here on."""
    if session.items and not any(item.get_closest_marker("live") for item in session.items):
        os.environ[GUARD_ENV] = session.config.stash[GUARD_LOG]
        paths = [str(GUARD_DIR), os.environ.get("PYTHONPATH")]
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
        forbid_live_processes()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if hasattr(session.config, "workerinput"):
        return  # the main process reads the log: a worker's exit status is not the run's
    log = session.config.stash[GUARD_LOG]
    if not os.path.exists(log):
        return
    attempts = Path(log).read_text().strip()
    os.unlink(log)
    if attempts:
        print(f"\n\nFAST TIER VIOLATION: tests not marked live tried to start live processes:\n{attempts}\n")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
