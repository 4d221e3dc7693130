"""Chapter 10's wire-limit experiment: gRPC's default 4 MiB message limit, and whose limit it is.

A gRPC channel refuses to *receive* a message larger than 4 MiB unless told otherwise (grpcio's default
``grpc.max_receive_message_length``); sending has no default limit. Triton's server raises its own receive
limit to 2 GiB - 1, and tritonclient raises the client's (``MAX_GRPC_MESSAGE_SIZE``). So a plain grpcio client
with default settings can send a big request, the server computes the answer, and the client then refuses
that answer. ``hflip`` answers as many bytes as it is sent (a mirrored 3x224x224 FP32 image is 602,112 B), so
the batch size moves the answer across the limit: 6 images fit, 7 do not.
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc
import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.grpc import service_pb2, service_pb2_grpc

from triton_kitchen.core.catalog import HFLIP
from triton_kitchen.core.endpoint import Endpoint

MODEL = HFLIP
IMAGE_BYTES = 3 * 224 * 224 * 4
GRPC_DEFAULT_LIMIT = 4 * 1024 * 1024  # grpcio's default max_receive_message_length
MAX_BATCH = 8  # hflip's max_batch_size
TIMEOUT_S = 30.0


@dataclass
class LimitResult:
    batch: int
    request_bytes: int  # the encoded ModelInferRequest
    answer_bytes: int  # the tensor in the answer
    plain_error: str  # grpcio with its defaults; empty when answered
    plain_code: str
    tritonclient_error: str  # tritonclient's InferenceServerClient; empty when answered

    @property
    def over_limit(self) -> bool:
        return self.answer_bytes > GRPC_DEFAULT_LIMIT

    def outcome(self) -> str | None:
        """``answered``, ``client_refused`` (the answer arrived and the client would not take it) or
        ``server_refused`` (the server would not take the request), for the plain client; None for any other
        failure (the server down, hflip being reloaded by someone else)."""
        if not self.plain_error:
            return "answered"
        if self.plain_code != "RESOURCE_EXHAUSTED":
            return None
        return "client_refused" if "CLIENT" in self.plain_error else "server_refused"


def request(batch: int) -> service_pb2.ModelInferRequest:
    """A ModelInferRequest for ``batch`` images, built from the protobuf messages themselves."""
    image = np.random.default_rng(0).random((batch, 3, 224, 224), dtype=np.float32)
    req = service_pb2.ModelInferRequest(model_name=MODEL)
    tensor = req.inputs.add()
    tensor.name, tensor.datatype = "image", "FP32"
    tensor.shape.extend(image.shape)
    req.raw_input_contents.append(image.tobytes())
    return req


def compare(endpoint: Endpoint, batch: int) -> LimitResult:
    """The same request through a plain grpcio channel (default options) and through tritonclient."""
    if not 1 <= batch <= MAX_BATCH:
        raise ValueError(f"batch must be 1..{MAX_BATCH}")
    req = request(batch)
    plain_error = plain_code = ""
    with grpc.insecure_channel(endpoint.grpc_url) as channel:
        try:
            service_pb2_grpc.GRPCInferenceServiceStub(channel).ModelInfer(req, timeout=TIMEOUT_S)
        except grpc.RpcError as exc:
            plain_error, plain_code = exc.details() or "", exc.code().name
    client = grpcclient.InferenceServerClient(endpoint.grpc_url)
    try:
        tensor = grpcclient.InferInput("image", list(req.inputs[0].shape), "FP32")
        tensor.set_data_from_numpy(
            np.frombuffer(req.raw_input_contents[0], np.float32).reshape(tuple(req.inputs[0].shape))
        )
        client.infer(MODEL, [tensor], client_timeout=TIMEOUT_S)
        tk_error = ""
    except grpcclient.InferenceServerException as exc:
        tk_error = exc.message() or str(exc)
    finally:
        client.close()
    return LimitResult(batch, req.ByteSize(), batch * IMAGE_BYTES, plain_error, plain_code, tk_error)
