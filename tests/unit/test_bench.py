"""Bounded load without a server: a failed request counted with its code, the CLI against a dead server,
perf_analyzer's input data for BYTES.

The tests that need the server, the app or a browser: tests/live/test_bench_live.py."""

from __future__ import annotations

import json
import socket

import numpy as np
import pytest

from triton_kitchen.__main__ import main
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.tools import bench as B
from triton_kitchen.tools import perf_analyzer
from triton_kitchen.tools.load import LoadSpec


@pytest.mark.parametrize("protocol", ["http-binary", "grpc"])
def test_a_failed_request_is_counted_with_its_code(protocol):
    """A worker's failed call is a record (``code: message``), not a crashed worker thread."""
    with socket.create_server(("127.0.0.1", 0)) as s:
        addr = f"127.0.0.1:{s.getsockname()[1]}"  # closed when the block ends: nobody listens there
    arrays = {"input_image": np.zeros((1, 3, 224, 224), np.float32)}
    spec = LoadSpec("m", protocol, 2, 0.3, max_requests=20, inputs=arrays, warmup_s=0, server_side=False)
    r = B.run_bench(Endpoint(addr, addr), spec)
    assert r.requests == r.errors > 0 and r.throughput_rps == 0
    assert r.error_messages and all(m.startswith("connection: ") for m in r.error_messages), r.error_messages


def test_cli_reports_a_dead_server(capsys):
    port = socket.create_server(("127.0.0.1", 0))
    addr = f"127.0.0.1:{port.getsockname()[1]}"
    port.close()  # nobody listens there now
    rc = main(
        ["bench", "--model", "m", "--protocol", "http-binary", "--duration", "1", "--url", addr, "--json"]
    )
    captured = capsys.readouterr()
    assert rc == 1
    assert json.loads(captured.out)["requests"] == 0
    assert "error:" in captured.err


def test_perf_analyzer_input_data_is_length_prefixed_for_bytes():
    data = perf_analyzer.perf_analyzer_input_data(
        {"image_bytes": np.array([[b"abc"]], dtype=object)}, max_batch_size=8
    )
    import base64

    assert base64.b64decode(data["data"][0]["image_bytes"]["b64"]) == b"\x03\x00\x00\x00abc"
    data = perf_analyzer.perf_analyzer_input_data({"x": np.ones((1, 2), np.float32)}, max_batch_size=8)
    assert base64.b64decode(data["data"][0]["x"]["b64"]) == np.ones(2, np.float32).tobytes()
