"""Classify an encoded image through an ensemble of the repository, and time it."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from triton_kitchen.core import clients
from triton_kitchen.core.catalog import CASCADE_BLS, CASCADE_ENSEMBLE, IMAGE_CLASSIFIER, TTA_ENSEMBLE
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.errors import KitchenError

CLASSIFY_MODELS = (IMAGE_CLASSIFIER, TTA_ENSEMBLE, CASCADE_ENSEMBLE, CASCADE_BLS)


@dataclass
class Classification:
    """Top-5 labels and scores, which protocol carried them and the measured round trip."""

    labels: list[str]
    scores: list[float]
    model: str
    protocol: str
    ms: float
    stage_used: int | None = None


class ClassifyError(KitchenError):
    """Triton refused the request, or nothing answered; ``code`` is a key for the UI's message table."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(code, detail)


def classify(
    endpoint: Endpoint,
    image: bytes,
    model: str = IMAGE_CLASSIFIER,
    protocol: str = "grpc",
    timeout_s: float = 30.0,
) -> Classification:
    """Send the encoded image as ``image_bytes`` (BYTES [1, 1]) and read back the top-5."""
    if protocol == "grpc":
        result, ms = _infer(
            clients.grpc_client(endpoint), grpcclient, model, image, {"client_timeout": timeout_s}
        )
    elif protocol.startswith("http"):
        try:
            with clients.http(endpoint, timeout=timeout_s) as client:
                result, ms = _infer(client, httpclient, model, image, {})
        except OSError as exc:  # the HTTP client raises socket errors as they are: nothing answered
            code = "timeout" if isinstance(exc, TimeoutError) else "server_unreachable"
            raise ClassifyError(code, f"{type(exc).__name__}: {exc}") from exc
    else:
        raise ValueError(f"unknown protocol {protocol!r}")
    labels = [b.decode() if isinstance(b, bytes) else str(b) for b in result.as_numpy("top5_labels")[0]]
    scores = [float(s) for s in result.as_numpy("top5_scores")[0]]
    stage = result.as_numpy("stage_used")
    return Classification(
        labels, scores, model, protocol, ms, int(stage.reshape(-1)[0]) if stage is not None else None
    )


def _infer(client, lib, model: str, image: bytes, kwargs: dict):
    tensor = lib.InferInput("image_bytes", [1, 1], "BYTES")
    tensor.set_data_from_numpy(np.array([[image]], dtype=object))
    t0 = time.perf_counter()
    try:
        result = client.infer(model, [tensor], **kwargs)
    except InferenceServerException as exc:
        raise ClassifyError(error_code(exc), exc.message() or str(exc)) from exc
    return result, (time.perf_counter() - t0) * 1000


# gRPC's words when no gRPC server answers at the address: the port is closed, the server went away
# mid-connection, or something else (an HTTP/1 port, say) listens there. Not a model problem.
_NO_SERVER = ("failed to connect", "connection refused", "socket closed", "connection reset")


def error_code(exc: InferenceServerException) -> str:
    """Map Triton's error text to a short key the UI translates (the original text is shown too)."""
    text = (exc.message() or str(exc)).lower()
    if any(words in text for words in _NO_SERVER):
        return "server_unreachable"
    found = re.search(r"preprocess: (\w+):", text)
    if found:  # the preprocess model reports ImageError as "preprocess: <code>: <detail>"
        return found.group(1)
    if "unexpected inference input" in text or "unexpected inference output" in text:
        return "wrong_tensor_name"
    if "datatype" in text or "data type" in text or "data-type" in text:  # 2.51 writes "data-type is 'FP64'"
        return "wrong_dtype"
    if "shape" in text or "dims" in text or "byte size" in text:
        return "wrong_shape"
    # Triton answers an unknown or unloaded model with gRPC status UNAVAILABLE too: its words decide
    if "not ready" in text or "unknown model" in text or "is not found" in text:
        return "model_not_ready"
    if "deadline" in text or "timed out" in text or "timeout" in text:
        return "timeout"
    status = str(exc.status() or "").lower()  # gRPC's "StatusCode.UNAVAILABLE"; None over HTTP
    if "unavailable" in text or "unavailable" in status or "connect" in text or "failed to" in text:
        return "server_unreachable"
    return "server_error"


CLIENT_CODE = """import numpy as np
import tritonclient.{module} as {alias}

client = {alias}.InferenceServerClient("{url}")
image = open("{path}", "rb").read()
tensor = {alias}.InferInput("image_bytes", [1, 1], "BYTES")
tensor.set_data_from_numpy(np.array([[image]], dtype=object))
result = client.infer("{model}", [tensor])
print(result.as_numpy("top5_labels"))
"""


def client_code(
    endpoint: Endpoint, protocol: str, model: str = IMAGE_CLASSIFIER, path: str = "photo.jpg"
) -> str:
    """The few lines of Python that make the call :func:`classify` makes (same tensor, same model), for the
    student to read beside the button and run on their own machine."""
    if protocol == "grpc":
        return CLIENT_CODE.format(
            module="grpc", alias="grpcclient", url=endpoint.grpc_url, path=path, model=model
        )
    if protocol.startswith("http"):
        return CLIENT_CODE.format(
            module="http", alias="httpclient", url=endpoint.http_url, path=path, model=model
        )
    raise ValueError(f"unknown protocol {protocol!r}")
