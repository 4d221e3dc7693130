"""Data-type names and tensor sizes, computed by hand."""

import numpy as np

from triton_kitchen.core import tensors


def test_names_both_ways():
    assert tensors.dtype_name(11) == "TYPE_FP32"
    assert tensors.dtype_name("fp32") == tensors.dtype_name("TYPE_FP32") == "TYPE_FP32"
    assert tensors.dtype_name("BYTES") == "TYPE_STRING"
    assert tensors.dtype_name(999) == "TYPE_999"
    assert tensors.wire_name("TYPE_STRING") == "BYTES" and tensors.wire_name(11) == "FP32"
    assert tensors.short_name("TYPE_STRING") == "STRING" and tensors.short_name(None) == "?"


def test_sizes():
    assert tensors.tensor_bytes("TYPE_FP32", [3, 224, 224], batch=8) == 4_816_896
    assert tensors.tensor_bytes("FP16", [-1, 4]) is None
    assert tensors.tensor_bytes("FP16", [-1, 4], wildcard=2) == 16
    assert tensors.tensor_bytes("TYPE_STRING", [1]) is None
    assert tensors.array_bytes(np.zeros((2, 3), np.float32)) == 24
    assert tensors.array_bytes(np.array([b"abc", b""], dtype=object)) == 4 + 3 + 4
    assert tensors.array_wire_name(np.zeros(1, np.uint8)) == "UINT8"
    assert tensors.format_bytes(4_816_896) == "4.8 MB" and tensors.format_bytes(None) == "?"
