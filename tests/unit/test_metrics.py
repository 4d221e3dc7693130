"""Triton's Prometheus metrics without a server: the parser on hand-written text, nothing on the metrics port.

The tests that need the server, the app or a browser: tests/live/test_metrics_live.py."""

from __future__ import annotations

import pytest

from triton_kitchen.core.server import free_port
from triton_kitchen.tools import metrics

SAMPLE = """# HELP nv_inference_count Number of inferences performed
# TYPE nv_inference_count counter
nv_inference_count{model="classifier",version="1"} 12
nv_inference_exec_count{model="classifier",version="1"} 4
nv_inference_request_success{model="classifier",version="1"} 12
nv_inference_pending_request_count{model="classifier",version="1"} 3
nv_gpu_utilization{gpu_uuid="GPU-1"} 0.5
nv_gpu_memory_used_bytes{gpu_uuid="GPU-1"} 1000
"""


def test_parse_by_hand():
    m = metrics.parse(SAMPLE)
    c = m.models["classifier"]
    assert (c.inferences, c.executions, c.success, c.pending) == (12, 4, 12, 3)
    assert c.mean_batch == 3
    assert m.gpus == {"GPU-1": {"utilization": 0.5, "memory_used_bytes": 1000}}


def test_nothing_on_the_metrics_port_is_a_clear_error():
    with pytest.raises(metrics.MetricsError) as info:
        metrics.scrape(f"127.0.0.1:{free_port()}", timeout=0.5)
    assert info.value.code == "metrics_unreachable"
