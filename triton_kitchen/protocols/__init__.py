"""Three ways to call a Triton model, measured: HTTP with JSON tensors, HTTP with the binary tensor
extension (tritonclient's default), and gRPC.

What this module measures, and how:

- **payload bytes**: the request and response bodies exactly as encoded. HTTP bodies come from
  tritonclient's own encoder (``generate_request_body``) and are sent with the standard library's
  ``http.client`` (thread-safe, no gevent), so the bytes sent are the bytes counted; gRPC payloads
  are the serialized ``ModelInferRequest`` / ``ModelInferResponse`` protobufs.
- **wire bytes**: everything that crosses the TCP socket, counted by :class:`CountingProxy`, a
  loopback proxy between the client and the server: HTTP headers, chunking, HTTP/2 frames, gRPC
  length prefixes, HPACK headers, SETTINGS / WINDOW_UPDATE / PING frames.
- **same input, same result**: :func:`compare_protocols` sends one input three ways and checks the
  outputs agree.
- **streaming**: time to first token and inter-token gaps of the decoupled ``streamer`` over gRPC
  ``ModelStreamInfer`` and over HTTP Server-Sent Events (``generate_stream``).

Inputs for any model are synthesized from its metadata (:func:`synthesize_inputs`), so protocols can
be compared on models this repository does not know.
"""

# the package is split by job; every name (the _private ones too) stays importable from here
from triton_kitchen.protocols.call import (  # noqa: F401
    COMPRESSIONS,
    DEFAULT_TIMEOUT_S,
    PROTOCOLS,
    Caller,
    CallResult,
    ProtocolError,
    _grpc_kind,
    _host_port,
    _json_outputs,
    _not_utf8,
    _triton_dtype,
    call_once,
    check_protocol,
    serialized_bytes_tensor,
)
from triton_kitchen.protocols.metadata import (
    ModelInfo,
    TensorInfo,
    _http_get_json,  # noqa: F401
    image_tensor,
    model_info,
    sample_inputs,
    sample_jpeg,
    synthesize_inputs,
)
from triton_kitchen.protocols.streaming import (
    STREAM_MODEL,
    StreamTiming,
    compare_streaming,
    stream_grpc,
    stream_sse,
)
from triton_kitchen.protocols.wire import (
    Comparison,
    CountingProxy,
    ProtocolMeasurement,
    _as_bytes,  # noqa: F401
    compare_protocols,
    json_inflation,
    measure_protocol,
    outputs_agree,
    tensor_vs_jpeg,
)

__all__ = [
    "COMPRESSIONS",
    "CallResult",
    "Caller",
    "Comparison",
    "CountingProxy",
    "DEFAULT_TIMEOUT_S",
    "ModelInfo",
    "PROTOCOLS",
    "ProtocolError",
    "ProtocolMeasurement",
    "STREAM_MODEL",
    "StreamTiming",
    "TensorInfo",
    "call_once",
    "check_protocol",
    "compare_protocols",
    "compare_streaming",
    "image_tensor",
    "json_inflation",
    "measure_protocol",
    "model_info",
    "outputs_agree",
    "sample_inputs",
    "sample_jpeg",
    "serialized_bytes_tensor",
    "stream_grpc",
    "stream_sse",
    "synthesize_inputs",
    "tensor_vs_jpeg",
]
