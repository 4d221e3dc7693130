"""Charts more than one page draws."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from ui.state import t


def token_arrivals(runs, names: list[str] | None = None, show_tokens: bool = False, height: int = 260) -> None:
    """When each streamed token arrived (one step line per run), as measured by triton_kitchen.demo."""
    fig = go.Figure()
    for i, run in enumerate(runs):
        fig.add_trace(
            go.Scatter(
                x=run.arrivals_ms,
                y=list(range(1, len(run.tokens) + 1)),
                mode="lines+markers+text" if show_tokens else "lines+markers",
                text=run.tokens if show_tokens else None,
                textposition="top center",
                name=names[i] if names else None,
                line_shape="hv",
            )
        )
    fig.update_layout(
        height=height,
        xaxis_title=t("ch5.arrival_ms"),
        yaxis_title=t("ch5.token_n"),
        margin=dict(l=10, r=10, t=10, b=10),
        showlegend=bool(names),
    )
    st.plotly_chart(fig, width="stretch", config={"displayModeBar": False})
