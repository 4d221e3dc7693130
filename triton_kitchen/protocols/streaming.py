"""Streaming: the decoupled ``streamer`` over gRPC ``ModelStreamInfer`` and over HTTP Server-Sent Events."""

from __future__ import annotations

import http.client
import json
import queue
import time
from dataclasses import dataclass

import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from triton_kitchen.protocols.call import _host_port
from triton_kitchen.protocols.wire import _as_bytes
from triton_kitchen.server import Endpoint

STREAM_MODEL = "streamer"


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

