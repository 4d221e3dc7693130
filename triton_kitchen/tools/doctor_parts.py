"""The parts of a request's time the doctor measures on their own, apart from the load (:mod:`.doctor`):

- the client's (de)serialisation: tritonclient's encoder and decoder on the same request and answer, timed apart
  (shared memory: writing the inputs into a region and reading the outputs back): :func:`codec_ms`;
- the wire and the server's front end from Triton's trace timestamps, the client's send and receipt on the same
  clock (:func:`traced_splits`, :func:`trace_split`, :func:`frontend_ms`);
- without a usable trace, the wire as a loopback echo of the same bytes (:func:`echo_ms`), plus another host's
  extra round trip (:func:`connect_ms`).
"""

from __future__ import annotations

import http.client
import os
import socket
import statistics as pystats
import threading
import time
from collections.abc import Callable

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm_memory

from triton_kitchen.core.endpoint import Endpoint, split_host_port
from triton_kitchen.tools.protocols import Caller, ProtocolError, make_caller
from triton_kitchen.tools.protocols import shm as shm_protocol
from triton_kitchen.tools.trace import capture_many


# -- the client's (de)serialisation -------------------------------------------------------------------------
def median_ms(fn: Callable[[], object], reps: int) -> float:
    times = []
    for _ in range(max(1, reps)):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return float(pystats.median(times))


def codec_ms(
    endpoint: Endpoint,
    protocol: str,
    model: str,
    inputs: dict[str, np.ndarray],
    outputs: list[str],
    reps: int,
    timeout_s: float,
) -> tuple[float, float]:
    """(serialize, deserialize) ms per request over ``protocol``, each timed on its own on the same request and a
    real answer. HTTP: tritonclient's body encoder and ``InferResult.from_response_body`` + ``as_numpy``; gRPC:
    building the ModelInferRequest and reading the answer into numpy (the protobuf's own (de)serialisation happens
    inside the transport: the wire's leg); shared memory: writing the inputs into a region, reading the outputs."""
    if protocol in ("http-json", "http-binary"):
        caller = Caller(endpoint, protocol, model, inputs, output_names=outputs)
        ser = median_ms(caller.encode_http, reps)
        body, headers = caller.encode_http()
        host, port = split_host_port(endpoint.http_url)
        conn = http.client.HTTPConnection(host, port, timeout=timeout_s)
        try:
            conn.request("POST", f"/v2/models/{model}/infer", body=body, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
            if resp.status != 200:
                raise ProtocolError(f"HTTP {resp.status}: {raw[:200]!r}", "server")
            hl = resp.getheader("Inference-Header-Content-Length")
        finally:
            conn.close()

        def decode() -> None:
            r = httpclient.InferResult.from_response_body(raw, False, int(hl) if hl else None, None)
            for o in r.get_response().get("outputs", []):
                r.as_numpy(o["name"])

        return ser, median_ms(decode, reps)
    if protocol == "grpc":
        caller = Caller(endpoint, "grpc", model, inputs, output_names=outputs)
        ser = median_ms(caller.encode_grpc, reps)
        client = grpcclient.InferenceServerClient(endpoint.grpc_url)
        try:
            ins, outs = caller.grpc_request()
            response = client.infer(model, ins, outputs=outs, client_timeout=timeout_s).get_response()
        except Exception as exc:  # noqa: BLE001 - tritonclient raises its own
            raise ProtocolError(str(exc), "server") from exc
        finally:
            client.close()

        def decode_grpc() -> None:
            r = grpcclient.InferResult(response)
            for o in response.outputs:
                r.as_numpy(o.name)

        return ser, median_ms(decode_grpc, reps)
    # shared memory: the client's work is writing the region and reading it back
    arrays = list(inputs.values())
    size = sum(a.nbytes for a in arrays)
    out_arrays = [
        np.zeros(a.shape, a.dtype) for a in sample_outputs(endpoint, model, inputs, outputs, timeout_s)
    ]
    out_size = max(1, sum(a.nbytes for a in out_arrays))
    region = f"{shm_protocol.REGION_PREFIX}{os.getpid()}_doc"
    handle = shm_memory.create_shared_memory_region(region, "/" + region, max(size, out_size))
    try:
        ser = median_ms(lambda: shm_memory.set_shared_memory_region(handle, arrays), reps)
        shm_memory.set_shared_memory_region(handle, out_arrays)

        def read() -> None:
            offset = 0
            for a in out_arrays:
                shm_memory.get_contents_as_numpy(handle, a.dtype, a.shape, offset=offset)
                offset += a.nbytes

        return ser, median_ms(read, reps)
    finally:
        shm_memory.destroy_shared_memory_region(handle)


def sample_outputs(endpoint, model, inputs, outputs, timeout_s) -> list[np.ndarray]:
    caller = Caller(endpoint, "http-binary", model, inputs, output_names=outputs, timeout_s=timeout_s)
    try:
        return list(caller.call().outputs.values())
    finally:
        caller.close()


# -- the wire -----------------------------------------------------------------------------------------------
def echo_ms(request_bytes: int, response_bytes: int, calls: int = 20) -> float:
    """Median round trip of ``request_bytes`` out and ``response_bytes`` back through a loopback TCP echo (one
    connection, Nagle off): what moving the same bytes through this machine's socket stack costs."""
    request_bytes, response_bytes = max(1, int(request_bytes)), max(1, int(response_bytes))
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    payload_back = b"r" * response_bytes

    def serve() -> None:
        conn, _ = listener.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn:
            for _ in range(calls + 1):
                got = 0
                while got < request_bytes:
                    chunk = conn.recv(min(1 << 20, request_bytes - got))
                    if not chunk:
                        return
                    got += len(chunk)
                conn.sendall(payload_back)

    th = threading.Thread(target=serve, daemon=True, name="doctor-echo")
    th.start()
    payload = b"q" * request_bytes
    times = []
    client = socket.create_connection(listener.getsockname(), timeout=10.0)
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        for i in range(calls + 1):
            t0 = time.perf_counter()
            client.sendall(payload)
            got = 0
            while got < response_bytes:
                chunk = client.recv(1 << 20)
                if not chunk:
                    raise OSError("echo closed")
                got += len(chunk)
            if i:  # the first opens the connection's buffers
                times.append((time.perf_counter() - t0) * 1000)
    finally:
        client.close()
        listener.close()
        th.join(timeout=2.0)
    return float(pystats.median(times))


def connect_ms(address: str, tries: int = 5) -> float:
    """Median TCP connect time to ``host:port`` (one network round trip)."""
    host, port = split_host_port(address)
    times = []
    for _ in range(tries):
        t0 = time.perf_counter()
        socket.create_connection((host, port), timeout=5.0).close()
        times.append((time.perf_counter() - t0) * 1000)
    return float(pystats.median(times))


def connect_ms_loopback() -> float:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    try:
        host, port = listener.getsockname()[:2]
        return connect_ms(f"{host}:{port}")
    finally:
        listener.close()


def trace_split(timestamps: dict[str, int], client_start: int, client_end: int) -> dict[str, float] | None:
    """One traced request's wire and front-end time (ms), on the client's and the server's common clock:
    wire = client send to the request received (``HTTP_RECV_END`` / ``GRPC_WAITREAD_END``) plus the answer's
    send (after ``REQUEST_END``) to the client's receipt; frontend = received to ``REQUEST_START`` plus
    ``REQUEST_END`` to the answer's send. With ``REQUEST_START``..``REQUEST_END`` (the statistics' request time)
    they add up to the client's latency. None when a timestamp is missing."""
    recv_end = timestamps.get("HTTP_RECV_END") or timestamps.get("GRPC_WAITREAD_END")
    send_start = timestamps.get("HTTP_SEND_START") or timestamps.get("GRPC_SEND_START")
    start, end = timestamps.get("REQUEST_START"), timestamps.get("REQUEST_END")
    if None in (recv_end, send_start, start, end) or recv_end < client_start or client_end < end:
        return None
    out_from = max(send_start, end)
    return {
        "wire": ((recv_end - client_start) + (client_end - out_from)) / 1e6,
        "frontend": (max(0, start - recv_end) + max(0, send_start - end)) / 1e6,
    }


def frontend_ms(timestamps: dict[str, int]) -> float | None:
    """One traced request's time in the server's front end (ms), from its timestamps alone: received
    (``HTTP_RECV_END`` / ``GRPC_WAITREAD_END``) to ``REQUEST_START``, and ``REQUEST_END`` to the answer's send."""
    recv_end = timestamps.get("HTTP_RECV_END") or timestamps.get("GRPC_WAITREAD_END")
    send_start = timestamps.get("HTTP_SEND_START") or timestamps.get("GRPC_SEND_START")
    start, end = timestamps.get("REQUEST_START"), timestamps.get("REQUEST_END")
    if None in (recv_end, send_start, start, end):
        return None
    return (max(0, start - recv_end) + max(0, send_start - end)) / 1e6


def traced_splits(
    endpoint: Endpoint,
    protocol: str,
    model: str,
    inputs,
    outputs,
    calls: int,
    timeout_s: float,
    wait_s: float,
) -> list[dict[str, float]]:
    """``calls`` traced requests over ``protocol``, back to back as a cell's requests go (a gap lets gRPC's
    flow-control window shrink: spaced one capture apart, a gRPC request took 12-17 ms to arrive against ~0.1 ms
    back to back); each one's wire and front-end time (:func:`trace_split`). ``wait_s``: how long to wait for the
    trace file. Raises :class:`TraceError` or ``KServeError`` when the trace API is closed or its file unreadable."""
    caller = make_caller(endpoint, protocol, model, inputs, output_names=outputs, timeout_s=timeout_s)
    splits = []
    times: list[tuple[int, int]] = []

    def send() -> None:
        for _ in range(calls):
            t0 = time.monotonic_ns()  # the server's trace clock (CLOCK_MONOTONIC): one axis on this host
            caller.call()
            times.append((t0, time.monotonic_ns()))

    try:
        caller.call()  # the connection (and a shared-memory region) opened outside the traced window
        caller.call()
        _, found = capture_many(endpoint, model, send, calls, timeout_s=wait_s)
        for tl, (t0, t1) in zip(found, times, strict=False):  # both in sending order
            split = trace_split(tl.root.timestamps, t0, t1)
            if split:
                splits.append(split)
    finally:
        caller.close()
    return splits
