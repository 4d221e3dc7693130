"""Chapter 9: the scheduler — instance groups, priorities and queue policies, Little's law. Each section's live
element asks for a prediction first, then measures on the real classifier (triton_kitchen.labs.scheduling)."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from triton_kitchen.core import override
from triton_kitchen.core.catalog import RUNNING_SUM_STEP
from triton_kitchen.labs import experiments, scheduling, shapes, stateful
from ui import batching_toy, errors, predict, server, tables
from ui.i18n import t
from ui.lesson import page_link, render_lesson


def _run(key: str, workers: int, fn, done_key: str) -> None:
    predict.measure(key, workers, fn, done_key, t("ch9.running"))


def _fmt(v, spec: str = ".1f") -> str:
    return "—" if v is None else format(v, spec)


# -- instance_group ------------------------------------------------------------------------------------------
def _remote_note(ep) -> None:
    if not ep.headers:  # no key for its repository API (a remote server without the kitchen key): no reloads
        st.info(t("lab_batching.remote_note"))


INST_CONCURRENCIES = (1, 2, 4, 8, 16)


def instances() -> None:
    ep = server.endpoint()
    if ep is None:
        server.say_no_server()
        return
    _remote_note(ep)
    c1, c2, c3 = st.columns(3)
    # segmented controls, not sliders: the first section is open on a fresh tab, and a slider makes the tab load
    # and run Streamlit's slider code (benchmarks/page_timing.py); the language switch already loads these
    count = c1.segmented_control(
        t("ch9.inst_count"),
        list(range(2, override.MAX_INSTANCES + 1)),
        default=2,
        required=True,
        key="ch9_inst_count",
        persist_state="session",
    )
    conc = c2.segmented_control(
        t("ch9.inst_concurrency"),
        INST_CONCURRENCIES,
        default=4,
        required=True,
        key="ch9_inst_c",
        persist_state="session",
    )
    batching_on = c3.toggle(
        t("ch9.inst_batching"), value=False, key="ch9_inst_batching", persist_state="session"
    )
    options = predict.choices("ch9.inst", ("more", "same", "less"))
    predict.ask("ch9_inst", t("ch9.inst_predict", n=count), options)
    if st.button(t("ch9.inst_run", n=count), type="primary", key="ch9_inst_run"):
        _run(
            "ch9_inst",
            int(conc),
            lambda stop, watch: scheduling.compare_instances(
                ep, int(count), batching_on, int(conc), 3.0, stop=stop, progress=lambda *_: watch()
            ),
            "ch9_inst_result",
        )
    result = st.session_state.get("ch9_inst_result")
    if result is not None and len(result.results) == 2:
        rows = []
        for r in result.results:
            s = r.server or {}
            rows.append(
                {
                    t("ch9.col.instances"): r.settings.instance_count,
                    t("ch9.col.rps"): r.throughput_rps,
                    t("ch9.col.mean"): r.mean_latency_ms,
                    t("ch9.col.queue"): s.get("queue_ms"),
                    t("ch9.col.compute"): s.get("compute_infer_ms"),
                }
            )
        tables.show(rows)
        predict.reveal(
            "ch9_inst",
            options,
            result.outcome(),
            t("ch9.inst_detail", ratio=_fmt(result.ratio(), ".2f"), c=result.results[0].concurrency),
        )
    st.markdown(f"**{t('ch9.gpu_title')}**")
    if st.button(t("ch9.gpu_run"), key="ch9_gpu_run"):
        try:
            with st.spinner(t("ch9.running")):
                st.session_state["ch9_gpu"] = scheduling.gpu_refusal(ep)
        except Exception as exc:  # noqa: BLE001
            errors.show_error(exc)
    refusal = st.session_state.get("ch9_gpu")
    if refusal is not None:
        if refusal:
            st.caption(t("ch9.gpu_refused"))
            st.code(refusal, language="text", wrap_lines=True)
        else:
            st.success(t("ch9.gpu_loaded"), icon="🟢")
    page_link("views/lab_batching.py", "ch9.to_batching_lab")


# -- shapes that never batch -------------------------------------------------------------------------------------
def _histograms(runs) -> None:
    """Each way's executions per batch size (Triton's batch_stats), side by side: one bar group per size."""
    fig = go.Figure()
    sizes = sorted({k for r in runs for k in r.histogram})
    for r in runs:
        fig.add_trace(
            go.Bar(
                x=[str(k) for k in sizes],
                y=[r.histogram.get(k, 0) for k in sizes],
                name=t(f"shapes.short_{r.way}"),
            )
        )
    fig.update_layout(
        barmode="group",
        height=300,
        margin=dict(l=10, r=10, t=40, b=10),
        xaxis_title=t("shapes.hist_x"),
        yaxis_title=t("shapes.hist_y"),
        legend=dict(orientation="h", x=0, y=1.02, yanchor="bottom"),
    )
    st.plotly_chart(fig, width="stretch", key="ch9_shape_fig")


def shape_batches() -> None:
    if (ep := _real_demo_endpoint()) is None:
        return
    c1, c2 = st.columns(2)
    n = c1.slider(
        t("shapes.clients"), 2, shapes.MAX_CLIENTS, 8, key="ch9_shape_clients", persist_state="session"
    )
    pad = c2.number_input(
        t("shapes.pad_to"),
        1,
        shapes.MAX_PAD,
        shapes.LONGEST,
        key="ch9_shape_pad",
        persist_state="session",
        help=t("shapes.pad_help", longest=shapes.LONGEST),
    )
    options = predict.choices("shapes.opt", ("one", "few", "all"), n=n)
    predict.ask("ch9_shape", t("shapes.predict", n=n, longest=shapes.LONGEST), options)
    if st.button(t("shapes.run", s=shapes.RUN_S), type="primary", key="ch9_shape_run"):
        try:  # a padding shorter than the longest row is said at once; the last result stays
            shapes.check(int(n), int(pad))
        except shapes.ShapesError as exc:
            errors.show_error(exc)
        else:
            predict.measure(
                "ch9_shape",
                int(n),
                lambda stop, watch: shapes.compare_shapes(ep, int(n), int(pad), stop=stop),
                "ch9_shape_result",
                t("shapes.running"),
            )
    result = st.session_state.get("ch9_shape_result")
    if result is None or result.run("unequal") is None:
        return
    tables.show(
        [
            {
                t("shapes.col.way"): t(f"shapes.short_{r.way}"),
                t("shapes.col.sent_to"): t(f"shapes.to_{r.way}", pad=r.pad_to),
                t("shapes.col.rps"): r.throughput_rps,
                t("shapes.col.executions"): r.executions,
                t("shapes.col.inferences"): r.inferences,
                t("shapes.col.mean_batch"): r.mean_batch,
            }
            for r in result.runs
        ],
        decimals={t("shapes.col.mean_batch"): 2},
    )
    _histograms(result.runs)
    st.caption(t("shapes.hist_note"))
    first = result.run("unequal")
    predict.reveal(
        "ch9_shape",
        options,
        result.outcome(),
        t(
            "shapes.detail",
            executions=first.executions,
            inferences=first.inferences,
            mean=_fmt(first.mean_batch, ".2f"),
        ),
    )
    for r in result.runs:
        if r.errors:
            st.code(r.errors[0], language="text", wrap_lines=True)


# -- priorities and queue policy ------------------------------------------------------------------------------------
def _refusal(ep, case: str) -> None:
    """A button that asks Triton for preserve_ordering beside what it refuses with it (``case``), and its words:
    its answer to the load request, and the reason it logged (the embedded server's log)."""
    if st.button(t(f"ch9.order_{case}_run"), key=f"ch9_order_{case}_run"):
        embedded = server.supervisor().server if ep.embedded else None
        log = embedded.log_tail if embedded is not None else None
        try:
            with st.spinner(t("ch9.running")):
                st.session_state[f"ch9_order_{case}"] = (scheduling.ordering_refusal(ep, case, log),)
        except Exception as exc:  # noqa: BLE001
            errors.show_error(exc)
    done = st.session_state.get(f"ch9_order_{case}")
    if done is not None:
        (refusal,) = done
        if refusal is None:
            st.success(t("ch9.order_loaded"), icon="🟢")
        else:
            st.caption(t("ch9.order_refused"))
            st.code(
                "\n".join(filter(None, (refusal.answer, refusal.logged))), language="text", wrap_lines=True
            )


def _pause_note() -> None:
    """Said before the priority run: the batcher's half-second pause in this Triton, and what was measured."""
    measured = scheduling.BATCHER_PAUSE
    with st.container(border=True):
        st.markdown(t("ch9.pause_before"))
        tables.show(
            [
                {
                    t("ch9.col.setting"): t("ch9.pause_none") if setting == "none" else setting,
                    t("ch9.col.paused"): f"{paused} / {of}",
                    t("ch9.col.gap"): gap,
                    t("ch9.col.gap_trickle"): trickled,
                }
                for setting, paused, of, gap, trickled in measured["rows"]
            ]
        )
        st.caption(t("ch9.pause_measured", command=measured["command"]))


def _finish_chart(result: scheduling.PriorityResult) -> None:
    fig = go.Figure()
    series = (
        ("early", t("ch9.prio_early"), "#9ecae1", 8, "circle"),
        ("trickle", t("ch9.prio_trickle"), "#bdbdbd", 6, "circle-open"),
        ("late", t("ch9.prio_late"), "#e6550d", 11, "diamond"),
    )
    for b, name in ((result.fifo, t("ch9.prio_fifo")), (result.priority, t("ch9.prio_levels"))):
        for kind, label, color, size, symbol in series:
            done = [s.done_ms for s in b.sent if s.ok and scheduling.kind_of(s) == kind]
            fig.add_trace(
                go.Scatter(
                    x=done,
                    y=[name] * len(done),
                    mode="markers",
                    name=label,
                    legendgroup=label,
                    showlegend=b is result.fifo,
                    marker=dict(color=color, size=size, symbol=symbol),
                )
            )
    fig.update_layout(  # the legend above the plot, clear of its rows (three entries wrap on a narrow page)
        height=280,
        margin=dict(l=10, r=10, t=70, b=10),
        xaxis_title=t("ch9.prio_axis"),
        legend=dict(orientation="h", x=0, y=1.02, yanchor="bottom"),
    )
    st.plotly_chart(fig, width="stretch", key="ch9_prio_fig")


def _priority(ep) -> None:
    options = predict.choices("ch9.prio", ("overtake", "no_change"))
    predict.ask("ch9_prio", t("ch9.prio_predict"), options)
    if st.button(t("ch9.prio_run"), type="primary", key="ch9_prio_run"):
        _run("ch9_prio", 4, lambda stop, watch: scheduling.priority_demo(ep), "ch9_prio_result")
    result = st.session_state.get("ch9_prio_result")
    if result is None:
        return
    _finish_chart(result)
    tables.show_compared(  # the two runs as columns: one column per measure ran off a projector's page
        {
            name: {
                t("ch9.col.late_ranks"): ", ".join(map(str, b.finish_ranks(scheduling.HIGH))) or None,
                t("ch9.col.late_ms"): b.mean_latency_ms(scheduling.HIGH),
                t("ch9.col.early_ms"): b.mean_latency_ms(0),
                t("ch9.col.refused"): b.refused,
                t("ch9.col.pause"): b.longest_pause_ms(),
            }
            for name, b in ((t("ch9.prio_fifo"), result.fifo), (t("ch9.prio_levels"), result.priority))
        },
        t("ch9.col.measure"),
    )
    pause, fifo_pause = result.priority.longest_pause_ms() or 0.0, result.fifo.longest_pause_ms() or 0.0
    if pause >= scheduling.PAUSE_NOTE_MS > fifo_pause:  # measured in this run: say where it came from
        st.info(t("ch9.prio_pause", ms=round(pause), fifo_ms=round(fifo_pause)), icon="⏸️")
    st.code(result.priority.config_text, language="protobuf")
    predict.reveal(
        "ch9_prio",
        options,
        result.outcome(),
        t(
            "ch9.prio_detail",
            early=result.early,
            late=result.late,
            trickle=result.trickled(),
            answered=result.early_done(),
            waiting=result.early_waiting(),
        ),
    )


def _stacked(xs: list[float], tol: float, step: float = 0.14, most: float = 0.42) -> list[float]:
    """A vertical offset per point so that points closer than ``tol`` on x (a batch answered at once) stand
    one above another instead of hiding each other; offsets are centred on the row and stay within ``most``."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    groups: list[list[int]] = []
    for i in order:
        if groups and xs[i] - xs[groups[-1][0]] <= tol:
            groups[-1].append(i)
        else:
            groups.append([i])
    out = [0.0] * len(xs)
    for g in groups:
        d = min(step, 2 * most / max(1, len(g) - 1))
        for k, i in enumerate(g):
            out[i] = (k - (len(g) - 1) / 2) * d
    return out


def _queue_chart(b) -> None:
    """Each request of the queue run at the moment Triton answered or refused it, one row per outcome; requests
    answered together (one batch) are stacked within their row, so every request shows."""
    fig = go.Figure()
    rows = (("answered", "#3182bd"), ("full", "#c0392b"), ("timeout", "#e6550d"), ("other", "#777"))
    times = [s.done_ms for s in b.sent if s.done_ms is not None]
    tol = max(0.5, (max(times) - min(times)) * 0.012) if times else 0.5
    shown = []
    crowd = 1  # the most requests answered or refused together: the rows grow so that each keeps ~10 px
    for outcome, _ in rows:
        x = sorted(
            s.done_ms for s in b.sent if s.done_ms is not None and scheduling.refusal_kind(s) == outcome
        )
        run = 1
        for a, c in zip(x, x[1:], strict=False):
            run = run + 1 if c - a <= tol else 1
            crowd = max(crowd, run)
    for outcome, color in rows:
        done = [s for s in b.sent if s.done_ms is not None and scheduling.refusal_kind(s) == outcome]
        if not done:
            continue
        y0 = len(shown)
        shown.append(outcome)
        x = [s.done_ms for s in done]
        fig.add_trace(
            go.Scatter(
                x=x,
                y=[y0 + d for d in _stacked(x, tol)],
                mode="markers",
                marker=dict(color=color, size=8, symbol="circle" if outcome == "answered" else "x"),
                text=[f"#{s.index}" for s in done],
                hovertemplate="%{text}: %{x:.1f} ms<extra></extra>",
                showlegend=False,
            )
        )
    fig.update_layout(
        height=120 + max(60, min(220, round(12 * (crowd - 1) / 0.84))) * max(1, len(shown)),
        margin=dict(l=10, r=10, t=10, b=10),
        xaxis_title=t("ch9.q_axis"),
        yaxis=dict(
            tickvals=list(range(len(shown))),
            ticktext=[t(f"ch9.q_row_{o}") for o in shown],
            range=[-0.5, len(shown) - 0.5],
            zeroline=False,
        ),
    )
    st.plotly_chart(fig, width="stretch", key="ch9_q_fig")


def _queue(ep) -> None:
    c1, c2, c3 = st.columns(3)
    size = c1.slider(
        t("ch9.q_size"), 0, 32, 8, key="ch9_q_size", persist_state="session", help=t("ch9.q_size_help")
    )
    timeout_ms = c2.slider(
        t("ch9.q_timeout"),
        0,
        200,
        0,
        step=10,
        key="ch9_q_timeout",
        persist_state="session",
        help=t("ch9.q_timeout_help"),
    )
    action = c3.radio(
        t("ch9.q_action"), scheduling.ACTIONS, horizontal=True, key="ch9_q_action", persist_state="session"
    )
    st.caption(t("ch9.q_pause_before", **scheduling.pause_counts()))
    options = predict.choices("ch9.q", ("all", "some", "none"))
    predict.ask("ch9_q", t("ch9.q_predict"), options)
    if st.button(t("ch9.q_run"), type="primary", key="ch9_q_run"):
        policy = scheduling.QueuePolicy(int(size), int(timeout_ms) * 1000, str(action))
        _run("ch9_q", 4, lambda stop, watch: scheduling.queue_demo(ep, policy), "ch9_q_result")
    result = st.session_state.get("ch9_q_result")
    if result is None:
        return
    b = result.burst
    m1, m2, m3 = st.columns(3)
    m1.metric(t("ch9.q_sent"), len(b.sent))
    m2.metric(t("ch9.q_answered"), b.answered)
    m3.metric(t("ch9.q_refused"), b.refused)
    _queue_chart(b)
    st.code(b.config_text, language="protobuf")
    if b.errors():
        st.caption(t("ch9.q_errors"))
        tables.show([{t("ch9.col.error"): text, t("ch9.col.count"): n} for text, n in b.errors().items()])
    predict.reveal("ch9_q", options, result.outcome(), t("ch9.q_detail", mean=_fmt(b.mean_latency_ms())))


def _real_demo_endpoint():
    """The heading of a section's real demo, and the server to run it on (None: said there is none)."""
    ep = server.endpoint()
    st.markdown(f"**{t('ch9.real_title')}**")
    if ep is None:
        server.say_no_server()
        return None
    _remote_note(ep)
    return ep


def priorities() -> None:
    batching_toy.queue_timeline("priority")
    if (ep := _real_demo_endpoint()) is None:
        return
    _pause_note()
    _priority(ep)
    _refusal(ep, "priority")


def queue_policy() -> None:
    batching_toy.queue_timeline("bounded")
    batching_toy.queue_timeline("timeout")
    if (ep := _real_demo_endpoint()) is None:
        return
    _queue(ep)
    _refusal(ep, "delay")


# -- queueing --------------------------------------------------------------------------------------------------
def little() -> None:
    ep = server.endpoint()
    if ep is None:
        server.say_no_server()
        return
    conc = st.slider(t("ch9.little_c"), 1, 8, 2, key="ch9_little_c", persist_state="session")
    options = predict.choices("ch9.little", ("latency", "throughput", "both"))
    predict.ask("ch9_little", t("ch9.little_predict", c=conc, c2=2 * conc), options)
    if st.button(t("ch9.little_run", c=conc, c2=2 * conc), type="primary", key="ch9_little_run"):
        _run(
            "ch9_little",
            2 * int(conc),
            lambda stop, watch: scheduling.littles_law(
                ep, int(conc), 3.0, stop=stop, progress=lambda *_: watch()
            ),
            "ch9_little_result",
        )
    result = st.session_state.get("ch9_little_result")
    if result is None or not result.runs:
        return
    rows = result.rows()
    tables.show(
        [
            {
                t("ch9.col.L"): r["in_flight"],
                t("ch9.col.lambda"): r["throughput_rps"],
                t("ch9.col.W"): r["mean_latency_ms"],
                t("ch9.col.LW"): r["little_in_flight"],
                t("ch9.col.queue"): r["queue_ms"],
                t("ch9.col.compute"): r["compute_ms"],
            }
            for r in rows
        ],
        decimals={t("ch9.col.LW"): 2},
    )
    first = rows[0]
    st.caption(
        t(
            "ch9.little_yours",
            c=first["in_flight"],
            rps=_fmt(first["throughput_rps"]),
            predicted=_fmt(first["predicted_latency_ms"]),
            measured=_fmt(first["mean_latency_ms"]),
        )
    )
    outcome = result.outcome()
    if outcome == "unclear" and len(rows) > 1:
        last = rows[-1]
        st.warning(
            t(
                "ch9.little_unclear",
                c=first["in_flight"],
                c2=last["in_flight"],
                rps=_fmt(first["throughput_rps"]),
                rps2=_fmt(last["throughput_rps"]),
                w=_fmt(first["mean_latency_ms"]),
                w2=_fmt(last["mean_latency_ms"]),
            ),
            icon="🎲",
        )
        return
    predict.reveal("ch9_little", options, outcome)


# -- is an ensemble faster? --------------------------------------------------------------------------------------
def ensemble_speed() -> None:
    ep = server.endpoint()
    if ep is None:
        server.say_no_server()
        return
    options = predict.choices("ch9.ens", ("ensemble_faster", "similar", "chain_faster"))
    predict.ask("ch9_ens", t("ch9.ens_predict"), options)
    if st.button(t("ch9.ens_run"), type="primary", key="ch9_ens_run"):
        _run(
            "ch9_ens",
            1,
            lambda stop, watch: experiments.chaining(ep, None, protocols=("grpc",), repeats=5, budget_s=8.0),
            "ch9_ens_result",
        )
    result = st.session_state.get("ch9_ens_result")
    if result is None or result.outcome() is None:
        return
    tables.show(
        [
            {
                t("ch9.col.way"): t(f"lab_flow.mode_{r.mode}"),
                t("lab_flow.col_round_trips"): r.round_trips,
                t("lab_flow.col_median_ms"): r.median_ms,
                t("lab_flow.col_wire_kb"): r.wire_bytes / 1000,
            }
            for r in result.rows
        ]
    )
    predict.reveal(
        "ch9_ens", options, result.outcome(), t("ch9.ens_detail", ratio=_fmt(result.ratio(), ".2f"))
    )
    page_link("views/lab_flow.py", "ch9.to_flow_lab")


# -- stateful models -----------------------------------------------------------------------------------------------
def _two_learners(ep) -> None:
    models = {m: t(f"ch9.seq_model_{m}") for m in stateful.MODELS}
    model = st.radio(
        t("ch9.seq_model_pick"),
        list(models),
        format_func=models.get,
        horizontal=True,
        key="ch9_seq_model",
        persist_state="session",
    )
    options = predict.choices("ch9.seq", ("kept", "lost"))
    predict.ask("ch9_seq", t("ch9.seq_predict", model=models[model]), options)
    if st.button(t("ch9.seq_run"), type="primary", key="ch9_seq_run"):
        _run("ch9_seq", 2, lambda stop, watch: stateful.two_learners(ep, model), "ch9_seq_result")
    result = st.session_state.get("ch9_seq_result")
    if result is None or result.model != model:  # measured for the model on screen only
        return
    tables.show(
        [
            {
                t("ch9.seq_col_learner"): f"{s.learner} ({result.ids[s.learner]})",
                t("ch9.seq_col_step"): s.n,
                t("ch9.seq_col_x"): f"{s.x:g}",
                t("ch9.seq_col_total"): "—" if s.answer is None else f"{s.answer.total:g}",
                t("ch9.seq_col_expected"): f"{s.expected:g}",
                t("ch9.seq_col_pid"): "—" if s.answer is None else str(s.answer.pid),
                t("ch9.seq_col_error"): s.error,
            }
            for s in result.steps
        ]
    )
    predict.reveal(
        "ch9_seq",
        options,
        result.outcome(),
        t(
            f"ch9.seq_detail_{result.detail()}",
            wrong=result.wrong(),
            n=len(result.steps),
            pids=", ".join(map(str, result.pids())),
            a=", ".join(map(str, result.pids_of("A"))),
            b=", ".join(map(str, result.pids_of("B"))),
        ),
    )


def _own_sequence(ep) -> None:
    """The learner's own sequence on running_sum: an ID (theirs by default), a number, start / add / end."""
    try:
        b = stateful.batcher(ep)
        st.caption(t("ch9.seq_slots", slots=b.slots, idle=f"{b.idle_s:g}", strategy=b.strategy))
    except Exception as exc:  # noqa: BLE001 - the drill still runs; Triton will say what is wrong
        errors.show_error(exc)
    st.session_state.setdefault("ch9_seq_own_id", str(stateful.new_id()))
    left, right = st.columns(2)
    corr = left.text_input(t("ch9.seq_own_id"), key="ch9_seq_own_id", persist_state="session")
    x = right.number_input(
        t("ch9.seq_own_x"), value=1.0, step=1.0, key="ch9_seq_own_x", persist_state="session"
    )
    buttons = st.columns(3)
    pressed = None
    for col, action in zip(buttons, ("start", "add", "end"), strict=True):
        if col.button(t(f"ch9.seq_own_{action}"), key=f"ch9_seq_own_{action}"):
            pressed = action
    if pressed is not None:
        try:
            answer = stateful.step(
                ep, stateful.parse_id(corr), float(x), start=pressed == "start", end=pressed == "end"
            )
            st.session_state["ch9_seq_own_last"] = (pressed, answer)
        except stateful.SequenceError as exc:
            st.session_state["ch9_seq_own_last"] = (pressed, exc)
    last = st.session_state.get("ch9_seq_own_last")
    if last is None:
        return
    action, outcome = last
    if isinstance(outcome, stateful.SequenceError):
        errors.show_error(outcome)
    else:
        st.success(
            t(
                "ch9.seq_own_answer",
                action=t(f"ch9.seq_own_{action}"),
                total=f"{outcome.total:g}",
                count=outcome.count,
                pid=outcome.pid,
                ms=f"{outcome.ms:.1f}",
            )
        )


def _ensemble_table(run: stateful.EnsembleRun, extra: list | tuple = ()) -> None:
    """One row per request: the ID it carried, its flags, the number, both steps' pids, the total or Triton's words."""

    def flags(s) -> str:
        return " + ".join(f for f, on in (("START", s.start), ("END", s.end)) if on) or "—"

    tables.show(
        [
            {
                t(
                    "ch9.seq_col_learner"
                ): f"{s.learner} ({run.ids[s.learner] if s.sent_id is None else s.sent_id})",
                t("ch9.seq_col_step"): s.n,
                t("ch9.seqens_col_flags"): flags(s),
                t("ch9.seq_col_x"): f"{s.x:g}",
                t("ch9.seqens_col_scale_pid"): "—" if s.answer is None else str(s.answer.scale_pid),
                t("ch9.seqens_col_step_pid"): "—" if s.answer is None else str(s.answer.pid),
                t("ch9.seq_col_total"): "—" if s.answer is None else f"{s.answer.total:g}",
                t("ch9.seqens_col_expected"): f"{s.expected:g}",
                t("ch9.seq_col_error"): s.error,
            }
            for s in (*run.steps, *extra)
        ]
    )


def _ensemble_detail(run: stateful.EnsembleRun) -> str:
    return t(
        f"ch9.seqens_detail_{run.outcome()}",
        wrong=run.wrong(),
        n=len(run.steps),
        pids=", ".join(map(str, run.pids())) or "—",
        scale=", ".join(map(str, run.scale_pids())) or "—",
    )


def _through_ensemble(ep) -> None:
    """A's and B's sequences through running_sum_ensemble (stateless step -> stateful step); then B's mistakes."""
    options = predict.choices("ch9.seqens", ("kept", "refused", "lost"))
    predict.ask("ch9_seqens", t("ch9.seqens_predict"), options)
    if st.button(t("ch9.seqens_run"), type="primary", key="ch9_seqens_run"):
        _run("ch9_seqens", 2, lambda stop, watch: stateful.through_ensemble(ep), "ch9_seqens_result")
    result = st.session_state.get("ch9_seqens_result")
    if result is not None:
        _ensemble_table(result)
        predict.reveal("ch9_seqens", options, result.outcome(), _ensemble_detail(result))
    mistakes = {m: t(f"ch9.seqens_mistake_{m}") for m in stateful.MISTAKES if m != "none"}
    mistake = st.radio(
        t("ch9.seqens_mistake_pick"),
        list(mistakes),
        format_func=mistakes.get,
        key="ch9_seqens_mistake",
        persist_state="session",
    )
    if st.button(t("ch9.seqens_mistake_run"), key="ch9_seqens_mistake_run"):
        predict.measure(
            "ch9_seqens_mistake",
            2,
            lambda stop, watch: stateful.through_ensemble(ep, mistake),
            "ch9_seqens_mistake_result",
            t("ch9.running"),
        )
    run = st.session_state.get("ch9_seqens_mistake_result")
    if run is None or run.mistake != mistake:  # shown for the mistake on screen only
        return
    _ensemble_table(run, [run.closed] if run.closed is not None else [])
    if run.mistake == "no_end":
        closed = run.closed
        if closed is not None and closed.answer is not None:
            b = stateful.batcher(ep, RUNNING_SUM_STEP)
            said = t(
                "ch9.seqens_closed",
                total=f"{closed.answer.total:g}",
                count=closed.answer.count,
                slots=b.slots,
                idle=f"{b.idle_s:g}",
            )
            st.info(said, icon="📂")
        else:
            st.warning(t("ch9.seqens_closed_failed"), icon="⚠️")
    else:
        refused = next((s for s in run.steps if s.answer is None), None)
        said = t(f"ch9.seqens_said_{run.mistake}")
        if refused is None:  # Triton took the wrong ID after all: say what was measured
            st.warning(t("ch9.seqens_not_refused"), icon="⚠️")
        else:
            st.error(said, icon="🚫")
            st.code(refused.error, language="text", wrap_lines=True)
            if run.scale_runs is not None:
                st.caption(
                    t("ch9.seqens_scale_runs", runs=run.scale_runs, sent=run.sent, refused=run.refused())
                )


def stateful_models() -> None:
    ep = server.endpoint()
    if ep is None:
        server.say_no_server()
        return
    _two_learners(ep)
    st.divider()
    st.markdown(f"**{t('ch9.seq_own_title')}**")
    _own_sequence(ep)
    st.divider()
    st.markdown(f"**{t('ch9.seqens_title')}**")
    _through_ensemble(ep)


render_lesson(
    9,
    live={
        "instance_group": instances,
        "shapes": shape_batches,
        "priorities": priorities,
        "queue_policy": queue_policy,
        "queueing": little,
        "ensemble_speed": ensemble_speed,
        "stateful": stateful_models,
    },
)
