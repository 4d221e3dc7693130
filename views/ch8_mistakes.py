"""Chapter 8: each of the tutorial's mistakes with a live experiment, then interview questions."""

from __future__ import annotations

import statistics

import plotly.graph_objects as go
import streamlit as st

from triton_kitchen.core.catalog import (
    CASCADE_BLS,
    CASCADE_ENSEMBLE,
    CLASSIFIER,
    CLASSIFIER_COARSE,
    ENSEMBLE_PIPELINE,
    IMAGE_CLASSIFIER,
)
from triton_kitchen.core.classify import ClassifyError
from triton_kitchen.core.config import parse_config
from triton_kitchen.core.samples import sample_jpeg
from triton_kitchen.labs import mistakes
from triton_kitchen.labs import requests_view as rv
from triton_kitchen.labs.demo import quick_protocol_check, speed_outcome
from triton_kitchen.labs.experiments import cascade_call
from triton_kitchen.tools import repository as repo
from triton_kitchen.tools.protocols.streaming import stream_sse
from ui import errors, i18n, predict, present, server
from ui.i18n import t
from ui.lesson import lazy_box, render_lesson

PHOTO = "chelsea"


def _map_direction() -> None:
    text = (repo.DEFAULT_REPOSITORY / IMAGE_CLASSIFIER / "config.pbtxt").read_text(encoding="utf-8")
    swapped = mistakes.swap_input_map(text)
    check = repo.check_ensemble_text(swapped, lang=i18n.lang())
    st.code(
        'input_map { key: "image_tensor" value: "input" }   # ' + t("ch8.m1_swapped"), language="protobuf"
    )
    for p in check.problems[:3]:
        st.markdown(f"⛔ {p.message}")
        if p.triton_message:
            st.caption(t("live.triton_said", message=p.triton_message))


def _order() -> None:
    text = (repo.DEFAULT_REPOSITORY / IMAGE_CLASSIFIER / "config.pbtxt").read_text(encoding="utf-8")
    reversed_text = mistakes.reverse_steps(text)
    cfg = parse_config(reversed_text)
    check = repo.check_ensemble_text(reversed_text, lang=i18n.lang())
    st.caption(t("ch8.m2_reversed", order=" → ".join(s.model_name for s in cfg.ensemble_scheduling.step)))
    if check.ok:
        st.success(t("ch8.m2_ok"), icon="✅")
        stages = check.dag.stages
        st.caption(t("ch8.m2_stages", stages=" | ".join(", ".join(s) for s in stages)))
    present.graphviz_chart(check.dot)


def _binary_default() -> None:
    inputs = rv.request_inputs(ENSEMBLE_PIPELINE, sample_jpeg(PHOTO))
    default = rv.http_request(ENSEMBLE_PIPELINE, inputs, ["output_label"])
    plain = rv.http_request(ENSEMBLE_PIPELINE, inputs, ["output_label"], binary=False)
    c1, c2 = st.columns(2)
    c1.metric(
        t("ch8.m3_default"),
        f"{default.body_size:,} B",
        t("ch8.m3_header", n=default.json_size),
        delta_color="off",
        delta_arrow="off",
    )
    c2.metric(
        t("ch8.m3_json"),
        f"{plain.body_size:,} B",
        f"× {plain.body_size / default.body_size:.1f}",
        delta_color="off",
        delta_arrow="off",
    )


def _speed() -> None:
    ep = server.endpoint()
    options = {k: t(f"ch8.m4_{k}") for k in ("grpc_2x", "close", "http_2x")}
    predict.ask("ch8_speed", t("ch8.m4_predict"), options)
    if server.run_button(t("ch8.m4_run"), key="ch8_speed", disabled=ep is None):
        predict.lock("ch8_speed")
        with st.spinner(t("ch8.m4_running")):
            st.session_state["ch8_speed_result"] = quick_protocol_check(
                ep, sample_jpeg(PHOTO), requests=15, budget_s=6
            )
    times = st.session_state.get("ch8_speed_result")
    if times:
        kinds = [k for k, v in times.items() if v]
        medians = [statistics.median(times[k]) for k in kinds]
        fig = go.Figure(
            go.Bar(
                x=[i18n.protocol_label(k) for k in kinds],
                y=medians,
                text=[f"{m:.1f} ms" for m in medians],
                marker_color="#76b900",
            )
        )
        fig.update_layout(height=240, yaxis_title=t("ch8.m4_axis"), margin=dict(l=10, r=10, t=10, b=10))
        st.plotly_chart(fig, width="stretch", config={"displayModeBar": False})
        st.caption(t("ch8.m4_caption", n=min(len(v) for v in times.values() if v)))
        outcome = speed_outcome(times)
        if outcome is not None:
            predict.reveal("ch8_speed", options, outcome)


def _sse() -> None:
    ep = server.endpoint()
    if server.run_button(t("ch8.m5_run"), key="ch8_sse", disabled=ep is None):
        st.session_state["ch8_sse_result"] = stream_sse(ep, t("ch5.stream_default"), 30)
    run = st.session_state.get("ch8_sse_result")
    if run:
        if run.error:
            errors.show_error("server_error", detail=run.error)
        st.code(
            "\n".join(
                f'data: {{... "token": "{tok}"}}   # +{ms:.0f} ms'
                for tok, ms in zip(run.tokens, run.arrivals_ms, strict=True)
            ),
            language="text",
        )


def _cascade() -> None:
    ep = server.endpoint()
    if server.run_button(t("ch8.m6_run"), key="ch8_cascade", disabled=ep is None):
        rows = []
        for photo in ("chelsea", "coffee", "rocket"):
            for model in (CASCADE_ENSEMBLE, CASCADE_BLS):
                try:
                    call = cascade_call(ep, sample_jpeg(photo), model)
                except ClassifyError as exc:
                    errors.show_error(exc)
                    continue
                rows.append(
                    {
                        t("ch8.col.photo"): t(f"image.sample_{photo}"),
                        t("ch8.col.model"): model,
                        t("ch8.col.top1"): call.result.labels[0],
                        t("ch8.col.answer_tier"): call.answer_tier if call.answer_tier is not None else "—",
                        t("ch8.col.coarse_runs"): call.tier_runs[CLASSIFIER_COARSE],
                        t("ch8.col.fine_runs"): call.tier_runs[CLASSIFIER],
                        t("ch8.col.ms"): f"{call.result.ms:.1f}",
                    }
                )
        st.session_state["ch8_cascade_result"] = rows
    rows = st.session_state.get("ch8_cascade_result")
    if rows:
        st.dataframe(rows, hide_index=True, width="stretch")
        st.caption(t("ch8.m6_caption"))


EXPERIMENTS = [_map_direction, _order, _binary_default, _speed, _sse, _cascade]


def experiments() -> None:
    st.subheader(t("ch8.live_title"))
    for n, fn in enumerate(EXPERIMENTS, start=1):
        box = lazy_box(f"ch8_experiment_{n}", t(f"ch8.m{n}_title"))  # drawn once opened
        if box is None:
            continue
        with box:
            try:
                fn()
            except Exception as exc:  # noqa: BLE001 - one failed experiment must not hide the others
                errors.show_error(exc, context=f"chapter 8, experiment {n}")


render_lesson(8, live={"mistakes": experiments})
