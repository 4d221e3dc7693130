"""Triton Python backend: the stateless first step of chapter 9's ensemble: y = 2 * clip(x, -1000, 1000).

Each response also carries this stub's pid, so the page shows which of the two instances took the request.
"""

import os

import numpy as np
import triton_python_backend_utils as pb_utils

LIMIT = 1000.0
FACTOR = 2.0


class TritonPythonModel:
    def initialize(self, args):
        self.pid = os.getpid()

    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "x").as_numpy()
            y = (np.clip(x, -LIMIT, LIMIT) * FACTOR).astype(np.float32)
            pid = np.full((x.shape[0], 1), self.pid, dtype=np.int32)
            responses.append(
                pb_utils.InferenceResponse([pb_utils.Tensor("y", y), pb_utils.Tensor("pid", pid)])
            )
        return responses
