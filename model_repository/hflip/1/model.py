"""Triton Python backend: flip an image tensor along its width axis."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            image = pb_utils.get_input_tensor_by_name(request, "image").as_numpy()
            mirrored = np.ascontiguousarray(image[..., ::-1])
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("mirrored", mirrored)]))
        return responses
