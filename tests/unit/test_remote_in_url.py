"""The remote server chosen in the sidebar survives a reload, a new tab and an opened link: the URL names it
(``?remote=…&remote_grpc=…``), and a new session that may choose the server takes it from there. No server:
AppTest sessions of ``ui.server_choice`` alone."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

pytestmark = pytest.mark.app


@pytest.fixture(autouse=True)
def _no_env_server(monkeypatch):
    for name in ("TRITON_HTTP_URL", "TRITON_GRPC_URL", "TRITON_METRICS_URL", "TRITON_KITCHEN_TEACHER_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def _session(choose: str = "") -> None:
    """One run of a page: the sidebar's Connect (``choose``: an HTTP address, or "embedded") then the mode."""
    import streamlit as st

    from ui import server_choice

    server_choice.server_mode()
    if choose == "embedded":
        server_choice.use_embedded()
    elif choose:
        server_choice.use_remote(choose, choose.rsplit(":", 1)[0] + ":18001", "")
    mode = server_choice.server_mode()
    st.write(f"{mode} {server_choice.remote_urls() if mode == 'remote' else ''}")


def _run(choose: str = "", **params: str) -> AppTest:
    at = AppTest.from_function(_session, args=(choose,), default_timeout=30)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_connect_names_the_remote_in_the_url_and_a_reload_keeps_it():
    first = _run("gpu-box:18000")
    url = {k: first.query_params[k] for k in ("remote", "remote_grpc") if k in first.query_params}
    assert url == {"remote": ["gpu-box:18000"], "remote_grpc": ["gpu-box:18001"]}
    # a reload, a new tab, an opened link: a new session with the same URL
    again = _run(remote="gpu-box:18000", remote_grpc="gpu-box:18001")
    assert again.markdown[0].value == "remote ('gpu-box:18000', 'gpu-box:18001')"


def test_a_link_with_only_the_http_address_gets_the_grpc_default():
    at = _run(remote="gpu-box:18000")
    assert at.markdown[0].value == "remote ('gpu-box:18000', 'gpu-box:8001')"


def test_choosing_the_embedded_server_drops_it_from_the_url():
    at = _run("embedded", remote="gpu-box:18000", remote_grpc="gpu-box:18001")
    assert at.markdown[0].value == "embedded"
    assert "remote" not in at.query_params and "remote_grpc" not in at.query_params


def test_in_a_class_only_the_teacher_follows_the_url(monkeypatch):
    monkeypatch.setenv("TRITON_KITCHEN_TEACHER_TOKEN", "t0ken")
    student = _run(remote="evil:8000")
    assert student.markdown[0].value == "embedded"
    teacher = _run(remote="gpu-box:18000", teacher="t0ken")
    assert teacher.markdown[0].value == "remote ('gpu-box:18000', 'gpu-box:8001')"
