"""Tensor peek (triton_kitchen.labs.peek): the tensors each step received and produced in one request,
from Triton's level=TENSORS trace on the embedded server, or by calling each step where the trace is closed.
The trace reader runs offline on bytes laid out as Triton 2.51 writes them; the rest against the real server.

Here the tests that need no server, app or browser; the others: tests/live/test_peek_live.py."""

from __future__ import annotations

import numpy as np

from triton_kitchen.core.samples import image_tensor
from triton_kitchen.labs import peek

# as Triton 2.51 writes a TENSORS trace: BYTES elements raw between \" quotes (no JSON escaping), numbers as text
RAW = (
    b'[{"id":2,"model_name":"step_a","model_version":1,"parent_id":1},'
    b'{"id":2,"timestamps":[{"name":"REQUEST_START","ns":20}]},'
    b'{"id":2,"activity":"TENSOR_QUEUE_INPUT","tensor":{"name":"x","data":"\\"\xff\xd8\xff\x00\\"q\\"","shape":"1,1","dtype":"BYTES"}},'
    b'{"id":2,"activity":"TENSOR_BACKEND_OUTPUT","tensor":{"name":"y","data":"0.5,-1,2.25","shape":"1,3","dtype":"FP32"}},'
    b'{"id":1,"model_name":"ens","model_version":1},'
    b'{"id":1,"activity":"TENSOR_QUEUE_INPUT","tensor":{"name":"x","data":"\\"\xff\xd8\xff\x00\\"q\\"","shape":"1,1","dtype":"BYTES"}},'
    b'{"id":1,"activity":"TENSOR_BACKEND_OUTPUT","tensor":{"name":"labels","data":"\\"tabby\\",\\"lynx\\"","shape":"1,2","dtype":"BYTES"}}]'
)


def test_a_tensors_trace_with_raw_bytes_is_read_without_a_json_parser():
    p = peek.parse_tensor_trace(RAW, "ens")
    assert p is not None and p.steps == ["step_a"] and p.source == "trace"
    assert p.photo() == b'\xff\xd8\xff\x00\\"q'  # the raw bytes, a quote inside them included
    (y,) = p.at("step_a", "output")
    assert y.shape == [1, 3] and y.value.dtype == np.float32 and y.value.tolist() == [[0.5, -1.0, 2.25]]
    (labels,) = p.at("ens", "output")
    assert labels.value.ravel().tolist() == [b"tabby", b"lynx"] and peek.kind(labels) == "labels"
    assert [(t.step, t.direction) for t in p.tensors] == [
        ("ens", "input"), ("step_a", "input"), ("step_a", "output"), ("ens", "output"),
    ]  # fmt: skip
    assert peek.same_as(p, p.at("step_a", "input")[0]).step == "ens"  # the step's input is the ensemble's
    assert peek.parse_tensor_trace(RAW, "other") is None


def test_pixels_invert_the_classifiers_normalization(sample_jpegs):
    x = image_tensor(sample_jpegs["coffee"])
    pixels = peek.to_pixels(x[None])
    assert pixels.shape == (224, 224, 3) and pixels.dtype == np.uint8
    assert np.allclose((pixels.transpose(2, 0, 1).astype(np.float32) - 127) / 128, x, atol=1 / 128)
