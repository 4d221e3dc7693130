"""The app in a real browser: Playwright driving Debian's chromium against `streamlit run app.py`.

Chromium checks only what needs a browser, from a declared list per page (PAGE_CHECKS; MADE_BY names the test
that makes each check). What a page says, in each language and on either server, and what each of its controls
does, is read through AppTest: tests/live/test_pages_in_apptest.py. Screenshots go under artifacts/screenshots/
(gitignored) for a person to look at; with TK_SHOTS=1 every page of the Chinese pass is photographed whole.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import conftest
import pytest
from _rendered_cjk import RENDERED_TEXT_JS, cjk_rendering_defects
from _screen_checks import BROWSER_READ, problems_on_screen
from conftest import open_in_browser, page_now, shoot, wait_for_app_run
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from ui import pages

ROOT = Path(__file__).resolve().parents[2]
SHOT_EVERY_PAGE = bool(os.environ.get("TK_SHOTS"))
pytestmark = pytest.mark.browser

# What only a browser shows, per page (the welcome page is ""): every page's Chinese as Chromium lays it out, every
# box and tab open, its images loaded and nothing wrong on screen ("cjk"); its download buttons serve a file
# ("download"); a fragment or a tab that waits on a run ("fragment"); a restart seen from an open tab ("restart");
# a component of the page's own ("component"). A new page fails test_every_page_declares_its_browser_checks until
# it is named here.
PAGE_CHECKS: dict[str, tuple[str, ...]] = {
    "": ("cjk", "component"),
    "ch1": ("cjk", "download", "fragment"),
    "ch2": ("cjk", "download"),
    "ch3": ("cjk", "download"),
    "ch4": ("cjk", "download"),
    "ch5": ("cjk", "download", "restart"),
    "ch6": ("cjk", "download"),
    "ch7": ("cjk", "download"),
    "ch8": ("cjk", "download"),
    "ch9": ("cjk", "download"),
    "ch10": ("cjk", "download"),
    "ch11": ("cjk", "download"),
    "lab-protocols": ("cjk", "fragment"),  # its downloads appear after a load run (test_protocols)
    "lab-batching": ("cjk", "fragment"),  # its download appears after a run
    "lab-flow": ("cjk", "restart"),
    "lab-break": ("cjk",),
    "lab-doctor": ("cjk",),  # its download appears after a run (tests/live/test_lab_doctor_live.py)
}
MADE_BY = {
    "cjk": "test_browser.py::test_every_page_in_chinese_as_chromium_lays_it_out",
    "download": "test_browser.py::test_every_page_in_chinese_as_chromium_lays_it_out (each download button serves "
    "a file), test_handouts.py::test_the_page_downloads_both_documents (the handouts' content)",
    "fragment": "test_browser.py::test_classify_and_switch_language (ch1), "
    "test_browser.py::test_protocol_lab_tab_click_waits_for_a_run_and_stop_ends_it (lab-protocols), "
    "test_present.py (lab-batching's run and plot)",
    "restart": "test_push.py::test_open_tabs_hear_of_a_killed_server_and_its_return_without_polling (ch5, "
    "lab-flow), test_push.py::test_the_flow_lab_traces_live_after_a_restart_and_an_auto_restart (lab-flow)",
    "component": "test_classroom.py::test_the_browser_remembers_the_student_on_a_return_visit (the class "
    "cookie's component)",
}


def test_every_page_declares_its_browser_checks():
    assert set(PAGE_CHECKS) == {""} | {p.url for p in pages.PAGES}
    assert {c for checks in PAGE_CHECKS.values() for c in checks} <= set(MADE_BY)


def assert_no_exception(page, name: str) -> None:
    boxes = page.locator('[data-testid="stException"]')
    if boxes.count():
        pytest.fail(f"{name}: Streamlit exception on the page:\n{boxes.first.inner_text()[:2000]}")
    page.wait_for_function("() => [...document.images].every(i => i.complete)", timeout=15000)
    broken = page.evaluate("() => [...document.images].filter(i => i.naturalWidth === 0).map(i => i.src)")
    # starlette >= 1.8 breaks Streamlit 1.60's /media (HTTP 500; pinned 1.0.0): tests/live/test_streamlit_media.py
    assert not broken, f"{name}: images that did not load: {broken}"


def open_and_shoot(browser, url: str, name: str, width: int = 1400) -> tuple[float, object]:
    t0 = time.monotonic()
    page = open_in_browser(browser, url, viewport=(width, 900))
    elapsed = time.monotonic() - t0
    assert_no_exception(page, name)
    assert page.get_by_text("Page not found").count() == 0, f"{name}: {url} is not a page"
    shoot(page, name)
    return elapsed, page


def click_and_wait(page, locator, expect_run_s: float = 15.0) -> None:
    t0 = page_now(page)
    locator.click()
    wait_for_app_run(page, t0, expect_run_s=expect_run_s)


# closed boxes of the main area (lesson sections, quizzes, handouts, lazy experiments) and tabs not yet shown
_CLOSED = '[data-testid="stMain"] [data-testid="stExpander"] > details:not([open]) > summary:visible'
_HIDDEN_TABS = '[data-testid="stMain"] [data-testid="stTabs"] [role=tab][aria-selected=false]:visible'


def open_everything(page, limit: int = 80) -> int:
    """Open every closed box and show every tab of the main area, as a reader clicking each (a lazy box or tab
    draws its content on its own run); how many clicks."""
    shown: set[str] = set()
    for clicks in range(limit):
        closed = page.locator(_CLOSED)
        if closed.count():
            click_and_wait(page, closed.first, expect_run_s=3)
            continue
        tabs = [
            t
            for t in page.locator(_HIDDEN_TABS).all()
            if f"{t.evaluate('e => e.closest(`[data-testid=stTabs]`).id')}:{t.inner_text()}" not in shown
        ]
        if not tabs:
            return clicks
        shown.add(f"{tabs[0].evaluate('e => e.closest(`[data-testid=stTabs]`).id')}:{tabs[0].inner_text()}")
        click_and_wait(page, tabs[0], expect_run_s=3)
    raise AssertionError(f"{page.url}: still opening boxes after {limit} clicks")


def downloads_served(page) -> list[str]:
    """Each download button of the main area pressed: what is wrong (no file, an empty one)."""
    found = []
    buttons = page.locator('[data-testid="stMain"] [data-testid="stDownloadButton"] button:visible')
    if not buttons.count():
        return ["no download button"]
    for i in range(buttons.count()):
        # a click while the page is still running can be lost (the button is drawn again under it): press it when
        # the app is idle, and press once more if no file came (on three busy workers a click was lost once)
        for attempt in (1, 2):
            wait_for_app_run(page)
            try:
                with page.expect_download(timeout=30_000) as info:
                    buttons.nth(i).click()
                break
            except PlaywrightTimeout:
                if attempt == 2:
                    raise
        name = info.value.suggested_filename
        if not name or not Path(info.value.path()).stat().st_size:
            found.append(f"download {i} ({name!r}) is empty")
    return found


def test_every_page_in_chinese_as_chromium_lays_it_out(app_url, browser):
    """Every page in Chinese, every box and tab opened by a click: Chinese as Chromium renders it (no literal
    ``**``, no stray space), images loaded, nothing wrong on screen (tests/_screen_checks.py), and each download
    button serves a file. One tab goes from page to page."""
    context = browser.new_context(viewport={"width": 1400, "height": 900}, accept_downloads=True)
    found = []
    for slug, checks in PAGE_CHECKS.items():
        t0 = time.monotonic()
        page = open_in_browser(context, f"{app_url}/{slug}?lang=zh")
        name = f"/{slug} (zh, Chromium)"
        clicks = open_everything(page)
        problems = [f"{name}: {p}" for p in problems_on_screen(page.evaluate(BROWSER_READ), "zh")]
        problems += [
            f"{name}: Chinese rendered wrong: {d}"
            for d in cjk_rendering_defects(page.evaluate(RENDERED_TEXT_JS))
        ]
        if "download" in checks:
            problems += [f"{name}: {p}" for p in downloads_served(page)]
        if problems or SHOT_EVERY_PAGE:
            shoot(page, f"browser_zh_{slug or 'home'}")
        found += problems
        print(f"{name}: {clicks} clicks, {time.monotonic() - t0:.1f} s", flush=True)
        page.close()
    context.close()
    assert not found, f"{len(found)} problem(s):\n" + "\n".join(found)


def test_classify_and_switch_language(app_url, browser):
    _, page = open_and_shoot(browser, f"{app_url}/ch1?lang=zh", "ch1_before_classify")
    page.get_by_role("button", name="识别").click()
    page.wait_for_selector(".js-plotly-plot", timeout=30000)
    wait_for_app_run(page)
    assert_no_exception(page, "ch1 classify")
    page.screenshot(path=str(conftest.SHOTS / "ch1_classified_zh.png"), full_page=False)
    # language switch in the sidebar keeps the page, changes the text and the URL
    page.locator('[data-testid="stSidebar"]').get_by_text("English", exact=True).click()
    page.wait_for_function("() => window.location.search.includes('lang=en')", timeout=15000)
    wait_for_app_run(page)
    assert "/ch1" in page.url
    expect(page.locator("h1").first).to_have_text("What an inference server does", timeout=60_000)
    # switching page through the navigation keeps the language
    page.locator('[data-testid="stSidebarNav"]').get_by_text("HTTP", exact=False).first.click()
    page.wait_for_url("**/ch4**", timeout=15000)
    wait_for_app_run(page)
    assert "lang=en" in page.url, page.url
    assert_no_exception(page, "ch4 after switch")
    page.screenshot(path=str(conftest.SHOTS / "ch4_after_switch_en.png"), full_page=False)
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
        wait_for_app_run(page)
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
    wait_for_app_run(page)
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
    wait_for_app_run(page)
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
    wait_for_app_run(page)
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
        wait_for_app_run(page)
        assert_no_exception(page, "fresh ch3")
        assert page.locator("[data-testid=stMain] h1").first.inner_text().strip()
        health = [u for u in asked if "_stcore/health" in u]
        assert health and all(u.startswith(f"{app_url}/_stcore/health") for u in health), health
        assert sockets == [app_url.replace("http://", "ws://") + "/_stcore/stream"], sockets
        # the app's own links still work
        page.locator("[data-testid=stSidebarNav] a[href$='/ch4']").first.click()
        page.wait_for_url("**/ch4*")
        wait_for_app_run(page)
        assert_no_exception(page, "ch4 from a fresh ch3")
    finally:
        page.close()
