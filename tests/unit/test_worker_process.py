"""A run in a worker process: its progress comes back to the caller's thread, a stop goes in, its result and its
exceptions come back as themselves, and a caller that leaves early takes the worker down."""

from __future__ import annotations

import os
import threading
import time

import pytest

from triton_kitchen.core.kserve import KServeError
from triton_kitchen.tools.load import LoadSpecError
from triton_kitchen.tools.worker_process import WorkerError, run_in_worker


def count(n: int, *, report, stop, pause_s: float = 0.02):
    """Counts to ``n``, reporting each step and its process id; stops early when asked."""
    for i in range(n):
        if stop.is_set():
            return ("stopped", i)
        report((i, os.getpid()))
        time.sleep(pause_s)
    return ("done", n)


def big_result_after_stop(*, report, stop):
    """Reports until stopped, then returns more than a pipe holds (as a stopped load run returns its latencies)."""
    while not stop.is_set():
        report((0, os.getpid()))
        time.sleep(0.02)
    return b"x" * 4_000_000


def niceness(*, report, stop) -> tuple[int, int]:
    """The worker's scheduling niceness, and that of a thread it starts (a load run's client threads)."""
    seen = []
    th = threading.Thread(target=lambda: seen.append(os.nice(0)))
    th.start()
    th.join()
    return os.nice(0), seen[0]


def refuse(*, report, stop):
    raise LoadSpecError("concurrency must be 1..16", "concurrency")


def answer_with_an_error(*, report, stop):
    return {"error": KServeError("http", "not ready", 503)}


def unpicklable(*, report, stop):
    return threading.Lock()


def die(*, report, stop):
    os._exit(3)


def test_progress_and_result_come_back_from_another_process():
    seen = []
    assert run_in_worker(count, 5, progress=seen.append) == ("done", 5)
    assert [i for i, _ in seen] == [0, 1, 2, 3, 4]
    assert {pid for _, pid in seen} != {os.getpid()}  # it ran elsewhere


def test_stop_reaches_the_worker():
    stop = threading.Event()

    def progress(value) -> None:
        if value[0] == 3:
            stop.set()

    t0 = time.perf_counter()
    result = run_in_worker(count, 10_000, progress=progress, stop=stop)
    assert result[0] == "stopped" and 3 <= result[1] < 20
    assert time.perf_counter() - t0 < 10


def test_a_caller_that_leaves_takes_the_worker_down():
    """Whatever ``progress`` raises (a page's rerun after Stop) ends the worker: no process is left behind."""
    pids = []

    class Rerun(Exception):
        pass

    def progress(value) -> None:
        pids.append(value[1])
        raise Rerun

    with pytest.raises(Rerun):
        run_in_worker(count, 10_000, progress=progress, grace_s=5)
    with pytest.raises(ProcessLookupError):
        os.kill(pids[0], 0)


def test_a_caller_that_leaves_does_not_wait_for_a_big_result_nobody_reads():
    class Rerun(Exception):
        pass

    def progress(value) -> None:
        raise Rerun

    t0 = time.perf_counter()
    with pytest.raises(Rerun):
        run_in_worker(big_result_after_stop, progress=progress, grace_s=20)
    assert time.perf_counter() - t0 < 10  # the worker ended by itself, not at the grace's end


def test_exceptions_come_back_as_themselves():
    with pytest.raises(LoadSpecError) as info:
        run_in_worker(refuse)
    assert info.value.field == "concurrency" and info.value.code == "bad_load"
    result = run_in_worker(answer_with_an_error)  # an exception inside a result, with an __init__ of its own
    err = result["error"]
    assert isinstance(err, KServeError) and (err.code, err.detail, err.status) == ("http", "not ready", 503)


def test_what_cannot_come_back_and_a_dead_worker_say_so():
    with pytest.raises(WorkerError) as info:
        run_in_worker(unpicklable)
    assert info.value.code == "worker_failed" and "lock" in info.value.detail
    with pytest.raises(WorkerError) as info:
        run_in_worker(die)
    assert info.value.code == "worker_died" and "3" in info.value.detail


def test_warm_up_starts_the_fork_server_once_and_runs_still_work():
    from triton_kitchen.tools import worker_process

    worker_process.warm_up()
    worker_process.warm_up()  # once per process
    assert run_in_worker(count, 2, pause_s=0) == ("done", 2)


@pytest.mark.skipif(not hasattr(os, "nice"), reason="no scheduling niceness here")
def test_a_worker_and_its_threads_run_at_a_lower_priority_than_the_app():
    from triton_kitchen.tools.worker_process import NICE

    mine = os.nice(0)
    assert run_in_worker(niceness) == (min(19, mine + NICE), min(19, mine + NICE))


def test_a_worker_is_not_told_to_run_the_apps_main_module(monkeypatch):
    """Inside a Streamlit app ``__main__`` is the page's script: a worker must not run it first."""
    import sys
    import types

    from triton_kitchen.tools import worker_process

    page = types.ModuleType("__main__")
    page.__file__ = "/somewhere/app.py"
    page.__spec__ = None
    monkeypatch.setitem(sys.modules, "__main__", page)
    assert worker_process._preparation_without_main("x")["init_main_from_path"].endswith("app.py")
    worker_process._launching.on = True
    try:
        data = worker_process._preparation_without_main("x")
    finally:
        worker_process._launching.on = False
    assert "init_main_from_path" not in data and "init_main_from_name" not in data
    assert data["sys_path"] == sys.path  # the worker still imports what the app imports
