"""The sweep's plotly trace, shared by the protocol lab and the protocols report (no server)."""

from __future__ import annotations

from types import SimpleNamespace

from triton_kitchen.tools import bench_figures, protocols


def _result(concurrency: int, rps: float, p99: float):
    return SimpleNamespace(concurrency=concurrency, throughput_rps=rps, latency_ms={"p99": p99})


def test_a_sweep_is_p99_against_throughput_labelled_by_concurrency():
    trace = bench_figures.sweep_trace([_result(1, 40.0, 30.0), _result(4, 90.0, 55.0)], "gRPC", "grpc")
    assert list(trace.x) == [40.0, 90.0] and list(trace.y) == [30.0, 55.0]
    assert list(trace.text) == ["c=1", "c=4"] and trace.name == "gRPC"
    assert trace.line.color == bench_figures.PROTOCOL_COLORS["grpc"]
    grouped = bench_figures.sweep_trace(
        [_result(1, 1.0, 1.0)], "grpc", "grpc", legendgroup="grpc", showlegend=False
    )
    assert grouped.legendgroup == "grpc" and grouped.showlegend is False


def test_every_protocol_has_a_colour():
    assert set(protocols.PROTOCOLS) <= set(bench_figures.PROTOCOL_COLORS)
