"""classify(): errors as the UI's codes, against real sockets and the real server; clients owned.

The tests of this topic that need no server, app or browser: tests/unit/test_classify.py."""

from __future__ import annotations

import threading

import pytest

from triton_kitchen.core import clients
from triton_kitchen.core.classify import ClassifyError, classify
from triton_kitchen.core.endpoint import Endpoint


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
