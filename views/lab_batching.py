"""Batching lab: reload the classifier with other dynamic batching settings, load it, and compare
with batching off — throughput, p99 and Triton's own batch-size histogram. UI only."""

from __future__ import annotations

import json
import threading

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from triton_kitchen import batching, bench
from ui import state
from ui.state import t

st.title(t("lab_batching.title"))
st.caption(t("lab_batching.intro"))

ep = state.endpoint()
if ep is None:
    state.say_no_server()
    st.stop()
if not ep.headers:
    st.info(t("lab_batching.remote_note"))

c1, c2, c3 = st.columns(3)
delay = c1.slider(t("lab_batching.delay"), 0, 20_000, 2000, step=500, key="batch_delay",
                  help=t("lab_batching.delay_help"))
preferred = c2.multiselect(t("lab_batching.preferred"), list(range(1, 9)), default=[4, 8], key="batch_preferred",
                           help=t("lab_batching.preferred_help"))
instances = c3.slider(t("lab_batching.instances"), 1, batching.MAX_INSTANCES, 1, key="batch_instances")
c4, c5 = st.columns(2)
concurrency = c4.slider(t("lab_batching.concurrency"), 1, bench.MAX_CONCURRENCY, 8, key="batch_c")
duration = c5.slider(t("lab_batching.duration"), 1, 15, 3, key="batch_d")
st.caption(t("lab_batching.shared_note"))

run = st.button(t("lab_batching.run"), type="primary", key="batch_run")
st.button(t("lab_batching.stop"), key="batch_stop")  # any click reruns the page: the run stops, config restored
if run:
    bar = st.progress(0.0)

    def progress(name: str, p: bench.BenchProgress) -> None:
        base = 0.0 if name == "off" else 0.5
        bar.progress(min(1.0, base + p.fraction / 2), text=t(f"lab_batching.phase_{name}", done=p.done))

    settings = batching.BatchingSettings(True, int(delay), sorted(preferred), int(instances))
    stop = threading.Event()
    watch = state.server_watch(stop)  # a dead server ends the run at once
    try:
        state.lab_run(int(concurrency), lambda: st.session_state.__setitem__(
            "batch_result", batching.compare_batching(ep, settings, int(concurrency), float(duration), stop=stop,
                                                      progress=lambda n, p: (watch(), progress(n, p)))))
    except batching.BatchingError as exc:
        key = f"lab_batching.error_{exc.code}"
        st.error(t(key))
        with st.expander(t("error.details")):
            st.code(str(exc), language=None, wrap_lines=True)
    except Exception as exc:  # noqa: BLE001 - a dead server must not break the page
        state.show_error(exc)
    state.say_if_stopped_by_death()

result = st.session_state.get("batch_result")
if result and result.get("on") and result.get("off"):
    off, on = result["off"], result["on"]
    m1, m2, m3, m4 = st.columns(4)
    m1.metric(t("lab_batching.rps_off"), f"{off.throughput_rps:.1f}")
    m2.metric(t("lab_batching.rps_on"), f"{on.throughput_rps:.1f}")
    m3.metric(t("lab_batching.ratio"), f"x{result['throughput_ratio']:.2f}" if result["throughput_ratio"] else "—")
    m4.metric(t("lab_batching.p99"), f"{on.latency_ms['p99'] or 0:.0f} ms",
              t("lab_batching.p99_off", ms=off.latency_ms["p99"] or 0), delta_color="off")
    fig = go.Figure()
    for name, r in (("off", off), ("on", on)):
        fig.add_trace(go.Bar(x=list(r.batch_histogram), y=list(r.batch_histogram.values()),
                             name=t(f"lab_batching.series_{name}")))
    fig.update_layout(barmode="group", height=320, xaxis_title=t("lab_batching.batch_size"),
                      yaxis_title=t("lab_batching.executions"), xaxis=dict(dtick=1),
                      margin=dict(l=10, r=10, t=10, b=10))
    st.plotly_chart(fig, width="stretch", key="batch_hist")
    st.caption(t("lab_batching.hist_caption", c=result["concurrency"], s=result["duration_s"]))
    rows = [r.to_dict() for r in (off, on)]
    st.dataframe(pd.DataFrame([{
        t("lab_batching.col_setting"): r["label"], t("lab_batching.col_rps"): round(r["throughput_rps"], 1),
        "p50 ms": round(r["latency_ms"]["p50"] or 0, 1), "p99 ms": round(r["latency_ms"]["p99"] or 0, 1),
        t("lab_batching.col_mean_batch"): round(r["mean_batch_size"] or 0, 2),
        t("lab_batching.col_requests"): r["requests"], t("lab_batching.col_errors"): r["errors"],
    } for r in rows]), hide_index=True, width="stretch")
    st.download_button(t("lab_batching.download_json"), json.dumps({**result, "off": rows[0], "on": rows[1]},
                                                                    indent=2, default=str),
                       "batching.json", "application/json", key="batch_json")
