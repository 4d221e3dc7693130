"""Shared fixtures: one real embedded Triton server for the whole test session."""

from __future__ import annotations

import sys

# Cache the rewritten test modules (and compiled project modules) even where PYTHONDONTWRITEBYTECODE is set, as on
# this project's machines: otherwise every pytest process, each xdist worker included, compiles them and rewrites
# ~2,600 asserts again, about half of collecting the suite. Set before the imports below; __pycache__/ is ignored.
sys.dont_write_bytecode = False

import contextlib
import os
import time
import warnings
from pathlib import Path

import pytest

from triton_kitchen.core import on_demand
from triton_kitchen.core.server import EmbeddedServer


@pytest.fixture(scope="session")
def server():
    """The real tritonserver on model_repository/, on free ports, shared by all tests; started as the app starts it
    (the drills' models load on first use)."""
    srv = EmbeddedServer(http_port=0, grpc_port=0, metrics_port=0, load_models=on_demand.loaded_at_start())
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
# (performance.now()), from the first paint on, in window.__tkRuns. Read by conftest.wait_for_app_run and
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
    probe's own bound is timed by the timing tier's tests). A test that wants the metrics port closed sets
    TRITON_METRICS_URL to :func:`closed_address` itself."""
    use_remote(monkeypatch, server)
    monkeypatch.setattr("ui.server.PROBE_TIMEOUT_S", 10.0)
    return server


def closed_address() -> str:
    """host:port where nobody listens (the host's 8002 may be another server's, such as a parallel test's app)."""
    from triton_kitchen.core.server import free_port

    return f"127.0.0.1:{free_port()}"


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


@pytest.fixture(params=["embedded", "remote"])
def app_server(request, server):
    """The app on either kind of server, one test each: its own embedded one (:func:`embedded`) or a remote one
    (:func:`remote`); the mode is ``request.param``."""
    return request.getfixturevalue(request.param)


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


# lazy boxes outside the lesson sections: the sidebar's models table and log, the class box
SIDEBAR_BOXES = ("tk_models_open", "tk_log_open", "tk_class_join_open")


def open_app_page(
    page: str | None, lang: str, timeout: float = 180, boxes: str = "lesson", check: bool = True
):
    """app.py on ``page`` (a views/ path; None: the welcome page) in ``lang`` through AppTest, after one run:
    the one AppTest opener of the suite. ``boxes``: "lesson" opens every lesson box, "all" the sidebar's lazy
    boxes too, "none" leaves a first visit's boxes closed. ``check``: the run raised no exception."""
    from streamlit.testing.v1 import AppTest

    from ui import boxes as ui_boxes

    at = AppTest.from_file(str(APP_ROOT / "app.py"), default_timeout=timeout)
    at.query_params["lang"] = lang
    if page is not None:
        switch_page(at, page, open_boxes=False)
    if boxes != "none":
        opened = {ui_boxes.ALL_OPEN: True}
        if boxes == "all":
            opened |= dict.fromkeys(SIDEBAR_BOXES, True)
        at.session_state[ui_boxes.OPEN_BOXES] = opened
    at.run()
    if check:
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


@pytest.fixture(scope="session")
def app_url(server, tmp_path_factory):
    """One `streamlit run app.py` per worker, pointed at the session's server as a remote one, shared by the
    browser tests that need no server of their own: a class database (SQLite, for the class box), and no
    teacher token (every visitor sees the answer key's download)."""
    env = {
        **remote_env(server),
        "TRITON_KITCHEN_DATABASE_URL": f"sqlite:///{tmp_path_factory.mktemp('class') / 'class.db'}",
        "TRITON_KITCHEN_TEACHER_TOKEN": None,
        "TRITON_KITCHEN_AUTO_RESTART": None,
    }
    with streamlit_app(
        env, log_name=f"streamlit-remote-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.log"
    ) as (
        url,
        _proc,
    ):
        yield url


SHOTS = APP_ROOT / "artifacts" / "screenshots"

# the app idle for ``minIdle`` ms: its script state "notRunning", no running-man widget, no skeleton, and no state
# change since (window.__tkRuns, WATCH_SCRIPT_STATE, where the page records them)
_IDLE = """(minIdle) => {
  const app = document.querySelector('[data-testid=stApp]');
  const busy = !app || app.getAttribute('data-test-script-state') !== 'notRunning'
    || document.querySelector('[data-testid=stStatusWidget], [data-testid=stSkeleton]');
  if (busy) { window.__tkQuiet = 0; return false; }
  const runs = window.__tkRuns || [];
  const last = runs.length ? runs[runs.length - 1][0] : 0;
  window.__tkQuiet = Math.max(window.__tkQuiet || performance.now(), last);
  return performance.now() - window.__tkQuiet >= minIdle;
}"""


def wait_for_app_run(
    page, since: float | None = None, expect_run_s: float = 0.0, timeout: float = 150.0, quiet_ms: int = 300
) -> None:
    """The one wait of the browser tests: when ``since`` (page time, :func:`page_now`) is given, first wait up
    to ``expect_run_s`` for a script run to start after it (a click's run may start late on a loaded machine);
    then until the app has been idle for ``quiet_ms`` (its title drawn)."""
    page.wait_for_selector("h1", timeout=timeout * 1000)
    if since is not None and expect_run_s > 0:
        with contextlib.suppress(Exception):  # no run started: a click the browser handles alone
            page.wait_for_function(
                "t => (window.__tkRuns || []).some(([at, s]) => at >= t && s !== 'notRunning')",
                arg=since, timeout=expect_run_s * 1000, polling=25,
            )  # fmt: skip
    page.evaluate("() => { window.__tkQuiet = 0; }")
    page.wait_for_function(_IDLE, arg=quiet_ms, timeout=timeout * 1000, polling=50)


def page_now(page) -> float:
    return page.evaluate("() => performance.now()")


def open_in_browser(browser_or_context, url: str, viewport=(1400, 900), **page_args):
    """A new tab on ``url`` that records its script runs (WATCH_SCRIPT_STATE), after its first run."""
    size = {"width": viewport[0], "height": viewport[1]}
    if hasattr(browser_or_context, "new_context"):  # a Browser: a page in a context of its own
        page = browser_or_context.new_page(viewport=size, **page_args)
    else:  # a BrowserContext: its settings (downloads, cookies) are the context's
        page = browser_or_context.new_page()
        page.set_viewport_size(size)
    page.add_init_script(WATCH_SCRIPT_STATE)
    page.goto(url, wait_until="domcontentloaded")
    wait_for_app_run(page, timeout=240)
    return page


def shoot(page, name: str, max_height: int = 9000) -> Path:
    """The whole page to artifacts/screenshots/<name>.png (Streamlit scrolls inside its main block, so the
    viewport grows first)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    height = page.evaluate(
        "() => Math.max(...[...document.querySelectorAll('[data-testid=stMain], [data-testid=stMainBlockContainer]')]"
        ".map(e => e.scrollHeight), 900)"
    )
    width = page.viewport_size["width"]
    page.set_viewport_size({"width": width, "height": min(int(height) + 40, max_height)})
    page.wait_for_timeout(300)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    page.set_viewport_size({"width": width, "height": 900})
    return path


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
    """One headless chromium per test module (pages and contexts are cheap, the browser is not); skipped where
    Debian's chromium is missing (a failure under CI)."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.skip(f"Debian's chromium ({CHROMIUM}) is not installed")

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


# Under CI (the CI variable set, as .ci/run does) a skipped test fails instead: .ci/run installs Chromium and
# PostgreSQL and fetches Triton's QA suite, or fails, so a skip there means a check that silently did not run.
# The skips that stay allowed, none for a missing tool:
CI_MAY_SKIP = (
    "no request was left in flight",  # test_shm: the server was too fast for a request to be seen in flight
    "hadolint is not installed",  # test_docker: the Dockerfile linter, optional (.ci/run does not install it)
    "seed tutorial not available",  # test_lessons: the tutorial the course grew from, outside the repository
    "Triton's QA suite is not here",  # test_triton_qa: reference data outside the repository (.ci/run warns)
)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not (report.skipped and os.environ.get("CI")) or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if not any(allowed in reason for allowed in CI_MAY_SKIP):
        report.outcome = "failed"
        report.longrepr = f"skipped under CI, where every tool is installed: {reason}"


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
