"""Chapter 4/5/7 library: the requests the clients build, sent for real; the tutorial demo; streaming."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tritonclient.grpc import service_pb2

from triton_kitchen.core import samples
from triton_kitchen.labs import demo
from triton_kitchen.labs import requests_view as rv
from triton_kitchen.tools.protocols import streaming

FP32_BYTES = 1 * 3 * 224 * 224 * 4


@pytest.fixture(scope="module")
def coffee() -> bytes:
    return samples.sample_jpeg("coffee")


def test_sample_photos_are_jpegs():
    for name in samples.SAMPLE_PHOTOS:
        data = samples.sample_jpeg(name)
        assert data[:3] == b"\xff\xd8\xff" and len(data) > 5000
    with pytest.raises(ValueError):
        samples.sample_jpeg("../etc/passwd")


def test_request_inputs(coffee):
    (pixels,) = rv.request_inputs("ensemble_pipeline", coffee)
    assert pixels.name == "input_image" and pixels.shape == [1, 3, 224, 224] and pixels.datatype == "FP32"
    assert pixels.raw_bytes == FP32_BYTES
    (jpeg,) = rv.request_inputs("image_classifier", coffee)
    assert jpeg.shape == [1, 1] and jpeg.datatype == "BYTES" and jpeg.raw_bytes == len(coffee) + 4
    with pytest.raises(ValueError):
        rv.request_inputs("nope", coffee)


def test_http_binary_request_layout(coffee):
    inputs = rv.request_inputs("ensemble_pipeline", coffee)
    view = rv.http_request("ensemble_pipeline", inputs, ["output_label"])
    assert view.binary and view.binary_size == FP32_BYTES
    header = json.loads(view.json_text)
    assert header["inputs"][0]["parameters"]["binary_data_size"] == FP32_BYTES
    assert header["outputs"][0]["parameters"]["binary_data"] is True
    assert view.headers["Inference-Header-Content-Length"] == str(view.json_size)
    assert view.json_size == 186  # the size the lesson quotes
    assert view.body[view.json_size :] == inputs[0].array.tobytes()
    assert "Inference-Header-Content-Length: 186" in view.curl("localhost:8000")
    assert view.wire_size == view.head_size + view.body_size


def test_http_json_request_is_bigger(coffee):
    inputs = rv.request_inputs("ensemble_pipeline", coffee)
    binary = rv.http_request("ensemble_pipeline", inputs, ["output_label"])
    plain = rv.http_request("ensemble_pipeline", inputs, ["output_label"], binary=False)
    assert (
        not plain.binary and plain.binary_size == 0 and "Inference-Header-Content-Length" not in plain.headers
    )
    doc = json.loads(plain.body)
    assert len(doc["inputs"][0]["data"]) == 3 * 224 * 224
    assert plain.body_size > 2 * binary.body_size
    assert "more" in plain.json_preview()


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


def test_grpc_message(coffee):
    inputs = rv.request_inputs("ensemble_pipeline", coffee)
    view = rv.grpc_request("ensemble_pipeline", inputs, ["output_label"])
    msg = view.message
    assert isinstance(msg, service_pb2.ModelInferRequest)
    assert msg.model_name == "ensemble_pipeline" and list(msg.inputs[0].shape) == [1, 3, 224, 224]
    assert view.tensor_bytes == FP32_BYTES and msg.raw_input_contents[0] == inputs[0].array.tobytes()
    assert view.size == len(msg.SerializeToString())
    assert 0 < view.envelope_bytes < 200
    assert sum(f["bytes"] for f in view.fields) == view.size
    assert "raw_input_contents" in view.text() and "602,112 bytes" in view.text()
    http = rv.http_request("ensemble_pipeline", inputs, ["output_label"])
    assert abs(view.size - http.body_size) < 300  # same raw bytes; only the envelope differs


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


def test_send_to_nothing_listening_raises_an_os_error(coffee):
    from triton_kitchen.core.endpoint import Endpoint
    from triton_kitchen.core.server import free_port

    port = free_port()
    view = rv.http_request(
        "ensemble_pipeline", rv.request_inputs("ensemble_pipeline", coffee), ["output_label"]
    )
    with pytest.raises(OSError):  # the page says "unreachable" for an OSError
        rv.send_http(Endpoint(f"127.0.0.1:{port}", f"127.0.0.1:{port}"), view, timeout=2)
