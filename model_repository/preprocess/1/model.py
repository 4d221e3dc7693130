"""Triton Python backend: encoded image bytes -> FP32 [3, 224, 224]."""

import sys
from pathlib import Path

# The stub ignores PYTHONPATH: make the app's root (three levels up) importable for triton_kitchen.
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

import numpy as np
import triton_python_backend_utils as pb_utils

from triton_kitchen.core.imaging import ImageError, preprocess_bytes


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            blobs = pb_utils.get_input_tensor_by_name(request, "image_bytes").as_numpy().reshape(-1)
            try:
                batch = np.stack([preprocess_bytes(bytes(b)) for b in blobs])
            except ImageError as exc:
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(f"preprocess: {exc}")))
                continue
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("image_tensor", batch)]))
        return responses
