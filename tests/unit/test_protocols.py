"""The protocol lab's pieces without a server: the counting proxy's exact bytes, ProtocolError, a stream run's
time to first token and gaps, the SSE parser, the sample photos.

The tests that need the server, the app or a browser: tests/live/test_protocols_live.py."""

from __future__ import annotations

import socket
import threading

import numpy as np
import pytest

from triton_kitchen.tools import protocols as P


def test_counting_proxy_counts_exact_bytes_both_ways():
    listener = socket.create_server(("127.0.0.1", 0))

    def serve():
        conn, _ = listener.accept()
        with conn:
            data = b""
            while len(data) < 1000:
                data += conn.recv(4096)
            conn.sendall(data + b"!" * 500)

    threading.Thread(target=serve, daemon=True).start()
    with P.CountingProxy(f"127.0.0.1:{listener.getsockname()[1]}") as proxy:
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as s:
            s.sendall(b"x" * 1000)
            got = b""
            while len(got) < 1500:
                got += s.recv(4096)
        assert proxy.snapshot() == (1000, 1500)
        assert proxy.connections == 1
    listener.close()


def test_protocol_error_is_a_kitchen_error():
    from triton_kitchen.core.errors import KitchenError

    exc = P.ProtocolError("HTTP 400: no such model", "server")
    assert isinstance(exc, KitchenError)
    assert (exc.code, exc.detail, str(exc)) == (
        "server",
        "HTTP 400: no such model",
        "HTTP 400: no such model",
    )


def test_stream_run_derives_ttft_and_gaps_from_arrivals():
    run = P.StreamRun("http-sse", ["a", "b", "c"], [12.0, 42.0, 75.0], total_ms=80.0)
    assert run.ttft_ms == run.first_token_ms == 12.0
    assert run.inter_token_ms == pytest.approx([30.0, 33.0])
    assert run.transport == "sse" and P.StreamRun("grpc-stream").transport == "grpc"
    d = run.to_dict()
    assert d["tokens"] == 3 and d["inter_token_ms_mean"] == pytest.approx(31.5) and d["error"] is None
    empty = P.StreamRun("grpc-stream")
    assert (
        empty.ttft_ms is None
        and empty.inter_token_ms == []
        and empty.to_dict()["inter_token_ms_mean"] is None
    )


def test_sse_parser_reads_data_lines_only():
    lines = [
        b": keep-alive\n",
        b'data: {"token": "one"}\n',
        b"\n",
        b"event: message\n",
        b'data:{"token": ["two"]}\r\n',
        b'data: {"error": "boom"}\n',
    ]
    assert list(P.sse_events(lines)) == [{"token": "one"}, {"token": ["two"]}, {"error": "boom"}]


def test_the_sample_photos_come_from_samples():
    from triton_kitchen.core import samples

    assert P.sample_jpeg is samples.sample_jpeg and P.image_tensor is samples.image_tensor
    assert P.STREAM_MODEL == "streamer"
    jpeg = samples.sample_jpeg()
    assert jpeg == samples.sample_jpeg("chelsea") and jpeg[:3] == b"\xff\xd8\xff"
    tensor = samples.image_tensor(jpeg)
    assert tensor.shape == (1, 3, 224, 224) and tensor.dtype == np.float32
    labels = samples.imagenet_labels()
    assert len(labels) == 1000 and labels[0].startswith("tench")
