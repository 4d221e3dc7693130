"""A class at once: N students answer chapter 1's quiz and run the protocol lab through the real app, and every
answer and lab run must be in the class database afterwards.

    python benchmarks/class_load.py [--students 30] [--database sqlite|postgresql] [--apps 1|2] [--json out.json]

One Triton (``python -m triton_kitchen serve``'s embedded server) serves every app process, as a lab's GPU
Triton would. The apps are `streamlit run app.py` processes with TRITON_HTTP_URL/TRITON_GRPC_URL set to it and
TRITON_KITCHEN_DATABASE_URL set to the class database: a SQLite file, or a throwaway PostgreSQL server
(Debian's package, as in the tests) shared by ``--apps 2`` processes on two ports. Each student is one
Streamlit session driven over Streamlit's own websocket protocol (what a browser sends: a rerun with the
widgets' states), joined through the URL (``?student=sNN&class=load``). A click's latency is the seconds from
sending it until the app's script run finished. Afterwards the database is counted with ``class report`` and
compared with what the app answered: every quiz click that the page answered, and every lab run the page said
it kept ("Kept for your class: n run(s)").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
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

from _server import start_streamlit  # noqa: E402

from triton_kitchen.classroom import ClassStore, class_report  # noqa: E402
from triton_kitchen.core import lessons  # noqa: E402
from triton_kitchen.core.server import EmbeddedServer, free_port  # noqa: E402

OUT = ROOT / "benchmarks" / "out"
CLASS = "load"
KEPT = "Kept for your class:"  # ui.toml class.saved_runs (en)


class Session:
    """One browser tab's worth of Streamlit: a websocket session on one app process."""

    def __init__(self, base: str, page: str, query: str) -> None:
        self.url = base.replace("http://", "ws://") + "/_stcore/stream"
        self.page, self.query = page, query
        self.ids: dict[str, str] = {}  # widget key -> element id
        self.texts: list[str] = []

    async def __aenter__(self):
        import websockets

        self.ws = await websockets.connect(
            self.url, subprotocols=["streamlit"], max_size=None, open_timeout=60
        )
        return self

    async def __aexit__(self, *exc):
        await self.ws.close()

    async def run(self, states: list | None = None, page: str | None = None) -> float:
        """Send a rerun (with widget states) and wait until the script finished; returns seconds."""
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        msg = BackMsg()
        msg.rerun_script.query_string = self.query
        msg.rerun_script.page_name = page or self.page
        for s in states or []:
            msg.rerun_script.widget_states.widgets.append(s)
        self.texts = []
        t0 = time.perf_counter()
        await self.ws.send(msg.SerializeToString())
        while True:
            fm = ForwardMsg()
            fm.ParseFromString(await asyncio.wait_for(self.ws.recv(), 300))
            kind = fm.WhichOneof("type")
            if kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                el = fm.delta.new_element
                body = getattr(el, el.WhichOneof("type"))
                wid = getattr(body, "id", "")
                if wid.startswith("$$ID-") and wid.count("-") >= 2:  # "$$ID-<hash>-<user key>"
                    self.ids[wid.split("-", 2)[2]] = wid
                for field in ("body", "value", "label"):
                    text = getattr(body, field, None)
                    if isinstance(text, str) and text:
                        self.texts.append(text)
            elif kind == "script_finished":
                return time.perf_counter() - t0

    def state(self, key: str, **value):
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        s = WidgetState(id=self.ids[key])
        for k, v in value.items():
            if k == "double_array_value":
                s.double_array_value.data.extend(v)
            else:
                setattr(s, k, v)
        return s


async def student(i: int, base: str, questions: list[str], lab: bool, out: dict) -> None:
    name = f"s{i:02d}"
    query = f"lang=en&student={name}&class={CLASS}"
    clicks, answered, kept = [], 0, 0
    async with Session(base, "ch1", query) as s:
        await s.run()
        for qid in questions:
            radio, check = f"tk_quiz_1_{qid}", f"tk_quiz_check_1_{qid}"
            # a browser sends the choice first (the radio's change), then the click
            await s.run([s.state(radio, int_value=0)])
            clicks.append(await s.run([s.state(radio, int_value=0), s.state(check, trigger_value=True)]))
            answered += 1
        if lab:
            await s.run(page="lab-protocols")
            states = [
                s.state("proto_load_c", double_array_value=[1.0]),
                s.state("proto_load_d", double_array_value=[1.0]),
                s.state("proto_load_run", trigger_value=True),
            ]
            clicks.append(await s.run(states, page="lab-protocols"))
            for text in s.texts:
                if text.startswith(KEPT):
                    kept += int(text.split(":")[1].split("run")[0].strip())
    out[name] = {"clicks_s": clicks, "answered": answered, "lab_runs_kept": kept}


async def class_of(bases: list[str], n: int, questions: list[str], lab: bool) -> dict:
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
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()

    questions = [q.id for q in lessons.load_quiz(1, "en")][: args.questions]
    server = EmbeddedServer(http_port=0, grpc_port=0, metrics_port=0)
    ep = server.start(timeout=240)
    procs: list[subprocess.Popen] = []
    try:
        with database(args.database) as url:
            os.environ.update(
                TRITON_HTTP_URL=ep.http_url, TRITON_GRPC_URL=ep.grpc_url, TRITON_KITCHEN_DATABASE_URL=url
            )
            os.environ.pop("TRITON_KITCHEN_TEACHER_TOKEN", None)
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
        server.stop()

    clicks = sorted(c for s in per_student.values() for c in s["clicks_s"][: len(questions)])
    lab_clicks = sorted(c for s in per_student.values() for c in s["clicks_s"][len(questions) :])
    answered = sum(s["answered"] for s in per_student.values())
    kept = sum(s["lab_runs_kept"] for s in per_student.values())
    result = {
        "database": args.database,
        "apps": args.apps,
        "students": args.students,
        "wall_s": round(wall, 1),
        "answers_sent": answered,
        "answers_in_database": report["quiz_answers"],
        "answers_lost": answered - report["quiz_answers"],
        "lab_runs_kept_on_page": kept,
        "lab_runs_in_database": report["lab_runs"],
        "lab_runs_lost": kept - report["lab_runs"],
        "students_in_database": report["students"],
        "quiz_click_s": {
            "p50": round(statistics.median(clicks), 3),
            "p90": round(clicks[int(0.9 * (len(clicks) - 1))], 3),
            "max": round(clicks[-1], 3),
        },
        "lab_click_s": {"p50": round(statistics.median(lab_clicks), 2), "max": round(lab_clicks[-1], 2)}
        if lab_clicks
        else None,
    }
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0 if result["answers_lost"] == 0 and result["lab_runs_lost"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
