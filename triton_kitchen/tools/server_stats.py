"""What the server says it did during a measurement: deltas of Triton's statistics API over a window.

Per request, averaged over the window: queue, compute input, compute infer, compute output (Triton's own
split of a request's time inside the server); executions and inferences (so the average batch); and, for an
ensemble, the same for each composing model. Also compute time per batch size (``batch_stats``), which
calibrates the batching simulator. Everything here is *measured* by the server, read through
:mod:`triton_kitchen.core.kserve`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from triton_kitchen.core import kserve
from triton_kitchen.core.endpoint import DEFAULT_PORTS, Endpoint, host_port

PHASES = ("queue", "compute_input", "compute_infer", "compute_output")
# Triton updates a request's statistics just after its answer has left (an ensemble's last of all): read them
# this long after the last answer to count it.
SETTLE_S = 0.2
DEFAULT_HTTP_PORT = DEFAULT_PORTS["http"]

Snapshot = dict[str, dict]  # model name -> its statistics (versions summed)


def _add(into: dict, entry: dict) -> None:
    for key, value in entry.items():
        if isinstance(value, dict):
            _add(into.setdefault(key, {}), value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            into[key] = into.get(key, 0) + value


def _batch_table(entry: dict) -> dict[int, dict]:
    return {int(b["batch_size"]): b for b in entry.get("batch_stats", []) or []}


def snapshot(endpoint: Endpoint | str, timeout: float = kserve.DEFAULT_TIMEOUT_S) -> Snapshot:
    """Every model's statistics now, versions summed (``versions``: each version's inference count); ``batch_stats``
    keyed by batch size."""
    out: Snapshot = {}
    for entry in kserve.statistics(endpoint, timeout=timeout).get("model_stats", []):
        name = entry.get("name", "")
        model = out.setdefault(name, {"inference_stats": {}, "batch": {}})
        _add(model["inference_stats"], entry.get("inference_stats", {}))
        for key in ("execution_count", "inference_count"):
            model[key] = model.get(key, 0) + int(entry.get(key, 0))
        # per version, so that a delta can say which version ran
        model.setdefault("versions", {})[str(entry.get("version", ""))] = int(entry.get("inference_count", 0))
        for size, b in _batch_table(entry).items():
            _add(model["batch"].setdefault(size, {}), {k: v for k, v in b.items() if k != "batch_size"})
    return out


# -- which HTTP address serves the statistics of a gRPC server ---------------------------------------------------
def _identity(stats: dict) -> tuple:
    """What tells one server's statistics from another's: per model and version, its counts and the time of its
    last inference (ms since the epoch). The gRPC API writes the 64-bit numbers as strings and leaves out zeros."""

    def n(value) -> int:
        try:
            return int(value or 0)
        except (TypeError, ValueError):
            return 0

    return tuple(
        sorted(
            (
                str(e.get("name", "")),
                str(e.get("version", "")),
                n(e.get("inference_count")),
                n(e.get("execution_count")),
                n(e.get("last_inference")),
                n((e.get("inference_stats", {}) or {}).get("success", {}).get("count")),
            )
            for e in stats.get("model_stats", []) or []
        )
    )


def _grpc_identity(grpc_url: str, timeout: float) -> tuple | None:
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(grpc_url)
    try:
        return _identity(client.get_inference_statistics(as_json=True, client_timeout=timeout))
    except Exception:  # noqa: BLE001 - refused, unreachable, not Triton: no identity to compare
        return None
    finally:
        client.close()


def _http_identity(address: str, timeout: float) -> tuple | None:
    try:
        return _identity(kserve.statistics(address, timeout=timeout))
    except kserve.KServeError:
        return None


def http_candidates(grpc_url: str) -> list[str]:
    """Where a gRPC server's HTTP port usually is: the port below it (Triton's 8000/8001, ``serve --http-port
    18000 --grpc-port 18001``), then Triton's default 8000 on the same host."""
    host, _, port = grpc_url.rpartition(":")
    out = []
    if host and port.isdigit() and int(port) > 1:
        out.append(f"{host}:{int(port) - 1}")
    out.append(f"{host or grpc_url}:{DEFAULT_HTTP_PORT}")
    return list(dict.fromkeys(out))


def statistics_address(grpc_url: str, candidates: list[str], timeout: float = 3.0) -> str | None:
    """The HTTP ``host:port`` among ``candidates`` whose statistics are those of the server at ``grpc_url`` (the same
    server through its other port): every model's counts and last inference time, read over gRPC and over HTTP,
    agree. None when no candidate is that server (nothing answers there, or another server does): its statistics
    must not stand for this one's. A request that lands between the two reads is allowed for by reading again;
    two servers of one repository that have answered nothing yet look alike, and then the candidates' order decides."""
    first = _grpc_identity(grpc_url, timeout)
    if first is None:
        return None
    for address in candidates:
        seen = _http_identity(address, timeout)
        if seen is not None and (seen == first or seen == _grpc_identity(grpc_url, timeout)):
            return address
    return None


def grpc_statistics_address(grpc_url: str, stats_url: str | None) -> tuple[str, str]:
    """``(address, "")``: the HTTP address whose statistics are those of the gRPC server at ``grpc_url``
    (``stats_url``, else :func:`http_candidates`, each checked by :func:`statistics_address`); or
    ``(a candidate, why)`` when none is that server, so that no statistics are read (they would be another's)."""
    candidates = [host_port(stats_url)] if stats_url else http_candidates(grpc_url)
    found = statistics_address(grpc_url, candidates)
    if found is not None:
        return found, ""
    where = " or ".join(candidates)
    return candidates[0], (
        f"the statistics of the server at {grpc_url} are not at {where} over HTTP (nothing answers there, or "
        "another server does); give its HTTP port with --stats-url"
    )


def _get(stats: dict, *path: str) -> float:
    for key in path:
        stats = stats.get(key, {}) if isinstance(stats, dict) else {}
    return float(stats) if isinstance(stats, (int, float)) else 0.0


@dataclass
class ModelBreakdown:
    """One model's share of a window, per successful request (milliseconds)."""

    requests: int
    failed: int
    executions: int
    inferences: int
    request_ms: float | None  # Triton's whole time per request (its "avg request latency")
    queue_ms: float | None
    compute_input_ms: float | None
    compute_infer_ms: float | None
    compute_output_ms: float | None

    @property
    def mean_batch(self) -> float | None:
        return self.inferences / self.executions if self.executions else None

    @property
    def phases_ms(self) -> float | None:
        parts = [self.queue_ms, self.compute_input_ms, self.compute_infer_ms, self.compute_output_ms]
        return None if any(p is None for p in parts) else sum(parts)  # type: ignore[arg-type]

    @property
    def server_ms(self) -> float | None:
        """Time inside the server per request: Triton's request duration (phases plus its own overhead)."""
        return self.request_ms if self.request_ms is not None else self.phases_ms

    @property
    def overhead_ms(self) -> float | None:
        phases = self.phases_ms
        return None if phases is None or self.request_ms is None else max(0.0, self.request_ms - phases)

    def to_json(self) -> dict:
        out = {k: v for k, v in asdict(self).items() if k.endswith("_ms")}
        out["overhead_ms"] = self.overhead_ms
        out.update(executions=self.executions, inferences=self.inferences, requests=self.requests)
        return out


@dataclass
class Breakdown:
    """The model that was called, and (for an ensemble) each composing model that ran."""

    model: str
    total: ModelBreakdown
    per_model: dict[str, ModelBreakdown] = field(default_factory=dict)

    def to_json(self) -> dict:
        keys = ("queue_ms", "compute_input_ms", "compute_infer_ms", "compute_output_ms", "request_ms")
        out = {k: getattr(self.total, k) for k in keys}
        out["overhead_ms"] = self.total.overhead_ms
        out.update(
            executions=self.total.executions, inferences=self.total.inferences, requests=self.total.requests
        )
        out["per_model"] = {name: m.to_json() for name, m in self.per_model.items()}
        return out


def model_delta(before: Snapshot, after: Snapshot, model: str) -> ModelBreakdown:
    a, b = after.get(model, {}), before.get(model, {})

    def d(*path: str) -> float:
        return _get(a, *path) - _get(b, *path)

    ok = int(d("inference_stats", "success", "count"))

    def per_request(phase: str) -> float | None:
        return d("inference_stats", phase, "ns") / ok / 1e6 if ok else None

    return ModelBreakdown(
        requests=ok,
        failed=int(d("inference_stats", "fail", "count")),
        executions=int(d("execution_count")),
        inferences=int(d("inference_count")),
        request_ms=per_request("success"),
        queue_ms=per_request("queue"),
        compute_input_ms=per_request("compute_input"),
        compute_infer_ms=per_request("compute_infer"),
        compute_output_ms=per_request("compute_output"),
    )


def breakdown(before: Snapshot, after: Snapshot, model: str, composing: list[str] | None = None) -> Breakdown:
    """The window's server-side split for ``model``; ``composing``: the models an ensemble runs (those with
    requests in the window are reported)."""
    per = {}
    for name in composing or []:
        m = model_delta(before, after, name)
        if m.requests or m.failed:
            per[name] = m
    return Breakdown(model, model_delta(before, after, model), per)


def composing_models(
    endpoint: Endpoint | str,
    model: str,
    _seen: set[str] | None = None,
    timeout: float = kserve.DEFAULT_TIMEOUT_S,
) -> list[str]:
    """The models an ensemble runs, nested ensembles expanded (their own names included); [] for a model.
    ``timeout`` bounds each config request."""
    seen = _seen if _seen is not None else set()
    try:
        config = kserve.model_config(endpoint, model, timeout=timeout)
    except kserve.KServeError:
        return []
    names: list[str] = []
    for step in config.get("ensemble_scheduling", {}).get("step", []) or []:
        name = step.get("model_name", "")
        if name and name not in seen:
            seen.add(name)
            names.append(name)
            names.extend(composing_models(endpoint, name, seen, timeout))
    return names


def batch_compute_ms(before: Snapshot, after: Snapshot, model: str) -> dict[int, tuple[int, float]]:
    """Executions per batch size in the window and their mean compute time (input + infer + output, ms)."""
    a = after.get(model, {}).get("batch", {})
    b = before.get(model, {}).get("batch", {})
    out: dict[int, tuple[int, float]] = {}
    for size in sorted(a):
        count = int(_get(a[size], "compute_infer", "count") - _get(b.get(size, {}), "compute_infer", "count"))
        if count <= 0:
            continue
        ns = sum(
            _get(a[size], p, "ns") - _get(b.get(size, {}), p, "ns")
            for p in ("compute_input", "compute_infer", "compute_output")
        )
        out[size] = (count, ns / count / 1e6)
    return out
