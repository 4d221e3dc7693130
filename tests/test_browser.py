"""The app in a real browser: Playwright driving Debian's chromium against `streamlit run app.py`.

Classify and switch the language; break a config in the editor. Every page, everything on it pressed (in Chinese;
the long pages in English), Chinese as rendered and images loaded: tests/test_click_everything.py; every page's
text in both languages: tests/test_pages_in_apptest.py. Screenshots go under
artifacts/screenshots/ (gitignored) for a person to look at.
"""

from __future__ import annotations

import time
from pathlib import Path

import conftest
import pytest
from playwright.sync_api import expect

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path(conftest.CHROMIUM)
SHOTS = ROOT / "artifacts" / "screenshots"
ARGS = conftest.CHROMIUM_ARGS
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="Debian's chromium (/usr/bin/chromium) is not installed"
    ),
]


@pytest.fixture(scope="module")
def app_url(server):
    """`streamlit run app.py` in a subprocess, pointed at the session's running server."""
    with conftest.streamlit_app(conftest.remote_env(server), log_name="streamlit-browser.log") as (
        url,
        _proc,
    ):
        yield url


# `browser`: one chromium for the module, from conftest


def wait_until_done(page, timeout: float = 60.0) -> float:
    """Seconds until the page shows its title and Streamlit has stopped running (stable for 0.3 s)."""
    t0 = time.monotonic()
    page.wait_for_selector("h1", timeout=timeout * 1000)
    stable_since = None
    while time.monotonic() - t0 < timeout:
        running = page.locator('[data-testid="stStatusWidget"]').count() > 0
        skeleton = page.locator('[data-testid="stSkeleton"]').count() > 0
        if not running and not skeleton:
            if stable_since is None:
                stable_since = time.monotonic()
            elif time.monotonic() - stable_since >= 0.3:
                return stable_since - t0
        else:
            stable_since = None
        time.sleep(0.05)
    raise TimeoutError("the page kept running")


def assert_no_exception(page, name: str) -> None:
    boxes = page.locator('[data-testid="stException"]')
    if boxes.count():
        pytest.fail(f"{name}: Streamlit exception on the page:\n{boxes.first.inner_text()[:2000]}")
    page.wait_for_function("() => [...document.images].every(i => i.complete)", timeout=15000)
    broken = page.evaluate("() => [...document.images].filter(i => i.naturalWidth === 0).map(i => i.src)")
    # starlette >= 1.8 breaks Streamlit 1.60's /media (HTTP 500; pinned 1.0.0): tests/test_streamlit_media.py
    assert not broken, f"{name}: images that did not load: {broken}"


def shoot(page, name: str, max_height: int = 7000) -> None:
    """Screenshot the whole page: Streamlit scrolls inside its main block, so grow the viewport first."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    height = page.evaluate(
        "() => Math.max(...[...document.querySelectorAll('[data-testid=stMain], [data-testid=stMainBlockContainer]')]"
        ".map(e => e.scrollHeight), 900)"
    )
    width = page.viewport_size["width"]
    page.set_viewport_size({"width": width, "height": min(int(height) + 40, max_height)})
    page.wait_for_timeout(400)
    page.screenshot(path=str(SHOTS / f"{name}.png"))
    page.set_viewport_size({"width": width, "height": 900})


def open_and_shoot(browser, url: str, name: str, width: int = 1400) -> tuple[float, object]:
    page = browser.new_page(viewport={"width": width, "height": 900})
    t0 = time.monotonic()
    page.goto(url, wait_until="domcontentloaded")
    wait_until_done(page)
    elapsed = time.monotonic() - t0
    assert_no_exception(page, name)
    assert page.get_by_text("Page not found").count() == 0, f"{name}: {url} is not a page"
    shoot(page, name)
    return elapsed, page


def test_classify_and_switch_language(app_url, browser):
    _, page = open_and_shoot(browser, f"{app_url}/ch1?lang=zh", "ch1_before_classify")
    page.get_by_role("button", name="识别").click()
    page.wait_for_selector(".js-plotly-plot", timeout=30000)
    wait_until_done(page)
    assert_no_exception(page, "ch1 classify")
    page.screenshot(path=str(SHOTS / "ch1_classified_zh.png"), full_page=False)
    # language switch in the sidebar keeps the page, changes the text and the URL
    page.locator('[data-testid="stSidebar"]').get_by_text("English", exact=True).click()
    page.wait_for_function("() => window.location.search.includes('lang=en')", timeout=15000)
    wait_until_done(page)
    assert "/ch1" in page.url
    expect(page.locator("h1").first).to_have_text("What an inference server does", timeout=60_000)
    # switching page through the navigation keeps the language
    page.locator('[data-testid="stSidebarNav"]').get_by_text("HTTP", exact=False).first.click()
    page.wait_for_url("**/ch4**", timeout=15000)
    wait_until_done(page)
    assert "lang=en" in page.url, page.url
    assert_no_exception(page, "ch4 after switch")
    page.screenshot(path=str(SHOTS / "ch4_after_switch_en.png"), full_page=False)
    page.close()


_CLOSED_BOXES = ", ".join(  # a lesson's section and quiz boxes (ui.lesson.lazy_box), closed
    f'[data-testid="stMain"] [class*="st-key-{prefix}"] > [data-testid="stExpander"] > details:not([open]) > summary'
    for prefix in ("tk_section_", "tk_quiz_open_")
)


def open_lesson_boxes(page) -> int:
    """Open every closed section and quiz box, as a reader clicking each heading (each click reruns the
    page, which then draws the box's content); how many were opened."""
    for opened in range(30):
        closed = page.locator(_CLOSED_BOXES)
        if closed.count() == 0:
            return opened
        closed.first.click()
        page.wait_for_timeout(300)
        wait_until_done(page)
    raise AssertionError("boxes keep closing")


def test_editor_error_in_browser(app_url, browser):
    _, page = open_and_shoot(browser, f"{app_url}/ch2?lang=en", "ch2_editor")
    assert page.locator("textarea").count() == 0  # the editor's section is closed on a first visit
    assert open_lesson_boxes(page) == 4  # three sections and the quiz (not the handouts)
    box = page.locator("textarea").first
    text = box.input_value()
    box.fill(text.replace('key: "input" value: "image_tensor"', 'key: "image_tensor" value: "input"'))
    box.press("Control+Enter")
    page.wait_for_selector("text=would not load", timeout=15000)
    wait_until_done(page)
    assert_no_exception(page, "ch2 invalid")
    shoot(page, "ch2_invalid_en")
    page.close()


def _script_state(page) -> str:
    return page.evaluate(
        "document.querySelector('[data-testid=stApp]').getAttribute('data-test-script-state')"
    )


def test_protocol_lab_tab_click_waits_for_a_run_and_stop_ends_it(app_url, browser):
    """The protocol lab's tabs are a fragment that draws only the open tab. Opening another tab while a load test
    runs shows that it waits, and draws it once the run is over: the run is not cut (its box plot is there after).
    The Stop button above the tabs ends a run at once. Fails on tabs in the page's own run (a click would cut the
    load) and on a Stop inside the fragment (its click would wait for the run)."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(f"{app_url}/lab-protocols?lang=en", wait_until="domcontentloaded")
    wait_until_done(page)
    assert (
        page.locator(".st-key-proto_load_run").count() == 0
    )  # the load tab is not drawn before it is opened
    tabs = page.locator("[data-testid=stTabs] [role=tab]")
    panel = page.locator("[data-testid=stTabPanel]:visible")
    tabs.nth(1).click()
    page.get_by_role("button", name="Run the load").click()  # 3 protocols x 3 s by default
    page.wait_for_selector("[data-testid=stProgress]", timeout=30_000)
    tabs.nth(2).click()
    expect(panel).to_contain_text("A measurement is running in another tab", timeout=5_000)
    expect(page.get_by_role("button", name="Run the sweep")).to_be_visible(timeout=90_000)
    tabs.nth(1).click()
    expect(page.locator(".st-key-proto_load_box")).to_be_visible(timeout=30_000)
    shoot(page, "lab_protocols_load_kept_en")
    wait_until_done(page)
    page.get_by_role("button", name="Run the load").click()
    page.wait_for_selector("[data-testid=stProgress]", timeout=30_000)
    page.locator(".st-key-proto_stop button").first.click()
    t0 = time.monotonic()
    while _script_state(page) != "notRunning" and time.monotonic() - t0 < 30:
        time.sleep(0.1)
    stopped = time.monotonic() - t0
    assert stopped < 5, f"the load ran on {stopped:.1f} s after Stop"  # a whole run takes 9 s or more
    assert_no_exception(page, "lab-protocols stopped")
    page.close()


def test_a_fresh_tab_of_a_chapter_connects_at_once(app_url, browser):
    """A chapter's own URL in a new tab asks the app's root for Streamlit's health and opens the websocket there,
    without first asking /ch3/_stcore/health (a 404, then Streamlit's 100 ms wait: ui/backend_base.py); then the
    page works. Fails if app.py stops serving through the middleware or Streamlit stops reading the hint."""
    page = browser.new_page()
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    sockets: list[str] = []
    page.on("websocket", lambda ws: sockets.append(ws.url))
    try:
        page.goto(f"{app_url}/ch3?lang=en", wait_until="domcontentloaded")
        wait_until_done(page)
        assert_no_exception(page, "fresh ch3")
        assert page.locator("[data-testid=stMain] h1").first.inner_text().strip()
        health = [u for u in asked if "_stcore/health" in u]
        assert health and all(u.startswith(f"{app_url}/_stcore/health") for u in health), health
        assert sockets == [app_url.replace("http://", "ws://") + "/_stcore/stream"], sockets
        # the app's own links still work
        page.locator("[data-testid=stSidebarNav] a[href$='/ch4']").first.click()
        page.wait_for_url("**/ch4*")
        wait_until_done(page)
        assert_no_exception(page, "ch4 from a fresh ch3")
    finally:
        page.close()
