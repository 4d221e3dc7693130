"""Generic decoupled step model for the corpus: streams one response of zeros, then the final flag."""

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
        for request in requests:
            sender = request.get_response_sender()
            tensors = []
            for name, dims, dtype in self.outputs:
                shape = ([1] if self.batching else []) + dims
                tensors.append(pb_utils.Tensor(name, np.zeros(shape, dtype=dtype)))
            sender.send(pb_utils.InferenceResponse(output_tensors=tensors))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
