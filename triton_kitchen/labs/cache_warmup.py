"""Chapter 10's response cache and warm-up drills, on two models loaded for them (no other chapter calls them).

- :func:`same_request_twice`: ``cache_drill`` (``response_cache { enable: true }``, 40 ms of work per run) gets
  one new request, the same request again, then the request with one number changed; Triton's statistics say
  which were cache hits and how often the model ran.
- :func:`cache_refusals`: Triton is asked to load ``cache_drill`` with the cache and, beside it, a sequence
  batcher or a decoupled transaction policy; it refuses both (the old copy keeps serving). Triton's answer to the
  load is only "failed to poll from model repository": the reason is in its log, read where the log is ours.
- :func:`first_requests`: ``warmup_drill`` (its first execute waits 500 ms) is unloaded and loaded twice, once as
  it is and once with a ``model_warmup`` override; each load and the two requests after it are timed.

Each result's ``outcome()`` is what the student predicted, decided from the measurement.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import tritonclient.http as httpclient

from triton_kitchen.core import kserve
from triton_kitchen.core.catalog import CACHE_DRILL, WARMUP_DRILL
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.errors import KitchenError
from triton_kitchen.core.load_refusal import logged_reason, triton_text
from triton_kitchen.core.on_demand import ensure_loaded

WORK_MS = 40.0  # cache_drill's model.py: WORK_S
COLD_START_MS = 500.0  # warmup_drill's model.py: COLD_START_S
REQUEST_TIMEOUT_S = 10.0
LOAD_TIMEOUT_S = 60.0

# the warm-up sample added to warmup_drill's config: one request of zeros, run on each instance before it is ready
WARMUP = [
    {
        "name": "zeros",
        "batch_size": 1,
        "inputs": {"x": {"data_type": "TYPE_FP32", "dims": [4], "zero_data": True}},
    }
]
REFUSED_WITH_CACHE = {
    "sequence": {"sequence_batching": {}},
    "decoupled": {"model_transaction_policy": {"decoupled": True}},
}

_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


class DrillError(KitchenError):
    """A drill could not run: ``busy`` (another learner's warm-up drill is reloading the model), ``load_failed``
    (Triton refused a load it should take; its words in the detail), ``no_control_api``, ``infer_failed``."""

    source = "drill"
    default_code = "load_failed"


def _infer(client: httpclient.InferenceServerClient, model: str, x: np.ndarray) -> float:
    """One request; its wall time in ms."""
    tensor = httpclient.InferInput("x", [4], "FP32")
    tensor.set_data_from_numpy(x.astype(np.float32))
    start = time.perf_counter()
    try:
        client.infer(model, [tensor])
    except httpclient.InferenceServerException as exc:
        raise DrillError("infer_failed", exc.message() or str(exc)) from exc
    return (time.perf_counter() - start) * 1000


def _cache_counts(endpoint: Endpoint, model: str) -> dict[str, int]:
    """cache hits, cache misses, executions and the time of the hits' lookups (ns), as Triton counts them."""
    stats = kserve.statistics(endpoint, model)["model_stats"][0]
    inf = stats.get("inference_stats", {})
    return {
        "hits": int(inf.get("cache_hit", {}).get("count", 0)),
        "hit_ns": int(inf.get("cache_hit", {}).get("ns", 0)),
        "misses": int(inf.get("cache_miss", {}).get("count", 0)),
        "executions": int(stats.get("execution_count", 0)),
    }


@dataclass
class CacheResult:
    first_ms: float  # a request the cache has never seen
    second_ms: float  # the very same request again
    changed_ms: float  # the same request with one number changed
    hits: int  # Triton's statistics, deltas over the three requests (other learners' requests count too)
    misses: int
    executions: int
    lookup_us: float | None  # the mean time of a hit's lookup, from the statistics

    def outcome(self) -> str:
        """``from_cache`` when Triton counted a hit and the repeat took under half the first's time, or ``ran_again``."""
        return "from_cache" if self.hits >= 1 and self.second_ms < self.first_ms / 2 else "ran_again"


WARM_REQUESTS = 2  # sent before the cache drill's three, not shown


def _counted(endpoint: Endpoint, model: str, since: dict, lookups: int, timeout_s: float = 2.0) -> dict:
    """The cache counts once ``lookups`` more than ``since`` are counted (Triton counts a request a moment after
    its response has left), or after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        now = _cache_counts(endpoint, model)
        if (
            now["hits"] + now["misses"] - since["hits"] - since["misses"] >= lookups
            or time.monotonic() > deadline
        ):
            return now
        time.sleep(0.05)


def same_request_twice(endpoint: Endpoint, model: str = CACHE_DRILL) -> CacheResult:
    """A new request (random numbers: no learner has sent it before), the same again, then one number changed."""
    ensure_loaded(endpoint, model)  # loaded on first use, not at the server's start
    rng = np.random.default_rng()
    x = rng.random(4, dtype=np.float32)
    changed = x.copy()
    changed[0] += 1.0
    with httpclient.InferenceServerClient(endpoint.http_url, network_timeout=REQUEST_TIMEOUT_S) as client:
        # a fresh stub's first requests are slow (a model just loaded, on first use or after a restart: the first
        # took 76-488 ms for this 40 ms model, the second up to 70): two requests of other numbers first, outside
        # the times and counts shown
        warm_from = _cache_counts(endpoint, model)
        for _ in range(WARM_REQUESTS):
            _infer(client, model, rng.random(4, dtype=np.float32) + 2.0)
        before = _counted(endpoint, model, warm_from, WARM_REQUESTS)
        first = _infer(client, model, x)
        second = _infer(client, model, x)
        third = _infer(client, model, changed)
    after = _counted(endpoint, model, before, 3)
    hits = after["hits"] - before["hits"]
    hit_ns = after["hit_ns"] - before["hit_ns"]
    return CacheResult(
        first,
        second,
        third,
        hits,
        after["misses"] - before["misses"],
        after["executions"] - before["executions"],
        hit_ns / hits / 1000 if hits else None,
    )


@dataclass
class Refusal:
    case: str  # "sequence" or "decoupled"
    answer: str  # Triton's answer to the load request
    logged: str = ""  # the reason it wrote in its log ("" where the log is not ours)
    still_serving: bool = False  # the old copy answered a request after the refusal


def cache_refusals(
    endpoint: Endpoint, log: Callable[[], str] | None = None, model: str = CACHE_DRILL
) -> list[Refusal]:
    """Ask Triton to load ``model`` (the cache on) with a sequence batcher, then with decoupled responses; what it
    said each time, and whether the loaded copy still answered afterwards. ``log`` reads the server's log."""
    ensure_loaded(endpoint, model)  # loaded on first use, not at the server's start
    try:
        base = kserve.model_config(endpoint, model)
    except kserve.KServeError as exc:
        raise DrillError("load_failed", f"{model}: {exc.detail}") from exc
    out = []
    for case, extra in REFUSED_WITH_CACHE.items():
        cfg = copy.deepcopy(base)
        cfg.update(copy.deepcopy(extra))
        cfg["response_cache"] = {"enable": True}
        before = log() if log else ""
        try:
            kserve.load_model(endpoint, model, config=cfg, timeout=LOAD_TIMEOUT_S)
        except kserve.KServeError as exc:
            if exc.code == "no_control_api":
                raise DrillError("no_control_api", exc.detail) from exc
            refusal = Refusal(case, triton_text(exc.detail), logged_reason(before, log()) if log else "")
        else:  # Triton took it: put the model back as it was, and say so
            kserve.load_model(endpoint, model, config=base, timeout=LOAD_TIMEOUT_S)
            refusal = Refusal(case, "")
        with httpclient.InferenceServerClient(endpoint.http_url, network_timeout=REQUEST_TIMEOUT_S) as client:
            try:
                _infer(client, model, np.zeros(4, dtype=np.float32))
                refusal.still_serving = True
            except DrillError:
                refusal.still_serving = False
        out.append(refusal)
    return out


@dataclass
class Load:
    warmup: bool
    load_ms: float  # the load request, from sent to answered: the model is ready when it returns
    first_ms: float  # the first request after the load
    second_ms: float


@dataclass
class WarmupResult:
    loads: list[Load] = field(default_factory=list)

    def way(self, warmup: bool) -> Load:
        return next(x for x in self.loads if x.warmup is warmup)

    def outcome(self) -> str:
        """``moved`` when the first request after the warmed load took under a third of the cold one's (the wait
        moved into the load), else ``same``."""
        cold, warm = self.way(False), self.way(True)
        return "moved" if warm.first_ms < cold.first_ms / 3 else "same"


def _lock(endpoint: Endpoint) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(endpoint.http_url, threading.Lock())


def _reload(endpoint: Endpoint, model: str, cfg: dict) -> float:
    """Unload ``model``, then load it with ``cfg`` (a fresh copy, never a reload beside the old one); load ms."""
    try:
        kserve.unload_model(endpoint, model)
        start = time.perf_counter()
        kserve.load_model(endpoint, model, config=cfg, timeout=LOAD_TIMEOUT_S)
        return (time.perf_counter() - start) * 1000
    except kserve.KServeError as exc:
        code = "no_control_api" if exc.code == "no_control_api" else "load_failed"
        raise DrillError(code, f"{model}: {exc.detail}") from exc


def first_requests(endpoint: Endpoint, model: str = WARMUP_DRILL) -> WarmupResult:
    """Load ``model`` fresh without and then with ``model_warmup``, timing each load and the first two requests
    after it; leaves it loaded as config.pbtxt says. One run per server at a time (``busy`` otherwise)."""
    lock = _lock(endpoint)
    if not lock.acquire(blocking=False):
        raise DrillError("busy", f"another warm-up drill is reloading {model}")
    try:
        ensure_loaded(endpoint, model)  # loaded on first use: its loaded config is the drill's base
        try:
            base = kserve.model_config(endpoint, model)
        except kserve.KServeError as exc:
            raise DrillError("load_failed", f"{model}: {exc.detail}") from exc
        base.pop("model_warmup", None)
        warm = copy.deepcopy(base)
        warm["model_warmup"] = copy.deepcopy(WARMUP)
        result = WarmupResult()
        x = np.ones(4, dtype=np.float32)
        try:
            for warmup, cfg in ((False, base), (True, warm)):
                load_ms = _reload(endpoint, model, cfg)
                with httpclient.InferenceServerClient(
                    endpoint.http_url, network_timeout=REQUEST_TIMEOUT_S
                ) as client:
                    first = _infer(client, model, x)
                    second = _infer(client, model, x)
                result.loads.append(Load(warmup, load_ms, first, second))
        finally:
            try:  # as config.pbtxt has it: a load without a config would keep the last override (2.51)
                kserve.load_model(endpoint, model, config=base, timeout=LOAD_TIMEOUT_S)
            except kserve.KServeError:
                pass
        return result
    finally:
        lock.release()
