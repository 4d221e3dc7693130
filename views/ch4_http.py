"""Chapter 4: the actual HTTP request for the current photo — JSON header, binary part, sizes, curl."""

from __future__ import annotations

import streamlit as st

from triton_kitchen.core.catalog import ENSEMBLE_PIPELINE, IMAGE_CLASSIFIER
from triton_kitchen.labs import requests_view as rv
from ui import boxes, errors, predict, server
from ui.i18n import t
from ui.image_picker import pick_image
from ui.lesson import render_lesson
from ui.shm_view import shm_viewer


@st.cache_data(show_spinner=False, max_entries=8)
def _views(model: str, image: bytes, host: str) -> tuple[rv.HttpRequestView, rv.HttpRequestView | None]:
    inputs = rv.request_inputs(model, image)
    outputs = rv.request_outputs(model)
    binary = rv.http_request(model, inputs, outputs, binary=True, host=host)
    plain = (
        rv.http_request(model, inputs, outputs, binary=False, host=host)
        if model == ENSEMBLE_PIPELINE
        else None
    )
    return binary, plain


def _request_block(view: rv.HttpRequestView, ep) -> None:
    st.code(view.head_text.replace("\r\n", "\n").strip(), language="http")
    # the binary extension's body is a JSON header then raw bytes; without it the whole body is JSON
    st.markdown(f"**{t('ch4.json_part' if view.binary else 'ch4.json_body', n=view.json_size)}**")
    st.code(view.json_preview(), language="json")
    if view.binary:
        st.markdown(f"**{t('ch4.binary_part', n=view.binary_size)}**")
        st.code(view.binary_preview(), language=None, wrap_lines=True)
    c1, c2, c3 = st.columns(3)
    c1.metric(t("ch4.tensor_bytes"), f"{view.tensor_bytes:,}")
    c2.metric(t("ch4.body_bytes"), f"{view.body_size:,}")
    c3.metric(t("ch4.wire_bytes"), f"{view.wire_size:,}")
    filename = "body.bin" if view.binary else "request.json"
    st.markdown(f"**{t('ch4.curl')}**")
    st.code(view.curl(ep.http_url if ep else "localhost:8000", filename), language="bash")
    st.download_button(
        t("ch4.download", file=filename),
        data=view.body,
        file_name=filename,
        mime="application/octet-stream",
        key=f"ch4_dl_{view.binary}",
        on_click="ignore",  # a download changes nothing on the page: no rerun
    )


def request_viewer() -> None:
    st.subheader(t("ch4.viewer_title"))
    model = st.radio(
        t("classify.model"),
        [ENSEMBLE_PIPELINE, IMAGE_CLASSIFIER],
        horizontal=True,
        key="ch4_model",
        persist_state="session",
        help=t("ch4.model_help"),
    )
    image = pick_image("ch4")
    if image is None:
        st.info(t("classify.pick_first"))
        return
    ep = server.endpoint()
    try:
        binary, plain = _views(model, image, ep.http_url if ep else "localhost:8000")
    except Exception as exc:  # noqa: BLE001 - a bad upload or shape is shown as a message
        errors.show_error(exc)
        return
    c1, c2 = st.columns(2)  # two numbers: metrics, no chart library to load
    c1.metric(t("ch4.size_binary"), f"{binary.wire_size:,} B", help=t("ch4.bytes_axis"))
    if plain is not None:
        c2.metric(
            t("ch4.size_json"),
            f"{plain.wire_size:,} B",
            f"× {plain.wire_size / max(1, binary.wire_size):.1f}",
            delta_color="off",
            delta_arrow="off",
            help=t("ch4.bytes_axis"),
        )
    if plain is not None:
        st.caption(t("ch4.ratio", ratio=plain.body_size / max(1, binary.body_size)))
    else:
        st.caption(t("ch4.no_json_for_bytes"))
    forms = ("binary", "json") if plain is not None else ("binary",)
    tabs = boxes.remembered_tabs("ch4_form_tabs", {form: t(f"ch4.tab_{form}") for form in forms})
    with tabs[0]:
        _request_block(binary, ep)
    if plain is not None:
        with tabs[1]:
            _request_block(plain, ep)
    # the button sends the request of the tab that is open (the prediction is about the binary one)
    shown = plain if plain is not None and tabs[1].open else binary
    options = {k: t(f"ch4.form_{k}") for k in ("json", "binary")}
    predict.ask("ch4_form", t("ch4.form_predict"), options)
    if server.run_button(t("ch4.send"), key="ch4_send", type="primary", disabled=ep is None):
        predict.lock("ch4_form")
        try:
            sent = (model, rv.send_http(ep, shown), shown.binary)
            st.session_state["ch4_response"] = sent  # the last one sent, whichever tab
            st.session_state.setdefault("ch4_responses", {})[shown.binary] = sent
        except OSError as exc:
            errors.show_error("server_unreachable", detail=str(exc))
    # each tab shows the last response to its own request only
    sent = st.session_state.get("ch4_responses", {}).get(shown.binary)
    if sent and sent[0] == model:
        resp = sent[1]
        st.markdown(f"**{t('ch4.response', status=resp.status, ms=resp.ms)}**")
        st.code("\n".join(f"{k}: {v}" for k, v in resp.headers.items()), language="http")
        st.code(resp.json_preview(), language="json")
        st.caption(t("ch4.response_sizes", json=len(resp.json_text.encode()), binary=resp.binary_size))
        if resp.output_form() is not None and sent[2]:
            predict.reveal("ch4_form", options, resp.output_form())
    shm_viewer(model, image, "http-shm", "ch4")


render_lesson(4, live={"binary": request_viewer})
