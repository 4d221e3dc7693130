"""Triton Python backend (BLS): coarse stage first; the fine stage only where the coarse one is unsure."""

import sys
from pathlib import Path

# The stub ignores PYTHONPATH: make the app's root (three levels up) importable for triton_kitchen.
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

import numpy as np
import triton_python_backend_utils as pb_utils

from triton_kitchen.core.postprocessing import confidence_threshold, confident


def _call(model, inputs, output):
    request = pb_utils.InferenceRequest(model_name=model, requested_output_names=[output], inputs=inputs)
    response = request.exec()
    if response.has_error():
        raise pb_utils.TritonModelException(f"{model}: {response.error().message()}")
    return pb_utils.get_output_tensor_by_name(response, output).as_numpy()


class TritonPythonModel:
    def initialize(self, args):
        self.threshold = confidence_threshold(args["model_config"])

    def execute(self, requests):
        responses = []
        for request in requests:
            blobs = pb_utils.get_input_tensor_by_name(request, "image_bytes").as_numpy()
            try:
                image = _call("preprocess", [pb_utils.Tensor("image_bytes", blobs)], "image_tensor")
                logits = _call("classifier_coarse", [pb_utils.Tensor("input", image)], "logits")
                sure = confident(logits, self.threshold)
                if not sure.all():  # early exit for confident rows: the fine stage sees only the others
                    rest = np.ascontiguousarray(image[~sure])
                    logits = logits.copy()
                    logits[~sure] = _call("classifier", [pb_utils.Tensor("input", rest)], "logits")
                post = pb_utils.InferenceRequest(
                    model_name="postprocess",
                    requested_output_names=["top5_labels", "top5_scores"],
                    inputs=[pb_utils.Tensor("logits", logits.astype(np.float32))],
                ).exec()
                if post.has_error():
                    raise pb_utils.TritonModelException(f"postprocess: {post.error().message()}")
            except pb_utils.TritonModelException as exc:
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(str(exc))))
                continue
            stage = np.where(sure, 1, 2).astype(np.int32).reshape(-1, 1)
            responses.append(
                pb_utils.InferenceResponse(
                    [
                        pb_utils.get_output_tensor_by_name(post, "top5_labels"),
                        pb_utils.get_output_tensor_by_name(post, "top5_scores"),
                        pb_utils.Tensor("stage_used", stage),
                    ]
                )
            )
        return responses
