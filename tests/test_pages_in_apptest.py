"""Every page with everything drawn, through AppTest against the real server, read with the click test's checks.

The browser's click test (tests/test_click_everything.py) presses what only a browser shows: widgets as Chromium
draws them, Chinese as it lays it out, restarts seen from a tab. What a page *says*, in each language and on a
remote server, is the script's work, and AppTest reads it without Chromium's cost (a browser rerun costs 0.2-0.7 s
of CPU, most of the suite's time: benchmarks/rerun_cost.py):
- every page in both languages on the app's embedded server, every lesson section, quiz and lazy box open (the
  sidebar's too): no exception, no error box, no generic message, no untranslated string (tests/_screen_checks.py),
  labels, options, tooltips, tables' columns and charts included;
- on a remote server (no control API, repository or trace), every button of each page that behaves differently
  there, pressed once (the batching lab's run at its smallest settings): a demo that needs the embedded server
  says so in Chinese, with no error box the page did not mean.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _screen_checks import apptest_screen, meant_error, problems_on_screen
from conftest import switch_page
from streamlit.testing.v1 import AppTest

from ui import boxes, pages

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
TIMEOUT = 120  # one run: the batching lab's run at its smallest settings takes ~20 s on two loaded cores
HOME = ""  # the welcome page: AppTest's default page
EVERY_PAGE = {HOME: None} | {p.url: p.path for p in pages.PAGES}
# pages whose buttons run the same code on either server (no repository, trace, metrics or statistics-only path):
# every other page's buttons are pressed on a remote server (a new page is, until it is named here)
SAME_ON_A_REMOTE = frozenset({HOME, "ch1", "ch4", "ch5", "ch6", "ch7", "lab-break", "lab-protocols"})
DIFFERENT_ON_A_REMOTE = [slug for slug in EVERY_PAGE if slug not in SAME_ON_A_REMOTE]
# load tests: the batching lab's run is pressed (at its smallest settings); the protocol lab's and the offered
# load sweep are timed by their own tests
NOT_PRESSED = frozenset({"proto_load_run", "proto_sweep_run", "proto_check_run", "why_load_run"})
SMALLEST = {"batch_run": {"batch_c": 1, "batch_d": 1}}  # before a load test: its settings' smallest values
# lazy boxes outside the lesson sections, open too: the sidebar's models table and log, the class box
SIDEBAR_BOXES = ("tk_models_open", "tk_log_open", "tk_class_join_open")
MAX_PRESSES = 80  # per page: a page that keeps growing new buttons is a bug, not a reason to hang


def open_page(slug: str, lang: str) -> AppTest:
    """``slug`` in ``lang``, every box open: the lesson's (conftest.open_every_box) and the sidebar's."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = lang
    if EVERY_PAGE[slug] is not None:
        switch_page(at, EVERY_PAGE[slug])
    at.session_state[boxes.OPEN_BOXES] = {boxes.ALL_OPEN: True} | dict.fromkeys(SIDEBAR_BOXES, True)
    return at.run()


def problems(at: AppTest, lang: str, slug: str, used: set[str], after: str) -> list[str]:
    meant = lambda text: meant_error(text, lang, slug, used)  # noqa: E731
    return [
        f"/{slug} ({lang}) after {after}: {p}" for p in problems_on_screen(apptest_screen(at), lang, meant)
    ]


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_page_says_it_in_its_language(embedded, lang):
    """Every page on the embedded server, every box open: nothing wrong on screen, in the page's language."""
    found = []
    for slug in EVERY_PAGE:
        at = open_page(slug, lang)
        assert at.main.children, f"/{slug} drew nothing"
        found += problems(at, lang, slug, set(), "opening")
    assert not found, f"{len(found)} problem(s):\n" + "\n".join(found)


def press_every_button(at: AppTest, lang: str, slug: str) -> tuple[list[str], int]:
    """Each enabled button of the page's main area once (new ones a press reveals too), each press a run; what
    is wrong after each, and how many were pressed."""
    used: set[str] = set()
    pressed: set[str] = set()
    found = problems(at, lang, slug, used, "opening")
    for _ in range(MAX_PRESSES):
        todo = [
            b
            for b in at.main.button
            if b.id not in pressed and not b.disabled and (b.key or "") not in NOT_PRESSED
        ]
        if not todo:
            return list(dict.fromkeys(found)), len(pressed)
        button = todo[0]
        pressed.add(button.id)
        used.add(button.key or "")
        for slider, value in SMALLEST.get(button.key, {}).items():
            at.slider(key=slider).set_value(value)
        button.click()
        at.run()
        found += problems(at, lang, slug, used, f"button {button.key or button.label!r}")
    return [*found, f"/{slug}: still finding new buttons after {MAX_PRESSES} presses"], len(pressed)


@pytest.mark.slow
@pytest.mark.parametrize("slug", DIFFERENT_ON_A_REMOTE)
def test_every_button_on_a_remote_server(remote, slug):
    """The app pointed at a remote server, in Chinese: every button of a page that behaves differently there."""
    found, presses = press_every_button(open_page(slug, "zh"), "zh", slug)
    assert presses, f"/{slug}: no button pressed"
    assert not found, f"{len(found)} problem(s):\n" + "\n".join(found)
