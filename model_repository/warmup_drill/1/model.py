"""Triton Python backend: y = x + 1; the first execute in this stub first waits COLD_START_S (a sleep, standing
in for a framework's lazy set-up on its first call: memory pools, kernels chosen, graphs compiled)."""

import time

import numpy as np
import triton_python_backend_utils as pb_utils

COLD_START_S = 0.5


class TritonPythonModel:
    def initialize(self, args):
        self.warm = False

    def execute(self, requests):
        if not self.warm:
            time.sleep(COLD_START_S)
            self.warm = True
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "x").as_numpy()
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("y", (x + 1).astype(np.float32))]))
        return responses
