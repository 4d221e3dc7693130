"""System shared memory as a transport: ``http-shm`` and ``grpc-shm`` (``bench --protocol http-shm|grpc-shm``).

The client writes the input tensors into a POSIX shared-memory region (``tritonclient.utils.shared_memory``),
registers it with the server, and sends a request that names the region and an offset instead of carrying the
tensor; the server writes the outputs into the same region and answers without them. What crosses the socket is
the request message (``request_bytes``: the JSON body or the ModelInferRequest protobuf, now a few hundred bytes);
the tensors' bytes go through memory (``shm_bytes``, reported apart). It works only when client and server share
a machine (the embedded server; a remote server cannot map this machine's memory).

Each :class:`ShmCaller` owns one region (inputs first, then the outputs), created and registered on its first
call and unregistered and unlinked by :meth:`ShmCaller.close` on every path: a failed call, an error while
setting up, a worker's ``finally``, and at interpreter exit for callers still open (Ctrl-C, abandoned workers).
As with the other protocols the request is encoded once and the inputs written once (perf_analyzer's
``--shared-memory system`` does the same); reading the outputs out of the region, like decoding a response,
is not part of the measured latency. An output must have a known size: BYTES outputs get
:data:`BYTES_PER_ELEMENT` per element.

From Triton 2.68 (NGC 26.04) a server started without ``--allow-client-shm=true`` refuses a client's register and
unregister (HTTP 501, gRPC UNIMPLEMENTED, :data:`CLIENT_SHM_DISABLED`) while its extension list still names
``system_shared_memory``: a caller then fails with a :class:`ProtocolError` of code ``shm_refused``, and its
clean-up takes the refused unregister in its stride. :func:`refusal` asks a server once, with a one-byte region.
"""

from __future__ import annotations

import atexit
import os
import secrets
import threading
import time
from dataclasses import dataclass, field

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm
from tritonclient.utils import InferenceServerException, serialize_byte_tensor, triton_to_np_dtype

from triton_kitchen.core import kserve
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.tensors import array_bytes, array_wire_name
from triton_kitchen.tools.protocols.call import PROTOCOLS, Caller, CallResult, ProtocolError

SHM_PROTOCOLS = ("http-shm", "grpc-shm")
BENCH_PROTOCOLS = PROTOCOLS + SHM_PROTOCOLS  # what bench can load a model with
BASE = {"http-shm": "http-binary", "grpc-shm": "grpc"}  # the socket protocol each one sends its requests over
BYTES_PER_ELEMENT = 1024  # room for one BYTES output element (its 4-byte length included)
REGION_PREFIX = "tk_shm_"
UNREGISTER_TIMEOUT_S = 2.0  # one unregister request
UNREGISTER_WAIT_S = 10.0  # how long a region the server still uses is asked for again

# Triton's words when client shared memory is off (server r26.04 src/common.h kClientShmDisabledErrorStr, sent
# with TRITONSERVER_ERROR_UNSUPPORTED: HTTP 501, gRPC UNIMPLEMENTED; commit d78c99c, server #8721/#8739)
CLIENT_SHM_DISABLED = (
    "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable."
)
REFUSED_HINT = (
    "this server refuses client shared memory: from Triton 2.68 (NGC 26.04) tritonserver accepts a client's "
    "region only when started with --allow-client-shm=true (its extension list still names shared memory); "
    "restart it with that flag, or measure over http-binary or grpc"
)

_open: set[ShmCaller] = set()  # callers whose region exists (held, not weakly: closed at exit at the latest)
_open_lock = threading.Lock()


def base_protocol(protocol: str) -> str:
    """The socket protocol under ``protocol`` (itself for the three plain ones)."""
    return BASE.get(protocol, protocol)


def check_bench_protocol(protocol: str) -> str:
    if protocol not in BENCH_PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose one of {', '.join(BENCH_PROTOCOLS)}")
    return protocol


def client_shm_refused(exc: BaseException) -> bool:
    """Whether ``exc`` (a tritonclient or REST error) is a server's refusal of client shared memory."""
    text = exc.message() if isinstance(exc, InferenceServerException) else getattr(exc, "detail", "")
    text = f"{text or ''} {exc}"
    return "client shared memory is disabled" in text.lower() or "--allow-client-shm" in text


def make_caller(
    endpoint: Endpoint, protocol: str, model: str, arrays: dict[str, np.ndarray], **kwargs
) -> Caller:
    """A :class:`ShmCaller` for the shared-memory protocols, else a plain :class:`Caller`."""
    cls = ShmCaller if protocol in SHM_PROTOCOLS else Caller
    return cls(endpoint, protocol, model, arrays, **kwargs)


class ShmCaller(Caller):
    """A :class:`Caller` whose tensors go through one system shared-memory region (see the module docstring).
    ``protocol`` is ``http-shm`` or ``grpc-shm``; ``output_names`` default to all of the model's outputs."""

    def __init__(
        self, endpoint: Endpoint, protocol: str, model: str, arrays: dict[str, np.ndarray], **kwargs
    ) -> None:
        if protocol not in SHM_PROTOCOLS:
            raise ValueError(f"ShmCaller takes {' or '.join(SHM_PROTOCOLS)}, not {protocol!r}")
        if kwargs.pop("compression", None):
            raise ValueError(
                "compression does not apply to shared memory: the tensors do not cross the socket"
            )
        kwargs["reuse_request"] = (
            True  # the inputs are written once: the request names them, it never changes
        )
        super().__init__(endpoint, BASE[protocol], model, arrays, **kwargs)
        self.endpoint = endpoint
        self.shm_protocol = protocol
        self.region = f"{REGION_PREFIX}{os.getpid()}_{secrets.token_hex(4)}"
        self.key = "/" + self.region
        self._handle = None
        self._registered = False
        self._inputs: dict[str, tuple[int, int]] = {}  # name -> (offset, byte size) in the region
        self._outputs: dict[str, tuple[int, int]] = {}
        self.shm_bytes = 0  # input bytes written per call, output bytes added per answer

    # the region ------------------------------------------------------------------------------------------
    def _layout(self) -> tuple[dict[str, bytes | np.ndarray], int]:
        """Offsets of the inputs, then the outputs; returns the inputs as written and the region's size."""
        from triton_kitchen.tools.protocols.metadata import model_info

        info = model_info(self.endpoint, self.model, self.protocol, self.timeout_s)
        batch = next(iter(self.arrays.values())).shape[0] if info.max_batch_size > 0 and self.arrays else None
        data: dict[str, bytes | np.ndarray] = {}
        offset = 0
        for name, array in self.arrays.items():
            data[name] = (
                serialize_byte_tensor(array) if array.dtype == object else np.ascontiguousarray(array)
            )
            size = array_bytes(array)
            self._inputs[name] = (offset, size)
            offset += size
        by_name = {o.name: o for o in info.outputs}
        for name in self.output_names or list(by_name):
            if name not in by_name:
                raise ProtocolError(f"{self.model} has no output {name!r}", "server")
            out = by_name[name]
            dims = [batch if (d == -1 and i == 0 and batch) else d for i, d in enumerate(out.shape)]
            if any(d < 0 for d in dims):
                raise ProtocolError(
                    f"shared memory needs each output's size in advance; {name} has shape {out.shape}",
                    "error",
                )
            count = int(np.prod(dims)) if dims else 1
            size = count * (
                BYTES_PER_ELEMENT if out.datatype == "BYTES" else np.dtype(_np(out.datatype)).itemsize
            )
            self._outputs[name] = (offset, size)
            offset += size
        self.output_names = list(self._outputs)
        return data, max(offset, 1)

    def _setup(self) -> None:
        if self._registered:
            return
        try:
            data, size = self._layout()
            self._handle = shm.create_shared_memory_region(self.region, self.key, size)
            with _open_lock:
                _open.add(self)
            for name, value in data.items():
                shm.set_shared_memory_region(self._handle, [value], offset=self._inputs[name][0])
            self._registered = True  # from the asking on: a register that times out here may still land there
            if self.protocol == "grpc":
                if self._grpc is None:
                    self._grpc = grpcclient.InferenceServerClient(self.address)
                self._grpc.register_system_shared_memory(self.region, self.key, size)
            else:
                kserve.register_system_shm(self.address, self.region, self.key, size)
        except InferenceServerException as exc:
            self.close()
            kind = "shm_refused" if client_shm_refused(exc) else "server"
            raise ProtocolError(f"registering shared memory: {exc.message() or exc}", kind) from exc
        except kserve.KServeError as exc:
            self.close()
            kind = exc.code if exc.code in ("connection", "timeout") else "server"
            kind = "shm_refused" if client_shm_refused(exc) else kind
            raise ProtocolError(f"registering shared memory: {exc.detail or exc}", kind) from exc
        except shm.SharedMemoryException as exc:
            self.close()
            raise ProtocolError(f"shared memory: {exc}", "error") from exc
        except BaseException:  # a KeyboardInterrupt half-way: nothing stays registered or allocated
            self.close()
            raise
        self.shm_bytes = sum(size for _, size in self._inputs.values())

    def _release(self) -> None:
        """Unregister the region (the server lets go) and unlink it here; each step once, whatever fails."""
        if self._registered:
            self._unregister()
            self._registered = False
        handle, self._handle = self._handle, None
        if handle is not None:
            try:
                shm.destroy_shared_memory_region(handle)
            except shm.SharedMemoryException:
                pass
        with _open_lock:
            _open.discard(self)

    def _unregister(self) -> None:
        """Ask the server to let go, again while it answers that the region is in use: Triton keeps a region
        that a request still in flight there names (one whose client gave up at its deadline) until that
        request is done. Unregistering a name the server does not hold succeeds, so asking twice is harmless; a
        server that refuses client shared memory refuses the unregister too, and holds nothing of ours."""
        give_up = time.monotonic() + UNREGISTER_WAIT_S
        while True:
            try:
                if self.protocol == "grpc":
                    client = self._grpc or grpcclient.InferenceServerClient(self.address)
                    try:
                        client.unregister_system_shared_memory(
                            self.region, client_timeout=UNREGISTER_TIMEOUT_S
                        )
                    finally:
                        if client is not self._grpc:
                            client.close()
                else:
                    kserve.unregister_system_shm(self.address, self.region, timeout=UNREGISTER_TIMEOUT_S)
                return
            except (InferenceServerException, kserve.KServeError) as exc:
                if client_shm_refused(exc) or "in use" not in str(exc) or time.monotonic() >= give_up:
                    return  # the server is gone (it holds nothing of ours any more), or kept it past our wait
                time.sleep(0.05)

    # the request: the region's name and offsets instead of the tensors -------------------------------------
    def _tensors(self, client) -> tuple[list, list]:
        """InferInputs and InferRequestedOutputs of ``client`` (tritonclient.http or .grpc) naming the region."""
        inputs, outputs = [], []
        for name, array in self.arrays.items():
            t = client.InferInput(name, list(array.shape), array_wire_name(array))
            t.set_shared_memory(self.region, self._inputs[name][1], self._inputs[name][0])
            inputs.append(t)
        for name, (offset, size) in self._outputs.items():
            o = client.InferRequestedOutput(name)
            o.set_shared_memory(self.region, size, offset)
            outputs.append(o)
        return inputs, outputs

    def encode_http(self) -> tuple[bytes, dict[str, str]]:
        body, _ = httpclient.InferenceServerClient.generate_request_body(*self._tensors(httpclient))
        return body, {"Content-Type": "application/json"}  # no binary part: the tensors are in the region

    def grpc_request(self) -> tuple[list, list | None]:
        return self._tensors(grpcclient)

    # the answer: outputs read from the region ------------------------------------------------------------
    def _read(self, name: str, datatype: str, shape: list[int]) -> np.ndarray:
        """A copy: ``get_contents_as_numpy`` gives a view of the mapping, which dies with the region."""
        view = shm.get_contents_as_numpy(
            self._handle, _np(datatype), [int(d) for d in shape], self._outputs[name][0]
        )
        return view.copy()

    def _http_outputs(self, result) -> dict[str, np.ndarray]:
        return {
            o["name"]: self._read(o["name"], o["datatype"], o["shape"])
            for o in result.get_response()["outputs"]
        }

    def _grpc_outputs(self, response) -> dict[str, np.ndarray]:
        return {o.name: self._read(o.name, o.datatype, list(o.shape)) for o in response.outputs}

    # -----------------------------------------------------------------------------------------------------
    def call(self, timeout_s: float | None = None) -> CallResult:
        self._setup()
        result = super().call(timeout_s)
        result.protocol = self.shm_protocol
        result.shm_bytes = self.shm_bytes + sum(array_bytes(v) for v in result.outputs.values())
        return result

    def close(self) -> None:
        self._release()
        super().close()


def _np(datatype: str):
    return np.object_ if datatype == "BYTES" else triton_to_np_dtype(datatype)


@atexit.register
def _close_all() -> None:
    """Callers still open at exit (a Ctrl-C, a worker abandoned at the hard limit): let their regions go."""
    with _open_lock:
        callers = list(_open)
    for caller in callers:
        caller._release()


def refusal(endpoint: Endpoint, protocol: str = "http-shm", timeout_s: float = 5.0) -> str | None:
    """Triton's words when the server refuses client shared memory (a one-byte region registered and
    unregistered over ``protocol``'s socket protocol), else None: allowed, or another failure, which the
    caller's own calls will report."""
    region = f"{REGION_PREFIX}{os.getpid()}_{secrets.token_hex(4)}"
    try:
        handle = shm.create_shared_memory_region(region, "/" + region, 1)
    except shm.SharedMemoryException:  # no shared memory here: the caller's own calls say so
        return None
    try:
        if BASE.get(protocol, protocol) == "grpc":
            client = grpcclient.InferenceServerClient(endpoint.grpc_url)
            try:
                client.register_system_shared_memory(region, "/" + region, 1, client_timeout=timeout_s)
                client.unregister_system_shared_memory(region, client_timeout=timeout_s)
            finally:
                client.close()
        else:
            kserve.register_system_shm(endpoint.http_url, region, "/" + region, 1, timeout=timeout_s)
            kserve.unregister_system_shm(endpoint.http_url, region, timeout=timeout_s)
    except (InferenceServerException, kserve.KServeError) as exc:
        if client_shm_refused(exc):
            return exc.message() if isinstance(exc, InferenceServerException) else exc.detail or str(exc)
    finally:
        shm.destroy_shared_memory_region(handle)
    return None


def leftover_regions(pid: int | None = None) -> list[str]:
    """This process's shared-memory objects (``/dev/shm/tk_shm_<pid>_*``; ``pid=0``: every process's)."""
    prefix = REGION_PREFIX if pid == 0 else f"{REGION_PREFIX}{pid or os.getpid()}_"
    try:
        return sorted(n for n in os.listdir("/dev/shm") if n.startswith(prefix))
    except OSError:
        return []


@dataclass
class ShmComparison:
    """The same request over a socket protocol and over its shared-memory twin, timed call by call."""

    protocol: str  # the socket protocol (grpc or http-binary)
    socket_ms: list[float] = field(default_factory=list)
    shm_ms: list[float] = field(default_factory=list)
    socket_request_bytes: int = 0  # what one request carried on the socket
    shm_request_bytes: int = 0
    shm_bytes: int = 0  # what went through the region instead (inputs and outputs)

    def ratio(self) -> float | None:
        """The socket's median time over shared memory's (above 1: shared memory was faster)."""
        if not self.socket_ms or not self.shm_ms:
            return None
        return float(np.median(self.socket_ms) / np.median(self.shm_ms))

    def outcome(self, margin: float = 1.3) -> str | None:
        """``shm_faster`` (the socket took ``margin`` times as long or more), ``shm_slower`` or ``similar``."""
        r = self.ratio()
        if r is None:
            return None
        return "shm_faster" if r >= margin else "shm_slower" if r <= 1 / margin else "similar"


def compare_with_socket(
    endpoint: Endpoint, model: str, arrays: dict[str, np.ndarray], protocol: str = "grpc", calls: int = 15
) -> ShmComparison:
    """``calls`` sequential requests each way, interleaved, after one warm-up call each (connections open,
    the region registered). Raises ProtocolError when either way fails."""
    if calls < 1:
        raise ValueError("calls must be >= 1")
    out = ShmComparison(protocol)
    socket = Caller(endpoint, protocol, model, arrays)
    memory = ShmCaller(endpoint, {"grpc": "grpc-shm", "http-binary": "http-shm"}[protocol], model, arrays)
    try:
        socket.call()
        memory.call()
        for _ in range(calls):
            a, b = socket.call(), memory.call()
            out.socket_ms.append(a.latency_ms)
            out.shm_ms.append(b.latency_ms)
        out.socket_request_bytes, out.shm_request_bytes, out.shm_bytes = (
            a.request_bytes,
            b.request_bytes,
            b.shm_bytes,
        )
    finally:
        socket.close()
        memory.close()
    return out
