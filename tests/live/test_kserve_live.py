"""The one KServe REST module, against the real embedded server.

The tests of this topic that need no server, app or browser: tests/unit/test_kserve.py."""

from __future__ import annotations

import pytest

from triton_kitchen.core import kserve


def test_health_metadata_config_and_statistics(server):
    ep = server.endpoint
    assert kserve.live(ep) and kserve.ready(ep) and kserve.model_ready(ep, "classifier")
    assert not kserve.model_ready(ep, "no_such_model")
    assert kserve.server_metadata(ep)["name"] == "triton"
    meta = kserve.model_metadata(ep, "classifier")
    assert meta["name"] == "classifier" and meta["inputs"]
    assert kserve.model_config(ep, "classifier")["name"] == "classifier"
    stats = kserve.statistics(ep, "classifier")["model_stats"]
    assert stats[0]["name"] == "classifier"
    assert {m["name"] for m in kserve.statistics(ep)["model_stats"]} >= {"classifier", "preprocess"}


def test_an_unknown_model_is_triton_s_own_message(server):
    with pytest.raises(kserve.KServeError) as info:
        kserve.model_config(server.endpoint, "no_such_model")
    assert info.value.code == "http" and info.value.status == 404
    assert "no_such_model" in info.value.detail


def test_repository_api_needs_the_key(server):
    index = kserve.repository_index(server.endpoint)
    assert any(m["name"] == "classifier" and m["state"] == "READY" for m in index)
    with pytest.raises(kserve.KServeError) as info:
        kserve.repository_index(server.http_url)  # the address alone: no key
    assert info.value.code == "no_control_api"


def test_trace_settings_read_and_write(server):
    ep = server.endpoint
    before = kserve.trace_settings(ep, "preprocess")
    assert "trace_level" in before
    now = kserve.update_trace_settings(ep, {"trace_rate": "7"}, model="preprocess")
    assert now["trace_rate"] == "7"
    kserve.update_trace_settings(ep, {"trace_rate": None}, model="preprocess")
    assert kserve.trace_settings(ep, "preprocess")["trace_rate"] == before["trace_rate"]


def test_server_status_asks_the_known_models_when_the_index_is_closed(server):
    from triton_kitchen.core.endpoint import Endpoint
    from triton_kitchen.tools.repository import server_status

    keyless = Endpoint(server.http_url, server.grpc_url)  # the repository index is closed to it
    status = server_status(keyless, known_models=["no_such_model", "classifier"])
    assert status.up and status.version and not status.error
    assert [(m.name, m.state) for m in status.models] == [
        ("classifier", "READY"),
        ("no_such_model", "UNAVAILABLE"),
    ]
    assert {m.name for m in server_status(keyless).models} >= {"classifier", "image_classifier", "streamer"}
