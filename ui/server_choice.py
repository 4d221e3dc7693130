"""Which server a session talks to: the embedded one, or a remote one chosen in the sidebar or by
TRITON_HTTP_URL/TRITON_GRPC_URL (kept in the session's state).

A remote server chosen here is also named in the URL (``?remote=host:port&remote_grpc=host:port``, and
``remote_metrics`` where one was given), so a reload, a new tab or a copied link keeps it; the URL is obeyed
only for a session that may choose the server (:func:`ui.i18n.is_teacher`). The environment's own server, and
the embedded one, leave the URL alone."""

from __future__ import annotations

import streamlit as st

from triton_kitchen.core.endpoint import Endpoint, with_port

_MODE_KEY = "tk_server_mode"  # "embedded" | "remote"
_REMOTE_KEY = "tk_remote"  # (http_url, grpc_url)
# (the HTTP address it was given for, the metrics host:port): another HTTP server gets its host's 8002, never
# the counts of the server before it
_METRICS_KEY = "tk_remote_metrics"
URL_PARAMS = ("remote", "remote_grpc", "remote_metrics")


def _from_url() -> bool:
    """Take the remote server the URL names, for a session that may choose it; True when it did."""
    http = (st.query_params.get("remote") or "").strip()
    if not http:
        return False
    from ui.i18n import is_teacher

    if not is_teacher():
        return False
    grpc = (st.query_params.get("remote_grpc") or "").strip()
    use_remote(
        http, grpc or Endpoint.remote(http_url=http).grpc_url, st.query_params.get("remote_metrics") or ""
    )
    return True


def _sync_url() -> None:
    """Name the remote server chosen in this session in the URL; drop it for the embedded or the environment's."""
    want: dict[str, str] = {}
    if st.session_state.get(_MODE_KEY) == "remote" and _REMOTE_KEY in st.session_state:
        http, grpc = st.session_state[_REMOTE_KEY]
        env = Endpoint.from_env()
        if env is None or (env.http_url, env.grpc_url) != (http, grpc):
            want = {"remote": http, "remote_grpc": grpc}
            given_for, metrics = st.session_state.get(_METRICS_KEY, ("", ""))
            if metrics and given_for == http:
                want["remote_metrics"] = metrics
    for param in URL_PARAMS:
        if param in want:
            if st.query_params.get(param) != want[param]:
                st.query_params[param] = want[param]
        elif param in st.query_params:
            del st.query_params[param]


def uses_embedded(session_state) -> bool:
    """Whether a session (its session state, read from any thread) shows the embedded server."""
    try:
        return session_state[_MODE_KEY] != "remote"
    except KeyError:  # no run has chosen yet
        return True


def server_mode() -> str:
    """ "remote" when the sidebar or TRITON_HTTP_URL/TRITON_GRPC_URL chose one, else "embedded"."""
    if _MODE_KEY not in st.session_state and not _from_url():
        env = Endpoint.from_env()
        st.session_state[_MODE_KEY] = "remote" if env else "embedded"
        if env:
            st.session_state[_REMOTE_KEY] = (env.http_url, env.grpc_url)
    _sync_url()
    return st.session_state[_MODE_KEY]


def remote_urls() -> tuple[str, str]:
    if _REMOTE_KEY not in st.session_state:
        env = Endpoint.from_env()
        st.session_state[_REMOTE_KEY] = (
            (env.http_url, env.grpc_url) if env else ("localhost:8000", "localhost:8001")
        )
    return st.session_state[_REMOTE_KEY]


def remote_metrics_url() -> str:
    """The remote server's metrics address ("" for its HTTP host's 8002): the one given for the HTTP address in
    use, in the sidebar or, for the environment's server, as TRITON_METRICS_URL; "" for any other server."""
    if _METRICS_KEY not in st.session_state:
        env = Endpoint.from_env()
        st.session_state[_METRICS_KEY] = (env.http_url, env.metrics_url or "") if env else ("", "")
    given_for, metrics_url = st.session_state[_METRICS_KEY]
    return metrics_url if given_for == remote_urls()[0] else ""


def use_remote(http_url: str, grpc_url: str, metrics_url: str | None = None) -> None:
    """Talk to the server at these addresses. ``metrics_url``: its metrics address ("" for the HTTP host's
    8002); None when the reader did not change it, which keeps it only while the HTTP address stays the same."""
    st.session_state[_MODE_KEY] = "remote"
    http, grpc = with_port(http_url, "http"), with_port(grpc_url, "grpc")  # "gpu-box": Triton's own ports
    st.session_state[_REMOTE_KEY] = (http, grpc)
    if metrics_url is not None:
        st.session_state[_METRICS_KEY] = (
            http,
            with_port(metrics_url, "metrics") if metrics_url.strip() else "",
        )


def use_embedded() -> None:
    st.session_state[_MODE_KEY] = "embedded"
