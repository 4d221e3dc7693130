"""Does a heavy lab run stall the class? Quiz-click latency of N students clicking in lockstep while L other
students run the protocol lab's load test, on one app process.

    python benchmarks/heavy_run_stall.py [--students 10] [--labs 0,1,2,5] [--lab-concurrency 4]
                                         [--lab-duration 5] [--repeats 1] [--json out.json]

One Triton (the embedded server, started here, or ``--url``) and, per case, a fresh ``streamlit run app.py``
(SQLite class database). Each case begins with one short load test (concurrency 1, 1 s: what a lab's first
run pays once in the app's life is paid before any click is timed). Then L lab students open the protocol lab's load tab, set its concurrency and
duration (the three default protocols) and press its run button again and again until the quiz students are
done; a run the page refuses ("the lab is busy") is pressed again a second later. Once the lab students have
sent their first click, N quiz students do what ``benchmarks/class_load.py --lockstep`` does (its functions,
imported: chapter 1's predict-first radio, then per question the choice and the Check, every click sent by every
student within 50 ms). A click's latency ends at its run's ``script_finished``.

Per case the JSON gives the quiz clicks' p50/p90/max (Check clicks; ``all_clicks_s``: predict, choice and Check
together), the lab clicks' outcomes (``lab_runs``: finished runs, ``lab_busy``: refused, ``lab_queued``: runs
that waited in line first), the app's CPU seconds, and the machine's load average (``uptime``) before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _server import add_server_args, server_for, start_streamlit  # noqa: E402
from class_load import LAB_PAGE, LOAD_RUN, Session, Step, database, lockstep_student  # noqa: E402

from triton_kitchen.core import lessons  # noqa: E402
from triton_kitchen.core.server import free_port  # noqa: E402

OUT = ROOT / "benchmarks" / "out"
LAB_START_S = 3.0  # the lab students' first click goes this long before the quiz students open their pages


def _prefix(key: str, **params) -> str:
    """The start of an en UI string up to its first parameter: what a page's text begins with."""
    marker = "\x00"
    return lessons.t(key, "en", **{k: marker for k in params}).split(marker)[0]


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def spread(values: list[float], digits: int = 3) -> dict | None:
    values = sorted(values)
    if not values:
        return None
    return {
        "n": len(values),
        "p50": round(statistics.median(values), digits),
        "p90": round(values[math.ceil(0.9 * len(values)) - 1], digits),  # nearest rank
        "max": round(values[-1], digits),
    }


async def lab_student(
    j: int, base: str, c: int, d: int, done: asyncio.Event, out: dict, runs: int | None = None
) -> None:
    """Press the load test's run button until ``done`` (or ``runs`` runs); counts finished, refused and queued
    runs."""
    name = f"lab{j:02d}"
    me = out[name] = {"runs": 0, "busy": 0, "queued": 0, "run_s": [], "page_errors": [], "not_drawn": []}
    busy = _prefix("lab.busy", used=0, total=0, runs=0)
    queued = _prefix("lab.queued", place=0) if lessons.t("lab.queued", "en") != "lab.queued" else None
    async with Session(base, LAB_PAGE, f"lang=en&student={name}&class=stall") as s:
        await s.run()
        if not s.drawn(LOAD_RUN):  # only the open tab is drawn: open the load test's
            await s.run({"proto_tabs": {"string_value": lessons.t("lab_protocols.tab_load", "en")}})
        await s.run(
            {"proto_load_c": {"double_array_value": [c]}, "proto_load_d": {"double_array_value": [d]}}
        )
        if not s.drawn(LOAD_RUN):
            me["not_drawn"].append(LOAD_RUN)
            return
        while not done.is_set() and (runs is None or me["runs"] < runs):
            seconds = await s.run(click=LOAD_RUN)
            texts = " ".join(s.texts)
            if busy in texts:
                me["busy"] += 1
                await asyncio.sleep(1.0)
                continue
            me["runs"] += 1
            me["run_s"].append(round(seconds, 2))
            me["queued"] += bool(queued and queued in texts)
        me["page_errors"] = s.errors


async def warm_up(base: str) -> None:
    """One short load test (concurrency 1, 1 s) before the case: what a lab's first run pays once in an app's
    life (imports, the worker processes' fork server) is paid before the clicks are timed."""
    await lab_student(99, base, 1, 1, asyncio.Event(), {}, runs=1)


async def case(base: str, students: int, labs: int, c: int, d: int, questions) -> dict:
    out: dict = {}
    labs_out: dict = {}
    done = asyncio.Event()
    await warm_up(base)
    lab_tasks = [asyncio.create_task(lab_student(j, base, c, d, done, labs_out)) for j in range(labs)]
    if labs:
        await asyncio.sleep(LAB_START_S)
    step = Step(students)
    load0 = _load()
    t0 = time.perf_counter()
    extra = {"lab": False} if "lab" in inspect.signature(lockstep_student).parameters else {}
    await asyncio.gather(
        *(lockstep_student(i, base, questions, step, out=out, **extra) for i in range(students))
    )
    wall = time.perf_counter() - t0
    load1 = _load()
    done.set()
    await asyncio.gather(*lab_tasks)
    quiz = [x for s in out.values() for x in s["quiz_clicks_s"]]
    every = [
        x
        for s in out.values()
        for k in ("quiz_clicks_s", "choice_clicks_s", "predict_clicks_s")
        for x in s[k]
    ]
    return {
        "students": students,
        "lab_students": labs,
        "lab_concurrency": c,
        "lab_duration_s": d,
        "quiz_click_s": spread(quiz),
        "all_clicks_s": spread(every),
        "send_spread_ms": step.spread_ms(),
        "quiz_wall_s": round(wall, 1),
        "answers_sent": sum(s["answers_sent"] for s in out.values()),
        "answers_shown": sum(s["answers_shown"] for s in out.values()),
        "lab_runs": sum(s["runs"] for s in labs_out.values()),
        "lab_busy": sum(s["busy"] for s in labs_out.values()),
        "lab_queued": sum(s["queued"] for s in labs_out.values()),
        "lab_run_s": spread([x for s in labs_out.values() for x in s["run_s"]], 1),
        "load_avg_before": load0,
        "load_avg_after": load1,
        "page_errors": sorted({e for s in [*out.values(), *labs_out.values()] for e in s["page_errors"]}),
        "not_drawn": sorted({k for s in [*out.values(), *labs_out.values()] for k in s["not_drawn"]}),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--students", type=int, default=10)
    ap.add_argument("--labs", default="0,1,2,5", help="lab students per case, comma-separated")
    ap.add_argument(
        "--lab-concurrency", type=int, default=4, help="the load tab's concurrency (its default: 4)"
    )
    ap.add_argument("--lab-duration", type=int, default=5, help="the load tab's duration in seconds")
    ap.add_argument("--questions", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=1, help="runs of each case")
    ap.add_argument("--json", help="also write the cases to this file")
    add_server_args(ap)
    args = ap.parse_args()
    questions = lessons.load_quiz(1, "en")[: args.questions]
    cases = []
    with server_for(args) as ep:
        for labs in [int(x) for x in args.labs.split(",")]:
            for _ in range(args.repeats):
                with database("sqlite") as url:
                    os.environ.update(
                        TRITON_HTTP_URL=ep.http_url,
                        TRITON_GRPC_URL=ep.grpc_url,
                        TRITON_KITCHEN_DATABASE_URL=url,
                    )
                    if ep.metrics_url:
                        os.environ["TRITON_METRICS_URL"] = ep.metrics_url
                    os.environ.pop("TRITON_KITCHEN_TEACHER_TOKEN", None)
                    port = free_port()
                    proc = start_streamlit("app.py", port, OUT / "heavy_run_stall_app.log")
                    try:
                        cpu0 = _cpu_s(proc.pid)
                        result = asyncio.run(
                            case(
                                f"http://127.0.0.1:{port}",
                                args.students,
                                labs,
                                args.lab_concurrency,
                                args.lab_duration,
                                questions,
                            )
                        )
                        result["app_cpu_s"] = round(_cpu_s(proc.pid) - cpu0, 1)
                    finally:
                        proc.terminate()
                        with contextlib.suppress(subprocess.TimeoutExpired):
                            proc.wait(20)
                print(json.dumps(result), flush=True)
                cases.append(result)
    if args.json:
        Path(args.json).write_text(json.dumps(cases, indent=2))
    print(
        f"{'labs':>4} {'p50':>6} {'p90':>6} {'max':>6} {'all p90':>7} {'runs':>4} {'busy':>4} {'load before/after'}"
    )
    for r in cases:
        q, a = r["quiz_click_s"] or {}, r["all_clicks_s"] or {}
        print(
            f"{r['lab_students']:>4} {q.get('p50', 0):>6} {q.get('p90', 0):>6} {q.get('max', 0):>6} "
            f"{a.get('p90', 0):>7} {r['lab_runs']:>4} {r['lab_busy']:>4} {r['load_avg_before']} {r['load_avg_after']}"
        )
    ok = all(not r["page_errors"] and not r["not_drawn"] for r in cases)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
