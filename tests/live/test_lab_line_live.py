"""Heavy lab runs off the app's interpreter, in the class's line. A load run in a worker process measures what
the same run measures in the app (requests answered, throughput, latency, the server's own split) and can be
stopped; in the real app, a load test that does not fit the class's workers waits in line with its place shown
(zh and en) and starts by itself when the run before it ends."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from pathlib import Path

from conftest import remote_env, streamlit_app

from triton_kitchen.core import catalog, lessons
from triton_kitchen.core.settings import LAB_WORKERS_ENV
from triton_kitchen.labs import protocol_runs
from triton_kitchen.tools.worker_process import run_in_worker

ROOT = Path(__file__).resolve().parents[2]


def test_a_load_run_in_a_worker_is_a_real_measurement(server):
    ask = protocol_runs.LoadAsk(catalog.CLASSIFIER, None, None, concurrency=2, duration_s=1.0)
    seen: list[tuple] = []
    out = run_in_worker(
        protocol_runs.load, server.endpoint, ask, ["grpc", "http-binary"], progress=seen.append
    )
    assert [r.protocol for r in out.results] == ["grpc", "http-binary"]
    for r in out.results:
        assert r.requests > 0 and r.errors == 0 and r.throughput_rps > 0, r
        assert r.latency_ms["p50"] and r.latency_ms["p50"] > 0 and len(r.latencies_ms) == r.requests
        assert r.stop_reason == "duration" and r.window_s >= 0.9
        assert r.server is not None, r.server_note  # the statistics API's split of the same window
    assert set(out.wire) == {"grpc", "http-binary"} and out.wire["grpc"].sent > 0  # the untimed byte count
    # each protocol said it began, then how far it was
    assert ("grpc", None) in seen and ("http-binary", None) in seen
    assert any(p is not None and p.done > 0 for _, p in seen)


def test_a_load_run_in_a_worker_stops_when_asked(server):
    ask = protocol_runs.LoadAsk(catalog.CLASSIFIER, None, None, concurrency=2, duration_s=30.0)
    stop = threading.Event()
    started = []

    def progress(reported: tuple) -> None:
        _, p = reported
        if p is not None and p.done > 0:
            started.append(time.perf_counter())
            stop.set()

    t0 = time.perf_counter()
    out = run_in_worker(
        protocol_runs.load, server.endpoint, ask, ["grpc", "http-json"], progress=progress, stop=stop
    )
    took = time.perf_counter() - t0
    assert started and took < 15, took  # 30 s asked; ended soon after the stop
    (r,) = out.results  # the second protocol never began
    assert r.stop_reason == "stopped" and r.requests > 0 and r.throughput_rps > 0
    assert out.wire == {}  # a stopped run counts no bytes


def _lab_session(base: str, lang: str, Session):
    return Session(base, "lab-protocols", f"lang={lang}")


async def _three_in_line(base: str) -> dict[str, list[str]]:
    """Three students press the load test with every worker's worth each: the first runs, the others wait."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from class_load import Session

    texts: dict[str, list[str]] = {}
    sessions = {"a": "en", "b": "zh", "c": "en"}
    async with (
        _lab_session(base, "en", Session) as a,
        _lab_session(base, "zh", Session) as b,
        _lab_session(base, "en", Session) as c,
    ):
        opened = dict(zip(sessions, (a, b, c), strict=True))
        for name, s in opened.items():
            await s.run()
            await s.run({"proto_tabs": {"string_value": lessons.t("lab_protocols.tab_load", sessions[name])}})
            await s.run(
                {"proto_load_c": {"double_array_value": [4]}, "proto_load_d": {"double_array_value": [1]}}
            )
        gaps = {"a": 0.0, "b": 1.5, "c": 1.0}  # a's run begins; b joins the line; then c
        for name, s in opened.items():
            await asyncio.sleep(gaps[name])
            await s.send(s.prepare(click="proto_load_run"))
        await asyncio.gather(*(s.wait(240) for s in opened.values()))
        for name, s in opened.items():
            texts[name] = list(s.texts)
            assert not s.errors, s.errors
    return texts


def test_a_run_that_does_not_fit_waits_in_line_with_its_place_shown(server):
    env = {**remote_env(server), LAB_WORKERS_ENV: "4", "TRITON_KITCHEN_DATABASE_URL": None}
    with streamlit_app(env, log_name="streamlit-lab-line.log") as (base, _proc):
        texts = asyncio.run(_three_in_line(base))

    def queued(lang: str, place: int) -> str:
        return lessons.t("lab.queued", lang, place=place, running=1, used=4, total=4)

    assert not any(queued("en", n) in texts["a"] for n in (1, 2))  # the first ran at once
    assert queued("zh", 1) in texts["b"], texts["b"]
    assert queued("en", 2) in texts["c"] and queued("en", 1) in texts["c"], texts["c"]  # c moved up
    done = {lang: lessons.t("lab_protocols.wire_pass_note", lang, calls=3) for lang in ("en", "zh")}
    assert done["en"] in texts["a"] and done["zh"] in texts["b"] and done["en"] in texts["c"]  # each one ran
    busy = lessons.t("lab.busy", "en", used=4, total=4, runs=1).split(":")[0]
    assert not any(t.startswith(busy) for ts in texts.values() for t in ts)


def _workers_of(app_pid: int) -> list[int]:
    """The app's lab worker processes: the children of its fork server (Linux /proc)."""
    procs = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
                cmd = (p / "cmdline").read_bytes()
            except (OSError, IndexError, ValueError):
                continue
            procs[int(p.name)] = (ppid, cmd)
    servers = [pid for pid, (ppid, cmd) in procs.items() if ppid == app_pid and b"forkserver" in cmd]
    return [pid for pid, (ppid, _) in procs.items() if ppid in servers]


async def _stop_a_run(base: str, app_pid: int) -> dict:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from class_load import Session

    async with Session(base, "lab-protocols", "lang=en") as s:
        await s.run()
        await s.run({"proto_tabs": {"string_value": lessons.t("lab_protocols.tab_load", "en")}})
        await s.run(
            {"proto_load_c": {"double_array_value": [2]}, "proto_load_d": {"double_array_value": [30]}}
        )
        await s.send(s.prepare(click="proto_load_run"))
        deadline = time.monotonic() + 60
        while not _workers_of(app_pid):  # the run is in its worker
            assert time.monotonic() < deadline, "no worker started"
            await asyncio.sleep(0.2)
        await asyncio.sleep(2.0)
        running = _workers_of(app_pid)
        await s.send(s.prepare(click="proto_stop"))  # outside the tabs' fragment: a rerun of the whole page
        t0 = time.perf_counter()
        for _ in range(3):  # the stopped run's end, then the page's rerun
            await s.wait(60)
            if s.last["status"] == "FINISHED_SUCCESSFULLY" and s.whole_page_ran():
                break
        took = time.perf_counter() - t0
        # the worker is told to stop and exits on its own; under load it can outlive the page's rerun a moment
        gone_by = time.monotonic() + 10
        while _workers_of(app_pid) and time.monotonic() < gone_by:
            await asyncio.sleep(0.1)
        left_after_s = round(time.perf_counter() - t0, 2)
        return {
            "running": running,
            "took": took,
            "left": _workers_of(app_pid),
            "left_after_s": left_after_s,
            "errors": s.errors,
        }


def test_stop_on_the_page_ends_the_run_and_its_worker(server):
    env = {**remote_env(server), "TRITON_KITCHEN_DATABASE_URL": None}
    with streamlit_app(env, log_name="streamlit-lab-stop.log") as (base, proc):
        out = asyncio.run(_stop_a_run(base, proc.pid))
    assert out["running"] and not out["errors"], out
    assert out["took"] < 15, out  # 3 x 30 s asked
    assert out["left"] == [], out  # no worker left behind (within 10 s of Stop)
