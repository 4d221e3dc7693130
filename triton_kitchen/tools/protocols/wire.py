"""Wire bytes: :class:`CountingProxy` counts what crosses the socket; measure and compare protocols."""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from triton_kitchen.core.endpoint import Endpoint, split_host_port
from triton_kitchen.core.samples import image_tensor
from triton_kitchen.core.tensors import array_bytes
from triton_kitchen.tools.protocols.call import DEFAULT_TIMEOUT_S, PROTOCOLS, Caller
from triton_kitchen.tools.protocols.shm import base_protocol, make_caller


class CountingProxy:
    """A loopback TCP proxy that counts the bytes crossing it in each direction.

    ``sent`` counts client -> server bytes, ``received`` server -> client: what the socket carries,
    protocol headers and framing included (the TCP/IP headers themselves are not visible here).
    Threads are daemons; :meth:`stop` closes every connection."""

    def __init__(self, target: str, listen_host: str = "127.0.0.1", connect_timeout: float = 5.0) -> None:
        self.target = split_host_port(target)
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
    target = endpoint.grpc_url if base_protocol(protocol) == "grpc" else endpoint.http_url
    with CountingProxy(target) as proxy:
        caller = make_caller(
            endpoint,
            protocol,
            model,
            arrays,
            compression=compression,
            timeout_s=timeout_s,
            address=proxy.address,
        )
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
        protocol=protocol,
        model=model,
        compression=compression,
        calls=calls,
        request_bytes=last.request_bytes,
        response_bytes=last.response_bytes,
        wire_sent_per_call=(s1 - s0) / max(calls, 1),
        wire_received_per_call=(r1 - r0) / max(calls, 1),
        wire_first_call_sent=s0,
        wire_first_call_received=r0,
        latency_ms=[r.latency_ms for r in [first, *results]],
        binary_inputs=last.binary_inputs,
        outputs=last.outputs,
    )


def outputs_agree(
    a: dict[str, np.ndarray], b: dict[str, np.ndarray], rtol: float = 1e-5, atol: float = 1e-6
) -> bool:
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
    tensor = array_bytes(image_tensor(jpeg))
    return {"jpeg_bytes": len(jpeg), "tensor_bytes": tensor, "ratio": tensor / len(jpeg)}


def json_inflation(arrays: dict[str, np.ndarray]) -> float:
    """Computed from tritonclient's encoder alone (no server): JSON body bytes / binary body bytes."""
    dummy = Endpoint("127.0.0.1:1", "127.0.0.1:1")
    j = Caller(dummy, "http-json", "m", arrays).encode_http()[0]
    b = Caller(dummy, "http-binary", "m", arrays).encode_http()[0]
    return len(j) / len(b)
