"""Every model of the repository, on the real embedded server, over HTTP and gRPC."""

from __future__ import annotations

import contextlib
import json
import queue
import urllib.request

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from conftest import settled
from tritonclient.utils import InferenceServerException

from triton_kitchen.core import catalog, clients, kserve
from triton_kitchen.core.imaging import preprocess_bytes
from triton_kitchen.core.postprocessing import softmax

CAT_CLASSES = {"tiger cat", "Egyptian cat", "tabby, tabby cat"}


@contextlib.contextmanager
def client_of(server, protocol):
    """(client, its tritonclient module): the app-wide gRPC client, or an HTTP one closed after the block."""
    if protocol == "grpc":
        yield clients.grpc_client(server.endpoint), grpcclient
    else:
        with clients.http(server.endpoint) as client:
            yield client, httpclient


def infer(server, protocol, model, inputs: dict[str, np.ndarray], outputs: list[str]):
    with client_of(server, protocol) as (client, lib):
        tensors = []
        for name, array in inputs.items():
            dtype = (
                "BYTES"
                if array.dtype == object
                else {np.float32: "FP32", np.int32: "INT32"}[array.dtype.type]
            )
            t = lib.InferInput(name, list(array.shape), dtype)
            t.set_data_from_numpy(array)
            tensors.append(t)
        result = client.infer(model, tensors, outputs=[lib.InferRequestedOutput(o) for o in outputs])
        return {o: result.as_numpy(o) for o in outputs}


def photo_input(jpeg: bytes) -> dict[str, np.ndarray]:
    return {"image_bytes": np.array([[jpeg]], dtype=object)}


def random_image(seed=0) -> np.ndarray:
    return np.random.RandomState(seed).rand(1, 3, 224, 224).astype(np.float32)


def model_cases(jpeg):
    """(model, inputs, outputs) for every non-decoupled model of the repository."""
    image = preprocess_bytes(jpeg)[None]
    logits = np.random.RandomState(1).randn(1, 1000).astype(np.float32)
    top5 = ["top5_labels", "top5_scores"]
    return [
        ("preprocess", photo_input(jpeg), ["image_tensor"]),
        ("classifier", {"input": image}, ["logits"]),
        ("classifier_coarse", {"input": image}, ["logits"]),
        ("postprocess", {"logits": logits}, ["probabilities", *top5]),
        ("hflip", {"image": image}, ["mirrored"]),
        ("fuse_logits", {"logits_a": logits, "logits_b": logits * 3}, ["logits"]),
        ("cascade_select", {"coarse_logits": logits, "fine_logits": logits * 2}, ["logits", "stage_used"]),
        ("image_classifier", photo_input(jpeg), top5),
        ("ensemble_pipeline", {"input_image": image}, ["output_label"]),
        ("tta_ensemble", photo_input(jpeg), top5),
        ("cascade_ensemble", photo_input(jpeg), [*top5, "stage_used"]),
        ("cascade_bls", photo_input(jpeg), [*top5, "stage_used"]),
        ("second_opinion", photo_input(jpeg), [*top5, "coarse_logits"]),
    ]


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_every_model_answers(server, sample_jpegs, protocol):
    cases = model_cases(sample_jpegs["coffee"])
    index = kserve.repository_index(server.endpoint)
    # the decoupled models and the drills are tested in their own files (test_generation_live, test_shapes_live, ...)
    elsewhere = {catalog.STREAMER, catalog.TINY_LM, catalog.TINY_LM_IFB, *catalog.LOADED_ON_FIRST_USE}
    assert {c[0] for c in cases} | elsewhere == {m["name"] for m in index}, "a model has no test case"
    for model, inputs, outputs in cases:
        out = infer(server, protocol, model, inputs, outputs)
        for name in outputs:
            assert out[name] is not None and out[name].size > 0, (model, name)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_tutorial_client_shape(server, protocol):
    """The tutorial's own call: input_image [1,3,224,224] FP32 -> output_label, a (1, 1000) probability vector."""
    out = infer(server, protocol, "ensemble_pipeline", {"input_image": random_image()}, ["output_label"])
    probs = out["output_label"]
    assert probs.shape == (1, 1000) and probs.dtype == np.float32
    assert abs(float(probs.sum()) - 1.0) < 1e-4 and probs.min() >= 0


def test_ensemble_equals_its_steps(server, sample_jpegs):
    jpeg = sample_jpegs["chelsea"]
    whole = infer(server, "grpc", "image_classifier", photo_input(jpeg), ["top5_labels", "top5_scores"])
    image = infer(server, "grpc", "preprocess", photo_input(jpeg), ["image_tensor"])["image_tensor"]
    logits = infer(server, "grpc", "classifier", {"input": image}, ["logits"])["logits"]
    steps = infer(server, "grpc", "postprocess", {"logits": logits}, ["top5_labels", "top5_scores"])
    assert list(whole["top5_labels"][0]) == list(steps["top5_labels"][0])
    np.testing.assert_allclose(whole["top5_scores"], steps["top5_scores"], rtol=1e-5, atol=1e-6)

    x = random_image(3)
    pipeline = infer(server, "http", "ensemble_pipeline", {"input_image": x}, ["output_label"])[
        "output_label"
    ]
    logits = infer(server, "http", "classifier", {"input": x}, ["logits"])["logits"]
    np.testing.assert_allclose(pipeline, softmax(logits), rtol=1e-4, atol=1e-6)


def test_parallel_ensemble_equals_its_branches(server, sample_jpegs):
    jpeg = sample_jpegs["camera"]
    image = infer(server, "grpc", "preprocess", photo_input(jpeg), ["image_tensor"])["image_tensor"]
    a = infer(server, "grpc", "classifier", {"input": image}, ["logits"])["logits"]
    b = infer(server, "grpc", "classifier", {"input": np.ascontiguousarray(image[..., ::-1])}, ["logits"])[
        "logits"
    ]
    steps = infer(server, "grpc", "postprocess", {"logits": (a + b) / 2}, ["top5_scores"])["top5_scores"]
    whole = infer(server, "grpc", "tta_ensemble", photo_input(jpeg), ["top5_scores"])["top5_scores"]
    np.testing.assert_allclose(whole, steps, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize(
    "photo,expected",
    [("chelsea", CAT_CLASSES), ("coffee", {"espresso"}), ("camera", {"tripod"}), ("motorcycle", {"moped"})],
)
def test_sample_photos_classify_as_expected(server, sample_jpegs, photo, expected):
    out = infer(server, "http", "image_classifier", photo_input(sample_jpegs[photo]), ["top5_labels"])
    assert out["top5_labels"][0][0].decode() in expected


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_class_count_extension_on_logits(server, protocol):
    with client_of(server, protocol) as (client, lib):
        t = lib.InferInput("input", [1, 3, 224, 224], "FP32")
        t.set_data_from_numpy(random_image())
        result = client.infer("classifier", [t], outputs=[lib.InferRequestedOutput("logits", class_count=3)])
    entries = [e.decode() for e in result.as_numpy("logits").reshape(-1)]
    assert len(entries) == 3
    score, idx, label = entries[0].split(":", 2)
    assert float(score) and int(idx) in range(1000) and label


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize(
    "name,dtype,shape,fragment",
    [
        ("input_img", "FP32", [1, 3, 224, 224], "unexpected inference input 'input_img'"),
        ("input_image", "INT32", [1, 3, 224, 224], "data-type is 'INT32'"),
        ("input_image", "FP32", [1, 3, 112, 112], "shape"),
    ],
)
def test_triton_errors_reach_the_caller(server, protocol, name, dtype, shape, fragment):
    with client_of(server, protocol) as (client, lib):
        t = lib.InferInput(name, shape, dtype)
        t.set_data_from_numpy(np.zeros(shape, dtype=np.float32 if dtype == "FP32" else np.int32))
        with pytest.raises(InferenceServerException) as err:
            client.infer("ensemble_pipeline", [t])
    assert fragment in str(err.value)


def test_bad_image_is_refused_with_a_reason(server):
    with pytest.raises(InferenceServerException) as err:
        infer(server, "grpc", "image_classifier", photo_input(b"this is not an image"), ["top5_labels"])
    assert "preprocess: not_an_image" in str(err.value)


def test_streamer_over_grpc(server):
    responses: queue.Queue = queue.Queue()
    client = grpcclient.InferenceServerClient(server.grpc_url)
    client.start_stream(callback=lambda result, error: responses.put((result, error)))
    try:
        text = grpcclient.InferInput("text", [1], "BYTES")
        text.set_data_from_numpy(np.array([b"one two three four"], dtype=object))
        delay = grpcclient.InferInput("delay_ms", [1], "INT32")
        delay.set_data_from_numpy(np.array([5], dtype=np.int32))
        client.async_stream_infer("streamer", [text, delay], enable_empty_final_response=True)
        tokens = []
        while True:
            result, error = responses.get(timeout=20)
            assert error is None, error
            if result.get_response().parameters["triton_final_response"].bool_param:
                break
            tokens.append(result.as_numpy("token")[0].decode())
    finally:
        client.stop_stream()
        client.close()
    assert [t.strip() for t in tokens] == ["one", "two", "three", "four"]


def test_streamer_over_http_sse(server):
    body = json.dumps({"text": "你好 kitchen", "delay_ms": 5}).encode()
    req = urllib.request.Request(
        f"http://{server.http_url}/v2/models/streamer/generate_stream",
        data=body,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=20) as resp:
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        events = [
            json.loads(line[5:]) for line in resp.read().decode().splitlines() if line.startswith("data:")
        ]
    assert [e["token"].strip() for e in events] == ["你", "好", "kitchen"]
    assert [e["index"] for e in events] == [0, 1, 2]


def inference_count(server, model: str) -> int:
    stats = kserve.statistics(server.endpoint, model)
    return sum(int(s["inference_count"]) for s in stats["model_stats"])


def count_reaching(server, model: str, expected: int, timeout_s: float = 5.0) -> int:
    """The model's inference count once it reaches ``expected`` (or after ``timeout_s``): Triton counts a
    composing model's execution a moment after the answer, later still on a loaded machine."""
    return settled(lambda: inference_count(server, model), lambda n: n >= expected, timeout_s)


def test_bls_cascade_exits_early_when_sure(server, sample_jpegs):
    """Coffee: the coarse stage is sure, the full classifier is not called. Chelsea: it is."""
    before = inference_count(server, "classifier")
    sure = infer(
        server, "grpc", "cascade_bls", photo_input(sample_jpegs["coffee"]), ["stage_used", "top5_labels"]
    )
    assert sure["stage_used"].item() == 1 and sure["top5_labels"][0][0].decode() == "espresso"
    assert inference_count(server, "classifier") == before

    unsure = infer(
        server, "grpc", "cascade_bls", photo_input(sample_jpegs["chelsea"]), ["stage_used", "top5_labels"]
    )
    assert unsure["stage_used"].item() == 2 and unsure["top5_labels"][0][0].decode() in CAT_CLASSES
    assert count_reaching(server, "classifier", before + 1) == before + 1

    # The ensemble cascade cannot skip: the classifier runs even when the coarse stage is sure.
    infer(server, "grpc", "cascade_ensemble", photo_input(sample_jpegs["coffee"]), ["stage_used"])
    assert count_reaching(server, "classifier", before + 2) == before + 2
