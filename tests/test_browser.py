"""The app in a real browser: Playwright driving Debian's chromium against `streamlit run app.py`.

Opens every page in both languages, waits until the script has finished running, fails on any
Streamlit exception box, measures the time until the page is interactive, and saves screenshots
under artifacts/screenshots/ (gitignored) for a person to look at.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import conftest
import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path(conftest.CHROMIUM)
SHOTS = ROOT / "artifacts" / "screenshots"
ARGS = conftest.CHROMIUM_ARGS
CHAPTERS = [""] + [f"ch{n}" for n in range(1, 11)]  # "": the welcome page, the app's root
LABS = {
    "lab-protocols": "views/lab_protocols.py",
    "lab-batching": "views/lab_batching.py",
    "lab-flow": "views/lab_flow.py",
    "lab-break": "views/lab_break.py",
}
INTERACTIVE_BUDGET_S = 2.0  # the target; the assertion allows slack for a loaded CI machine
ASSERT_LIMIT_S = 20.0  # generous: 2-core CI machines run other suites at the same time

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="Debian's chromium (/usr/bin/chromium) is not installed"
    ),
]


@pytest.fixture(scope="module")
def app_url(server):
    """`streamlit run app.py` in a subprocess, pointed at the session's running server."""
    env = {"TRITON_HTTP_URL": server.http_url, "TRITON_GRPC_URL": server.grpc_url}
    with conftest.streamlit_app(env) as (url, _proc):
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


def test_every_page_in_both_languages(app_url, browser):
    """Every page once (languages alternate, both for the welcome page): AppTest covers every page in
    both languages; this keeps the browser part of the suite short on 2-core machines."""
    timings: dict[str, float] = {}
    pages = CHAPTERS + [slug for slug, path in LABS.items() if (ROOT / path).is_file()]
    visits = [("", "en")] + [(slug, ("zh", "en")[i % 2]) for i, slug in enumerate(pages)]
    for slug, lang in visits:
        elapsed, page = open_and_shoot(browser, f"{app_url}/{slug}?lang={lang}", f"{slug or 'home'}_{lang}")
        # the sidebar is there on every page, with the server's status
        assert page.locator('[data-testid="stSidebar"]').inner_text().count("2.51") >= 1, slug
        page.close()
        timings[f"/{slug}?lang={lang}"] = round(elapsed, 2)
    (SHOTS / "timings.json").write_text(json.dumps(timings, indent=1))
    print("time to interactive (s):", json.dumps(timings))
    slow = {k: v for k, v in timings.items() if v > ASSERT_LIMIT_S}
    assert not slow, slow


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
    assert page.locator("h1").first.inner_text().strip() == "What an inference server does"
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


# Chinese as Chromium renders it: a soft line break between two Chinese characters shows as a space,
# and `**` next to Chinese punctuation can stay literal (CommonMark's flanking rules).
_IDEOGRAPHS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_FULL_WIDTH = "\u3001-\u303f\uff01-\uffef"  # 。、「」 and ，：（）！？, which carry their own spacing
# `**`, or a `*` touching Chinese text: an emphasis delimiter CommonMark left literal
_LITERAL_EMPHASIS = f"(?<=[{_IDEOGRAPHS}{_FULL_WIDTH}])\\*+|\\*\\*+|\\*+(?=[{_IDEOGRAPHS}{_FULL_WIDTH}])"
# a space between two Chinese characters or beside a full-width mark: the lessons never mean one. Curly
# quotes and dashes serve English too, and the lessons put a space beside them around English words on
# purpose (`或 “unused”`): they are not in the check.
_STRAY_SPACE = (
    f"[{_IDEOGRAPHS}][ \u00a0]+[{_IDEOGRAPHS}]|[{_FULL_WIDTH}][ \u00a0]+\\S|\\S[ \u00a0]+[{_FULL_WIDTH}]"
)
_RENDERED_TEXT_JS = """() => {
  // the main block and the sidebar as rendered, with every code element (and chart) masked, closed
  // expanders opened and hidden tabs shown; laid out off screen so innerText applies the page's CSS
  const parts = [];
  for (const sel of ['[data-testid="stMain"]', '[data-testid="stSidebar"]']) {
    const root = document.querySelector(sel);
    if (!root) continue;
    const clone = root.cloneNode(true);
    clone.querySelectorAll('details').forEach(d => d.setAttribute('open', ''));
    clone.querySelectorAll('[hidden]').forEach(e => e.removeAttribute('hidden'));
    clone.querySelectorAll('pre, code, svg, canvas, textarea, script, style, .js-plotly-plot')
      .forEach(e => e.replaceWith(document.createTextNode('\u27e6code\u27e7')));
    clone.style.position = 'absolute';
    clone.style.left = '-30000px';
    clone.style.top = '0';
    clone.style.width = root.clientWidth + 'px';
    document.body.appendChild(clone);
    parts.push(clone.innerText);
    clone.remove();
  }
  return parts.join('\\n');
}"""


def cjk_rendering_defects(text: str) -> list[str]:
    """Each emphasis marker left literal and each stray space in Chinese text, with a little context."""
    import re  # appended to a file other tests share: its imports stay as they are

    found = [
        f"**: {text[max(m.start() - 12, 0) : m.end() + 12]!r}" for m in re.finditer(_LITERAL_EMPHASIS, text)
    ]
    found += [
        f"space: {text[max(m.start() - 8, 0) : m.end() + 8]!r}" for m in re.finditer(_STRAY_SPACE, text)
    ]
    return found


def test_zh_pages_render_chinese_right(app_url, browser):
    """Every zh chapter and the welcome page, as Chromium renders them (main block and sidebar, code masked):
    no emphasis marker left literal, no space between two Chinese characters or beside a full-width mark."""
    assert len(cjk_rendering_defects("中 文。 中**")) == 3  # the check itself
    assert not cjk_rendering_defects("用 Triton 跑 `ensemble`：⟦code⟧ 或 “unused”。Access-Control-* 头")
    defects: dict[str, list[str]] = {}
    for slug in CHAPTERS:
        name = f"{slug or 'home'}_zh_text"
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(f"{app_url}/{slug}?lang=zh", wait_until="domcontentloaded")
        wait_until_done(page)
        if slug:
            assert open_lesson_boxes(page) >= 2, name  # the whole chapter: its sections and quiz
        assert_no_exception(page, name)
        text = page.evaluate(_RENDERED_TEXT_JS)
        title = page.locator("h1").first.inner_text()
        assert any("\u4e00" <= ch <= "\u9fff" for ch in title), f"{name}: not in Chinese: {title!r}"
        if slug == "ch3":
            shoot(page, "ch3_zh_text")  # the bold of "ensemble 不能根据数据分支" is for a person to look at
        page.close()
        found = cjk_rendering_defects(text)
        if found:
            defects[f"/{slug}"] = found
    count = sum(len(v) for v in defects.values())
    print(f"zh rendering defects: {count}", json.dumps(defects, ensure_ascii=False, indent=1))
    assert not defects, f"zh rendering defects: {count}\n" + json.dumps(defects, ensure_ascii=False, indent=1)
