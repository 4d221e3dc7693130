"""Chapter 6: the decision guide, the protocol lab, and the same tokens streamed over SSE and gRPC."""

from __future__ import annotations

import numpy as np
import streamlit as st

from triton_kitchen.core.catalog import ENSEMBLE_PIPELINE
from triton_kitchen.tools.protocols import ProtocolError, sample_inputs
from triton_kitchen.tools.protocols.shm import compare_with_socket
from triton_kitchen.tools.protocols.streaming import first_token_outcome, stream_grpc, stream_sse
from ui import errors, i18n, predict, server, tables
from ui.charts import token_arrivals
from ui.i18n import t
from ui.lesson import page_link, render_lesson

SHM_MODEL = ENSEMBLE_PIPELINE  # a 602,112-byte input tensor


def to_lab() -> None:
    page_link("views/lab_protocols.py", "ch6.to_protocol_lab")


def sse_vs_grpc() -> None:
    st.subheader(t("ch6.stream_title"))
    text = st.text_input(
        t("ch5.stream_text"),
        value=i18n.default_text("ch6_text", "ch5.stream_default"),
        key="ch6_text",
        persist_state="session",
        max_chars=400,
    )
    ep = server.endpoint()
    options = {k: t(f"ch6.first_{k}") for k in ("sse", "same", "grpc")}
    predict.ask("ch6_first", t("ch6.first_predict"), options)
    if server.run_button(
        t("ch6.stream_run"), key="ch6_run", type="primary", disabled=ep is None or not text.strip()
    ):
        predict.lock("ch6_first")
        st.session_state["ch6_runs"] = [stream_sse(ep, text, 40), stream_grpc(ep, text, 40)]
    runs = st.session_state.get("ch6_runs")
    if not runs:
        return
    for run in runs:
        if run.error:
            errors.show_error("server_error", detail=run.error)
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


def fastest_windows() -> None:
    ep = server.endpoint()
    if ep is None or not ep.embedded:  # a remote server cannot map this machine's memory
        st.caption(t("shm_view.local_only"))
        return
    options = {k: t(f"ch6.shm_{k}") for k in ("shm_faster", "similar", "shm_slower")}
    predict.ask("ch6_shm", t("ch6.shm_predict"), options)
    if st.button(t("ch6.shm_run"), key="ch6_shm_run", type="primary"):
        predict.lock("ch6_shm")
        try:
            with st.spinner(t("ch6.shm_running")):
                arrays = sample_inputs(ep, SHM_MODEL, "grpc")[1]
                result = server.lab_run(1, lambda: compare_with_socket(ep, SHM_MODEL, arrays, "grpc"))
            if result is not server.BUSY:
                st.session_state["ch6_shm_result"] = result
        except ProtocolError as exc:
            st.session_state.pop("ch6_shm_result", None)
            errors.show_error(exc)
    result = st.session_state.get("ch6_shm_result")
    if result is None or result.outcome() is None:
        return
    tables.show(
        [
            {
                t("ch6.col_window"): t(f"ch6.window_{way}"),
                t("ch6.col_median_ms"): float(np.median(ms)),
                t("ch6.col_socket_bytes"): size,
            }
            for way, ms, size in (
                ("socket", result.socket_ms, result.socket_request_bytes),
                ("shm", result.shm_ms, result.shm_request_bytes),
            )
        ]
    )
    predict.reveal(
        "ch6_shm",
        options,
        result.outcome(),
        t(
            "ch6.shm_detail",
            ratio=f"{result.ratio():.2f}",
            n=len(result.shm_ms),
            moved=f"{result.shm_bytes:,}",
        ),
    )


render_lesson(6, live={"measure": to_lab, "sse": sse_vs_grpc, "shm": fastest_windows})
