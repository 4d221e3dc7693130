"""Per-session state the pages share: language, the current Triton server, the selected model.

Language and selected model live in the URL (``st.query_params``) so a teacher can share a link to
a view; they are mirrored in ``st.session_state`` because switching pages clears the query string.
The embedded server is one object per app process (``st.cache_resource``); clients are never cached
here — ``triton_kitchen.clients`` makes them per thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import streamlit as st

from triton_kitchen import lessons
from triton_kitchen.repository import probe_live
from triton_kitchen.server import EmbeddedServer, Endpoint, ServerStartError, host_port

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


def protocol_label(protocol: str, language: str | None = None) -> str:
    """How a protocol id ("grpc", "http", "http-json", ...) is written on screen: "gRPC", "HTTP", ..."""
    label = lessons.t(f"protocol.{protocol}", language or lang())
    return protocol if label == f"protocol.{protocol}" else label


def protocol_labeller() -> Callable[[str], str]:
    """``protocol_label`` fixed to this run's language: a widget's format_func may be called later, outside
    the script run (AppTest does), where the session's language is out of reach."""
    language = lang()
    return lambda protocol: protocol_label(protocol, language)


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
RESTART_TIMEOUT_S = 180.0
PROBE_TIMEOUT_S = 1.0  # a remote server that has not answered by then is reported as unreachable
_PROBE_TTL_S = 1.0  # one probe per URL and second for the whole app, however many sessions poll
DEAD_PROBE_TTL_S = 3.0  # a server that did not answer is asked again after this long, not on every run


class EmbeddedHolder:
    """The app's one embedded server: started once, on first use; restarted in the background (never in a
    page's script thread, so no page waits on it); remembers a failed start and when the server died."""

    def __init__(self, factory: Callable[[], EmbeddedServer] = EmbeddedServer) -> None:
        self.factory = factory  # how a first start makes its server (tests start a small one)
        self.lock = threading.Lock()
        self.server: EmbeddedServer | None = None
        self.error: Exception | None = None
        self.died_at: float | None = None  # time.time() when a dead process was first noticed
        self._restarter: threading.Thread | None = None

    @property
    def restarting(self) -> bool:
        return self._restarter is not None and self._restarter.is_alive()

    def start_async(self) -> None:
        """The first start, in the background: pages draw at once and say "starting" meanwhile."""
        with self.lock:
            if self.server is None and self.error is None:
                self._spawn(force=False)

    def state(self) -> str:
        """ "starting" (first start), "up", "restarting", "stopped" (died, not restarting) or "failed" (never
        started / restart failed). Cheap: a process check, no network."""
        if self.restarting:
            return "starting" if self.server is None else "restarting"
        server = self.server
        if server is None:
            return "failed" if self.error is not None else "stopped"
        if server.running:
            return "up"
        if self.died_at is None:
            self.died_at = time.time()
        return "stopped"

    def restart_async(self, force: bool = False) -> None:
        """Restart in a background thread: a dead server (``ensure_running``), or any (``force``)."""
        with self.lock:
            if self.died_at is None and not self.restarting:
                self.died_at = time.time()
            self._spawn(force)

    def _spawn(self, force: bool) -> None:
        """Run :meth:`_restart` in a background thread unless one runs already (the caller holds the lock)."""
        if self.restarting:
            return
        self._restarter = threading.Thread(target=self._restart, args=(force,), name="triton-kitchen", daemon=True)
        self._restarter.start()

    def _restart(self, force: bool) -> None:
        server = self.server
        try:
            if server is None:
                server = self.factory()
                server.start(timeout=RESTART_TIMEOUT_S)
            elif force or not server.running:
                if not server.ensure_running(timeout=RESTART_TIMEOUT_S) and (force or not server.running):
                    server.restart(timeout=RESTART_TIMEOUT_S)
            self.server, self.error, self.died_at = server, None, None
        except (ServerStartError, OSError) as exc:
            self.error = exc

    def wait(self, timeout: float) -> bool:
        """Wait for a background restart to end (tests); True when the server is up."""
        thread = self._restarter
        if thread is not None:
            thread.join(timeout)
        return self.state() == "up"

    def restart(self) -> EmbeddedServer | None:
        """Restart and wait (kept for scripts and tests); pages use :meth:`restart_async`."""
        self.restart_async(force=True)
        self.wait(RESTART_TIMEOUT_S + 10)
        return self.server


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
    st.session_state[_REMOTE_KEY] = (host_port(http_url), host_port(grpc_url))


def use_embedded() -> None:
    st.session_state[_MODE_KEY] = "embedded"


def auto_restart() -> bool:
    """Restart a dead embedded server without being asked (the sidebar's toggle; on by default)."""
    return bool(st.session_state.get("tk_auto_restart", True))


def embedded_error() -> Exception | None:
    return _holder().error


def embedded_state() -> str:
    """The embedded server's state (see :meth:`EmbeddedHolder.state`); a dead one is restarted in the
    background when this session has auto-restart on."""
    holder = _holder()
    current = holder.state()
    if current == "stopped" and holder.server is not None and auto_restart():
        holder.restart_async()
        current = "restarting"
    return current


def restart_embedded() -> None:
    """The sidebar's restart button: restart in the background; the status poller shows progress."""
    from triton_kitchen.clients import close_thread_clients

    close_thread_clients()
    _holder().restart_async(force=True)


_probes: dict[str, tuple[float, bool]] = {}
_probes_lock = threading.Lock()


_probing: dict[str, threading.Thread] = {}


def probe(http_url: str, timeout: float = PROBE_TIMEOUT_S) -> bool:
    """Does a KServe-v2 server answer at ``http_url``? Bounded by ``timeout`` even when a name does not
    resolve (DNS is not covered by socket timeouts); one real probe per URL and second for the app.

    A dead server costs a page at most one wait, the first: its "no" is kept for DEAD_PROBE_TTL_S, then
    asked again in the background while callers keep getting "no" at once (a page never waits on a dead
    server twice); while a probe of a URL is waiting, other callers get its last answer instead of waiting."""
    now = time.monotonic()
    with _probes_lock:
        hit = _probes.get(http_url)
        if hit and now - hit[0] < (_PROBE_TTL_S if hit[1] else DEAD_PROBE_TTL_S):
            return hit[1]
        running = _probing.get(http_url)
        busy = running is not None and running.is_alive()
        if busy and hit is not None:
            return hit[1]  # somebody is asking already: no second wait
        worker = threading.Thread(target=_probe_into_cache, args=(http_url, timeout), daemon=True)
        _probing[http_url] = worker
        worker.start()
    if hit is not None and not hit[1]:
        return False  # dead before: ask again in the background, and let this page draw now
    worker.join(timeout + 0.1)
    with _probes_lock:
        hit = _probes.get(http_url)
        if hit is None or hit[0] < now:  # no answer in time (a name that does not resolve): "no"
            hit = _probes[http_url] = (time.monotonic(), False)
    return hit[1]


def _probe_into_cache(http_url: str, timeout: float) -> None:
    ok = probe_live(http_url, timeout)
    with _probes_lock:
        _probes[http_url] = (time.monotonic(), ok)


def _raw_endpoint() -> Endpoint | None:
    if server_mode() == "remote":
        http_url, grpc_url = remote_urls()
        return Endpoint(http_url=http_url, grpc_url=grpc_url, embedded=False)
    holder = _holder()
    if holder.server is None and holder.error is None:
        holder.start_async()  # no page waits for Triton: the status poller reruns them once it is up
    if embedded_state() != "up":
        return None
    server = holder.server
    return server.endpoint if server is not None else None


def endpoint() -> Endpoint | None:
    """Where the current server answers, made fresh on every call (a restarted server may have new ports):
    the remote one chosen, or the embedded one. None while the embedded server is down or restarting, and
    when a remote server did not answer this run's status check — so no page waits on a dead server."""
    ep = _raw_endpoint()
    if ep is None:
        return None
    status = st.session_state.get("tk_status")
    if status is not None and getattr(status, "url", None) == ep.http_url and not status.up:
        return None
    return ep


def say_no_server() -> None:
    """Why a page that needs a server cannot run now: starting or restarting (it comes back by itself),
    or no server at all (an error that says what to do, for the mode the sidebar is in)."""
    current = embedded_state() if server_mode() == "embedded" else "remote"
    if current in ("starting", "restarting"):
        st.info(t("server.starting" if current == "starting" else "server.wait_restart"), icon="⏳")
    elif current == "remote":  # what to check, for a remote server: its address (no embedded one to restart)
        url = remote_urls()[0]
        st.error(t("server.down_remote", url=url) if url else t("server.empty_url"), icon="⚠️")
    else:
        show_error("server_unreachable", t("server.down"))


# -- heavy lab runs --------------------------------------------------------------------------
def lab_run(workers: int, fn: Callable[[], Any]) -> bool:
    """Run ``fn`` (a load, a sweep, a cross-check) holding ``workers`` of the app-wide lab budget
    (triton_kitchen.fairness), so one student's lab cannot starve the class. When the budget is taken
    the page says so at once (translated) and False is returned; nothing waits for long."""
    from triton_kitchen.fairness import LAB_BUDGET, BudgetBusy

    try:
        with LAB_BUDGET.hold(workers, wait_s=1.0):
            fn()
        return True
    except BudgetBusy as exc:
        st.warning(t("lab.busy", used=exc.used, total=exc.total, runs=exc.runs), icon="⏳")
        return False


def server_watch(stop: threading.Event) -> Callable[..., None]:
    """A progress callback's companion: sets ``stop`` as soon as the embedded server dies, so a run ends
    at once (the poller restarts the server); call :func:`say_if_stopped_by_death` after the run."""

    def check(*_args) -> None:
        if server_mode() == "embedded" and embedded_state() != "up":
            stop.set()
            st.session_state["tk_run_server_died"] = True

    st.session_state.pop("tk_run_server_died", None)
    return check


def say_if_stopped_by_death() -> None:
    if st.session_state.pop("tk_run_server_died", None):
        st.warning(t("lab.server_died"), icon="🔴")


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
    if code == "server_unreachable" and server_mode() == "remote":
        key = "error.server_unreachable_remote"  # no "restart the embedded server" advice for a remote one
    message = t(key)
    if message == key:
        message = t("error.unexpected")
    st.error(message, icon="⚠️")
    if detail is None and not isinstance(exc_or_code, str):
        detail = getattr(exc_or_code, "detail", None) or str(exc_or_code)
    if detail:
        with st.expander(t("error.details")):
            st.code(detail, language=None, wrap_lines=True)
