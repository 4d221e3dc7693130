"""Chapter 7's "clients that give up" live element (triton_kitchen.labs.giving_up): pick how the client gives up
on a request, predict whether it still runs, and see Triton's own execution count from a server of the drill's
own; then what each client raises for each failure. Neither needs the class's server."""

from __future__ import annotations

import streamlit as st

from triton_kitchen.labs import giving_up
from ui import errors, predict, server
from ui.i18n import t


def _measure(key: str, fn, done_key: str) -> None:
    predict.measure(key, 1, lambda stop, watch: fn(), done_key, t("ch10.running"))


def _give_up() -> None:
    st.markdown(f"**{t('ch7.gu_title')}**")
    scenarios = predict.choices("ch7.gu_scenario", tuple(giving_up.SCENARIOS))
    scenario = st.radio(
        t("ch7.gu_scenario"),
        list(scenarios),
        format_func=scenarios.get,
        key="ch7_gu_scenario",
        persist_state="session",
    )
    deadline = st.number_input(
        t("ch7.gu_deadline"),
        min_value=-10.0,
        max_value=60.0,
        value=giving_up.GIVE_UP_AFTER_S,
        step=0.05,
        key="ch7_gu_deadline",
        persist_state="session",
    )
    options = predict.choices("ch7.gu", ("never_ran", "ran_to_end", "stopped_early"))
    predict.ask("ch7_gu", t("ch7.gu_predict"), options)
    if st.button(t("ch7.gu_run"), type="primary", key="ch7_gu_run"):
        try:
            seconds = giving_up.check_deadline(deadline)  # refused before any server starts
        except giving_up.GivingUpError as exc:
            st.session_state.pop("ch7_gu_result", None)
            errors.show_error(exc)
        else:
            _measure("ch7_gu", lambda: giving_up.give_up(scenario, seconds), "ch7_gu_result")
    result = st.session_state.get("ch7_gu_result")
    if result is None or result.scenario != scenario:  # measured for the scenario on screen only
        return
    ran = result.victim_ms()
    m1, m2, m3 = st.columns(3)
    m1.metric(t("ch7.gu_executions"), f"+{result.executions}")
    m2.metric(t("ch7.gu_victim_ms"), t("ch7.gu_not_run") if ran is None else f"{ran:.0f}")
    m3.metric(t("ch7.gu_client_ms"), f"{result.client_ms:.0f}")
    st.caption(t("ch7.gu_client_saw"))
    st.code(result.client_saw, language="text", wrap_lines=True)
    outcome = result.outcome()
    if outcome is None:
        st.warning(t("ch7.gu_unclear", executions=result.executions))
        return
    predict.reveal(
        "ch7_gu",
        options,
        outcome,
        t(
            f"ch7.gu_detail_{outcome}",
            busy=result.busy_slept_ms if result.busy_slept_ms is not None else giving_up.BUSY_MS,
            executions=result.executions,
            ran=f"{ran or 0:.0f}",
        ),
    )


def _raises() -> None:
    st.markdown(f"**{t('ch7.gu_raises_title')}**")
    if st.button(t("ch7.gu_raises_run"), key="ch7_gu_raises_run"):
        st.session_state.pop("ch7_gu_raises", None)
        try:
            with st.spinner(t("ch10.running")):
                table = server.lab_run(1, giving_up.what_each_client_raises)
            if table is not server.BUSY:
                st.session_state["ch7_gu_raises"] = table
        except Exception as exc:  # noqa: BLE001 - shown translated; the page keeps working
            errors.show_error(exc)
    table = st.session_state.get("ch7_gu_raises")
    if table is None:
        return
    st.table(  # a static table: the exceptions' long words wrap instead of being cut off
        [
            {
                t("ch7.gu_col_failure"): t(f"ch7.gu_failure_{failure}"),
                t("ch7.gu_col_grpc"): table.of(failure, "grpc"),
                t("ch7.gu_col_http"): table.of(failure, "http"),
            }
            for failure in giving_up.FAILURES
        ],
        hide_index=True,
    )
    st.caption(
        t("ch7.gu_retry", sent=table.retry_sent, answered=table.retry_answered, tries=table.retry_tries)
    )


def demo() -> None:
    _give_up()
    st.divider()
    _raises()
