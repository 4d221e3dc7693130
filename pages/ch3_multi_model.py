"""Chapter 3: the three patterns drawn from our configs, intermediate memory, cascade ensemble vs BLS."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from triton_kitchen import repository as repo
from triton_kitchen.classify import ClassifyError, classify
from ui import state
from ui.image_picker import pick_image, show_classification
from ui.lesson import page_link, render_lesson
from ui.state import t


def _models() -> dict[str, repo.ModelEntry]:
    return {e.name: e for e in repo.scan_repository()}


def _draw(name: str) -> None:
    entry = _models().get(name)
    if entry is None or entry.config is None:
        state.show_error("model_not_ready", name)
        return
    st.graphviz_chart(repo.ensemble_dot(name, lang=state.lang()), width="stretch")
    st.caption(t("ch3.drawn_from", model=name))


def pipeline() -> None:
    _draw("image_classifier")


def parallel() -> None:
    _draw("tta_ensemble")
    page_link("pages/lab_flow.py", "ch3.to_flow_lab")


def cascade() -> None:
    c1, c2 = st.columns(2)
    with c1:
        _draw("cascade_ensemble")
    with c2:
        entry = _models().get("cascade_bls")
        st.markdown(t("ch3.bls_note"))
        if entry is not None:
            st.code(entry.config_text, language="protobuf")
    st.markdown(f"**{t('ch3.compare_title')}**")
    image = pick_image("ch3")
    ep = state.endpoint()
    if st.button(t("ch3.compare"), key="ch3_compare", type="primary", disabled=image is None or ep is None):
        results = {}
        for model in ("cascade_ensemble", "cascade_bls"):
            try:
                results[model] = classify(ep, image, model=model, protocol="grpc")
            except ClassifyError as exc:
                state.show_error(exc)
        st.session_state["ch3_results"] = results
    results = st.session_state.get("ch3_results") or {}
    cols = st.columns(2)
    for col, (_model, result) in zip(cols, results.items(), strict=False):
        with col:
            show_classification(result)
            if result.stage_used is not None:
                st.info(t("ch3.stage_used", stage=result.stage_used), icon="🔎")


def memory() -> None:
    name = st.selectbox(
        t("ch3.memory_model"),
        ["image_classifier", "tta_ensemble", "cascade_ensemble", "ensemble_pipeline"],
        key="ch3_mem_model",
    )
    c1, c2 = st.columns(2)
    batch = c1.select_slider(t("ch3.batch"), [1, 2, 4, 8], value=8, key="ch3_batch")
    in_flight = c2.slider(t("ch3.in_flight"), 1, 128, 64, key="ch3_in_flight")
    rows = repo.intermediate_memory(name, batch_size=batch, in_flight=in_flight)
    names = [r["tensor"] for r in rows]
    per_request = [(r["bytes_per_request"] or 0) / 1e6 for r in rows]
    fig = go.Figure(
        [
            go.Bar(name=t("ch3.per_request", b=batch), x=names, y=per_request, marker_color="#76b900"),
            go.Bar(
                name=t("ch3.per_in_flight", n=in_flight),
                x=names,
                y=[v * in_flight for v in per_request],
                marker_color="#1f77b4",
            ),
        ]
    )
    fig.update_layout(barmode="group", height=320, yaxis_title="MB", margin=dict(l=10, r=10, t=30, b=10))
    st.plotly_chart(fig, width="stretch", config={"displayModeBar": False})
    total = sum(per_request)
    st.caption(t("ch3.memory_caption", b=batch, total=total, n=in_flight, total_n=total * in_flight))
    st.dataframe(
        [
            {
                t("ch3.col.tensor"): r["tensor"],
                t("ch3.col.producer"): r["producer"],
                t("ch3.col.consumers"): ", ".join(r["consumers"]),
                t("ch3.col.type"): f"{r['data_type']} {r['dims']}",
                t("ch3.col.bytes"): r["bytes_per_request"],
                t("ch3.col.batch_bytes"): r["bytes_in_flight"],
            }
            for r in rows
        ],
        hide_index=True,
        width="stretch",
    )


render_lesson(3, live={"pipeline": pipeline, "parallel": parallel, "cascade": cascade, "memory": memory})
