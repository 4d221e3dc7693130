"""A class at once: N Streamlit sessions against ONE app (and its embedded Triton server).

Each student session clicks "Classify" on chapter 1 once a second for the whole run; one more
session runs the protocol lab over and over; and every student's sidebar polls the server's status
as an open tab does (st.fragment(run_every=ui.sidebar.POLL_S)). Sessions speak Streamlit's own websocket protocol
(BackMsg / ForwardMsg protobufs), so every click runs the real page script in the real app process.

    python benchmarks/class_sessions.py                   # 30 students, 60 s
    python benchmarks/class_sessions.py --students 5 --duration 10 --json

Reports: requests, failures (a script that did not finish, an exception or an error box on the page,
or no top-5 chart), the p50/p99 round trip of a click (send -> script finished), and the peak RSS of
the app process (Streamlit, without the tritonserver child) sampled every 0.2 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import psutil
import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "benchmarks" / "out" / "class_sessions_app.log"
sys.path.insert(0, str(ROOT))

from _server import start_streamlit  # noqa: E402

from triton_kitchen.core.server import free_port  # noqa: E402


@dataclass
class RunResult:
    seconds: float
    ok: bool
    problems: list[str] = field(default_factory=list)
    charts: int = 0
    sent_at: float = 0.0  # perf_counter() when the click was sent


class StreamlitSession:
    """One browser tab, minus the browser: runs pages and clicks buttons over the websocket."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.ws = None
        self.pages: dict[str, str] = {}  # url path -> page_script_hash
        self.buttons: dict[str, str] = {}  # user key -> widget id
        self.disabled: dict[str, bool] = {}  # user key -> drawn disabled (no server yet)
        self.fragments: dict[str, str] = {}  # user key -> id of the st.fragment holding the button
        self.auto_reruns: dict[str, float] = {}  # fragment id -> interval (s) of st.fragment(run_every=...)

    async def __aenter__(self) -> StreamlitSession:
        self.ws = await websockets.connect(
            self.url, subprotocols=["streamlit"], max_size=None, open_timeout=30
        )
        return self

    async def __aexit__(self, *exc) -> None:
        await self.ws.close()

    async def run(
        self,
        page: str,
        query: str,
        click: str | None = None,
        timeout: float = 120.0,
        fragment: str | None = None,
    ) -> RunResult:
        msg = BackMsg()
        msg.rerun_script.query_string = query
        msg.rerun_script.page_name = page
        if fragment is not None:  # what the browser sends for st.fragment(run_every=...)
            msg.rerun_script.fragment_id = fragment
            msg.rerun_script.is_auto_rerun = True
        if page in self.pages:
            msg.rerun_script.page_script_hash = self.pages[page]
        if click is not None:
            widget = msg.rerun_script.widget_states.widgets.add()
            widget.id = self.buttons[click]
            widget.trigger_value = True
            if click in self.fragments:  # as the browser does: rerun only the button's fragment
                msg.rerun_script.fragment_id = self.fragments[click]
        t0 = time.perf_counter()
        await self.ws.send(msg.SerializeToString())
        result = RunResult(0.0, False, sent_at=t0)
        deadline = t0 + timeout
        while True:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                result.problems.append("timeout")
                break
            raw = await asyncio.wait_for(self.ws.recv(), remaining)
            fm = ForwardMsg()
            fm.ParseFromString(raw)
            kind = fm.WhichOneof("type")
            if kind == "auto_rerun":
                self.auto_reruns[fm.auto_rerun.fragment_id] = fm.auto_rerun.interval
            elif kind == "navigation":
                for p in fm.navigation.app_pages:
                    self.pages[p.url_pathname] = p.page_script_hash
            elif kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                self._look_at(fm.delta.new_element, result, fm.delta.fragment_id)
            elif kind == "script_finished":
                status = fm.script_finished
                if status in (
                    ForwardMsg.FINISHED_SUCCESSFULLY,
                    ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY,
                ):
                    result.ok = not result.problems
                else:
                    result.problems.append(f"script_finished={status}")
                break
        result.seconds = time.perf_counter() - t0
        return result

    def _look_at(self, element, result: RunResult, fragment_id: str) -> None:
        kind = element.WhichOneof("type")
        if kind == "button" and "-" in element.button.id:
            key = element.button.id.rsplit("-", 1)[-1]
            self.buttons[key] = element.button.id
            self.disabled[key] = element.button.disabled
            if fragment_id:
                self.fragments[key] = fragment_id
        elif kind == "exception":
            result.problems.append(f"exception: {element.exception.message[:200]}")
        elif kind == "alert" and element.alert.format == element.alert.ERROR:
            result.problems.append(f"error box: {element.alert.body[:200]}")
        elif kind == "plotly_chart":
            result.charts += 1


async def student(
    url: str, duration: float, period: float, out: list[RunResult], lang: str, delay: float
) -> None:
    await asyncio.sleep(delay)  # students come in over the first seconds, not all in one instant
    async with StreamlitSession(url) as s:
        first = await s.run("ch1", f"lang={lang}")
        if "ch1_classify" not in s.buttons:
            out.append(RunResult(first.seconds, False, ["no classify button", *first.problems]))
            return
        end = time.perf_counter() + duration
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            r = await s.run("ch1", f"lang={lang}", click="ch1_classify")
            if r.ok and r.charts == 0:
                r.ok, r.problems = False, ["no top-5 chart"]
            out.append(r)
            await asyncio.sleep(max(0.0, period - (time.perf_counter() - t0)))


async def status_poller(url: str, duration: float, lang: str, out: list[RunResult]) -> None:
    """A student's sidebar status fragment, polled as the browser polls it (a second tab's worth of load)."""
    async with StreamlitSession(url) as s:
        await s.run("ch1", f"lang={lang}")
        if not s.auto_reruns:
            return
        fragment, interval = next(iter(s.auto_reruns.items()))
        end = time.perf_counter() + duration
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            out.append(await s.run("ch1", f"lang={lang}", fragment=fragment))
            await asyncio.sleep(max(0.0, interval - (time.perf_counter() - t0)))


async def lab_student(url: str, duration: float, page: str, button: str, out: list[RunResult]) -> None:
    async with StreamlitSession(url) as s:
        await s.run(page, "lang=en")
        end = time.perf_counter() + duration
        while time.perf_counter() < end:
            if button not in s.buttons:
                out.append(RunResult(0.0, False, [f"no button {button!r} on {page}"]))
                return
            out.append(await s.run(page, "lang=en", click=button))


def sample_rss(pid: int, stop: threading.Event, peak: list[int]) -> None:
    proc = psutil.Process(pid)
    while not stop.wait(0.2):
        try:
            peak[0] = max(peak[0], proc.memory_info().rss)
        except psutil.NoSuchProcess:
            return


def start_app(port: int) -> subprocess.Popen:
    # full error details: the benchmark wants the real message of any failure
    return start_streamlit("app.py", port, LOG, "--client.showErrorDetails=full")


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


async def main_async(args, url: str) -> tuple[list[RunResult], list[RunResult], list[RunResult]]:
    clicks: list[RunResult] = []
    lab: list[RunResult] = []
    polls: list[RunResult] = []
    # Warm-up: the first session starts the embedded server (st.cache_resource) before the class arrives.
    async with StreamlitSession(url) as s:
        deadline = time.perf_counter() + 180
        while time.perf_counter() < deadline:
            await s.run("ch1", "lang=en", timeout=180)
            if s.disabled.get("ch1_classify") is False:
                break  # the server is up: the classify button is enabled
            await asyncio.sleep(1.0)
    spread = args.arrival / max(1, args.students)
    tasks = [
        student(url, args.duration, 1.0, clicks, "zh" if i % 2 else "en", i * spread)
        for i in range(args.students)
    ]
    if args.lab_page:
        tasks.append(lab_student(url, args.duration, args.lab_page, args.lab_button, lab))
    if not args.no_poll:
        tasks += [status_poller(url, args.duration, "en", polls) for _ in range(args.students + 1)]
    await asyncio.gather(*tasks)
    return clicks, lab, polls


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--lab-page", default="lab-protocols", help="url path of the lab page ('' for none)")
    parser.add_argument("--lab-button", default="proto_load_run", help="widget key of the lab's run button")
    parser.add_argument("--arrival", type=float, default=10.0, help="seconds over which the students arrive")
    parser.add_argument("--no-poll", action="store_true", help="leave out the sidebar's 1 s status polling")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    port = free_port()
    app = start_app(port)
    stop, peak = threading.Event(), [0]
    sampler = threading.Thread(target=sample_rss, args=(app.pid, stop, peak), daemon=True)
    sampler.start()
    try:
        clicks, lab, polls = asyncio.run(main_async(args, f"ws://127.0.0.1:{port}/_stcore/stream"))
    finally:
        stop.set()
        app.terminate()
        try:
            app.wait(20)
        except subprocess.TimeoutExpired:
            app.kill()
    times = [r.seconds * 1000 for r in clicks if r.ok]
    everyone_in = min((r.sent_at for r in clicks), default=0.0) + args.arrival + 5.0
    steady = [r.seconds * 1000 for r in clicks if r.ok and r.sent_at >= everyone_in]
    failures = [r for r in clicks if not r.ok]
    report = {
        "students": args.students,
        "duration_s": args.duration,
        "cores": os.cpu_count(),
        "classify_clicks": len(clicks),
        "failed": len(failures),
        "failure_examples": sorted({p for r in failures for p in r.problems})[:5],
        "click_ms": {
            "p50": percentile(times, 50),
            "p90": percentile(times, 90),
            "p99": percentile(times, 99),
        },
        "click_ms_after_arrival": {
            "clicks": len(steady),
            "p50": percentile(steady, 50),
            "p90": percentile(steady, 90),
            "p99": percentile(steady, 99),
        },
        "lab_runs": len(lab),
        "lab_failed": sum(not r.ok for r in lab),
        "lab_problems": sorted({p for r in lab for p in r.problems})[:5],
        "status_polls": len(polls),
        "status_polls_failed": sum(not r.ok for r in polls),
        "app_peak_rss_mb": round(peak[0] / 2**20, 1),
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for key, value in report.items():
            print(f"{key:>18}: {value}")
    return 0 if not failures and not report["lab_failed"] else 1


if __name__ == "__main__":
    sys.exit(main())
