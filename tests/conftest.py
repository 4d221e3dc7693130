"""Shared fixtures: one real embedded Triton server for the whole test session."""

from __future__ import annotations

import sys

# Cache the rewritten test modules (and compiled project modules) even where PYTHONDONTWRITEBYTECODE is set, as on
# this project's machines: otherwise every pytest process, each xdist worker included, compiles them and rewrites
# ~2,600 asserts again, about half of collecting the suite. Set before the imports below; __pycache__/ is ignored.
sys.dont_write_bytecode = False

import contextlib
import time
import warnings
from pathlib import Path

import pytest

from triton_kitchen.core.server import EmbeddedServer


@pytest.fixture(scope="session")
def server():
    """The real tritonserver on model_repository/, on free ports, shared by all tests."""
    srv = EmbeddedServer(http_port=0, grpc_port=0, metrics_port=0)
    srv.start(timeout=180)
    yield srv
    srv.stop()


@pytest.fixture(autouse=True)
def _session_server_alive(request):
    """A test that uses the session's server finds it running. Triton's python backend can abort on a busy
    machine (see EmbeddedServer.start; the corpus test's server did, twice in seven loaded runs): a server that
    died during an earlier test is started again, with a warning, instead of failing every later test here."""
    if "server" in request.fixturenames:
        srv = request.getfixturevalue("server")
        if not srv.running:
            srv.start(timeout=180)
            warnings.warn(
                f"the session's server had died; started again before {request.node.nodeid}", stacklevel=1
            )
    yield


def settled(read, done, timeout_s: float = 5.0):
    """``read()`` again until ``done`` holds for what it returned (or ``timeout_s`` passed), and that value:
    Triton counts a request a moment after its answer has left, later still on a loaded machine, so a test
    that needs the count waits for it instead of sleeping a fixed while."""
    deadline = time.monotonic() + timeout_s
    while not done(value := read()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return value


@pytest.fixture(scope="session")
def sample_jpegs() -> dict[str, bytes]:
    """Four of the app's sample photos, as the JPEG bytes it sends (triton_kitchen.core.samples)."""
    from triton_kitchen.core.samples import sample_jpeg

    names = {"chelsea": "chelsea", "coffee": "coffee", "camera": "camera", "motorcycle": "stereo_motorcycle"}
    return {key: sample_jpeg(name) for key, name in names.items()}


# Debian's chromium, driven by Playwright (its own browser download does not work on these machines).
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",  # the closed network refuses Chromium's background connections
    "--disable-component-update",
    "--disable-sync",
]

# An init script (page.add_init_script): every change of the app's script state, with its time
# (performance.now()), from the first paint on, in window.__tkRuns. Read by the click test and
# benchmarks/rerun_cost.py. (A run too short to be seen "running" shows as "rerunRequested" then "notRunning".)
WATCH_SCRIPT_STATE = """
window.__tkRuns = [];
(function hook() {
  const app = document.querySelector('[data-testid=stApp]');
  if (!app) { setTimeout(hook, 10); return; }
  const note = () => window.__tkRuns.push([performance.now(), app.getAttribute('data-test-script-state')]);
  note();
  new MutationObserver(note).observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
})();
"""


def remote_env(server) -> dict[str, str]:
    """The environment that points the app at ``server`` as a remote one, its metrics port named too (the host's
    8002, the app's default, may be another server's: a parallel worker's app)."""
    return {
        "TRITON_HTTP_URL": server.http_url,
        "TRITON_GRPC_URL": server.grpc_url,
        "TRITON_METRICS_URL": server.metrics_url,
    }


def use_remote(monkeypatch, server, **overrides: str) -> None:
    """Set :func:`remote_env` (with ``overrides``, such as TRITON_METRICS_URL) for this test."""
    for name, value in {**remote_env(server), **overrides}.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def remote(server, monkeypatch):
    """The app points at the session's server as a remote one (:func:`use_remote`), with a probe that waits
    longer than the app's 1 s: the server is up, and a loaded machine may answer its health check late (the
    probe's own bound is timed by the timing tier's tests)."""
    use_remote(monkeypatch, server)
    monkeypatch.setattr("ui.server.PROBE_TIMEOUT_S", 10.0)
    return server


@pytest.fixture
def embedded(server, monkeypatch):
    """The app's embedded server is the session's (already started); restored afterwards."""
    monkeypatch.delenv("TRITON_HTTP_URL", raising=False)
    monkeypatch.delenv("TRITON_GRPC_URL", raising=False)
    from ui import server as ui_server

    supervisor = ui_server.supervisor()
    saved = supervisor.adopt(server)
    yield server
    supervisor.restore(saved)


def _page_urls() -> dict[str, str]:
    """views/<file>.py -> its URL path, from the page table (ui/pages.py)."""
    from ui.pages import PAGES

    return {page.path: page.url for page in PAGES}


def switch_page(at, page: str, open_boxes: bool = True):
    """Like AppTest.switch_page, but through app.py's st.navigation (pages are st.Page objects whose
    hash is their URL path, from the page table ui/pages.py, so the page runs inside the app, sidebar
    included). With ``open_boxes`` every lesson section and quiz is open, as for a reader who opened them
    all (a fresh page draws only the first section: ``ui.lesson.lazy_box``, tested with ``open_boxes=False``)."""
    from streamlit.util import calc_hash

    from ui.pages import url_of

    at._page_hash = calc_hash(url_of(page))  # AppTest has no public way to pick an st.Page
    if open_boxes:
        open_every_box(at)
    return at


def open_app_page(page: str, lang: str, timeout: float = 180):
    """app.py on ``page`` in ``lang`` through AppTest, every lesson box open, after one clean run."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(APP_ROOT / "app.py"), default_timeout=timeout)
    at.query_params["lang"] = lang
    switch_page(at, page)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def shown_text(at) -> str:
    """What a reader sees as text: Markdown, captions, code, and the success, warning and error boxes."""
    parts = [e.value for e in at.markdown] + [e.value for e in at.caption] + [e.value for e in at.code]
    parts += [e.value for e in at.success] + [e.value for e in at.warning] + [e.value for e in at.error]
    return "\n".join(map(str, parts))


def predict_and_press(at, predict_key: str, choice: str, button: str) -> None:
    """Predict ``choice`` on the live element's prediction line, press its run button, expect no error."""
    at.radio(key=f"tk_predict_{predict_key}").set_value(choice)
    at.button(key=button).click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def open_every_box(at) -> None:
    """Every lazy box (lesson sections, quizzes, chapter 8's experiments) open, and every lazy tab drawn, in this
    AppTest's session."""
    from ui import boxes

    at.session_state[boxes.OPEN_BOXES] = {boxes.ALL_OPEN: True}


# -- the app in a real browser ---------------------------------------------------------------------------
APP_ROOT = Path(__file__).resolve().parents[1]


def wait_http(url: str, timeout: float) -> None:
    """Wait until ``url`` answers 200 (a health endpoint)."""
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer within {timeout:.0f} s")


@contextlib.contextmanager
def streamlit_app(env: dict[str, str | None] | None = None, log_name: str = "streamlit.log"):
    """`streamlit run app.py` in a subprocess on a free port; yields its URL and stops it afterwards.

    ``env`` overrides os.environ; a value of None removes the variable (without TRITON_HTTP_URL and
    TRITON_GRPC_URL the app starts its own embedded server). Its output goes to artifacts/<log_name>: a name
    of the module's own (the live tier runs modules on parallel workers; two apps must not share one log).
    """
    import os
    import subprocess
    import sys

    from triton_kitchen.core.server import free_port

    port = free_port()
    full_env = dict(os.environ)
    for name, value in (env or {}).items():
        if value is None:
            full_env.pop(name, None)
        else:
            full_env[name] = value
    log = APP_ROOT / "artifacts" / log_name
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable, "-m", "streamlit", "run", "app.py",
                "--server.headless", "true", "--server.port", str(port), "--server.address", "127.0.0.1",
                "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none",
            ],
            cwd=APP_ROOT, env=full_env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        wait_http(f"http://127.0.0.1:{port}/_stcore/health", 60)
        yield f"http://127.0.0.1:{port}", proc
    finally:
        proc.terminate()  # the app stops its embedded server when it exits
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def kill_app_tritonserver(streamlit_pid: int) -> int:
    """Kill the app's tritonserver (a descendant of the Streamlit process a test started), as a crash would."""
    import os
    import signal

    parents: dict[int, int] = {}
    names: dict[int, str] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        pid = int(stat.parent.name)
        names[pid] = text[text.index("(") + 1 : text.rindex(")")]
        parents[pid] = int(text[text.rindex(")") + 2 :].split()[1])

    def descends(pid: int) -> bool:
        while pid > 1:
            pid = parents.get(pid, 0)
            if pid == streamlit_pid:
                return True
        return False

    victims = [pid for pid, name in names.items() if name == "tritonserver" and descends(pid)]
    assert len(victims) == 1, f"the app's tritonserver: expected one process, found {victims}"
    os.kill(victims[0], signal.SIGKILL)
    return victims[0]


@pytest.fixture(scope="module")
def browser():
    """One headless chromium per test module (pages and contexts are cheap, the browser is not)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules holding a ``slow`` test run first, the browser's before the rest (a stable sort: each module's
    tests keep their order). With the README's ``-n 3`` (and pyproject's ``--dist loadfile
    --no-loadscope-reorder``) each worker starts on one of the longest modules at once, instead of one of them
    starting last and running alone."""
    weight: dict[str, int] = {}
    for item in items:
        if item.get_closest_marker("slow"):
            heavier = 2 if item.get_closest_marker("browser") else 1
            path = item.nodeid.split("::")[0]
            weight[path] = max(weight.get(path, 0), heavier)
    items.sort(key=lambda item: -weight.get(item.nodeid.split("::")[0], 0))


# Test tiers: `live` (tritonserver, browser, the running app) is marked automatically; `-m "not live"` is the
# fast tier and refuses to start any server (tests/_tiers.py).
pytest_plugins = ["_tiers"]
