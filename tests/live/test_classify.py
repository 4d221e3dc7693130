"""classify(): errors as the UI's codes, against real sockets and the real server; clients owned."""

from __future__ import annotations

import socket
import threading

import pytest

from triton_kitchen.core import clients
from triton_kitchen.core.classify import ClassifyError, classify
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.errors import KitchenError
from triton_kitchen.core.server import free_port


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_a_closed_port_is_unreachable_not_a_model_problem(protocol):
    port = free_port()
    dead = Endpoint(f"127.0.0.1:{port}", f"127.0.0.1:{port}")
    with pytest.raises(ClassifyError) as info:
        classify(dead, b"\xff\xd8", protocol=protocol, timeout_s=5)
    assert info.value.code == "server_unreachable", info.value.detail
    assert isinstance(info.value, KitchenError) and info.value.detail
    clients.close_all()


@pytest.fixture
def hangs_up():
    """A port where something accepts connections and closes them at once (a server going away)."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    yield f"127.0.0.1:{listener.getsockname()[1]}"
    listener.close()


def test_a_server_that_hangs_up_is_unreachable_not_model_not_ready(hangs_up):
    # gRPC says "failed to connect to all addresses; last error: UNAVAILABLE: ...: Socket closed"
    with pytest.raises(ClassifyError) as info:
        classify(Endpoint(hangs_up, hangs_up), b"\xff\xd8", protocol="grpc", timeout_s=5)
    assert info.value.code == "server_unreachable", info.value.detail
    clients.close_all()


def test_grpc_at_the_http_port_is_unreachable(server, sample_jpegs):
    wrong = Endpoint(server.http_url, server.http_url)  # a student's mix-up: gRPC aimed at port 8000
    with pytest.raises(ClassifyError) as info:
        classify(wrong, sample_jpegs["chelsea"], protocol="grpc", timeout_s=5)
    assert info.value.code == "server_unreachable", info.value.detail
    clients.close_all()


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_an_unknown_model_is_still_model_not_ready(server, sample_jpegs, protocol):
    # Triton answers it with gRPC status UNAVAILABLE too; its words tell the two apart
    with pytest.raises(ClassifyError) as info:
        classify(server.endpoint, sample_jpegs["chelsea"], model="no_such_model", protocol=protocol)
    assert info.value.code == "model_not_ready", info.value.detail


def test_one_grpc_client_per_address_for_every_thread_until_closed(server, sample_jpegs):
    ep = server.endpoint
    seen = []

    def run() -> None:
        classify(ep, sample_jpegs["chelsea"], protocol="grpc")
        seen.append(clients.grpc_client(ep))

    threads = [threading.Thread(target=run) for _ in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert len(seen) == 3 and all(c is seen[0] for c in seen)  # script runs on new threads share it
    clients.close_all()
    assert clients.grpc_client(ep) is not seen[0]  # a restart's close_all: the next call gets a new one
    assert classify(ep, sample_jpegs["chelsea"], protocol="grpc").labels
    assert classify(ep, sample_jpegs["chelsea"], protocol="http").labels


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_the_code_shown_beside_the_button_is_the_call_it_makes(server, sample_jpegs, protocol, tmp_path):
    """Chapter 1's snippet, run as a student would run it (exec'd as written, a photo on disk), gets the same
    top-5 as the button."""
    from triton_kitchen.core.classify import client_code

    photo = tmp_path / "photo.jpg"
    photo.write_bytes(sample_jpegs["chelsea"])
    code = client_code(server.endpoint, protocol, path=str(photo))
    assert f"tritonclient.{protocol}" in code and "InferenceServerClient(" in code
    scope: dict = {}
    exec(compile(code.replace("print(", "_ = ("), "<ch1 snippet>", "exec"), scope)  # noqa: S102
    labels = [b.decode() for b in scope["result"].as_numpy("top5_labels")[0]]
    button = classify(server.endpoint, sample_jpegs["chelsea"], protocol=protocol)
    assert labels == button.labels
    scope["client"].close()
