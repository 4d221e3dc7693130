"""Triton Python backend: sleep MS milliseconds per request and answer with this stub's pid.

With POLL true, the sleep is cut into 10 ms steps and the request's is_cancelled() is asked after each: a
cancelled request ends early with a CANCELLED error. Without it, a cancelled request sleeps to the end.
"""

import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils

STEP_S = 0.010


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            ms = int(pb_utils.get_input_tensor_by_name(request, "MS").as_numpy().reshape(-1)[0])
            poll = bool(pb_utils.get_input_tensor_by_name(request, "POLL").as_numpy().reshape(-1)[0])
            start = time.monotonic()
            end = start + max(ms, 0) / 1000
            cancelled = False
            while (now := time.monotonic()) < end:
                if poll and request.is_cancelled():
                    cancelled = True
                    break
                time.sleep(min(STEP_S, end - now) if poll else end - now)
            if cancelled:
                error = pb_utils.TritonError("cancelled while executing", pb_utils.TritonError.CANCELLED)
                responses.append(pb_utils.InferenceResponse(error=error))
                continue
            slept = int((time.monotonic() - start) * 1000)
            responses.append(
                pb_utils.InferenceResponse(
                    [
                        pb_utils.Tensor("PID", np.array([[os.getpid()]], dtype=np.int32)),
                        pb_utils.Tensor("SLEPT_MS", np.array([[slept]], dtype=np.int32)),
                    ]
                )
            )
        return responses
