"""Test tiers: every test that needs tritonserver, a browser or the running app is marked ``live``;
``pytest -m "not live"`` is the fast tier. The folder says the tier first:
- ``tests/unit/``: the fast tier; a test there that needs a server, the app or a browser (found as below) stops the
  collection, naming it;
- ``tests/browser/``: every test is ``live`` and ``browser``;
- ``tests/live/`` (and a test module anywhere else): a module there may still hold tests that need nothing (a
  module of mixed tests), so each test is marked as below.

A test is live when
- it uses a fixture (directly or through other fixtures) from ``LIVE_FIXTURES``, or
- its body, or a function of its module it calls (followed transitively), names one of ``LIVE_NAMES``
  (``EmbeddedServer``, ``streamlit_app``, Playwright) or runs an app script with ``AppTest.from_file`` (app.py
  and the views talk to the server; a small page of the test's own, ``AppTest.from_function``, is ``app`` but
  not ``live``, and the guard below proves it starts nothing), or
- it carries the ``browser`` marker, or its module sets ``pytestmark = pytest.mark.live``.
Tests that run the app get the ``app`` marker too, tests that drive Chromium ``browser``.

The proof that the fast tier starts nothing: when the selected tests hold no live test, starting tritonserver,
Chromium (Playwright's driver) or ``streamlit run`` fails loudly, here and in child Python processes (through
``tests/_tier_guard/``), and any attempt fails the session, naming the test. Under pytest-xdist (``-n 2``) the
workers log their attempts to the main process's file, and the main process fails the run: a worker's own exit
status is not what pytest-xdist reports.
"""

from __future__ import annotations

import os
import tempfile
import types
from pathlib import Path

import pytest
from _tier_guard.live_guard import GUARD_ENV, forbid_live_processes

# fixtures that start or reach a real server, or drive a browser (their dependents are found through
# item.fixturenames, which holds the whole closure)
LIVE_FIXTURES = frozenset(
    {
        "server",  # conftest: the session's embedded tritonserver
        "small",  # test_faults: a second server it kills
        "tiny_repo",  # test_server_lifecycle: servers started and killed in the test
        "corpus_runner",  # test_corpus_agreement: a server loading ~40 corpus repositories
        "hanging_endpoint",  # test_bench: a socket that never answers, load runs against it for seconds
        "browser",  # conftest: Chromium through Playwright
        "embedded_app",
        "remote_app",
        "app_url",  # `streamlit run app.py` subprocesses
    }
)
# names whose use in a test (or a helper it calls) means it runs the app, a server or a browser
APP_NAMES = frozenset({"AppTest", "open_app_page"})  # conftest.open_app_page: app.py through AppTest
APP_SCRIPT_NAMES = frozenset(
    {"from_file", "open_app_page"}
)  # AppTest.from_file: app.py or a view, with the sidebar's server
BROWSER_NAMES = frozenset({"sync_playwright", "async_playwright", "CHROMIUM"})
LIVE_NAMES = BROWSER_NAMES | {"EmbeddedServer", "streamlit_app", "serve"}
GUARD_DIR = Path(__file__).with_name("_tier_guard")
GUARD_LOG = pytest.StashKey[str]()  # the file refused starts are written to, owned by the main process
WORKER_KEY = "tk_tier_guard_log"  # the same path, as pytest-xdist hands it to each worker


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "live: needs tritonserver, a browser or the running app (auto-marked)")
    config.addinivalue_line("markers", "app: runs the Streamlit app through AppTest (auto-marked)")
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


def _names_used(code: types.CodeType, module_globals: dict, seen: set[int]) -> set[str]:
    """Global and attribute names a code object uses, following nested code and module-level functions."""
    if id(code) in seen:
        return set()
    seen.add(id(code))
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names_used(const, module_globals, seen)
    for name in list(names):
        target = module_globals.get(name)
        if isinstance(target, types.FunctionType) and target.__module__ == module_globals.get("__name__"):
            names |= _names_used(target.__code__, module_globals, seen)
    return names


def tier_markers(item: pytest.Item) -> set[str]:
    """The markers the tiers give one test: a subset of {live, app, browser}."""
    marks = set()
    fixtures = set(getattr(item, "fixturenames", ()))
    func = getattr(item, "function", None)
    names = _names_used(func.__code__, func.__globals__, set()) if func is not None else set()
    if fixtures & {"browser", "app_url", "embedded_app", "remote_app"} or names & BROWSER_NAMES:
        marks.add("browser")
    if names & APP_NAMES:
        marks.add("app")
    app_script = bool(names & APP_NAMES and names & APP_SCRIPT_NAMES)
    if (
        "browser" in marks
        or app_script
        or fixtures & LIVE_FIXTURES
        or names & LIVE_NAMES
        or item.get_closest_marker("browser")
    ):
        marks.add("live")
    return marks


TESTS_DIR = Path(__file__).resolve().parent


def tier_folder(item: pytest.Item) -> str | None:
    """ "unit", "live" or "browser": the tier folder under tests/ that holds the test's module, or None."""
    try:
        parts = Path(str(item.path)).resolve().relative_to(TESTS_DIR).parts
    except ValueError:
        return None
    return parts[0] if len(parts) > 1 and parts[0] in ("unit", "live", "browser") else None


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects anything
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    misplaced = []
    for item in items:
        present = {m.name for m in item.iter_markers()}
        folder = tier_folder(item)
        marks = tier_markers(item)
        if folder == "browser":
            marks |= {"live", "browser"}
        elif folder == "unit" and "live" in marks:
            misplaced.append(item.nodeid)
        for name in sorted(marks - present):
            item.add_marker(name)
    if misplaced:
        raise pytest.UsageError(
            "tests in tests/unit/ need a server, the app or a browser (move them to tests/live/):\n"
            + "\n".join(misplaced)
        )


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
