"""Chapter 7's demo: the tutorial's client code run against an Endpoint, plus sample photos.

The tutorial function is kept as it is written in the lesson (``ensemble_pipeline``, ``input_image``,
``output_label``); :func:`run_tutorial` runs it over HTTP or gRPC and times each call. Deliberate
mistakes (wrong tensor name, data type, shape) can be switched on to show Triton's own messages.
"""

from __future__ import annotations

import io
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from triton_kitchen.server import Endpoint

SAMPLE_PHOTOS = ("chelsea", "coffee", "astronaut", "rocket", "camera", "stereo_motorcycle")


@lru_cache(maxsize=len(SAMPLE_PHOTOS))
def sample_jpeg(name: str, quality: int = 90) -> bytes:
    """One of scikit-image's offline sample photos, as JPEG bytes."""
    from PIL import Image
    from skimage import data

    if name not in SAMPLE_PHOTOS:
        raise ValueError(f"unknown sample photo {name!r}; expected one of {SAMPLE_PHOTOS}")
    array = getattr(data, name)()
    if name == "stereo_motorcycle":
        array = array[0]
    buf = io.BytesIO()
    Image.fromarray(np.asarray(array)).convert("RGB").save(buf, "JPEG", quality=quality)
    return buf.getvalue()


# -- the tutorial's client ---------------------------------------------------------------------
MISTAKES = ("none", "tensor_name", "dtype", "shape", "dead_server")
LABELS_FILE = Path(__file__).resolve().parent.parent / "model_repository" / "classifier" / "labels.txt"


@lru_cache(maxsize=1)
def imagenet_labels() -> tuple[str, ...]:
    try:
        return tuple(LABELS_FILE.read_text(encoding="utf-8").splitlines())
    except OSError:
        return ()


def tutorial_infer(
    client_type: str,
    url: str,
    image: np.ndarray,
    model_name: str = "ensemble_pipeline",
    input_name: str = "input_image",
    datatype: str = "FP32",
) -> np.ndarray:
    """The tutorial's ``infer()``, as the lesson shows it, with the URL, image and names as arguments."""
    if client_type == "http":
        import tritonclient.http as client_lib
    else:
        import tritonclient.grpc as client_lib
    client = client_lib.InferenceServerClient(url=url)
    try:
        inputs = client_lib.InferInput(input_name, list(image.shape), datatype)
        inputs.set_data_from_numpy(image)
        outputs = client_lib.InferRequestedOutput("output_label")
        result = client.infer(model_name, inputs=[inputs], outputs=[outputs])
        return result.as_numpy("output_label")
    finally:
        client.close()


@dataclass
class DemoRun:
    """One run of the tutorial client: what was sent, what came back, how long it took."""

    protocol: str
    url: str
    input_name: str
    datatype: str
    shape: list[int]
    ok: bool = False
    ms: float = 0.0
    output_shape: list[int] = field(default_factory=list)
    argmax: int | None = None
    label: str = ""
    top_prob: float = 0.0
    prob_sum: float = 0.0
    error_code: str = ""
    error: str = ""


def demo_input(image: bytes | None, seed: int = 0) -> np.ndarray:
    """A photo preprocessed to FP32 [1, 3, 224, 224], or the tutorial's uniform noise when None."""
    if image is None:
        return np.random.default_rng(seed).random((1, 3, 224, 224), dtype=np.float32)
    from triton_kitchen.imaging import preprocess_bytes

    return preprocess_bytes(image)[None, ...].astype(np.float32)


def run_tutorial(
    endpoint: Endpoint, protocol: str, image: bytes | None = None, mistake: str = "none", seed: int = 0
) -> DemoRun:
    """Run the tutorial client over ``protocol`` ("http" or "grpc"), optionally with a deliberate mistake."""
    from tritonclient.utils import InferenceServerException

    from triton_kitchen.classify import error_code
    from triton_kitchen.server import free_port

    if mistake not in MISTAKES:
        raise ValueError(f"unknown mistake {mistake!r}; expected one of {MISTAKES}")
    array = demo_input(image, seed)
    input_name, datatype = "input_image", "FP32"
    url = endpoint.http_url if protocol == "http" else endpoint.grpc_url
    if mistake == "tensor_name":
        input_name = "image"
    elif mistake == "dtype":
        array, datatype = array.astype(np.float64), "FP64"
    elif mistake == "shape":
        array = array[0]
    elif mistake == "dead_server":
        url = f"127.0.0.1:{free_port()}"
    run = DemoRun(protocol, url, input_name, datatype, list(array.shape))
    t0 = time.perf_counter()
    try:
        probs = tutorial_infer(protocol, url, array, input_name=input_name, datatype=datatype)
    except InferenceServerException as exc:
        run.ms = (time.perf_counter() - t0) * 1000
        run.error = exc.message() or str(exc)
        run.error_code = error_code(exc)
        if mistake == "dead_server" and run.error_code == "server_unreachable":
            run.error_code = "nothing_listening"  # a closed port on purpose, not "your server is down"
        return run
    except (OSError, ConnectionError) as exc:
        run.ms = (time.perf_counter() - t0) * 1000
        # the dead_server mistake aims at a closed port on purpose: say that, not "your server is down"
        code = "nothing_listening" if mistake == "dead_server" else "server_unreachable"
        run.error, run.error_code = str(exc) or type(exc).__name__, code
        return run
    run.ms = (time.perf_counter() - t0) * 1000
    run.ok = True
    run.output_shape = list(probs.shape)
    run.argmax = int(probs.argmax())
    run.top_prob = float(probs.max())
    run.prob_sum = float(probs.sum())
    labels = imagenet_labels()
    run.label = labels[run.argmax] if run.argmax < len(labels) else str(run.argmax)
    return run


# -- streaming --------------------------------------------------------------------------------
STREAM_MODEL = "streamer"


@dataclass
class StreamRun:
    """Tokens of one streamed answer, each with its arrival time after the request was sent."""

    transport: str
    tokens: list[str] = field(default_factory=list)
    arrivals_ms: list[float] = field(default_factory=list)
    total_ms: float = 0.0
    error: str = ""

    @property
    def first_token_ms(self) -> float | None:
        return self.arrivals_ms[0] if self.arrivals_ms else None


def stream_grpc(endpoint: Endpoint, text: str, delay_ms: int = 60, timeout: float = 30.0) -> StreamRun:
    """Stream the streamer's tokens over gRPC ``ModelStreamInfer`` (a decoupled model, many responses)."""
    import queue

    import tritonclient.grpc as grpcclient

    run = StreamRun("grpc")
    answers: queue.Queue = queue.Queue()
    client = grpcclient.InferenceServerClient(endpoint.grpc_url)
    text_in = grpcclient.InferInput("text", [1], "BYTES")
    text_in.set_data_from_numpy(np.array([text.encode()], dtype=object))
    delay_in = grpcclient.InferInput("delay_ms", [1], "INT32")
    delay_in.set_data_from_numpy(np.array([delay_ms], dtype=np.int32))
    t0 = time.perf_counter()
    try:
        client.start_stream(callback=lambda result, error: answers.put((time.perf_counter(), result, error)))
        client.async_stream_infer(STREAM_MODEL, inputs=[text_in, delay_in], enable_empty_final_response=True)
        deadline = t0 + timeout
        while time.perf_counter() < deadline:
            try:
                when, result, error = answers.get(timeout=max(0.01, deadline - time.perf_counter()))
            except queue.Empty:
                run.error = f"no final response within {timeout:.0f} s"
                break
            if error is not None:
                run.error = str(error)
                break
            response = result.get_response()
            token = result.as_numpy("token")
            if token is not None and token.size:
                value = token.reshape(-1)[0]
                run.tokens.append(value.decode() if isinstance(value, bytes) else str(value))
                run.arrivals_ms.append((when - t0) * 1000)
            if (
                response.parameters.get("triton_final_response")
                and response.parameters["triton_final_response"].bool_param
            ):
                break
    finally:
        try:
            client.stop_stream()
        finally:
            client.close()
    run.total_ms = (time.perf_counter() - t0) * 1000
    return run


def stream_sse(endpoint: Endpoint, text: str, delay_ms: int = 60, timeout: float = 30.0) -> StreamRun:
    """Stream the same tokens over HTTP Server-Sent Events at ``/v2/models/streamer/generate_stream``."""
    import json
    import urllib.error
    import urllib.request

    run = StreamRun("sse")
    body = json.dumps({"text": text, "delay_ms": delay_ms}).encode()
    request = urllib.request.Request(
        f"http://{endpoint.http_url}/v2/models/{STREAM_MODEL}/generate_stream",
        data=body,
        headers={"Content-Type": "application/json", "Accept": "text/event-stream"},
        method="POST",
    )
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            for raw in resp:
                line = raw.decode("utf-8", errors="replace").strip()
                if not line.startswith("data:"):
                    continue
                event = json.loads(line[5:].strip())
                if "error" in event:
                    run.error = str(event["error"])
                    break
                token = event.get("token")
                if token is not None:
                    run.tokens.append(token[0] if isinstance(token, list) else str(token))
                    run.arrivals_ms.append((time.perf_counter() - t0) * 1000)
    except urllib.error.HTTPError as exc:
        run.error = exc.read().decode("utf-8", errors="replace") or str(exc)
    except (OSError, ValueError) as exc:
        run.error = str(exc)
    run.total_ms = (time.perf_counter() - t0) * 1000
    return run


# -- a quick, bounded protocol check (chapter 8) ------------------------------------------------
def quick_protocol_check(
    endpoint: Endpoint, image: bytes | None = None, requests: int = 20, budget_s: float = 6.0
) -> dict[str, list[float]]:
    """Sequential round trips of the tutorial request per protocol (HTTP-JSON, HTTP-binary, gRPC).

    Bounded by ``requests`` per protocol and ``budget_s`` overall; returns the measured ms per call.
    One client, one request at a time: a first look, not the protocol lab's benchmark.
    """
    import tritonclient.grpc as grpcclient
    import tritonclient.http as httpclient

    array = demo_input(image)
    times: dict[str, list[float]] = {"http-json": [], "http-binary": [], "grpc": []}
    http = httpclient.InferenceServerClient(endpoint.http_url)
    grpc = grpcclient.InferenceServerClient(endpoint.grpc_url)
    deadline = time.perf_counter() + budget_s
    try:
        for _ in range(requests):
            for kind in times:
                if time.perf_counter() > deadline:
                    return times
                if kind == "grpc":
                    client, lib, binary = grpc, grpcclient, None
                else:
                    client, lib, binary = http, httpclient, kind == "http-binary"
                inp = lib.InferInput("input_image", list(array.shape), "FP32")
                if binary is None:
                    inp.set_data_from_numpy(array)
                    out = lib.InferRequestedOutput("output_label")
                else:
                    inp.set_data_from_numpy(array, binary_data=binary)
                    out = lib.InferRequestedOutput("output_label", binary_data=binary)
                t0 = time.perf_counter()
                client.infer("ensemble_pipeline", inputs=[inp], outputs=[out])
                times[kind].append((time.perf_counter() - t0) * 1000)
    finally:
        http.close()
        grpc.close()
    return times
