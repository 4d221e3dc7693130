"""A stand-in for a Triton 26.04 (2.68) server started without ``--allow-client-shm=true``, for tests only: no
26.x server runs here, and the embedded 2.51 accepts client shared memory.

It answers as server r26.04 does (``src/http_server.cc`` HandleSystemSharedMemory, ``src/grpc/grpc_server.cc``
SystemSharedMemoryRegister/Unregister, commit d78c99c, server #8721/#8739): register and unregister fail with
TRITONSERVER_ERROR_UNSUPPORTED and ``kClientShmDisabledErrorStr`` (``src/common.h``), which is HTTP 501 with
``{"error": ...}`` and gRPC UNIMPLEMENTED; the region status is still answered (empty), and the server's
extension list still names ``system_shared_memory``. Besides those it answers only what a client needs before
registering: liveness, server and model metadata, the model's config, for one model :data:`MODEL`.
"""

from __future__ import annotations

import json
import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
from tritonclient.grpc import service_pb2, service_pb2_grpc

# the message of server r26.04 src/common.h kClientShmDisabledErrorStr, word for word
DISABLED = "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable."
VERSION = "2.68.0"
# core r26.04 src/server.cc extensions_ (the flag changes nothing here: shared memory is still named)
EXTENSIONS = [
    "classification",
    "sequence",
    "model_repository",
    "model_repository(unload_dependents)",
    "schedule_policy",
    "model_configuration",
    "system_shared_memory",
    "cuda_shared_memory",
    "binary_tensor_data",
    "parameters",
    "statistics",
    "trace",
    "logging",
]
MODEL = "fake_add"
METADATA = {
    "name": MODEL,
    "versions": ["1"],
    "platform": "python",
    "inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [4]}],
    "outputs": [{"name": "OUTPUT0", "datatype": "FP32", "shape": [4]}],
}
CONFIG = {"name": MODEL, "backend": "python", "max_batch_size": 0, "input": [], "output": []}


class Calls:
    """What the stand-in was asked: ``("http" | "grpc", "register" | "unregister", region)``, in order."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str, str]] = []
        self.lock = threading.Lock()

    def add(self, *item: str) -> None:
        with self.lock:
            self.items.append(item)  # type: ignore[arg-type]

    def of(self, api: str) -> list[tuple[str, str]]:
        with self.lock:
            return [(action, region) for a, action, region in self.items if a == api]


def _handler(calls: Calls):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # quiet
            pass

        def _send(self, status: int, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path in ("/v2/health/live", "/v2/health/ready"):
                self._send(200, {})
            elif path == "/v2":
                self._send(200, {"name": "triton", "version": VERSION, "extensions": EXTENSIONS})
            elif path == f"/v2/models/{MODEL}":
                self._send(200, METADATA)
            elif path == f"/v2/models/{MODEL}/config":
                self._send(200, CONFIG)
            elif path == "/v2/systemsharedmemory/status":
                self._send(200, [])
            else:
                self._send(400, {"error": f"Request for unknown model: '{path}' is not found"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            parts = self.path.split("?", 1)[0].strip("/").split("/")
            # /v2/systemsharedmemory/region/<name>/register|unregister, /v2/systemsharedmemory/unregister
            if parts[:2] == ["v2", "systemsharedmemory"] and parts[-1] in ("register", "unregister"):
                region = parts[3] if len(parts) == 5 else ""
                calls.add("http", parts[-1], region)
                self._send(501, {"error": DISABLED})
            else:
                self._send(400, {"error": "not answered by this stand-in"})

    return Handler


class _Service(service_pb2_grpc.GRPCInferenceServiceServicer):
    """The GRPCInferenceService methods a shared-memory client calls, from tritonclient's generated stubs."""

    def __init__(self, calls: Calls) -> None:
        self.calls = calls

    def ServerLive(self, request, context):
        return service_pb2.ServerLiveResponse(live=True)

    def ServerReady(self, request, context):
        return service_pb2.ServerReadyResponse(ready=True)

    def ServerMetadata(self, request, context):
        return service_pb2.ServerMetadataResponse(name="triton", version=VERSION, extensions=EXTENSIONS)

    def ModelMetadata(self, request, context):
        if request.name != MODEL:
            context.abort(
                grpc.StatusCode.NOT_FOUND, f"Request for unknown model: '{request.name}' is not found"
            )
        tensor = service_pb2.ModelMetadataResponse.TensorMetadata
        return service_pb2.ModelMetadataResponse(
            name=MODEL,
            versions=["1"],
            platform="python",
            inputs=[tensor(name="INPUT0", datatype="FP32", shape=[4])],
            outputs=[tensor(name="OUTPUT0", datatype="FP32", shape=[4])],
        )

    def ModelConfig(self, request, context):
        response = service_pb2.ModelConfigResponse()
        response.config.name = MODEL
        response.config.backend = "python"
        return response

    def SystemSharedMemoryStatus(self, request, context):
        return service_pb2.SystemSharedMemoryStatusResponse()

    def SystemSharedMemoryRegister(self, request, context):
        self.calls.add("grpc", "register", request.name)
        context.abort(grpc.StatusCode.UNIMPLEMENTED, DISABLED)

    def SystemSharedMemoryUnregister(self, request, context):
        self.calls.add("grpc", "unregister", request.name)
        context.abort(grpc.StatusCode.UNIMPLEMENTED, DISABLED)


class RefusingServer:
    """HTTP and gRPC on free ports of 127.0.0.1, answering as a 26.04 server without the flag (see above)."""

    def __init__(self) -> None:
        self.calls = Calls()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self.calls))
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        self._grpc = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        service_pb2_grpc.add_GRPCInferenceServiceServicer_to_server(_Service(self.calls), self._grpc)
        self.grpc_port = self._grpc.add_insecure_port("127.0.0.1:0")

    @property
    def http_url(self) -> str:
        return f"127.0.0.1:{self._http.server_address[1]}"

    @property
    def grpc_url(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def __enter__(self) -> RefusingServer:
        self._thread.start()
        self._grpc.start()
        return self

    def __exit__(self, *exc) -> None:
        self._grpc.stop(grace=None)
        self._http.shutdown()
        self._http.server_close()
