"""The few numbers of a lab run kept for the class (the teacher's chart), from the labs' own results."""

from __future__ import annotations

from typing import Any


def protocol_run(result: Any) -> dict:
    """One load run of the protocol lab (a ``bench.BenchResult``)."""
    return {
        "protocol": result.protocol,
        "model": result.model,
        "concurrency": int(result.concurrency),
        "throughput_rps": round(float(result.throughput_rps), 2),
        "p50_ms": result.latency_ms.get("p50"),
        "p99_ms": result.latency_ms.get("p99"),
        "errors": int(result.errors),
    }


def protocol_compare(comparison: Any) -> dict:
    """One "same input, three ways" run of the protocol lab (a ``protocols.Comparison``): per protocol the median
    latency of its calls and the bytes each call put on the network."""
    return {
        "model": comparison.model,
        "same_result": bool(comparison.same_result),
        "protocols": {
            r["protocol"]: {
                "median_ms": r["latency_ms_median"],
                "request_bytes": int(r["request_bytes"]),
                "wire_sent_per_call": round(float(r["wire_sent_per_call"])),
            }
            for r in comparison.to_dicts()
        },
    }


def batching_run(result: dict) -> dict:
    """One comparison of the batching lab (``batching.compare_batching``: dynamic batching off vs on)."""
    off, on = result["off"], result["on"]
    return {
        "concurrency": int(result.get("concurrency") or on.concurrency),
        "rps_off": round(float(off.throughput_rps), 2),
        "rps_on": round(float(on.throughput_rps), 2),
        "ratio": round(float(result["throughput_ratio"]), 3) if result.get("throughput_ratio") else None,
        "p50_off_ms": off.latency_ms.get("p50"),
        "p50_on_ms": on.latency_ms.get("p50"),
        "delay_us": int(on.settings.max_queue_delay_us),
        "instances": int(on.settings.instance_count),
    }
