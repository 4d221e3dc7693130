"""Click everything a student can reach, in a real browser, and fail on anything broken on screen.

Playwright drives Debian's chromium against `streamlit run app.py`. Every page (the welcome page, the
chapters, the labs) is opened; every button, toggle, checkbox, radio option, segmented option, tab and
expander in the page's main area is pressed, one at a time, and after each press the test waits for the script
run to finish and reads the page. It fails on what tests/_screen_checks.py finds there (an exception, an error box
the page did not mean, the generic message, an untranslated string), and on Chinese laid out wrong.

Two passes, one Streamlit process each, at once: Chinese (the default) on the app's own embedded server, and
English on an app whose server was restarted from the sidebar and killed (the flow lab must then show a live
trace, not the recording), which presses in full the long pages the Chinese pass only reads, then a share of the
Chinese pages. What a page says in English on every page, and on a remote server, is read without a browser:
tests/test_pages_in_apptest.py (a browser's rerun costs 0.2-0.7 s of CPU; this module is the suite's longest).
Load tests are clicked with the smallest settings the page offers, and only those no other test runs and reads in
both languages (HEAVY). A summary goes to artifacts/click_everything.json; a page with a problem is
photographed whole to artifacts/screenshots/click_*.png, and with TK_SHOTS=1 every page the passes name is (to
look at after a change: each whole-page shot costs seconds of Chromium's time, the suite has little).
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import conftest
import pytest
from _rendered_cjk import RENDERED_TEXT_JS, cjk_rendering_defects
from _screen_checks import INSIDE_BOXES, UI, meant_error, norm, problems_on_screen
from playwright.sync_api import TimeoutError as PlaywrightTimeout

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "artifacts" / "screenshots"
# Every page the passes name photographed whole, not only pages with a problem: a grown viewport lays out and
# rasterizes a page up to 9000 px tall, about 8 s of Chromium's CPU per shot on 2 cores (a quarter of the module's
# CPU on three pages, measured), when the live tier's parallel part keeps both cores busy
SHOT_EVERY_PAGE = bool(os.environ.get("TK_SHOTS"))
MAX_ACTIONS = 160  # per page visit: a page that keeps growing new buttons is a bug, not a reason to hang
RUN_TIMEOUT_S = 150.0  # one script run; the longest (a protocol lab load test, minimum settings) takes ~12 s
# a change (a new option, slider value, pick, a removed tag), a button or a page link always starts a run: how
# long to wait for it to start (CI's two loaded cores once started one more than 3 s after the click; the wait
# ends when it starts)
RUN_STARTS_S = 15.0
SERVER_TIMEOUT_S = 240.0  # the embedded server's first start or a restart, on a loaded 2-core machine


pytestmark = pytest.mark.browser
needs_chromium = pytest.mark.skipif(
    not Path(conftest.CHROMIUM).exists(), reason="Debian's chromium (/usr/bin/chromium) is not installed"
)


# -- pages -----------------------------------------------------------------------------------------------
def _slugs() -> list[str]:
    """The welcome page (""), then every chapter and lab in app.py's order (labs only where they exist).
    TK_CLICK_PAGES=ch2,lab-flow visits only those (a quicker loop while fixing one page)."""
    slugs = [""] + [url for path, url in conftest._page_urls().items() if (ROOT / path).is_file()]
    only = os.environ.get("TK_CLICK_PAGES")
    return [s for s in slugs if s in only.split(",")] if only else slugs


SLUGS = _slugs()


# -- the page's state ---------------------------------------------------------------------------------------
_WATCH_RUNS = conftest.WATCH_SCRIPT_STATE  # window.__tkRuns: each change of the script state, timed

_IDLE = """(minIdle) => {
  const app = document.querySelector('[data-testid=stApp]');
  const runs = window.__tkRuns || [];
  if (!app || app.getAttribute('data-test-script-state') !== 'notRunning' || !runs.length) return false;
  if (document.querySelector('[data-testid=stStatusWidget], [data-testid=stSkeleton]')) return false;
  return performance.now() - runs[runs.length - 1][0] >= minIdle;
}"""


def settle(
    page, since: float | None = None, expect_run_s: float = 0.0, timeout: float = RUN_TIMEOUT_S
) -> None:
    """Wait for the script run a click started (when one starts within ``expect_run_s``) to finish, until the
    app has not changed state for 0.15 s."""
    if since is not None and expect_run_s > 0:
        try:
            page.wait_for_function(
                "t => window.__tkRuns.some(([at, s]) => at >= t && s !== 'notRunning')",
                arg=since, timeout=expect_run_s * 1000, polling=25,
            )  # fmt: skip
        except Exception:  # noqa: BLE001 - no run started: a click the browser handles alone
            pass
    page.wait_for_function(_IDLE, arg=150, timeout=timeout * 1000, polling=25)


def now(page) -> float:
    return page.evaluate("() => performance.now()")


# What the checks read, in one round trip: exception boxes, error boxes, the text outside code blocks
# (sidebar included, the language switch excluded), and the technical details under error messages.
_READ = """() => {
  const roots = [...document.querySelectorAll('[data-testid=stMain], [data-testid=stSidebar]')];
  // code, the language switch (both languages by design), and Streamlit's own widget internals, whose
  // words ("Upload", "Browse files") the app cannot set
  const skip = 'pre, code, textarea, script, style, [data-testid=stIconMaterial], .st-key-tk_lang_switch, '
    + '[data-testid=stFileUploaderDropzone], [data-testid=stCameraInput] button, [data-testid=stCameraInputWebcamComponent]';
  const texts = [];
  for (const root of roots) {
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      const el = n.parentElement;
      if (!el || el.closest(skip)) continue;
      const s = n.nodeValue.trim();
      if (s) texts.push(s);
    }
  }
  const all = q => [...document.querySelectorAll(q)];
  return {
    exceptions: all('[data-testid=stException]').map(e => e.innerText),
    errors: all('[data-testid=stAlertContentError]').map(e => e.innerText),
    texts,
    details: all('[data-testid=stExpander] pre').map(e => e.textContent).slice(-3),
    broken: [...document.images].filter(i => i.complete && i.naturalWidth === 0).map(i => i.src),
  };
}"""


@dataclass
class Visit:
    """One page opened in one language and mode; the problems it found go to ``problems``."""

    mode: str
    lang: str
    slug: str
    problems: list[str]
    used: set[str] = field(default_factory=set)  # widget keys pressed so far (MEANT_ERRORS)
    actions: int = 0
    seen: set[str] = field(default_factory=set)

    @property
    def name(self) -> str:
        return f"{self.mode}/{self.lang} /{self.slug}"

    def meant(self, text: str) -> bool:
        return meant_error(text, self.lang, self.slug, self.used)

    def check(self, page, after: str) -> None:
        """Read the page and record what is wrong on it, saying which press first showed it."""
        for problem in problems_on_screen(page.evaluate(_READ), self.lang, self.meant):
            if problem not in self.seen:
                self.seen.add(problem)
                self.problems.append(f"{self.name} after {after}: {problem}")


# -- finding and pressing things ------------------------------------------------------------------------------
# Everything a student can press in the page's main area, in document order, each tagged data-tk=<n>.
_COLLECT = """() => {
  const main = document.querySelector('[data-testid=stMain]');
  if (!main) return [];
  document.querySelectorAll('[data-tk]').forEach(e => e.removeAttribute('data-tk'));
  const keyOf = el => {
    for (const c of [el, el && el.parentElement]) {
      const k = c && [...c.classList].find(x => x.startsWith('st-key-'));
      if (k) return k.slice(7);
    }
    return '';
  };
  const label = el => {
    const c = el.cloneNode(true);
    c.querySelectorAll('[data-testid=stIconMaterial]').forEach(i => i.remove());
    return c.textContent.replace(/\\s+/g, ' ').trim().slice(0, 80);
  };
  const shown = el => {  // as Playwright sees it: a collapsed expander's content is inert and hidden
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && !el.closest('[inert]')
      && el.checkVisibility({visibilityProperty: true, opacityProperty: true});
  };
  const out = [];
  let n = 0;
  const add = (el, kind, key, text, extra = {}) => {
    el.setAttribute('data-tk', String(n));
    out.push({n: n++, kind, key, label: text, ...extra});
  };
  const q = [
    '[data-testid=stButton] button', '[data-testid=stDownloadButton] button',
    '[data-testid=stFormSubmitButton] button', '[data-testid=stCheckbox]', '[data-testid=stRadio]',
    '[data-testid=stButtonGroup]', '[data-testid=stTabs] [role=tab]', '[data-testid=stExpander] summary',
  ].join(', ');
  const tablists = [...main.querySelectorAll('[data-testid=stTabs]')];
  for (const el of main.querySelectorAll(q)) {
    if (!shown(el)) continue;
    const box = el.closest('[data-testid=stElementContainer]');
    const key = keyOf(box);
    const disabled = el.disabled || el.getAttribute('aria-disabled') === 'true'
      || !!el.querySelector('input:disabled');
    if (el.matches('[role=tab]')) {
      const tabs = el.closest('[data-testid=stTabs]');
      const i = [...tabs.querySelectorAll('[role=tab]')].indexOf(el);
      add(el, 'tab', keyOf(tabs), label(el), {id: `tab:${tablists.indexOf(tabs)}:${i}`, selected: el.getAttribute('aria-selected') === 'true'});
    } else if (el.matches('summary')) {
      const exp = el.closest('[data-testid=stExpander]');
      add(el, 'expander', keyOf(exp), label(el), {id: `expander:${label(el)}`, selected: el.parentElement.open});
    } else if (el.matches('[data-testid=stRadio]')) {
      const opts = [...el.querySelectorAll('[data-testid=stRadioOption]')];
      add(el, 'radio', key, label(el.querySelector('[data-testid=stWidgetLabel]') || el),
          {options: opts.length, picked: opts.findIndex(o => o.hasAttribute('data-selected') || o.querySelector('input:checked')), disabled});
    } else if (el.matches('[data-testid=stButtonGroup]')) {
      const opts = [...el.querySelectorAll('button')];
      add(el, 'segmented', key, label(el), {options: opts.length, picked: opts.findIndex(o => o.getAttribute('aria-checked') === 'true'), disabled});
    } else if (el.matches('[data-testid=stCheckbox]')) {
      add(el, 'toggle', key, label(el), {disabled});
    } else {  // a download reruns nothing (the app's download buttons all say on_click="ignore")
      add(el, 'button', key, label(el), {disabled, download: !!el.closest('[data-testid=stDownloadButton]')});
    }
  }
  return out;
}"""


def _min_slider(page, key: str) -> None:
    box = page.locator(f".st-key-{key} input[type=range]")
    if not box.count() or box.first.get_attribute("value") == box.first.get_attribute("min"):
        return
    t0 = now(page)
    box.first.focus()
    page.keyboard.press("Home")
    settle(
        page, t0, expect_run_s=RUN_STARTS_S
    )  # a change (it was above the minimum): a run follows, however late


def _fill_number(page, key: str, value: int) -> None:
    box = page.locator(f".st-key-{key} input")
    if not box.count():
        return
    t0 = now(page)
    box.first.fill(str(value))
    box.first.press("Enter")
    settle(page, t0, expect_run_s=3)


def _keep_first_tags(page, key: str, keep: int = 1) -> None:
    tags = page.locator(f".st-key-{key} [data-baseweb=tag]")
    while tags.count() > keep:
        t0 = now(page)
        tags.nth(tags.count() - 1).locator("[role=presentation]").click()
        settle(page, t0, expect_run_s=RUN_STARTS_S)
    page.keyboard.press("Escape")


# Before a button that starts a load test: the smallest settings the page offers.
PREPARE = {
    "proto_load_run": lambda p: (_min_slider(p, "proto_load_c"), _min_slider(p, "proto_load_d"),
                                 _fill_number(p, "proto_load_cap", 20)),
    "proto_sweep_run": lambda p: (_keep_first_tags(p, "proto_sweep_levels"), _min_slider(p, "proto_sweep_d")),
    "proto_check_run": lambda p: (_min_slider(p, "proto_check_c"), _min_slider(p, "proto_check_d")),
    "proto_stream_run": lambda p: _min_slider(p, "proto_stream_delay"),
    "ch5_stream": lambda p: _min_slider(p, "ch5_delay"),
}  # fmt: skip


def _select_option(page, key: str, index: int) -> str:
    page.locator(f".st-key-{key} [role=combobox]").first.click()
    option = page.get_by_role("option").nth(index)
    text = option.inner_text().strip()
    t0 = now(page)
    option.click()
    settle(
        page, t0, expect_run_s=RUN_STARTS_S
    )  # each pick differs from the last: a run follows, however late
    return text


def _ch7_mistakes(page, visit: Visit) -> None:
    """Chapter 7's "break it" list: run the tutorial's client once with each mistake."""
    page.locator(".st-key-ch7_mistake [role=combobox]").first.click()
    count = page.get_by_role("option").count()
    page.keyboard.press("Escape")
    visit.used.add("ch7_mistake")
    for index in range(1, count):
        name = _select_option(page, "ch7_mistake", index)
        t0 = now(page)
        page.locator(".st-key-ch7_run button").click()
        settle(page, t0, expect_run_s=RUN_STARTS_S)
        visit.actions += 2
        visit.check(page, f"ch7_mistake={name!r} + ch7_run")
        assert page.locator("[data-testid=stAlertContentError]").count(), (
            f"{visit.name}: mistake {name!r} showed no error"
        )
    _select_option(page, "ch7_mistake", 0)


AFTER = {"ch7_run": _ch7_mistakes}


# load tests: only those in a pass's Scope.heavy run. Each keeps both cores busy for seconds; where another test
# already runs one, and reads what it shows in both languages, no pass presses it here:
# - the batching lab's offered-load sweep (six points, no smaller setting): tests/test_batching_why.py, AppTest;
# - the batching lab's run: tests/test_present.py in Chromium (in Chinese, its plot's size and fonts, then switched
#   to English, the plot kept), tests/test_batching_why.py in English (AppTest, read with the screen checks), and
#   tests/test_pages_in_apptest.py on a remote server (in Chinese, read with them);
# - chapter 9's four measurements: tests/test_ch9.py (AppTest, in Chinese, then switched to English and read with
#   the screen checks).
PROTOCOL_LAB_RUNS = frozenset({"proto_load_run", "proto_sweep_run", "proto_check_run"})
HEAVY = PROTOCOL_LAB_RUNS | {
    "batch_run",
    "why_load_run",
    "ch9_inst_run",
    "ch9_prio_run",
    "ch9_q_run",
    "ch9_little_run",
}
# One component on many pages: its options are cycled once per pass (on the first page that shows it), its buttons
# pressed on every page. Key pattern -> the component's name ({0}: the pattern's group, one control of several).
SHARED = {
    re.compile(r"_source$"): "the image picker",
    # which input, which protocol, which overlay: the same widgets on four DAGs (the send buttons and the output
    # toggles, which prune each DAG differently, are pressed on every one)
    re.compile(rf"^(?:{'|'.join(INSIDE_BOXES)})_(src|proto|colour)(?:_|$)"): "the inside view's {0}",
}


# radios a late run of the press before may hide (the toy's stream controls once its mode is back on the guide)
MAY_VANISH = frozenset({"toy_arrivals"})


def shared_component(key: str) -> str | None:
    """The SHARED component a widget key belongs to, or None."""
    for pattern, name in SHARED.items():
        found = pattern.search(key)
        if found:
            return name.format(*found.groups())
    return None


@dataclass(frozen=True)
class Scope:
    """How much of each page one pass presses (the suite has minutes, not hours, on two cores)."""

    # quiz questions answered (and checked) per chapter: each answer reruns a long page, and every question
    # runs the same code; the banks' text is checked in both languages by test_lessons
    quiz_questions: int = 1
    options: bool = True  # every option of radios and segmented controls, and toggles
    heavy: frozenset = PROTOCOL_LAB_RUNS  # the load tests that run (at their smallest settings; see HEAVY)
    buttons: bool = True  # False: only tabs and expanders (and the quiz): the page's text, not its runs


def _press(page, visit: Visit, item: dict) -> None:
    """Press one thing (every option of a radio or segmented control, then the one picked before)."""
    kind, key, n = item["kind"], item["key"], item["n"]
    what = f"{kind} {key or item['label']!r}"
    if key:
        visit.used.add(key)
    target = page.locator(f'[data-tk="{n}"]')
    started = time.monotonic()
    if kind in ("radio", "segmented"):
        option_q = "[data-testid=stRadioOption]" if kind == "radio" else "button"
        picked = item["picked"]
        if key.startswith(("tk_quiz_", "tk_predict_")):
            # a quiz answer or a prediction: the first choice (each other choice only changes what is stored)
            order = [0] if picked < 0 else []
        else:
            order = [i for i in range(item["options"]) if i != picked] + ([picked] if picked >= 0 else [])
        for i in order:  # ... and back to what it was: the rest of the page needs it (the sample photo)
            box = page.locator(f".st-key-{key}" if key else f'[data-tk="{n}"]')
            if not box.count():
                # a late run of the last press hid it (the toy's stream controls once its mode is back on
                # the guide): on a loaded machine that run can start seconds after the click
                settle(page, now(page), expect_run_s=3)
                if not box.count():
                    if key not in MAY_VANISH:
                        visit.problems.append(f"{visit.name}: {what} was gone before its option {i}")
                    return
            t0 = now(page)
            box.locator(option_q).nth(i).click()
            settle(page, t0, expect_run_s=RUN_STARTS_S)  # each click changes the value: a run follows
            visit.actions += 1
            visit.check(page, f"{what} option {i}")
        return
    if kind == "button" and key in PREPARE:
        PREPARE[key](page)
        target = page.locator(f".st-key-{key} button").first
    t0 = now(page)
    try:
        target.click(timeout=10_000)
    except (
        PlaywrightTimeout
    ):  # a rerun on a loaded machine redrew the page and dropped the tag: find it again
        settle(page, t0, expect_run_s=5)
        again = _found_again(page, item)
        t0 = now(page)
        again.click(timeout=30_000)
    # buttons, toggles and lazy (keyed) containers rerun the script; plain tabs and expanders, and downloads, do
    # not (waiting for a run after a download waited for the sidebar's next poll: ~1.5 s each, 20 per pass)
    reruns = (kind in ("button", "toggle") or key) and not item.get("download")
    settle(page, t0, expect_run_s=RUN_STARTS_S if reruns else 0)
    visit.actions += 1
    if time.monotonic() - started > 3:
        print(f"  {visit.name}: {what} took {time.monotonic() - started:.1f} s", flush=True)
    visit.check(page, what)
    if kind == "button" and key in AFTER:
        AFTER[key](page, visit)


def _item_id(item: dict) -> str:
    return item.get("id") or f"{item['kind']}:{item['key'] or item['label']}"


def _found_again(page, item: dict):
    """``item`` after a rerun redrew the page (a redrawn element lost its tag): tagged anew, the same thing in the
    same state (a closed expander stays the closed one of two with one label)."""
    same = [
        again
        for again in page.evaluate(_COLLECT)
        if _item_id(again) == _item_id(item) and again.get("selected") == item.get("selected")
    ]
    assert same, f"{item['kind']} {item['key'] or item['label']!r} is gone after a rerun"
    return page.locator(f'[data-tk="{same[0]["n"]}"]')


def crawl(page, visit: Visit, scope: Scope, shared: set[str]) -> None:
    """Press everything in scope once: widgets first, in document order, then the next closed tab or
    expander (so what a tab or expander reveals is pressed before the next one hides it)."""
    done: set[str] = set()
    quiz_left = scope.quiz_questions
    for _ in range(MAX_ACTIONS):
        todo = []
        for item in page.evaluate(_COLLECT):
            kind, key = item["kind"], item["key"]
            item_id = _item_id(item)
            component = shared_component(key)
            skip = (
                item_id in done
                or item.get("disabled")
                or (kind in ("tab", "expander") and item["selected"])
                or (kind == "radio" and key.startswith("tk_quiz_") and quiz_left <= 0)
                or (
                    not scope.options
                    and kind in ("radio", "segmented", "toggle")
                    and not key.startswith("tk_quiz")
                )
                or (kind == "button" and key in HEAVY and key not in scope.heavy)
                or (kind in ("button", "toggle") and not scope.buttons and not key.startswith("tk_quiz"))
                or (component is not None and component in shared)
            )
            if not skip:
                todo.append((kind in ("tab", "expander"), item["n"], item_id, component, item))
        if not todo:
            return
        _, _, item_id, component, item = min(todo, key=lambda x: x[:2])
        done.add(item_id)
        if item["kind"] == "radio" and item["key"].startswith("tk_quiz_"):
            quiz_left -= 1
        _press(page, visit, item)
        if component is not None:
            shared.add(component)
    visit.problems.append(f"{visit.name}: still finding new things to press after {MAX_ACTIONS} presses")


# -- pages --------------------------------------------------------------------------------------------------------
def open_page(context, base: str, slug: str, lang: str):
    page = context.new_page()
    page.add_init_script(_WATCH_RUNS)
    page.goto(f"{base}/{slug}?lang={lang}", wait_until="domcontentloaded")
    page.wait_for_selector("h1", timeout=60_000)
    wait_server_up(page)
    return page


def wait_server_up(page, timeout: float = SERVER_TIMEOUT_S) -> None:
    """The sidebar says the server is up (its green status box), and the page's run after that is done."""
    try:
        page.wait_for_selector(
            "[data-testid=stSidebar] [data-testid=stAlertContentSuccess]", timeout=timeout * 1000
        )
    except Exception as exc:  # noqa: BLE001 - say what the sidebar says instead
        side = page.locator("[data-testid=stSidebar]").inner_text()
        raise AssertionError(
            f"the server was not up after {timeout:.0f} s; the sidebar says:\n{side[-1500:]}"
        ) from exc
    settle(page)


def shoot(page, name: str) -> None:
    """The whole page (Streamlit scrolls inside its main block, so grow the viewport first)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    height = page.evaluate(
        "() => Math.max(...[...document.querySelectorAll('[data-testid=stMain], [data-testid=stMainBlockContainer]')]"
        ".map(e => e.scrollHeight), 900)"
    )
    page.set_viewport_size({"width": 1400, "height": min(int(height) + 40, 9000)})
    page.wait_for_timeout(300)
    page.screenshot(path=str(SHOTS / f"{name}.png"))
    page.set_viewport_size({"width": 1400, "height": 900})


def sidebar_controls(page, visit: Visit) -> None:
    """The sidebar's lazy expanders (models, log, the class box). (Auto-restart is an app-wide setting now, not a
    toggle.)"""
    side = page.locator("[data-testid=stSidebar]")
    for summary in side.locator("[data-testid=stExpander] summary").all():
        t0 = now(page)
        summary.click()
        settle(page, t0, expect_run_s=3)
        visit.actions += 1
        visit.check(page, f"sidebar expander {summary.inner_text().strip()!r}")


class Pass:
    """One language in one mode: one browser tab that goes from page to page through the sidebar's
    navigation, as a student does (a fresh tab per page would cost seconds each)."""

    def __init__(self, browser, base: str, mode: str, lang: str, scope: Scope) -> None:
        self.base, self.mode, self.lang, self.scope = base, mode, lang, scope
        self.context = browser.new_context(viewport={"width": 1400, "height": 900}, accept_downloads=True)
        self.page = None
        self.problems: list[str] = []
        self.timings: dict[str, dict] = {}
        self.shared: set[str] = set()
        self.reported = False  # by report(), or by another pass's report (InThread.teardown warns otherwise)

    def open(self, slug: str):
        """A fresh tab on ``slug`` (a new Streamlit session)."""
        return open_page(self.context, self.base, slug, self.lang)

    def _go(self, slug: str) -> None:
        if self.page is None:
            self.page = self.open(slug)
            return
        link = self.page.locator(f'[data-testid=stSidebarNav] a[href="{self.base}/{slug}"]')
        t0 = now(self.page)
        link.click()
        self.page.wait_for_url(
            re.compile(rf"^{re.escape(self.base)}/{re.escape(slug)}(\?.*)?$"), timeout=30_000
        )
        settle(self.page, t0, expect_run_s=RUN_STARTS_S)
        wait_server_up(self.page)

    def visit(self, slug: str, shot: bool = False, scope: Scope | None = None) -> None:
        t0 = time.monotonic()
        self._go(slug)
        page, visit = self.page, Visit(self.mode, self.lang, slug, self.problems)
        try:  # the sidebar's poller puts it back within a tick if the switch's URL update lost it
            page.wait_for_url(re.compile(rf"[?&]lang={self.lang}(&|$)"), timeout=5_000)
        except PlaywrightTimeout:
            raise AssertionError(f"{visit.name}: the language was lost on the way: {page.url}") from None
        visit.check(page, "opening")
        if not slug:
            sidebar_controls(page, visit)
        crawl(page, visit, scope or self.scope, self.shared)
        if self.lang == "zh":  # every box is open now: the whole page's Chinese, as Chromium lays it out
            for defect in cjk_rendering_defects(page.evaluate(RENDERED_TEXT_JS)):
                visit.problems.append(f"{visit.name}: Chinese rendered wrong: {defect}")
        if (shot and SHOT_EVERY_PAGE) or any(p.startswith(visit.name) for p in self.problems):
            shoot(page, f"click_{self.mode}_{slug or 'home'}_{self.lang}")
        self.timings[f"{self.mode}/{self.lang}/{slug or 'home'}"] = {
            "s": round(time.monotonic() - t0, 1),
            "presses": visit.actions,
        }
        print(f"{visit.name}: {time.monotonic() - t0:.1f} s, {visit.actions} presses", flush=True)

    def close(self) -> None:
        self.context.close()

    def report(self, extra: list[str] = ()) -> None:
        self.reported = True
        problems = [*extra, *self.problems]
        name = f"{self.mode}-{self.lang}"
        out = ROOT / "artifacts" / "click_everything.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        data = json.loads(out.read_text()) if out.exists() else {}
        data[name] = {"problems": problems, "timings": self.timings}
        out.write_text(json.dumps(data, indent=1, ensure_ascii=False))
        total = sum(t["s"] for t in self.timings.values())
        presses = sum(t["presses"] for t in self.timings.values())
        print(f"{name}: {len(self.timings)} pages, {presses} presses, {total:.0f} s")
        assert not problems, f"{len(problems)} problem(s) on screen:\n" + "\n".join(problems[:80])


# -- the apps and the passes -----------------------------------------------------------------------------------
# The two passes run at once (two cores; one pass keeps about one busy: it mostly waits for Chromium to draw
# and for the server to answer): Chinese in the test's own thread; English in a thread of its own with its own
# Playwright and Chromium (Playwright's sync API belongs to the thread that started it), against an app of its
# own, so that it can restart and kill its server without touching the other.
EMBEDDED = {"TRITON_HTTP_URL": None, "TRITON_GRPC_URL": None}  # no TRITON_* URL: the app's own server


@pytest.fixture(scope="module")
def embedded_app():
    """The app with its own embedded server, for the Chinese pass."""
    with conftest.streamlit_app(EMBEDDED, log_name="streamlit-click-embedded.log") as (url, proc):
        yield url, proc


class InThread:
    """``work(browser)`` in a thread of its own, with its own Playwright and Chromium; ``result()`` waits."""

    def __init__(self, work) -> None:
        self._value, self._error, self._collected = None, None, False
        self._thread = threading.Thread(target=self._run, args=(work,), daemon=True)
        self._thread.start()

    def _run(self, work) -> None:
        from playwright.sync_api import sync_playwright

        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=conftest.CHROMIUM, args=conftest.CHROMIUM_ARGS)
                try:
                    self._value = work(browser)
                finally:
                    browser.close()
        except BaseException as exc:  # noqa: BLE001 - raised again in the test's thread
            self._error = exc

    def join(self, timeout: float = 1800.0) -> None:
        self._thread.join(timeout)

    def teardown(self, name: str) -> None:
        """At the fixture's end: the pass must be over (its app stops next). What it found that no test reported
        (a deselected test) still surfaces, as a warning."""
        self.join(600)
        if self._thread.is_alive():
            pytest.fail(f"the {name} pass still runs as its app stops")
        import warnings

        if self._error is not None and not self._collected:
            warnings.warn(f"the {name} pass, whose test did not run, failed: {self._error!r}", stacklevel=1)
        parts = self._value if isinstance(self._value, tuple) else (self._value,)
        for run in (p for p in parts if isinstance(p, Pass) and not p.reported and p.problems):
            warnings.warn(
                f"the {name} thread's {run.mode}-{run.lang} pass, not reported: {run.problems}", stacklevel=1
            )

    def result(self, timeout: float = 1800.0):
        self._collected = True
        self.join(timeout)
        assert not self._thread.is_alive(), f"the pass still runs after {timeout:.0f} s"
        if self._error is not None:
            raise self._error
        return self._value


def _each_page(run: Pass, slugs, shots=(), scopes: dict | None = None) -> Pass:
    try:
        for slug in slugs:
            run.visit(slug, shot=slug in shots, scope=(scopes or {}).get(slug))
    finally:
        run.close()
    return run


@pytest.fixture(scope="module")
def en_pass():
    """The English pass, started at once in its own thread against its own app (see _english)."""
    with conftest.streamlit_app(EMBEDDED, log_name="streamlit-click-en.log") as (url, proc):
        running = InThread(lambda browser: _english(browser, url, proc))
        yield running
        running.teardown("English")


# The longest pages are pressed in full in English instead: the two passes run at once, so they share them out.
# The Chinese pass still opens their tabs and expanders and reads their Chinese; ch9's results in Chinese are
# AppTest's (tests/test_ch9.py).
FULL_IN_ENGLISH = frozenset({"ch9", "lab-batching", "lab-protocols"})
TEXT_ONLY = Scope(quiz_questions=0, options=False, heavy=frozenset(), buttons=False)  # tabs and expanders
# The Chinese pass's pages that the English pass's thread presses (in Chinese, after its English pages), so that
# both threads take about as long: the module is the parallel part's longest. Pages without a SHARED component,
# which a second pass would cycle again.
ZH_IN_THE_OTHER_THREAD = frozenset({"ch6", "ch8", "ch10", "lab-break"})


@pytest.mark.slow
@needs_chromium
def test_click_everything_zh(embedded_app, browser, en_pass):
    """Every page in Chinese (the default), everything pressed (options, buttons, a quiz answer per chapter) but on
    FULL_IN_ENGLISH's pages; each page's Chinese as rendered. ZH_IN_THE_OTHER_THREAD's pages are pressed by the
    English pass's thread, after its own: their findings are reported here."""
    run = Pass(browser, embedded_app[0], "embedded", "zh", Scope())
    here = [s for s in SLUGS if s not in ZH_IN_THE_OTHER_THREAD]
    _each_page(run, here, shots=SLUGS, scopes=dict.fromkeys(FULL_IN_ENGLISH, TEXT_ONLY))
    try:
        *_, other = en_pass.result()
    except BaseException as exc:  # noqa: BLE001 - the English test raises it again; report this pass's own
        run.report(
            [f"the English pass's thread failed, so {sorted(ZH_IN_THE_OTHER_THREAD)} went unpressed: {exc!r}"]
        )
        return
    other.reported = True
    run.timings |= other.timings
    run.report(other.problems)


def _flow_send(run: Pass, when: str, restart=None) -> str:
    """In a fresh tab (no earlier run on screen), restart the server the way ``restart`` does, then send one
    request in the flow lab; where its timeline came from, as the page says."""
    page = run.open("lab-flow")
    visit = Visit(run.mode, run.lang, "lab-flow", run.problems)
    try:
        if restart is not None:
            restart(page)
            visit.check(page, when)
        t0 = now(page)
        page.locator(".st-key-flow_send button").click()
        settle(page, t0, expect_run_s=RUN_STARTS_S)
        visit.check(page, f"flow_send {when}")
        text = norm(page.locator("[data-testid=stMain]").inner_text())
        source = next(
            (
                s
                for s in ("trace", "statistics", "recorded")
                if norm(UI[run.lang][f"lab_flow.source_{s}"]) in text
            ),
            "none",
        )
        # the test fails on anything but a live trace, or on a problem on the page
        if SHOT_EVERY_PAGE or source != "trace" or any(p.startswith(visit.name) for p in run.problems):
            shoot(page, f"click_restart_lab-flow_{when.replace(' ', '-')}_{run.lang}")
    finally:
        page.close()
    return source


def _restart_button(page) -> None:
    """The sidebar's restart button; the poller shows "restarting", then the page comes back by itself."""
    lang = "zh" if "lang=zh" in page.url else "en"
    button = page.locator("[data-testid=stSidebar] [data-testid=stButton] button").filter(
        has_text=UI[lang]["sidebar.restart"]
    )
    t0 = now(page)
    button.click()
    settle(page, t0, expect_run_s=RUN_STARTS_S)
    _wait_down_then_up(page)


def _wait_down_then_up(page) -> None:
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=stSidebar] [data-testid=stAlertContentSuccess]')",
        timeout=30_000,
    )
    wait_server_up(page)


def _english(browser, url: str, proc) -> tuple[Pass, dict[str, str], Pass]:
    """The embedded server restarted from the sidebar, then killed and brought back by auto-restart: the flow
    lab traces live after each; then FULL_IN_ENGLISH's pages in English, pressed in full. (The other pages' buttons,
    options, load tests and quiz ran in the Chinese pass, whose code is the same; their English, every box open, is
    read by tests/test_pages_in_apptest.py.) Then, in a tab of its own, the Chinese pass's share of the pages
    (ZH_IN_THE_OTHER_THREAD) on this app, whose server came back twice."""
    run = Pass(browser, url, "restart", "en", Scope())
    sources = {
        "before a restart": _flow_send(run, "before a restart"),
        "after the restart button": _flow_send(run, "after the restart button", _restart_button),
        "after auto-restart": _flow_send(
            run,
            "after auto-restart",
            lambda page: (conftest.kill_app_tritonserver(proc.pid), _wait_down_then_up(page)),
        ),
    }
    _each_page(run, [s for s in SLUGS if s in FULL_IN_ENGLISH], shots=FULL_IN_ENGLISH)
    zh = Pass(browser, url, "restart", "zh", Scope())
    return run, sources, _each_page(zh, [s for s in SLUGS if s in ZH_IN_THE_OTHER_THREAD], shots=SLUGS)


@pytest.mark.slow
@needs_chromium
def test_click_everything_en_after_restarts(en_pass):
    """The English pass (see _english): its findings, and a live trace in the flow lab after each restart."""
    run, sources, _ = en_pass.result()
    not_live = [
        f"restart/en /lab-flow: flow_send {when} showed the {source} timeline, not a live trace"
        for when, source in sources.items()
        if source != "trace"
    ]
    run.report(not_live)
