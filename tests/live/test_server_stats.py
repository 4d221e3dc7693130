"""The server-side breakdown and the simulator's calibration, against the real embedded server."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import settled

from triton_kitchen.tools import calibration, server_stats
from triton_kitchen.tools.protocols import Caller, sample_inputs


def _calls(ep, model: str, n: int) -> None:
    _, inputs = sample_inputs(ep, model, "grpc")
    caller = Caller(ep, "grpc", model, inputs)
    try:
        for _ in range(n):
            caller.call()
    finally:
        caller.close()


def test_a_window_counts_exactly_its_requests(server):
    ep = server.endpoint
    before = server_stats.snapshot(ep)
    _calls(ep, "classifier", 12)
    after = settled(
        lambda: server_stats.snapshot(ep),
        lambda now: server_stats.model_delta(before, now, "classifier").requests >= 12,
    )
    bd = server_stats.model_delta(before, after, "classifier")
    assert bd.requests == 12 and bd.inferences == 12 and 1 <= bd.executions <= 12
    assert bd.failed == 0
    assert bd.compute_infer_ms > 0 and bd.queue_ms >= 0 and bd.compute_input_ms >= 0
    # Triton's request duration covers its phases; the rest is its own overhead
    assert bd.request_ms >= bd.phases_ms - 1e-6 and bd.overhead_ms >= 0
    sizes = server_stats.batch_compute_ms(before, after, "classifier")
    assert sum(count for count, _ in sizes.values()) == bd.executions


def test_an_ensemble_is_broken_down_per_composing_model(server):
    ep = server.endpoint
    composing = server_stats.composing_models(ep, "image_classifier")
    assert composing == ["preprocess", "classifier", "postprocess"]
    before = server_stats.snapshot(ep)
    _calls(ep, "image_classifier", 5)
    after = settled(  # every composing model counted too
        lambda: server_stats.snapshot(ep),
        lambda now: all(
            server_stats.model_delta(before, now, m).requests >= 5 for m in ["image_classifier", *composing]
        ),
    )
    bd = server_stats.breakdown(before, after, "image_classifier", composing)
    assert bd.total.requests == 5
    assert set(bd.per_model) == {"preprocess", "classifier", "postprocess"}
    assert all(m.requests == 5 for m in bd.per_model.values())
    doc = bd.to_json()
    assert set(doc["per_model"]["classifier"]) >= {
        "queue_ms",
        "compute_input_ms",
        "compute_infer_ms",
        "compute_output_ms",
        "executions",
        "inferences",
    }
    assert server_stats.composing_models(ep, "classifier") == []


def test_calibration_measures_each_batch_size(server):
    cal = calibration.calibrate(
        server.endpoint, "classifier", sizes=(1, 2), duration_s=0.4, use_existing=False
    )
    assert set(cal.batch_ms) == {1, 2} and all(v > 0 for v in cal.batch_ms.values())
    assert cal.sources == {1: "calibration load", 2: "calibration load"}
    assert cal.outside_ms >= 0 and cal.client_ms_at_1 >= cal.server_ms_at_1 * 0.5
    assert cal.config.max_batch_size == 8 and cal.config.dynamic_batching


def test_a_model_that_does_not_batch_is_refused(server):
    with pytest.raises(calibration.CalibrationError) as info:
        calibration.calibrate(server.endpoint, "image_classifier_no_batch_does_not_exist")
    assert info.value.code == "no_statistics"
    with pytest.raises(calibration.CalibrationError) as info:
        calibration.batcher_config({"name": "m", "max_batch_size": 0})
    assert info.value.code == "no_batching"


def test_simulate_cli_prints_one_json_document(server):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "triton_kitchen",
            "simulate",
            "--model",
            "classifier",
            "--url",
            server.http_url,
            "--concurrency",
            "4",
            "--duration",
            "5",
            "--max-queue-delay-us",
            "0",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["kind"] == "simulated"
    assert set(doc) >= {
        "throughput_rps",
        "latency_ms",
        "mean_batch",
        "batch_histogram",
        "queue_ms",
        "calibration",
    }
    assert doc["settings"]["max_queue_delay_us"] == 0 and doc["throughput_rps"] > 0
    assert set(doc["calibration"]) >= {"1", "8"}
