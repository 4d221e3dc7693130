"""Batching lab: reload the classifier with other dynamic batching settings, load it, and compare
with batching off — throughput, p99 and Triton's own batch-size histogram. UI only."""

from __future__ import annotations

import json
import os
import threading

import plotly.graph_objects as go
import streamlit as st

from triton_kitchen.core import override
from triton_kitchen.labs import batching
from triton_kitchen.tools import batch_runs, bench, load
from ui import batching_stability, batching_why, classroom, errors, lab_line, server, tables
from ui.i18n import t
from ui.lesson import lazy_box

st.title(t("lab_batching.title"))
st.caption(t("lab_batching.intro"))

ep = server.endpoint()
if ep is None:
    server.say_no_server()
    st.stop()
if not ep.headers:
    st.info(t("lab_batching.remote_note"))

c1, c2, c3 = st.columns(3)
delay = c1.slider(
    t("lab_batching.delay"),
    0,
    20_000,
    2000,
    step=500,
    key="batch_delay",
    persist_state="session",
    help=t("lab_batching.delay_help"),
)
preferred = c2.multiselect(
    t("lab_batching.preferred"),
    list(range(1, 9)),
    default=[],
    key="batch_preferred",
    persist_state="session",
    help=t("lab_batching.preferred_help"),
    placeholder=t("lab_batching.preferred_none"),
)
instances = c3.slider(
    t("lab_batching.instances"), 1, override.MAX_INSTANCES, 1, key="batch_instances", persist_state="session"
)
c4, c5 = st.columns(2)
concurrency = c4.slider(
    t("lab_batching.concurrency"), 1, load.MAX_CONCURRENCY, 8, key="batch_c", persist_state="session"
)
duration = c5.slider(t("lab_batching.duration"), 1, 15, 3, key="batch_d", persist_state="session")
st.caption(t("lab_batching.shared_note"))
lab_line.line_note(int(concurrency))

run = st.button(t("lab_batching.run"), type="primary", key="batch_run")
st.button(
    t("lab_batching.stop"), key="batch_stop"
)  # any click reruns the page: the run stops, config restored
if run:
    bar = st.progress(0.0)

    def progress(name: str, p: bench.BenchProgress) -> None:
        base = 0.0 if name == "off" else 0.5
        bar.progress(min(1.0, base + p.fraction / 2), text=t(f"lab_batching.phase_{name}", done=p.done))

    settings = batch_runs.BatchingSettings(True, int(delay), sorted(preferred), int(instances))
    stop = threading.Event()
    watch = server.server_watch(stop)  # a dead server ends the run at once

    def _progress(reported: tuple) -> None:
        watch()
        progress(*reported)

    try:
        # in the class's line (one batching run at a time: the classifier is shared), then in a worker
        # process; the page holds the classifier's override too, so another page's run cannot reload it meanwhile
        with lab_line.turn_in_line(int(concurrency), group=override.MODEL) as in_worker:
            with override.overridden(ep, override.MODEL):
                result = in_worker(
                    batching.compare_batching_reported,
                    ep,
                    settings,
                    int(concurrency),
                    float(duration),
                    progress=_progress,
                    stop=stop,
                )
        st.session_state["batch_result"] = result
        st.session_state.pop("batch_error", None)
        batching_stability.remember(result)
        classroom.record_batching(result)
    except Exception as exc:  # noqa: BLE001 - a dead server must not break the page; show_error logs it
        # kept with the server it came from: the next rerun (any expander, any slider) shows it again
        st.session_state["batch_error"] = (ep.http_url, exc)
    server.say_if_stopped_by_death()
failed = st.session_state.get("batch_error")
if failed is not None and failed[0] == ep.http_url:
    errors.show_error(failed[1])


def _setting(s: batch_runs.BatchingSettings) -> str:
    """The setting in the reader's language (the JSON download keeps the library's English label)."""
    if not s.enabled:
        return t("lab_batching.setting_off", n=s.instance_count)
    preferred = ", ".join(map(str, s.preferred_batch_sizes)) or t("lab_batching.preferred_none_short")
    return t("lab_batching.setting_on", delay=s.max_queue_delay_us, preferred=preferred, n=s.instance_count)


result = st.session_state.get("batch_result")
if result and result.get("on") and result.get("off"):
    off, on = result["off"], result["on"]
    ratio = result["throughput_ratio"]
    m1, m2, m3, m4 = st.columns(4)
    m1.metric(t("lab_batching.rps_off"), f"{off.throughput_rps:,.1f}")
    m2.metric(t("lab_batching.rps_on"), f"{on.throughput_rps:,.1f}")
    m3.metric(t("lab_batching.ratio"), f"×{ratio:.2f}" if ratio else "—")
    m4.metric(
        t("lab_batching.p99"),
        t("lab_batching.ms", ms=on.latency_ms["p99"] or 0),
        t("lab_batching.p99_off", ms=off.latency_ms["p99"] or 0),
        delta_color="off",
        delta_arrow="off",
    )
    batching_stability.show(result)
    if ratio is not None and ratio < 1:
        if ep.embedded:
            st.info(t("lab_batching.slower_cpu", ratio=ratio, cores=os.cpu_count() or 1), icon="💡")
        else:
            st.info(t("lab_batching.slower_remote", ratio=ratio), icon="💡")
    fig = go.Figure()
    for name, r in (("off", off), ("on", on)):
        fig.add_trace(
            go.Bar(
                x=list(r.batch_histogram),
                y=list(r.batch_histogram.values()),
                name=t(f"lab_batching.series_{name}"),
            )
        )
    fig.update_layout(
        barmode="group",
        height=320,
        xaxis_title=t("lab_batching.batch_size"),
        yaxis_title=t("lab_batching.executions"),
        xaxis=dict(dtick=1),
        margin=dict(l=10, r=10, t=10, b=10),
    )
    st.plotly_chart(fig, width="stretch", key="batch_hist")
    st.caption(
        t(
            "lab_batching.hist_caption",
            c=result["concurrency"],
            s=result["duration_s"],
            w=batch_runs.WARMUP_S,
            off_images=off.images,
            on_images=on.images,
            off_requests=off.requests,
            on_requests=on.requests,
        )
    )
    tables.show(
        [
            {
                t("lab_batching.col_setting"): _setting(r.settings),
                t("lab_batching.col_rps"): r.throughput_rps,
                t("lab_batching.col_p50"): r.latency_ms["p50"],
                t("lab_batching.col_p99"): r.latency_ms["p99"],
                t("lab_batching.col_mean_batch"): r.mean_batch_size,
                t("lab_batching.col_requests"): r.requests,
                t("lab_batching.col_errors"): r.errors,
            }
            for r in (off, on)
        ],
        decimals={t("lab_batching.col_mean_batch"): 2},
    )
    for name, r in (("off", off), ("on", on)):
        batching_why.server_split(name, r)
    batching_why.prediction_table(off, on, result.get("calibration_error"))
    rows = [r.to_dict() for r in (off, on)]
    cal = result.get("calibration")
    st.download_button(
        t("lab_batching.download_json"),
        json.dumps(
            {
                **result,
                "off": rows[0],
                "on": rows[1],
                "calibration": cal.to_json() if cal else None,
                "calibration_error": None,
            },
            indent=2,
            default=str,
        ),
        "batching.json",
        "application/json",
        key="batch_json",
        on_click="ignore",  # a download changes nothing on the page: no rerun
    )

st.divider()
measured_on = result.get("on") if result else None  # the knee is measured at the settings the comparison ran
batching_why.offered_load_section(
    ep,
    measured_on.settings if measured_on else None,
    measured_on.throughput_rps if measured_on else None,
    result.get("calibration") if result else None,
)
# drawn (and polling the metrics port every 2 s) only while open: a fresh tab, and a class's 30 tabs, skip it
metrics_box = lazy_box("batch_metrics_box", f"**{t('why.metrics_title')}**")
if metrics_box is not None:
    with metrics_box:
        batching_why.metrics_panel(ep, titled=False)
