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

from __future__ import annotations

import gzip
import http.client
import io
import json
import queue
import socket
import threading
import time
from dataclasses import asdict, dataclass, field
from functools import lru_cache

import grpc
import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.grpc import _utils as grpc_utils
from tritonclient.utils import InferenceServerException, serialize_byte_tensor, triton_to_np_dtype

from triton_kitchen.server import Endpoint, host_port

PROTOCOLS = ("http-json", "http-binary", "grpc")
COMPRESSIONS = (None, "gzip")
DEFAULT_TIMEOUT_S = 10.0
STREAM_MODEL = "streamer"


class ProtocolError(RuntimeError):
    """A call failed: the server refused it, it timed out, or the connection broke."""

    def __init__(self, message: str, kind: str = "error") -> None:
        super().__init__(message)
        self.kind = kind  # "timeout", "connection", "server", "encoding"


def check_protocol(protocol: str) -> str:
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
    return protocol


def _host_port(url: str) -> tuple[str, int]:
    url = host_port(url)
    host, _, port = url.rpartition(":")
    if not host:
        raise ValueError(f"address {url!r} needs host:port")
    return host.strip("[]"), int(port)


# -- model metadata ---------------------------------------------------------------------------------
@dataclass
class TensorInfo:
    name: str
    datatype: str
    shape: list[int]  # with the batch dimension (-1) first when the model batches
    optional: bool = False


@dataclass
class ModelInfo:
    name: str
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    max_batch_size: int = 0
    decoupled: bool = False


def _http_get_json(http_url: str, path: str, timeout: float) -> dict:
    host, port = _host_port(http_url)
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        body = resp.read()
    except (OSError, http.client.HTTPException) as exc:
        raise ProtocolError(f"GET {path}: {exc}", "timeout" if isinstance(exc, TimeoutError) else "connection") from exc
    finally:
        conn.close()
    try:
        data = json.loads(body or b"{}")
    except ValueError as exc:
        raise ProtocolError(f"GET {path}: not JSON ({body[:80]!r})", "server") from exc
    if resp.status != 200:
        raise ProtocolError(f"GET {path}: {data.get('error', resp.status)}", "server")
    return data


def model_info(endpoint: Endpoint, model: str, protocol: str = "http-binary", timeout: float = DEFAULT_TIMEOUT_S) -> ModelInfo:
    """Inputs, outputs, ``max_batch_size`` and decoupled-ness of ``model``, asked over ``protocol``."""
    if check_protocol(protocol) == "grpc":
        client = grpcclient.InferenceServerClient(endpoint.grpc_url)
        try:
            meta = client.get_model_metadata(model, as_json=True, client_timeout=timeout)
            config = client.get_model_config(model, as_json=True, client_timeout=timeout).get("config", {})
        except InferenceServerException as exc:
            raise ProtocolError(exc.message() or str(exc), _grpc_kind(exc)) from exc
        finally:
            client.close()
    else:
        meta = _http_get_json(endpoint.http_url, f"/v2/models/{model}", timeout)
        config = _http_get_json(endpoint.http_url, f"/v2/models/{model}/config", timeout)
    optional = {i["name"] for i in config.get("input", []) if i.get("optional")}

    def tensors(items):
        return [
            TensorInfo(t["name"], t["datatype"], [int(d) for d in t["shape"]], t["name"] in optional)
            for t in items
        ]

    return ModelInfo(
        name=model,
        inputs=tensors(meta.get("inputs", [])),
        outputs=tensors(meta.get("outputs", [])),
        max_batch_size=int(config.get("max_batch_size", 0) or 0),
        decoupled=bool(config.get("model_transaction_policy", {}).get("decoupled", False)),
    )


# -- inputs -------------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def sample_jpeg() -> bytes:
    """scikit-image's cat photo (``chelsea``), JPEG-encoded: the sample input for image models."""
    from PIL import Image
    from skimage import data

    buf = io.BytesIO()
    Image.fromarray(np.asarray(data.chelsea())).convert("RGB").save(buf, "JPEG", quality=92)
    return buf.getvalue()


def image_tensor(jpeg: bytes) -> np.ndarray:
    """The classifier's FP32 [1, 3, 224, 224] input for an encoded image (client-side preprocessing)."""
    from triton_kitchen.imaging import preprocess_bytes

    return preprocess_bytes(jpeg)[None]


def synthesize_inputs(
    info: ModelInfo,
    image: bytes | None = None,
    text: str = "Triton serves models over HTTP and gRPC",
    include_optional: bool = False,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """One batch-1 request for any model, from its metadata.

    Variable dimensions (-1) become 1. An FP32 [..., 3, 224, 224] input gets ``image`` preprocessed
    (a real photo) when one is given; other numbers are seeded random values; BYTES inputs get
    ``image`` when their name mentions an image or bytes, else ``text``."""
    rng = np.random.default_rng(seed)
    arrays: dict[str, np.ndarray] = {}
    for t in info.inputs:
        if t.optional and not include_optional:
            continue
        shape = [d if d > 0 else 1 for d in t.shape]
        if t.datatype == "BYTES":
            wants_image = image is not None and any(k in t.name.lower() for k in ("image", "img", "bytes", "jpeg"))
            value = image if wants_image else text.encode()
            arrays[t.name] = np.full(shape, value, dtype=object)
        elif t.datatype == "BOOL":
            arrays[t.name] = rng.integers(0, 2, size=shape).astype(bool)
        elif t.datatype.startswith(("FP", "BF")):
            if image is not None and t.datatype == "FP32" and shape[-3:] == [3, 224, 224]:
                arrays[t.name] = np.broadcast_to(image_tensor(image).reshape([1] * (len(shape) - 3) + [3, 224, 224]), shape).copy()
            else:
                dtype = np.float32 if t.datatype == "BF16" else triton_to_np_dtype(t.datatype)
                arrays[t.name] = rng.standard_normal(size=shape).astype(dtype)
        else:
            arrays[t.name] = rng.integers(0, 10, size=shape).astype(triton_to_np_dtype(t.datatype))
    return arrays


def sample_inputs(endpoint: Endpoint, model: str, protocol: str = "http-binary", image: bytes | None = None,
                  timeout: float = DEFAULT_TIMEOUT_S) -> tuple[ModelInfo, dict[str, np.ndarray]]:
    """Model metadata and one request for ``model``: the sample photo for image models, else synthesized."""
    info = model_info(endpoint, model, protocol, timeout)
    return info, synthesize_inputs(info, image=image if image is not None else sample_jpeg())


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


def _not_utf8(array: np.ndarray) -> bool:
    for v in array.reshape(-1):
        if isinstance(v, bytes):
            try:
                v.decode("utf-8")
            except UnicodeDecodeError:
                return True
    return False


def _grpc_kind(exc: InferenceServerException) -> str:
    status = (exc.status() or "").upper()
    if "DEADLINE" in status:
        return "timeout"
    if "UNAVAILABLE" in status:
        return "connection"
    return "server"


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
            [n for n, a in arrays.items() if a.dtype == object and _not_utf8(a)] if protocol == "http-json" else []
        )

    # HTTP ----------------------------------------------------------------------------------------------
    def encode_http(self) -> tuple[bytes, dict[str, str]]:
        """The HTTP request body (tritonclient's encoder) and its headers, compressed if asked."""
        binary = self.protocol == "http-binary"
        inputs = []
        for name, array in self.arrays.items():
            t = httpclient.InferInput(name, list(array.shape), _triton_dtype(array))
            t.set_data_from_numpy(array, binary_data=binary or name in self.binary_inputs)
            inputs.append(t)
        outputs = [httpclient.InferRequestedOutput(n, binary_data=binary) for n in self.output_names or []] or None
        body, json_size = httpclient.InferenceServerClient.generate_request_body(inputs, outputs)
        if not binary and outputs is None:
            body, json_size = _json_outputs(body, json_size)
        headers = {"Content-Type": "application/octet-stream" if json_size is not None else "application/json"}
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
        host, port = _host_port(self.address)
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
            raise ProtocolError(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__, kind) from exc
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
        outputs = {o["name"]: result.as_numpy(o["name"]) for o in result.get_response().get("outputs", [])}
        return CallResult(self.protocol, self.model, outputs, ms, len(body), len(raw), list(self.binary_inputs))

    # gRPC ----------------------------------------------------------------------------------------------
    def grpc_request(self) -> tuple[list, list | None]:
        inputs = []
        for name, array in self.arrays.items():
            t = grpcclient.InferInput(name, list(array.shape), _triton_dtype(array))
            t.set_data_from_numpy(array)
            inputs.append(t)
        outputs = [grpcclient.InferRequestedOutput(n) for n in self.output_names or []] or None
        return inputs, outputs

    def encode_grpc(self):
        """The ModelInferRequest protobuf, built by tritonclient's own request builder."""
        inputs, outputs = self.grpc_request()
        return grpc_utils._get_inference_request(
            model_name=self.model, inputs=inputs, model_version="", request_id="", outputs=outputs,
            sequence_id=0, sequence_start=False, sequence_end=False, priority=0, timeout=None, parameters=None,
        )

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
            # what InferenceServerClient.infer does after building the request
            response = self._grpc._client_stub.ModelInfer(
                request=request, metadata=self._grpc._get_metadata(None), timeout=timeout,
                compression=grpc_utils._grpc_compression_type(self.compression),
            )
        except grpc.RpcError as rpc_error:
            exc = grpc_utils.get_error_grpc(rpc_error)
            kind = _grpc_kind(exc)
            if kind != "server":
                self.close()
            raise ProtocolError(exc.message() or str(exc), kind) from exc
        ms = (time.perf_counter() - t0) * 1000
        result = grpcclient.InferResult(response)
        outputs_np = {o.name: result.as_numpy(o.name) for o in response.outputs}
        return CallResult(self.protocol, self.model, outputs_np, ms, request.ByteSize(), response.ByteSize())

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


def _triton_dtype(array: np.ndarray) -> str:
    from tritonclient.utils import np_to_triton_dtype

    return np_to_triton_dtype(array.dtype)


def call_once(endpoint: Endpoint, protocol: str, model: str, arrays: dict[str, np.ndarray], **kwargs) -> CallResult:
    caller = Caller(endpoint, protocol, model, arrays, **kwargs)
    try:
        return caller.call()
    finally:
        caller.close()


# -- wire bytes ------------------------------------------------------------------------------------------
class CountingProxy:
    """A loopback TCP proxy that counts the bytes crossing it in each direction.

    ``sent`` counts client -> server bytes, ``received`` server -> client: what the socket carries,
    protocol headers and framing included (the TCP/IP headers themselves are not visible here).
    Threads are daemons; :meth:`stop` closes every connection."""

    def __init__(self, target: str, listen_host: str = "127.0.0.1", connect_timeout: float = 5.0) -> None:
        self.target = _host_port(target)
        self.listen_host = listen_host
        self.connect_timeout = connect_timeout
        self.sent = 0
        self.received = 0
        self.connections = 0
        self._lock = threading.Lock()
        self._socks: set[socket.socket] = set()
        self._listener: socket.socket | None = None
        self.port = 0

    @property
    def address(self) -> str:
        return f"{self.listen_host}:{self.port}"

    def start(self) -> CountingProxy:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.listen_host, 0))
        listener.listen(64)
        self._listener = listener
        self.port = listener.getsockname()[1]
        threading.Thread(target=self._accept_loop, name="counting-proxy", daemon=True).start()
        return self

    def snapshot(self) -> tuple[int, int]:
        with self._lock:
            return self.sent, self.received

    def _accept_loop(self) -> None:
        listener = self._listener
        while listener is not None:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=self.connect_timeout)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            for s in (client, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self.connections += 1
                self._socks.update((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream, "sent"), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, "received"), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, counter: str) -> None:
        try:
            while True:
                data = src.recv(262144)
                if not data:
                    break
                with self._lock:
                    setattr(self, counter, getattr(self, counter) + len(data))
                dst.sendall(data)
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def stop(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        with self._lock:
            socks, self._socks = list(self._socks), set()
        for s in socks:
            try:
                s.close()
            except OSError:
                pass

    def __enter__(self) -> CountingProxy:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


@dataclass
class ProtocolMeasurement:
    """One model called one way: payload and wire bytes per call, latency, and the outputs."""

    protocol: str
    model: str
    compression: str | None
    calls: int
    request_bytes: int
    response_bytes: int
    wire_sent_per_call: float  # steady state, connection already open
    wire_received_per_call: float
    wire_first_call_sent: int  # the first call, connection set-up included
    wire_first_call_received: int
    latency_ms: list[float]
    binary_inputs: list[str]
    outputs: dict[str, np.ndarray] = field(repr=False, default_factory=dict)

    @property
    def wire_overhead(self) -> float:
        """Wire bytes per payload byte, both directions together."""
        payload = self.request_bytes + self.response_bytes
        return (self.wire_sent_per_call + self.wire_received_per_call) / payload if payload else float("nan")

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("outputs")
        d["wire_overhead"] = self.wire_overhead
        d["latency_ms_median"] = float(np.median(self.latency_ms)) if self.latency_ms else None
        return d


def measure_protocol(
    endpoint: Endpoint,
    protocol: str,
    model: str,
    arrays: dict[str, np.ndarray],
    calls: int = 3,
    compression: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> ProtocolMeasurement:
    """Call ``model`` ``1 + calls`` times through a CountingProxy and report bytes per call.

    The first call opens the connection (TCP, and for gRPC the HTTP/2 preface and SETTINGS); the
    steady-state figure averages the following ``calls`` on the open connection."""
    target = endpoint.grpc_url if protocol == "grpc" else endpoint.http_url
    with CountingProxy(target) as proxy:
        caller = Caller(endpoint, protocol, model, arrays, compression=compression, timeout_s=timeout_s,
                        address=proxy.address)
        try:
            first = caller.call()
            time.sleep(0.02)  # let late frames (WINDOW_UPDATE, PING acks) arrive before counting
            s0, r0 = proxy.snapshot()
            results = [caller.call() for _ in range(calls)]
            time.sleep(0.02)
            s1, r1 = proxy.snapshot()
        finally:
            caller.close()
    last = results[-1] if results else first
    return ProtocolMeasurement(
        protocol=protocol, model=model, compression=compression, calls=calls,
        request_bytes=last.request_bytes, response_bytes=last.response_bytes,
        wire_sent_per_call=(s1 - s0) / max(calls, 1), wire_received_per_call=(r1 - r0) / max(calls, 1),
        wire_first_call_sent=s0, wire_first_call_received=r0,
        latency_ms=[r.latency_ms for r in [first, *results]], binary_inputs=last.binary_inputs, outputs=last.outputs,
    )


def outputs_agree(a: dict[str, np.ndarray], b: dict[str, np.ndarray], rtol: float = 1e-5, atol: float = 1e-6) -> bool:
    """Same output names and values (numbers within float32 round-off of a JSON round trip)."""
    if set(a) != set(b):
        return False
    for name, x in a.items():
        y = b[name]
        if x.shape != y.shape:
            return False
        if x.dtype == object or y.dtype == object:
            if [_as_bytes(v) for v in x.reshape(-1)] != [_as_bytes(v) for v in y.reshape(-1)]:
                return False
        elif not np.allclose(x.astype(np.float64), y.astype(np.float64), rtol=rtol, atol=atol):
            return False
    return True


def _as_bytes(v) -> bytes:
    return v if isinstance(v, bytes) else str(v).encode()


@dataclass
class Comparison:
    model: str
    rows: list[ProtocolMeasurement]
    same_result: bool
    disagreements: list[str]

    def row(self, protocol: str) -> ProtocolMeasurement | None:
        return next((r for r in self.rows if r.protocol == protocol), None)

    @property
    def json_inflation(self) -> float | None:
        """http-json request bytes / http-binary request bytes (same tensors, same compression)."""
        j, b = self.row("http-json"), self.row("http-binary")
        if j is None or b is None or not b.request_bytes:
            return None
        return j.request_bytes / b.request_bytes

    @property
    def json_response_inflation(self) -> float | None:
        j, b = self.row("http-json"), self.row("http-binary")
        if j is None or b is None or not b.response_bytes:
            return None
        return j.response_bytes / b.response_bytes

    def to_dicts(self) -> list[dict]:
        return [r.to_dict() for r in self.rows]


def compare_protocols(
    endpoint: Endpoint,
    model: str,
    arrays: dict[str, np.ndarray],
    protocols: tuple[str, ...] = PROTOCOLS,
    calls: int = 3,
    compression: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> Comparison:
    """The same input sent each way; bytes, latencies, and whether all protocols gave the same result."""
    rows = [measure_protocol(endpoint, p, model, arrays, calls, compression, timeout_s) for p in protocols]
    disagreements = [r.protocol for r in rows[1:] if not outputs_agree(rows[0].outputs, r.outputs)]
    return Comparison(model, rows, not disagreements, disagreements)


def tensor_vs_jpeg(jpeg: bytes) -> dict:
    """Computed sizes: the encoded photo vs the FP32 [1, 3, 224, 224] tensor made from it."""
    tensor = image_tensor(jpeg)
    return {"jpeg_bytes": len(jpeg), "tensor_bytes": int(tensor.nbytes), "ratio": tensor.nbytes / len(jpeg)}


def json_inflation(arrays: dict[str, np.ndarray]) -> float:
    """Computed from tritonclient's encoder alone (no server): JSON body bytes / binary body bytes."""
    dummy = Endpoint("127.0.0.1:1", "127.0.0.1:1")
    j = Caller(dummy, "http-json", "m", arrays).encode_http()[0]
    b = Caller(dummy, "http-binary", "m", arrays).encode_http()[0]
    return len(j) / len(b)


# -- streaming -------------------------------------------------------------------------------------------
@dataclass
class StreamTiming:
    protocol: str  # "grpc-stream" or "http-sse"
    tokens: list[str]
    ttft_ms: float | None  # request sent -> first token received
    inter_token_ms: list[float]  # gaps between consecutive tokens
    total_ms: float
    error: str | None = None

    def to_dict(self) -> dict:
        gaps = self.inter_token_ms
        return {
            "protocol": self.protocol,
            "tokens": len(self.tokens),
            "ttft_ms": self.ttft_ms,
            "inter_token_ms_mean": float(np.mean(gaps)) if gaps else None,
            "inter_token_ms_p90": float(np.percentile(gaps, 90)) if gaps else None,
            "total_ms": self.total_ms,
            "error": self.error,
        }


def _stream_inputs(lib, text: str, delay_ms: int) -> list:
    t = lib.InferInput("text", [1], "BYTES")
    t.set_data_from_numpy(np.array([text.encode()], dtype=object))
    d = lib.InferInput("delay_ms", [1], "INT32")
    d.set_data_from_numpy(np.array([delay_ms], dtype=np.int32))
    return [t, d]


def _timing(protocol: str, t0: float, stamps: list[float], tokens: list[str], error: str | None) -> StreamTiming:
    ttft = (stamps[0] - t0) * 1000 if stamps else None
    gaps = [(b - a) * 1000 for a, b in zip(stamps, stamps[1:], strict=False)]
    return StreamTiming(protocol, tokens, ttft, gaps, (time.perf_counter() - t0) * 1000, error)


def stream_grpc(endpoint: Endpoint, text: str, delay_ms: int = 30, timeout_s: float = 15.0,
                model: str = STREAM_MODEL) -> StreamTiming:
    """Stream ``text`` through the decoupled model over gRPC ``ModelStreamInfer``."""
    events: queue.Queue = queue.Queue()
    client = grpcclient.InferenceServerClient(endpoint.grpc_url)
    stamps: list[float] = []
    tokens: list[str] = []
    error = None
    t0 = time.perf_counter()
    try:
        client.start_stream(callback=lambda result, error: events.put((time.perf_counter(), result, error)),
                            stream_timeout=timeout_s)
        t0 = time.perf_counter()
        client.async_stream_infer(model, _stream_inputs(grpcclient, text, delay_ms), enable_empty_final_response=True)
        deadline = t0 + timeout_s
        while True:
            try:
                stamp, result, err = events.get(timeout=max(0.01, deadline - time.perf_counter()))
            except queue.Empty:
                error = f"timed out after {timeout_s:g} s"
                break
            if err is not None:
                error = err.message() if hasattr(err, "message") else str(err)
                break
            response = result.get_response()
            token = result.as_numpy("token")
            if token is not None:
                stamps.append(stamp)
                tokens.append(_as_bytes(token.reshape(-1)[0]).decode(errors="replace"))
            final = response.parameters.get("triton_final_response")
            if final is not None and final.bool_param:
                break
    except InferenceServerException as exc:
        error = exc.message() or str(exc)
    finally:
        try:
            client.stop_stream(cancel_requests=error is not None)
        except Exception:  # the stream may already be broken
            pass
        client.close()
    return _timing("grpc-stream", t0, stamps, tokens, error)


def stream_sse(endpoint: Endpoint, text: str, delay_ms: int = 30, timeout_s: float = 15.0,
               model: str = STREAM_MODEL) -> StreamTiming:
    """Stream ``text`` through the decoupled model over HTTP Server-Sent Events (``generate_stream``)."""
    host, port = _host_port(endpoint.http_url)
    conn = http.client.HTTPConnection(host, port, timeout=timeout_s)
    body = json.dumps({"text": text, "delay_ms": delay_ms}).encode()
    stamps: list[float] = []
    tokens: list[str] = []
    error = None
    t0 = time.perf_counter()
    deadline = t0 + timeout_s
    try:
        conn.request("POST", f"/v2/models/{model}/generate_stream", body=body,
                     headers={"Content-Type": "application/json", "Accept": "text/event-stream"})
        resp = conn.getresponse()
        if resp.status != 200:
            error = f"HTTP {resp.status}: {resp.read()[:300].decode(errors='replace')}"
        while error is None:
            if time.perf_counter() > deadline:
                error = f"timed out after {timeout_s:g} s"
                break
            conn.sock.settimeout(max(0.01, deadline - time.perf_counter()))
            line = resp.readline()
            if not line:
                break
            stamp = time.perf_counter()
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            event = json.loads(line[5:])
            if "error" in event:
                error = str(event["error"])
                break
            if "token" in event:
                tok = event["token"]
                tok = tok[0] if isinstance(tok, list) else tok
                stamps.append(stamp)
                tokens.append(str(tok))
    except (OSError, http.client.HTTPException, ValueError) as exc:
        error = f"{type(exc).__name__}: {exc}"
    finally:
        conn.close()
    return _timing("http-sse", t0, stamps, tokens, error)


def compare_streaming(endpoint: Endpoint, text: str, delay_ms: int = 30, timeout_s: float = 15.0) -> list[StreamTiming]:
    """The same text streamed over gRPC and over SSE; the tokens should be the same."""
    return [stream_grpc(endpoint, text, delay_ms, timeout_s), stream_sse(endpoint, text, delay_ms, timeout_s)]


def serialized_bytes_tensor(array: np.ndarray) -> bytes:
    """BYTES tensor in Triton's raw form (4-byte little-endian length before each element)."""
    return bytes(serialize_byte_tensor(array).item())
