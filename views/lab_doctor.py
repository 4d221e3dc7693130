"""Triton doctor: an engineer's own server examined (triton_kitchen.tools.doctor), with progress and a Stop; the
report card in the page's language and a chart of where a request's time goes per cell. Layout only."""

from __future__ import annotations

import json
import time

import streamlit as st

from triton_kitchen.tools.doctor import FULL_BUDGET_S, QUICK_BUDGET_S, run_doctor, target_of
from triton_kitchen.tools.doctor_card import card
from triton_kitchen.tools.doctor_figures import measured_cells, time_figure
from triton_kitchen.tools.doctor_server import DoctorError
from triton_kitchen.tools.load import MAX_CONCURRENCY
from ui import errors, i18n, server
from ui.i18n import t

REPORT, RUNNING = "doctor_report", "doctor_running"
MODES = ("quick", "full")
REQUEST_TIMEOUT_S = 5.0  # a server slower than this per request is said to be slow, not waited on

st.title(t("lab_doctor.title"))
st.caption(t("lab_doctor.intro"))
app_ep = server.endpoint()

c1, c2, c3 = st.columns([3, 2, 2])
typed = c1.text_input(
    t("lab_doctor.url"),
    key="doctor_url",
    persist_state="session",
    placeholder=t("lab_doctor.url_placeholder", url=app_ep.http_url)
    if app_ep
    else t("lab_doctor.url_placeholder_none"),
    help=t("lab_doctor.url_help"),
).strip()
typed_grpc = c2.text_input(
    t("lab_doctor.grpc_url"), key="doctor_grpc", persist_state="session", help=t("lab_doctor.grpc_help")
).strip()
model = c3.text_input(
    t("lab_doctor.model"), key="doctor_model", persist_state="session", help=t("lab_doctor.model_help")
).strip()
mode = st.radio(
    t("lab_doctor.mode"),
    MODES,
    format_func={m: t(f"lab_doctor.mode_{m}") for m in MODES}.get,
    key="doctor_mode",
    persist_state="session",
    horizontal=True,
)
nothing_to_examine = not typed and app_ep is None
if nothing_to_examine:
    st.info(t("lab_doctor.no_server"), icon="ℹ️")
b1, b2 = st.columns([1, 4])
go_run = server.run_button(
    t("lab_doctor.run"), where=b1, type="primary", key="doctor_run", disabled=nothing_to_examine
)
# outside any fragment: its click reruns the page, which ends a run in progress at its next progress report
b2.button(t("lab_doctor.stop"), key="doctor_stop", icon=":material/stop:", help=t("lab_doctor.stop_help"))

if st.session_state.pop(RUNNING, False) and not go_run:  # the last run never reached its end: it was stopped
    st.warning(t("lab_doctor.stopped"), icon="⏹️")

if go_run:
    http, grpc, headers = target_of(typed, typed_grpc, app_ep)
    quick = mode == "quick"
    budget = QUICK_BUDGET_S if quick else FULL_BUDGET_S
    st.session_state.pop(REPORT, None)
    st.session_state[RUNNING] = True
    with st.status(t("lab_doctor.running", url=http), expanded=True) as box:
        bar = st.progress(0.0)
        t0 = time.monotonic()

        def progress(key: str, params: dict) -> None:  # a Streamlit call: where a Stop ends the run
            elapsed = time.monotonic() - t0
            label = f"{t('lab_doctor.running', url=http)} · {t(f'doctor.{key}', **params)}"
            box.update(label=label, expanded=True)  # (an update without expanded folds the box)
            bar.progress(
                min(1.0, elapsed / budget),
                text=t("lab_doctor.elapsed", elapsed=f"{elapsed:.0f}", budget=f"{budget:.0f}"),
            )

        report = server.lab_run(
            2 if quick else MAX_CONCURRENCY,
            lambda: run_doctor(
                http,
                grpc,
                model or None,
                quick=quick,
                timeout_s=REQUEST_TIMEOUT_S,
                progress=progress,
                headers=headers,
            ),  # fmt: skip
        )
        if report is not server.BUSY:
            st.session_state[REPORT] = report
        box.update(
            label=t("lab_doctor.done", elapsed=f"{time.monotonic() - t0:.0f}"),
            state="complete" if report and report.get("ok") else "error",
            expanded=False,
        )
    st.session_state.pop(RUNNING, None)

report = st.session_state.get(REPORT)
if report:
    lang = i18n.lang()
    if report.get("error"):  # not Triton, nothing answering, too slow, no model: one clear message
        error = report["error"]
        errors.show_error(DoctorError(error["key"], error["params"].get("detail", "")))
    if measured_cells(report):
        st.plotly_chart(time_figure(report, lang), width="stretch", key="doctor_chart")
        st.caption(t("lab_doctor.chart_note"))
    st.subheader(t("lab_doctor.card"))
    st.code(card(report, lang), language=None, wrap_lines=True)
    st.download_button(
        t("lab_doctor.download"),
        json.dumps(report, ensure_ascii=False, indent=1),
        "triton-doctor.json",
        "application/json",
        key="doctor_download",
        on_click="ignore",
    )
