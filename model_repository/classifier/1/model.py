"""Triton Python backend: run model.onnx with onnxruntime; one ONNX run per batch Triton hands us."""

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = {k: v["string_value"] for k, v in config.get("parameters", {}).items()}
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = int(params.get("intra_op_threads", "2"))
        opts.inter_op_num_threads = 1
        path = Path(args["model_repository"]) / args["model_version"] / "model.onnx"
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        self.input_name = config["input"][0]["name"]
        self.output_name = config["output"][0]["name"]

    def execute(self, requests):
        arrays = [pb_utils.get_input_tensor_by_name(r, self.input_name).as_numpy() for r in requests]
        logits = self.session.run(None, {"input": np.concatenate(arrays).astype(np.float32)})[0]
        responses, start = [], 0
        for a in arrays:
            part = logits[start : start + len(a)]
            start += len(a)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor(self.output_name, part)]))
        return responses
