"""The teacher's desk and the teacher's view, without a server: who is where after a lab run, the teacher kept
across a refresh with the token out of the address bar, the projector's home text, the question table and the
charts' colours and ticks (small AppTest pages and the desk's own script on a SQLite file).

The desk against a live server and the browser: tests/live/test_classroom_live.py, tests/browser/."""

from __future__ import annotations

import json

import pytest
from _postgres import pg_bindir, postgres_server
from _shared.classroom import AMY, first_question_id
from streamlit.testing.v1 import AppTest

from triton_kitchen.classroom import ClassStore, Student
from triton_kitchen.core import lessons
from triton_kitchen.tools.bench_figures import PROTOCOL_COLORS

TOKEN = "s3cret"


@pytest.fixture(scope="module")
def pg_url():
    if pg_bindir() is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql; .ci/run installs it)")
    with postgres_server() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    if request.param == "sqlite":
        s = ClassStore(f"sqlite:///{tmp_path / 'class.db'}")
    else:
        s = ClassStore(request.getfixturevalue("pg_url"))
        for code in s.classes():
            s.reset_class(code)
    yield s
    s.dispose()


# -- who is where ------------------------------------------------------------------------------------------------
def test_a_lab_run_or_an_answer_keeps_the_page_the_student_is_on(store):
    """A student on the batching lab who runs it stays on the batching lab (the run's write used to set the
    page to "", which the desk shows as the welcome page); a page view of the welcome page still moves them."""
    store.seen(AMY, "lab-batching")
    store.record_lab_run(AMY, "batching", {"concurrency": 8, "ratio": 1.1})
    assert [s["page"] for s in store.students("t-101")] == ["lab-batching"]
    store.seen(AMY, "ch1")
    store.record_answer(AMY, 1, "ch1-role", 2, True)
    assert [s["page"] for s in store.students("t-101")] == ["ch1"]
    store.seen(AMY, "")  # the welcome page, at /
    assert [s["page"] for s in store.students("t-101")] == [""]
    erin = Student("erin", "t-101")  # first seen through a write: no page yet
    store.record_answer(erin, 1, "ch1-role", 0, False)
    assert {s["nickname"]: s["page"] for s in store.students("t-101")}["erin"] == ""


def _desk(tmp_path, monkeypatch, lang: str = "en", **params: str) -> AppTest:
    import streamlit as st

    monkeypatch.setenv("TRITON_KITCHEN_DATABASE_URL", f"sqlite:///{tmp_path / 'class.db'}")
    monkeypatch.setenv("TRITON_KITCHEN_TEACHER_TOKEN", TOKEN)
    st.cache_resource.clear()  # the app-wide store is made again, on this test's database
    at = AppTest.from_file("views/teacher.py", default_timeout=30)
    at.query_params.update(lang=lang, teacher=TOKEN, **params)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.app
def test_the_desk_shows_a_student_who_ran_the_batching_lab_on_the_batching_lab(tmp_path, monkeypatch):
    s = ClassStore(f"sqlite:///{tmp_path / 'class.db'}")
    erin = Student("erin", "k8s-101")
    s.seen(erin, "lab-batching")  # the page view (app.py's note_page)
    s.record_lab_run(erin, "batching", {"concurrency": 8, "ratio": 1.2})  # "Run: batching off, then on"
    s.dispose()
    desk = _desk(tmp_path, monkeypatch, lang="zh")
    where = desk.table[0].value
    assert list(where[lessons.t("teacher.col_page", "zh")]) == [lessons.t("page.lab_batching", "zh")]


# -- the teacher kept across a refresh; the token out of the address bar -------------------------------------------
def _teacher_page() -> None:
    import streamlit as st

    from ui import i18n, sidebar

    teacher = i18n.is_teacher()
    sidebar.remember_teacher()
    st.write(f"teacher={teacher}")


def _page(cookies: dict | None = None, monkeypatch=None, **params: str) -> AppTest:
    if cookies is not None:
        import streamlit

        class Ctx:  # the cookies of the session's first request, as st.context gives them
            pass

        ctx = Ctx()
        ctx.cookies = cookies
        monkeypatch.setattr(streamlit, "context", ctx)
    at = AppTest.from_function(_teacher_page, default_timeout=30)
    at.query_params.update(params)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _cookie_script(at: AppTest) -> str:
    frames = [
        e for e in at.main if getattr(e, "type", "") == "iframe" or "srcdoc" in str(getattr(e, "proto", ""))
    ]
    return "".join(str(f.proto) for f in frames)


@pytest.mark.app
def test_the_token_leaves_the_address_bar_and_a_refresh_keeps_the_teacher(monkeypatch):
    from ui import i18n

    monkeypatch.setenv("TRITON_KITCHEN_TEACHER_TOKEN", TOKEN)
    first = _page(teacher=TOKEN, lang="zh")
    assert first.markdown[0].value == "teacher=True"
    assert "teacher" not in first.query_params and first.query_params["lang"] == ["zh"]
    mark = i18n.teacher_mark(TOKEN).decode()
    script = _cookie_script(first)
    assert (
        f"{i18n.TEACHER_COOKIE}={mark}" in script and TOKEN not in script
    )  # a mark of the token, not the token
    first.run()  # the next run of the same session: kept, and the browser is not told again
    assert first.markdown[0].value == "teacher=True" and not _cookie_script(first)

    # F5 on /ch3 (no token in the URL): this browser's cookie
    assert _page({i18n.TEACHER_COOKIE: mark}, monkeypatch).markdown[0].value == "teacher=True"
    # a student's browser: no cookie, a guessed one, or a mark of another token
    assert _page({}, monkeypatch).markdown[0].value == "teacher=False"
    assert _page({i18n.TEACHER_COOKIE: "guess"}, monkeypatch).markdown[0].value == "teacher=False"
    other = i18n.teacher_mark("old-token").decode()
    assert _page({i18n.TEACHER_COOKIE: other}, monkeypatch).markdown[0].value == "teacher=False"
    # a wrong token given in the URL: not the teacher, the cookie forgotten, the guess out of the URL too
    wrong = _page({i18n.TEACHER_COOKIE: mark}, monkeypatch, teacher="guess")
    assert wrong.markdown[0].value == "teacher=False" and "teacher" not in wrong.query_params
    assert f"{i18n.TEACHER_COOKIE}=;" in _cookie_script(wrong)


# -- projector mode's home text ----------------------------------------------------------------------------------
def _home() -> None:
    import sys

    import streamlit as st

    sys.modules.pop("app", None)  # app.py, imported (not run): its welcome page alone
    import app

    link = st.page_link  # the chapters' links need the app's navigation, which this page has not
    st.page_link = lambda *a, **k: None
    try:
        app.home()
    finally:
        st.page_link = link


@pytest.mark.app
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_projectors_home_page_points_at_the_top_bar_not_the_hidden_sidebar(lang):
    at = AppTest.from_function(_home, default_timeout=30)
    at.query_params.update(lang=lang, present="1")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert [i.value for i in at.info] == [lessons.t("home.start_present", lang)]
    assert ("侧边栏" if lang == "zh" else "sidebar") not in at.info[0].value
    normal = AppTest.from_function(_home, default_timeout=30)
    normal.query_params["lang"] = lang
    normal.run()
    assert [i.value for i in normal.info] == [lessons.t("home.start", lang)]


# -- the desk's question table and charts -----------------------------------------------------------------------
@pytest.mark.app
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_question_table_renders_markdown_in_full_and_a_0_percent_bar_is_labelled(
    tmp_path, monkeypatch, lang
):
    quiz = lessons.load_quiz(1, lang)
    with_code = next(q for q in quiz if "`" in q.prompt)
    s = ClassStore(f"sqlite:///{tmp_path / 'class.db'}")
    wrong = next(i for i in range(len(with_code.choices)) if i != with_code.answer)
    for who in ("amy", "bob"):
        s.record_answer(Student(who, "k8s-101"), 1, with_code.id, wrong, False)  # 0/2 first-try right
    amy = Student("amy", "k8s-101")
    s.record_answer(amy, 1, first_question_id(), 0, True)
    s.record_lab_run(amy, "protocols", {"protocol": "grpc", "p50_ms": 3.0, "concurrency": 4})
    s.record_lab_run(amy, "protocols", {"protocol": "http-json", "p50_ms": 5.0, "concurrency": 4})
    s.record_lab_run(amy, "batching", {"concurrency": 8, "ratio": 1.1})
    s.dispose()
    desk = _desk(tmp_path, monkeypatch, lang=lang)
    # the table: a static table (Markdown rendered, long text wrapped), the prompt as the quiz writes it
    where, table = desk.table  # who is where, then the questions
    df = table.value
    row = df[df[lessons.t("teacher.col_question", lang)] == with_code.prompt]
    assert len(row) == 1, list(df[lessons.t("teacher.col_question", lang)])
    assert row[lessons.t("teacher.col_first_try", lang)].iloc[0] == "0/2"
    assert with_code.choices[wrong] in row[lessons.t("teacher.col_wrong", lang)].iloc[0]
    # the charts: the 0/2 bar's label above the axis; each protocol in the lab's colour; whole-number ticks
    bars = json.loads(desk.get("plotly_chart")[0].proto.spec)["data"][0]
    assert bars["textposition"] == "outside" and bars["cliponaxis"] is False
    assert "0/2" in bars["text"]
    figs = [json.loads(c.proto.spec) for c in desk.get("plotly_chart")]
    boxes = next(f for f in figs if f["data"][0]["type"] == "box")["data"]
    names = {lessons.t(f"protocol.{p}", lang): p for p in ("grpc", "http-json")}
    assert {b["name"]: b["marker"]["color"] for b in boxes} == {
        name: PROTOCOL_COLORS[p] for name, p in names.items()
    }
    scatter = next(f for f in figs if f["data"][0]["type"] == "scatter")
    assert scatter["layout"]["xaxis"]["tickvals"] == [8]
