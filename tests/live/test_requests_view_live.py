"""Chapter 4/5/7 library: the requests the clients build, sent for real; the tutorial demo; streaming.

The tests of this topic that need no server, app or browser: tests/unit/test_requests_view.py."""

from __future__ import annotations

import json

import numpy as np
import pytest

from triton_kitchen.core import samples
from triton_kitchen.labs import demo
from triton_kitchen.labs import requests_view as rv
from triton_kitchen.tools.protocols import streaming


@pytest.fixture(scope="module")
def coffee() -> bytes:
    return samples.sample_jpeg("coffee")


def test_send_exact_bytes(server, coffee):
    for model in ("ensemble_pipeline", "image_classifier"):
        view = rv.http_request(model, rv.request_inputs(model, coffee), rv.request_outputs(model))
        resp = rv.send_http(server.endpoint, view)
        assert resp.status == 200, resp.json_text
        header = json.loads(resp.json_text)
        assert header["model_name"] == model and resp.binary_size > 0
        assert int(resp.headers[rv.HTTP_HEADER_NAME]) == len(resp.json_text.encode())  # the page shows them
    plain = rv.http_request(
        "ensemble_pipeline", rv.request_inputs("ensemble_pipeline", coffee), ["output_label"], False
    )
    resp = rv.send_http(server.endpoint, plain)
    probs = np.array(json.loads(resp.json_text)["outputs"][0]["data"])
    assert resp.status == 200 and probs.shape == (1000,) and abs(probs.sum() - 1) < 1e-3


def test_send_wrong_name_is_a_400(server, coffee):
    (tensor,) = rv.request_inputs("ensemble_pipeline", coffee)
    tensor.name = "image"
    resp = rv.send_http(server.endpoint, rv.http_request("ensemble_pipeline", [tensor], ["output_label"]))
    assert resp.status == 400 and "image" in json.loads(resp.json_text)["error"]


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_tutorial_client_runs(server, coffee, protocol):
    run = demo.run_tutorial(server.endpoint, protocol, coffee)
    assert run.ok, run.error
    assert run.output_shape == [1, 1000] and abs(run.prob_sum - 1) < 1e-3
    assert run.label == "espresso" and run.ms > 0
    noise = demo.run_tutorial(server.endpoint, protocol, None)
    assert noise.ok and noise.top_prob < run.top_prob


def test_streaming_grpc_and_sse(server):
    text = "one two three four"
    # 100 ms between words: a client starved of the CPU for a while still sees them spread (not in one piece)
    grpc = streaming.stream_grpc(server.endpoint, text, delay_ms=100)
    sse = streaming.stream_sse(server.endpoint, text, delay_ms=100)
    for run in (grpc, sse):
        assert not run.error, run.error
        assert "".join(run.tokens).split() == text.split()
        assert run.arrivals_ms == sorted(run.arrivals_ms) and run.arrivals_ms[-1] - run.arrivals_ms[0] >= 150


def test_quick_protocol_check_is_bounded(server, coffee):
    times = demo.quick_protocol_check(server.endpoint, coffee, requests=3, budget_s=10)
    assert set(times) == {"http-json", "http-binary", "grpc"}
    assert all(len(v) == 3 and all(x > 0 for x in v) for v in times.values())
    short = demo.quick_protocol_check(server.endpoint, coffee, requests=1000, budget_s=0.5)
    assert sum(len(v) for v in short.values()) < 100
