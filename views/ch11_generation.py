"""Chapter 11: generation — prefill and decode, the KV cache, request-level against in-flight batching, the
generate endpoints. The endpoints section asks for a prediction, then sends the real requests to the streaming
model and shows Triton's words (triton_kitchen.labs.generation)."""

from __future__ import annotations

import streamlit as st

from triton_kitchen.labs import generation
from ui import predict, server, tables
from ui.i18n import t
from ui.lesson import render_lesson


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
    tables.show(
        [
            {
                t("ch11.col.request"): t(f"ch11.call_{c.key}"),
                t("ch11.col.path"): c.path,
                t("ch11.col.status"): c.status,
                t("ch11.col.said"): c.error
                if c.error
                else t("ch11.events", n=c.events)
                if c.events
                else c.text,
            }
            for c in result.calls
        ]
    )
    first = result.call("generate_two")
    predict.reveal("ch11_gen", options, result.outcome(), t("ch11.gen_detail", status=first.status))
    if first.error:
        st.code(first.error, language="text", wrap_lines=True)


render_lesson(11, live={"endpoints": endpoints})
