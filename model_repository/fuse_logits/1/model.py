"""Triton Python backend: the mean of two logit tensors."""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "logits_a").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "logits_b").as_numpy()
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("logits", (a + b) / 2)]))
        return responses
