"""The app's plumbing, without a server: one way from an error to its message (and a message for every code the
library raises), a click that arrives after its button was disabled, an unexpected error logged not shown, a
lab run's result or busy, the page table (small AppTest pages of their own).

The tests that need the server, the app or a browser: tests/live/test_app_live.py."""

from __future__ import annotations

import re

import pytest
from _shared.app import CHAPTER_PAGES, ROOT, TIMEOUT
from streamlit.testing.v1 import AppTest

from triton_kitchen.core import lessons


def test_one_way_from_an_error_to_its_message():
    """ui.errors.message_for: a KitchenError by its code, source-specific words first, shared codes, the
    generic message last; today's texts of the flow and batching labs kept."""
    from triton_kitchen.core.errors import KitchenError
    from triton_kitchen.core.kserve import KServeError
    from triton_kitchen.core.override import BatchingError
    from triton_kitchen.tools.flow import FlowError
    from triton_kitchen.tools.protocols import ProtocolError
    from ui.errors import message_for

    flow = message_for(FlowError("bad_config", "line 1"), "en")
    assert flow.text == "This config cannot be read (protobuf text format)." and not flow.warning
    limit = message_for(BatchingError("refused", "no_control_api"), "zh")
    assert limit.key == "error.batching_no_control_api" and limit.warning
    assert message_for(FlowError("no_control_api", "x"), "en").key == "error.flow_no_control_api"
    assert message_for(FlowError("not_ensemble", "x"), "en").key == "error.not_ensemble"
    assert message_for(BatchingError("bad", "bad_settings"), "en").key == "error.bad_settings"
    refused = ProtocolError("refused", "connection")
    assert message_for(refused, "en").key == "error.server_unreachable"
    assert message_for(refused, "en", remote=True).key == "error.server_unreachable_remote"
    assert message_for(KServeError("http", "HTTP 400"), "en").key == "error.server_error"
    assert message_for(KitchenError("no_such_code", "?"), "en").generic
    assert message_for(ValueError("bug"), "en").generic
    assert message_for("model_not_ready", "zh").text == lessons.t("error.model_not_ready", "zh")


def test_every_code_the_library_raises_has_its_own_message():
    """Each literal code a KitchenError is raised with in the library (``XError("code", ...)``) reads a message
    of its own in both languages, not the generic one (the remote click pass found ch10's metrics demo showing
    "something went wrong" for a closed metrics port)."""
    import importlib
    import pkgutil

    import triton_kitchen
    from triton_kitchen.core.errors import KitchenError
    from ui.errors import message_for

    for module in pkgutil.walk_packages(triton_kitchen.__path__, "triton_kitchen."):
        importlib.import_module(module.name)

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    classes = {c.__name__: c for c in subclasses(KitchenError)}
    names = "|".join(classes)
    raised = re.compile(rf"\b({names})\(\s*\"([a-z_]+)\"")
    found, generic = set(), []
    for path in sorted((ROOT / "triton_kitchen").rglob("*.py")):
        for name, code in raised.findall(path.read_text(encoding="utf-8")):
            if name == "TraceError":  # caught where raised: the flow lab falls back, never shows it
                continue
            error = classes[name].__new__(classes[name])
            error.code = code
            found.add((name, code))
            generic += [(name, code, lang) for lang in lessons.LANGS if message_for(error, lang).generic]
    assert len(found) > 10 and ("MetricsError", "metrics_unreachable") in found
    assert not generic, generic


def _run_button_page():
    import streamlit as st

    from ui import server

    off = st.session_state.get("off", False)
    st.session_state["plain"] = st.button("plain", key="b1", disabled=off)
    st.session_state["guarded"] = server.run_button("guarded", key="b2", disabled=off)


@pytest.mark.app
def test_a_click_that_arrives_after_the_button_was_disabled_runs_nothing():
    """A click made while the button was enabled arrives with the next run; when that run draws it disabled
    (the server went away meanwhile), st.button still says True: run_button does not."""
    at = AppTest.from_function(_run_button_page, default_timeout=30)
    at.run()
    at.button(key="b1").click()
    at.button(key="b2").click()
    at.session_state["off"] = True  # this run finds the server gone
    at.run()
    assert at.session_state["plain"] is True  # Streamlit's own button: the trap
    assert at.session_state["guarded"] is False
    at.session_state["off"] = False
    at.button(key="b2").click().run()
    assert at.session_state["guarded"] is True


def _error_page():
    from ui.errors import show_error

    try:
        raise ValueError("a bug, not a student's mistake")
    except ValueError as exc:
        show_error(exc, "en")


@pytest.mark.app
def test_an_unexpected_error_is_logged_with_its_traceback_not_shown(caplog):
    at = AppTest.from_function(_error_page, default_timeout=TIMEOUT)
    with caplog.at_level("WARNING", logger="ui.errors"):
        at.run()
    assert not at.exception
    assert [e.value for e in at.error] == [lessons.t("error.unexpected", "en")]
    assert "Traceback" not in " ".join(c.value for c in at.code)
    records = [r for r in caplog.records if r.name == "ui.errors"]
    assert records and records[0].exc_info and "a bug" in str(records[0].exc_info[1])


def _budget_page():
    import streamlit as st

    from triton_kitchen.core.budget import LAB_BUDGET
    from ui import server

    st.session_state["free"] = server.lab_run(1, lambda: 42)
    with LAB_BUDGET.hold(LAB_BUDGET.total):
        st.session_state["taken"] = server.lab_run(1, lambda: 43)


@pytest.mark.app
def test_lab_run_returns_the_result_or_busy():
    from ui.server import BUSY

    at = AppTest.from_function(_budget_page, default_timeout=TIMEOUT)
    at.query_params["lang"] = "en"
    at.run()
    assert at.session_state["free"] == 42 and at.session_state["taken"] is BUSY
    assert len(at.warning) == 1


def test_page_table_is_the_apps():
    """ui/pages.py is the one page table: every script exists, URLs are unique and unchanged."""
    from ui import pages

    assert [p.url for p in pages.PAGES] == [
        "ch1",
        "ch2",
        "ch3",
        "ch4",
        "ch5",
        "ch6",
        "ch7",
        "ch8",
        "ch9",
        "ch10",
        "ch11",
        "lab-protocols",
        "lab-batching",
        "lab-flow",
        "lab-break",
        "lab-doctor",
    ]
    assert all((ROOT / p.path).is_file() for p in pages.PAGES)
    assert [p.path for p in pages.CHAPTERS] == CHAPTER_PAGES
    assert "views/" not in (ROOT / "app.py").read_text()  # app.py builds its navigation from the table
