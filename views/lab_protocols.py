"""Protocol lab: HTTP-JSON vs HTTP-binary vs gRPC on a real server — bytes, latency, throughput,
concurrency sweep, perf_analyzer cross-check, streaming. UI only; the work is in triton_kitchen."""

from __future__ import annotations

import json
import threading
from contextlib import contextmanager

import plotly.graph_objects as go
import streamlit as st

from triton_kitchen.core import catalog
from triton_kitchen.labs import protocol_runs
from triton_kitchen.tools import bench, bench_figures, load, perf_analyzer, protocols
from triton_kitchen.tools.worker_process import WorkerError
from ui import batching_why, boxes, classroom, errors, i18n, lab_line, server, tables
from ui.charts import token_arrivals
from ui.i18n import protocol_label, protocol_labeller, t
from ui.image_picker import pick_image

COLORS = bench_figures.PROTOCOL_COLORS
WIRE_CALLS = bench.COMPARE_WIRE_CALLS  # calls per protocol in the load tab's separate byte-counting pass

st.title(t("lab_protocols.title"))
st.caption(t("lab_protocols.intro"))


def _error(exc: Exception) -> None:
    errors.show_error(exc)  # ui.errors maps the error's code to its message


@st.cache_data(show_spinner=False)
def _repo_models() -> list[str]:
    return catalog.model_names(
        first=(catalog.ENSEMBLE_PIPELINE, catalog.IMAGE_CLASSIFIER), leave_out=(catalog.STREAMER,)
    )


ep = server.endpoint()
if ep is None:
    server.say_no_server()
    st.stop()

models = _repo_models()
c1, c2, c3 = st.columns([2, 2, 1])
model = c1.selectbox(
    t("lab_protocols.model"),
    models,
    key="proto_model",
    persist_state="session",
    placeholder=t("widget.choose"),
)
other = c2.text_input(
    t("lab_protocols.other_model"),
    key="proto_other",
    persist_state="session",
    help=t("lab_protocols.other_help"),
).strip()
model = other or model
compression = c3.radio(
    t("lab_protocols.compression"),
    ["none", "gzip"],
    # labels made now, in this run's language (AppTest calls format_func again after the run)
    format_func={c: t(f"lab_protocols.compression_{c}") for c in ("none", "gzip")}.get,
    key="proto_gzip",
    persist_state="session",
    horizontal=True,
)
compression = None if compression == "none" else compression
photo_box = boxes.remembered_expander("proto_photo_box", t("lab_protocols.photo"))
with photo_box:
    image = pick_image("proto", preview=photo_box.open)


# One Stop for every run in the tabs below. It is outside their fragment: its click reruns the whole page, which
# ends a run in progress (a click inside the fragment would wait for the run to end).
st.button(
    t("lab_protocols.stop"), key="proto_stop", icon=":material/stop:", help=t("lab_protocols.stop_help")
)

_WAITING: list = []  # a placeholder in each tab this run does not draw (set by _lab_tabs)


@contextmanager
def _other_tabs_wait():
    """During a long run, the tabs not drawn say when they will be: a click on one waits for the run to end."""
    for slot in _WAITING:
        slot.caption(t("lab_protocols.tab_after_run"))
    try:
        yield
    except Exception:  # the run failed: its message shows, the tabs are free again
        _free_waiting()
        raise
    _free_waiting()  # (a click outside the tabs that stops the run raises no Exception: the page is redrawn)


def _free_waiting() -> None:
    for slot in _WAITING:
        slot.empty()


def _inputs() -> tuple[protocols.ModelInfo, dict]:
    return protocols.sample_inputs(ep, model, "http-binary", image=image)


def _download(rows: list[dict], name: str) -> None:
    d1, d2 = st.columns(2)
    d1.download_button(
        t("lab_protocols.download_csv"),
        bench.rows_to_csv(rows),
        f"{name}.csv",
        "text/csv",
        key=f"{name}_csv",
        on_click="ignore",  # a download changes nothing on the page: no rerun
    )
    d2.download_button(
        t("lab_protocols.download_json"),
        json.dumps(rows, indent=2, default=str),
        f"{name}.json",
        "application/json",
        key=f"{name}_json",
        on_click="ignore",
    )


# -- side by side: same input, same result, payload and wire bytes --------------------------------
def _bytes_tab() -> None:
    """Same input, same result: payload and wire bytes per protocol."""
    st.caption(t("lab_protocols.bytes_help"))
    if st.button(t("lab_protocols.run_bytes"), type="primary", key="proto_bytes_run"):
        with st.spinner(t("lab_protocols.running")):
            try:
                info, arrays = _inputs()
                st.session_state["proto_cmp"] = protocols.compare_protocols(
                    ep, model, arrays, calls=5, compression=compression
                )
                classroom.record_protocol_compare(st.session_state["proto_cmp"])
            except protocols.ProtocolError as exc:
                _error(exc)
    cmp_ = st.session_state.get("proto_cmp")
    if cmp_ is not None:
        if cmp_.same_result:
            st.success(t("lab_protocols.same_result", model=cmp_.model))
        else:
            st.error(t("lab_protocols.different_result", protocols=", ".join(cmp_.disagreements)))
        rows = cmp_.to_dicts()
        tables.show_compared(  # the protocols as columns: one column per measure ran off the page's side
            {
                protocol_label(r["protocol"]): {
                    t("lab_protocols.col_req_payload"): r["request_bytes"],
                    t("lab_protocols.col_resp_payload"): r["response_bytes"],
                    t("lab_protocols.col_wire_sent"): round(r["wire_sent_per_call"]),
                    t("lab_protocols.col_wire_received"): round(r["wire_received_per_call"]),
                    t("lab_protocols.col_first_call"): r["wire_first_call_sent"]
                    + r["wire_first_call_received"],
                    t("lab_protocols.col_median_ms"): r["latency_ms_median"],
                }
                for r in rows
            },
            t("lab_protocols.col_measure"),
            decimals={t("lab_protocols.col_median_ms"): 2},
        )
        fig = go.Figure()
        for key in ("request_bytes", "wire_sent_per_call", "response_bytes", "wire_received_per_call"):
            fig.add_trace(
                go.Bar(
                    x=[protocol_label(r["protocol"]) for r in rows],
                    y=[r[key] for r in rows],
                    name=t(f"lab_protocols.bar_{key}"),
                )
            )
        fig.update_layout(
            barmode="group",
            height=320,
            yaxis_type="log",
            yaxis_title=t("lab_protocols.bytes_per_call"),
            margin=dict(l=10, r=10, t=10, b=10),
        )
        st.plotly_chart(fig, width="stretch", key="proto_bytes_fig")
        m1, m2, m3 = st.columns(3)
        if cmp_.json_inflation:
            m1.metric(t("lab_protocols.json_inflation"), f"×{cmp_.json_inflation:.2f}")
        if cmp_.json_response_inflation:
            m2.metric(t("lab_protocols.json_inflation_resp"), f"×{cmp_.json_response_inflation:.2f}")
        if image:
            try:
                tj = protocols.tensor_vs_jpeg(image)
                m3.metric(
                    t("lab_protocols.tensor_vs_jpeg"),
                    f"×{tj['ratio']:.1f}",
                    t(
                        "lab_protocols.tensor_vs_jpeg_detail",
                        tensor=tj["tensor_bytes"],
                        jpeg=tj["jpeg_bytes"],
                    ),
                    delta_color="off",
                    delta_arrow="off",
                )
            except Exception:  # noqa: BLE001 - not an image: nothing to compare
                pass
        binary_inputs = cmp_.row("http-json").binary_inputs if cmp_.row("http-json") else []
        if binary_inputs:
            st.info(t("lab_protocols.json_binary_fallback", inputs=", ".join(binary_inputs)))
        st.caption(t("lab_protocols.wire_caption"))
        _download(rows, "protocols_bytes")


def _progress_bar(protocol: str):
    """A progress bar that names its protocol (the load tab draws one per protocol)."""
    name = protocol_label(protocol)
    bar = st.progress(0.0, text=t("lab_protocols.progress_wait", proto=name))

    def update(p: bench.BenchProgress) -> None:
        bar.progress(
            p.fraction,
            text=t(
                "lab_protocols.progress", proto=name, done=p.done, errors=p.errors, s=max(0.0, p.elapsed_s)
            ),
        )

    return update


def _bench_table(
    results: list[bench.BenchResult], wire: dict[str, tuple[float, float]] | None = None
) -> None:
    """The measured numbers with translated headers; every column (bytes too) is in the downloads.
    ``wire``: protocol -> (sent, received) bytes per call, counted in a separate pass (the load tab)."""
    rows = []
    for r in results:
        row = {
            t("lab_protocols.col_protocol"): protocol_label(r.protocol),
            t("lab_protocols.col_concurrency"): r.concurrency,
            t("lab_protocols.col_requests"): r.requests,
            t("lab_protocols.col_errors"): r.errors,
            t("lab_protocols.col_rps"): r.throughput_rps,
            t("lab_protocols.col_p50"): r.latency_ms["p50"],
            t("lab_protocols.col_p99"): r.latency_ms["p99"],
        }
        if wire is not None:
            counted = wire.get(r.protocol)
            row[t("lab_protocols.col_wire_per_call")] = round(sum(counted)) if counted else None
        if any(x.protocol in protocols.SHM_PROTOCOLS for x in results):  # what went through memory instead
            row[t("lab_protocols.col_shm_per_call")] = round(r.shm_bytes / r.requests) if r.requests else None
        rows.append(row)
    tables.show(rows)
    st.caption(t("lab_protocols.table_note"))


# -- bounded load --------------------------------------------------------------------------------------
def _load_tab() -> None:
    """A bounded load per protocol: latency spread, throughput, wire bytes (counted in a pass of their own)."""
    l1, l2, l3, l4 = st.columns(4)
    # shared memory: only where the server maps this machine's memory (the embedded one), and never gzipped
    offered = list(protocols.PROTOCOLS) + (list(protocols.SHM_PROTOCOLS) if ep and ep.embedded else [])
    chosen = l1.multiselect(
        t("lab_protocols.protocols"),
        offered,
        format_func=protocol_labeller(),
        default=list(protocols.PROTOCOLS),
        key="proto_load_protocols",
        persist_state="session",
        placeholder=t("widget.choose"),
    )
    conc = l2.slider(
        t("lab_protocols.concurrency"),
        1,
        load.MAX_CONCURRENCY,
        4,
        key="proto_load_c",
        persist_state="session",
    )
    dur = l3.slider(t("lab_protocols.duration"), 1, 30, 3, key="proto_load_d", persist_state="session")
    cap = l4.number_input(
        t("lab_protocols.max_requests"),
        1,
        load.MAX_REQUESTS,
        2000,
        key="proto_load_cap",
        persist_state="session",
    )
    st.caption(t("lab_protocols.limits", c=load.MAX_CONCURRENCY))
    lab_line.line_note(conc)
    st.caption(t("lab_protocols.shm_note" if ep and ep.embedded else "lab_protocols.shm_local_only"))
    if compression and any(p in protocols.SHM_PROTOCOLS for p in chosen):
        st.caption(t("lab_protocols.shm_no_compression"))
        chosen = [p for p in chosen if p not in protocols.SHM_PROTOCOLS]
    go_load = server.run_button(
        t("lab_protocols.run_load"), type="primary", key="proto_load_run", disabled=not chosen
    )
    if go_load:
        loaded = bench.LoadComparison([], {})
        stop = threading.Event()
        watch = server.server_watch(stop)  # a dead server ends the run at once
        bars: dict = {}

        def _progress(reported: tuple) -> None:  # (protocol, None) as its run begins, then its progress
            protocol, p = reported
            if protocol not in bars:
                bars[protocol] = _progress_bar(protocol)
            watch()
            if p is not None:
                bars[protocol](p)

        ask = protocol_runs.LoadAsk(model, image, compression, conc, float(dur), int(cap))
        try:
            with _other_tabs_wait():
                # in the class's line (one student cannot starve the class), then in a worker process
                loaded = lab_line.run_heavy(
                    conc, protocol_runs.load, ep, ask, chosen, progress=_progress, stop=stop
                )
        except (protocols.ProtocolError, WorkerError) as exc:
            _error(exc)
        server.say_if_stopped_by_death()
        st.session_state["proto_load"] = loaded.results
        st.session_state["proto_load_wire"] = {p: (w.sent, w.received) for p, w in loaded.wire.items()}
        classroom.record_protocol_runs(loaded.results)
    results = st.session_state.get("proto_load") or []
    load_wire = st.session_state.get("proto_load_wire") or {}
    if results:
        for r in results:
            for msg in r.error_messages:  # "<code>: <message>": a refused shared memory names the flag
                code = "shm_refused" if msg.startswith("shm_refused:") else "server_error"
                errors.show_error(code, detail=f"{r.protocol}: {msg}")
        fig = go.Figure()
        for r in results:
            fig.add_trace(
                go.Box(
                    y=r.latencies_ms,
                    name=protocol_label(r.protocol),
                    marker_color=COLORS[r.protocol],
                    boxpoints=False,
                )
            )
        fig.update_layout(
            height=340, yaxis_title=t("lab_protocols.latency_ms"), margin=dict(l=10, r=10, t=10, b=10)
        )
        st.plotly_chart(fig, width="stretch", key="proto_load_box")
        _bench_table(results, load_wire)
        for r in results:  # why the numbers are what they are: Triton's own split, Little's law
            batching_why.bench_lines(protocol_label(r.protocol), r)
        st.caption(t("lab_protocols.wire_pass_note", calls=WIRE_CALLS))
        rows = [r.to_row() for r in results]
        for row in rows:
            sent, received = load_wire.get(row["protocol"], (None, None))
            row.update(
                wire_bytes_sent_per_call=sent,
                wire_bytes_received_per_call=received,
                wire_counted=f"separate pass, {WIRE_CALLS} calls" if sent is not None else "",
            )
        st.caption(t("lab_protocols.engine_note", engine=_engine_label()))
        _download(rows, "protocols_load")


# -- concurrency sweep -------------------------------------------------------------------------------
def _sweep_tab() -> None:
    """Throughput against p99 latency over concurrency levels."""
    s1, s2, s3 = st.columns(3)
    sweep_protocols = s1.multiselect(
        t("lab_protocols.protocols"),
        list(protocols.PROTOCOLS),
        format_func=protocol_labeller(),
        default=["http-binary", "grpc"],
        key="proto_sweep_protocols",
        persist_state="session",
        placeholder=t("widget.choose"),
    )
    levels = s2.multiselect(
        t("lab_protocols.levels"),
        [1, 2, 4, 8, 16],
        default=[1, 4, 16],
        key="proto_sweep_levels",
        persist_state="session",
        placeholder=t("widget.choose"),
    )
    sdur = s3.slider(
        t("lab_protocols.duration_point"), 1, 10, 2, key="proto_sweep_d", persist_state="session"
    )
    go_sweep = server.run_button(
        t("lab_protocols.run_sweep"),
        type="primary",
        key="proto_sweep_run",
        disabled=not (sweep_protocols and levels),
    )
    if go_sweep:
        bar = st.progress(0.0)

        def sweep_progress(i: int, n: int, p: bench.BenchProgress) -> None:
            bar.progress(min(1.0, (i + p.fraction) / n), text=t("lab_protocols.sweep_step", i=i + 1, n=n))

        sweep_stop = threading.Event()
        sweep_watch = server.server_watch(sweep_stop)
        ask = protocol_runs.LoadAsk(model, image, compression, duration_s=float(sdur))

        def _sweep_progress(reported: tuple) -> None:
            sweep_watch()
            sweep_progress(*reported)

        try:
            with _other_tabs_wait():
                st.session_state["proto_sweep"] = lab_line.run_heavy(
                    max(levels),
                    protocol_runs.sweep,
                    ep,
                    ask,
                    tuple(sweep_protocols),
                    tuple(sorted(levels)),
                    progress=_sweep_progress,
                    stop=sweep_stop,
                )
        except (protocols.ProtocolError, WorkerError) as exc:
            _error(exc)
        server.say_if_stopped_by_death()
    sweep_results = st.session_state.get("proto_sweep") or []
    if sweep_results:
        fig = go.Figure()
        for p in dict.fromkeys(r.protocol for r in sweep_results):
            rs = [r for r in sweep_results if r.protocol == p]
            fig.add_trace(bench_figures.sweep_trace(rs, protocol_label(p), p))
        fig.update_layout(
            height=380,
            xaxis_title=t("lab_protocols.throughput"),
            yaxis_title=t("lab_protocols.p99"),
            margin=dict(l=10, r=10, t=10, b=10),
        )
        st.plotly_chart(fig, width="stretch", key="proto_sweep_fig")
        _bench_table(sweep_results)
        rows = [r.to_row() for r in sweep_results]
        _download(rows, "protocols_sweep")


# -- perf_analyzer cross-check -----------------------------------------------------------------------
def _engine_label() -> str:
    """The lab's load engine: its name, and what it is in the reader's language."""
    return t("lab_protocols.engine_name", name=bench.ENGINE_NAME)


def _check_tab() -> None:
    """This lab's engine against Triton's own perf_analyzer on the same load."""
    st.caption(t("lab_protocols.check_help"))
    k1, k2, k3 = st.columns(3)
    kp = k1.radio(
        t("lab_protocols.protocol"),
        ["http-binary", "grpc"],
        key="proto_check_p",
        persist_state="session",
        horizontal=True,
        format_func=protocol_labeller(),
    )
    kc = k2.slider(
        t("lab_protocols.concurrency"),
        1,
        load.MAX_CONCURRENCY,
        4,
        key="proto_check_c",
        persist_state="session",
    )
    kd = k3.slider(t("lab_protocols.duration"), 3, 30, 6, key="proto_check_d", persist_state="session")
    if st.button(
        t("lab_protocols.run_check"),
        type="primary",
        key="proto_check_run",
        disabled=perf_analyzer.perf_analyzer_binary() is None,
    ):
        with st.spinner(t("lab_protocols.running")), _other_tabs_wait():
            try:
                checked = server.lab_run(
                    kc,
                    lambda: perf_analyzer.cross_check(
                        ep, load.LoadSpec(model, kp, kc, float(kd)), rounds=max(3, int(kd) // 2)
                    ),
                )
                if checked is not server.BUSY:
                    st.session_state["proto_check"] = checked
            except (perf_analyzer.PerfAnalyzerError, protocols.ProtocolError) as exc:
                errors.show_error("server_error", detail=str(exc))
    if perf_analyzer.perf_analyzer_binary() is None:
        st.warning(t("lab_protocols.no_perf_analyzer"))
    check = st.session_state.get("proto_check")
    if check:
        a, b, c = st.columns(3)
        a.metric(t("lab_protocols.engine_rps"), f"{check['engine_rps']:,.1f}")
        b.metric(t("lab_protocols.pa_rps"), f"{check['perf_analyzer_rps']:,.1f}")
        c.metric(t("lab_protocols.difference"), f"{check['difference'] * 100:+.1f}%")
        (st.success if check["agree"] else st.warning)(
            t(
                "lab_protocols.agree" if check["agree"] else "lab_protocols.disagree",
                tol=round(check["tolerance"] * 100),
            )
        )
        st.caption(
            t(
                "lab_protocols.check_roles",
                engine=_engine_label(),
                check=t("lab_protocols.check_name", name=perf_analyzer.CHECK_NAME),
            )
        )
        st.code(check["perf_analyzer_shown"], language="bash", wrap_lines=True)


# -- streaming ---------------------------------------------------------------------------------------
def _stream_tab() -> None:
    """Tokens streamed over gRPC against the same answer over HTTP: first token, then the gaps."""
    text = st.text_area(
        t("lab_protocols.stream_text"),
        i18n.default_text("proto_stream_text", "lab_protocols.stream_default"),
        key="proto_stream_text",
        persist_state="session",
        max_chars=600,
    )
    delay = st.slider(
        t("lab_protocols.stream_delay"), 0, 200, 30, key="proto_stream_delay", persist_state="session"
    )
    if server.run_button(
        t("lab_protocols.run_stream"), type="primary", key="proto_stream_run", disabled=not text.strip()
    ):
        with st.spinner(t("lab_protocols.running")), _other_tabs_wait():
            st.session_state["proto_stream"] = protocols.compare_streaming(ep, text, delay)
    runs = st.session_state.get("proto_stream") or []
    if runs:
        cols = st.columns(len(runs))
        for col, run in zip(cols, runs, strict=True):
            if run.error:
                errors.show_error("server_error", detail=run.error)
            d = run.to_dict()
            col.metric(
                t(f"lab_protocols.{run.protocol}"),
                t("lab_protocols.ttft", ms=d["ttft_ms"] or 0),
                t("lab_protocols.itl", ms=d["inter_token_ms_mean"] or 0, n=d["tokens"]),
                delta_color="off",
                delta_arrow="off",
            )
        token_arrivals(
            runs,
            names=[t(f"lab_protocols.{run.protocol}") for run in runs],
            height=300,
            colors=[COLORS[run.protocol] for run in runs],
            key="proto_stream_fig",
        )
        st.caption(t("lab_protocols.stream_caption"))


TABS = {
    "bytes": _bytes_tab,
    "load": _load_tab,
    "sweep": _sweep_tab,
    "check": _check_tab,
    "stream": _stream_tab,
}


@st.fragment
def _lab_tabs() -> None:
    """The experiments as tabs in a fragment: a tab click reruns only the fragment, and Streamlit holds a fragment's
    rerun until a run in progress ends, so a load test running in one tab is never cut by opening another. Only
    the open tab is drawn: a fresh page draws one tab's widgets, not all five's."""
    tabs = boxes.remembered_tabs("proto_tabs", {tab: t(f"lab_protocols.tab_{tab}") for tab in TABS})
    every = boxes.every_box_open()
    _WAITING[:] = [tab.empty() for tab in tabs if not (tab.open or every)]  # before any run starts
    for draw, tab in zip(TABS.values(), tabs, strict=True):
        if tab.open or every:
            with tab:
                draw()


_lab_tabs()
