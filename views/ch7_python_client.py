"""Chapter 7: the tutorial's client run against the current server over HTTP and gRPC, side by side."""

from __future__ import annotations

import streamlit as st

from triton_kitchen.labs.demo import MISTAKES, run_tutorial
from ui import errors, giving_up_drill, i18n, predict, server
from ui.i18n import t
from ui.image_picker import pick_image
from ui.lesson import render_lesson


def demo() -> None:
    st.subheader(t("ch7.demo_title"))
    ep = server.endpoint()
    if ep is not None:
        st.caption(t("ch7.urls", http=ep.http_url, grpc=ep.grpc_url))
    use_photo = st.toggle(t("ch7.use_photo"), value=False, key="ch7_photo", persist_state="session")
    image = pick_image("ch7") if use_photo else None
    mistake = (  # the mistake's name is the value, its label what is shown: the same one after a language switch
        st.selectbox(
            t("ch7.mistake"),
            list(MISTAKES),
            format_func={m: t(f"ch7.mistake_{m}") for m in MISTAKES}.get,
            key="ch7_mistake",
            persist_state="session",
            placeholder=t("widget.choose"),
        )
        or "none"
    )
    options = {k: t(f"ch7.out_{k}") for k in ("one_hot", "probabilities", "other")}
    predict.ask("ch7_out", t("ch7.out_predict"), options)
    if server.run_button(t("ch7.run"), key="ch7_run", type="primary", icon="▶️", disabled=ep is None):
        predict.lock("ch7_out")
        st.session_state["ch7_runs"] = [run_tutorial(ep, p, image, mistake) for p in ("http", "grpc")]
    runs = st.session_state.get("ch7_runs")
    if not runs:
        return
    cols = st.columns(2)
    for col, run in zip(cols, runs, strict=True):
        with col:
            st.markdown(f"#### {i18n.protocol_label(run.protocol)} · `{run.url}`")
            st.caption(t("ch7.sent", name=run.input_name, dtype=run.datatype, shape=run.shape))
            if run.ok:
                st.metric(
                    t("ch7.top1"),
                    run.label,
                    t("ch7.prob", p=run.top_prob * 100),
                    delta_color="off",
                    delta_arrow="off",
                )
                st.write(t("ch7.result", shape=run.output_shape, argmax=run.argmax, total=run.prob_sum))
                st.caption(t("ch7.took", ms=run.ms))
            else:
                errors.show_error(run.error_code or "server_error", detail=run.error)
    if runs[0].ok and not use_photo:
        st.info(t("ch7.noise_note"), icon="🎲")
    if runs[0].ok:
        predict.reveal("ch7_out", options, runs[0].output_kind())


render_lesson(7, live={"code": demo, "giving_up": giving_up_drill.demo})
