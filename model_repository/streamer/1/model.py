"""Triton Python backend, decoupled: stream the tokens of the input text back one response at a time."""

import re
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils

TOKEN = re.compile(r"[\u3400-\u9fff]|[^\s\u3400-\u9fff]+\s*")
MAX_DELAY_MS = 1000


def tokens(text):
    return TOKEN.findall(text)


class TritonPythonModel:
    def execute(self, requests):
        # Each request streams from its own thread, so several streams make progress at once.
        for request in requests:
            threading.Thread(target=self._stream, args=(request,), daemon=True).start()
        return None

    def _stream(self, request):
        sender = request.get_response_sender()
        try:
            raw = pb_utils.get_input_tensor_by_name(request, "text").as_numpy().reshape(-1)[0]
            text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else str(raw)
            delay_t = pb_utils.get_input_tensor_by_name(request, "delay_ms")
            delay_ms = int(delay_t.as_numpy().reshape(-1)[0]) if delay_t is not None else 30
            delay = min(max(delay_ms, 0), MAX_DELAY_MS) / 1000
            for i, tok in enumerate(tokens(text)):
                if i:
                    time.sleep(delay)
                out = [
                    pb_utils.Tensor("token", np.array([tok.encode()], dtype=object)),
                    pb_utils.Tensor("index", np.array([i], dtype=np.int32)),
                ]
                sender.send(pb_utils.InferenceResponse(out))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        except Exception as exc:  # the stream must always be closed, with the reason
            sender.send(
                pb_utils.InferenceResponse(error=pb_utils.TritonError(f"streamer: {exc}")),
                flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL,
            )
