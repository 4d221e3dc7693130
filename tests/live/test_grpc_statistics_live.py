"""``trace`` and ``bench`` over gRPC on a server whose ports are not 8000/8001 read that server's statistics.

A second server runs on two consecutive free ports (as ``serve --http-port 18000 --grpc-port 18001``): given only
its gRPC address, both commands find its HTTP port (checked: the statistics agree) and report what it did. Given
``--stats-url`` of another server (the session's), ``bench`` reads no statistics and says why, instead of
reporting that server's numbers.
"""

from __future__ import annotations

import json
import random
import socket

import numpy as np
import pytest
from _shared.inside import run_trace_cli

from triton_kitchen.cli.main import main
from triton_kitchen.core.samples import image_tensor
from triton_kitchen.core.server import EmbeddedServer


def _free_pair() -> int:
    for _ in range(200):
        port = random.randint(20000, 40000)
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("127.0.0.1", port))
                b.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue
    raise RuntimeError("no two consecutive free ports")


@pytest.fixture(scope="module")
def paired():
    port = _free_pair()
    srv = EmbeddedServer(http_port=port, grpc_port=port + 1, metrics_port=0)
    srv.start(timeout=180)
    yield srv
    srv.stop()


def _bench(capsys, *argv: str) -> tuple[int, dict]:
    rc = main(["bench", "--model", "classifier", "--protocol", "grpc", "--duration", "1", "--max-windows", "1",
               "--concurrency", "2", "--json", *argv])  # fmt: skip
    return rc, json.loads(capsys.readouterr().out)


def test_trace_and_bench_over_grpc_read_their_own_servers_statistics(
    paired, server, sample_jpegs, tmp_path, capsys
):
    assert paired.grpc_url.endswith(f":{int(paired.http_url.rsplit(':', 1)[1]) + 1}")
    cat = tmp_path / "cat.npy"
    np.save(cat, image_tensor(sample_jpegs["chelsea"]))
    rc, doc, err = run_trace_cli(capsys, "--model", "ensemble_pipeline", "--input", str(cat),
                                 "--protocol", "grpc", "--url", paired.grpc_url)  # fmt: skip
    assert rc == 0 and doc["ok"], err
    # the steps ran, by the statistics of the server that answered (another server's said "ran: no")
    assert [(s["model"], s["ran"]) for s in doc["steps"]] == [("classifier", True), ("postprocess", True)]
    assert all(s["compute_ms"] is not None for s in doc["steps"])

    rc, out = _bench(capsys, "--url", paired.grpc_url)
    assert rc == 0 and out["requests"] > 0
    assert out["server"] and out["server"]["requests"] > 0, out.get("server_note")
    # the server counted this run's requests (a busy server on 8000 counts its own: any number)
    assert abs(out["server"]["requests"] - out["requests"]) <= max(4, out["requests"] // 5), out["server"]

    # another server's statistics are not taken for this one's: none, and why
    rc, out = _bench(capsys, "--url", paired.grpc_url, "--stats-url", server.http_url)
    assert rc == 0 and out["requests"] > 0
    assert (
        not out.get("server")
        and "--stats-url" in out["server_note"]
        and server.http_url in out["server_note"]
    )
