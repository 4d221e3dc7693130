"""Tensor peek (triton_kitchen.labs.peek): the tensors each step received and produced in one request,
from Triton's level=TENSORS trace on the embedded server, or by calling each step where the trace is closed.
The trace reader runs offline on bytes laid out as Triton 2.51 writes them; the rest against the real server.

The tests of this topic that need no server, app or browser: tests/unit/test_peek.py."""

from __future__ import annotations

import numpy as np
import pytest

from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.samples import image_tensor
from triton_kitchen.labs import peek


# -- live -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_the_trace_holds_each_steps_real_tensors(server, sample_jpegs, protocol):
    jpeg = sample_jpegs["chelsea"]
    p = peek.peek(
        server.endpoint, "image_classifier", {"image_bytes": np.array([[jpeg]], dtype=object)}, protocol
    )
    assert p.source == "trace" and p.steps == ["preprocess", "classifier", "postprocess"] and not p.notes
    assert p.photo() == jpeg  # what the server received, byte for byte
    img = p.image_tensor()
    assert img.step == "preprocess" and img.shape == [1, 3, 224, 224] and peek.kind(img) == "image"
    # preprocess's output as Triton wrote it (six significant digits) is the image's normalized tensor
    assert np.allclose(img.value[0], image_tensor(jpeg), atol=1e-5)
    logits = p.logits()
    assert logits.step == "classifier" and peek.kind(logits) == "logits"
    assert peek.same_as(p, p.at("classifier", "input")[0]) is img  # the classifier got preprocess's tensor
    top5 = p.top5()
    assert len(top5) == 5 and top5[0][0] in ("tabby, tabby cat", "tiger cat", "Egyptian cat")
    scores = np.exp(logits.value.ravel() - logits.value.max())
    assert abs(top5[0][1] - scores.max() / scores.sum()) < 1e-4  # the top score is the logits' softmax


def test_without_the_trace_api_each_step_is_called_with_the_previous_steps_output(server, sample_jpegs):
    """An address without the embedded server's key: the trace API refuses, and the steps are called in turn."""
    jpeg = sample_jpegs["coffee"]
    arrays = {"image_bytes": np.array([[jpeg]], dtype=object)}
    closed = Endpoint(http_url=server.http_url, grpc_url=server.grpc_url)
    p = peek.peek(closed, "image_classifier", arrays, "grpc")
    assert p.source == "steps" and "no TENSORS trace" in p.notes[-1]
    assert p.photo() == jpeg and np.allclose(p.image_tensor().value[0], image_tensor(jpeg), atol=1e-6)
    assert p.top5()[0][0] == "espresso"
    traced = peek.peek(server.endpoint, "image_classifier", arrays, "http")
    assert traced.source == "trace"
    assert np.allclose(traced.logits().value, p.logits().value, rtol=1e-4, atol=1e-4)


def test_a_tensor_input_ensemble_shows_the_tensor_it_was_sent_and_its_probabilities(server, sample_jpegs):
    x = image_tensor(sample_jpegs["chelsea"])
    p = peek.peek(server.endpoint, "ensemble_pipeline", {"input_image": x}, "grpc")
    assert p.source == "trace" and p.steps == ["classifier", "postprocess"] and p.photo() is None
    sent = p.at("ensemble_pipeline", "input")[0]
    assert peek.kind(sent) == "image" and np.allclose(sent.value, x, atol=1e-5)
    (probs,) = p.at("postprocess", "output")
    assert peek.kind(probs) == "probabilities" and peek.kind(p.logits()) == "logits"
    assert int(np.argmax(probs.value)) == int(np.argmax(p.logits().value))
