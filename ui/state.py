"""Per-session state the pages share: language, the current Triton server, the selected model.

Language and selected model live in the URL (``st.query_params``) so a teacher can share a link to
a view; they are mirrored in ``st.session_state`` because switching pages clears the query string.
The embedded server is one object per app process (``st.cache_resource``); clients are never cached
here — ``triton_kitchen.clients`` makes them per thread.
"""

from __future__ import annotations

import threading
from typing import Any

import streamlit as st

from triton_kitchen import lessons
from triton_kitchen.server import EmbeddedServer, Endpoint, ServerStartError

DEFAULT_MODEL = "image_classifier"
_MODE_KEY = "tk_server_mode"  # "embedded" | "remote"
_REMOTE_KEY = "tk_remote"  # (http_url, grpc_url)


# -- language --------------------------------------------------------------------------------
def lang() -> str:
    """The session's language, "zh" (default) or "en", from the ``lang`` query parameter."""
    raw = st.query_params.get("lang") or st.session_state.get("tk_lang")
    return lessons.normalize_lang(raw)


def set_lang(value: str) -> None:
    value = lessons.normalize_lang(value)
    st.session_state["tk_lang"] = value
    st.query_params["lang"] = value


def t(key: str, **kw: Any) -> str:
    """A UI string in the session's language (a missing key shows as the key itself)."""
    return lessons.t(key, lang(), **kw)


# -- selected model --------------------------------------------------------------------------
def selected_model(default: str = DEFAULT_MODEL) -> str:
    return st.query_params.get("model") or st.session_state.get("tk_model") or default


def set_selected_model(name: str) -> None:
    st.session_state["tk_model"] = name
    if st.query_params.get("model") != name:
        st.query_params["model"] = name


def sync_query_params() -> None:
    """Keep ``lang`` and ``model`` in the URL on every page (a page switch drops the query string)."""
    for param, key in (("lang", "tk_lang"), ("model", "tk_model")):
        value = st.query_params.get(param)
        if value:
            st.session_state[key] = lessons.normalize_lang(value) if param == "lang" else value
        elif st.session_state.get(key):
            st.query_params[param] = st.session_state[key]


# -- the server ------------------------------------------------------------------------------
class EmbeddedHolder:
    """The app's one embedded server: started once, on first use; restartable; remembers a failed start."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.server: EmbeddedServer | None = None
        self.error: Exception | None = None

    def get(self) -> EmbeddedServer | None:
        with self.lock:
            if self.server is None and self.error is None:
                server = EmbeddedServer()
                try:
                    server.start(timeout=180)
                    self.server = server
                except (ServerStartError, OSError) as exc:
                    self.error = exc
            return self.server

    def restart(self) -> EmbeddedServer | None:
        with self.lock:
            server, self.server, self.error = self.server, None, None
            if server is not None:
                try:
                    server.restart(timeout=180)
                    self.server = server
                except (ServerStartError, OSError) as exc:
                    self.error = exc
        return self.get()


@st.cache_resource(show_spinner=False)
def _holder() -> EmbeddedHolder:
    return EmbeddedHolder()


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


def use_remote(http_url: str, grpc_url: str) -> None:
    st.session_state[_MODE_KEY] = "remote"
    st.session_state[_REMOTE_KEY] = (http_url.strip(), grpc_url.strip())


def use_embedded() -> None:
    st.session_state[_MODE_KEY] = "embedded"


def embedded_server() -> EmbeddedServer | None:
    """The embedded server (started on first call, once per app process), or None if it failed."""
    return _holder().get()


def embedded_error() -> Exception | None:
    return _holder().error


def restart_embedded() -> EmbeddedServer | None:
    from triton_kitchen.clients import close_thread_clients

    close_thread_clients()
    return _holder().restart()


def endpoint() -> Endpoint | None:
    """Where the current server answers: the remote one chosen, or the embedded one (None if down)."""
    if server_mode() == "remote":
        http_url, grpc_url = remote_urls()
        return Endpoint(http_url=http_url, grpc_url=grpc_url, embedded=False)
    with st.spinner(t("server.starting")):
        server = embedded_server()
    return server.endpoint if server is not None else None


# -- errors ----------------------------------------------------------------------------------
def error_code_of(exc_or_code: Exception | str) -> str:
    if isinstance(exc_or_code, str):
        return exc_or_code
    code = getattr(exc_or_code, "code", None)
    if isinstance(code, str) and code:
        return code
    if isinstance(exc_or_code, ServerStartError):
        return "server_start"
    try:
        from tritonclient.utils import InferenceServerException

        from triton_kitchen.classify import error_code

        if isinstance(exc_or_code, InferenceServerException):
            return error_code(exc_or_code)
    except ImportError:  # pragma: no cover - tritonclient is a requirement
        pass
    if isinstance(exc_or_code, ConnectionError | TimeoutError | OSError):
        return "server_unreachable"
    return "unexpected"


def show_error(exc_or_code: Exception | str, detail: str | None = None) -> None:
    """A translated message (st.error) with the technical detail in an expander; never a traceback."""
    code = error_code_of(exc_or_code)
    key = f"error.{code}"
    message = t(key)
    if message == key:
        message = t("error.unexpected")
    st.error(message, icon="⚠️")
    if detail is None and not isinstance(exc_or_code, str):
        detail = getattr(exc_or_code, "detail", None) or str(exc_or_code)
    if detail:
        with st.expander(t("error.details")):
            st.code(detail, language=None, wrap_lines=True)
