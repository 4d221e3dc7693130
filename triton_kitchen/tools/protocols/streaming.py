"""Streaming: the decoupled ``streamer`` model over gRPC ``ModelStreamInfer`` and over HTTP Server-Sent Events
(``generate_stream``), each token stamped with its arrival time after the request was sent."""

from __future__ import annotations

import http.client
import json
import queue
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from triton_kitchen.core.catalog import STREAMER as STREAM_MODEL
from triton_kitchen.core.endpoint import Endpoint, split_host_port

DEFAULT_DELAY_MS = 30  # the streamer's pause between tokens
DEFAULT_STREAM_TIMEOUT_S = 30.0
GRPC_STREAM, HTTP_SSE = "grpc-stream", "http-sse"


@dataclass
class StreamRun:
    """Tokens of one streamed answer, each with its arrival time (ms after the request was sent)."""

    protocol: str  # GRPC_STREAM or HTTP_SSE
    tokens: list[str] = field(default_factory=list)
    arrivals_ms: list[float] = field(default_factory=list)
    total_ms: float = 0.0  # request sent -> stream closed
    error: str | None = None

    @property
    def ttft_ms(self) -> float | None:
        """Time to first token."""
        return self.arrivals_ms[0] if self.arrivals_ms else None

    @property
    def inter_token_ms(self) -> list[float]:
        """Gaps between consecutive tokens."""
        return [b - a for a, b in zip(self.arrivals_ms, self.arrivals_ms[1:], strict=False)]

    # the names chapter 6's page reads (it labels runs "grpc" / "sse")
    first_token_ms = ttft_ms

    @property
    def transport(self) -> str:
        return "grpc" if self.protocol == GRPC_STREAM else "sse"

    def arrival_outcome(self) -> str | None:
        """``early``: the first token came in the first half of the stream (tokens arrive as they are made);
        ``end``: not before the second half; None without tokens."""
        if self.ttft_ms is None or len(self.tokens) < 3 or self.total_ms - self.ttft_ms < 20.0:
            return None  # too few tokens, or no pause between them (delay 0): nothing to tell apart
        return "early" if self.ttft_ms < self.total_ms / 2 else "end"

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


def first_token_outcome(sse: StreamRun, grpc: StreamRun, margin_ms: float = 20.0) -> str | None:
    """Which transport brought the first token sooner: ``sse``, ``grpc``, or ``same`` (within ``margin_ms``)."""
    if sse.ttft_ms is None or grpc.ttft_ms is None:
        return None
    gap = sse.ttft_ms - grpc.ttft_ms
    return "same" if abs(gap) <= margin_ms else "grpc" if gap > 0 else "sse"


def _token_text(value) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def stream_grpc(
    endpoint: Endpoint,
    text: str,
    delay_ms: int = DEFAULT_DELAY_MS,
    timeout_s: float = DEFAULT_STREAM_TIMEOUT_S,
    model: str = STREAM_MODEL,
) -> StreamRun:
    """Stream ``text`` through the decoupled model over gRPC ``ModelStreamInfer`` (one request, many
    responses)."""
    run = StreamRun(GRPC_STREAM)
    events: queue.Queue = queue.Queue()
    client = grpcclient.InferenceServerClient(endpoint.grpc_url)
    text_in = grpcclient.InferInput("text", [1], "BYTES")
    text_in.set_data_from_numpy(np.array([text.encode()], dtype=object))
    delay_in = grpcclient.InferInput("delay_ms", [1], "INT32")
    delay_in.set_data_from_numpy(np.array([delay_ms], dtype=np.int32))
    t0 = time.perf_counter()
    try:
        client.start_stream(
            callback=lambda result, error: events.put((time.perf_counter(), result, error)),
            stream_timeout=timeout_s,
        )
        t0 = time.perf_counter()  # arrivals count from the request, not from opening the stream
        client.async_stream_infer(model, [text_in, delay_in], enable_empty_final_response=True)
        deadline = t0 + timeout_s
        while True:
            try:
                stamp, result, err = events.get(timeout=max(0.01, deadline - time.perf_counter()))
            except queue.Empty:
                run.error = f"timed out after {timeout_s:g} s"
                break
            if err is not None:
                run.error = err.message() if hasattr(err, "message") else str(err)
                break
            token = result.as_numpy("token")
            if token is not None and token.size:
                run.tokens.append(_token_text(token.reshape(-1)[0]))
                run.arrivals_ms.append((stamp - t0) * 1000)
            final = result.get_response().parameters.get("triton_final_response")
            if final is not None and final.bool_param:
                break
    except InferenceServerException as exc:
        run.error = exc.message() or str(exc)
    finally:
        try:
            client.stop_stream(cancel_requests=run.error is not None)
        except Exception:  # noqa: BLE001 - the stream may already be broken; nothing to keep
            pass
        client.close()
    run.total_ms = (time.perf_counter() - t0) * 1000
    return run


def sse_events(lines: Iterable[bytes]) -> Iterator[dict]:
    """The JSON ``data:`` events of a Server-Sent Events stream, one per ``data:`` line (Triton's
    ``generate_stream`` puts each event on one line); comments, ids and blank lines are skipped."""
    for raw in lines:
        line = raw.strip()
        if line.startswith(b"data:"):
            yield json.loads(line[5:])


def stream_sse(
    endpoint: Endpoint,
    text: str,
    delay_ms: int = DEFAULT_DELAY_MS,
    timeout_s: float = DEFAULT_STREAM_TIMEOUT_S,
    model: str = STREAM_MODEL,
) -> StreamRun:
    """Stream ``text`` through the decoupled model over HTTP Server-Sent Events (``generate_stream``)."""
    run = StreamRun(HTTP_SSE)
    host, port = split_host_port(endpoint.http_url)
    conn = http.client.HTTPConnection(host, port, timeout=timeout_s)
    body = json.dumps({"text": text, "delay_ms": delay_ms}).encode()
    t0 = time.perf_counter()
    deadline = t0 + timeout_s

    def lines(resp: http.client.HTTPResponse) -> Iterator[bytes]:
        while (left := deadline - time.perf_counter()) > 0:
            if conn.sock is not None:  # None once the response owns the socket
                conn.sock.settimeout(max(0.01, left))
            line = resp.readline()
            if not line:
                return
            yield line
        run.error = f"timed out after {timeout_s:g} s"

    try:
        conn.request(
            "POST",
            f"/v2/models/{model}/generate_stream",
            body=body,
            headers={"Content-Type": "application/json", "Accept": "text/event-stream"},
        )
        resp = conn.getresponse()
        if resp.status != 200:
            run.error = f"HTTP {resp.status}: {resp.read()[:300].decode(errors='replace')}"
        else:
            for event in sse_events(lines(resp)):
                if "error" in event:
                    run.error = str(event["error"])
                    break
                if "token" in event:
                    token = event["token"]
                    run.tokens.append(_token_text(token[0] if isinstance(token, list) else token))
                    run.arrivals_ms.append((time.perf_counter() - t0) * 1000)
    except (OSError, http.client.HTTPException, ValueError) as exc:
        run.error = f"{type(exc).__name__}: {exc}"
    finally:
        conn.close()
    run.total_ms = (time.perf_counter() - t0) * 1000
    return run


def compare_streaming(
    endpoint: Endpoint,
    text: str,
    delay_ms: int = DEFAULT_DELAY_MS,
    timeout_s: float = DEFAULT_STREAM_TIMEOUT_S,
) -> list[StreamRun]:
    """The same text streamed over gRPC and over SSE; the tokens should be the same."""
    return [stream_grpc(endpoint, text, delay_ms, timeout_s), stream_sse(endpoint, text, delay_ms, timeout_s)]
