"""``bench`` and ``trace`` over gRPC read the statistics of the server they send to, never another one's.

Statistics come over HTTP; a gRPC server's HTTP port is found among ``--stats-url`` or the port below the gRPC
one, then 8000, and used only when its statistics (every model's counts and last inference time) are those the
gRPC server reports itself. No server here: both APIs are replaced by fixed answers.
"""

from __future__ import annotations

import pytest

from triton_kitchen.core import kserve
from triton_kitchen.tools import server_stats

# one server's statistics, as Triton's HTTP API writes them, and as the gRPC API does (64-bit numbers as strings,
# zeros left out)
HTTP = {
    "model_stats": [
        {
            "name": "classifier",
            "version": "1",
            "last_inference": 1764931200123,
            "inference_count": 12,
            "execution_count": 9,
            "inference_stats": {"success": {"count": 12, "ns": 99}, "fail": {"count": 0, "ns": 0}},
        },
        {"name": "idle", "version": "1", "last_inference": 0, "inference_count": 0, "execution_count": 0},
    ]
}
GRPC = {
    "model_stats": [
        {
            "name": "classifier",
            "version": "1",
            "last_inference": "1764931200123",
            "inference_count": "12",
            "execution_count": "9",
            "inference_stats": {"success": {"count": "12", "ns": "99"}, "fail": {}},
        },
        {"name": "idle", "version": "1"},
    ]
}
OTHER = {"model_stats": [{**HTTP["model_stats"][0], "inference_count": 3, "last_inference": 1764931100000}]}


@pytest.fixture
def servers(monkeypatch):
    """``{http address: statistics}`` answered over HTTP, and the gRPC server's statistics (a list, read in turn)."""
    http: dict[str, dict] = {}
    grpc: list[dict] = [GRPC]

    def statistics(target, model="", timeout=None):
        if target not in http:
            raise kserve.KServeError("connection", f"nothing answers at {target}")
        return http[target]

    def grpc_identity(url, timeout):
        return server_stats._identity(grpc[0] if len(grpc) == 1 else grpc.pop(0))

    monkeypatch.setattr(kserve, "statistics", statistics)
    monkeypatch.setattr(server_stats, "_grpc_identity", grpc_identity)
    return http, grpc


def test_both_apis_give_one_identity():
    assert server_stats._identity(HTTP) == server_stats._identity(GRPC)
    assert server_stats._identity(HTTP) != server_stats._identity(OTHER)


def test_the_port_below_the_grpc_port_comes_first():
    assert server_stats.http_candidates("box:18001") == ["box:18000", "box:8000"]
    assert server_stats.http_candidates("box:8001") == ["box:8000"]


def test_another_server_on_8000_is_not_taken_for_this_one(servers):
    http, _ = servers
    http["box:8000"] = OTHER  # the app's embedded server, say; nothing answers HTTP on 18000
    address, note = server_stats.grpc_statistics_address("box:18001", None)
    assert note and "--stats-url" in note and "box:18000 or box:8000" in note
    http["box:18000"] = HTTP  # serve --http-port 18000 --grpc-port 18001
    assert server_stats.grpc_statistics_address("box:18001", None) == ("box:18000", "")


def test_an_explicit_stats_url_is_checked_too(servers):
    http, _ = servers
    http["box:8000"], http["box:7000"] = OTHER, HTTP
    address, note = server_stats.grpc_statistics_address("box:18001", "http://box:8000/")
    assert address == "box:8000" and "not at box:8000" in note
    assert server_stats.grpc_statistics_address("box:18001", "box:7000") == ("box:7000", "")


def test_a_request_between_the_two_reads_does_not_hide_the_server(servers):
    http, grpc = servers
    http["box:18000"] = HTTP
    grpc[:] = [OTHER, GRPC]  # the first gRPC read came before a request the HTTP read already counts
    assert server_stats.grpc_statistics_address("box:18001", None) == ("box:18000", "")
