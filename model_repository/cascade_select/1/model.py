"""Triton Python backend: choose coarse or fine logits by the coarse stage's confidence."""

import sys
from pathlib import Path

# The stub ignores PYTHONPATH: make the app's root (three levels up) importable for triton_kitchen.
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

import numpy as np
import triton_python_backend_utils as pb_utils

from triton_kitchen.core.postprocessing import confidence_threshold, confident


class TritonPythonModel:
    def initialize(self, args):
        self.threshold = confidence_threshold(args["model_config"])

    def execute(self, requests):
        responses = []
        for request in requests:
            coarse = pb_utils.get_input_tensor_by_name(request, "coarse_logits").as_numpy()
            fine = pb_utils.get_input_tensor_by_name(request, "fine_logits").as_numpy()
            sure = confident(coarse, self.threshold)
            logits = np.where(sure[:, None], coarse, fine).astype(np.float32)
            stage = np.where(sure, 1, 2).astype(np.int32).reshape(-1, 1)
            responses.append(
                pb_utils.InferenceResponse(
                    [pb_utils.Tensor("logits", logits), pb_utils.Tensor("stage_used", stage)]
                )
            )
        return responses
