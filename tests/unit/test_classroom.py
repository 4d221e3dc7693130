"""The class database on a real SQLite file and a real PostgreSQL server (Debian's package, started here):
students without accounts, answers that survive and are never lost or doubled, the ``class report`` command.

Here the tests that need no server, app or browser; the others: tests/live/test_classroom_live.py."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from _postgres import pg_bindir, postgres_server
from _shared.classroom import AMY, BOB, first_question_id

from triton_kitchen.classroom import (
    ClassStore,
    IdentityError,
    Student,
    answers_csv,
    class_report,
    question_table,
    student_from,
)
from triton_kitchen.core import lessons

ROOT = Path(__file__).resolve().parents[2]


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


@pytest.mark.parametrize("name", ["amy", "Bob-2", "x_y", "a" * 32, "陈同学", "李雷_2", "José", "陈" * 32])
def test_valid_nicknames(name):
    """A Chinese-first classroom: nicknames in any script's letters, as typed or given in the URL."""
    assert Student(name, "c1").nickname == name
    assert student_from(name, "c1") == Student(name, "c1")


@pytest.mark.parametrize(
    "name", ["", "a" * 33, "陈" * 33, "<b>amy</b>", "amy smith", "陈 同学", "amy;drop", "../x", "a:b", "陈。"]
)
def test_other_names_are_refused_never_stored(name):
    with pytest.raises(IdentityError):
        Student(name, "c1")
    assert student_from(name, "c1") is None and student_from("amy", name) is None


def test_class_codes_stay_ascii():
    """The one code every student types: ASCII letters, digits, - and _ (a nickname may be Chinese)."""
    with pytest.raises(IdentityError, match="class"):
        Student("amy", "三班")
    assert student_from("陈同学", "三班") is None


def test_answers_survive_a_new_store_and_first_tries_count_once(store):
    store.record_answer(AMY, 1, "ch1-role", 2, True)
    store.record_answer(AMY, 1, "ch1-role", 1, False)  # after a quiz reset: not a first try
    store.record_answer(BOB, 1, "ch1-role", 1, False)
    store.record_answer(BOB, 2, "ch2-map", 0, True)
    again = ClassStore(store.url)  # a reload, another process: the same answers
    assert [(a.question, a.choice, a.correct) for a in again.first_answers(AMY)] == [("ch1-role", 2, True)]
    assert [a.choice for a in again.latest_answers(AMY)] == [1]
    report = class_report(again, "t-101")
    assert report == {
        "students": 2,
        "quiz_answers": 4,
        "lab_runs": 0,
        "by_question": {
            "ch1-role": {"answered": 2, "first_try_correct": 1},
            "ch2-map": {"answered": 1, "first_try_correct": 1},
        },
    }
    assert all(isinstance(v, int) for v in report.values() if not isinstance(v, dict))
    rows = {r["question"]: r for r in question_table(again, "t-101")}
    assert rows["ch1-role"]["wrong_choices"] == {1: 1}  # the wrong choice the class picked first
    assert answers_csv(again, "t-101").count("\n") == 5  # a header and four answers
    again.dispose()


def test_a_retried_write_is_not_counted_twice(store):
    aid = store.record_answer(AMY, 1, "ch1-role", 2, True)
    store.record_answer(AMY, 1, "ch1-role", 2, True, answer_id=aid)  # the reply was lost; the app retries
    rid = store.record_lab_run(AMY, "protocols", {"protocol": "grpc", "p50_ms": 3.1})
    store.record_lab_run(AMY, "protocols", {"protocol": "grpc", "p50_ms": 3.1}, run_id=rid)
    assert class_report(store)["quiz_answers"] == 1 and class_report(store)["lab_runs"] == 1
    assert store.lab_runs("t-101")[0]["figures"] == {"p50_ms": 3.1, "protocol": "grpc"}


def test_reset_forgets_one_class_only(store):
    store.record_answer(AMY, 1, "ch1-role", 2, True)
    other = Student("amy", "t-102")
    store.record_answer(other, 1, "ch1-role", 2, True)
    assert store.reset_class("t-101") >= 2
    assert class_report(store, "t-101")["quiz_answers"] == 0
    assert class_report(store, "t-102")["quiz_answers"] == 1


def test_thirty_students_writing_at_once_lose_nothing(store):
    """Every thread is a student answering 8 questions and running 2 labs at the same moment."""
    students = [Student(f"s{i:02d}", "load") for i in range(30)]
    errors: list[BaseException] = []
    start = threading.Barrier(len(students))

    def student(s: Student) -> None:
        try:
            start.wait()
            for q in range(8):
                store.record_answer(s, 1, f"q{q}", q % 4, q % 4 == 0)
            for lab in ("protocols", "batching"):
                store.record_lab_run(s, lab, {"n": 1})
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=student, args=(s,)) for s in students]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    report = class_report(store, "load")
    assert (report["students"], report["quiz_answers"], report["lab_runs"]) == (30, 240, 60)


def test_sqlite_runs_in_wal_mode_with_a_schema_version(tmp_path):
    db = tmp_path / "class.db"
    s = ClassStore(f"sqlite:///{db}")
    assert s.version() == 1
    s.record_answer(AMY, 1, "ch1-role", 2, True)
    s.dispose()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(1,)]
    assert ClassStore(f"sqlite:///{db}").version() == 1  # migrating again changes nothing


def test_class_report_cli_prints_one_json_document(tmp_path):
    url = f"sqlite:///{tmp_path / 'class.db'}"
    s = ClassStore(url)
    s.record_answer(AMY, 1, "ch1-role", 2, True)
    s.record_lab_run(BOB, "batching", {"ratio": 1.4})
    s.dispose()
    run = subprocess.run(
        [sys.executable, "-m", "triton_kitchen", "class", "report", "--database-url", url, "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)  # exactly one document: json.loads refuses trailing text
    assert doc == {
        "students": 2,
        "quiz_answers": 1,
        "lab_runs": 1,
        "by_question": {"ch1-role": {"answered": 1, "first_try_correct": 1}},
    }
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "triton_kitchen",
            "class",
            "report",
            "--database-url",
            "sqlite:////nonexistent/dir/x.db",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert bad.returncode == 1 and bad.stdout == "" and "cannot read the class database" in bad.stderr


# -- the app: a student joins, answers, reloads; the teacher's desk is gated ---------------------------------
def _quiz_page():
    from ui import classroom as class_ui
    from ui import lesson

    class_ui.render_join()
    lesson.render_quiz(1)


def class_ui_join_box() -> str:
    from ui import classroom as class_ui

    return class_ui.JOIN_BOX


def _app(tmp_path, monkeypatch, **params):
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("TRITON_KITCHEN_DATABASE_URL", f"sqlite:///{tmp_path / 'class.db'}")
    st.cache_resource.clear()  # the app-wide store is made again, on this test's database
    at = AppTest.from_function(_quiz_page, default_timeout=30)
    at.session_state["tk_open"] = {"tk_quiz_open_1": True}  # the quiz's box open (drawn lazily)
    at.session_state[class_ui_join_box()] = True  # the class box open: its form is drawn lazily too
    at.query_params["lang"] = "en"
    for k, v in params.items():
        at.query_params[k] = v
    return at.run()


@pytest.mark.app
def test_a_student_joins_answers_and_finds_the_answer_after_a_reload(tmp_path, monkeypatch):
    at = _app(tmp_path, monkeypatch)
    at.sidebar.text_input[0].input("amy")
    at.sidebar.text_input[1].input("t-101")
    at.sidebar.button[0].click().run()  # the form's Join
    assert at.query_params["student"] == ["amy"] and at.query_params["class"] == ["t-101"]
    assert any("amy" in c.value for c in at.sidebar.caption)
    at.radio[0].set_value(0).run()
    at.button(key=f"tk_quiz_check_1_{first_question_id()}").click().run()
    saved = ClassStore(f"sqlite:///{tmp_path / 'class.db'}")
    assert class_report(saved)["quiz_answers"] == 1
    # a reload: a new session with the same URL shows the answer, locked
    again = _app(tmp_path, monkeypatch, student="amy", **{"class": "t-101"})
    assert again.radio[0].disabled and again.radio[0].value == 0
    # an invalid nickname is refused with a message, nothing written
    other = _app(tmp_path, monkeypatch)
    other.sidebar.text_input[0].input("<script>")
    other.sidebar.text_input[1].input("t-101")
    other.sidebar.button[0].click().run()
    assert "student" not in other.query_params and other.sidebar.error
    assert class_report(saved)["students"] == 1


@pytest.mark.app
def test_leave_stays_left_though_the_first_requests_cookie_still_names_the_student(tmp_path, monkeypatch):
    """A returning student (the browser's cookie) leaves: later runs of the same session must not read the name
    back from the cookies of its first request (a shared laptop: the next student could not join)."""
    from ui import classroom as class_ui

    monkeypatch.setattr(class_ui, "_from_cookie", lambda: Student("amy", "t-101"))
    at = _app(tmp_path, monkeypatch)
    assert any("amy" in c.value for c in at.sidebar.caption)
    at.button(key="tk_class_leave").click().run()
    for _ in range(2):  # the run that forgets it in the browser, and one after
        assert not any("amy" in c.value for c in at.sidebar.caption), [c.value for c in at.sidebar.caption]
        assert "student" not in at.query_params
        at.run()
    at.session_state[class_ui.JOIN_BOX] = True  # the next student opens the class box and joins
    at.run()
    at.sidebar.text_input[0].input("bo")
    at.sidebar.text_input[1].input("t-101")
    at.sidebar.button[0].click().run()
    assert at.query_params["student"] == ["bo"]


@pytest.mark.app
def test_a_chinese_nickname_joins_from_the_form_and_from_the_url(tmp_path, monkeypatch):
    """陈同学 joins by the sidebar's form and by a link (``?student=陈同学&class=k8s-101``): both are kept, and the
    answer reaches the class database under that name."""
    at = _app(tmp_path, monkeypatch)
    at.sidebar.text_input[0].input("陈同学")
    at.sidebar.text_input[1].input("k8s-101")
    at.sidebar.button[0].click().run()
    assert at.query_params["student"] == ["陈同学"] and not at.sidebar.error
    by_link = _app(tmp_path, monkeypatch, student="李雷", **{"class": "k8s-101"})
    assert any("李雷" in c.value for c in by_link.sidebar.caption) and not by_link.sidebar.warning
    by_link.radio[0].set_value(0).run()
    by_link.button(key=f"tk_quiz_check_1_{first_question_id()}").click().run()
    saved = ClassStore(f"sqlite:///{tmp_path / 'class.db'}")
    assert {s["nickname"] for s in saved.students("k8s-101")} >= {"李雷"}
    assert class_report(saved, "k8s-101")["quiz_answers"] == 1


@pytest.mark.app
@pytest.mark.parametrize("params", [{"student": "陈 同学", "class": "k8s-101"}, {"student": "amy"}])
def test_a_refused_url_identity_says_so(tmp_path, monkeypatch, params):
    """A name in the URL that was not taken (outside the rules, or without its class) is said on the page, the
    join form opens, and nothing is written."""
    from ui import classroom as class_ui

    monkeypatch.setattr(class_ui, "_from_cookie", lambda: None)
    at = _app(tmp_path, monkeypatch, **params)
    assert [w.value for w in at.sidebar.warning] == [lessons.t("class.url_refused", "en")]
    assert at.sidebar.text_input, "the join form is open"
    assert class_report(ClassStore(f"sqlite:///{tmp_path / 'class.db'}"))["students"] == 0


def test_the_cookie_keeps_a_chinese_nickname_in_ascii(monkeypatch):
    """The browser's memory of the student is percent-encoded (a cookie value is ASCII) and read back."""
    from ui import classroom as class_ui

    class Ctx:
        cookies = {class_ui.COOKIE: "%E9%99%88%E5%90%8C%E5%AD%A6:k8s-101"}

    monkeypatch.setattr(class_ui.st, "context", Ctx())
    assert class_ui._from_cookie() == Student("陈同学", "k8s-101")
