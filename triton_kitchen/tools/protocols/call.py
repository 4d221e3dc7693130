"""One call to a Triton model over HTTP with JSON tensors, HTTP with the binary tensor extension, or gRPC.

:class:`Caller` encodes with tritonclient's own encoders and sends with ``http.client`` (thread-safe, no
gevent) or a gRPC stub, so the bytes it counts are the bytes sent.

Private tritonclient APIs, and why: the public ``InferenceServerClient.infer`` builds the request anew on
every call and hides the protobufs. The gRPC path calls ``_utils._get_inference_request`` (the request
``infer`` would send, built once and sent again, as perf_analyzer does) and the stub's ``ModelInfer``
(the response protobuf, whose size we report), with the client's own ``_get_metadata`` and
``_grpc_compression_type`` so headers and compression are what ``infer`` sends. ``requirements.txt``
pins tritonclient, so these names cannot move under us; ``tests/live/test_protocols_live.py`` checks that the
three protocols give the same result.
"""

from __future__ import annotations

import gzip
import http.client
import json
import socket
import time
from dataclasses import dataclass, field

import grpc
import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.grpc import _utils as grpc_utils
from tritonclient.utils import InferenceServerException, serialize_byte_tensor

from triton_kitchen.core.endpoint import Endpoint, split_host_port
from triton_kitchen.core.errors import KitchenError
from triton_kitchen.core.tensors import array_wire_name

PROTOCOLS = ("http-json", "http-binary", "grpc")
COMPRESSIONS = (None, "gzip")
DEFAULT_TIMEOUT_S = 10.0


class ProtocolError(KitchenError):
    """A call failed: the server refused it, it timed out, or the connection broke.

    ``code``: ``timeout``, ``connection``, ``server`` or ``error``."""

    default_code = "error"

    def __init__(self, message: str, code: str = "error") -> None:
        super().__init__(code, message)


def check_protocol(protocol: str) -> str:
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
    return protocol


# -- one call -------------------------------------------------------------------------------------------
@dataclass
class CallResult:
    protocol: str
    model: str
    outputs: dict[str, np.ndarray]
    latency_ms: float
    request_bytes: int  # HTTP: the body as sent (gzip included); gRPC: the ModelInferRequest protobuf
    response_bytes: int  # the response body / protobuf as received
    binary_inputs: list[str] = field(default_factory=list)  # http-json: inputs JSON cannot carry
    shm_bytes: int = 0  # tensor bytes that went through shared memory instead (protocols.shm)


def _not_utf8(array: np.ndarray) -> bool:
    for v in array.reshape(-1):
        if isinstance(v, bytes):
            try:
                v.decode("utf-8")
            except UnicodeDecodeError:
                return True
    return False


def grpc_kind(exc: InferenceServerException) -> str:
    status = (exc.status() or "").upper()
    if "DEADLINE" in status:
        return "timeout"
    if "UNAVAILABLE" in status:
        return "connection"
    return "server"


def infer_request_message(model: str, inputs: list, outputs: list | None):
    """The ModelInferRequest ``tritonclient.grpc``'s ``infer()`` sends for these InferInputs and
    InferRequestedOutputs, from its own (private) builder: what goes on the wire, byte for byte."""
    return grpc_utils._get_inference_request(
        model_name=model,
        inputs=inputs,
        model_version="",
        request_id="",
        outputs=outputs,
        sequence_id=0,
        sequence_start=False,
        sequence_end=False,
        priority=0,
        timeout=None,
        parameters=None,
    )


class Caller:
    """Calls one model with one protocol, again and again, from one thread.

    Owns its connection (HTTP keep-alive via ``http.client``, or a gRPC client), so give each thread
    its own Caller. ``address`` overrides the endpoint's host:port (for example a CountingProxy).
    With ``reuse_request`` (the default) the request is encoded once, with tritonclient's own
    encoders, and sent again and again, as perf_analyzer does: a load then measures the server and
    the protocol rather than Python encoding numbers (``reuse_request=False`` re-encodes each call)."""

    def __init__(
        self,
        endpoint: Endpoint,
        protocol: str,
        model: str,
        arrays: dict[str, np.ndarray],
        output_names: list[str] | None = None,
        compression: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        address: str | None = None,
        reuse_request: bool = True,
    ) -> None:
        self.protocol = check_protocol(protocol)
        if compression not in COMPRESSIONS:
            raise ValueError(f"compression must be one of {COMPRESSIONS}")
        self.model = model
        self.arrays = arrays
        self.output_names = output_names
        self.compression = compression
        self.timeout_s = timeout_s
        self.address = address or (endpoint.grpc_url if protocol == "grpc" else endpoint.http_url)
        self.reuse_request = reuse_request
        self._conn: http.client.HTTPConnection | None = None
        self._grpc: grpcclient.InferenceServerClient | None = None
        self._http_request: tuple[bytes, dict[str, str]] | None = None
        self._grpc_request = None
        # http-json: BYTES that are not UTF-8 (a JPEG) cannot be a JSON string; they go binary.
        self.binary_inputs = (
            [n for n, a in arrays.items() if a.dtype == object and _not_utf8(a)]
            if protocol == "http-json"
            else []
        )

    # HTTP ----------------------------------------------------------------------------------------------
    def encode_http(self) -> tuple[bytes, dict[str, str]]:
        """The HTTP request body (tritonclient's encoder) and its headers, compressed if asked."""
        binary = self.protocol == "http-binary"
        inputs = []
        for name, array in self.arrays.items():
            t = httpclient.InferInput(name, list(array.shape), array_wire_name(array))
            t.set_data_from_numpy(array, binary_data=binary or name in self.binary_inputs)
            inputs.append(t)
        outputs = [
            httpclient.InferRequestedOutput(n, binary_data=binary) for n in self.output_names or []
        ] or None
        body, json_size = httpclient.InferenceServerClient.generate_request_body(inputs, outputs)
        if not binary and outputs is None:
            body, json_size = _json_outputs(body, json_size)
        headers = {
            "Content-Type": "application/octet-stream" if json_size is not None else "application/json"
        }
        if json_size is not None:
            headers["Inference-Header-Content-Length"] = str(json_size)
        if self.compression == "gzip":
            body = gzip.compress(body, compresslevel=6)
            headers["Content-Encoding"] = "gzip"
            headers["Accept-Encoding"] = "gzip"
        return body, headers

    def _http_call(self, timeout: float) -> CallResult:
        if self._http_request is None or not self.reuse_request:
            self._http_request = self.encode_http()
        body, headers = self._http_request
        host, port = split_host_port(self.address)
        t0 = time.perf_counter()
        try:
            if self._conn is None:
                self._conn = http.client.HTTPConnection(host, port, timeout=timeout)
                self._conn.connect()
                self._conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._conn.sock.settimeout(timeout)
            self._conn.request("POST", f"/v2/models/{self.model}/infer", body=body, headers=headers)
            resp = self._conn.getresponse()
            raw = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            kind = "timeout" if isinstance(exc, TimeoutError) else "connection"
            raise ProtocolError(
                f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__, kind
            ) from exc
        ms = (time.perf_counter() - t0) * 1000
        if resp.status != 200:
            text = gzip.decompress(raw) if resp.getheader("Content-Encoding") == "gzip" else raw
            try:
                message = json.loads(text).get("error", text.decode(errors="replace"))
            except ValueError:
                message = text.decode(errors="replace")
            raise ProtocolError(f"HTTP {resp.status}: {message}", "server")
        header_length = resp.getheader("Inference-Header-Content-Length")
        result = httpclient.InferResult.from_response_body(
            raw, False, int(header_length) if header_length else None, resp.getheader("Content-Encoding")
        )
        outputs = self._http_outputs(result)
        return CallResult(
            self.protocol, self.model, outputs, ms, len(body), len(raw), list(self.binary_inputs)
        )

    # gRPC ----------------------------------------------------------------------------------------------
    def grpc_request(self) -> tuple[list, list | None]:
        inputs = []
        for name, array in self.arrays.items():
            t = grpcclient.InferInput(name, list(array.shape), array_wire_name(array))
            t.set_data_from_numpy(array)
            inputs.append(t)
        outputs = [grpcclient.InferRequestedOutput(n) for n in self.output_names or []] or None
        return inputs, outputs

    def encode_grpc(self):
        """The ModelInferRequest protobuf, built by tritonclient's own request builder."""
        inputs, outputs = self.grpc_request()
        return infer_request_message(self.model, inputs, outputs)

    def grpc_request_bytes(self) -> int:
        """Size of the serialized ModelInferRequest protobuf. With compression on, gRPC compresses
        each message inside the transport, where only the wire bytes can see it."""
        return self.encode_grpc().ByteSize()

    def _grpc_call(self, timeout: float) -> CallResult:
        if self._grpc is None:
            self._grpc = grpcclient.InferenceServerClient(self.address)
        if self._grpc_request is None or not self.reuse_request:
            self._grpc_request = self.encode_grpc()
        request = self._grpc_request
        t0 = time.perf_counter()
        try:
            # what InferenceServerClient.infer does after building the request (see the module docstring)
            response = self._grpc._client_stub.ModelInfer(
                request=request,
                metadata=self._grpc._get_metadata(None),
                timeout=timeout,
                compression=grpc_utils._grpc_compression_type(self.compression),
            )
        except grpc.RpcError as rpc_error:
            exc = grpc_utils.get_error_grpc(rpc_error)
            kind = grpc_kind(exc)
            if kind != "server":
                self.close()
            raise ProtocolError(exc.message() or str(exc), kind) from exc
        ms = (time.perf_counter() - t0) * 1000
        outputs_np = self._grpc_outputs(response)
        return CallResult(self.protocol, self.model, outputs_np, ms, request.ByteSize(), response.ByteSize())

    # the outputs of an answer (protocols.shm reads those in shared memory) -----------------------------
    def _http_outputs(self, result: httpclient.InferResult) -> dict[str, np.ndarray]:
        return {o["name"]: result.as_numpy(o["name"]) for o in result.get_response().get("outputs", [])}

    def _grpc_outputs(self, response) -> dict[str, np.ndarray]:
        result = grpcclient.InferResult(response)
        return {o.name: result.as_numpy(o.name) for o in response.outputs}

    # ---------------------------------------------------------------------------------------------------
    def call(self, timeout_s: float | None = None) -> CallResult:
        timeout = max(0.05, self.timeout_s if timeout_s is None else timeout_s)
        return self._grpc_call(timeout) if self.protocol == "grpc" else self._http_call(timeout)

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
        client, self._grpc = self._grpc, None
        if client is not None:
            try:
                client.close()
            except Exception:  # closing a broken channel may fail; nothing to keep
                pass


def _json_outputs(body: bytes, json_size: int | None) -> tuple[bytes, int | None]:
    """Drop the ``binary_data_output`` flag tritonclient adds when no outputs are named, so the
    server answers with JSON tensors (its default) for every output."""
    head, rest = (body, b"") if json_size is None else (body[:json_size], body[json_size:])
    request = json.loads(head)
    request.get("parameters", {}).pop("binary_data_output", None)
    if not request.get("parameters"):
        request.pop("parameters", None)
    head = json.dumps(request, separators=(",", ":")).encode()
    return head + rest, (len(head) if json_size is not None else None)


def call_once(
    endpoint: Endpoint, protocol: str, model: str, arrays: dict[str, np.ndarray], **kwargs
) -> CallResult:
    caller = Caller(endpoint, protocol, model, arrays, **kwargs)
    try:
        return caller.call()
    finally:
        caller.close()


def serialized_bytes_tensor(array: np.ndarray) -> bytes:
    """BYTES tensor in Triton's raw form (4-byte little-endian length before each element)."""
    return bytes(serialize_byte_tensor(array).item())
