"""Triton Python backend: y = 2 * x, after 40 ms of pretend work (a sleep: the cost a cache saves)."""

import time

import numpy as np
import triton_python_backend_utils as pb_utils

WORK_S = 0.04


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "x").as_numpy()
            time.sleep(WORK_S)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("y", (2 * x).astype(np.float32))]))
        return responses
