"""The batching lab's why layer: prediction beside measurement, the server's own split of the time, Little's
law, latency against offered load, and a live metrics panel. UI only; the numbers come from the library."""

from __future__ import annotations

import math
import threading

import plotly.graph_objects as go
import streamlit as st

from triton_kitchen.core import override
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.labs import batching
from triton_kitchen.tools import batch_runs, metrics, sim_figures
from ui import errors, server, tables
from ui.i18n import lang, t

LOAD_KEY = "batch_offered_load"
LOAD_FRACTIONS = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5)  # of the measured "on" throughput
LOAD_WINDOW_S = 2.0  # each offered rate's measuring window
LOAD_SENDERS = 16  # open-loop senders: the measured run's workers, and the simulator's max_in_flight default


def _fmt(v, spec: str = ".1f") -> str:
    return "—" if v is None else format(v, spec)


def prediction_table(off, on, calibration_error=None) -> None:
    """Measured and simulated side by side for each setting (or why there is no prediction)."""
    if calibration_error is not None:
        errors.show_error(calibration_error)
    if not (off.prediction and on.prediction):
        return
    st.markdown(f"**{t('why.predicted_title')}**")
    rows = []
    for name, r in (("off", off), ("on", on)):
        p = r.prediction
        rows.append(
            {
                t("why.col_setting"): t(f"lab_batching.series_{name}"),
                t("why.col_rps_measured"): r.throughput_rps,
                t("why.col_rps_simulated"): p["throughput_rps"],
                t("why.col_p50_measured"): r.latency_ms["p50"],
                t("why.col_p50_simulated"): p["latency_ms"]["p50"],
                t("why.col_batch_measured"): r.mean_batch_size,
                t("why.col_batch_simulated"): p["mean_batch"],
            }
        )
    tables.show(rows, decimals={t("why.col_batch_measured"): 2, t("why.col_batch_simulated"): 2})
    fig = sim_figures.histograms(
        {
            t("why.series_measured"): on.batch_histogram,
            t("why.series_simulated"): on.prediction["batch_histogram"],
        },
        lang(),
    )
    st.plotly_chart(fig, width="stretch", key="why_hist")
    st.caption(t("why.predicted_caption"))


def server_split(name: str, r) -> None:
    """The batching lab's line pair for one setting (``batch_runs.ExperimentResult``)."""
    why_lines(t(f"lab_batching.series_{name}"), r.server, r.littles_law, r.mean_latency_ms, r.throughput_rps)


def bench_lines(label: str, r) -> None:
    """The same lines for a ``bench.BenchResult`` (the protocol lab's load runs)."""
    analysis = r.analysis()
    why_lines(label, analysis["server"], analysis["littles_law"], r.mean_latency_ms, r.throughput_rps)


def why_lines(label: str, s: dict | None, law: dict | None, mean: float | None, rps: float) -> None:
    """Where the time went, by Triton's own account (per step for an ensemble), and Little's law."""
    if s and s.get("requests"):
        inside = s.get("request_ms") or 0.0
        compute = (s["compute_input_ms"] or 0) + (s["compute_infer_ms"] or 0) + (s["compute_output_ms"] or 0)
        st.caption(
            t(
                "why.split",
                setting=label,
                queue=s["queue_ms"] or 0.0,
                compute=compute,
                inside=inside,
                mean=mean or 0.0,
                outside=max(0.0, (mean or 0.0) - inside),
            )
        )
        steps = s.get("per_model") or {}
        if steps:
            parts = [
                t(
                    "why.step",
                    model=m,
                    queue=v["queue_ms"] or 0.0,
                    compute=v["compute_infer_ms"] or 0.0,
                    batch=(v["inferences"] / v["executions"]) if v.get("executions") else 0.0,
                )
                for m, v in steps.items()
            ]
            st.caption(t("why.per_step", steps="; ".join(parts)))
    if law and "in_flight" in law:
        gap = law["gap"] * 100
        key = "why.little_ok" if abs(gap) <= 10 else "why.little_off"
        st.caption(
            t(
                key,
                c=law["in_flight"],
                rps=rps,
                predicted=law["predicted_latency_ms"],
                measured=law["measured_mean_latency_ms"],
                gap=gap,
            )
        )


def offered_load_section(
    ep: Endpoint, settings: batch_runs.BatchingSettings, capacity: float | None, cal=None
) -> None:
    """Open-loop points at fractions of the measured capacity: throughput follows the offered rate until the
    knee, where latency climbs."""
    st.subheader(t("why.load_title"))
    st.caption(t("why.load_intro"))
    if not capacity:
        st.info(t("why.load_needs_run"))
        return
    rates = [round(capacity * f, 1) for f in LOAD_FRACTIONS]
    if st.button(t("why.load_run", rates=", ".join(f"{r:g}" for r in rates)), key="why_load_run"):
        bar = st.progress(0.0)
        stop = threading.Event()
        watch = server.server_watch(stop)

        def progress(i: int, n: int, p) -> None:
            watch()
            bar.progress(min(1.0, (i + p.fraction) / n), text=t("why.load_progress", i=i + 1, n=n))

        try:
            points = server.lab_run(
                16,
                lambda: batching.offered_load(
                    ep,
                    settings,
                    rates,
                    duration_s=LOAD_WINDOW_S,
                    workers=LOAD_SENDERS,
                    stop=stop,
                    progress=progress,
                    calibration=cal,
                ),
            )
            if points is not server.BUSY:
                st.session_state[LOAD_KEY] = points
        except Exception as exc:  # noqa: BLE001 - show_error logs it; the page keeps working
            errors.show_error(exc)
    points = st.session_state.get(LOAD_KEY)
    if not points:
        return
    fig = go.Figure()
    x = [p.offered_rps for p in points]
    for q, dash in (("p50", None), ("p99", "dot")):
        fig.add_trace(
            go.Scatter(
                x=x,
                y=[p.latency_ms[q] for p in points],
                mode="lines+markers",
                name=t("why.series_measured_q", q=q),
                line=dict(color="#2171b5", dash=dash),
            )
        )
        if points[0].simulated:
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=[p.simulated["latency_ms"][q] for p in points],
                    mode="lines+markers",
                    name=t("why.series_simulated_q", q=q),
                    line=dict(color="#f39c12", dash=dash),
                )
            )
    ceiling = None
    if points[0].simulated and points[-1].simulated.get("throughput_rps"):
        # with every sender waiting, latency (counted from the actual send) levels at senders / throughput
        ceiling = LOAD_SENDERS * 1000 / points[-1].simulated["throughput_rps"]
        if (points[-1].simulated["latency_ms"]["p50"] or 0) < 0.95 * ceiling:
            ceiling = None
        else:
            # a trace, not add_hline: on a log axis shapes and annotations take log10 of the value
            fig.add_trace(
                go.Scatter(
                    x=[min(x), max(x)],
                    y=[ceiling, ceiling],
                    mode="lines",
                    line=dict(color="#888", dash="dash", width=1),
                    hoverinfo="skip",
                    showlegend=False,
                )
            )
            fig.add_annotation(
                x=min(x),
                y=math.log10(ceiling),
                text=t("why.load_ceiling", n=LOAD_SENDERS, ms=ceiling),
                showarrow=False,
                xanchor="left",
                yanchor="bottom",
                font=dict(size=11, color="#666"),
            )
    fig.update_layout(
        height=320,
        margin=dict(l=10, r=10, t=10, b=10),
        xaxis_title=t("why.offered_axis"),
        yaxis_title=t("why.latency_axis"),
        yaxis_type="log",
    )
    st.plotly_chart(fig, width="stretch", key="why_load_fig")
    tables.show(
        [
            {
                t("why.col_offered"): p.offered_rps,
                t("why.col_rps_measured"): p.throughput_rps,
                t("why.col_p50_measured"): p.latency_ms["p50"],
                t("why.col_p99_measured"): p.latency_ms["p99"],
                t("why.col_late"): p.late,
            }
            for p in points
        ]
    )
    st.caption(t("why.load_caption"))
    if ceiling is not None:
        st.caption(t("why.load_ceiling_note", n=LOAD_SENDERS))


@st.fragment(run_every=2.0)
def metrics_panel(ep: Endpoint, titled: bool = True) -> None:
    """What Triton's metrics port says now, refreshed every 2 s (measured by the server); ``titled=False``
    when the page's box already carries the title."""
    if titled:
        st.markdown(f"**{t('why.metrics_title')}**")
    try:
        now = metrics.scrape(metrics.address_of(ep))
    except metrics.MetricsError as exc:
        st.caption(t("why.metrics_none", url=metrics.address_of(ep), detail=exc.detail))
        return
    before = st.session_state.get("why_metrics_prev")
    st.session_state["why_metrics_prev"] = now
    m = now.models.get(override.MODEL)
    if m is None:
        st.caption(t("why.metrics_no_model"))
        return
    d = metrics.delta(before, now).get(override.MODEL) if before else None
    c1, c2, c3, c4, c5 = st.columns(5)
    c1.metric(t("why.m_success"), f"{m.success:,.0f}", help=t("why.m_success_help"))
    c2.metric(t("why.m_failure"), f"{m.failure:,.0f}")
    c3.metric(t("why.m_batch"), _fmt(m.mean_batch, ".2f"), help=t("why.m_batch_help"))
    c4.metric(t("why.m_pending"), f"{m.pending:,.0f}", help=t("why.m_pending_help"))
    recent = d.per_request_ms("queue_us") if d and d.success else None
    c5.metric(t("why.m_queue"), _fmt(recent, ".1f"), help=t("why.m_queue_help"))
    for uuid, gpu in now.gpus.items():
        used = gpu.get("memory_used_bytes", 0) / 1e9
        total = gpu.get("memory_total_bytes", 0) / 1e9
        st.caption(t("why.gpu", uuid=uuid, util=gpu.get("utilization", 0) * 100, used=used, total=total))
