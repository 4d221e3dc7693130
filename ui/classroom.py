"""The student's side of the class: joining with a nickname and class code, kept in the URL
(``?student=NAME&class=CODE``) and in the browser (a cookie and localStorage), and quiz answers and lab results written to
the class database (``triton_kitchen.classroom``).  Without a student nothing is written: a learner alone keeps
the session-only quiz of before."""

from __future__ import annotations

import json
import logging
import urllib.parse

import streamlit as st
import streamlit.components.v1 as components

from triton_kitchen import classroom
from ui import boxes, i18n
from ui.i18n import t

log = logging.getLogger(__name__)

_STUDENT_KEY = "tk_student"  # (nickname, class code) of this session once joined
PROTOCOL_COMPARE = "protocols_compare"  # the lab name of the protocol lab's first button's runs
JOIN_BOX = "tk_class_join_open"  # the class box's expander: its form is drawn only while it is open
# What this session told the browser: "done" (the student kept), "forget" (left: to be forgotten), "forgotten".
# A session that left stays left: its cookies are those of its first request, so the name the browser had then
# must not come back from them on a later run (a shared classroom laptop: the next student could not join)
_REMEMBERED = "tk_student_remembered"
_LEFT = ("forget", "forgotten")
STORAGE_KEY = "triton-kitchen-student"
# "nickname:class", percent-encoded (a cookie value is ASCII; a nickname may be 陈同学), read back through
# st.context.cookies on the next visit
COOKIE = "tk_student"
COOKIE_DAYS = 180


def keep_waiting_clicks() -> None:
    """A click still waiting for its run is not dropped by a later click outside every fragment.

    A click in a fragment (a quiz answer's Check, Join) that arrives while a run of the whole page is going
    waits for that run to end (Streamlit 1.60 queues it in the script runner). A later click outside every
    fragment (a lesson's section box) starts a new script runner at once (``runner.fastReruns``, on by default)
    and the old one's queue is dropped with it: the widgets' values come back in the new click's rerun, but a
    button's click is sent only once, so a learner's Check was lost (tests/browser/test_click_during_run.py).
    Here such a rerun takes over the waiting clicks first, merged as Streamlit merges the reruns of one runner
    (``_coalesce_widget_states``: a button click still waiting is kept). Installed once per process, when the
    app's main script first imports this module."""
    from streamlit.runtime.app_session import AppSession

    if getattr(AppSession.request_rerun, "_tk_keeps_clicks", False):
        return
    from streamlit.runtime.scriptrunner_utils.script_requests import (
        ScriptRequestType,
        _coalesce_widget_states,
    )

    plain = AppSession.request_rerun

    def request_rerun(self, client_state) -> None:
        runner = self._scriptrunner
        if client_state is not None and not client_state.fragment_id and runner is not None:
            requests = runner._requests
            with requests._lock:
                waiting = requests._rerun_data if requests._state == ScriptRequestType.RERUN else None
            if waiting is not None and waiting.widget_states is not None:
                merged = _coalesce_widget_states(waiting.widget_states, client_state.widget_states)
                if merged is not None:
                    client_state.widget_states.CopyFrom(merged)
        plain(self, client_state)

    request_rerun._tk_keeps_clicks = True
    AppSession.request_rerun = request_rerun


keep_waiting_clicks()


@st.cache_resource(show_spinner=False)
def store() -> classroom.ClassStore:
    """The app-wide class database (one engine and connection pool for every session)."""
    return classroom.ClassStore()


def _from_cookie() -> classroom.Student | None:
    """The student this browser joined as on an earlier visit (the cookie ``_browser_memory`` wrote)."""
    try:
        raw = st.context.cookies.get(COOKIE, "")
    except Exception:  # noqa: BLE001 - no browser (a bare script, some test harnesses)
        return None
    nickname, _, code = urllib.parse.unquote(str(raw)).partition(":")
    return classroom.student_from(nickname, code)


def current_student() -> classroom.Student | None:
    """The student of this session: from the URL, else remembered in the session (a page switch drops the
    query string, and the URL is put back), else from this browser's earlier visit."""
    from_url = classroom.student_from(st.query_params.get("student"), st.query_params.get("class"))
    if from_url is not None:
        st.session_state[_STUDENT_KEY] = (from_url.nickname, from_url.class_code)
        return from_url
    kept = st.session_state.get(_STUDENT_KEY)
    if kept is None and st.session_state.get(_REMEMBERED) not in _LEFT:
        back = _from_cookie()
        kept = (back.nickname, back.class_code) if back is not None else None
    if kept:
        st.session_state[_STUDENT_KEY] = kept
        st.query_params["student"], st.query_params["class"] = kept
        return classroom.Student(*kept)
    return None


def _join(nickname: str, class_code: str) -> None:
    nickname, class_code = nickname.strip(), class_code.strip()
    if not classroom.valid_nickname(nickname) or not classroom.valid(class_code):
        st.session_state["tk_join_error"] = True
        return
    st.session_state.pop("tk_join_error", None)
    st.session_state[_STUDENT_KEY] = (nickname, class_code)
    st.session_state.pop(_REMEMBERED, None)  # write the new name to the browser
    st.session_state.pop("tk_quiz", None)  # the quiz is read again, from this student's saved answers
    st.query_params["student"], st.query_params["class"] = nickname, class_code


def _leave() -> None:
    st.session_state.pop(_STUDENT_KEY, None)
    st.session_state.pop("tk_quiz", None)
    st.session_state[_REMEMBERED] = "forget"
    for p in ("student", "class"):
        st.query_params.pop(p, None)


def _browser_memory(student: classroom.Student | None) -> None:
    """Once per session: keep the student in this browser (a cookie the next visit's websocket carries, read
    with ``st.context.cookies``, and localStorage), or forget it after "leave".  Values are checked names,
    passed through JSON, never as HTML."""
    state = st.session_state.get(_REMEMBERED)
    if state in ("done", "forgotten") or (state is None and student is None):
        return
    if state == "forget":
        script = (
            f"window.parent.localStorage.removeItem({json.dumps(STORAGE_KEY)});"
            f"window.parent.document.cookie = {json.dumps(COOKIE + '=; path=/; max-age=0; SameSite=Lax')};"
        )
    else:
        value = json.dumps({"student": student.nickname, "class": student.class_code})
        kept = urllib.parse.quote(f"{student.nickname}:{student.class_code}", safe=":")
        cookie = f"{COOKIE}={kept}; path=/; max-age={COOKIE_DAYS * 86400}; SameSite=Lax"
        script = (
            f"window.parent.localStorage.setItem({json.dumps(STORAGE_KEY)}, {json.dumps(value)});"
            f"window.parent.document.cookie = {json.dumps(cookie)};"
        )
    components.html(f"<script>{script}</script>", height=0)
    st.session_state[_REMEMBERED] = "forgotten" if state == "forget" else "done"


def render_join() -> classroom.Student | None:
    """The sidebar's class box: who you are in the class (or a form to join one)."""
    student = current_student()
    if student is None and i18n.teacher_view_on():
        return None  # the teacher is not a student
    with st.sidebar:
        _browser_memory(student)
        if student is not None:
            st.caption(t("class.joined", student=student.nickname, code=student.class_code))
            st.button(t("class.leave"), key="tk_class_leave", on_click=_leave, type="tertiary")
            return student
        refused = url_identity_refused()
        if refused:  # never silently: this student's answers would not reach the teacher
            st.warning(t("class.url_refused"), icon="⚠️")
        _join_box(refused)
    return None


def url_identity_refused() -> bool:
    """Whether the URL names a student or class (``?student=&class=``) that was not taken: a name or code
    outside the rules, or only one of the two."""
    named = st.query_params.get("student") or st.query_params.get("class")
    return bool(named) and (
        classroom.student_from(st.query_params.get("student"), st.query_params.get("class")) is None
    )


@st.fragment
def _join_box(open_first: bool = False) -> None:
    """The join form, in a fragment: opening the box and a refused name rerun only the box; a student who
    joined reruns the whole page (the URL, the quiz's saved answers and the sidebar change)."""
    # Lazy, like the models table and the log: every page's first paint skips the form (an expander that
    # reruns when opened; a popover drew its form, inputs and button on every page, unseen)
    box = boxes.remembered_expander(JOIN_BOX, f"🎒 {t('class.join_title')}", default=open_first)
    if not box.open:
        return
    with box:
        with st.form("tk_class_join", border=False):
            nickname = st.text_input(t("class.nickname"), max_chars=32, help=t("class.nickname_rule"))
            code = st.text_input(t("class.code"), max_chars=32, help=t("class.rule"))
            if st.form_submit_button(t("class.join"), type="primary"):
                _join(nickname, code)
                if not st.session_state.get("tk_join_error"):
                    st.rerun()  # the whole app: this student from now on
        if st.session_state.get("tk_join_error"):
            st.error(t("class.invalid"))


def note_page(page: str) -> None:
    """Who is on which page now (for the teacher): written when the page changes, at most once a minute else."""
    student = current_student()
    if student is None:
        return
    import time

    last = st.session_state.get("tk_noted_page")
    if last and last[0] == page and time.time() - last[1] < 60:
        return
    st.session_state["tk_noted_page"] = (page, time.time())
    try:
        store().seen(student, page)
    except Exception:  # noqa: BLE001 - the lesson must not fail because the class database did
        log.warning("class database: could not note the page", exc_info=True)


def saved_quiz() -> dict:
    """The student's saved answers as ``QuizProgress`` data (the latest first-try of each question), {} when
    there is no student or the database cannot be read."""
    student = current_student()
    if student is None:
        return {}
    try:
        answers = store().latest_answers(student)
    except Exception:  # noqa: BLE001
        log.warning("class database: could not read the saved quiz", exc_info=True)
        return {}
    data: dict[str, dict] = {}
    for a in answers:
        data.setdefault(str(a.chapter), {})[a.question] = {"choice": a.choice, "correct": a.correct}
    return data


def record_answer(chapter: int, question: str, choice: int, correct: bool) -> None:
    student = current_student()
    if student is None:
        return
    try:
        store().record_answer(student, chapter, question, choice, correct)
    except Exception:  # noqa: BLE001 - shown, never lost silently: the answer stays in the session
        log.error("class database: an answer was not saved", exc_info=True)
        st.toast(t("class.not_saved"), icon="⚠️")


def record_protocol_runs(results: list) -> None:
    """The protocol lab's load runs, one row each; says on the page how many were kept for the teacher."""
    saved = sum(record_lab("protocols", classroom.figures.protocol_run(r)) for r in results if r.requests)
    if saved:
        st.caption(t("class.saved_runs", n=saved))


def record_protocol_compare(comparison) -> None:
    """The protocol lab's "same input, three ways" run, kept for the class like its load runs."""
    if comparison.rows and record_lab(PROTOCOL_COMPARE, classroom.figures.protocol_compare(comparison)):
        st.caption(t("class.saved_runs", n=1))


def record_batching(result: dict) -> None:
    if (
        result
        and result.get("on")
        and result.get("off")
        and record_lab("batching", classroom.figures.batching_run(result))
    ):
        st.caption(t("class.saved_runs", n=1))


def record_lab(lab: str, figures: dict) -> bool:
    """Keep what a lab run measured for the teacher's chart of the class; True when it was kept."""
    student = current_student()
    if student is None:
        return False
    try:
        store().record_lab_run(student, lab, figures)
        return True
    except Exception:  # noqa: BLE001
        log.error("class database: a lab run was not saved", exc_info=True)
        st.toast(t("class.not_saved"), icon="⚠️")
        return False
