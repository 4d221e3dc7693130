"""Chapter 10: open for business — model-control modes, metrics, the wire's limits. Each section's live element
asks for a prediction first, then measures on the real server (triton_kitchen.labs.model_control, metrics_burst,
wire_limits)."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from triton_kitchen.core import kserve
from triton_kitchen.labs import cache_warmup, metrics_burst, model_control, perf_split, wire_limits
from triton_kitchen.tools.repository import ModelState
from ui import errors, health_drill, predict, server, tables
from ui.i18n import t
from ui.lesson import lazy_box, render_lesson


def _measure(key: str, workers: int, fn, done_key: str) -> None:
    predict.measure(key, workers, lambda stop, watch: fn(), done_key, t("ch10.running"))


# -- model control ---------------------------------------------------------------------------------------------
def _index(ep) -> None:
    """The repository index: which models this server has loaded, as it says (asked and drawn when opened)."""
    box = lazy_box("ch10_index_box", t("ch10.index_title"))
    if box is None:
        return
    with box:
        try:
            rows = kserve.repository_index(ep, headers=ep.headers or None, timeout=5.0)
        except kserve.KServeError as exc:
            st.caption(t("ch10.index_none", detail=exc.detail))
            return
        states = [
            ModelState(str(r.get("name", "")), state=r.get("state", ""), reason=r.get("reason", ""))
            for r in rows
        ]
        tables.show(
            [
                {
                    t("ch10.col.model"): m.name,
                    t("ch10.col.state"): m.state or "—",
                    # a drill's model never loaded has no state in Triton's index: it loads on first use
                    t("ch10.col.reason"): t("repo.state_on_first_use")
                    if m.on_first_use and not m.state
                    else m.reason,
                }
                for m in states
            ]
        )


def _timeline(result: model_control.ControlResult) -> None:
    fig = go.Figure()
    fig.add_vrect(
        x0=result.change_start_s * 1000,
        x1=result.change_end_s * 1000,
        fillcolor="#fdd0a2",
        opacity=0.5,
        line_width=0,
        annotation_text=t(f"ch10.way_{result.way}"),
        annotation_position="top left",
    )
    for ok, label, color in (
        (True, t("ch10.ctl_answered"), "#31a354"),
        (False, t("ch10.ctl_refused"), "#de2d26"),
    ):
        rs = [r for r in result.requests if r.ok is ok]
        fig.add_trace(
            go.Scatter(
                x=[r.start_s * 1000 for r in rs],
                y=[(r.end_s - r.start_s) * 1000 for r in rs],
                mode="markers",
                name=label,
                marker=dict(color=color, size=5),
            )
        )
    fig.update_layout(
        height=260,
        margin=dict(l=10, r=10, t=30, b=10),
        xaxis_title=t("ch10.ctl_axis_x"),
        yaxis_title=t("ch10.ctl_axis_y"),
        legend=dict(orientation="h", y=1.2),
    )
    st.plotly_chart(fig, width="stretch", key="ch10_ctl_fig")


def model_control_demo() -> None:
    ep = server.endpoint()
    if ep is None:
        server.say_no_server()
        return
    if not ep.headers:  # no key for its repository API (a remote server without the kitchen key): no reloads
        st.info(t("lab_batching.remote_note"))
    _index(ep)
    ways = predict.choices("ch10.way", model_control.WAYS)
    way = st.radio(
        t("ch10.way_pick"),
        list(ways),
        format_func=ways.get,
        horizontal=True,
        key="ch10_way",
        persist_state="session",
    )
    options = predict.choices("ch10.ctl", ("all_answered", "some_refused"))
    predict.ask("ch10_ctl", t("ch10.ctl_predict", way=ways[way]), options)
    if st.button(t("ch10.ctl_run"), type="primary", key="ch10_ctl_run"):
        _measure(
            "ch10_ctl",
            model_control.CLIENTS,
            lambda: model_control.change_under_load(ep, way),
            "ch10_ctl_result",
        )
    result = st.session_state.get("ch10_ctl_result")
    if result is None or result.way != way:  # measured for the way on screen only
        return
    m1, m2, m3 = st.columns(3)
    m1.metric(t("ch10.ctl_answered"), result.answered)
    m2.metric(t("ch10.ctl_refused"), result.refused)
    m3.metric(t("ch10.ctl_change_ms"), f"{result.change_ms:.0f}")
    _timeline(result)
    if result.errors():
        tables.show(
            [{t("ch10.col.error"): text, t("ch10.col.count"): n} for text, n in result.errors().items()]
        )
    predict.reveal(
        "ch10_ctl",
        options,
        result.outcome(),
        t(
            f"ch10.ctl_detail_{result.outcome()}",
            gap=f"{result.refused_window_ms():.0f}",
            longest=f"{result.longest_ms() or 0:.0f}",
        ),
    )


# -- metrics ---------------------------------------------------------------------------------------------------
def metrics_demo() -> None:
    ep = server.endpoint()
    if ep is None:
        server.say_no_server()
        return
    n = st.slider(t("ch10.met_n"), 2, 16, 8, key="ch10_met_n", persist_state="session")
    options = predict.choices("ch10.met", ("both_n", "fewer_exec"), n=n)
    predict.ask("ch10_met", t("ch10.met_predict", n=n), options)
    if st.button(t("ch10.met_run", n=n), type="primary", key="ch10_met_run"):
        _measure("ch10_met", 1, lambda: metrics_burst.count_a_burst(ep, int(n)), "ch10_met_result")
    result = st.session_state.get("ch10_met_result")
    if result is None or result.n != n or result.outcome() is None:
        return
    d = result.delta
    m1, m2, m3 = st.columns(3)
    m1.metric("nv_inference_count", f"+{d.inferences:.0f}")
    m2.metric("nv_inference_exec_count", f"+{d.executions:.0f}")
    m3.metric(t("ch10.met_mean_batch"), "—" if d.mean_batch is None else f"{d.mean_batch:.1f}")
    left, right = st.columns(2)
    left.caption(t("ch10.met_before"))
    left.code("\n".join(result.before) or "—", language="text", wrap_lines=True)
    right.caption(t("ch10.met_after"))
    right.code("\n".join(result.after) or "—", language="text", wrap_lines=True)
    predict.reveal(
        "ch10_met",
        options,
        result.outcome(),
        t("ch10.met_detail", n=result.n, inf=f"{d.inferences:.0f}", exe=f"{d.executions:.0f}"),
    )


# -- wire limits -----------------------------------------------------------------------------------------------
def wire_demo() -> None:
    ep = server.endpoint()
    if ep is None:
        server.say_no_server()
        return
    batch = st.slider(
        t("ch10.wire_batch"), 1, wire_limits.MAX_BATCH, 7, key="ch10_wire_batch", persist_state="session"
    )
    mb = batch * wire_limits.IMAGE_BYTES / 1e6
    options = predict.choices("ch10.wire", ("answered", "client_refused", "server_refused"))
    predict.ask("ch10_wire", t("ch10.wire_predict", n=batch, mb=f"{mb:.1f}"), options)
    if st.button(t("ch10.wire_run", n=batch), type="primary", key="ch10_wire_run"):
        _measure("ch10_wire", 1, lambda: wire_limits.compare(ep, int(batch)), "ch10_wire_result")
    result = st.session_state.get("ch10_wire_result")
    if result is None or result.batch != batch:
        return
    tables.show(
        [
            {
                t("ch10.col.client"): t("ch10.wire_plain"),
                t("ch10.col.result"): result.plain_code or t("ch10.wire_ok"),
                t("ch10.col.detail"): result.plain_error,
            },
            {
                t("ch10.col.client"): "tritonclient",
                t("ch10.col.result"): t("ch10.wire_ok") if not result.tritonclient_error else "✗",
                t("ch10.col.detail"): result.tritonclient_error,
            },
        ]
    )
    if result.outcome() is None:  # neither refused for size nor answered: the error is the news
        errors.show_error("server_error", result.plain_error)
        return
    predict.reveal(
        "ch10_wire",
        options,
        result.outcome(),
        t(
            "ch10.wire_detail",
            sent=f"{result.request_bytes:,}",
            answer=f"{result.answer_bytes:,}",
            limit=f"{wire_limits.GRPC_DEFAULT_LIMIT:,}",
        ),
    )


# -- response cache and warm-up ----------------------------------------------------------------------------------
def _cache_twice(ep) -> None:
    options = predict.choices("ch10.cache", ("from_cache", "ran_again"))
    predict.ask("ch10_cache", t("ch10.cache_predict"), options)
    if st.button(t("ch10.cache_run"), type="primary", key="ch10_cache_run"):
        _measure("ch10_cache", 1, lambda: cache_warmup.same_request_twice(ep), "ch10_cache_result")
    result = st.session_state.get("ch10_cache_result")
    if result is None:
        return
    tables.show(
        [
            {t("ch10.cache_col_request"): t(f"ch10.cache_{name}"), t("ch10.cache_col_ms"): f"{ms:.1f}"}
            for name, ms in (
                ("first", result.first_ms),
                ("second", result.second_ms),
                ("changed", result.changed_ms),
            )
        ]
    )
    m1, m2, m3, m4 = st.columns(4)
    m1.metric(t("ch10.cache_hits"), f"+{result.hits}")
    m2.metric(t("ch10.cache_misses"), f"+{result.misses}")
    m3.metric(t("ch10.cache_exec"), f"+{result.executions}")
    m4.metric(t("ch10.cache_lookup"), "—" if result.lookup_us is None else f"{result.lookup_us:.0f}")
    predict.reveal(
        "ch10_cache",
        options,
        result.outcome(),
        t(
            "ch10.cache_detail",
            hits=result.hits,
            misses=result.misses,
            exe=result.executions,
            first=f"{result.first_ms:.1f}",
            second=f"{result.second_ms:.1f}",
        ),
    )


def _cache_refusals(ep) -> None:
    if st.button(t("ch10.cache_refuse_run"), key="ch10_cache_refuse_run"):
        embedded = server.supervisor().server if ep.embedded else None
        log = embedded.log_tail if embedded is not None else None
        try:
            with st.spinner(t("ch10.running")):
                st.session_state["ch10_cache_refusals"] = cache_warmup.cache_refusals(ep, log)
        except Exception as exc:  # noqa: BLE001 - show_error logs it; the page keeps working
            errors.show_error(exc)
    for refusal in st.session_state.get("ch10_cache_refusals") or []:
        st.markdown(f"**{t(f'ch10.cache_case_{refusal.case}')}**")
        if not refusal.answer:
            st.warning(t("ch10.cache_loaded_anyway"))
            continue
        st.caption(t("ch10.cache_answer"))
        st.code(refusal.answer, language="text", wrap_lines=True)
        st.caption(t("ch10.cache_logged"))
        st.code(refusal.logged or t("ch10.cache_log_not_ours"), language="text", wrap_lines=True)
        if refusal.still_serving:
            st.success(t("ch10.cache_still_serving"), icon="🟢")
        else:
            st.error(t("ch10.cache_not_serving"))


def _warmup(ep) -> None:
    options = predict.choices("ch10.warm", ("moved", "same"))
    predict.ask("ch10_warm", t("ch10.warm_predict"), options)
    if st.button(t("ch10.warm_run"), type="primary", key="ch10_warm_run"):
        _measure("ch10_warm", 1, lambda: cache_warmup.first_requests(ep), "ch10_warm_result")
    result = st.session_state.get("ch10_warm_result")
    if result is None:
        return
    tables.show(
        [
            {
                t("ch10.warm_col_way"): t("ch10.warm_with" if load.warmup else "ch10.warm_without"),
                t("ch10.warm_col_load"): f"{load.load_ms:.0f}",
                t("ch10.warm_col_first"): f"{load.first_ms:.1f}",
                t("ch10.warm_col_second"): f"{load.second_ms:.1f}",
            }
            for load in result.loads
        ]
    )
    cold, warm = result.way(False), result.way(True)
    predict.reveal(
        "ch10_warm",
        options,
        result.outcome(),
        t(
            "ch10.warm_detail",
            cold_first=f"{cold.first_ms:.0f}",
            warm_first=f"{warm.first_ms:.0f}",
            cold_load=f"{cold.load_ms:.0f}",
            warm_load=f"{warm.load_ms:.0f}",
        ),
    )


def cache_warmup_demo() -> None:
    ep = server.endpoint()
    if ep is None:
        server.say_no_server()
        return
    _cache_twice(ep)
    _cache_refusals(ep)
    st.divider()
    _warmup(ep)


# -- perf_analyzer and its server-side split ---------------------------------------------------------------------
def tools_demo() -> None:
    ep = server.endpoint()
    if ep is None:
        server.say_no_server()
        return
    options = predict.choices("ch10.pa", ("cache", "model"))
    predict.ask("ch10_pa", t("ch10.pa_predict"), options)
    if st.button(t("ch10.pa_run"), type="primary", key="ch10_pa_run"):
        _measure("ch10_pa", perf_split.CONCURRENCY, lambda: perf_split.same_vs_varied(ep), "ch10_pa_result")
    result = st.session_state.get("ch10_pa_result")
    if result is None:
        return
    tables.show_compared(
        {
            t(f"ch10.pa_{name}"): {
                t("ch10.pa_col_rps"): run.throughput_rps,
                t("ch10.pa_col_p50"): run.latency_ms.get("p50"),
                t("ch10.pa_col_queue"): run.server.get("queue_ms"),
                t("ch10.pa_col_input"): run.server.get("compute_input_ms"),
                t("ch10.pa_col_infer"): run.server.get("compute_infer_ms"),
                t("ch10.pa_col_output"): run.server.get("compute_output_ms"),
            }
            for name, run in (("same", result.same), ("varied", result.varied))
        },
        t("ch10.pa_col_run"),
    )
    st.caption(t("ch10.pa_command"))
    st.code(" ".join(result.varied.command), language="bash", wrap_lines=True)
    share = result.queue_share()
    predict.reveal(
        "ch10_pa",
        options,
        result.outcome(),
        t(
            "ch10.pa_detail",
            same=f"{result.same.throughput_rps:,.0f}",
            varied=f"{result.varied.throughput_rps:,.0f}",
            share="—" if share is None else f"{share:.0%}",
        ),
    )


render_lesson(
    10,
    live={
        "model_control": model_control_demo,
        "metrics": metrics_demo,
        "wire_limits": wire_demo,
        "health": health_drill.demo,
        "cache_warmup": cache_warmup_demo,
        "tools": tools_demo,
    },
)
