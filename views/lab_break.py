"""Break-it lab: real mistakes on the wire, each with the real error it raised next to the fix that worked."""

from __future__ import annotations

import streamlit as st

from triton_kitchen.labs import breakit
from ui import errors, server
from ui.i18n import t

st.title(t("lab_break.title"))
st.caption(t("lab_break.intro"))
ep = server.endpoint()
if ep is None:
    st.info(t("lab_break.no_server"))


def _attempt(a: breakit.Attempt) -> None:
    st.markdown(f"**{t(f'lab_break.attempt_{a.kind}')}**")
    if "held" in a.detail:
        st.caption(t("lab_break.held", dtype=a.detail["dtype"], held=a.detail["held"]))
    code = f"[{a.code}] " if a.code and a.code != "OK" else ""
    said = t(f"lab_break.got_{a.got_key}", **a.got) if a.got_key else a.message  # an error stays as raised
    if a.ok:
        st.success(code + said, icon="✅")
    elif a.kind == "np_bytes":  # no error at all: the value arrived shortened, silently
        st.warning(t("lab_break.silent", message=said), icon="⚠️")
    else:
        st.error(t("lab_break.raised", message=code + a.message), icon="⛔")


def _facts(result: breakit.CaseResult) -> None:
    f = result.facts
    if result.case == "grpc_limit" and f.get("grpc_default_receive"):
        st.markdown(
            t(
                "lab_break.limits",
                request=f["request_bytes"],
                reply=f["reply_bytes"],
                grpc=f["grpc_default_receive"],
                tritonclient=f["tritonclient_limit"],
                ran=f["server_ran"],
            )
        )
    elif result.case == "bytes_nul":
        st.caption(t("lab_break.sent", sent=f["sent"], n=f["sent_len"]))
    elif result.case == "not_loaded":
        if f.get("ready"):
            st.caption(t("lab_break.ready", models=", ".join(f["ready"])))
        elif f.get("index_refused"):
            st.caption(t("lab_break.index_refused", message=f["index_refused"]))


# plain tabs: a remembered tab's click reruns the page, which would stop a case running in another tab
tabs = st.tabs([t(f"lab_break.case_{case}") for case in breakit.CASES])
for tab, case in zip(tabs, breakit.CASES, strict=True):
    with tab:
        st.markdown(t(f"lab_break.{case}_why"))
        if server.run_button(t("lab_break.run"), key=f"break_{case}", type="primary", disabled=ep is None):
            with st.spinner(t("lab_break.running")):
                try:
                    result = server.lab_run(1, lambda c=case: breakit.run_case(ep, c))
                    if result is not server.BUSY:
                        st.session_state[f"break_result_{case}"] = result
                except Exception as exc:  # noqa: BLE001 - a dead server, say: one message, the page lives on
                    errors.show_error(exc)
        result = st.session_state.get(f"break_result_{case}")
        if result is None:
            continue
        left, right = st.columns(2)
        with left:
            st.subheader(t("lab_break.broken"))
            for a in result.broken:
                _attempt(a)
        with right:
            st.subheader(t("lab_break.fixed"))
            st.code(result.fix_code, language="python", wrap_lines=True)
            for a in result.fixed:
                _attempt(a)
        _facts(result)
