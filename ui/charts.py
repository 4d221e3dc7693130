"""Charts more than one page draws."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from ui.i18n import t


def token_arrivals(
    runs,
    names: list[str] | None = None,
    show_tokens: bool = False,
    height: int = 260,
    colors: list[str] | None = None,
    key: str | None = None,
) -> None:
    """When each streamed token arrived (one step line per run): ``runs`` are
    :class:`triton_kitchen.tools.protocols.streaming.StreamRun` (``tokens``, ``arrivals_ms``)."""
    st.plotly_chart(
        token_figure(runs, names, show_tokens, height, colors),
        width="stretch",
        config={"displayModeBar": False},
        key=key,
    )


def token_figure(
    runs,
    names: list[str] | None = None,
    show_tokens: bool = False,
    height: int = 260,
    colors: list[str] | None = None,
) -> go.Figure:
    """The figure of :func:`token_arrivals`. The y axis reaches a word above the last token, so the last
    word's label (drawn above its point) stays inside the plot."""
    fig = go.Figure()
    for i, run in enumerate(runs):
        fig.add_trace(
            go.Scatter(
                x=run.arrivals_ms,
                y=list(range(1, len(run.tokens) + 1)),
                mode="lines+markers+text" if show_tokens else "lines+markers",
                text=run.tokens if show_tokens else None,
                textposition="top center",
                cliponaxis=False,
                name=names[i] if names else None,
                line_shape="hv",
                line=dict(color=colors[i]) if colors else None,
            )
        )
    top = max((len(run.tokens) for run in runs), default=0)
    fig.update_layout(
        height=height,
        xaxis_title=t("ch5.arrival_ms"),
        yaxis_title=t("ch5.token_n"),
        yaxis=dict(range=[0, top + (1.2 if show_tokens else 0.5)]),
        margin=dict(l=10, r=40 if show_tokens else 10, t=10, b=10),  # room for the last word on the right
        showlegend=bool(names),
    )
    return fig
