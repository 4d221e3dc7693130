"""Chapter 5: the gRPC ModelInferRequest for the current photo, its size, and streaming."""

from __future__ import annotations

import streamlit as st

from triton_kitchen.core.catalog import ENSEMBLE_PIPELINE, IMAGE_CLASSIFIER
from triton_kitchen.labs import requests_view as rv
from triton_kitchen.tools.protocols.streaming import stream_grpc
from ui import errors, i18n, predict, server, tables
from ui.charts import token_arrivals
from ui.i18n import t
from ui.image_picker import pick_image
from ui.lesson import render_lesson
from ui.shm_view import shm_viewer


def message_viewer() -> None:
    st.subheader(t("ch5.viewer_title"))
    model = st.radio(
        t("classify.model"),
        [ENSEMBLE_PIPELINE, IMAGE_CLASSIFIER],
        horizontal=True,
        key="ch5_model",
        persist_state="session",
    )
    image = pick_image("ch5")
    if image is None:
        st.info(t("classify.pick_first"))
        return
    try:
        inputs = rv.request_inputs(model, image)
        view = rv.grpc_request(model, inputs, rv.request_outputs(model))
        http = rv.http_request(model, inputs, rv.request_outputs(model))
    except Exception as exc:  # noqa: BLE001 - a bad upload is shown as a message
        errors.show_error(exc)
        return
    st.code(view.text(), language="protobuf")
    c1, c2, c3 = st.columns(3)
    c1.metric(t("ch5.message_bytes"), f"{view.size:,}")
    c2.metric(t("ch5.tensor_bytes"), f"{view.tensor_bytes:,}")
    c3.metric(t("ch5.envelope_bytes"), f"{view.envelope_bytes:,}")
    tables.show([{t(f"ch5.col.{k}"): v for k, v in row.items()} for row in view.fields])
    envelope = {
        t("ch5.grpc_message"): view.envelope_bytes,
        t("ch5.http_body"): http.body_size - http.tensor_bytes,
    }
    st.dataframe(  # bars inside the table: the page opens without loading a chart library
        [
            {"": k, t("ch5.tensor_bytes"): tensor, t("ch5.envelope_bytes"): env}
            for (k, env), tensor in zip(envelope.items(), (view.tensor_bytes, http.tensor_bytes), strict=True)
        ],
        column_config={
            t("ch5.tensor_bytes"): st.column_config.NumberColumn(format="%,d B"),
            t("ch5.envelope_bytes"): st.column_config.ProgressColumn(
                format="%,d B", min_value=0, max_value=max(envelope.values()) or 1
            ),
        },
        hide_index=True,
        width="stretch",
    )
    st.caption(t("ch5.compare_caption", grpc=view.size, http=http.body_size, prefix=rv.GRPC_PREFIX_BYTES))
    shm_viewer(model, image, "grpc-shm", "ch5")


def streaming() -> None:
    st.subheader(t("ch5.stream_title"))
    text = st.text_input(
        t("ch5.stream_text"),
        value=i18n.default_text("ch5_stream_text", "ch5.stream_default"),
        key="ch5_stream_text",
        persist_state="session",
        max_chars=400,
    )
    delay = st.slider(t("ch5.stream_delay"), 0, 200, 60, step=10, key="ch5_delay", persist_state="session")
    ep = server.endpoint()
    options = {k: t(f"ch5.arrive_{k}") for k in ("early", "end")}
    predict.ask("ch5_arrive", t("ch5.arrive_predict"), options)
    if server.run_button(
        t("ch5.stream_run"), key="ch5_stream", type="primary", disabled=ep is None or not text.strip()
    ):
        predict.lock("ch5_arrive")
        box = st.empty()
        run = stream_grpc(ep, text, delay)
        if run.error:
            errors.show_error("server_error", detail=run.error)
        box.markdown("".join(run.tokens))
        st.session_state["ch5_stream_run"] = run
    run = st.session_state.get("ch5_stream_run")
    if run and run.tokens:
        token_arrivals([run], show_tokens=True)
        st.caption(t("ch5.stream_caption", n=len(run.tokens), first=run.ttft_ms or 0, total=run.total_ms))
        if run.arrival_outcome() is not None:
            predict.reveal("ch5_arrive", options, run.arrival_outcome())


render_lesson(5, live={"modelinfer": message_viewer, "streaming": streaming})
