"""Three ways to call a Triton model, measured: HTTP with JSON tensors, HTTP with the binary tensor
extension (tritonclient's default), and gRPC; and two ways to stream.

- :mod:`.call`: one call (:class:`Caller`). **Payload bytes** are the request and response bodies exactly
  as encoded: HTTP bodies come from tritonclient's own encoder and are sent with ``http.client``, gRPC
  payloads are the serialized ``ModelInferRequest`` / ``ModelInferResponse`` protobufs.
- :mod:`.wire`: **wire bytes**, everything that crosses the TCP socket, counted by :class:`CountingProxy`
  (HTTP headers, chunking, HTTP/2 frames, gRPC length prefixes, HPACK, SETTINGS / WINDOW_UPDATE / PING);
  :func:`compare_protocols` sends one input three ways and checks the outputs agree.
- :mod:`.metadata`: inputs for any model synthesized from its metadata (:func:`synthesize_inputs`), so
  protocols can be compared on models this repository does not know.
- :mod:`.shm`: system shared memory as a transport (``http-shm``, ``grpc-shm``: :class:`ShmCaller`); the tensors
  go through a registered region, the request carries its name and offsets.
- :mod:`.streaming`: the decoupled ``streamer`` over gRPC ``ModelStreamInfer`` and over HTTP Server-Sent
  Events: each token's arrival, time to first token, inter-token gaps.

Every name stays importable from ``triton_kitchen.tools.protocols``.
"""

from triton_kitchen.core.samples import image_tensor, sample_jpeg
from triton_kitchen.tools.protocols.call import (
    COMPRESSIONS,
    DEFAULT_TIMEOUT_S,
    PROTOCOLS,
    Caller,
    CallResult,
    ProtocolError,
    call_once,
    check_protocol,
    serialized_bytes_tensor,
)
from triton_kitchen.tools.protocols.metadata import (
    ModelInfo,
    TensorInfo,
    model_info,
    protocol_error,
    sample_inputs,
    synthesize_inputs,
)
from triton_kitchen.tools.protocols.shm import (
    BENCH_PROTOCOLS,
    SHM_PROTOCOLS,
    ShmCaller,
    base_protocol,
    check_bench_protocol,
    make_caller,
)
from triton_kitchen.tools.protocols.streaming import (
    DEFAULT_DELAY_MS,
    STREAM_MODEL,
    StreamRun,
    compare_streaming,
    sse_events,
    stream_grpc,
    stream_sse,
)
from triton_kitchen.tools.protocols.wire import (
    Comparison,
    CountingProxy,
    ProtocolMeasurement,
    compare_protocols,
    json_inflation,
    measure_protocol,
    outputs_agree,
    tensor_vs_jpeg,
)

__all__ = [
    "BENCH_PROTOCOLS",
    "SHM_PROTOCOLS",
    "ShmCaller",
    "base_protocol",
    "check_bench_protocol",
    "make_caller",
    "COMPRESSIONS",
    "CallResult",
    "Caller",
    "Comparison",
    "CountingProxy",
    "DEFAULT_DELAY_MS",
    "DEFAULT_TIMEOUT_S",
    "ModelInfo",
    "PROTOCOLS",
    "ProtocolError",
    "ProtocolMeasurement",
    "STREAM_MODEL",
    "StreamRun",
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
    "protocol_error",
    "sample_inputs",
    "sample_jpeg",
    "serialized_bytes_tensor",
    "sse_events",
    "stream_grpc",
    "stream_sse",
    "synthesize_inputs",
    "tensor_vs_jpeg",
]
