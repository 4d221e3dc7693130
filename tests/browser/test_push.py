"""Open tabs hear of a change of the embedded server without polling for it (ui.embedded_watch, ui.push), and
the flow lab traces live after a restart from the sidebar and after auto-restart brought a killed server back: in a
real browser against `streamlit run app.py` with its own embedded server (one app for the module). And the two Streamlit internals that
ui.push relies on are still where it reads them (fast tier: fails on a Streamlit upgrade that moves them)."""

from __future__ import annotations

import inspect
import time

import conftest
import pytest
from _screen_checks import BROWSER_READ, UI, norm, problems_on_screen
from conftest import open_in_browser, page_now, shoot, wait_for_app_run

UP = "[data-testid=stSidebar] [data-testid=stAlertContentSuccess]"
# The 2 s the sidebar promises, with a second's room for a CI machine whose two cores run three test workers
# (measured on an idle 2-core VM: 0.8-1.1 s from the kill until two open tabs no longer said "up").
DOWN_SHOWN_S = 3.0


def test_the_streamlit_internals_that_ui_push_uses_are_there():
    from streamlit.runtime import Runtime
    from streamlit.runtime.app_session import AppSession
    from streamlit.runtime.session_manager import ActiveSessionInfo

    assert "self._session_mgr" in inspect.getsource(Runtime.__init__)
    from streamlit.runtime.session_manager import SessionManager

    assert callable(SessionManager.list_active_sessions)
    assert "self._client_state" in inspect.getsource(AppSession.__init__)
    assert list(inspect.signature(AppSession.request_rerun).parameters) == ["self", "client_state"]
    assert "session" in ActiveSessionInfo.__dataclass_fields__
    # the run-on-save path ui.push copies: the last client state, handed back to request_rerun
    assert "self.request_rerun(self._client_state)" in inspect.getsource(AppSession._on_source_file_changed)


def _frames_sent(page, sent: list, seconds: float) -> int:
    before = len(sent)
    page.wait_for_timeout(seconds * 1000)
    return len(sent) - before


@pytest.fixture(scope="module")
def embedded_app():
    """The app with its own embedded server (auto-restart on, the default), which these tests kill."""
    env = {"TRITON_HTTP_URL": None, "TRITON_GRPC_URL": None, "TRITON_KITCHEN_AUTO_RESTART": None}
    with conftest.streamlit_app(env, log_name="streamlit-push.log") as (url, proc):
        yield url, proc


@pytest.mark.browser
def test_open_tabs_hear_of_a_killed_server_and_its_return_without_polling(browser, embedded_app):
    url, proc = embedded_app
    context = browser.new_context()
    tabs, sent = [], []
    for path in ("ch5?lang=zh", "lab-flow?lang=en"):
        page = context.new_page()
        page.on("websocket", lambda ws: ws.on("framesent", lambda _f: sent.append(1)))
        page.goto(f"{url}/{path}")
        page.wait_for_selector(UP, timeout=300_000)  # the embedded server's first start
        tabs.append(page)
    tabs[0].wait_for_timeout(2000)  # the first tab's poll (it opened while the server started) ends
    assert _frames_sent(tabs[0], sent, 5) == 0, "an open tab talked to the app while nothing happened"
    conftest.kill_app_tritonserver(proc.pid)
    t0 = time.monotonic()
    for page in tabs:
        page.wait_for_function(f"() => !document.querySelector('{UP}')", timeout=10_000)
    down_s = time.monotonic() - t0
    assert down_s < DOWN_SHOWN_S, f"the tabs said the server was down after {down_s:.1f} s"
    for page in tabs:
        page.wait_for_selector(UP, timeout=240_000)  # auto-restart, and the tab hears of it
    tabs[0].wait_for_timeout(2000)
    assert _frames_sent(tabs[0], sent, 5) == 0, "a tab kept polling after the server came back"
    context.close()


def _wait_down_then_up(page) -> None:
    page.wait_for_function(f"() => !document.querySelector('{UP}')", timeout=30_000)
    page.wait_for_selector(UP, timeout=240_000)
    wait_for_app_run(page)


def _restart_button(page) -> None:
    """The sidebar's restart button; the poller shows "restarting", then the page comes back by itself."""
    button = page.locator("[data-testid=stSidebar] [data-testid=stButton] button").filter(
        has_text=UI["en"]["sidebar.restart"]
    )
    t0 = page_now(page)
    button.click()
    wait_for_app_run(page, t0, expect_run_s=15)
    _wait_down_then_up(page)


def _flow_send(browser, url: str, when: str, restart=None) -> tuple[str, list[str]]:
    """In a fresh tab (no earlier run on screen), restart the server the way ``restart`` does, then send one
    request in the flow lab: where its timeline came from, as the page says, and what is wrong on the page."""
    page = open_in_browser(browser, f"{url}/lab-flow?lang=en")
    try:
        page.wait_for_selector(UP, timeout=240_000)
        if restart is not None:
            restart(page)
        t0 = page_now(page)
        page.locator(".st-key-flow_send button").click()
        wait_for_app_run(page, t0, expect_run_s=15)
        problems = [f"lab-flow {when}: {p}" for p in problems_on_screen(page.evaluate(BROWSER_READ), "en")]
        text = norm(page.locator("[data-testid=stMain]").inner_text())
        labels = {s: norm(UI["en"][f"lab_flow.source_{s}"]) for s in ("trace", "statistics", "recorded")}
        source = next((s for s, label in labels.items() if label in text), "none")
        if source != "trace" or problems:
            shoot(page, f"push_lab-flow_{when.replace(' ', '-')}_en")
    finally:
        page.close()
    return source, problems


@pytest.mark.browser
def test_the_flow_lab_traces_live_after_a_restart_and_an_auto_restart(browser, embedded_app):
    """The embedded server restarted from the sidebar, then killed and brought back by auto-restart: the flow lab
    shows a live trace (not the recording) after each, and nothing wrong on the page."""
    url, proc = embedded_app
    runs = {
        "before a restart": _flow_send(browser, url, "before a restart"),
        "after the restart button": _flow_send(browser, url, "after the restart button", _restart_button),
        "after auto-restart": _flow_send(
            browser,
            url,
            "after auto-restart",
            lambda page: (conftest.kill_app_tritonserver(proc.pid), _wait_down_then_up(page)),
        ),
    }
    found = [
        f"flow_send {when} showed the {source} timeline, not a live trace"
        for when, (source, _) in runs.items()
        if source != "trace"
    ]
    found += [p for _, problems in runs.values() for p in problems]
    assert not found, "\n".join(found)
