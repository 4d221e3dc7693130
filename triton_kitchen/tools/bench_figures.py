"""Plotly pieces shared by the protocol lab and the protocols report: one colour per protocol, and a sweep's
p99 latency against throughput, one point per concurrency."""

from __future__ import annotations

import plotly.graph_objects as go

PROTOCOL_COLORS = {
    "http-json": "#d62728",
    "http-binary": "#1f77b4",
    "grpc": "#2ca02c",
    "grpc-stream": "#2ca02c",
    "http-sse": "#ff7f0e",
    "http-shm": "#9467bd",
    "grpc-shm": "#8c564b",
}


def sweep_trace(results, name: str, protocol: str, **extra) -> go.Scatter:
    """One protocol's sweep (``bench.BenchResult``s in concurrency order): p99 against throughput, each point
    labelled with its concurrency. ``extra``: more Scatter settings (legend group, subplots' legend)."""
    return go.Scatter(
        x=[r.throughput_rps for r in results],
        y=[r.latency_ms["p99"] for r in results],
        mode="lines+markers+text",
        text=[f"c={r.concurrency}" for r in results],
        textposition="top center",
        name=name,
        line=dict(color=PROTOCOL_COLORS[protocol]),
        **extra,
    )
