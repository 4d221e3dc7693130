"""Chapter 7's demo: the tutorial's client code run against an Endpoint, and chapter 8's quick protocol check.

The tutorial function is kept as it is written in the lesson (``ensemble_pipeline``, ``input_image``,
``output_label``); :func:`run_tutorial` runs it over HTTP or gRPC and times each call. Deliberate
mistakes (wrong tensor name, data type, shape) can be switched on to show Triton's own messages.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from triton_kitchen.core.catalog import ENSEMBLE_PIPELINE
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.samples import image_tensor, imagenet_labels

# -- the tutorial's client ---------------------------------------------------------------------
MISTAKES = ("none", "tensor_name", "dtype", "shape", "dead_server")


def tutorial_infer(
    client_type: str,
    url: str,
    image: np.ndarray,
    model_name: str = ENSEMBLE_PIPELINE,
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

    def output_kind(self) -> str | None:
        """What ``output_label`` turned out to hold: ``probabilities`` (summing to 1, none certain), ``one_hot``
        (one 1, the rest 0) or ``other``; None when the call failed."""
        if not self.ok:
            return None
        if abs(self.prob_sum - 1.0) > 1e-3:
            return "other"
        return "one_hot" if self.top_prob >= 1.0 - 1e-6 else "probabilities"


def demo_input(image: bytes | None, seed: int = 0) -> np.ndarray:
    """A photo preprocessed to FP32 [1, 3, 224, 224], or the tutorial's uniform noise when None."""
    if image is None:
        return np.random.default_rng(seed).random((1, 3, 224, 224), dtype=np.float32)
    return image_tensor(image)


def run_tutorial(
    endpoint: Endpoint, protocol: str, image: bytes | None = None, mistake: str = "none", seed: int = 0
) -> DemoRun:
    """Run the tutorial client over ``protocol`` ("http" or "grpc"), optionally with a deliberate mistake."""
    from tritonclient.utils import InferenceServerException

    from triton_kitchen.core.classify import error_code
    from triton_kitchen.core.server import free_port

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


# -- a quick, bounded protocol check (chapter 8) ------------------------------------------------
def quick_protocol_check(
    endpoint: Endpoint, image: bytes | None = None, requests: int = 20, budget_s: float = 6.0
) -> dict[str, list[float]]:
    """Sequential round trips of the tutorial request per protocol (HTTP-JSON, HTTP-binary, gRPC).

    Bounded by ``requests`` per protocol and ``budget_s`` overall; returns the measured ms per call.
    One client, one request at a time: a first look, not the protocol lab's benchmark. Each call is
    encoded anew and timed whole (encode, send, decode), as a client's ``infer()`` would pay it.
    """
    from triton_kitchen.tools.protocols.call import PROTOCOLS, Caller

    arrays = {"input_image": demo_input(image)}
    callers = {
        p: Caller(endpoint, p, ENSEMBLE_PIPELINE, arrays, output_names=["output_label"], reuse_request=False)
        for p in PROTOCOLS
    }
    times: dict[str, list[float]] = {p: [] for p in PROTOCOLS}
    deadline = time.perf_counter() + budget_s
    try:
        for _ in range(requests):
            for protocol, caller in callers.items():
                if time.perf_counter() > deadline:
                    return times
                t0 = time.perf_counter()
                caller.call()
                times[protocol].append((time.perf_counter() - t0) * 1000)
    finally:
        for caller in callers.values():
            caller.close()
    return times


GRPC_CLAIM = 2.0  # the tutorial's "gRPC is 2-5x faster"


def speed_outcome(times: dict[str, list[float]]) -> str | None:
    """What :func:`quick_protocol_check` showed of the tutorial's claim, from the median round trips of
    HTTP-binary and gRPC: ``grpc_2x`` (gRPC at least twice as fast), ``http_2x`` (HTTP-binary at least twice
    as fast) or ``close``; None when either protocol got no answer."""
    import statistics

    if not times.get("grpc") or not times.get("http-binary"):
        return None
    ratio = statistics.median(times["http-binary"]) / statistics.median(times["grpc"])
    return "grpc_2x" if ratio >= GRPC_CLAIM else "http_2x" if ratio <= 1 / GRPC_CLAIM else "close"
