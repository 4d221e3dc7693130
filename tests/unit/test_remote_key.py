"""A remote server whose repository (and trace) API is restricted to a key, as the project's own ``serve`` and
the GPU compose file start Triton: the key comes from ``TRITON_KITCHEN_KEY`` into every remote endpoint, ``serve``
says which key it holds, the compose file gives the app the key it gives the server, and ``trace`` sends it."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import yaml

from triton_kitchen.core.endpoint import RESTRICTED_HEADER, Endpoint
from triton_kitchen.core.versions import TritonVersion

ROOT = Path(__file__).resolve().parents[2]
GPU = yaml.safe_load((ROOT / "docker-compose.gpu.yml").read_text())["services"]
CLASS = yaml.safe_load((ROOT / "docker-compose.class.yml").read_text())["services"]


@pytest.fixture
def no_key(monkeypatch):
    monkeypatch.delenv("TRITON_KITCHEN_KEY", raising=False)
    return monkeypatch


def test_a_remote_endpoint_carries_the_key(no_key):
    assert Endpoint.remote("gpu-box").headers == {}
    no_key.setenv("TRITON_KITCHEN_KEY", "k3y")
    assert Endpoint.remote("gpu-box").headers == {RESTRICTED_HEADER: "k3y"}
    no_key.setenv("TRITON_HTTP_URL", "gpu-box:8000")
    assert Endpoint.from_env().headers == {RESTRICTED_HEADER: "k3y"}


def _env(service: dict) -> dict[str, str]:
    """KEY=VALUE items (a bare KEY passes the host's value through: not read here)."""
    return dict(item.split("=", 1) for item in service["environment"] if "=" in item)


@pytest.mark.parametrize("compose", [GPU, CLASS], ids=["gpu", "class"])
def test_the_compose_app_holds_the_key_its_triton_is_restricted_to(compose, no_key):
    """The server takes its key from TRITON_KITCHEN_KEY (one default for both services); the app reads it."""
    triton = GPU["triton"]  # the class file's triton extends the GPU file's
    args = " ".join(triton["command"])
    assert f"model-repository:{RESTRICTED_HEADER}=$${{TRITON_KITCHEN_KEY}}" in args
    server_key = _env(triton)["TRITON_KITCHEN_KEY"]
    app = _env(compose["app"])
    assert app["TRITON_KITCHEN_KEY"] == server_key == "${TRITON_KITCHEN_KEY:-change-me}"
    for name, value in app.items():
        no_key.setenv(name, value)
    assert Endpoint.from_env().headers == {RESTRICTED_HEADER: server_key}


def test_the_gpu_compose_runs_a_current_release_and_the_courses_on_request():
    image = GPU["triton"]["image"]
    assert image == "nvcr.io/nvidia/tritonserver:${TRITON_RELEASE:-26.07}-py3"
    assert TritonVersion.parse("26.07") >= TritonVersion.parse(
        "2.68"
    )  # one that refuses client shm by default
    text = (ROOT / "docker-compose.gpu.yml").read_text()
    assert "TRITON_RELEASE=24.10 docker compose -f docker-compose.gpu.yml up" in text


class _FakeServer:
    """What ``serve`` reads of an EmbeddedServer, without starting one (it 'exits' at once)."""

    def __init__(self, **kwargs) -> None:
        self.repo, self.key, self.port_notes, self.startup_seconds = "repo", "random-key", [], 0.1
        self.http_url = self.grpc_url = self.metrics_url = "127.0.0.1:1"
        self.log_file = self.trace_file = "x"
        self.running = False
        _FakeServer.last = self

    def start(self, timeout):
        pass

    def stop(self):
        pass

    def log_tail(self, n):
        return ""


@pytest.mark.parametrize("given", ["", "k3y"])
def test_serve_says_which_key_the_app_and_the_cli_need(given, no_key, monkeypatch, capsys):
    from triton_kitchen.cli import main

    monkeypatch.setattr(main, "EmbeddedServer", _FakeServer)
    monkeypatch.setattr(main.signal, "signal", lambda *a: None)
    if given:
        no_key.setenv("TRITON_KITCHEN_KEY", given)
    main.main(["serve"])
    out = capsys.readouterr().out
    assert _FakeServer.last.key == (given or "random-key")
    assert f"restricted to the header {RESTRICTED_HEADER}" in out
    assert ("export TRITON_KITCHEN_KEY=random-key" in out) == (not given)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_trace_sends_the_key(protocol, no_key, monkeypatch):
    from triton_kitchen.cli import trace

    no_key.setenv("TRITON_KITCHEN_KEY", "k3y")
    monkeypatch.setattr(trace, "grpc_statistics_address", lambda url, stats: ("gpu-box:8000", ""))
    args = argparse.Namespace(url="gpu-box:8001" if protocol == "grpc" else "gpu-box:8000", protocol=protocol)
    args.stats_url = None
    endpoint = trace._with_statistics(args, trace._endpoint(args))
    assert endpoint.headers == {RESTRICTED_HEADER: "k3y"} and endpoint.http_url == "gpu-box:8000"
