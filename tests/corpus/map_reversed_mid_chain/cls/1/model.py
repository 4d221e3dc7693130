"""Generic step model for the corpus: answers zeros of each configured output shape."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        cfg = json.loads(args["model_config"])
        self.batching = cfg.get("max_batch_size", 0) > 0
        self.outputs = [
            (
                o["name"],
                [1 if d < 0 else d for d in o["dims"]],
                pb_utils.triton_string_to_numpy(o["data_type"]),
            )
            for o in cfg.get("output", [])
        ]

    def execute(self, requests):
        responses = []
        for request in requests:
            tensors = []
            for name, dims, dtype in self.outputs:
                shape = ([1] if self.batching else []) + dims
                tensors.append(pb_utils.Tensor(name, np.zeros(shape, dtype=dtype)))
            responses.append(pb_utils.InferenceResponse(output_tensors=tensors))
        return responses
