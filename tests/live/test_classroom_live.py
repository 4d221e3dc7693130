"""The class database on a real SQLite file and a real PostgreSQL server (Debian's package, started here):
students without accounts, answers that survive and are never lost or doubled, the ``class report`` command.

The tests of this topic that need no server, app or browser: tests/unit/test_classroom.py."""

from __future__ import annotations

import pytest
from _shared.classroom import AMY, first_question_id

from triton_kitchen.classroom import (
    ClassStore,
)


@pytest.mark.app
def test_the_teachers_desk_needs_the_token(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("TRITON_KITCHEN_DATABASE_URL", f"sqlite:///{tmp_path / 'class.db'}")
    s = ClassStore(f"sqlite:///{tmp_path / 'class.db'}")
    s.record_answer(AMY, 1, first_question_id(), 1, False)
    s.dispose()
    import streamlit as st

    st.cache_resource.clear()
    monkeypatch.delenv("TRITON_KITCHEN_TEACHER_TOKEN", raising=False)
    no_token = AppTest.from_file("views/teacher.py", default_timeout=30)
    no_token.query_params["lang"] = "en"
    no_token.run()
    assert no_token.info and "TRITON_KITCHEN_TEACHER_TOKEN" in no_token.info[0].value
    assert not no_token.metric
    monkeypatch.setenv("TRITON_KITCHEN_TEACHER_TOKEN", "s3cret")
    student = AppTest.from_file("views/teacher.py", default_timeout=30)
    student.query_params["teacher"] = "guess"
    student.run()
    assert not student.metric
    teacher = AppTest.from_file("views/teacher.py", default_timeout=30)
    teacher.query_params["lang"] = "en"
    teacher.query_params["teacher"] = "s3cret"
    teacher.run()
    assert [m.value for m in teacher.metric] == ["1", "1", "0"]
    assert teacher.get("download_button")
    # projector mode from the desk, and the desk shows it off again after the projector's own bar left it
    from ui import present

    teacher.toggle(key=present.TEACHER_TOGGLE).set_value(True).run()
    assert teacher.session_state["tk_present"] is True and teacher.query_params["present"] == ["1"]
    teacher.session_state["tk_present"] = False  # what the bar's "leave" (present.set_presenting) does
    del teacher.query_params["present"]
    teacher.run()
    assert teacher.toggle(key=present.TEACHER_TOGGLE).value is False


@pytest.mark.browser
def test_the_browser_remembers_the_student_on_a_return_visit(browser, app_url):
    """Joined once (the URL), a later visit without the URL's names is the same student again (the suite's
    shared app, with a class database of its own)."""
    base = app_url
    ctx = browser.new_context()
    first = ctx.new_page()
    first.goto(f"{base}/ch2?lang=en&student=amy&class=t-101")
    first.get_by_text("In class").wait_for(timeout=30_000)
    first.wait_for_function("document.cookie.includes('tk_student=amy:t-101')", timeout=10_000)
    again = ctx.new_page()
    again.goto(f"{base}/ch3?lang=en")  # no names in the URL
    again.get_by_text("In class").wait_for(timeout=30_000)
    assert "student=amy" in again.url and "class=t-101" in again.url
    stranger = browser.new_context().new_page()  # another browser: nobody
    stranger.goto(f"{base}/ch3?lang=en")
    stranger.get_by_text("Join your class").wait_for(timeout=30_000)
    assert "student=" not in stranger.url
    ctx.close()


@pytest.mark.app
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_protocol_labs_first_button_is_kept_for_the_class(server, monkeypatch, tmp_path, lang):
    """The lab's first, prominent button ("same input, three ways") is kept for the class like its load runs:
    the page says so, the database has the run, and the teacher's desk counts it and shows it per protocol."""
    from pathlib import Path

    import conftest
    import streamlit as st
    from conftest import switch_page
    from streamlit.testing.v1 import AppTest

    from triton_kitchen.core import lessons
    from ui import classroom as class_ui

    db = f"sqlite:///{tmp_path / 'class.db'}"
    monkeypatch.setenv("TRITON_KITCHEN_DATABASE_URL", db)
    monkeypatch.setenv("TRITON_KITCHEN_TEACHER_TOKEN", "s3cret")
    st.cache_resource.clear()
    conftest.use_remote(monkeypatch, server)
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=60)
    at.query_params.update(lang=lang, student="陈同学", **{"class": "k8s-101"})
    switch_page(at, "views/lab_protocols.py")
    at.run()
    at.button(key="proto_bytes_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert lessons.t("class.saved_runs", lang, n=1) in [c.value for c in at.caption]
    store = ClassStore(db)
    (run,) = store.lab_runs("k8s-101", class_ui.PROTOCOL_COMPARE)
    assert run["nickname"] == "陈同学" and run["figures"]["same_result"] is True
    assert set(run["figures"]["protocols"]) == {"http-json", "http-binary", "grpc"}
    store.dispose()
    desk = AppTest.from_file("views/teacher.py", default_timeout=30)
    desk.query_params.update(lang=lang, teacher="s3cret")
    desk.run()
    assert [m.value for m in desk.metric][2] == "1"  # lab runs
    table = desk.dataframe[-1].value
    assert len(table) == 3 and list(table.columns)[1] == lessons.t("teacher.col_runs", lang)
    assert lessons.t("teacher.no_labs", lang) not in [c.value for c in desk.caption]
