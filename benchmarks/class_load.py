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
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

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
        states = [(k, v) for k, v in self.held.items() if k in self.ids]
        if click:
            states.append((click, {"trigger_value": True}))
        for key, value in states:
            msg.rerun_script.widget_states.widgets.append(self._state(key, **value))
        self.texts = []
        t0 = time.perf_counter()
        await self.ws.send(msg.SerializeToString())
        while True:
            fm = ForwardMsg()
            fm.ParseFromString(await asyncio.wait_for(self.ws.recv(), 300))
            kind = fm.WhichOneof("type")
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
                return time.perf_counter() - t0

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


async def class_of(bases: list[str], n: int, questions: list[lessons.Question], lab: bool) -> dict:
    out: dict = {}
    await asyncio.gather(*(student(i, bases[i % len(bases)], questions, lab, out) for i in range(n)))
    return out


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
            t0 = time.perf_counter()
            per_student = asyncio.run(class_of(bases, args.students, questions, not args.no_lab))
            wall = time.perf_counter() - t0
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
    sent = sum(s["answers_sent"] for s in students)
    kept = sum(s["lab_runs_kept"] for s in students)
    not_drawn = sorted({key for s in students for key in s["not_drawn"]})
    page_errors = sorted({e for s in students for e in s["page_errors"]})
    result = {
        "database": args.database,
        "apps": args.apps,
        "students": args.students,
        "questions": [q.id for q in questions],
        "lab": not args.no_lab,
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
    }
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    complete = (
        not not_drawn and not page_errors and sent == result["answers_shown"] == result["answers_expected"]
    )
    return 0 if complete and result["answers_lost"] == 0 and result["lab_runs_lost"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
