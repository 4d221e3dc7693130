"""Flow lab: one request animated on the ensemble's DAG from its real trace, its Gantt, and the experiments."""

from __future__ import annotations

import streamlit as st

from triton_kitchen.core import catalog
from triton_kitchen.core.catalog import TTA_ENSEMBLE
from triton_kitchen.core.server import DEFAULT_REPOSITORY
from triton_kitchen.labs import experiments
from triton_kitchen.tools import flow
from ui import boxes, errors, i18n, server, tables
from ui.i18n import t
from ui.image_picker import pick_image
from ui.inside_dag import inside_view
from ui.lesson import lazy_box
from ui.tensor_peek import peek_view

st.title(t("lab_flow.title"))
st.caption(t("lab_flow.intro"))


def _kept(key: str, result) -> None:
    """Keep an experiment's result, unless the class's lab budget was taken (the page said so)."""
    if result is not server.BUSY:
        st.session_state[key] = result


def _ensembles() -> list[str]:
    return catalog.ensemble_names()


@st.cache_data(show_spinner=False)
def _recorded() -> dict:
    return {r.dag.name: r for r in flow.recorded()}


@st.cache_resource(show_spinner=False, max_entries=64)
def _recorded_figures(model: str, lang: str, pacing: str):
    """The recorded run's animation and Gantt: the same for every student, built once (about 0.3 s). One shared
    object, not a copy per call (st.plotly_chart only reads a figure; unpickling a copy cost half a build)."""
    run = _recorded()[model]
    return flow.animation(run, lang, pacing), flow.gantt(run, lang)


def _figures(run, recorded: bool, lang: str, pacing: str):
    """The animation and the Gantt of ``run``, built once per run, language and pacing (not on every rerun)."""
    if recorded:
        return _recorded_figures(run.dag.name, lang, pacing)
    kept = st.session_state.get("flow_figures")
    if kept is None or kept[0] is not run or kept[1] != (lang, pacing):  # `is`: kept[0] holds the run alive
        kept = (run, (lang, pacing), (flow.animation(run, lang, pacing), flow.gantt(run, lang)))
        st.session_state["flow_figures"] = kept
    return kept[2]


names = _ensembles()
default = i18n.selected_model() if i18n.selected_model() in names else names[0]
c1, c2, c3 = st.columns([2, 1, 2])
model = c1.selectbox(
    t("lab_flow.model"),
    names,
    index=names.index(default),
    key="flow_model",
    persist_state="session",
    placeholder=t("widget.choose"),
)
protocol = c2.radio(
    t("lab_flow.protocol"),
    ["grpc", "http"],
    horizontal=True,
    key="flow_protocol",
    persist_state="session",
    format_func=i18n.protocol_labeller(),
)
pacing = c3.radio(
    t("lab_flow.pacing"),
    list(flow.PACINGS),
    format_func={p: t(f"lab_flow.pacing_{p}") for p in flow.PACINGS}.get,  # kept across a language switch
    key="flow_pacing",
    persist_state="session",
)
image = pick_image("flow")
# None when this run's status check found nobody *live* there (not "ready": with strict readiness one unloaded
# model, a batching-lab reload, makes the server "not ready" while it answers every other model): the recorded
# trace is replayed then. One check per run, the sidebar's: a second probe could disagree with it under load.
ep = server.endpoint()

# drawn only while open, like the sidebar's boxes: a fresh tab skips the editor (the text is kept while it is closed)
edit_box = boxes.remembered_expander("flow_edit_box", t("lab_flow.edit_title"))
edited, send_edit = "", False
if edit_box.open:
    with edit_box:
        st.caption(t("repo.file_comments"))
        edited = st.text_area(
            t("lab_flow.edit_help"),
            value=(DEFAULT_REPOSITORY / model / "config.pbtxt").read_text(encoding="utf-8"),
            height=260,
            key=f"flow_edit_{model}",
            persist_state="session",
        )
        send_edit = server.run_button(t("lab_flow.edit_send"), disabled=ep is None, key="flow_edit_send")

clicked = (
    server.run_button(t("lab_flow.send"), type="primary", disabled=ep is None, key="flow_send") or send_edit
)
if clicked:
    with st.spinner(t("lab_flow.sending")):
        try:
            if send_edit:
                run = flow.send_config(ep, edited, image=image, protocol=protocol)
            else:
                run = flow.send(ep, model, image=image, protocol=protocol)
            st.session_state["flow_run"] = run
        except flow.FlowError as exc:
            errors.show_error(exc)  # no_control_api is a warning: a limit of that server, not a failure

run = st.session_state.get("flow_run")
recorded = run is None or (run.dag.name != model and not run.edited)
# With a server, nothing until the reader sends: the charts are their own request's, not a recording that could
# pass for it (and a fresh tab of the lab draws no plotly chart). Without one, the recording.
if recorded and ep is None:
    run = _recorded().get(model)
    st.info(t("lab_flow.replay_recorded"))
elif recorded:
    run = None
    if not clicked:  # a send that failed says why above; no invitation to do it again
        st.info(t("lab_flow.send_first", send=t("lab_flow.send")))
if run is not None:
    animation, gantt = _figures(run, recorded, i18n.lang(), pacing)
    left, right = st.columns([3, 2])
    with left:
        # no plotly toolbar: it covered the chart titles on hover (drag still zooms, a double click resets)
        st.plotly_chart(
            animation,
            key="flow_anim",
            width="stretch",
            config={"displayModeBar": False},
        )
    with right:
        st.plotly_chart(gantt, key="flow_gantt", width="stretch", config={"displayModeBar": False})
    st.caption(t(f"lab_flow.source_{run.source}"))
    errors.show_details([run.timeline.note] if run.timeline.note else [])

# drawn when opened: a fresh tab of the lab draws the animation first (its DAG and widgets are not cheap)
inside_box = lazy_box("flow_inside_box", f"**{t('inside.title')}**")
if inside_box is not None:
    with inside_box:
        inside_view(model, "flow_inside", image, protocol, titled=False)
peek_box = lazy_box("flow_peek_box", f"**{t('peek.title')}**")
if peek_box is not None:
    with peek_box:
        peek_view(model, "flow", image, protocol, titled=False)

st.subheader(t("lab_flow.exp_title"))
# plain tabs: a remembered tab's click reruns the page, which would stop an experiment running in another tab
tabs = st.tabs([t(f"lab_flow.exp_{exp}") for exp in ("chaining", "parallel", "cascade", "batching")])
with tabs[0]:
    st.caption(t("lab_flow.exp_chaining_help"))
    if server.run_button(t("lab_flow.exp_run"), disabled=ep is None, key="exp_chain"):
        with st.spinner("…"):
            _kept(
                "exp_chain_result",
                server.lab_run(1, lambda: experiments.chaining(ep, image, repeats=5, budget_s=20)),
            )
    res = st.session_state.get("exp_chain_result")
    if res is not None:
        import plotly.graph_objects as go

        cols = st.columns(2)
        for col, metric, title in (
            (cols[0], lambda r: r.median_ms, t("lab_flow.col_median_ms")),
            (cols[1], lambda r: r.wire_bytes / 1000, t("lab_flow.col_wire_kb")),
        ):
            fig = go.Figure()
            for mode in ("ensemble", "chain"):
                rows = [r for r in res.rows if r.mode == mode]
                fig.add_bar(
                    x=[i18n.protocol_label(r.protocol) for r in rows],
                    y=[metric(r) for r in rows],
                    name=t(f"lab_flow.mode_{mode}"),
                )
            fig.update_layout(title=title, barmode="group", height=320, margin={"t": 40, "b": 10})
            col.plotly_chart(fig, width="stretch", config={"displayModeBar": False})
        tables.show(
            [
                {
                    t("lab_flow.col_protocol"): i18n.protocol_label(r.protocol),
                    t("lab_flow.col_mode"): t(f"lab_flow.mode_{r.mode}"),
                    t("lab_flow.col_round_trips"): r.round_trips,
                    t("lab_flow.col_median_ms"): r.median_ms,
                    t("lab_flow.col_wire_kb"): r.wire_bytes / 1000,
                    t("lab_flow.col_payload_kb"): r.payload_bytes / 1000,
                }
                for r in res.rows
            ],
            decimals={t("lab_flow.col_median_ms"): 2},
        )
with tabs[1]:
    st.caption(t("lab_flow.exp_parallel_help"))
    if server.run_button(t("lab_flow.exp_run"), disabled=ep is None or not ep.embedded, key="exp_par"):
        with st.spinner("…"):
            _kept(
                "exp_par_result",
                server.lab_run(2, lambda: experiments.parallel_branches(ep, image, repeats=3, budget_s=20)),
            )
    res = st.session_state.get("exp_par_result")
    if res is not None:
        d = res.to_dict()
        st.markdown(
            t(
                "lab_flow.par_summary",
                ens=d["ensemble_ms_median"],
                overlap=d["overlap_ms_median"],
                compute=d["compute_overlap_ms_median"],
                sum=d["sum_of_steps_ms_median"],
                seq=d["sequential_ms_median"],
            )
        )
        if res.timelines:
            st.plotly_chart(
                flow.gantt(flow.attach(_recorded()[TTA_ENSEMBLE].dag, res.timelines[-1]), i18n.lang()),
                width="stretch",
            )
with tabs[2]:
    st.caption(t("lab_flow.exp_cascade_help"))
    if server.run_button(t("lab_flow.exp_run"), disabled=ep is None, key="exp_casc"):
        from triton_kitchen.core.samples import SAMPLE_PHOTOS, sample_jpeg

        photos = {n: sample_jpeg(n) for n in SAMPLE_PHOTOS}
        with st.spinner("…"):
            _kept(
                "exp_casc_result",
                server.lab_run(1, lambda: experiments.cascade(ep, photos, repeats=1, budget_s=20)),
            )
    rows = st.session_state.get("exp_casc_result")
    if rows:
        tables.show(
            [
                {
                    t("lab_flow.col_model"): r.model,
                    t("lab_flow.col_requests"): r.requests,
                    t("lab_flow.col_median_ms"): r.median_ms,
                    t("lab_flow.col_stage_two"): r.fine_runs,
                    t("lab_flow.col_stage_used"): f"{r.stage_used.get('1', 0)} / {r.stage_used.get('2', 0)}",
                }
                for r in rows
            ],
        )
with tabs[3]:
    st.caption(t("lab_flow.exp_batching_help"))
    if server.run_button(t("lab_flow.exp_run"), disabled=ep is None or not ep.embedded, key="exp_q"):
        with st.spinner("…"):
            _kept(
                "exp_q_result",
                server.lab_run(4, lambda: experiments.batching_queue(ep, image, repeats=3, burst=4)),
            )
    for r in st.session_state.get("exp_q_result") or []:
        st.markdown(
            "- "
            + t(
                "lab_flow.queue_summary",
                model=r.model,
                alone=min(r.alone_queue_ms),
                delay=f"{r.max_queue_delay_us} µs"
                if r.max_queue_delay_us is not None
                else t("lab_flow.no_delay"),
                burst=r.burst,
                batches=r.burst_batches,
            )
        )
