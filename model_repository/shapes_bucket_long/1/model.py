"""Triton Python backend: the shapes drill (chapters 3 and 9). Scores rows of numbers of any length.

Every call pays a fixed cost (CALL_MS, the same for one row or sixteen, as a GPU's launch and copy do for a
small model) and then does one vectorised numpy call on the whole batch, padded with zeros to its widest row
(zeros change no score). Each answer also says which call served it: the stub's pid, the call's number in
that stub, how many requests that call's ``requests`` list held, and how wide it padded them.
"""

import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils

CALL_MS = 20.0


class TritonPythonModel:
    def initialize(self, args):
        self.pid = os.getpid()
        self.calls = 0

    def execute(self, requests):
        self.calls += 1
        rows = [pb_utils.get_input_tensor_by_name(r, "tokens").as_numpy() for r in requests]
        width = max(x.shape[-1] for x in rows)
        batch = np.zeros((sum(x.shape[0] for x in rows), width), np.float32)
        at = 0
        for x in rows:
            batch[at : at + x.shape[0], : x.shape[-1]] = x
            at += x.shape[0]
        time.sleep(CALL_MS / 1000)
        scores = np.tanh(batch).sum(axis=1, keepdims=True)  # the batch's one vectorised call
        responses, at = [], 0
        for x in rows:
            n = x.shape[0]
            info = np.array([[self.pid, self.calls, len(requests), width]] * n, np.int64)
            responses.append(
                pb_utils.InferenceResponse(
                    [pb_utils.Tensor("score", scores[at : at + n]), pb_utils.Tensor("call", info)]
                )
            )
            at += n
        return responses
