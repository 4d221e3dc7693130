"""classify() against sockets of the test's own (a closed port, a server that hangs up): unreachable, not a
model problem.

The tests that need the server, the app or a browser: tests/live/test_classify_live.py."""

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
