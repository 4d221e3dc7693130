"""Projector mode (ui/present.py): ``?present=1`` gives large type, no sidebar, and diagrams
readable at 1024x768.

The fast tier checks the drawing's rewrite and the stylesheet; AppTest checks that the mode follows the URL
(and ``?present=0``) on a page; the browser test measures the page at 1024x768 in zh and en (chapter 3's DAGs,
the batching lab after a run) and saves screenshots under artifacts/screenshots/present_*.png to look at.
"""

from __future__ import annotations

import re
from pathlib import Path

import conftest
import pytest
from playwright.sync_api import expect

from triton_kitchen.core import lessons
from triton_kitchen.tools import repository
from ui import present
from ui.i18n import LANG_LABELS

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "artifacts" / "screenshots"
VIEWPORT = {"width": 1024, "height": 768}


# -- fast tier ------------------------------------------------------------------------------------------
def test_the_projector_draws_dags_top_to_bottom_with_larger_one_line_labels():
    dot = repository.ensemble_dot("tta_ensemble", lang="zh")
    assert "rankdir=LR;" in dot  # the page's usual drawing, wide
    shown = present.for_projector(dot)
    assert "rankdir=TB;" in shown and "rankdir=LR" not in shown
    sizes = [int(n) for n in re.findall(r"fontsize=(\d+)", shown)]
    assert sizes and min(sizes) >= 16, sizes
    edges = [line for line in shown.splitlines() if " -> " in line]
    assert len(edges) == dot.count(" -> ") > 5
    assert all("\\n" not in e for e in edges), edges  # an edge's label on one line: the drawing stays short
    assert "image_tensor · FP32 [B,3,224,224] · 602 kB" in shown
    nodes = [line for line in shown.splitlines() if "shape=box" in line]
    assert nodes and all("\\n" in n for n in nodes)  # node labels keep their two lines


def test_the_stylesheet_hides_the_sidebar_and_enlarges_type():
    css = present.CSS_PATH.read_text(encoding="utf-8")
    rules = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    sidebar = re.search(r'\[data-testid="stSidebar"\][^{]*\{([^}]*)\}', rules)
    assert sidebar and "display: none" in sidebar.group(1)
    root = re.search(r"html\s*\{\s*font-size:\s*(\d+)px", rules)
    assert root and int(root.group(1)) >= 20  # Streamlit's default is 16 px; every rem follows the root


# -- a page of its own (AppTest.from_function: no server) ----------------------------------------------
def _projector_page():
    from triton_kitchen.tools import repository
    from ui import present

    present.apply()
    present.graphviz_chart(repository.ensemble_dot("image_classifier", lang="en"))


def _styles(at) -> list[str]:
    return [e.proto.body for e in at.get("html") if "stSidebar" in e.proto.body]


def _dots(at) -> list[str]:
    return [g.proto.spec for g in at.get("graphviz_chart")]


@pytest.mark.app
def test_present_in_the_url_turns_projector_mode_on_and_off():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_projector_page, default_timeout=30)
    at.run()
    assert _styles(at) == [] and "rankdir=LR;" in _dots(at)[0]  # a plain page

    at.query_params["present"] = "1"
    at.run()
    (css,) = _styles(at)
    assert '[data-testid="stSidebar"]' in css and "font-size: 22px" in css
    assert "rankdir=TB;" in _dots(at)[0]
    del at.query_params["present"]  # a page switch drops the query string: the session keeps the mode
    at.run()
    assert len(_styles(at)) == 1 and at.query_params["present"] == ["1"]

    at.query_params["present"] = "0"
    at.run()
    assert _styles(at) == [] and "rankdir=LR;" in _dots(at)[0]
    del at.query_params["present"]
    at.run()
    assert _styles(at) == []


@pytest.mark.app
def test_the_app_frame_applies_it_on_every_page(monkeypatch):
    """app.py injects the stylesheet and moves the navigation to the top bar, whatever the page."""
    from conftest import switch_page
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("TRITON_HTTP_URL", "127.0.0.1:9")  # nobody there: the pages draw without Triton
    monkeypatch.setenv("TRITON_GRPC_URL", "127.0.0.1:9")
    for page in ("views/ch3_multi_model.py", "views/lab_batching.py"):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        at.query_params["lang"] = "en"
        at.query_params["present"] = "1"
        switch_page(at, page)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert len(_styles(at)) == 1, page
        assert at.session_state["tk_present"] is True


@pytest.mark.app
def test_the_projectors_bar_switches_the_language_and_leaves(monkeypatch):
    """The sidebar is hidden while presenting: the bar at the top gives the teacher the language and the way
    out. A switch there holds (the hidden sidebar's switch follows it instead of switching back)."""
    from conftest import switch_page
    from streamlit.testing.v1 import AppTest

    from ui import i18n

    monkeypatch.setenv("TRITON_HTTP_URL", "127.0.0.1:9")
    monkeypatch.setenv("TRITON_GRPC_URL", "127.0.0.1:9")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["present"] = "1"
    switch_page(at, "views/ch3_multi_model.py")
    at.run()
    assert at.segmented_control(key=present.LANG).value == "zh"
    assert at.title[0].value == lessons.load_lesson(3, "zh").title

    at.segmented_control(key=present.LANG).set_value("en").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.query_params["lang"] == ["en"] and at.session_state[i18n.LANG_SWITCH] == "en"
    at.run()  # the next run (any click) stays in English
    assert at.title[0].value == lessons.load_lesson(3, "en").title
    assert at.segmented_control(key=present.LANG).value == "en"
    assert at.button(key=present.LEAVE).label == lessons.t("present.leave", "en")

    at.button(key=present.LEAVE).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert _styles(at) == [] and "present" not in at.query_params and at.session_state["tk_present"] is False
    assert not [w for w in at.segmented_control if w.key == present.LANG]  # the bar went with the mode
    assert at.title[0].value == lessons.load_lesson(3, "en").title  # in the language picked on the projector

    at.sidebar.segmented_control(key=i18n.LANG_SWITCH).set_value(
        "zh"
    ).run()  # back in Chinese, in the sidebar
    at.query_params["present"] = "1"
    at.run()
    at.run()  # the bar, drawn again, shows Chinese and does not switch back to its English of before
    assert at.segmented_control(key=present.LANG).value == "zh"
    assert at.title[0].value == lessons.load_lesson(3, "zh").title


# -- the browser, at 1024x768 ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def embedded_app():
    """The app with its own embedded server: the batching lab reloads the classifier through the repository API,
    which the embedded server opens to the app (a remote one would have to allow it)."""
    env = {"TRITON_HTTP_URL": None, "TRITON_GRPC_URL": None}
    with conftest.streamlit_app(env, log_name="streamlit-present.log") as (url, _proc):
        yield url


def _settle(page, timeout: float = 120.0) -> None:
    """Until the script has stopped running for a second (conftest.wait_for_app_run)."""
    conftest.wait_for_app_run(page, timeout=timeout, quiet_ms=1000)


def _open(browser, url: str):
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(url, wait_until="domcontentloaded")
    _settle(page)
    assert page.locator('[data-testid="stException"]').count() == 0
    return page


def _open_sections(page) -> None:
    """Open every closed section box (a lesson may draw a section only while it is open)."""
    for _ in range(20):
        closed = page.locator(
            '[data-testid="stMain"] [data-testid="stExpander"] details:not([open]) > summary:visible'
        )
        if closed.count() == 0:
            return
        closed.first.click()
        _settle(page)


def _paragraph_px(page) -> float:
    return page.evaluate(
        "() => parseFloat(getComputedStyle(document.querySelector('[data-testid=stMarkdownContainer] p')).fontSize)"
    )


def _shoot_elements(page, selector: str, name: str) -> int:
    """A 1024x768 screenshot with each matching element scrolled into view (what the projector shows)."""
    found = page.locator(selector)
    for i in range(found.count()):
        found.nth(i).scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        page.screenshot(path=str(SHOTS / f"{name}_{i}.png"))
    return found.count()


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["zh"])  # the stylesheet is the same in English (AppTest checks it there)
def test_projector_mode_at_1024x768(embedded_app, browser, lang):
    SHOTS.mkdir(parents=True, exist_ok=True)
    plain = _open(browser, f"{embedded_app}/ch3?lang={lang}")
    assert plain.locator('[data-testid="stSidebar"]').is_visible()
    normal_px = _paragraph_px(plain)
    plain.close()

    page = _open(browser, f"{embedded_app}/ch3?lang={lang}&present=1")
    assert not page.locator('[data-testid="stSidebar"]').is_visible()
    assert _paragraph_px(page) >= 1.3 * normal_px  # 22 px against Streamlit's 16
    page.screenshot(path=str(SHOTS / f"present_ch3_{lang}_top.png"))
    _open_sections(page)
    try:  # a box's run can start late on loaded cores, after _settle's quiet second: its DAG comes later
        page.wait_for_function(
            "() => document.querySelectorAll('[data-testid=stGraphVizChart]').length >= 3", timeout=60_000
        )
    except Exception:  # noqa: BLE001 - counted below, with the number found
        pass
    assert _shoot_elements(page, '[data-testid="stGraphVizChart"]', f"present_ch3_{lang}_dag") == 3
    for i in range(3):  # each DAG on one screen, its labels at least 12 px high as drawn
        chart = page.locator('[data-testid="stGraphVizChart"] svg').nth(i)
        box = chart.bounding_box()
        assert box["width"] <= VIEWPORT["width"] and box["height"] <= VIEWPORT["height"], box
        heights = chart.evaluate(
            "s => [...s.querySelectorAll('text')].map(t => t.getBoundingClientRect().height)"
        )
        assert heights and min(heights) >= 12, (i, min(heights))
    # a page switch keeps the mode (the query string is dropped, the session remembers it)
    page.get_by_text("Labs" if lang == "en" else "实验室", exact=True).first.click()
    page.locator('[data-testid="stTopNavDropdownLink"][href$="/lab-batching"]').click()
    page.wait_for_url("**/lab-batching**", timeout=30000)
    _settle(page)
    assert "present=1" in page.url
    assert not page.locator('[data-testid="stSidebar"]').is_visible()
    page.wait_for_selector(".st-key-batch_run button:enabled", timeout=180000)  # once the server is up
    _settle(page)
    for slider in ("batch_d",):  # the shortest run the lab offers: the plot is what is looked at
        page.locator(f".st-key-{slider} input[type=range], .st-key-{slider} [role=slider]").first.focus()
        page.keyboard.press("Home")
        _settle(page)
    page.locator(".st-key-batch_run button").click()  # the lab's run: off, then on
    page.wait_for_selector('[data-testid="stPlotlyChart"] .xtick text', timeout=180000)
    _settle(page, 180)
    page.screenshot(path=str(SHOTS / f"present_lab_batching_{lang}_top.png"))
    assert _shoot_elements(page, '[data-testid="stPlotlyChart"]', f"present_lab_batching_{lang}_plot") >= 1
    tick_px = page.evaluate(
        "() => parseFloat(getComputedStyle(document.querySelector('[data-testid=stPlotlyChart] .xtick text')).fontSize)"
    )
    assert tick_px >= 15  # plotly's own 12
    for chart in page.locator('[data-testid="stPlotlyChart"]').all():
        assert chart.bounding_box()["width"] >= 0.9 * VIEWPORT["width"]  # as wide as the page
    # the projector's own bar (the sidebar is hidden): the other language, the run's plot kept; then leaving
    other = "en" if lang == "zh" else "zh"
    page.locator(f".st-key-{present.LANG} button").filter(has_text=LANG_LABELS[other]).click()
    expect(page.locator("[data-testid=stMain] h1").first).to_have_text(
        lessons.ui_strings(other)["lab_batching.title"], timeout=60_000
    )
    _settle(page)
    assert f"lang={other}" in page.url and page.locator('[data-testid="stPlotlyChart"]').count() >= 1
    page.screenshot(path=str(SHOTS / f"present_lab_batching_{lang}_to_{other}.png"))
    page.locator(f".st-key-{present.LEAVE} button").click()
    expect(page.locator('[data-testid="stSidebar"]')).to_be_visible(timeout=60_000)
    _settle(page)
    assert "present=1" not in page.url and page.locator(f".st-key-{present.BAR}").count() == 0
    page.close()
