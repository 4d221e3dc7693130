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
        radio, then for each question the choice and the Check. Quiz only. A click's latency ends at its
        run's ``script_finished``. The JSON says ``"mode": "lockstep"``; ``fragment_clicks`` counts the clicks
        sent inside a fragment and ``whole_page_reruns`` names any the app answered with a run of the whole
        page instead; ``app_cpu_s_per_click`` and ``app_rss_mb_per_student`` are the app's CPU seconds
        (user + system, all clicks and page loads) per click and its memory growth per connected student.)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
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
LOCKSTEP_WINDOW_S = 0.05  # every click of one step is sent within this window
CLICK_TIMEOUT_S = 120  # an unanswered click (e.g. a fragment id the app no longer knows) fails the run


class Step:
    """One lockstep step: every student holds their prepared click until all are ready, then all are sent
    together. Records when each was sent, so the run can show they left within ``LOCKSTEP_WINDOW_S``."""

    def __init__(self, parties: int) -> None:
        self.barrier = asyncio.Barrier(parties)
        self.sent: dict[str, list[float]] = {}

    async def click(self, s: Session, payload: bytes, name: str, me: dict) -> float:
        """Wait for every student, send ``payload`` at once, and return its latency (to its script_finished)."""
        await self.barrier.wait()  # every page loaded and every click prepared
        self.sent.setdefault(name, []).append(await s.send(payload))
        seconds = await s.wait(CLICK_TIMEOUT_S)
        if s.sent_fragment and s.whole_page_ran():  # the app ran the whole page for a click in a fragment
            me["whole_page_reruns"].append(name)
        if s.sent_fragment:
            me["fragment_clicks"] += 1
        await self.barrier.wait()  # the next step starts when every click of this one is answered
        return seconds

    def spread_ms(self) -> float:
        """The widest gap between the first and the last click of one step, in milliseconds."""
        return round(max((max(t) - min(t) for t in self.sent.values()), default=0.0) * 1000, 1)


async def lockstep_student(
    i: int, base: str, questions: list[lessons.Question], step: Step, out: dict
) -> None:
    """Like ``student``, with every click sent in the same instant as every other student's: first the
    predict-first radio of chapter 1's first live element, then for each question the choice and the Check."""
    name = f"s{i:02d}"
    query = f"lang=en&student={name}&class={CLASS}"
    me = out[name] = {"quiz_clicks_s": [], "choice_clicks_s": [], "predict_clicks_s": [], "answers_sent": 0}
    me.update(answers_shown=0, not_drawn=[], page_errors=[], whole_page_reruns=[], fragment_clicks=0)
    me.update(lab_clicks_s=[], lab_runs_kept=0)
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
            *(lockstep_student(i, bases[i % len(bases)], questions, step, out) for i in range(n))
        )
    else:
        await asyncio.gather(*(student(i, bases[i % len(bases)], questions, lab, out) for i in range(n)))
    return out


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--students", type=int, default=30)
    ap.add_argument("--database", choices=("sqlite", "postgresql"), default="sqlite")
    ap.add_argument("--apps", type=int, choices=(1, 2), default=1, help="app processes (on as many ports)")
    ap.add_argument("--questions", type=int, default=4, help="chapter-1 questions each student answers")
    ap.add_argument("--no-lab", action="store_true", help="quiz only")
    ap.add_argument(
        "--lockstep",
        action="store_true",
        help="every student's page and quiz box first; then each click (chapter 1's predict-first radio, then "
        "each question's choice and Check) sent by all students within 50 ms; quiz only",
    )
    ap.add_argument("--metrics-url", help="with --url: the running server's metrics host:port")
    ap.add_argument("--json", help="also write the figures to this file")
    add_server_args(ap)
    args = ap.parse_args()

    questions = lessons.load_quiz(1, "en")[: args.questions]
    procs: list[subprocess.Popen] = []
    with server_for(args) as ep, database(args.database) as url:
        os.environ.update(
            TRITON_HTTP_URL=ep.http_url, TRITON_GRPC_URL=ep.grpc_url, TRITON_KITCHEN_DATABASE_URL=url
        )
        if ep.metrics_url or args.metrics_url:
            os.environ["TRITON_METRICS_URL"] = args.metrics_url or ep.metrics_url
        os.environ.pop("TRITON_KITCHEN_TEACHER_TOKEN", None)
        try:
            bases = []
            for k in range(args.apps):
                port = free_port()
                procs.append(start_streamlit("app.py", port, OUT / f"class_load_app{k}.log"))
                bases.append(f"http://127.0.0.1:{port}")
            step = Step(args.students) if args.lockstep else None
            rss0 = sum(_rss_mb(p.pid) for p in procs)
            cpu0, t0 = sum(_cpu_s(p.pid) for p in procs), time.perf_counter()
            lab = not args.no_lab and not args.lockstep
            per_student = asyncio.run(class_of(bases, args.students, questions, lab, step))
            wall = time.perf_counter() - t0
            cpu = sum(_cpu_s(p.pid) for p in procs) - cpu0
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

    def spread(values: list[float], digits: int) -> dict | None:
        values = sorted(values)
        if not values:
            return None
        p90 = values[math.ceil(0.9 * len(values)) - 1]  # nearest rank
        return {
            "p50": round(statistics.median(values), digits),
            "p90": round(p90, digits),
            "max": round(values[-1], digits),
        }

    students = per_student.values()
    clicks = sum(
        len(s[k])
        for s in students
        for k in ("quiz_clicks_s", "choice_clicks_s", "predict_clicks_s", "lab_clicks_s")
        if k in s
    )
    sent = sum(s["answers_sent"] for s in students)
    kept = sum(s["lab_runs_kept"] for s in students)
    not_drawn = sorted({key for s in students for key in s["not_drawn"]})
    page_errors = sorted({e for s in students for e in s["page_errors"]})
    result = {
        "mode": "lockstep" if args.lockstep else "free",
        "database": args.database,
        "apps": args.apps,
        "students": args.students,
        "questions": [q.id for q in questions],
        "lab": lab,
        "wall_s": round(wall, 1),
        "answers_expected": args.students * len(questions),
        "answers_sent": sent,
        "answers_shown": sum(s["answers_shown"] for s in students),
        "answers_in_database": report["quiz_answers"],
        "answers_lost": sent - report["quiz_answers"],
        "lab_runs_kept_on_page": kept,
        "lab_runs_in_database": report["lab_runs"],
        "lab_runs_lost": kept - report["lab_runs"],
        "students_in_database": report["students"],
        "not_drawn": not_drawn,  # keys the benchmark looked for and the page did not draw
        "page_errors": page_errors,  # exceptions the page showed during the run
        "quiz_click_s": spread([c for s in students for c in s["quiz_clicks_s"]], 3),
        "lab_click_s": spread([c for s in students for c in s["lab_clicks_s"]], 2),
        "app_cpu_s": round(cpu, 2),  # user + system seconds of the app processes during the class
        "app_cpu_s_per_click": round(cpu / clicks, 4) if clicks else None,
        # the apps' memory growth from before the first student connected to the end, per student
        "app_rss_mb_per_student": round((rss - rss0) / args.students, 1),
    }
    if step is not None:
        result.update(
            send_spread_ms=step.spread_ms(),  # the widest first-to-last gap of one step's clicks
            choice_click_s=spread([c for s in students for c in s["choice_clicks_s"]], 3),
            predict_click_s=spread([c for s in students for c in s["predict_clicks_s"]], 3),
            fragment_clicks=sum(s["fragment_clicks"] for s in students),
            # clicks sent inside a fragment that the app answered with a run of the whole page
            whole_page_reruns=sorted({r for s in students for r in s["whole_page_reruns"]}),
        )
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    complete = (
        not not_drawn and not page_errors and sent == result["answers_shown"] == result["answers_expected"]
    )
    if step is not None:
        complete = complete and result["send_spread_ms"] <= LOCKSTEP_WINDOW_S * 1000
    return 0 if complete and result["answers_lost"] == 0 and result["lab_runs_lost"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
