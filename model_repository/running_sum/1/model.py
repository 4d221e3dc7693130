"""Triton Python backend: a running sum per sequence, its state kept in this stub process, keyed by correlation ID.

Each response: the sequence's total so far, how many numbers it holds, and this stub's pid. START (from the
sequence batcher's control input, else the request's flags) begins a new sum; END forgets it after answering;
READY 0 marks an empty batch slot, answered with zeros. A sequence the batcher drops after its idle timeout is
never announced to the model: its entry stays until START reuses the ID or the table is full (oldest goes).
"""

import os
from collections import OrderedDict

import numpy as np
import triton_python_backend_utils as pb_utils

FLAG_START, FLAG_END = 1, 2  # TRITONSERVER_REQUEST_FLAG_SEQUENCE_START / _END
MAX_SEQUENCES = 256


def _control(request, name, flag):
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    if tensor is not None:
        return bool(tensor.as_numpy().ravel()[0])
    return bool(request.flags() & flag) if flag else True


class TritonPythonModel:
    def initialize(self, args):
        self.sums = OrderedDict()  # correlation ID -> [total, count]
        self.pid = np.array([[os.getpid()]], dtype=np.int32)

    def execute(self, requests):
        responses = []
        for request in requests:
            x = float(pb_utils.get_input_tensor_by_name(request, "x").as_numpy().ravel()[0])
            if not _control(request, "READY", 0):
                state = [0.0, 0]
            else:
                key = request.correlation_id()
                if _control(request, "START", FLAG_START) or key not in self.sums:
                    self.sums[key] = [0.0, 0]
                state = self.sums[key]
                state[0] += x
                state[1] += 1
                self.sums.move_to_end(key)
                if _control(request, "END", FLAG_END):
                    del self.sums[key]
                while len(self.sums) > MAX_SEQUENCES:
                    self.sums.popitem(last=False)
            out = [
                pb_utils.Tensor("total", np.array([[state[0]]], dtype=np.float32)),
                pb_utils.Tensor("count", np.array([[state[1]]], dtype=np.int32)),
                pb_utils.Tensor("pid", self.pid),
            ]
            responses.append(pb_utils.InferenceResponse(out))
        return responses
