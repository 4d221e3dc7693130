"""Triton's Prometheus metrics (the metrics port, 8002): what the server counts, per model and per GPU.

Per model: requests that succeeded and failed, inferences vs executions (their ratio is the average batch),
requests pending in the queue now, and cumulative queue and compute durations. Per GPU (a GPU server with GPU
metrics on): utilisation and memory. Parsed with ``prometheus_client``'s own text parser.
"""

from __future__ import annotations

import http.client
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from triton_kitchen.core.endpoint import DEFAULT_PORTS, Endpoint, split_host_port
from triton_kitchen.core.errors import KitchenError

# Triton's metric name -> our field
MODEL_COUNTERS = {
    "nv_inference_request_success": "success",
    "nv_inference_request_failure": "failure",
    "nv_inference_count": "inferences",
    "nv_inference_exec_count": "executions",
    "nv_inference_pending_request_count": "pending",
    "nv_inference_request_duration_us": "request_us",
    "nv_inference_queue_duration_us": "queue_us",
    "nv_inference_compute_input_duration_us": "compute_input_us",
    "nv_inference_compute_infer_duration_us": "compute_infer_us",
    "nv_inference_compute_output_duration_us": "compute_output_us",
}
GPU_GAUGES = {
    "nv_gpu_utilization": "utilization",
    "nv_gpu_memory_used_bytes": "memory_used_bytes",
    "nv_gpu_memory_total_bytes": "memory_total_bytes",
}


class MetricsError(KitchenError):
    """Nothing answered on the metrics port (``metrics_unreachable``), or it did not answer with metrics."""

    default_code = "metrics_unreachable"


@dataclass
class ModelMetrics:
    success: float = 0.0
    failure: float = 0.0
    inferences: float = 0.0
    executions: float = 0.0
    pending: float = 0.0  # a gauge: requests waiting now
    request_us: float = 0.0
    queue_us: float = 0.0
    compute_input_us: float = 0.0
    compute_infer_us: float = 0.0
    compute_output_us: float = 0.0

    @property
    def mean_batch(self) -> float | None:
        return self.inferences / self.executions if self.executions else None

    def per_request_ms(self, name: str) -> float | None:
        return getattr(self, name) / self.success / 1000 if self.success else None


@dataclass
class ServerMetrics:
    models: dict[str, ModelMetrics] = field(default_factory=dict)
    gpus: dict[str, dict[str, float]] = field(default_factory=dict)  # gpu uuid -> utilization, memory


def parse(text: str) -> ServerMetrics:
    """Prometheus text -> per-model counters (versions summed) and per-GPU gauges."""
    out = ServerMetrics()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            # counters arrive as <name>_total in newer parsers; Triton's own names have no suffix
            name = sample.name.removesuffix("_total")
            if name in MODEL_COUNTERS and "model" in sample.labels:
                model = out.models.setdefault(sample.labels["model"], ModelMetrics())
                key = MODEL_COUNTERS[name]
                setattr(model, key, getattr(model, key) + float(sample.value))
            elif name in GPU_GAUGES:
                gpu = out.gpus.setdefault(sample.labels.get("gpu_uuid", "gpu"), {})
                gpu[GPU_GAUGES[name]] = float(sample.value)
    return out


def address_of(endpoint: Endpoint) -> str:
    """Where ``endpoint``'s metrics are: the embedded server's own port, else the HTTP host on Triton's 8002."""
    if endpoint.metrics_url:
        return endpoint.metrics_url
    return f"{endpoint.http_url.rsplit(':', 1)[0]}:{DEFAULT_PORTS['metrics']}"


def fetch(metrics_url: str, timeout: float = 2.0) -> str:
    """GET ``http://<metrics_url>/metrics``: Prometheus text."""
    try:
        host, port = split_host_port(metrics_url)
    except ValueError as exc:
        raise MetricsError("metrics_unreachable", str(exc)) from exc
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", "/metrics")
        resp = conn.getresponse()
        body = resp.read().decode(errors="replace")
    except (OSError, http.client.HTTPException) as exc:
        raise MetricsError(
            "metrics_unreachable", f"{metrics_url}/metrics: {type(exc).__name__}: {exc}"
        ) from exc
    finally:
        conn.close()
    if resp.status != 200:
        raise MetricsError("metrics_unreachable", f"{metrics_url}/metrics: HTTP {resp.status}")
    return body


def scrape(metrics_url: str, timeout: float = 2.0) -> ServerMetrics:
    """GET ``http://<metrics_url>/metrics`` and parse it."""
    return parse(fetch(metrics_url, timeout))


def model_lines(text: str, model: str, names: tuple[str, ...] = tuple(MODEL_COUNTERS)) -> list[str]:
    """The sample lines of ``text`` for ``model`` (metric names in ``names``), as the server wrote them."""
    tag = f'model="{model}"'
    return [
        line
        for line in text.splitlines()
        if tag in line and not line.startswith("#") and line.split("{", 1)[0] in names
    ]


def delta(before: ServerMetrics, after: ServerMetrics) -> dict[str, ModelMetrics]:
    """Counters' change per model between two scrapes (``pending`` is the later value: it is a gauge)."""
    out = {}
    for name, a in after.models.items():
        b = before.models.get(name, ModelMetrics())
        d = ModelMetrics(**{k: getattr(a, k) - getattr(b, k) for k in ModelMetrics.__dataclass_fields__})
        d.pending = a.pending
        out[name] = d
    return out
