"""A learner's click while the page's script is still running is not lost.

The quiz's questions, the predict-first radio and the class's join form are fragments: a click in them asks for
a fragment rerun, which Streamlit 1.60 does not start while a run of the whole page is going (it waits for that
run to end: ``script_requests._fragment_run_should_not_preempt_script``). Here the app's process is stopped
(SIGSTOP) the moment a run of the whole page has begun, the click is made while it is stopped, and the app goes
on (SIGCONT): the click's rerun reaches the app while that run is in flight (a run that ended before the app
could be stopped does not count: another is started). The page's websocket frames, both ways in Chromium's
order, must show it: the click's rerun sent after that run began and before it ended, then a run of the click's
fragment that ends, and the click's effect on the page."""

from __future__ import annotations

import contextlib
import os
import signal

import conftest
import pytest
from conftest import wait_for_app_run
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from triton_kitchen.core import lessons
from ui import lesson as lesson_ui


@pytest.fixture(scope="module")
def app(server, tmp_path_factory):
    """An app of this module's own (its process is stopped and resumed here), on the session's server."""
    env = {
        **conftest.remote_env(server),
        "TRITON_KITCHEN_DATABASE_URL": f"sqlite:///{tmp_path_factory.mktemp('class') / 'class.db'}",
        "TRITON_KITCHEN_TEACHER_TOKEN": None,
        "TRITON_KITCHEN_AUTO_RESTART": None,
    }
    with conftest.streamlit_app(env, log_name="streamlit-click-during-run.log") as (url, proc):
        yield url, proc


RUN_STATE = "() => document.querySelector('[data-testid=stApp]').getAttribute('data-test-script-state')"


class Wire:
    """A page's websocket frames in Chromium's order: ("sent", rerun_script) and ("got", ForwardMsg) for the
    messages that begin and end runs. Armed, it stops the app's process as soon as a run of the whole page
    begins (from the frame handler itself: no Playwright call in between)."""

    def __init__(self, page, pid: int):
        self.frames: list = []
        self.pid = pid
        self.armed = False
        self.frozen = False
        page.on("websocket", lambda ws: (ws.on("framesent", self._sent), ws.on("framereceived", self._got)))

    def _sent(self, payload) -> None:
        if isinstance(payload, (bytes, bytearray)):
            msg = BackMsg.FromString(bytes(payload))
            if msg.WhichOneof("type") == "rerun_script":
                self.frames.append(("sent", msg.rerun_script))

    def _got(self, payload) -> None:
        if not isinstance(payload, (bytes, bytearray)):
            return
        msg = ForwardMsg.FromString(bytes(payload))
        kind = msg.WhichOneof("type")
        if kind not in ("new_session", "script_finished"):
            return
        self.frames.append(("got", msg))
        if self.armed and kind == "new_session" and not msg.new_session.fragment_ids_this_run:
            os.kill(self.pid, signal.SIGSTOP)
            self.armed, self.frozen, self.begun = False, True, len(self.frames) - 1

    @contextlib.contextmanager
    def page_run_in_flight(self, page, toggle, tries: int = 6):
        """``toggle()`` (a section box's label) starts a run of the whole page; the body runs while the app is
        stopped inside it. A run that had already ended when the app was stopped (its end message was on its
        way: a short run) does not count: the box is toggled again, up to ``tries`` times."""
        try:
            for _ in range(tries):
                self.armed, self.frozen = True, False
                toggle()
                for _ in range(300):  # Playwright's wait: the frame handlers run only inside its calls
                    if self.frozen:
                        break
                    page.wait_for_timeout(20)
                assert self.frozen, "no run of the whole page began"
                if self.still_running(page):
                    break
                os.kill(self.pid, signal.SIGCONT)
                wait_for_app_run(page)
            else:
                raise AssertionError(
                    f"each of {tries} runs of the page ended before the app could be stopped"
                )
            yield
        finally:
            self.armed = False
            os.kill(self.pid, signal.SIGCONT)

    def still_running(self, page, settle_ms: int = 600) -> bool:
        """With the app stopped: whether the run begun at frame ``begun`` has not ended, once what the app sent
        before it stopped has reached the page (``settle_ms``), as its frames say and as the page itself says
        (the frames reach Python late on a loaded machine)."""
        page.wait_for_timeout(settle_ms)
        ended = any(
            w == "got" and m.WhichOneof("type") == "script_finished" for w, m in self.frames[self.begun :]
        )
        # (stopped between the run's new_session and its status message, the page still says "rerunRequested")
        return not ended and page.evaluate(RUN_STATE) in ("running", "rerunRequested")

    def wait_sent(self, page, after: int, done, timeout_ms: int = 30_000):
        """The index of the first rerun after frame ``after`` that ``done`` accepts, once Chromium has sent it."""
        for _ in range(timeout_ms // 50):
            for n in range(after + 1, len(self.frames)):
                way, msg = self.frames[n]
                if way == "sent" and not msg.is_auto_rerun and done(msg):
                    return n
            page.wait_for_timeout(50)
        raise AssertionError(f"Chromium sent no such rerun: {self.brief(after)}")

    def in_flight_then_answered(self, page, begun: int, sent: int, timeout_ms: int = 60_000) -> None:
        """The page run begun at frame ``begun`` had not finished when rerun ``sent`` left; after it, a run of
        that rerun's fragment began and finished."""
        fragment = self.frames[sent][1].fragment_id
        for _ in range(timeout_ms // 50):
            if self._answered(sent, fragment):
                break
            page.wait_for_timeout(50)
        else:
            raise AssertionError(f"the click's rerun was never run: {self.brief(begun)}")
        between = [m for way, m in self.frames[begun + 1 : sent] if way == "got"]
        assert not any(m.WhichOneof("type") == "script_finished" for m in between), (
            f"the page's run had finished before the click: {self.brief(begun)}"
        )

    def _answered(self, sent: int, fragment: str) -> bool:
        """A run of ``fragment``, or of the whole page (which runs every fragment: the waiting click merged into a
        page rerun the running page asked for with ``st.rerun()``, seen once), began after frame ``sent`` and
        ended. Any end counts: a run whose end message was still queued when the next run began arrives as
        FINISHED_EARLY_FOR_RERUN (Streamlit's ``forward_msg_queue._update_script_finished_message``), and Join
        ends its run with ``st.rerun()``; what the click did is checked on the page."""
        started = False
        for way, msg in self.frames[sent + 1 :]:
            if way != "got":
                continue
            if msg.WhichOneof("type") == "new_session":
                this_run = msg.new_session.fragment_ids_this_run
                started = started or fragment in this_run or not this_run
            elif started:
                return True
        return False

    def brief(self, after: int) -> list[str]:
        out = []
        for way, msg in self.frames[after:]:
            if way == "sent":
                out.append(f"sent rerun of {msg.fragment_id or 'the page'}{' (timer)' * msg.is_auto_rerun}")
            elif msg.WhichOneof("type") == "new_session":
                out.append(f"got run of {list(msg.new_session.fragment_ids_this_run) or 'the page'}")
            else:
                out.append(f"got {ForwardMsg.ScriptFinishedStatus.Name(msg.script_finished)}")
        return out


def _open(browser, url: str, pid: int):
    """A new tab on ``url``, its websocket recorded from the start, after its first run."""
    page = browser.new_page(viewport={"width": 1300, "height": 1600})
    wire = Wire(page, pid)
    page.add_init_script(conftest.WATCH_SCRIPT_STATE)
    page.goto(url, wait_until="domcontentloaded")
    wait_for_app_run(page, timeout=240)
    return page, wire


def _states(rerun) -> dict:
    return {
        w.id.split("-", 2)[-1]: w.WhichOneof("value")
        for w in rerun.widget_states.widgets
        if w.WhichOneof("value")
    }


def _section_box(page, chapter: int, section: str):
    """A lesson section's box (outside every fragment: opening or closing it reruns the whole page)."""
    heading, _ = lessons.split_heading(lessons.load_lesson(chapter, "en").sections[section])
    return page.locator('[data-testid="stExpander"] summary').filter(has_text=heading).first


@pytest.mark.browser
def test_quiz_and_predict_clicks_during_a_page_run_are_answered(browser, app):
    url, proc = app
    page, wire = _open(browser, f"{url}/ch1?lang=en&student=inflight&class=cmp", proc.pid)
    repository = _section_box(page, 1, "repository")
    quiz = lessons.load_quiz(1, "en")
    label = lessons.t("quiz.box", "en", total=len(quiz))
    page.get_by_text(label, exact=False).click()
    box = page.locator('[data-testid="stExpander"]').filter(has_text=label)
    question = box.locator('[data-testid="stRadio"]').first
    question.wait_for(timeout=30_000)
    wait_for_app_run(page)
    radio = lesson_ui._radio_key(1, quiz[0])
    check = f"tk_quiz_check_1_{quiz[0].id}"

    # the predict-first radio (chapter 1's kitchen), while the page reruns for a section box opened (the first
    # section is the only one open at first)
    predict = page.locator('[data-testid="stRadio"]').filter(has_text="🔮").first
    with wire.page_run_in_flight(page, repository.click):
        predict.locator("label").nth(1).click()
        sent = wire.wait_sent(page, wire.begun, lambda r: "tk_predict_ch1_count" in _states(r))
    wire.in_flight_then_answered(page, wire.begun, sent)
    wait_for_app_run(page)

    # a quiz answer, then its Check, each while the page reruns for the section box
    with wire.page_run_in_flight(page, repository.click):
        question.locator("label").nth(1).click()
        sent = wire.wait_sent(page, wire.begun, lambda r: radio in _states(r))
    wire.in_flight_then_answered(page, wire.begun, sent)
    button = box.locator('[data-testid="stButton"]').filter(has_text=lessons.t("quiz.check", "en")).first
    enabled = button.locator("button:not([disabled])").first
    enabled.wait_for(timeout=30_000)
    wait_for_app_run(page)
    with wire.page_run_in_flight(page, repository.click):
        enabled.click()
        sent = wire.wait_sent(page, wire.begun, lambda r: _states(r).get(check) == "trigger_value")
    wire.in_flight_then_answered(page, wire.begun, sent)
    box.locator('[data-testid="stAlert"]').first.wait_for(timeout=30_000)  # the verdict: the answer counted
    button.locator("button[disabled]").first.wait_for(timeout=10_000)  # and the question is locked

    page.close()

    # the answer was kept for the class: a new tab of the same student finds the question answered and locked
    page, _ = _open(browser, f"{url}/ch1?lang=en&student=inflight&class=cmp", proc.pid)
    page.get_by_text(label, exact=False).click()
    box = page.locator('[data-testid="stExpander"]').filter(has_text=label)
    box.locator('[data-testid="stAlert"]').first.wait_for(timeout=30_000)
    page.close()


@pytest.mark.browser
def test_joining_a_class_during_a_page_run(browser, app):
    """The join form (a fragment whose Join reruns the whole page) while the page reruns for a section box."""
    url, proc = app
    page, wire = _open(browser, f"{url}/ch1?lang=en", proc.pid)
    sidebar = page.locator('[data-testid="stSidebar"]')
    title = lessons.t("class.join_title", "en")
    sidebar.get_by_text(title, exact=False).click()
    # the join box's form (the sidebar has another: the remote server's addresses)
    form = (
        sidebar.locator('[data-testid="stExpander"]').filter(has_text=title).locator('[data-testid="stForm"]')
    )
    form.wait_for(timeout=30_000)
    wait_for_app_run(page)
    form.get_by_role("textbox", name=lessons.t("class.nickname", "en")).fill("小林")
    form.get_by_role("textbox", name=lessons.t("class.code", "en")).fill("cmp")
    join = form.get_by_role("button", name=lessons.t("class.join", "en"))
    with wire.page_run_in_flight(page, _section_box(page, 1, "repository").click):
        join.click()
        sent = wire.wait_sent(
            page, wire.begun, lambda r: bool(r.fragment_id) and "tk_class_join" in str(_states(r))
        )
    wire.in_flight_then_answered(page, wire.begun, sent)
    joined = lessons.t("class.joined", "en", code="cmp", student="小林").replace("**", "")
    sidebar.get_by_text(joined, exact=False).wait_for(timeout=30_000)
    page.close()


@pytest.mark.browser
def test_a_check_waiting_behind_a_page_run_survives_a_page_click(browser, app):
    """A learner clicks Check while a run of the whole page is in flight (the Check waits for it), then opens
    another section box before the app got to the Check: the box's rerun of the whole page must still carry
    the Check. A button's click is sent once (a trigger); the radio's choice is sent again with every rerun."""
    url, proc = app
    page, wire = _open(browser, f"{url}/ch1?lang=en&student=impatient&class=cmp", proc.pid)
    quiz = lessons.load_quiz(1, "en")
    label = lessons.t("quiz.box", "en", total=len(quiz))
    page.get_by_text(label, exact=False).click()
    box = page.locator('[data-testid="stExpander"]').filter(has_text=label)
    question = box.locator('[data-testid="stRadio"]').first
    question.wait_for(timeout=30_000)
    wait_for_app_run(page)
    question.locator("label").nth(1).click()
    button = box.locator('[data-testid="stButton"]').filter(has_text=lessons.t("quiz.check", "en")).first
    enabled = button.locator("button:not([disabled])").first
    enabled.wait_for(timeout=30_000)
    wait_for_app_run(page)
    check = f"tk_quiz_check_1_{quiz[0].id}"
    with wire.page_run_in_flight(page, _section_box(page, 1, "repository").click):
        enabled.click()
        wire.wait_sent(page, wire.begun, lambda r: _states(r).get(check) == "trigger_value")
        _section_box(page, 1, "config").click()
        wire.wait_sent(page, wire.begun, lambda r: not r.fragment_id)
    wait_for_app_run(page, timeout=60)
    box.locator('[data-testid="stAlert"]').first.wait_for(timeout=30_000)  # the verdict: the Check counted
    button.locator("button[disabled]").first.wait_for(timeout=10_000)
    page.close()
