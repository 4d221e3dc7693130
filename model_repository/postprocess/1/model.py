"""Triton Python backend: logits -> probabilities and top-5 labels and scores."""

import sys
from pathlib import Path

# The stub ignores PYTHONPATH: make the app's root (three levels up) importable for triton_kitchen.
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))


import numpy as np
import triton_python_backend_utils as pb_utils

from triton_kitchen.core.postprocessing import load_labels, softmax, top_k


class TritonPythonModel:
    def initialize(self, args):
        repo = Path(args["model_repository"]).parent
        self.labels = np.array(load_labels(repo / "classifier" / "labels.txt"), dtype=object)

    def execute(self, requests):
        responses = []
        for request in requests:
            probs = softmax(pb_utils.get_input_tensor_by_name(request, "logits").as_numpy())
            idx, scores = top_k(probs, 5)
            labels = np.array([[s.encode() for s in row] for row in self.labels[idx]], dtype=object)
            responses.append(
                pb_utils.InferenceResponse(
                    [
                        pb_utils.Tensor("probabilities", probs),
                        pb_utils.Tensor("top5_labels", labels),
                        pb_utils.Tensor("top5_scores", scores.astype(np.float32)),
                    ]
                )
            )
        return responses
