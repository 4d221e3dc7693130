"""The sidebar every page shares: language, server (embedded or remote), status, restart, log tail."""

from __future__ import annotations

import streamlit as st

from triton_kitchen.repository import ServerStatus, server_status
from ui import state
from ui.state import t

LANG_LABELS = {"zh": "中文", "en": "English"}


def _language_switch() -> None:
    current = state.lang()
    choice = st.segmented_control(
        t("sidebar.language"),
        options=list(LANG_LABELS),
        format_func=LANG_LABELS.get,
        default=current,
        key="tk_lang_switch",
    )
    if choice and choice != current:
        state.set_lang(choice)
        st.rerun()


def _server_choice() -> None:
    mode = state.server_mode()
    options = ["embedded", "remote"]
    picked = st.radio(
        t("sidebar.server_mode"),
        options,
        index=options.index(mode),
        format_func=lambda m: t(f"sidebar.mode_{m}"),
        horizontal=True,
        key="tk_mode_radio",
    )
    if picked == "remote":
        http_url, grpc_url = state.remote_urls()
        with st.form("tk_remote_form", border=False):
            new_http = st.text_input(t("sidebar.http_url"), value=http_url, help=t("sidebar.url_help"))
            new_grpc = st.text_input(t("sidebar.grpc_url"), value=grpc_url)
            if st.form_submit_button(t("sidebar.connect")):
                state.use_remote(new_http, new_grpc)
                st.rerun()
        if mode != "remote":
            state.use_remote(http_url, grpc_url)
            st.rerun()
    elif mode != "embedded":
        state.use_embedded()
        st.rerun()


def _status(status: ServerStatus | None) -> None:
    if status is None:
        err = state.embedded_error()
        st.error(t("sidebar.status_down"), icon="🔴")
        if err is not None:
            with st.expander(t("error.details")):
                st.code(str(err)[-3000:], language=None, wrap_lines=True)
        return
    if not status.up:
        st.error(t("sidebar.status_down_at", url=status.url), icon="🔴")
        return
    ready = sum(1 for m in status.models if m.ready)
    st.success(
        t("sidebar.status_up", version=status.version or "?", ready=ready, total=len(status.models)),
        icon="🟢",
    )
    with st.expander(t("sidebar.models")):
        rows = [
            {
                t("sidebar.col_model"): m.name,
                t("sidebar.col_state"): ("✅ " if m.ready else "⛔ ") + (m.state or "?"),
            }
            for m in status.models
        ]
        st.dataframe(rows, hide_index=True, width="stretch")


def current_status() -> ServerStatus | None:
    """The current server's status, measured once per script run (cached in session state for it)."""
    ep = state.endpoint()
    if ep is None:
        return None
    return server_status(ep, timeout=1.0)


def render_sidebar() -> ServerStatus | None:
    """Draw the sidebar; returns the server status it measured (None when the embedded server failed)."""
    with st.sidebar:
        _language_switch()
        st.subheader(t("sidebar.server"))
        _server_choice()
        status = current_status()
        _status(status)
        if state.server_mode() == "embedded":
            server = state.embedded_server()
            if st.button(t("sidebar.restart"), icon="🔄", width="stretch"):
                with st.spinner(t("sidebar.restarting")):
                    state.restart_embedded()
                st.rerun()
            if server is not None:
                st.caption(t("sidebar.embedded_at", http=server.http_url, grpc=server.grpc_url))
                with st.expander(t("sidebar.log")):
                    st.code(server.log_tail(40) or "—", language=None)
        st.session_state["tk_status"] = status
        return status
