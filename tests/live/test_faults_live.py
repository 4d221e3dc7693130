"""Faults, against real servers: tritonserver killed mid-lesson and mid-benchmark, a wrong remote URL,
an unloaded model, the app-wide lab budget, the batching lab's override limits, a too-large upload.

One small server for the module (a one-model copy of the repository: ``classifier`` only, ~2-3 s to
start), killed and restarted here; the session's shared ``server`` fixture is never touched.

The tests of this topic that need no server, app or browser: tests/unit/test_faults.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import conftest
import pytest
from conftest import switch_page
from streamlit.testing.v1 import AppTest

from triton_kitchen.core import budget, lessons, override
from triton_kitchen.core.override import BatchingError
from triton_kitchen.core.server import DEFAULT_REPOSITORY, EmbeddedServer, free_port
from triton_kitchen.tools import batch_runs, bench
from triton_kitchen.tools.load import LoadSpec

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
TIMEOUT = 60


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A real tritonserver on a one-model repository (classifier), ours to kill."""
    repo = tmp_path_factory.mktemp("one-model")
    (repo / "classifier").symlink_to(DEFAULT_REPOSITORY / "classifier", target_is_directory=True)
    srv = EmbeddedServer(repo=repo, http_port=0, grpc_port=0, metrics_port=0)
    srv.start(timeout=120)
    yield srv
    srv.stop()


def kill_triton(srv: EmbeddedServer) -> None:
    """SIGKILL the tritonserver process itself (the supervisor's child), as a crash would."""
    out = subprocess.run(["pgrep", "-P", str(srv.pid)], capture_output=True, text=True).stdout.split()
    assert out, "tritonserver process not found"
    for pid in out:
        os.kill(int(pid), signal.SIGKILL)
    deadline = time.monotonic() + 5
    while srv.running and time.monotonic() < deadline:
        time.sleep(0.02)
    assert srv.died


@pytest.fixture
def embedded_app(small, monkeypatch):
    """The app's embedded-server supervisor given the small server (restored afterwards)."""
    monkeypatch.delenv("TRITON_HTTP_URL", raising=False)
    monkeypatch.delenv("TRITON_GRPC_URL", raising=False)
    monkeypatch.delenv("TRITON_KITCHEN_AUTO_RESTART", raising=False)
    from ui import server

    supervisor = server.supervisor()
    saved = supervisor.adopt(small)
    yield supervisor
    supervisor.restore(saved)


def sidebar_text(at: AppTest) -> str:
    els = [*at.sidebar.success, *at.sidebar.error, *at.sidebar.warning, *at.sidebar.caption]
    return "\n".join(str(e.value) for e in els)


@pytest.mark.app
@pytest.mark.browser
@pytest.mark.timing
def test_killed_server_is_reported_and_restarted(small, embedded_app):
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = "en"
    at.run()
    assert any("2.51" in s.value for s in at.sidebar.success), sidebar_text(at)
    restarts = small.restarts
    kill_triton(small)
    t0 = time.monotonic()
    at.run()
    said = time.monotonic() - t0
    assert not at.exception
    text = sidebar_text(at)
    assert "restarting" in text, text
    assert said < 2.0, f"the app took {said:.1f} s to say the server stopped"
    assert embedded_app.wait(60), "the server did not come back"
    assert small.restarts == restarts + 1 and small.running
    at.run()
    assert any("2.51" in s.value for s in at.sidebar.success), sidebar_text(at)
    # the log of the run that was killed is still there, beside the new one
    assert small.log_file.with_suffix(".log.previous").read_text().strip()


def test_live_trace_works_right_after_a_restart(small, sample_jpegs):
    """After a restart the flow lab's trace works at once (it once failed ~19 sends in a row)."""
    import numpy as np
    import tritonclient.grpc as grpcclient

    from triton_kitchen.core import clients
    from triton_kitchen.core.imaging import preprocess_bytes
    from triton_kitchen.tools import trace

    pixels = preprocess_bytes(sample_jpegs["coffee"])[None]

    def traced_call() -> trace.RequestTimeline:
        ep = small.endpoint
        client, lib = clients.grpc_client(ep), grpcclient
        tensor = lib.InferInput("input", list(pixels.shape), "FP32")
        tensor.set_data_from_numpy(np.ascontiguousarray(pixels, dtype=np.float32))
        _, tl = trace.capture(ep, "classifier", lambda: client.infer("classifier", [tensor]))
        return tl

    for _ in range(3):  # trace files .0 .1 .2 exist before the crash
        traced_call()
    kill_triton(small)
    assert small.ensure_running(timeout=120)
    for _ in range(3):
        assert traced_call().model == "classifier"


@pytest.mark.app
@pytest.mark.browser
def test_auto_restart_off_then_the_teachers_button(small, embedded_app, monkeypatch):
    """Auto-restart is app-wide (TRITON_KITCHEN_AUTO_RESTART=0 turns it off); with it off a dead server stays
    down, a student is told the teacher restarts it, and only the teacher's sidebar has the restart button."""
    monkeypatch.setenv("TRITON_KITCHEN_AUTO_RESTART", "0")
    monkeypatch.setenv("TRITON_KITCHEN_TEACHER_TOKEN", "tk-secret")
    student = AppTest.from_file(APP, default_timeout=TIMEOUT)
    student.query_params["lang"] = "zh"
    student.run()
    assert not _server_buttons(student) and not student.sidebar.toggle  # no control of the shared server
    teacher = AppTest.from_file(APP, default_timeout=TIMEOUT)
    teacher.query_params["lang"] = "zh"
    teacher.query_params["teacher"] = "tk-secret"
    teacher.run()
    # in a class the server's controls are on the teacher's desk, not in the sidebar
    assert not _server_buttons(teacher)
    teacher.switch_page("views/teacher.py").run()
    assert not teacher.exception, [e.value for e in teacher.exception]
    assert any(lessons.t("sidebar.auto_restart_off", "zh") in c.value for c in teacher.caption)
    kill_triton(small)
    student.run()
    teacher.run()
    assert not student.exception and not teacher.exception
    assert lessons.t("sidebar.stopped_help_student", "zh") in sidebar_text(student)
    assert lessons.t("sidebar.stopped_help", "zh") in sidebar_text(teacher)
    assert not small.running, "restarted although auto-restart is off"
    teacher.button(key="tk_restart").click().run()
    assert not teacher.exception
    assert embedded_app.wait(60) and small.running
    student.run()
    assert any("2.51" in s.value for s in student.sidebar.success), sidebar_text(student)


def _server_buttons(at) -> list[str]:
    """The sidebar's buttons but the class box's (joining a class is every student's)."""
    return [
        b.key for b in at.sidebar.button if "tk_class_join" not in (b.key or "") and b.key != "tk_class_leave"
    ]


@pytest.mark.app
@pytest.mark.browser
def test_a_wrong_teacher_token_is_a_student(small, embedded_app, monkeypatch):
    monkeypatch.setenv("TRITON_KITCHEN_TEACHER_TOKEN", "tk-secret")
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = "en"
    at.query_params["teacher"] = "guess"
    at.run()
    assert not at.exception
    assert not _server_buttons(at) and not at.sidebar.radio  # no restart, no remote-server settings
    monkeypatch.delenv("TRITON_KITCHEN_TEACHER_TOKEN")
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["teacher"] = ""  # no token configured: the app is one person's, on this machine
    at.run()
    assert not at.exception
    # AppTest's session is local, like a learner's own browser: the server choice and the restart are there
    assert at.sidebar.radio and _server_buttons(at) == ["tk_restart"], sidebar_text(at)


@pytest.mark.app
@pytest.mark.timing
def test_first_start_does_not_hold_pages(small, monkeypatch):
    """A fresh app: pages draw at once while Triton starts, say "starting", and come up by themselves."""
    monkeypatch.delenv("TRITON_HTTP_URL", raising=False)
    monkeypatch.delenv("TRITON_GRPC_URL", raising=False)
    from ui import server

    repo = small.repo
    holder = server.supervisor()
    saved = holder.adopt(
        None, factory=lambda: EmbeddedServer(repo=repo, http_port=0, grpc_port=0, metrics_port=0)
    )
    try:
        for page, lang in (("views/ch1_inference_server.py", "en"), ("views/lab_batching.py", "zh")):
            at = AppTest.from_file(APP, default_timeout=TIMEOUT)
            at.query_params["lang"] = lang
            switch_page(at, page)
            t0 = time.monotonic()
            at.run()
            took = time.monotonic() - t0
            assert not at.exception and not at.error, [e.value for e in at.error]
            assert holder.state() == "starting"
            assert took < 2.0, f"{page} waited {took:.1f} s for the server"
            assert at.title, "the page was not drawn"
            starting = lessons.t("server.starting", lang)
            assert starting in [i.value for i in at.sidebar.info], [i.value for i in at.sidebar.info]
        assert at.info and at.info[0].value == starting  # the lab says why it waits, not "unreachable"
        assert holder.wait(120), "the first start failed"
        started = holder.server
        at.run()
        assert any("2.51" in s.value for s in at.sidebar.success), sidebar_text(at)
        assert not at.info or at.info[0].value != starting
    finally:
        holder.wait(120)
        if holder.server is not None and holder.server is not saved.server:
            holder.server.stop()
        holder.restore(saved)
    assert started is not None and not started.running


def test_start_survives_an_abort(small):
    """tritonserver aborted (SIGABRT, as Triton's python backend can crash on a busy machine) during start-up:
    start() tries once more instead of leaving the class without a server."""
    srv = EmbeddedServer(repo=small.repo, http_port=0, grpc_port=0, metrics_port=0)
    aborted: list[int] = []

    def children() -> list[str]:
        return subprocess.run(["pgrep", "-P", str(srv.pid)], capture_output=True, text=True).stdout.split()

    def abort_first() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            kids = children() if srv.pid else []
            if kids:
                aborted.append(int(kids[0]))
                os.kill(aborted[0], signal.SIGABRT)
                return
            time.sleep(0.01)

    killer = threading.Thread(target=abort_first)
    killer.start()
    try:
        srv.start(timeout=120)
        killer.join()
        assert aborted, "tritonserver was never seen"
        assert srv.running and int(children()[0]) != aborted[0]
    finally:
        srv.stop()


@pytest.mark.timing
def test_bench_against_a_server_killed_mid_run(small):
    small.ensure_running(60)
    ep = small.endpoint
    killer = threading.Timer(1.0, kill_triton, args=(small,))
    killer.start()
    t0 = time.monotonic()
    spec = LoadSpec(
        "classifier",
        "grpc",
        concurrency=4,
        duration_s=3.0,
        warmup_s=0.2,
        grace_s=2.0,
        inputs=batch_runs.classifier_inputs(),
        output_names=["logits"],
    )
    r = bench.run_bench(ep, spec)
    took = time.monotonic() - t0
    killer.join()
    assert took <= 0.2 + 3.0 + 2.0 + 0.5, f"run_bench took {took:.1f} s"
    assert r.errors > 0 and r.error_messages, r
    assert small.ensure_running(60)


@pytest.mark.app
@pytest.mark.timing
def test_wrong_remote_url_has_a_status_within_2s(monkeypatch):
    for url in (f"127.0.0.1:{free_port()}", "10.255.255.1:8000", "no-such-host.invalid:8000"):
        monkeypatch.setenv("TRITON_HTTP_URL", url)
        monkeypatch.setenv("TRITON_GRPC_URL", url)
        at = AppTest.from_file(APP, default_timeout=TIMEOUT)
        at.query_params["lang"] = "en"
        t0 = time.monotonic()
        at.run()
        took = time.monotonic() - t0
        assert not at.exception
        assert any(url in e.value for e in at.sidebar.error), sidebar_text(at)
        assert took < 2.5, f"{url}: {took:.1f} s"  # the script run, status included (AppTest adds ~0.2 s)


@pytest.mark.app
@pytest.mark.browser
def test_unloaded_model_is_a_translated_message(small, embedded_app):
    """The classifier unloaded: the sidebar counts it as not ready; a request gets 'model not ready'."""
    from tritonclient.utils import InferenceServerException

    from triton_kitchen.core import clients, kserve
    from triton_kitchen.core.classify import error_code

    small.ensure_running(60)
    kserve.unload_model(small.endpoint, "classifier")
    try:
        at = AppTest.from_file(APP, default_timeout=TIMEOUT)
        at.query_params["lang"] = "zh"
        at.run()
        assert not at.exception
        assert any("2.51" in s.value for s in at.sidebar.success), sidebar_text(at)  # up, though not ready
        assert any(lessons.t("sidebar.models_not_ready", "zh", n=1) == w.value for w in at.sidebar.warning), (
            sidebar_text(at)
        )
        arrays = batch_runs.classifier_inputs()
        import tritonclient.http as httpclient

        inp = httpclient.InferInput("input", list(arrays["input"].shape), "FP32")
        inp.set_data_from_numpy(arrays["input"])
        with clients.http(small.endpoint) as client, pytest.raises(InferenceServerException) as info:
            client.infer("classifier", [inp])
        assert error_code(info.value) == "model_not_ready"
        assert lessons.t("error.model_not_ready", "zh") != "error.model_not_ready"
    finally:
        kserve.load_model(small.endpoint, "classifier")


@pytest.mark.app
def test_lab_page_waits_in_line_when_the_budget_is_taken(small, monkeypatch):
    """Another student's run holds every load worker: the load test is not refused, it waits in line and starts
    by itself when the workers free (the place shown while it waits: tests/live/test_lab_line_live.py)."""
    small.ensure_running(60)
    conftest.use_remote(monkeypatch, small)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = "en"
    switch_page(at, "views/lab_protocols.py")
    at.run()
    at.text_input(key="proto_other").set_value("classifier").run()
    at.slider(key="proto_load_d").set_value(1)
    held = threading.Event()

    def other_run() -> None:
        with budget.LAB_BUDGET.hold(budget.LAB_BUDGET.total):
            held.set()
            time.sleep(2.0)

    other = threading.Thread(target=other_run)
    other.start()
    held.wait(5)
    at.button(key="proto_load_run").click().run()
    other.join()
    assert not at.exception, [e.value for e in at.exception]
    busy = lessons.t("lab.busy", "en", used=0, total=0, runs=0).split(":")[0]
    assert not any(w.value.startswith(busy) for w in at.warning), [w.value for w in at.warning]
    results = at.session_state["proto_load"]  # the run went: one result per protocol, answers measured
    assert len(results) == 3 and sum(r.requests for r in results) > 0, results


def test_batching_override_only_changes_safe_fields(small):
    small.ensure_running(60)
    ep = small.endpoint
    base = override.current_config(ep)
    ok = batch_runs.config_override(base, batch_runs.BatchingSettings(True, 1000, [4], 2))
    override.check_override(base, ok)
    for field, value in (
        ("backend", "onnxruntime"),
        ("platform", "onnxruntime_onnx"),
        ("parameters", {"EXECUTION_ENV_PATH": {"string_value": "/tmp/x.tar.gz"}}),
        ("default_model_filename", "evil.py"),
        ("input", []),
    ):
        bad = dict(ok, **{field: value})
        with pytest.raises(BatchingError) as info:
            override.check_override(base, bad)
        assert info.value.code == "bad_settings"
    with pytest.raises(BatchingError):
        override.check_override(base, dict(ok, instance_group=[{"kind": "KIND_CPU", "count": 64}]))
    with pytest.raises(BatchingError):
        override.check_override(base, dict(ok, instance_group=[{"kind": "KIND_MODEL", "count": 1}]))
    # only the lab's model can be reloaded, and an override may not rename it
    with pytest.raises(BatchingError):
        override.load_model(ep, "preprocess", base)
    with pytest.raises(BatchingError):
        override.load_model(ep, "classifier", dict(ok, name="evil"))
    with pytest.raises(BatchingError):
        override.load_model(ep, "classifier", dict(ok, backend="python", default_model_filename="x.py"))
    assert override.current_config(ep) == base  # nothing was loaded


def test_flow_config_name_cannot_escape_the_temp_folder(small, tmp_path):
    from triton_kitchen.tools import flow

    text = (DEFAULT_REPOSITORY / "image_classifier" / "config.pbtxt").read_text()
    marker = f"tk_escape_{os.getpid()}"
    evil = text.replace('name: "image_classifier"', f'name: "/../../../../{tmp_path}/{marker}"')
    assert evil != text
    with pytest.raises(flow.FlowError):
        flow.send_config(small.endpoint, evil)  # the one-model server has no preprocess: refused
    assert not list(tmp_path.glob(f"{marker}*"))
