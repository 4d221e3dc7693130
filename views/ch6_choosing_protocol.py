"""Chapter 6: the decision guide, the protocol lab, and the same tokens streamed over SSE and gRPC."""

from __future__ import annotations

import streamlit as st

from triton_kitchen.demo import stream_grpc, stream_sse
from triton_kitchen.protocols.streaming import first_token_outcome
from ui import predict, state
from ui.charts import token_arrivals
from ui.lesson import page_link, render_lesson
from ui.state import t


def to_lab() -> None:
    page_link("views/lab_protocols.py", "ch6.to_protocol_lab")


def sse_vs_grpc() -> None:
    st.subheader(t("ch6.stream_title"))
    text = st.text_input(t("ch5.stream_text"), value=t("ch5.stream_default"), key="ch6_text", max_chars=400)
    ep = state.endpoint()
    options = {k: t(f"ch6.first_{k}") for k in ("sse", "same", "grpc")}
    predict.ask("ch6_first", t("ch6.first_predict"), options)
    if st.button(t("ch6.stream_run"), key="ch6_run", type="primary", disabled=ep is None or not text.strip()):
        predict.lock("ch6_first")
        st.session_state["ch6_runs"] = [stream_sse(ep, text, 40), stream_grpc(ep, text, 40)]
    runs = st.session_state.get("ch6_runs")
    if not runs:
        return
    for run in runs:
        if run.error:
            state.show_error("server_error", run.error)
    token_arrivals(runs, names=[t(f"ch6.transport_{run.transport}") for run in runs], height=280)
    cols = st.columns(len(runs))
    for col, run in zip(cols, runs, strict=True):
        col.metric(
            t(f"ch6.transport_{run.transport}"),
            t("ch6.first_token", ms=run.first_token_ms or 0),
            t("ch6.total", ms=run.total_ms, n=len(run.tokens)),
            delta_color="off",
            delta_arrow="off",
        )
        col.code("".join(run.tokens) or "—", language=None, wrap_lines=True)
    st.caption(t("ch6.stream_caption"))
    outcome = first_token_outcome(*runs)
    if outcome is not None:
        predict.reveal("ch6_first", options, outcome)


render_lesson(6, live={"measure": to_lab, "sse": sse_vs_grpc})
