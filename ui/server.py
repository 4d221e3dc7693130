"""The current Triton server, as pages see it: where it answers, whether it is up, and runs against it.

The embedded server is one :class:`~triton_kitchen.core.supervisor.ServerSupervisor` per app process
(``st.cache_resource``); a remote one is chosen per session (sidebar or TRITON_HTTP_URL/TRITON_GRPC_URL).
:func:`status` measures the server once per script run, whoever asks first (sidebar or page), and
:func:`endpoint` follows it. Clients are never cached here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import streamlit as st

from triton_kitchen.core import kserve, on_demand
from triton_kitchen.core.endpoint import Endpoint, remote_headers
from triton_kitchen.core.server import EmbeddedServer
from triton_kitchen.core.settings import settings
from triton_kitchen.core.supervisor import RESTART_TIMEOUT_S, ServerSupervisor
from triton_kitchen.tools.repository import ServerStatus, server_status
from ui.errors import show_error
from ui.i18n import t
from ui.server_choice import remote_metrics_url, remote_urls, server_mode

__all__ = [
    "BUSY",
    "Busy",
    "DEAD_PROBE_TTL_S",
    "PROBE_TIMEOUT_S",
    "RESTART_TIMEOUT_S",
    "auto_restart",
    "embedded_error",
    "embedded_state",
    "endpoint",
    "lab_run",
    "probe",
    "raw_endpoint",
    "restart_embedded",
    "say_if_stopped_by_death",
    "say_no_server",
    "server_watch",
    "status",
    "supervisor",
]

PROBE_TIMEOUT_S = 1.0  # a remote server that has not answered by then is reported as unreachable
# The embedded server's process is ours and known to run (a dead one refuses at once, and the supervisor
# notices): a slow answer from it means a busy machine, not a gone server, so it gets longer
EMBEDDED_PROBE_TIMEOUT_S = 3.0
_PROBE_TTL_S = 1.0  # one probe per URL and second for the whole app, however many sessions poll
DEAD_PROBE_TTL_S = 3.0  # a server that did not answer is asked again after this long, not on every run
_STATUS_KEY = "tk_status_run"  # (this run's marker, its ServerStatus | None)


# -- the embedded server ---------------------------------------------------------------------
@st.cache_resource(show_spinner=False)
def supervisor() -> ServerSupervisor:
    """The app's one embedded server (started on first use, restarted in the background)."""
    return ServerSupervisor(app_server)


def app_server() -> EmbeddedServer:
    """The embedded server as the app starts it: the drills' models load on first use (``core.on_demand``)."""
    return EmbeddedServer(load_models=on_demand.loaded_at_start())


def auto_restart() -> bool:
    """Restart a dead embedded server without being asked: an app-wide setting, on unless the app was started
    with TRITON_KITCHEN_AUTO_RESTART=0 (it is one server for the whole class, not a student's choice)."""
    return settings().auto_restart


def embedded_error() -> Exception | None:
    return supervisor().error


def embedded_state() -> str:
    """The embedded server's state (see :meth:`ServerSupervisor.state`); a dead one is restarted in the
    background when auto-restart is on."""
    sup = supervisor()
    current = sup.state()
    if current == "stopped" and sup.server is not None and auto_restart():
        sup.restart_async()
        current = "restarting"
    return current


def restart_embedded() -> None:
    """The teacher's restart button: restart in the background; the status poller shows progress."""
    from triton_kitchen.core.clients import close_all

    close_all()  # the shared gRPC clients of the old server (a restarted one may listen on other ports)
    supervisor().restart_async(force=True)


# -- probing a remote server -----------------------------------------------------------------
_probes: dict[str, tuple[float, bool]] = {}
_probes_lock = threading.Lock()
_probing: dict[str, threading.Thread] = {}


def probe(http_url: str, timeout: float = PROBE_TIMEOUT_S) -> bool:
    """Does a KServe-v2 server answer (live) at ``http_url``? Bounded by ``timeout`` even when a name does not
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
    ok = kserve.live(http_url, timeout) if http_url else False
    with _probes_lock:
        _probes[http_url] = (time.monotonic(), ok)


# -- the server of this run ------------------------------------------------------------------
def raw_endpoint() -> Endpoint | None:
    """The chosen server's address, without asking it anything: the remote one, or the embedded one while
    it is up (starting it in the background on first use). :func:`endpoint` is what pages use."""
    if server_mode() == "remote":
        http_url, grpc_url = remote_urls()
        metrics_url = remote_metrics_url() or None  # None: metrics.address_of reads the HTTP host's 8002
        return Endpoint(
            http_url=http_url,
            grpc_url=grpc_url,
            embedded=False,
            metrics_url=metrics_url,
            headers=remote_headers(),  # TRITON_KITCHEN_KEY: the restricted repository API's key
        )
    sup = supervisor()
    if sup.server is None and sup.error is None:
        sup.start_async()  # no page waits for Triton: the status poller reruns them once it is up
    if embedded_state() != "up":
        return None
    server = sup.server
    return server.endpoint if server is not None else None


def _this_run() -> object | None:
    """Something that is the same object for the whole script run and a new one for the next run: the run
    context's cursor table, which Streamlit replaces when a run starts (no public run id exists). The memo
    keeps a reference to it, so a later run's table can never be the same object. None outside a run."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return getattr(ctx, "cursors", None) if ctx is not None else None


def _measure(ep: Endpoint | None) -> ServerStatus | None:
    if ep is None:
        return None
    if not ep.embedded and not probe(ep.http_url):
        return ServerStatus(up=False, url=ep.http_url, error=f"no answer within {PROBE_TIMEOUT_S:g} s")
    return server_status(ep, timeout=EMBEDDED_PROBE_TIMEOUT_S if ep.embedded else PROBE_TIMEOUT_S)


def status() -> ServerStatus | None:
    """The current server's status (None while the embedded server is down, starting or restarting), measured
    once per script run, by whoever asks first (the sidebar, or a page that runs alone), and the same
    answer for everyone after that in the run."""
    ep = raw_endpoint()
    marker = _this_run()
    memo = st.session_state.get(_STATUS_KEY)
    if marker is not None and memo is not None and memo[0] is marker and memo[1] == ep:
        return memo[2]
    measured = _measure(ep)
    if marker is not None:
        st.session_state[_STATUS_KEY] = (marker, ep, measured)
    return measured


def endpoint() -> Endpoint | None:
    """Where the current server answers, made fresh on every call (a restarted server may have new ports):
    the remote one chosen, or the embedded one. None while the embedded server is down or restarting, and
    when the server did not answer this run's status check, so no page waits on a dead server."""
    ep = raw_endpoint()
    if ep is None:
        return None
    current = status()
    if current is not None and current.url == ep.http_url and not current.up:
        return None
    return ep


def run_button(label: str, *, where=None, disabled: bool = False, **kwargs) -> bool:
    """``st.button`` (in ``where``, a column say) that is never True while drawn disabled: a click made while
    it was enabled still arrives with the next run, also when that run found the server gone and disabled it
    (the page would then run its work against no endpoint)."""
    return bool((where or st).button(label, disabled=disabled, **kwargs)) and not disabled


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
        show_error("server_unreachable", detail=t("server.down"))


# -- heavy lab runs --------------------------------------------------------------------------
class Busy:
    """What :func:`lab_run` returns when the class's lab budget is taken (the page has said so already)."""

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "BUSY"


BUSY = Busy()


def lab_run(workers: int, fn: Callable[[], Any]) -> Any:
    """``fn()`` (a load, a sweep, a cross-check) run holding ``workers`` of the app-wide lab budget
    (triton_kitchen.core.budget), so one student's lab cannot starve the class; returns what ``fn`` returned.
    When the budget is taken the page says so at once (translated) and :data:`BUSY` is returned."""
    from triton_kitchen.core.budget import LAB_BUDGET, BudgetBusy

    try:
        with LAB_BUDGET.hold(workers, wait_s=1.0):
            return fn()
    except BudgetBusy as exc:
        st.warning(t("lab.busy", used=exc.used, total=exc.total, runs=exc.runs), icon="⏳")
        return BUSY


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
