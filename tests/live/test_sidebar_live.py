"""The sidebar on the running app (AppTest, the session's real embedded server): the server log and its CUDA
lines, moved ports as a warning, a dead or empty remote address with advice for a remote, pages that stay fast
while the remote hangs.

The log's filtering on its own: tests/unit/test_sidebar.py."""

from __future__ import annotations

import socket
import time

import pytest
from _shared.pages import APP, TIMEOUT, page, tz
from conftest import switch_page
from streamlit.testing.v1 import AppTest

from triton_kitchen.core.endpoint import DEFAULT_PORTS
from ui.sidebar import HARMLESS_WITHOUT_GPU, split_log


@pytest.mark.app
def test_sidebar_log_wraps_and_explains_the_cuda_lines(embedded):
    at = page(None, state={"tk_log_open": True})
    logs = [c for c in at.sidebar.code]
    assert logs and all(c.proto.wrap_lines for c in logs)  # no sideways scrolling line by line
    assert "CUDA driver version is insufficient" not in logs[0].value
    notes = " ".join(c.value for c in at.sidebar.caption)
    assert "NVIDIA GPU" in notes  # the server here has no GPU: its CUDA lines were hidden, and it says why
    assert not any(HARMLESS_WITHOUT_GPU.search(line) for line in logs[0].value.splitlines())
    assert logs[0].value == (split_log(embedded.log_tail(400), hide_gpu_lines=True)[0] or "—")
    at.toggle(key="tk_log_hide_gpu").set_value(False).run()
    # shown again: the log's tail as it is, GPU lines included (the start-up CUDA lines while the log is short,
    # the per-request pinned-memory lines once the server has answered requests)
    assert at.sidebar.code[0].value == (split_log(embedded.log_tail(400), hide_gpu_lines=False)[0] or "—")
    assert tz("sidebar.log_gpu_shown") in [c.value for c in at.sidebar.caption]


@pytest.mark.app
def test_moved_ports_are_a_warning(embedded, monkeypatch):
    from ui.sidebar import moved_ports

    assert moved_ports(embedded) == {}  # the tests asked for free ports, not 8000
    at = page(None)
    assert not at.sidebar.warning
    monkeypatch.setattr(embedded, "requested_ports", dict(DEFAULT_PORTS))  # as the app asks
    assert set(moved_ports(embedded)) == {"http", "grpc", "metrics"}
    at = page(None)
    warnings = [w.value for w in at.sidebar.warning]
    assert any("8000" in w and embedded.http_url in w and "localhost:8000" in w for w in warnings), warnings


def _no_embedded_advice(at: AppTest) -> None:
    errors = [e.value for e in at.error]
    assert errors
    for text in errors:
        assert "重启内置" not in text and "restart the embedded" not in text.lower(), text


@pytest.mark.app
def test_dead_remote_gives_remote_advice(server, monkeypatch):
    from triton_kitchen.core.server import free_port

    url = f"127.0.0.1:{free_port()}"
    monkeypatch.setenv("TRITON_HTTP_URL", url)
    monkeypatch.setenv("TRITON_GRPC_URL", url)
    at = page("views/lab_protocols.py")
    assert tz("server.down_remote", url=url) in [e.value for e in at.error]
    _no_embedded_advice(at)
    at = page("views/ch4_http.py", "en")
    _no_embedded_advice(at)


@pytest.mark.app
def test_empty_remote_address_says_so():
    state = {"tk_server_mode": "remote", "tk_remote": ("", "")}
    at = page("views/lab_batching.py", state=state)
    errors = [e.value for e in at.error]
    assert tz("server.empty_url") in errors
    assert [e.value for e in at.sidebar.error] == [tz("server.empty_url")]
    assert not any(e.startswith(" 上没有") or "上没有 Triton" in e for e in errors)


@pytest.mark.app
@pytest.mark.timing
def test_pages_stay_fast_while_the_remote_hangs(monkeypatch):
    """A remote that accepts connections and never answers: the first run waits for the probe once;
    later runs do not wait again (before the fix every page waited 5-6 s)."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)  # the kernel completes the handshakes; nobody ever reads or answers
    url = f"127.0.0.1:{silent.getsockname()[1]}"
    monkeypatch.setenv("TRITON_HTTP_URL", url)
    monkeypatch.setenv("TRITON_GRPC_URL", url)
    try:
        at = AppTest.from_file(APP, default_timeout=TIMEOUT)
        switch_page(at, "views/ch4_http.py")
        t0 = time.perf_counter()
        at.run()
        first = time.perf_counter() - t0
        assert not at.exception
        from ui import server as ui_server

        time.sleep(
            ui_server.DEAD_PROBE_TTL_S + 0.5
        )  # the "no" is old now: it is asked again, in the background
        for _ in range(2):
            t0 = time.perf_counter()
            at.run()
            again = time.perf_counter() - t0
            assert again < 0.6, (first, again)
        assert at.sidebar.error
    finally:
        silent.close()
