"""Fault handling without a server: the controls without a token, the app-wide lab budget, a too-large upload as a
translated message, the supervisor starting and restarting in the background and remembering a failed start.

The tests that need the server, the app or a browser: tests/live/test_faults_live.py."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from triton_kitchen.core import budget, lessons
from triton_kitchen.core.server import free_port

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 60


def test_without_a_token_only_the_machine_running_the_app_has_the_controls(monkeypatch):
    from ui import i18n

    monkeypatch.delenv("TRITON_KITCHEN_TEACHER_TOKEN", raising=False)
    monkeypatch.setattr(i18n, "_on_this_machine", lambda: False)  # a student's browser on the class network
    assert not i18n.is_teacher()
    monkeypatch.setattr(i18n, "_on_this_machine", lambda: True)
    assert i18n.is_teacher()


def test_lab_budget_is_shared_and_says_busy():
    pool = budget.WorkerBudget(8)
    assert pool.cost(16) == 8 and pool.cost(4) == 4
    with pool.hold(6):
        with pool.hold(2):
            assert pool.used == 8
        t0 = time.monotonic()
        with pytest.raises(budget.BudgetBusy) as info:
            with pool.hold(4, wait_s=0.2):
                pass
        assert time.monotonic() - t0 < 1.0
        assert info.value.used == 6 and info.value.total == 8 and info.value.runs == 1
    with pool.hold(16):  # more than the budget: runs alone
        assert pool.used == 8
    assert pool.used == 0 and pool.runs == 0


@pytest.mark.app
def test_too_large_upload_is_a_translated_message(monkeypatch):
    from triton_kitchen.core.imaging import MAX_BYTES

    monkeypatch.setenv("TRITON_HTTP_URL", f"127.0.0.1:{free_port()}")
    monkeypatch.setenv("TRITON_GRPC_URL", f"127.0.0.1:{free_port()}")
    import tomllib

    limit_mb = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())["server"]["maxUploadSize"]
    assert limit_mb * 1024 * 1024 >= MAX_BYTES  # Streamlit's limit lets the app's own check speak
    from ui import image_picker

    class Big:
        size = MAX_BYTES + 1
        name = "big.jpg"

        def getvalue(self):
            return b"\xff" * self.size

    monkeypatch.setattr(image_picker.st, "file_uploader", lambda *a, **k: Big())
    at = AppTest.from_function(_upload_page, default_timeout=TIMEOUT)
    at.query_params["lang"] = "en"
    at.run()
    assert not at.exception
    assert at.error[0].value == lessons.t("error.too_large", "en")


def _upload_page():
    import streamlit as st

    from ui.image_picker import pick_image

    st.session_state.setdefault("t_source", "upload")
    pick_image("t")


class _FakeServer:
    """Enough of EmbeddedServer for the supervisor: starts, dies, restarts (no process)."""

    def __init__(self) -> None:
        self.running, self.starts = False, 0

    def start(self, timeout: float = 60.0) -> None:
        self.running, self.starts = True, self.starts + 1

    def ensure_running(self, timeout: float = 60.0) -> bool:
        if not self.running:
            self.start()
        return True

    def restart(self, timeout: float = 60.0) -> None:
        self.start()


def test_supervisor_starts_and_restarts_in_the_background():
    from triton_kitchen.core.supervisor import ServerSupervisor

    made: list[_FakeServer] = []
    sup = ServerSupervisor(lambda: made.append(_FakeServer()) or made[-1])
    assert sup.state() == "stopped" and sup.server is None
    sup.start_async()
    assert sup.wait(5) and sup.state() == "up" and len(made) == 1
    made[0].running = False  # it died
    assert sup.state() == "stopped" and sup.died_at is not None
    sup.restart_async()
    assert sup.wait(5) and made[0].starts == 2 and sup.died_at is None and len(made) == 1
    other = _FakeServer()
    other.start()
    saved = sup.adopt(other)
    assert sup.server is other and sup.state() == "up"
    sup.restore(saved)
    assert sup.server is made[0]
    with pytest.raises(AttributeError):
        sup.server = other  # read through properties: tests and the UI use adopt/restore


def test_supervisor_remembers_a_failed_start():
    from triton_kitchen.core.server import ServerStartError
    from triton_kitchen.core.supervisor import ServerSupervisor

    def broken():
        raise ServerStartError("no tritonserver here")

    sup = ServerSupervisor(broken)
    sup.start_async()
    assert not sup.wait(5)
    assert sup.state() == "failed" and "no tritonserver" in str(sup.error)
    sup.start_async()  # a failed first start is not retried on every page run
    assert sup.state() == "failed"
