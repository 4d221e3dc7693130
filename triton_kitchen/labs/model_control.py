"""Chapter 10's model-control experiment: change a model while requests keep arriving, and count what they got.

Two ways to change ``hflip`` (a small model of its own: only ``tta_ensemble`` calls it) in explicit mode:

- ``reload``: one load with a config override (two instances instead of one). Triton loads the new copy
  beside the old one and switches when it is ready: the old one answers meanwhile.
- ``unload_load``: unload, then load. Between the two, the model is gone: Triton refuses its requests
  (``Request for unknown model``).

A few client threads call the model without pause from before the change until after it; each request is
recorded with its start, end and Triton's error text. The original config is restored afterwards
(:func:`override.overridden`, which also keeps two experiments off the same server at once).
"""

from __future__ import annotations

import copy
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import tritonclient.grpc as grpcclient

from triton_kitchen.core import kserve, override
from triton_kitchen.core.catalog import HFLIP
from triton_kitchen.core.endpoint import Endpoint

MODEL = HFLIP
WAYS = ("reload", "unload_load")
CLIENTS = 3
BEFORE_S = 0.5  # requests flowing before the change...
AFTER_S = 0.5  # ...and after it returned
REQUEST_TIMEOUT_S = 10.0


@dataclass
class Request:
    start_s: float  # from the experiment's start
    end_s: float
    error: str = ""  # Triton's text; empty when answered

    @property
    def ok(self) -> bool:
        return not self.error


@dataclass
class ControlResult:
    way: str
    model: str
    change_start_s: float = 0.0
    change_end_s: float = 0.0
    requests: list[Request] = field(default_factory=list)

    @property
    def answered(self) -> int:
        return sum(1 for r in self.requests if r.ok)

    @property
    def refused(self) -> int:
        return len(self.requests) - self.answered

    @property
    def change_ms(self) -> float:
        return (self.change_end_s - self.change_start_s) * 1000

    def errors(self) -> dict[str, int]:
        return dict(Counter(r.error for r in self.requests if r.error).most_common())

    def refused_window_ms(self) -> float:
        """From the first refused request's start to the last one's end (0 when none was refused)."""
        bad = [r for r in self.requests if not r.ok]
        return (max(r.end_s for r in bad) - min(r.start_s for r in bad)) * 1000 if bad else 0.0

    def longest_ms(self) -> float | None:
        done = [(r.end_s - r.start_s) * 1000 for r in self.requests if r.ok]
        return max(done) if done else None

    def outcome(self) -> str:
        """``all_answered`` or ``some_refused``: what the student predicts."""
        return "some_refused" if self.refused else "all_answered"


def two_instances(base: dict) -> dict:
    """``base`` with two CPU instances instead of its instance group: a real change, so the load reloads."""
    cfg = copy.deepcopy(base)
    cfg["instance_group"] = [{"kind": "KIND_CPU", "count": 2}]
    return cfg


def _caller(endpoint: Endpoint, model: str, t0: float, out: list[Request], lock, stop) -> Callable[[], None]:
    image = np.random.default_rng(0).random((1, 3, 224, 224), dtype=np.float32)

    def loop() -> None:
        client = grpcclient.InferenceServerClient(endpoint.grpc_url)
        try:
            while not stop.is_set():
                tensor = grpcclient.InferInput("image", list(image.shape), "FP32")
                tensor.set_data_from_numpy(image)
                start = time.perf_counter() - t0
                try:
                    client.infer(model, [tensor], client_timeout=REQUEST_TIMEOUT_S)
                    error = ""
                except grpcclient.InferenceServerException as exc:
                    error = exc.message() or str(exc)
                with lock:
                    out.append(Request(start, time.perf_counter() - t0, error))
                if error:
                    time.sleep(0.005)  # a refusal comes back at once: do not spin
        finally:
            client.close()

    return loop


def change_under_load(
    endpoint: Endpoint, way: str, model: str = MODEL, clients: int = CLIENTS
) -> ControlResult:
    """Change ``model`` the ``way`` named while ``clients`` threads call it; restore its config afterwards.
    Raises override.BatchingError (busy, no control API, a refused load)."""
    if way not in WAYS:
        raise override.BatchingError(f"way must be one of {', '.join(WAYS)}", "bad_settings")
    result = ControlResult(way, model)
    lock = threading.Lock()
    stop = threading.Event()
    with override.overridden(endpoint, model) as original:
        t0 = time.perf_counter()
        threads = [
            threading.Thread(target=_caller(endpoint, model, t0, result.requests, lock, stop), daemon=True)
            for _ in range(clients)
        ]
        for th in threads:
            th.start()
        try:
            time.sleep(BEFORE_S)
            result.change_start_s = time.perf_counter() - t0
            if way == "reload":
                override.load_model(endpoint, model, two_instances(original))
            else:
                try:
                    kserve.unload_model(endpoint, model)
                except kserve.KServeError as exc:
                    code = "no_control_api" if exc.code == "no_control_api" else "load_failed"
                    raise override.BatchingError(f"unload {model}: {exc.detail}", code) from exc
                override.load_model(endpoint, model)
            result.change_end_s = time.perf_counter() - t0
            time.sleep(AFTER_S)
        finally:
            stop.set()
            for th in threads:
                th.join(timeout=REQUEST_TIMEOUT_S)
    with lock:  # a new list: a thread that outlived its join appends to the old one, not to the result
        result.requests = sorted(result.requests, key=lambda r: r.start_s)
    return result
