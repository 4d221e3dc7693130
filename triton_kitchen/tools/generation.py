"""Generation clients for the tiny language model: token streams timed by the client, beside the server's record.

Three ways to ask Triton 2.51 for text, all with the inputs Triton's OpenAI-compatible frontend sends a Python
model (``text_input``, ``max_tokens``, ``temperature``, ``stop_words``, ``stream``; see
``triton_kitchen/models/tiny_lm/serving.py``):

- HTTP ``POST /v2/models/<m>/generate_stream``: Server-Sent Events, one ``data:`` line per response
  (:func:`stream_http`);
- gRPC ``ModelStreamInfer`` through tritonclient's ``start_stream``/``async_stream_infer`` (:func:`stream_grpc`);
- HTTP ``POST /v2/models/<m>/generate``: one response only. Triton answers a model that sends more than one
  response with an ``{"error": ...}`` body in its own words, "generate expects model to produce exactly 1
  response, use generate stream for model that generates various number of responses" (server r24.10
  ``http_server.cc`` SendChunkResponse), after the model has run; :func:`generate_once` returns that text.

A generate body (:func:`generate_body`): a key that names one of the model's inputs fills that input; any other
key becomes a request parameter (``http_server.cc`` r24.10 ``ExactMappingInput`` ->
``SetTritonParameterFromJsonParameter``), which in 2.51 may be a string, an int, a bool or a double only: a list
or an object is refused with HTTP 400 "parameter '<key>' has invalid type. It should be either 'int', 'bool', or
'string'." (doubles are accepted although the message leaves them out). The models read parameter ``seed``.

Every stream gives a :class:`GenerationRun`: the client's arrival time of every response that carried a token
(``time.perf_counter`` after the request was sent, and the wall clock ``time.time_ns`` to line up with the
server's ``start_ns``/``end_ns``), time to first token, inter-token gaps, and the server's iteration records
(the ``iteration`` output). :func:`closed_loop` runs N clients, each sending its next job as soon as its last
answer ended; :func:`summarize` gives TTFT and ITL p50/p99 and tokens/s.
"""

from __future__ import annotations

import http.client
import json
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from triton_kitchen.core.endpoint import Endpoint, split_host_port
from triton_kitchen.tools.protocols.streaming import sse_events

DEFAULT_TIMEOUT_S = 60.0
HTTP, GRPC = "http", "grpc"
# the generation charts' colours: a token, an idle place, a wait, a join (or the client's receipt), a leave
TOKEN_COLOR, IDLE_COLOR, WAIT_COLOR, JOIN_COLOR, LEAVE_COLOR = (
    "#3182bd",
    "#bdbdbd",
    "#fdae6b",
    "#31a354",
    "#de2d26",
)

INPUT_NAMES = ("text_input", "max_tokens", "temperature", "stop_words", "stream")


@dataclass
class Job:
    """One generation a client asks for."""

    prompt: str
    max_tokens: int
    temperature: float = 0.0
    stop_words: list[str] = field(default_factory=list)
    parameters: dict = field(default_factory=dict)


@dataclass
class GenerationRun:
    """One streamed generation as the client saw it, with the server's records."""

    protocol: str
    request_id: str = ""
    sent_ns: int = 0  # wall clock when the request was sent
    arrivals_ms: list[float] = field(default_factory=list)  # responses that carried a token, ms after sending
    arrivals_ns: list[int] = field(default_factory=list)  # the same, wall clock
    text: str = ""
    records: list[dict] = field(default_factory=list)  # the ``iteration`` output of every response
    total_ms: float = 0.0
    error: str | None = None
    cancelled: bool = False

    @property
    def tokens(self) -> int:
        return len(self.arrivals_ms)

    @property
    def ttft_ms(self) -> float | None:
        return self.arrivals_ms[0] if self.arrivals_ms else None

    @property
    def itl_ms(self) -> list[float]:
        return [b - a for a, b in zip(self.arrivals_ms, self.arrivals_ms[1:], strict=False)]

    @property
    def finish_reason(self) -> str | None:
        for r in reversed(self.records):
            if "finish_reason" in r:
                return r["finish_reason"]
        return None

    def steps(self) -> list[dict]:
        """The server's step records carried by this run's responses, in order."""
        return [s for r in self.records for s in r.get("steps", [])]


def generate_body(job: Job, stream: bool = True) -> dict:
    """The JSON body of a generate request: inputs by name, ``job.parameters`` as request parameters."""
    body = {
        "text_input": job.prompt,
        "max_tokens": int(job.max_tokens),
        "temperature": float(job.temperature),
    }
    if job.stop_words:
        body["stop_words"] = list(job.stop_words)
    body["stream"] = bool(stream)
    clash = set(job.parameters) & set(body)
    if clash:
        raise ValueError(f"parameters {sorted(clash)} name inputs")
    return {**body, **job.parameters}


def _take(run: GenerationRun, text, iteration, t0: float) -> None:
    """Book one response: its text, its record, and its arrival when it carried a token."""
    stamp, wall = time.perf_counter(), time.time_ns()
    if text:
        run.text += text
    record = json.loads(iteration) if isinstance(iteration, str | bytes) else iteration
    if not record:
        return
    before = run.records[-1]["index"] if run.records else 0
    run.records.append(record)
    run.request_id = run.request_id or str(record.get("request_id", ""))
    if record.get("index", 0) > before:
        run.arrivals_ms.append((stamp - t0) * 1000)
        run.arrivals_ns.append(wall)


def _first(value):
    if isinstance(value, list):
        return value[0] if value else ""
    return value


def stream_http(
    endpoint: Endpoint,
    model: str,
    job: Job,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    cancel_after_tokens: int | None = None,
    request_id: str = "",
    on_response: Callable[[GenerationRun], None] | None = None,
    stop: threading.Event | None = None,
) -> GenerationRun:
    """Stream over ``generate_stream``; with ``cancel_after_tokens`` the client closes the connection after
    that many tokens (Triton cancels the request when its HTTP connection closes), and so it does as soon as
    ``stop`` is set (checked after each response). ``on_response(run)`` is called after each response is
    booked (``run.text`` then holds the text so far)."""
    run = GenerationRun(HTTP)
    host, port = split_host_port(endpoint.http_url)
    conn = http.client.HTTPConnection(host, port, timeout=timeout_s)
    body = generate_body(job, stream=True)
    if request_id:
        body["id"] = request_id
    t0 = time.perf_counter()
    deadline = t0 + timeout_s

    def lines(resp: http.client.HTTPResponse) -> Iterator[bytes]:
        while (left := deadline - time.perf_counter()) > 0:
            if conn.sock is not None:
                conn.sock.settimeout(max(0.01, left))
            line = resp.readline()
            if not line:
                return
            yield line
        run.error = f"timed out after {timeout_s:g} s"

    try:
        run.sent_ns = time.time_ns()
        conn.request(
            "POST",
            f"/v2/models/{model}/generate_stream",
            body=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Accept": "text/event-stream"},
        )
        resp = conn.getresponse()
        if resp.status != 200:
            run.error = f"HTTP {resp.status}: {_error_of(resp.read())}"
        else:
            for event in sse_events(lines(resp)):
                if "error" in event:
                    run.error = str(event["error"])
                    break
                _take(run, _first(event.get("text_output")), _first(event.get("iteration")), t0)
                if on_response is not None:
                    on_response(run)
                if (cancel_after_tokens is not None and run.tokens >= cancel_after_tokens) or (
                    stop is not None and stop.is_set() and not run.finish_reason
                ):
                    run.cancelled = True
                    break
    except (OSError, http.client.HTTPException, ValueError) as exc:
        run.error = f"{type(exc).__name__}: {exc}"
    finally:
        conn.close()
    run.total_ms = (time.perf_counter() - t0) * 1000
    return run


def _error_of(raw: bytes) -> str:
    try:
        return str(json.loads(raw).get("error", "")) or raw.decode(errors="replace")
    except (ValueError, AttributeError):
        return raw.decode(errors="replace")


def grpc_inputs(job: Job, stream: bool = True) -> list[grpcclient.InferInput]:
    """The job as gRPC inputs, shaped as the OpenAI frontend shapes them for a model with a batch dimension."""

    def tensor(name, array, dtype):
        t = grpcclient.InferInput(name, list(array.shape), dtype)
        t.set_data_from_numpy(array)
        return t

    out = [
        tensor("text_input", np.array([[job.prompt.encode()]], dtype=object), "BYTES"),
        tensor("max_tokens", np.array([[job.max_tokens]], dtype=np.int32), "INT32"),
        tensor("temperature", np.array([[job.temperature]], dtype=np.float32), "FP32"),
        tensor("stream", np.array([[stream]], dtype=bool), "BOOL"),
    ]
    if job.stop_words:
        out.append(
            tensor("stop_words", np.array([[w.encode() for w in job.stop_words]], dtype=object), "BYTES")
        )
    return out


def stream_grpc(
    endpoint: Endpoint,
    model: str,
    job: Job,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    cancel_after_tokens: int | None = None,
    request_id: str = "",
) -> GenerationRun:
    """Stream over gRPC ``ModelStreamInfer`` (a stream of its own); ``cancel_after_tokens``: the client stops
    the stream with ``cancel_requests=True`` after that many tokens."""
    run = GenerationRun(GRPC)
    events: queue.Queue = queue.Queue()
    client = grpcclient.InferenceServerClient(endpoint.grpc_url)
    params = {k: v for k, v in job.parameters.items()}
    t0 = time.perf_counter()
    try:
        client.start_stream(
            callback=lambda result, error: events.put((result, error)), stream_timeout=timeout_s
        )
        t0 = time.perf_counter()
        run.sent_ns = time.time_ns()
        client.async_stream_infer(
            model,
            grpc_inputs(job),
            request_id=request_id,
            parameters=params or None,
            enable_empty_final_response=True,
        )
        deadline = t0 + timeout_s
        while True:
            try:
                result, err = events.get(timeout=max(0.01, deadline - time.perf_counter()))
            except queue.Empty:
                run.error = f"timed out after {timeout_s:g} s"
                break
            if err is not None:
                run.error = err.message() if hasattr(err, "message") else str(err)
                break
            text, it = result.as_numpy("text_output"), result.as_numpy("iteration")
            piece = (
                text.reshape(-1)[0].decode("utf-8", errors="replace")
                if text is not None and text.size
                else ""
            )
            _take(run, piece, it.reshape(-1)[0] if it is not None and it.size else None, t0)
            final = result.get_response().parameters.get("triton_final_response")
            if final is not None and final.bool_param:
                break
            if cancel_after_tokens is not None and run.tokens >= cancel_after_tokens:
                run.cancelled = True
                break
    except InferenceServerException as exc:
        run.error = exc.message() or str(exc)
    finally:
        try:
            client.stop_stream(cancel_requests=run.cancelled or run.error is not None)
        except Exception:  # noqa: BLE001 - the stream may already be broken
            pass
        client.close()
    run.total_ms = (time.perf_counter() - t0) * 1000
    return run


def generate_once(endpoint: Endpoint, model: str, job: Job, stream: bool = True, timeout_s: float = 30.0):
    """``POST /generate``: (HTTP status, the JSON answer). On a model that streams several responses Triton's
    answer is ``{"error": "generate expects model to produce exactly 1 response, ..."}``."""
    host, port = split_host_port(endpoint.http_url)
    conn = http.client.HTTPConnection(host, port, timeout=timeout_s)
    try:
        conn.request(
            "POST",
            f"/v2/models/{model}/generate",
            body=json.dumps(generate_body(job, stream=stream)).encode(),
            headers={"Content-Type": "application/json"},
        )
        resp = conn.getresponse()
        raw = resp.read()
    finally:
        conn.close()
    try:
        return resp.status, json.loads(raw)
    except ValueError:
        return resp.status, {"error": raw.decode(errors="replace")}


STREAMERS = {HTTP: stream_http, GRPC: stream_grpc}


@dataclass
class LoadResult:
    """A closed-loop run: every generation and the wall time from the first send to the last answer."""

    runs: list[GenerationRun]
    wall_s: float
    clients: int

    @property
    def tokens(self) -> int:
        return sum(r.tokens for r in self.runs)

    @property
    def tokens_per_s(self) -> float | None:
        return self.tokens / self.wall_s if self.wall_s > 0 else None


def closed_loop(
    endpoint: Endpoint,
    model: str,
    jobs: list[Job],
    clients: int,
    protocol: str = HTTP,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> LoadResult:
    """``clients`` threads; each takes the next job of ``jobs`` (in order) as soon as its last one ended,
    until none is left."""
    stream = STREAMERS[protocol]
    lock = threading.Lock()
    todo = list(enumerate(jobs))
    runs: list[GenerationRun | None] = [None] * len(jobs)

    def worker(n: int) -> None:
        while True:
            with lock:
                if not todo:
                    return
                i, job = todo.pop(0)
            runs[i] = stream(endpoint, model, job, timeout_s, request_id=f"c{n}-j{i}")

    threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout_s * len(jobs))
    return LoadResult([r for r in runs if r is not None], time.perf_counter() - t0, clients)


def percentile(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None


def summarize(result: LoadResult) -> dict:
    """TTFT and inter-token latency p50/p99 (ms) over every generation, tokens/s over the run."""
    ttft = [r.ttft_ms for r in result.runs if r.ttft_ms is not None]
    itl = [g for r in result.runs for g in r.itl_ms]
    return {
        "requests": len(result.runs),
        "errors": sum(1 for r in result.runs if r.error),
        "tokens": result.tokens,
        "wall_s": result.wall_s,
        "tokens_per_s": result.tokens_per_s,
        "ttft_ms": {"p50": percentile(ttft, 50), "p99": percentile(ttft, 99)},
        "itl_ms": {"p50": percentile(itl, 50), "p99": percentile(itl, 99)},
    }


def server_steps(runs: list[GenerationRun]) -> list[dict]:
    """Every distinct step the server recorded (by scheduler and step index), in step order."""
    seen: dict = {}
    for r in runs:
        for s in r.steps():
            seen.setdefault((s["scheduler"], s["step"]), s)
    return [seen[k] for k in sorted(seen, key=lambda k: k[1])]


def occupancy(steps: list[dict]) -> dict:
    """From the recorded steps: mean sequences computing per step (prefill or decode, not idle), mean places
        held (idle ones too), mean time per step (from one step's start to the next's; the last step's own length
        is its compute time), split into the model's compute (step start to tokens computed) and the rest (sending the
    responses, releasing the requests, Triton forming the next batch), and the tokens/s these predict (running
    sequences / time per step)."""
    if not steps:
        return {"steps": 0}
    starts = [s["mono_start_ns"] for s in steps]
    cycles = [(b - a) / 1e9 for a, b in zip(starts, starts[1:], strict=False)]
    cycles.append((steps[-1]["mono_end_ns"] - steps[-1]["mono_start_ns"]) / 1e9)
    working = [sum(1 for b in s["batch"] if b["phase"] != "idle") for s in steps]
    tokens = [sum(len(b["tokens"]) for b in s["batch"]) for s in steps]
    held = [len(s["batch"]) for s in steps]
    span = sum(cycles)
    inside = [(s["mono_end_ns"] - s["mono_start_ns"]) / 1e9 for s in steps]
    return {
        "steps": len(steps),
        "running_per_step": float(np.mean(working)),
        "places_per_step": float(np.mean(held)),
        "tokens_per_step": float(np.mean(tokens)),
        "time_per_step_ms": span / len(steps) * 1000,
        "compute_ms": float(np.mean(inside)) * 1000,  # start of the step to its tokens computed
        "outside_ms": (span - sum(inside)) / len(steps) * 1000,  # sending, releasing, Triton's scheduling
        "predicted_tokens_per_s": sum(tokens) / span if span > 0 else None,
    }
