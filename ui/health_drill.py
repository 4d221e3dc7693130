"""Chapter 10's health section, its two live elements (triton_kitchen.labs.health): a server of the drill's own
started with a model that fails to load, under three flag settings; one of a model's two stubs killed, the three
health answers and the requests before and after. Neither needs the class's server."""

from __future__ import annotations

import streamlit as st

from triton_kitchen.labs import health
from ui import predict, tables
from ui.i18n import t


def _measure(key: str, workers: int, fn, done_key: str) -> None:
    predict.measure(key, workers, lambda stop, watch: fn(), done_key, t("ch10.running"))


def _startup() -> None:
    st.markdown(f"**{t('ch10.hl_start_title')}**")
    settings = predict.choices("ch10.hl_setting", tuple(health.SETTINGS))
    setting = st.radio(
        t("ch10.hl_setting_pick"),
        list(settings),
        format_func=settings.get,
        key="ch10_hl_setting",
        persist_state="session",
    )
    options = predict.choices("ch10.hl_start", ("no_server", "up_not_ready", "up_ready"))
    predict.ask("ch10_hl_start", t("ch10.hl_start_predict", setting=settings[setting]), options)
    if st.button(t("ch10.hl_start_run"), type="primary", key="ch10_hl_start_run"):
        _measure(
            "ch10_hl_start", 1, lambda: health.start_with_a_broken_model(setting), "ch10_hl_start_result"
        )
    result = st.session_state.get("ch10_hl_start_result")
    if result is None or result.setting != setting:  # measured for the setting on screen only
        return
    if not result.started:
        st.caption(t("ch10.hl_exited"))
        st.code("\n".join(result.failure) or "—", language="text", wrap_lines=True)
    else:
        h = result.health
        tables.show(
            [
                {
                    t("ch10.hl_col_live"): h.live,
                    t("ch10.hl_col_ready"): h.ready,
                    "/v2/models/broken_drill/ready": f"{h.model} {result.broken_body}".strip(),
                    t("ch10.hl_col_model"): result.drill_ready,
                }
            ]
        )
        st.caption(t("ch10.hl_index"))
        st.code(
            "\n".join(
                f"{r.get('name')}  {r.get('state')}  {r.get('reason', '')}".strip() for r in result.index
            ),
            language="text",
            wrap_lines=True,
        )
    h = result.health or health.Health(0, 0, 0)
    predict.reveal(
        "ch10_hl_start",
        options,
        result.outcome(),
        t(
            f"ch10.hl_start_detail_{result.outcome()}",
            live=h.live,
            ready=h.ready,
            model=h.model,
            drill=result.drill_ready,
        ),
    )


def _health_rows(drill: health.StubDrill) -> list[dict]:
    rows = []
    for phase, h in (("before", drill.before), ("after", drill.after), ("after_calls", drill.after_calls)):
        if h is None:
            continue
        liveness, readiness = health.probe_decisions(h)
        rows.append(
            {
                t("ch10.hl_col_when"): t(f"ch10.hl_phase_{phase}"),
                t("ch10.hl_col_live"): h.live,
                t("ch10.hl_col_ready"): h.ready,
                t("ch10.hl_col_model"): h.model,
                t("ch10.hl_col_liveness"): t(f"ch10.hl_{liveness}"),
                t("ch10.hl_col_readiness"): t(f"ch10.hl_{readiness}"),
            }
        )
    return rows


def _call_rows(drill: health.StubDrill) -> list[dict]:
    rows = []
    for phase, which in (
        ("before", "before"),
        ("after", "after"),
        ("same_load", "after_same_load"),
        ("reload", "after_reload"),
    ):
        s = drill.summary(which)
        rows.append(
            {
                t("ch10.hl_col_when"): t(f"ch10.hl_phase_{phase}"),
                t("ch10.hl_col_sent"): s["sent"],
                t("ch10.hl_col_failed"): s["failed"],
                t("ch10.hl_col_pids"): ", ".join(f"{pid}: {n}" for pid, n in sorted(s["by_pid"].items())),
                t("ch10.hl_col_error"): "; ".join(s["errors"]),
            }
        )
    return rows


def _stub() -> None:
    st.markdown(f"**{t('ch10.hl_stub_title')}**")
    options = predict.choices("ch10.hl_stub", ("all_200", "model_400", "ready_400", "live_fails"))
    predict.ask("ch10_hl_stub", t("ch10.hl_stub_predict"), options)
    if st.button(t("ch10.hl_stub_run"), type="primary", key="ch10_hl_stub_run"):
        _measure("ch10_hl_stub", health.CLIENTS, health.kill_a_stub, "ch10_hl_stub_result")
    drill = st.session_state.get("ch10_hl_stub_result")
    if drill is None or drill.killed is None:
        return
    st.caption(
        t(
            "ch10.hl_stubs",
            stubs=", ".join(f"{s.instance} (pid {s.pid})" for s in drill.stubs),
            killed=f"{drill.killed.instance} (pid {drill.killed.pid})",
        )
    )
    tables.show(_health_rows(drill))
    tables.show(_call_rows(drill))
    after = drill.summary("after")
    predict.reveal(
        "ch10_hl_stub",
        options,
        drill.outcome(),
        t(
            "ch10.hl_stub_detail",
            seconds=f"{health.DEAD_WINDOW_S:g}",
            sent=after["sent"],
            failed=after["failed"],
            wait=f"{after['slowest_failure_ms'] or 0:.0f}",
            same=f"{drill.same_load_ms:.0f}",
            reload=f"{drill.reload_ms:.0f}",
        ),
    )


def demo() -> None:
    _startup()
    st.divider()
    _stub()
