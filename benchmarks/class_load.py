"""A class at once: N students answer chapter 1's quiz and run the protocol lab through the real app, and every
answer and lab run must be in the class database afterwards.

    python benchmarks/class_load.py [--students 30] [--database sqlite|postgresql] [--apps 1|2] [--json out.json]

One Triton (``python -m triton_kitchen serve``'s embedded server) serves every app process, as a lab's GPU
Triton would. The apps are `streamlit run app.py` processes with TRITON_HTTP_URL/TRITON_GRPC_URL set to it and
TRITON_KITCHEN_DATABASE_URL set to the class database: a SQLite file, or a throwaway PostgreSQL server
(Debian's package, as in the tests) shared by ``--apps 2`` processes on two ports. Each student is one
Streamlit session driven over Streamlit's own websocket protocol (what a browser sends: a rerun with the
widgets' states, and a fragment's id for a click inside one), joined through the URL
(``?student=sNN&class=load``). Each student opens chapter 1, opens its quiz's box (the quiz is drawn only
while its box is open), then for each question picks a choice and clicks Check; with the lab, opens the
protocol lab's load tab and runs a 1 s load. A click's latency is the seconds from sending it until the app's
script run finished. The widget keys come from the quiz bank (lessons/en/quiz/01.toml) and ``ui/lesson.py``;
a key the page did not draw is listed under "not_drawn" and fails the run. Afterwards the database is counted
with ``class report`` and compared with what the app answered: every quiz click that the page answered, and every lab run the page said
it kept ("Kept for your class: n run(s)"). Exit status 0 only when every student found every widget, no run
showed an exception, every Check click came back with its question answered (locked), and nothing is missing
from the database.

    python benchmarks/class_load.py --students 2 --questions 2 --no-lab --url HOST:PORT --grpc-url HOST:PORT
        (a running Triton instead of starting the embedded one; tests/live/test_class_load.py runs this)

    python benchmarks/class_load.py --lockstep --students 30
        (the teacher's "everyone, answer now": every student's page and quiz box load first; then each click
        is sent by every student within 50 ms of the others (``send_spread_ms``): chapter 1's predict-first
        radio, then for each question the choice and the Check, then (unless ``--no-lab``) the lab click:
        chapter 1's send button (``ch1_classify``: one photo through image_classifier on Triton and its top-5
        chart; ``lab_answers_shown`` counts the sends that drew their round trip). A click's latency ends at
        its run's ``script_finished``. The JSON says ``"mode": "lockstep"``; ``quiz_click_s``,
        ``predict_click_s`` and ``lab_click_s`` are the Check, predict and send clicks' p50/p90/max;
        ``cpu_s_per_click`` the app's CPU seconds (user + system, /proc) per click of each kind, over that
        kind's steps only; ``fragment_clicks`` counts the clicks sent inside a fragment and
        ``whole_page_reruns`` names any the app answered with a run of the whole page instead;
        ``app_cpu_s_per_click`` and ``app_rss_mb_per_student`` are the app's CPU seconds (all clicks and page
        loads) per click and its memory growth per connected student.)

    python benchmarks/class_load.py --lockstep --sizes 5,10,20,30,50 --json out.json
        (one lockstep class per size, each on a fresh app process and class database, one Triton for all;
        prints a table of the three clicks' p50/p90/max, CPU per click and memory per student)

    python benchmarks/class_load.py --paced 5 --students 30 --lab-students 5
        (a class at its own pace: for 5 minutes each student works through chapter 1 (predict, send, each
        section's box, the quiz's box, each question's choice and Check; then boxes, predictions and sends
        again), thinking ``--think`` seconds (uniform, default 3-20) between clicks, while ``--lab-students``
        of them run the protocol lab's load test (its three protocols, ``--lab-concurrency`` 4,
        ``--lab-seconds`` 10 each) in a second tab, again and again until the time is up. ``click_s`` is
        every chapter click's p50/p90/p99/max (``click_s_by_kind`` per kind); ``lab_run_s`` the load runs'
        seconds, ``lab_runs_busy`` those the page refused as busy; ``app_with_children_cpu_s`` counts the
        app's child processes too (a lab worker). ``load_average_before``/``_after`` say how busy the
        machine was.)

Before the class a visitor (no student) opens chapter 1 and the protocol lab once, so the app's first imports
count neither as a student's memory nor as a click's CPU (``--no-warm-up``: they do).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from _server import add_server_args, server_for, start_streamlit  # noqa: E402

from triton_kitchen.classroom import ClassStore, class_report  # noqa: E402
from triton_kitchen.core import lessons  # noqa: E402
from triton_kitchen.core.server import free_port  # noqa: E402
from ui import lesson as lesson_ui  # noqa: E402

OUT = ROOT / "benchmarks" / "out"
CLASS = "load"
LAB_PAGE, LOAD_RUN = "lab-protocols", "proto_load_run"  # ui/pages.py, views/lab_protocols.py


class NotDrawn(KeyError):
    """The page did not draw a widget (or box) the student was about to use: the benchmark no longer matches
    the app, and says which key it looked for."""


def _block_id(block) -> str:
    """The widget id of a block: an expander or tabs with a key and ``on_change="rerun"`` is a widget whose
    id arrives in its block (``Block.expandable.id``, ``Block.tab_container.id``), not as an element."""
    kind = block.WhichOneof("type")
    inner = getattr(block, kind, None) if kind else None
    return getattr(inner, "id", "") or block.id


class Session:
    """One browser tab's worth of Streamlit: a websocket session on one app process. Like the browser, it
    holds the widget values it has set and sends them with every rerun; a click inside a fragment reruns
    that fragment (its id is sent), as Streamlit's frontend does."""

    def __init__(self, base: str, page: str, query: str) -> None:
        self.url = base.replace("http://", "ws://") + "/_stcore/stream"
        self.page, self.query = page, query
        self.ids: dict[str, str] = {}  # widget key -> element (or block) id, as last drawn
        self.fragment: dict[
            str, str
        ] = {}  # widget key -> the id of the fragment it was drawn in ("" if none)
        self.disabled: dict[str, bool] = {}  # widget key -> drawn disabled (a checked question is locked)
        self.options: dict[str, list[str]] = {}  # widget key -> the options it shows (a radio's choices)
        self.held: dict[str, dict] = {}  # widget key -> the value the browser holds (sent with every rerun)
        self.texts: list[str] = []
        self.errors: list[str] = []  # exceptions the page showed (a run that crashed answers nothing)
        self.sent_fragment, self.sent_at = "", 0.0  # the last rerun: the fragment it named, when it was sent
        self.last: dict = {"fragments_run": None, "drawn_in": set(), "status": None}

    async def __aenter__(self):
        import websockets

        self.ws = await websockets.connect(
            self.url, subprotocols=["streamlit"], max_size=None, open_timeout=60
        )
        return self

    async def __aexit__(self, *exc):
        await self.ws.close()

    def _seen(self, wid: str, fragment_id: str, body=None) -> None:
        if wid.startswith("$$ID-") and wid.count("-") >= 2:  # "$$ID-<hash>-<user key>"
            key = wid.split("-", 2)[2]
            self.ids[key], self.fragment[key] = wid, fragment_id
            self.disabled[key] = bool(getattr(body, "disabled", False))
            self.options[key] = list(getattr(body, "options", []))

    def drawn(self, key: str) -> bool:
        return key in self.ids

    async def run(
        self, set_: dict[str, dict] | None = None, click: str | None = None, page: str | None = None
    ):
        """On ``page`` (default: the page of the last run), set widget values (``{key: {"string_value": "…"}}``,
        kept like a browser's) and/or click the button ``click``, then send a rerun and wait until the script (or the fragment) finished; returns seconds.
        Raises NotDrawn when a widget to set or click is not on the page."""
        await self.send(self.prepare(set_, click, page))
        return await self.wait()

    def prepare(
        self, set_: dict[str, dict] | None = None, click: str | None = None, page: str | None = None
    ) -> bytes:
        """The rerun a browser sends for this change, serialized (``run`` sends it at once; ``--lockstep`` holds
        it until every student is ready). A change inside one fragment reruns that fragment: its id is sent,
        as Streamlit's frontend does (``WidgetStateManager``: the widget's ``fragmentId``), with the widget
        states of the whole page."""
        from streamlit.proto.BackMsg_pb2 import BackMsg

        if page and page != self.page:  # another page: the browser forgets this one's widgets
            self.page = page
            self.ids, self.fragment, self.disabled, self.options, self.held = {}, {}, {}, {}, {}
        touched = [*(set_ or {}), *([click] if click else [])]
        for key in touched:
            if key not in self.ids:
                raise NotDrawn(key)
        self.held.update(set_ or {})
        msg = BackMsg()
        msg.rerun_script.query_string = self.query
        msg.rerun_script.page_name = self.page
        fragments = {self.fragment[k] for k in touched} - {""}
        if len(fragments) == 1 and all(self.fragment[k] for k in touched):
            msg.rerun_script.fragment_id = fragments.pop()
        self.sent_fragment = msg.rerun_script.fragment_id
        states = [(k, v) for k, v in self.held.items() if k in self.ids]
        if click:
            states.append((click, {"trigger_value": True}))
        for key, value in states:
            msg.rerun_script.widget_states.widgets.append(self._state(key, **value))
        return msg.SerializeToString()

    async def send(self, payload: bytes) -> float:
        """Send a prepared rerun; returns the moment it was sent (``time.perf_counter``)."""
        self.texts = []
        self.sent_at = time.perf_counter()
        await self.ws.send(payload)
        return self.sent_at

    async def wait(self, timeout: float = 300) -> float:
        """Read the app's answer until its script run (or fragment run) finished; returns the seconds since the
        rerun was sent. ``self.last`` says what ran: the fragments the run was for (``new_session``'s
        ``fragment_ids_this_run``; none: the whole page), the fragments its elements were drawn in, and
        whether it finished as a fragment run."""
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self.last = {"fragments_run": None, "drawn_in": set(), "status": None}
        while True:
            fm = ForwardMsg()
            fm.ParseFromString(await asyncio.wait_for(self.ws.recv(), timeout))
            kind = fm.WhichOneof("type")
            if kind == "new_session":
                self.last["fragments_run"] = list(fm.new_session.fragment_ids_this_run)
            elif kind == "delta":
                self.last["drawn_in"].add(fm.delta.fragment_id)
            if kind == "delta" and fm.delta.WhichOneof("type") == "add_block":
                self._seen(_block_id(fm.delta.add_block), fm.delta.fragment_id)
            elif kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                el = fm.delta.new_element
                body = getattr(el, el.WhichOneof("type"))
                if el.WhichOneof("type") == "exception":
                    self.errors.append(f"{body.type}: {body.message}")
                self._seen(getattr(body, "id", ""), fm.delta.fragment_id, body)
                for field in ("body", "value", "label", "text"):
                    text = getattr(body, field, None)
                    if isinstance(text, str) and text:
                        self.texts.append(text)
            elif kind == "script_finished":
                self.last["status"] = ForwardMsg.ScriptFinishedStatus.Name(fm.script_finished)
                return time.perf_counter() - self.sent_at

    def whole_page_ran(self) -> bool:
        """Whether the last run was the whole page's script (not only the fragment the click was in)."""
        return not self.last["fragments_run"]

    def _state(self, key: str, **value):
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        s = WidgetState(id=self.ids[key])
        for k, v in value.items():
            if k == "double_array_value":
                s.double_array_value.data.extend(v)
            else:
                setattr(s, k, v)
        return s


def quiz_keys(chapter: int, question: lessons.Question) -> tuple[str, str]:
    """The keys of a question's radio and Check button, as ``ui/lesson.py`` names them."""
    return lesson_ui._radio_key(chapter, question), f"tk_quiz_check_{chapter}_{question.id}"


async def student(i: int, base: str, questions: list[lessons.Question], lab: bool, out: dict) -> None:
    name = f"s{i:02d}"
    query = f"lang=en&student={name}&class={CLASS}"
    me = out[name] = {"quiz_clicks_s": [], "lab_clicks_s": [], "answers_sent": 0, "answers_shown": 0}
    me.update(lab_runs_kept=0, not_drawn=[], page_errors=[])
    async with Session(base, "ch1", query) as s:
        try:
            await s.run()
            await s.run({lesson_ui.quiz_key(1): {"bool_value": True}})  # the reader opens the quiz's box
            for q in questions:
                radio, check = quiz_keys(1, q)
                if not s.options.get(radio):
                    raise NotDrawn(radio)
                # a browser sends the choice first (the radio's change: the option's text as shown, here the
                # first of this student's shuffled order), then the click
                await s.run({radio: {"string_value": s.options[radio][0]}})
                me["quiz_clicks_s"].append(await s.run(click=check))
                me["answers_sent"] += 1
                me["answers_shown"] += s.disabled.get(radio, False)  # answered: its radio is drawn locked
            if lab:
                await s.run(page=LAB_PAGE)
                if not s.drawn(LOAD_RUN):  # the lab's tabs draw only the open one: open the load test's
                    await s.run({"proto_tabs": {"string_value": lessons.t("lab_protocols.tab_load", "en")}})
                one = {"double_array_value": [1.0]}  # concurrency 1, 1 s
                await s.run({"proto_load_c": one, "proto_load_d": one})
                me["lab_clicks_s"].append(await s.run(click=LOAD_RUN))
                kept = lessons.t("class.saved_runs", "en", n=999).split("999")[0]  # "Kept for your class: "
                for text in s.texts:
                    if text.startswith(kept):
                        me["lab_runs_kept"] += int(text[len(kept) :].split()[0])
        except NotDrawn as e:  # reported (and the run fails): the benchmark no longer finds what it clicks
            me["not_drawn"].append(e.args[0])
        me["page_errors"] = s.errors


PREDICT = "tk_predict_ch1_count"  # ui/predict.py's radio of views/ch1_inference_server.py's first question
# the lab click: chapter 1's send button (views/ch1_inference_server.py, in the kitchen section's fragment): one
# photo through image_classifier (preprocess -> classifier -> postprocess) on Triton, then the top-5 chart
LAB_CLICK = "ch1_classify"
ROUND_TRIP = lessons.t("classify.took", "en", ms=1.0, protocol="x", model="x").split("1.0")[
    0
]  # "Round trip "
LOCKSTEP_WINDOW_S = 0.05  # every click of one step is sent within this window
CLICK_TIMEOUT_S = 120  # an unanswered click (e.g. a fragment id the app no longer knows) fails the run


class Step:
    """One lockstep step: every student holds their prepared click until all are ready, then all are sent
    together. Records when each was sent, so the run can show they left within ``LOCKSTEP_WINDOW_S``, and the
    app's CPU seconds from the moment the first click of a step leaves until every click of it is answered
    (per kind of click: the step's name up to its first space)."""

    def __init__(self, parties: int) -> None:
        self.barrier = asyncio.Barrier(parties)
        self.sent: dict[str, list[float]] = {}
        self.pids: list[int] = []  # the app processes (set once they run)
        self.cpu_start: dict[str, float] = {}  # step name -> the apps' CPU seconds as its first click left
        self.cpu_s: dict[str, float] = {}  # kind of click -> the apps' CPU seconds over its steps
        self.clicks: dict[str, int] = {}  # kind of click -> clicks sent
        self._ended: set[str] = set()

    def _cpu(self) -> float:
        return sum(_cpu_s(pid) for pid in self.pids)

    async def click(self, s: Session, payload: bytes, name: str, me: dict) -> float:
        """Wait for every student, send ``payload`` at once, and return its latency (to its script_finished)."""
        await self.barrier.wait()  # every page loaded and every click prepared
        kind = name.split()[0]
        if name not in self.cpu_start:  # the first student to go on: nothing of this step was sent yet
            self.cpu_start[name] = self._cpu()
        self.sent.setdefault(name, []).append(await s.send(payload))
        self.clicks[kind] = self.clicks.get(kind, 0) + 1
        seconds = await s.wait(CLICK_TIMEOUT_S)
        if s.sent_fragment and s.whole_page_ran():  # the app ran the whole page for a click in a fragment
            me["whole_page_reruns"].append(name)
        if s.sent_fragment:
            me["fragment_clicks"] += 1
        await self.barrier.wait()  # the next step starts when every click of this one is answered
        if name not in self._ended:  # the first student on: every click of the step was answered
            self._ended.add(name)
            self.cpu_s[kind] = self.cpu_s.get(kind, 0.0) + self._cpu() - self.cpu_start[name]
        return seconds

    def cpu_s_per_click(self, kind: str) -> float | None:
        """The apps' CPU seconds (user + system) per click of this kind, over its steps only."""
        return round(self.cpu_s[kind] / self.clicks[kind], 4) if self.clicks.get(kind) else None

    def spread_ms(self) -> float:
        """The widest gap between the first and the last click of one step, in milliseconds."""
        return round(max((max(t) - min(t) for t in self.sent.values()), default=0.0) * 1000, 1)


async def lockstep_student(
    i: int, base: str, questions: list[lessons.Question], step: Step, lab: bool, out: dict
) -> None:
    """Like ``student``, with every click sent in the same instant as every other student's: first the
    predict-first radio of chapter 1's first live element, then for each question the choice and the Check,
    then (``lab``) that live element's send button (``LAB_CLICK``)."""
    name = f"s{i:02d}"
    query = f"lang=en&student={name}&class={CLASS}"
    me = out[name] = {"quiz_clicks_s": [], "choice_clicks_s": [], "predict_clicks_s": [], "answers_sent": 0}
    me.update(answers_shown=0, not_drawn=[], page_errors=[], whole_page_reruns=[], fragment_clicks=0)
    me.update(lab_clicks_s=[], lab_runs_kept=0, lab_answers_shown=0)
    async with Session(base, "ch1", query) as s:
        try:
            try:
                await s.run()
                await s.run({lesson_ui.quiz_key(1): {"bool_value": True}})  # the reader opens the quiz's box
                if not s.options.get(PREDICT):
                    raise NotDrawn(PREDICT)
                payload = s.prepare({PREDICT: {"string_value": s.options[PREDICT][0]}})
            except NotDrawn:
                step.barrier.abort()  # the others stop at their next step: the run fails
                raise
            me["predict_clicks_s"].append(await step.click(s, payload, "predict", me))
            for n, q in enumerate(questions):
                radio, check = quiz_keys(1, q)
                if not s.options.get(radio):
                    step.barrier.abort()
                    raise NotDrawn(radio)
                payload = s.prepare({radio: {"string_value": s.options[radio][0]}})
                me["choice_clicks_s"].append(await step.click(s, payload, f"choice {n}", me))
                if check not in s.ids:
                    step.barrier.abort()
                    raise NotDrawn(check)
                payload = s.prepare(click=check)
                me["quiz_clicks_s"].append(await step.click(s, payload, f"check {n}", me))
                me["answers_sent"] += 1
                me["answers_shown"] += s.disabled.get(radio, False)  # answered: its radio is drawn locked
            if lab:  # everyone sends a photo through Triton at once (chapter 1's send button)
                if LAB_CLICK not in s.ids or s.disabled.get(LAB_CLICK):
                    step.barrier.abort()
                    raise NotDrawn(LAB_CLICK)
                payload = s.prepare(click=LAB_CLICK)
                me["lab_clicks_s"].append(await step.click(s, payload, "lab", me))
                me["lab_answers_shown"] += any(text.startswith(ROUND_TRIP) for text in s.texts)
        except NotDrawn as e:
            me["not_drawn"].append(e.args[0])
        except asyncio.BrokenBarrierError:  # another student did not find what they click
            pass
        except TimeoutError:
            me["page_errors"].append(f"no answer to a click within {CLICK_TIMEOUT_S} s")
            step.barrier.abort()
        me["page_errors"] += s.errors


async def class_of(
    bases: list[str], n: int, questions: list[lessons.Question], lab: bool, step: Step | None = None
) -> dict:
    out: dict = {}
    if step is not None:
        await asyncio.gather(
            *(lockstep_student(i, bases[i % len(bases)], questions, step, lab, out) for i in range(n))
        )
    else:
        await asyncio.gather(*(student(i, bases[i % len(bases)], questions, lab, out) for i in range(n)))
    return out


# -- paced: a class working through chapter 1 at its own pace ----------------------------------------
LAB_WAIT_S = 600  # a lab run (queued or running) that has not finished by then fails the run


def _percentiles(values: list[float], digits: int = 3) -> dict | None:
    """p50 (median), p90, p99 (nearest rank) and max."""
    values = sorted(values)
    if not values:
        return None

    def rank(q: float) -> float:
        return round(values[math.ceil(q * len(values)) - 1], digits)

    return {
        "n": len(values),
        "p50": round(statistics.median(values), digits),
        "p90": rank(0.9),
        "p99": rank(0.99),
        "max": round(values[-1], digits),
    }


def _kept_runs(texts: list[str]) -> int:
    """The lab runs the page said it kept for the class ("Kept for your class: n run(s).")."""
    kept = lessons.t("class.saved_runs", "en", n=999).split("999")[0]
    return sum(int(text[len(kept) :].split()[0]) for text in texts if text.startswith(kept))


def _said_busy(texts: list[str]) -> bool:
    """Whether the page said the class's lab budget was taken ("The lab is busy: ...")."""
    busy = lessons.t("lab.busy", "en", used=999, total=999, runs=999).split("999")[0]
    return any(text.startswith(busy) for text in texts)


class Paced:
    """What a paced student does and how long each click took: the plan of one reader of chapter 1 (the first
    section's live element: predict, send; then each further section's box; then the quiz's box and each
    question's choice and Check), then, until the time is up, what a reader does after (a section's box closed or
    opened again, another prediction, another photo sent). Between two clicks the student thinks
    ``think`` seconds (uniform)."""

    def __init__(self, minutes: float, think: tuple[float, float], questions, sections: list[str]) -> None:
        self.seconds, self.think = minutes * 60, think
        self.questions, self.sections = questions, sections
        self.start = self.end = 0.0

    def begin(self) -> None:
        self.start = time.perf_counter()
        self.end = self.start + self.seconds

    def left(self) -> float:
        return self.end - time.perf_counter()


async def _paced_click(s: Session, me: dict, kind: str, set_=None, click=None) -> None:
    seconds = await s.run(set_, click)
    me["clicks"].setdefault(kind, []).append(seconds)
    me["whole_page"] += s.whole_page_ran()


async def paced_student(i: int, base: str, plan: Paced, seed: int, out: dict) -> None:
    name = f"s{i:02d}"
    rng = random.Random(f"{seed}-{name}")
    query = f"lang=en&student={name}&class={CLASS}"
    me = out[name] = {"clicks": {}, "page_load_s": [], "answers_sent": 0, "answers_shown": 0}
    me.update(whole_page=0, sends_shown=0, not_drawn=[], page_errors=[], lab_clicks_s=[], lab_runs_kept=0)
    me.update(lab_runs_busy=0, lab_runs_started=0)
    await asyncio.sleep(rng.uniform(0, min(10.0, plan.seconds / 6)))  # the class does not arrive at once
    async with Session(base, "ch1", query) as s:
        try:
            me["page_load_s"].append(await s.run())

            async def predict():
                if not s.options.get(PREDICT):
                    raise NotDrawn(PREDICT)
                await _paced_click(
                    s, me, "predict", {PREDICT: {"string_value": rng.choice(s.options[PREDICT])}}
                )

            async def send():
                if LAB_CLICK not in s.ids or s.disabled.get(LAB_CLICK):
                    raise NotDrawn(LAB_CLICK)
                await _paced_click(s, me, "send", click=LAB_CLICK)
                me["sends_shown"] += any(text.startswith(ROUND_TRIP) for text in s.texts)

            opened = {plan.sections[0]}  # the first section's box starts open

            def box(section: str, open_: bool = True):
                async def go():
                    key = lesson_ui.section_key(1, section)
                    if key not in s.ids:
                        raise NotDrawn(key)
                    await _paced_click(s, me, "box", {key: {"bool_value": open_}})
                    (opened.add if open_ else opened.discard)(section)

                return go

            async def quiz_box():
                if lesson_ui.quiz_key(1) not in s.ids:
                    raise NotDrawn(lesson_ui.quiz_key(1))
                await _paced_click(s, me, "box", {lesson_ui.quiz_key(1): {"bool_value": True}})

            def answer(q):
                radio, check = quiz_keys(1, q)

                async def choose():
                    if not s.options.get(radio):
                        raise NotDrawn(radio)
                    await _paced_click(
                        s, me, "choice", {radio: {"string_value": rng.choice(s.options[radio])}}
                    )

                async def check_():
                    if check not in s.ids:
                        raise NotDrawn(check)
                    await _paced_click(s, me, "check", click=check)
                    me["answers_sent"] += 1
                    me["answers_shown"] += s.disabled.get(radio, False)  # answered: drawn locked

                return [choose, check_]

            steps = [predict, send, *(box(x) for x in plan.sections[1:]), quiz_box]
            steps += [step for q in plan.questions for step in answer(q)]
            while True:
                await asyncio.sleep(rng.uniform(*plan.think))
                if plan.left() <= 0:
                    break
                if steps:
                    await steps.pop(0)()
                    continue
                later = rng.choice(("box", "predict", "send"))  # what a reader does after the plan
                if later == "box" and plan.sections[1:]:
                    section = rng.choice(plan.sections[1:])  # never the first: its live element stays drawn
                    await box(section, section not in opened)()
                else:
                    await (predict if later == "predict" else send)()
        except NotDrawn as e:
            me["not_drawn"].append(e.args[0])
        except TimeoutError:
            me["page_errors"].append(f"no answer to a click within {CLICK_TIMEOUT_S} s")
        me["page_errors"] += s.errors


async def paced_lab(i: int, base: str, plan: Paced, seed: int, conc: int, secs: int, out: dict) -> None:
    """Student ``i``'s second tab: the protocol lab's load test, run again and again until the time is up
    (``conc`` concurrency, ``secs`` seconds each; the page's defaults are 4 and 3)."""
    name = f"s{i:02d}"
    rng = random.Random(f"{seed}-{name}-lab")
    me = out[name]
    await asyncio.sleep(rng.uniform(0, min(10.0, plan.seconds / 6)))
    async with Session(base, LAB_PAGE, f"lang=en&student={name}&class={CLASS}") as s:
        try:
            await s.run()
            if not s.drawn(LOAD_RUN):  # the lab's tabs draw only the open one: open the load test's
                if "proto_tabs" not in s.ids:
                    raise NotDrawn("proto_tabs")
                await s.run({"proto_tabs": {"string_value": lessons.t("lab_protocols.tab_load", "en")}})
            for key in ("proto_load_c", "proto_load_d"):
                if key not in s.ids:
                    raise NotDrawn(key)
            await s.run(
                {
                    "proto_load_c": {"double_array_value": [conc]},
                    "proto_load_d": {"double_array_value": [secs]},
                }
            )
            while plan.left() > 0:
                if LOAD_RUN not in s.ids:
                    raise NotDrawn(LOAD_RUN)
                me["lab_runs_started"] += 1
                await s.send(s.prepare(click=LOAD_RUN))
                me["lab_clicks_s"].append(await s.wait(LAB_WAIT_S))
                me["lab_runs_kept"] += _kept_runs(s.texts)
                me["lab_runs_busy"] += _said_busy(s.texts)
                await asyncio.sleep(rng.uniform(1.0, 3.0))  # reads the result, presses again
        except NotDrawn as e:
            me["not_drawn"].append(e.args[0])
        except TimeoutError:
            me["page_errors"].append(f"a lab run did not finish within {LAB_WAIT_S} s")
        me["page_errors"] += s.errors


async def paced_class(bases: list[str], n: int, labs: int, plan: Paced, args) -> dict:
    out: dict = {}
    plan.begin()
    chapter = [
        asyncio.ensure_future(paced_student(i, bases[i % len(bases)], plan, args.seed, out)) for i in range(n)
    ]
    await asyncio.sleep(0)  # every student's record exists before their lab tab adds to it
    lab = [
        paced_lab(i, bases[i % len(bases)], plan, args.seed, args.lab_concurrency, args.lab_seconds, out)
        for i in range(labs)
    ]
    await asyncio.gather(*chapter, *lab)
    return out


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _tree_cpu_s(pid: int) -> float:
    """CPU seconds of a process with its child processes (a lab's worker process, say): its own user + system,
    its waited-for children's, and every live descendant's (Linux /proc)."""
    stats: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stats[int(entry.name)] = (entry / "stat").read_text().rsplit(")", 1)[1].split()
    family, total = {pid}, 0.0
    for _ in range(8):  # descendants a few generations down
        family |= {p for p, f in stats.items() if int(f[1]) in family}
    for p in family & stats.keys():
        total += sum(int(x) for x in stats[p][11:15])  # utime, stime, cutime, cstime
    return total / os.sysconf("SC_CLK_TCK")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


@contextlib.contextmanager
def database(kind: str):
    if kind == "sqlite":
        folder = tempfile.mkdtemp(prefix="tk-class-")
        yield f"sqlite:///{folder}/class.db"
        return
    from _postgres import postgres_server

    with postgres_server() as url:
        yield url


def _spread(values: list[float], digits: int) -> dict | None:
    values = sorted(values)
    if not values:
        return None
    p90 = values[math.ceil(0.9 * len(values)) - 1]  # nearest rank
    return {
        "p50": round(statistics.median(values), digits),
        "p90": round(p90, digits),
        "max": round(values[-1], digits),
    }


def _warm_up(base: str) -> None:
    """One visitor (no student, no class) opens chapter 1 and the protocol lab before the class comes, as a
    teacher checking the app does: the app's first run imports the pages' libraries, which is neither a
    student's memory nor a click's CPU."""

    async def visit():
        async with Session(base, "ch1", "lang=en") as s:
            await s.run()
            await s.run(page=LAB_PAGE)

    asyncio.run(visit())


def run_class(args, ep, n: int, questions: list[lessons.Question]) -> tuple[dict, bool]:
    """One class of ``n`` students on fresh app process(es) and a fresh class database: the figures, and
    whether the run is complete (every widget found, no exception, nothing lost)."""
    procs: list[subprocess.Popen] = []
    mode = "paced" if args.paced else "lockstep" if args.lockstep else "free"
    lab = not args.no_lab and mode != "paced"
    load0 = os.getloadavg()
    with database(args.database) as url:
        os.environ["TRITON_KITCHEN_DATABASE_URL"] = url
        try:
            bases = []
            for k in range(args.apps):
                port = free_port()
                procs.append(start_streamlit("app.py", port, OUT / f"class_load_app{k}.log"))
                bases.append(f"http://127.0.0.1:{port}")
            if args.warm_up:
                for base in bases:
                    _warm_up(base)
            step = Step(n) if mode == "lockstep" else None
            if step is not None:
                step.pids = [p.pid for p in procs]
            rss0 = sum(_rss_mb(p.pid) for p in procs)
            cpu0, t0 = sum(_cpu_s(p.pid) for p in procs), time.perf_counter()
            tree0 = sum(_tree_cpu_s(p.pid) for p in procs)
            if mode == "paced":
                sections = list(lessons.load_lesson(1, "en").sections)
                plan = Paced(args.paced, args.think, questions, sections)
                per_student = asyncio.run(paced_class(bases, n, args.lab_students, plan, args))
            else:
                per_student = asyncio.run(class_of(bases, n, questions, lab, step))
            wall = time.perf_counter() - t0
            cpu = sum(_cpu_s(p.pid) for p in procs) - cpu0
            tree = sum(_tree_cpu_s(p.pid) for p in procs) - tree0
            rss = sum(_rss_mb(p.pid) for p in procs)
            store = ClassStore(url)
            report = class_report(store, CLASS)
            store.dispose()
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(20)

    students = per_student.values()
    sent = sum(s["answers_sent"] for s in students)
    kept = sum(s["lab_runs_kept"] for s in students)
    not_drawn = sorted({key for s in students for key in s["not_drawn"]})
    page_errors = sorted({e for s in students for e in s["page_errors"]})
    result = {
        "mode": mode,
        "database": args.database,
        "apps": args.apps,
        "students": n,
        "questions": [q.id for q in questions],
        "lab": lab if mode != "paced" else args.lab_students > 0,
        "warm_up": args.warm_up,
        "wall_s": round(wall, 1),
        "load_average_before": [round(x, 2) for x in load0],  # os.getloadavg(): 1, 5, 15 minutes
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "cpu_count": os.cpu_count(),
    }
    if mode == "paced":
        clicks = [c for s in students for kind in s["clicks"].values() for c in kind]
        kinds = sorted({k for s in students for k in s["clicks"]})
        result.update(
            minutes=args.paced,
            think_s=list(args.think),
            seed=args.seed,
            lab_students=args.lab_students,
            lab_concurrency=args.lab_concurrency,
            lab_seconds=args.lab_seconds,
            answers_sent=sent,
        )
    else:
        clicks_n = sum(
            len(s[k])
            for s in students
            for k in ("quiz_clicks_s", "choice_clicks_s", "predict_clicks_s", "lab_clicks_s")
            if k in s
        )
        result.update(answers_expected=n * len(questions), answers_sent=sent)
    result.update(
        answers_shown=sum(s["answers_shown"] for s in students),
        answers_in_database=report["quiz_answers"],
        answers_lost=sent - report["quiz_answers"],
        lab_runs_kept_on_page=kept,
        lab_runs_in_database=report["lab_runs"],
        lab_runs_lost=kept - report["lab_runs"],
        students_in_database=report["students"],
        not_drawn=not_drawn,  # keys the benchmark looked for and the page did not draw
        page_errors=page_errors,  # exceptions the page showed during the run
    )
    if mode == "paced":
        result.update(
            clicks=len(clicks),
            # every chapter click (box, predict, send, choice, Check): seconds to its run's script_finished
            click_s=_percentiles(clicks),
            click_s_by_kind={
                k: _percentiles([c for s in students for c in s["clicks"].get(k, [])]) for k in kinds
            },
            whole_page_clicks=sum(
                s["whole_page"] for s in students
            ),  # of them, answered by a run of the page
            sends_shown=sum(s["sends_shown"] for s in students),  # send clicks that drew their round trip
            page_load_s=_percentiles([c for s in students for c in s["page_load_s"]]),
            lab_runs_started=sum(s["lab_runs_started"] for s in students),
            lab_runs_busy=sum(s["lab_runs_busy"] for s in students),  # the page said the lab was busy
            # a load run's click: seconds until its run finished (the run itself, or waiting its turn)
            lab_run_s=_percentiles([c for s in students for c in s["lab_clicks_s"]], 2),
            app_cpu_s=round(cpu, 2),  # the app processes' own (the interpreter every click runs in)
            app_with_children_cpu_s=round(tree, 2),  # with their child processes (a lab worker, say)
            # the apps' CPU seconds over the whole run (lab runs and page loads included) per chapter click
            app_cpu_s_per_click=round(cpu / len(clicks), 4) if clicks else None,
            app_rss_mb_per_student=round((rss - rss0) / n, 1),
        )
        complete = not not_drawn and not page_errors and sent == result["answers_shown"] and bool(clicks)
        complete = complete and result["lab_runs_started"] >= args.lab_students
        return result, complete and result["answers_lost"] == 0 and result["lab_runs_lost"] == 0
    if step is not None and step.clicks.get(
        "lab"
    ):  # the CPU per click of the quiz part, as before the lab click
        cpu_quiz, clicks_quiz = cpu - step.cpu_s["lab"], clicks_n - step.clicks["lab"]
    else:
        cpu_quiz, clicks_quiz = cpu, clicks_n
    result.update(
        quiz_click_s=_spread([c for s in students for c in s["quiz_clicks_s"]], 3),
        lab_click_s=_spread([c for s in students for c in s["lab_clicks_s"]], 3),
        app_cpu_s=round(cpu, 2),  # user + system seconds of the app processes during the class
        app_with_children_cpu_s=round(tree, 2),  # with their child processes (a lab worker, say)
        # all page loads and clicks but the lab step's (its CPU is in cpu_s_per_click["lab"])
        app_cpu_s_per_click=round(cpu_quiz / clicks_quiz, 4) if clicks_quiz else None,
        # the apps' memory growth from before the first student connected to the end, per student
        app_rss_mb_per_student=round((rss - rss0) / n, 1),
    )
    if step is not None:
        result.update(
            send_spread_ms=step.spread_ms(),  # the widest first-to-last gap of one step's clicks
            choice_click_s=_spread([c for s in students for c in s["choice_clicks_s"]], 3),
            predict_click_s=_spread([c for s in students for c in s["predict_clicks_s"]], 3),
            # the apps' CPU seconds per click of each kind, counted over that kind's steps only
            cpu_s_per_click={k: step.cpu_s_per_click(k) for k in ("predict", "choice", "check", "lab")},
            lab_answers_shown=sum(s["lab_answers_shown"] for s in students),  # sends that drew a round trip
            fragment_clicks=sum(s["fragment_clicks"] for s in students),
            # clicks sent inside a fragment that the app answered with a run of the whole page
            whole_page_reruns=sorted({r for s in students for r in s["whole_page_reruns"]}),
        )
    complete = (
        not not_drawn and not page_errors and sent == result["answers_shown"] == result["answers_expected"]
    )
    if step is not None:
        complete = complete and result["send_spread_ms"] <= LOCKSTEP_WINDOW_S * 1000
        if lab:
            complete = complete and result["lab_answers_shown"] == n
    return result, complete and result["answers_lost"] == 0 and result["lab_runs_lost"] == 0


def _table(results: list[dict]) -> str:
    """The per-size lockstep figures as a Markdown table (seconds; CPU s per click; MB per student)."""

    def cell(r: dict, key: str) -> str:
        x = r.get(key)
        return f"{x['p50']:.2f} / {x['p90']:.2f} / {x['max']:.2f}" if x else "-"

    lines = [
        "| students | quiz Check p50/p90/max | predict p50/p90/max | send (lab) p50/p90/max | CPU s/click "
        "check, predict, send | RSS MB/student | lost |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        cpu = r.get("cpu_s_per_click", {})
        cpus = ", ".join(
            f"{cpu.get(k):.3f}" if cpu.get(k) is not None else "-" for k in ("check", "predict", "lab")
        )
        lines.append(
            f"| {r['students']} | {cell(r, 'quiz_click_s')} | {cell(r, 'predict_click_s')} | "
            f"{cell(r, 'lab_click_s')} | {cpus} | {r['app_rss_mb_per_student']} | {r['answers_lost']} |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--students", type=int, default=30)
    ap.add_argument("--database", choices=("sqlite", "postgresql"), default="sqlite")
    ap.add_argument("--apps", type=int, choices=(1, 2), default=1, help="app processes (on as many ports)")
    ap.add_argument("--questions", type=int, default=4, help="chapter-1 questions each student answers")
    ap.add_argument("--no-lab", action="store_true", help="quiz only (with --lockstep: no send step)")
    ap.add_argument(
        "--lockstep",
        action="store_true",
        help="every student's page and quiz box first; then each click (chapter 1's predict-first radio, then "
        "each question's choice and Check, then chapter 1's send button) sent by all students within 50 ms",
    )
    ap.add_argument(
        "--sizes",
        help="with --lockstep: one class per size, e.g. 5,10,20,30,50 (each on a fresh app and database)",
    )
    ap.add_argument(
        "--paced",
        type=float,
        metavar="MINUTES",
        help="the students work through chapter 1 at their own pace for MINUTES while --lab-students of them "
        "run the protocol lab's load test again and again in a second tab",
    )
    ap.add_argument("--lab-students", type=int, default=5, help="with --paced: students running the lab")
    ap.add_argument("--lab-concurrency", type=int, default=4, help="with --paced: the load's concurrency")
    ap.add_argument("--lab-seconds", type=int, default=10, help="with --paced: each load run's seconds")
    ap.add_argument(
        "--think",
        type=lambda v: tuple(float(x) for x in v.split(",")),
        default=(3.0, 20.0),
        help="with --paced: a student's seconds between two clicks, uniform in MIN,MAX (default 3,20)",
    )
    ap.add_argument("--seed", type=int, default=0, help="with --paced: the students' random choices")
    ap.add_argument(
        "--no-warm-up",
        dest="warm_up",
        action="store_false",
        help="no visitor opens chapter 1 and the lab before the class (the app's first imports then count "
        "in the students' memory and CPU)",
    )
    ap.add_argument("--metrics-url", help="with --url: the running server's metrics host:port")
    ap.add_argument("--json", help="also write the figures to this file")
    add_server_args(ap)
    args = ap.parse_args()
    if args.sizes and not args.lockstep:
        ap.error("--sizes goes with --lockstep")
    if args.paced and args.lockstep:
        ap.error("--paced and --lockstep are two different runs")

    questions = lessons.load_quiz(1, "en")
    questions = questions if args.paced else questions[: args.questions]
    with server_for(args) as ep:
        os.environ.update(TRITON_HTTP_URL=ep.http_url, TRITON_GRPC_URL=ep.grpc_url)
        if ep.metrics_url or args.metrics_url:
            os.environ["TRITON_METRICS_URL"] = args.metrics_url or ep.metrics_url
        os.environ.pop("TRITON_KITCHEN_TEACHER_TOKEN", None)
        sizes = [int(x) for x in args.sizes.split(",")] if args.sizes else [args.students]
        runs = []
        for n in sizes:
            runs.append(run_class(args, ep, n, questions))
            print(json.dumps(runs[-1][0], indent=2), flush=True)
    if args.sizes:
        result = {"mode": "lockstep", "sizes": sizes, "table": [r for r, _ in runs]}
        print(_table(result["table"]))
    else:
        result = runs[0][0]
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0 if all(ok for _, ok in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
