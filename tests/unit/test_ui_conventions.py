"""Conventions every page keeps, read from the code of ui/ and views/ (no app run, but one small AppTest page of
its own): no metric arrow for a number that is not a change, downloads that do not rerun the page, choice
options that are ids (words come from the string tables), inputs that keep their value across pages, tabs that
reopen where the reader left them, number formats, compared rows.

The same conventions seen on the running pages: tests/live/test_ui_conventions_live.py."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def _module(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _calls(methods: str | tuple[str, ...], *folders: str):
    """Every ``<something>.<method>(...)`` call (one method or several) in the folders' modules: (file name, line,
    node, keywords)."""
    methods = (methods,) if isinstance(methods, str) else methods
    for folder in folders:
        for path in sorted((ROOT / folder).glob("*.py")):
            for node in ast.walk(_module(path)):
                if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in methods:
                    yield path.name, node.lineno, node, {k.arg: k.value for k in node.keywords}


@functools.cache
def _assigned(name: str) -> dict[str, ast.AST]:
    """What each plain name is assigned in the views/ or ui/ module ``name`` (the last assignment wins)."""
    (path,) = [p for folder in ("views", "ui") for p in (ROOT / folder).glob(name)]
    return {
        target.id: node.value
        for node in ast.walk(_module(path))
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def test_no_metric_shows_an_arrow_for_a_number_that_is_not_a_change():
    """Every st.metric with a delta (ch4 "× 2.4", ch6 "17 words in 664 ms", ch7 "probability", ch8,
    the labs) hides the arrow: none of them is a change."""
    calls = [
        (name, line, getattr(kw.get("delta_arrow"), "value", None))
        for name, line, node, kw in _calls("metric", "views")
        if len(node.args) >= 3 or "delta" in kw
    ]
    assert len(calls) >= 8
    assert all(arrow == "off" for *_, arrow in calls), [c for c in calls if c[2] != "off"]


def test_a_download_does_not_rerun_the_page():
    """Every download button says ``on_click="ignore"``: saving a file changes nothing on the page, so the page
    does not run again (a lab's whole page redrawn for a CSV). The click test relies on it: it waits for no run
    after a download."""
    calls = [
        (name, line, getattr(kw.get("on_click"), "value", None))
        for name, line, _, kw in _calls("download_button", "views", "ui")
    ]
    assert len(calls) >= 7
    assert all(on_click == "ignore" for *_, on_click in calls), [c for c in calls if c[2] != "ignore"]


CHOICE_WIDGETS = ("radio", "selectbox", "segmented_control", "pills", "multiselect", "select_slider")


def _translated_or_bool(expr: ast.AST, assigned: dict[str, ast.AST]) -> bool:
    """Options that are words in this run's language (a ``t(...)`` call, or a dict keyed by them) or bools."""
    if isinstance(expr, ast.Call) and getattr(expr.func, "id", "") == "list" and expr.args:
        expr = expr.args[0]
    if isinstance(expr, ast.Name) and expr.id in assigned:
        expr = assigned[expr.id]
    if isinstance(expr, ast.DictComp):
        expr = expr.key
    elif isinstance(expr, ast.Dict):
        expr = ast.List(elts=[k for k in expr.keys if k is not None])
    calls_t = any(isinstance(n, ast.Call) and getattr(n.func, "id", "") == "t" for n in ast.walk(expr))
    bools = any(isinstance(n, ast.Constant) and isinstance(n.value, bool) for n in ast.walk(expr))
    return calls_t or bools


def test_choice_options_are_ids_not_words():
    """A radio, select box or segmented control takes ids as its options and shows words through
    ``format_func``. Streamlit sends a choice back as its label: options that are this run's words, or bools,
    cannot be pinned across a language switch (``ui.i18n.set_lang``), and the choice falls back to the default."""
    found = [
        (name, line, node.args[1] if len(node.args) > 1 else kw["options"])
        for name, line, node, kw in _calls(CHOICE_WIDGETS, "views", "ui")
        if len(node.args) > 1 or "options" in kw
    ]
    assert len(found) >= 30
    bad = [f"{name}:{line}" for name, line, options in found if _translated_or_bool(options, _assigned(name))]
    assert not bad, bad


# every Streamlit input that takes persist_state (1.60)
KEEPS_STATE = (*CHOICE_WIDGETS, "checkbox", "toggle", "slider", "number_input", "text_input", "text_area")
# confirmations are never kept: the teacher ticks "I'm sure" again on each visit before deleting a class's data
NOT_KEPT = ("tk_teacher_reset_sure",)


def test_every_input_keeps_its_value_across_pages():
    """Every keyed input says ``persist_state="session"``: a trip to another page and back keeps the reader's
    settings, text and predictions (Streamlit forgets a widget that is not drawn), so a lab's result is never
    shown under settings that did not make it. Confirmations (NOT_KEPT) are the exception."""
    calls = [
        (name, line, ast.unparse(kw["key"]), getattr(kw.get("persist_state"), "value", None))
        for name, line, _, kw in _calls(KEEPS_STATE, "views", "ui")
        if "key" in kw
    ]
    confirmations = [c for c in calls if any(k in c[2] for k in NOT_KEPT)]
    kept = [c for c in calls if c not in confirmations]
    assert len(kept) >= 60 and len(confirmations) == len(NOT_KEPT)
    assert all(scope == "session" for *_, scope in kept), [c for c in kept if c[3] != "session"]
    assert all(scope is None for *_, scope in confirmations), confirmations


def _tabs_app() -> None:
    import streamlit as st

    from ui import boxes

    words = st.session_state.get("words", "en")
    if st.session_state.get("shown", True):  # False: the reader is on another page
        tabs = boxes.remembered_tabs("tabs", {k: f"{k} ({words})" for k in ("one", "two", "three")})
        st.session_state["open"] = [tab.open for tab in tabs]


@pytest.mark.app
def test_tabs_open_on_the_tab_the_reader_left_open():
    """ui.boxes.remembered_tabs: the tab the reader picked stays open after new labels (a language switch) and
    after the tabs were not drawn for a while (a page switch); a plain st.tabs opens its first tab again."""
    at = AppTest.from_function(_tabs_app, default_timeout=30)
    at.run()
    assert at.session_state["open"] == [True, False, False]
    at.session_state["tabs"] = "three (en)"  # what a click on the third tab does
    at.run()
    assert at.session_state["open"] == [False, False, True]
    at.run()  # a rerun keeps it
    assert at.session_state["open"] == [False, False, True]
    at.session_state["words"] = "zh"
    at.run()
    assert at.session_state["open"] == [False, False, True]
    at.session_state["shown"] = False
    at.run()
    at.session_state["shown"] = True
    at.run()
    assert at.session_state["open"] == [False, False, True]


def test_number_format():
    from ui.tables import number_format

    assert number_format([1, 602_116]) == "%,d"
    assert number_format([59.7, 34.97]) == "%,.1f"
    assert number_format([59.7, None], 2) == "%,.2f"
    assert number_format(["grpc", 1]) is None and number_format([None]) is None


def test_compared_rows_put_the_things_across_and_write_each_measure_alike():
    from ui.tables import compared_rows

    rows = compared_rows(
        {"FIFO": {"ranks": "33, 34", "mean": 294.84, "refused": 0, "pause": 69.0},
         "priority": {"ranks": "11, 12", "mean": 139.2, "refused": 1200, "pause": float("nan")}},
        "measure",
    )  # fmt: skip
    assert [r["measure"] for r in rows] == ["ranks", "mean", "refused", "pause"]
    assert rows[0] == {"measure": "ranks", "FIFO": "33, 34", "priority": "11, 12"}
    assert (rows[1]["FIFO"], rows[1]["priority"]) == ("294.8", "139.2")  # one decimal down the row
    assert (rows[2]["FIFO"], rows[2]["priority"]) == ("0", "1,200")  # whole numbers, thousands separated
    assert rows[3]["priority"] is None  # shown as the table's placeholder, never "nan"
