"""Every page, read and pressed through AppTest against the real server: the suite's exhaustive reader of pages.

A browser rerun costs 0.2-0.7 s of CPU (benchmarks/rerun_cost.py); what a page *says*, in each language and on
either server, is the script's work, and AppTest reads it without Chromium's cost. What only a browser shows
(Chinese as Chromium lays it out, images loading, downloads, fragments and tabs during a run, a restart seen from a
tab) is tests/browser/test_browser.py's and tests/browser/test_push.py's, from a declared list per page.
- every page in both languages, on the app's embedded server and on a remote one (no control API, repository or
  trace), every lesson section, quiz and lazy box open (the sidebar's too): no exception, no error box, no generic
  message, no untranslated string (tests/_screen_checks.py), labels, options, tooltips, tables' columns and charts
  included; a chapter's title is its lesson's, and its map of a request's life marks its own stages;
- every button, every option of each radio and segmented control, and every toggle of each page's main area, once,
  each a run, read after each: on the embedded server on every page, and on a remote server on each page that
  behaves differently there (a demo that needs the embedded server says so, with no error box the page did not
  mean); a quiz answered once per chapter.
"""

from __future__ import annotations

import pytest
from _screen_checks import apptest_screen, meant_error, problems_on_screen
from conftest import open_app_page
from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.testing.v1 import AppTest

from triton_kitchen.core import lessons, request_map
from ui import pages

TIMEOUT = 120  # one run: the batching lab's run at its smallest settings takes ~20 s on two loaded cores
HOME = ""  # the welcome page: AppTest's default page
EVERY_PAGE = {HOME: None} | {p.url: p.path for p in pages.PAGES}
CHAPTER = {p.url: int(p.url[2:]) for p in pages.PAGES if p.url.startswith("ch") and p.url[2:].isdigit()}
# pages whose buttons run the same code on either server (no repository, trace, metrics or statistics-only path):
# every other page's buttons are pressed on a remote server too (a new page is, until it is named here)
SAME_ON_A_REMOTE = frozenset({HOME, "ch1", "ch4", "ch5", "ch6", "ch7", "lab-break", "lab-protocols"})
PRESSED = [("embedded", slug) for slug in EVERY_PAGE] + [
    ("remote", slug) for slug in EVERY_PAGE if slug not in SAME_ON_A_REMOTE
]
# load tests: the batching lab's run is pressed (at its smallest settings); the protocol lab's, the offered load
# sweep and chapter 9's measurements are run and read by their own tests (test_protocols, test_batching_why,
# test_ch9), the protocol lab's in Chromium too (test_browser)
NOT_PRESSED = frozenset({"proto_load_run", "proto_sweep_run", "proto_check_run", "why_load_run"})
SMALLEST = {"batch_run": {"batch_c": 1, "batch_d": 1}}  # before a load test: its settings' smallest values
MAX_PRESSES = 120  # per page: a page that keeps growing new controls is a bug, not a reason to hang


def open_page(slug: str, lang: str) -> AppTest:
    """``slug`` in ``lang``, every box open: the lesson's and the sidebar's."""
    return open_app_page(EVERY_PAGE[slug], lang, timeout=TIMEOUT, boxes="all", check=False)


def problems(at: AppTest, lang: str, slug: str, used: set[str], after: str) -> list[str]:
    meant = lambda text: meant_error(text, lang, slug, used)  # noqa: E731
    return [
        f"/{slug} ({lang}) after {after}: {p}" for p in problems_on_screen(apptest_screen(at), lang, meant)
    ]


def chapter_problems(at: AppTest, lang: str, slug: str) -> list[str]:
    """A chapter's title is its lesson's; its map of a request's life marks this chapter's stages as badges."""
    chapter = CHAPTER[slug]
    found = []
    if not at.title or at.title[0].value != lessons.load_lesson(chapter, lang).title:
        found.append(f"/{slug} ({lang}): title {[t.value for t in at.title][:1]}")
    head = lessons.t("map.title", lang)
    mapped = next((m.value for m in at.markdown if m.value.startswith(head)), "")
    for stage, on in request_map.stages(chapter):
        label = lessons.t(f"map.{stage}", lang)
        if (f":orange-badge[{label}]" if on else f":gray[{label}]") not in mapped:
            found.append(f"/{slug} ({lang}): the request map's {stage} is not {'on' if on else 'off'}")
    return found


@pytest.mark.app
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_page_says_it_in_its_language(app_server, request, lang):
    """Every page on this server, every box open: nothing wrong on screen, in the page's language."""
    found = []
    for slug in EVERY_PAGE:
        at = open_page(slug, lang)
        assert at.main.children, f"/{slug} drew nothing"
        found += problems(
            at, lang, slug, set(), f"opening on the {request.node.callspec.params['app_server']}"
        )
        if slug in CHAPTER:
            found += chapter_problems(at, lang, slug)
    assert not found, f"{len(found)} problem(s):\n" + "\n".join(found)


def _picked(widget, state: WidgetState):
    """``widget`` whose next run sends ``state``, as a click on one of its options does in the browser (AppTest
    sets a radio or segmented control by value, which a generic test does not know)."""
    widget.__class__ = type(
        type(widget).__name__, (type(widget),), {"_widget_state": property(lambda _: state)}
    )
    return widget


def _options(widget, first: dict[str, int]) -> list[int]:
    """A radio's or segmented control's options in the order pressed: the others, then the one picked when the
    page opened (the rest of the page may need it: the sample photo)."""
    if widget.id not in first:
        picked = widget.index if widget.type == "radio" else (widget.indices or [-1])[0]
        first[widget.id] = -1 if picked is None else picked
    picked = first[widget.id]
    return [i for i in range(len(widget.options)) if i != picked] + ([picked] if picked >= 0 else [])


def _controls(at: AppTest, first: dict[str, int]) -> list[tuple[str, object]]:
    """What a student can press in the main area, each with an id: buttons, then every option of each radio and
    segmented control (a quiz's or prediction's first choice only), then each toggle and checkbox."""
    out = []
    for b in at.main.button:
        if not b.disabled and (b.key or "") not in NOT_PRESSED:
            out.append((f"button:{b.id}", b))
    for r in at.main.radio:
        if r.disabled:
            continue
        key = r.key or ""
        options = [0] if key.startswith(("tk_quiz_", "tk_predict_")) else _options(r, first)
        out += [(f"radio:{r.id}:{i}", (r, i)) for i in options]
    for g in at.main.get("button_group"):
        if not g.disabled and g._is_single_select:
            out += [(f"segmented:{g.id}:{i}", (g, i)) for i in _options(g, first)]
    for t in [*at.main.toggle, *at.main.checkbox]:
        if not t.disabled:
            out.append((f"toggle:{t.id}", t))
    return out


def _press(at: AppTest, what) -> str:
    """Press one control (its settings at their smallest before a load test); its name for the report."""
    if isinstance(what, tuple):
        widget, i = what
        state = WidgetState(id=widget.id)
        if widget.type == "radio":
            state.string_value = widget.options[i]
        else:
            state.string_array_value.data[:] = [widget.options[i]]
        _picked(widget, state)
        return f"{widget.type} {widget.key or widget.label!r} option {i}"
    if what.type == "button":
        for slider, value in SMALLEST.get(what.key, {}).items():
            at.slider(key=slider).set_value(value)
        what.click()
        return f"button {what.key or what.label!r}"
    what.set_value(not what.value)
    return f"{what.type} {what.key or what.label!r}"


def press_everything(at: AppTest, lang: str, slug: str) -> tuple[list[str], int]:
    """Each control of the page's main area once (new ones a press reveals too), each press a run; what is wrong
    after each, and how many were pressed. A quiz: one question answered per chapter."""
    used: set[str] = set()
    pressed: set[str] = set()
    quiz_answered = False
    first: dict[str, int] = {}
    found = problems(at, lang, slug, used, "opening")
    for _ in range(MAX_PRESSES):
        todo = [
            (name, what)
            for name, what in _controls(at, first)
            if name not in pressed
            and not (quiz_answered and name.startswith("radio:") and "tk_quiz_" in name)
        ]
        if not todo:
            return list(dict.fromkeys(found)), len(pressed)
        name, what = todo[0]
        pressed.add(name)
        widget = what[0] if isinstance(what, tuple) else what
        used.add(widget.key or "")
        quiz_answered = quiz_answered or (widget.key or "").startswith("tk_quiz_")
        after = _press(at, what)
        at.run()
        found += problems(at, lang, slug, used, after)
    return [*found, f"/{slug}: still finding new controls after {MAX_PRESSES} presses"], len(pressed)


@pytest.mark.app
@pytest.mark.slow
@pytest.mark.parametrize(("mode", "slug"), PRESSED, ids=[f"{m}-{s or 'home'}" for m, s in PRESSED])
def test_everything_pressed(request, server, mode, slug):
    """In Chinese on the embedded server (every page) and on a remote one (the pages that differ there)."""
    request.getfixturevalue(mode)
    found, presses = press_everything(open_page(slug, "zh"), "zh", slug)
    assert presses or slug == HOME, f"/{slug}: nothing pressed"
    assert not found, f"{len(found)} problem(s):\n" + "\n".join(found)


@pytest.mark.app
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_each_of_chapter_7s_mistakes_shows_its_own_error(embedded, lang):
    """Chapter 7's "break it" list: the tutorial's client run once with each mistake shows an error box, the
    mistake's own message (MEANT_ERRORS), and nothing else wrong on the page."""
    from triton_kitchen.labs.demo import MISTAKES

    at = open_page("ch7", lang)
    found = []
    for mistake in MISTAKES[1:]:
        at.selectbox(key="ch7_mistake").set_value(mistake)
        at.button(key="ch7_run").click()
        at.run()
        if not at.main.error:
            found.append(f"mistake {mistake!r} showed no error")
        found += problems(at, lang, "ch7", {"ch7_mistake", "ch7_run"}, f"ch7_mistake={mistake!r} + ch7_run")
    assert not found, "\n".join(found)
