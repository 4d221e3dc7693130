"""Chapter 4/5/7 library offline: the requests the clients build (HTTP binary and JSON, gRPC) and a send to
nothing listening.

The tests that need the server, the app or a browser: tests/live/test_requests_view_live.py."""

from __future__ import annotations

import json

import pytest
from tritonclient.grpc import service_pb2

from triton_kitchen.core import samples
from triton_kitchen.labs import requests_view as rv

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


def test_send_to_nothing_listening_raises_an_os_error(coffee):
    from triton_kitchen.core.endpoint import Endpoint
    from triton_kitchen.core.server import free_port

    port = free_port()
    view = rv.http_request(
        "ensemble_pipeline", rv.request_inputs("ensemble_pipeline", coffee), ["output_label"]
    )
    with pytest.raises(OSError):  # the page says "unreachable" for an OSError
        rv.send_http(Endpoint(f"127.0.0.1:{port}", f"127.0.0.1:{port}"), view, timeout=2)
