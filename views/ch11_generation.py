"""Chapter 11: generation — prefill and decode, the KV cache, request-level against in-flight batching, the
generate endpoints. Each live element asks for a prediction first, then measures on the real server
(triton_kitchen.labs.generation): the course's language model under both schedulers on the same load, drawn from
the server's recorded steps; the generate extension's rules on the streaming model, in Triton's words."""

from __future__ import annotations

import streamlit as st

from triton_kitchen.labs import generation
from triton_kitchen.labs import own_prompt as own
from ui import i18n, predict, server, tables
from ui.i18n import t
from ui.lesson import render_lesson


def _said(call: generation.EndpointCall) -> str:
    """What Triton sent back: its error in its own words, or how many events streamed, or the body."""
    if call.error:
        return call.error
    return t("ch11.events", n=call.events) if call.events else call.readable


# -- the generate endpoints ------------------------------------------------------------------------------------
def endpoints() -> None:
    ep = server.endpoint()
    if ep is None:
        server.say_no_server()
        return
    options = predict.choices("ch11.gen", generation.OUTCOMES)
    predict.ask("ch11_gen", t("ch11.gen_predict"), options)
    if st.button(t("ch11.gen_run"), type="primary", key="ch11_gen_run"):
        predict.measure(
            "ch11_gen",
            1,
            lambda stop, watch: generation.endpoint_rules(ep),
            "ch11_gen_result",
            t("ch11.running"),
        )
    result = st.session_state.get("ch11_gen_result")
    if result is None:
        return
    st.table(  # a static table: Triton's words wrap instead of being cut off
        [
            {
                t("ch11.col.request"): t(f"ch11.call_{c.key}"),
                t("ch11.col.path"): c.path,
                t("ch11.col.status"): c.status,
                t("ch11.col.said"): _said(c),
            }
            for c in result.calls
        ],
        hide_index=True,
    )
    first = result.call("generate_two")
    predict.reveal("ch11_gen", options, result.outcome(), t("ch11.gen_detail", status=first.status))
    if first.error:
        st.code(first.error, language="text", wrap_lines=True)


# -- request-level against in-flight batching --------------------------------------------------------------------
def _names() -> dict[str, str]:
    keys = (
        "wait",
        "idle",
        "token",
        "join",
        "leave",
        "time",
        "sequence",
        "step",
        "kv",
        "request_level",
        "in_flight",
    )
    return {k: t(f"ch11.tl_{k}") for k in keys}


def _fmt(v, spec: str = ".1f") -> str:
    return "—" if v is None else format(v, spec)


def _figures_table(comparison: generation.Comparison) -> None:
    """The client's figures beside the server's, for both schedulers."""
    rows = []
    measures = (
        ("ttft_p50", lambda d: d["ttft_ms"]["p50"]),
        ("ttft_p99", lambda d: d["ttft_ms"]["p99"]),
        ("itl_p50", lambda d: d["itl_ms"]["p50"]),
        ("itl_p99", lambda d: d["itl_ms"]["p99"]),
        ("tokens_per_s", lambda d: d["tokens_per_s"]),
    )
    sides = [(run, run.client(), run.server()) for run in comparison.runs]
    for key, get in measures:
        row = {t("ch11.col.measure"): t(f"ch11.m_{key}")}
        for run, client, srv in sides:
            row[t(f"ch11.col.{run.scheduler}_client")] = get(client)
            row[t(f"ch11.col.{run.scheduler}_server")] = get(srv)
        rows.append(row)
    tables.show(rows)


def schedulers() -> None:
    ep = server.endpoint()
    if ep is None:
        server.say_no_server()
        return
    names = _names()
    cols = st.columns(2)
    for col, (scheduler, model) in zip(cols, generation.SCHEDULERS, strict=True):
        col.caption(t("ch11.sch_config", scheduler=names[scheduler], model=model))
        col.code(generation.scheduling_lines(model), language="protobuf", wrap_lines=True)
    clients = st.slider(t("ch11.sch_clients"), 2, 8, 4, key="ch11_sch_clients", persist_state="session")
    jobs = generation.draw_jobs(int(clients) * 2, 2026, i18n.lang())
    st.caption(
        t(
            "ch11.sch_jobs",
            n=len(jobs),
            lengths=", ".join(str(j.max_tokens) for j in jobs),
            prompts=", ".join(str(len(j.prompt.encode())) for j in jobs),
        )
    )
    options = predict.choices("ch11.sch", generation.SCHEDULER_OUTCOMES)
    predict.ask("ch11_sch", t("ch11.sch_predict", c=clients), options)
    if st.button(t("ch11.sch_run"), type="primary", key="ch11_sch_run"):
        predict.measure(
            "ch11_sch",
            int(clients),
            lambda stop, watch: generation.compare_schedulers(ep, int(clients), lang=i18n.lang()),
            "ch11_sch_result",
            t("ch11.running"),
        )
    result = st.session_state.get("ch11_sch_result")
    if result is None:
        return
    for run in result.runs:
        if run.errors():
            st.warning(
                t("ch11.sch_errors", model=run.model, n=len(run.errors()), first=run.errors()[0]), icon="⚠️"
            )
    _figures_table(result)
    st.caption(t("ch11.sch_sides"))
    cols = st.columns(2)
    for col, run in zip(cols, result.runs, strict=True):
        with col:
            server_side = run.server()
            st.markdown(f"**{names[run.scheduler]}** · `{run.model}`")
            st.plotly_chart(
                generation.timeline_figure(run, names), key=f"ch11_tl_{run.scheduler}", width="stretch"
            )
            st.caption(
                t(
                    "ch11.sch_steps",
                    steps=server_side["steps"],
                    running=_fmt(server_side["running_per_step"]),
                    places=_fmt(server_side["places_per_step"]),
                    step_ms=_fmt(server_side["time_per_step_ms"], ".2f"),
                    compute_ms=_fmt(server_side["compute_ms"], ".2f"),
                    outside_ms=_fmt(server_side["outside_ms"], ".2f"),
                )
            )
            if run.executions is not None:
                st.caption(t("ch11.sch_executions", n=run.executions, steps=server_side["steps"]))
    st.markdown(f"**{t('ch11.kv_title')}**")
    st.plotly_chart(generation.kv_figure(result, names), key="ch11_kv", width="stretch")
    predict.reveal(
        "ch11_sch", options, result.outcome(), t("ch11.sch_detail", ratio=_fmt(result.ratio(), ".2f"))
    )


# -- the learner's own prompt ------------------------------------------------------------------------------------
_OWN_PENDING, _OWN_RESULT = "ch11_own_pending", "ch11_own_result"


_OWN_TICKET = "ch11_own_ticket"


@st.fragment(run_every=0.5)
def _own_line() -> None:
    """The learner's place in line, polled without holding the page: the quiz (a fragment too) keeps answering.
    Seated: the whole page runs again and streams."""
    queued = st.session_state.get(_OWN_TICKET)
    if queued is None:
        return
    place = own.SEATS.place(queued[0])
    if place <= 0:
        st.rerun()
    st.info(t("ch11.own_wait", seats=own.SEATS.total, ahead=place), icon="⏳")


def _own_generate(ep, ask: own.OwnAsk, ticket: int) -> None:
    """Stream the continuation into the page holding the seat of ``ticket``; the run, even a stopped one, is
    kept for the next script run."""
    box: dict = {}
    request_id = own.own_request_id()
    st.session_state[_OWN_PENDING] = (ask, box)
    stream = None
    try:
        stream = own.own_stream(ep, ask, request_id, box)
        holder = st.empty()
        with holder.container(border=True):
            st.write_stream(piece for piece in stream if own.SEATS.touch(ticket) or True)
        holder.empty()  # the finished text is shown once, below, with the record
    finally:  # also when the learner's Stop interrupts this run: the stream closes, Triton cancels the request
        if stream is not None:
            stream.close()
        own.SEATS.leave(ticket)
    st.session_state.pop(_OWN_PENDING, None)
    st.session_state[_OWN_RESULT] = own.own_result(ep, ask, box)


def _md(text: str) -> str:
    """``text`` shown as written: Markdown's special characters escaped, line breaks kept."""
    for ch in "\\`*_{}[]()<>#+-.!|~$":
        text = text.replace(ch, "\\" + ch)
    return text.replace("\n", "  \n")


def _own_show(result: own.OwnResult) -> None:
    run = result.run
    for key, values in result.ask.notes:  # what the page changed before sending
        st.info(t(f"ch11.own_note_{key}", **values), icon="ℹ️")
    if result.stopped:
        st.warning(t("ch11.own_stopped", n=run.tokens), icon="⏹️")
    elif run.error:
        st.error(t("ch11.own_error", error=run.error), icon="⚠️")
    if run.text:
        with st.container(border=True):
            st.markdown(f"{_md(result.ask.job.prompt)} **{_md(run.text.strip())}**")
    first, last = result.first_record, result.last_record
    dropped = first.get("dropped_prompt_tokens", 0)
    if dropped:
        kept = first.get("prompt_tokens", 0)
        st.info(
            t(
                "ch11.own_dropped",
                total=kept + dropped,
                context=first.get("context_length"),
                dropped=dropped,
                kept=kept,
            ),
            icon="✂️",
        )
    notes = first.get("notes") or []
    if notes:
        st.caption(t("ch11.own_server_notes", notes="; ".join(notes)))
    if last.get("finish_reason"):
        st.caption(
            t(
                "ch11.own_finish",
                reason=last["finish_reason"],
                prompt=first.get("prompt_tokens"),
                tokens=last.get("completion_tokens", run.tokens),
                context=first.get("context_length"),
            )
        )
    if result.ended:
        e = result.ended
        st.caption(
            t(
                "ch11.own_ended",
                request_id=e.get("request_id", run.request_id),
                step=e.get("step"),
                reason=e.get("reason"),
                kib=_fmt(e.get("kv_bytes_freed", 0) / 1024, ".0f"),
            )
        )
    elif result.stopped:
        st.caption(t("ch11.own_not_ended" if result.sent else "ch11.own_not_sent"))
    if not run.tokens:
        return
    figs = result.figures()
    tables.show(
        [
            {
                t("ch11.own_col_measure"): t(f"ch11.own_m_{key}"),
                t("ch11.own_col_client"): figs.get(f"{key}_client"),
                t("ch11.own_col_server"): figs.get(f"{key}_server", figs.get(f"{key}_ms")),
            }
            for key in ("ttft", "itl")
        ]
        + [
            {
                t("ch11.own_col_measure"): t("ch11.own_m_wait"),
                t("ch11.own_col_client"): None,
                t("ch11.own_col_server"): figs["wait_ms"],
            }
        ]
    )
    st.caption(t("ch11.own_sides"))
    names = {k: t(f"ch11.own_fig_{k}") for k in ("client", "server", "freed", "time")}
    st.plotly_chart(own.own_figure(result, names), key="ch11_own_fig", width="stretch")


def own_prompt() -> None:
    st.markdown(f"**{t('ch11.own_title')}**")
    st.caption(t("ch11.own_intro"))
    ep = server.endpoint()
    if ep is None:
        server.say_no_server()
        return
    prompt = st.text_area(
        t("ch11.own_prompt"),
        t("ch11.own_prompt_default"),
        key="ch11_own_prompt",
        persist_state="session",
        height=80,
    )
    left, right = st.columns(2)
    tokens = left.number_input(
        t("ch11.own_tokens", max=own.OWN_MAX_TOKENS),
        value=own.OWN_DEFAULT_TOKENS,
        step=1,
        key="ch11_own_tokens",
        persist_state="session",
    )
    temperature = right.number_input(
        t("ch11.own_temperature", max=own.OWN_MAX_TEMPERATURE),
        value=0.0,
        step=0.1,
        key="ch11_own_temperature",
        persist_state="session",
    )
    go_col, stop_col = st.columns(2)
    go = go_col.button(t("ch11.own_go"), type="primary", key="ch11_own_go")
    stop = stop_col.button(t("ch11.own_stop"), key="ch11_own_stop")
    pending = st.session_state.pop(_OWN_PENDING, None)
    if (
        pending is not None
    ):  # the last run was interrupted mid-stream (Stop, or another click): it was cancelled
        ask, box = pending
        st.session_state[_OWN_RESULT] = own.own_result(ep, ask, box, stopped=True)
    if go and not stop:
        try:
            ask = own.own_ask(prompt, tokens, temperature)
        except own.EmptyPrompt:
            st.warning(t("ch11.own_empty"), icon="✍️")
            return
        st.session_state.pop(_OWN_RESULT, None)
        old = st.session_state.pop(_OWN_TICKET, None)
        if old is not None:
            own.SEATS.leave(old[0])
        st.session_state[_OWN_TICKET] = (own.SEATS.join(), ask)
    queued = st.session_state.get(_OWN_TICKET)
    if queued is not None:
        ticket, ask = queued
        if stop:  # left the line before being seated: nothing was sent
            own.SEATS.leave(ticket)
            st.session_state.pop(_OWN_TICKET)
            run = generation.generation.GenerationRun(generation.generation.HTTP)
            st.session_state[_OWN_RESULT] = own.OwnResult(ask, run, stopped=True, sent=False)
        elif own.SEATS.place(ticket) > 0:
            _own_line()
        else:
            st.session_state.pop(_OWN_TICKET)
            _own_generate(ep, ask, ticket)
    result = st.session_state.get(_OWN_RESULT)
    if result is not None:
        _own_show(result)


render_lesson(11, live={"prefill_decode": own_prompt, "inflight": schedulers, "endpoints": endpoints})
