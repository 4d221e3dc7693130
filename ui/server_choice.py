"""Which server a session talks to: the embedded one, or a remote one chosen in the sidebar or by
TRITON_HTTP_URL/TRITON_GRPC_URL (kept in the session's state)."""

from __future__ import annotations

import streamlit as st

from triton_kitchen.core.endpoint import Endpoint, with_port

_MODE_KEY = "tk_server_mode"  # "embedded" | "remote"
_REMOTE_KEY = "tk_remote"  # (http_url, grpc_url)
# (the HTTP address it was given for, the metrics host:port): another HTTP server gets its host's 8002, never
# the counts of the server before it
_METRICS_KEY = "tk_remote_metrics"


def uses_embedded(session_state) -> bool:
    """Whether a session (its session state, read from any thread) shows the embedded server."""
    try:
        return session_state[_MODE_KEY] != "remote"
    except KeyError:  # no run has chosen yet
        return True


def server_mode() -> str:
    """ "remote" when the sidebar or TRITON_HTTP_URL/TRITON_GRPC_URL chose one, else "embedded"."""
    if _MODE_KEY not in st.session_state:
        env = Endpoint.from_env()
        st.session_state[_MODE_KEY] = "remote" if env else "embedded"
        if env:
            st.session_state[_REMOTE_KEY] = (env.http_url, env.grpc_url)
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
