"""The sidebar every page shares: language, the server's state and log; for the teacher, the server's controls.

The server is one for the whole class, so its controls (restart, a remote server instead of the embedded
one) are shown only to the teacher (``ui.i18n.is_teacher``); auto-restart is an app-wide setting
(``ui.server.auto_restart``). Every student sees whether the server is up, its models and its log.
"""

from __future__ import annotations

import json
import re
import time

import streamlit as st
import streamlit.components.v1 as components

from triton_kitchen.core import version_facts
from triton_kitchen.core.endpoint import DEFAULT_PORTS
from triton_kitchen.core.settings import settings
from triton_kitchen.tools import metrics
from triton_kitchen.tools.repository import ServerStatus
from ui import boxes, embedded_watch, i18n, server, server_choice
from ui.i18n import t

# The status poller of a tab whose server is remote or down: a change is reported within 2 s (the poll notices
# it; the run is a few ms). Not more often: every tick redraws the whole page in the browser, a steady CPU cost
# for each open tab. An embedded server that is up is watched for every tab by one
# thread instead (ui.embedded_watch), so a tab of a class's usual day does not poll at all.
POLL_S = 1.5
LOG_LINES = 40
# Lines tritonserver writes on a machine without a usable NVIDIA GPU (it looks for CUDA, finds none, and
# runs the models on the CPU): "E... unable to create stream for tta_ensemble: CUDA driver version is
# insufficient for CUDA runtime version", "CudaDriverHelper has not been initialized", pinned memory, NVML.
HARMLESS_WITHOUT_GPU = re.compile(
    r"CUDA driver version is insufficient|CudaDriverHelper has not been initialized"
    r"|pinned memory pool will not be available|failed to allocate pinned system memory"
    r"|Failed to initialize NVML|NVML Shared Library Not Found",
    re.IGNORECASE,
)


def split_log(text: str, hide_gpu_lines: bool, lines: int = LOG_LINES) -> tuple[str, int]:
    """The last ``lines`` lines of a server log, without the lines that are harmless on a CPU-only machine
    when ``hide_gpu_lines``; and how many such lines the text holds."""
    all_lines = text.splitlines()
    harmless = sum(1 for line in all_lines if HARMLESS_WITHOUT_GPU.search(line))
    kept = [line for line in all_lines if not (hide_gpu_lines and HARMLESS_WITHOUT_GPU.search(line))]
    return "\n".join(kept[-lines:]), harmless


def moved_ports(server) -> dict[str, tuple[int, int]]:
    """Ports the embedded server asked for by default (8000/8001/8002) but did not get, as name ->
    (wanted, used): the lessons' ``localhost:8000`` then reaches some other program."""
    return {
        name: (wanted, server.ports[name])
        for name, wanted in server.requested_ports.items()
        if wanted == DEFAULT_PORTS.get(name) and server.ports.get(name) not in (None, wanted)
    }


def _server_choice() -> None:
    """The teacher's choice of server for this session: the embedded one, or a remote URL."""
    mode = server_choice.server_mode()
    options = ["embedded", "remote"]
    picked = st.radio(
        t("sidebar.server_mode"),
        options,
        index=options.index(mode),
        format_func={
            m: t(f"sidebar.mode_{m}") for m in options
        }.get,  # labels made now, in this session's language
        horizontal=True,
        key="tk_mode_radio",
        persist_state="session",
    )
    if picked == "remote":
        http_url, grpc_url = server_choice.remote_urls()
        with st.form("tk_remote_form", border=False):
            new_http = st.text_input(t("sidebar.http_url"), value=http_url, help=t("sidebar.url_help"))
            new_grpc = st.text_input(t("sidebar.grpc_url"), value=grpc_url)
            metrics_url = server_choice.remote_metrics_url()
            new_metrics = st.text_input(
                t("sidebar.metrics_url"), value=metrics_url, help=t("sidebar.metrics_url_help")
            )
            if st.form_submit_button(t("sidebar.connect")):
                # left as shown: it belongs to the server shown, not to a new HTTP address typed above it
                changed = new_metrics.strip() != metrics_url
                server_choice.use_remote(new_http, new_grpc, new_metrics if changed else None)
                st.rerun()
        if mode != "remote":
            server_choice.use_remote(http_url, grpc_url)
            st.rerun()
    elif mode != "embedded":
        server_choice.use_embedded()
        st.rerun()


def _status(status: ServerStatus | None) -> None:
    if status is None:
        if server_choice.server_mode() == "embedded" and server.embedded_state() == "failed":
            err = server.embedded_error()
            if err is not None:
                with st.expander(t("error.details")):
                    st.code(str(err)[-3000:], language=None, wrap_lines=True)
        return  # the poller above says stopped / restarting
    if not status.up:
        st.error(
            t("sidebar.status_down_at", url=status.url) if status.url else t("server.empty_url"), icon="🔴"
        )
        st.caption(t("sidebar.status_down_help"))
        return
    ready = sum(1 for m in status.models if m.ready)
    later = sum(1 for m in status.models if m.on_first_use)  # the drills' models: loaded when a drill runs
    total = len(status.models) - later
    st.success(t("sidebar.status_up", version=status.version or "?", ready=ready, total=total), icon="🟢")
    if ready < total:
        st.warning(t("sidebar.models_not_ready", n=total - ready), icon="⛔")
    if later:
        st.caption(t("sidebar.models_on_first_use", n=later))
    # a server of another version than the course's 2.51: what the lessons say that is otherwise there
    for note in version_facts.server_notes(status.version, i18n.lang()):
        st.caption(note)
    # Lazy: the table is drawn only while the expander is open (a fresh tab's first paint stays light).
    models = boxes.remembered_expander("tk_models_open", t("sidebar.models"))
    if not models.open:
        return
    with models:
        models_box(status, _metrics_now())


def models_box(status: ServerStatus, counts: metrics.ServerMetrics | None) -> None:
    """The models table, what waits in Triton's queue now, or that no metrics port answers."""
    rows = models_rows(status, counts)
    # every model at once while they are few (no scroll inside the scrolling sidebar); a big remote: 10 rows
    st.dataframe(rows, hide_index=True, width="stretch", height="content" if len(rows) <= 20 else "auto")
    if counts is None:
        st.caption(t("sidebar.metrics_none"))
        return
    waiting = {m: int(c.pending) for m, c in counts.models.items() if c.pending}
    if waiting:  # a queue right now (a load test): worth a line; an idle server's zeros are not
        st.caption(t("sidebar.waiting_now", models=", ".join(f"{m} {n}" for m, n in sorted(waiting.items()))))


def models_rows(status: ServerStatus, counts: metrics.ServerMetrics | None) -> list[dict]:
    """The sidebar's models table: each model with its readiness mark (✅, or ⛔ and its state in words) and, when
    the metrics port answers, the requests Triton has served. Two columns fit the sidebar's width; five (state,
    mean batch and queue apart) put the counts behind a horizontal scroll nobody saw."""
    rows = []
    for m in status.models:
        if m.ready:
            mark = f"✅ {m.name}"
        elif m.on_first_use:
            mark = f"💤 {m.name} · {t('sidebar.state_on_first_use')}"
        else:
            mark = f"⛔ {m.name} · {m.state or '?'}"
        row = {t("sidebar.col_model"): mark}
        if counts is not None:
            c = counts.models.get(m.name)
            row[t("sidebar.col_served")] = int(c.success) if c else 0
        rows.append(row)
    return rows


def _metrics_now():
    """The metrics port's counters now, or None (a remote server may keep it closed)."""
    ep = server.endpoint()
    if ep is None:
        return None
    try:
        return metrics.scrape(metrics.address_of(ep), timeout=1.0)
    except metrics.MetricsError:
        return None


def _signature() -> tuple:
    """What the server looks like now, cheaply: a process check (embedded) or a ≤1 s probe (remote)."""
    if server_choice.server_mode() == "remote":
        http_url, _ = server_choice.remote_urls()
        return ("remote", http_url, server.probe(http_url))
    return ("embedded", *embedded_watch.signature(server.supervisor(), server.embedded_state()))


def _polls(sig: tuple) -> bool:
    """Whether this tab polls: for a remote server (no thread watches another machine) or an embedded one that
    is not up (its "restarting N s" moves). An embedded server that is up is watched by ui.embedded_watch, which
    reruns the tab when it changes."""
    return sig[0] == "remote" or sig[1] != "up"


def _is_up(sig: tuple) -> bool:
    return sig[2] is True if sig[0] == "remote" else sig[1] == "up"


@st.fragment(run_every=POLL_S)
def _watch() -> None:
    """Every POLL_S: has the server died, come back, or changed address since this page was drawn? Says
    so at once (stopped / restarting / failed), and reruns the whole page when it changed, so every page
    picks up the new endpoint (a restarted server may listen on other ports)."""
    # the URL's language and model back within a tick if a page switch's URL update lost them (a poll run that
    # overlapped the switch wrote the URL without its query string: seen once in a clean-clone click test)
    i18n.sync_query_params()
    sig = _signature()
    shown = st.session_state.get("tk_shown")
    st.session_state["tk_shown"] = sig
    if shown is not None and shown != sig and (_is_up(sig) or _is_up(shown)):
        st.rerun()  # the whole app: the page redraws with the new state
    if sig[0] == "remote":
        return  # the full status below is measured once per run
    died_at = server.supervisor().died_at
    since = int(time.time() - died_at) if died_at else 0
    if sig[1] == "starting":
        st.info(t("server.starting"), icon="⏳")
    elif sig[1] == "restarting":
        st.warning(t("sidebar.restarting_auto", s=since), icon="🔄")
    elif sig[1] == "stopped":
        st.error(t("sidebar.stopped", s=since), icon="🔴")
        st.caption(t("sidebar.stopped_help" if i18n.is_teacher() else "sidebar.stopped_help_student"))
    elif sig[1] == "failed":
        st.error(t("sidebar.status_down"), icon="🔴")


def _previous_log(embedded) -> str:
    path = embedded.log_file.with_suffix(".log.previous")
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-40:])
    except OSError:
        return ""


def current_status() -> ServerStatus | None:
    """The current server's status, measured once per script run (``ui.server.status``)."""
    return server.status()


def _teacher_controls() -> None:
    """The shared server's controls, for the teacher only: restart, and whether it restarts by itself."""
    sup = server.supervisor()
    if st.button(t("sidebar.restart"), icon="🔄", width="stretch", disabled=sup.restarting, key="tk_restart"):
        server.restart_embedded()
        st.rerun()
    st.caption(t("sidebar.auto_restart_on" if server.auto_restart() else "sidebar.auto_restart_off"))


def _embedded_details(embedded) -> None:
    """Where the embedded server listens (a warning when it had to move), and its log (lazy)."""
    if embedded.running:
        moved = moved_ports(embedded)
        if moved:  # not a grey caption: the lessons' localhost:8000 now reaches something else
            st.warning(
                t(
                    "sidebar.ports_moved",
                    wanted=", ".join(str(w) for w, _ in moved.values()),
                    http=embedded.http_url,
                    grpc=embedded.grpc_url,
                ),
                icon="⚠️",
            )
        else:
            st.caption(t("sidebar.embedded_at", http=embedded.http_url, grpc=embedded.grpc_url))
    log = boxes.remembered_expander("tk_log_open", t("sidebar.log"))
    if log.open:  # lazy, like the models table: read and drawn only when asked for
        hide = log.toggle(
            t("sidebar.log_hide_gpu"), value=True, key="tk_log_hide_gpu", persist_state="session"
        )
        text, harmless = split_log(embedded.log_tail(400), hide)
        log.code(text or "—", language=None, wrap_lines=True)
        if harmless:
            log.caption(t("sidebar.log_gpu_hidden" if hide else "sidebar.log_gpu_shown", n=harmless))
        previous = _previous_log(embedded)
        if previous:
            log.caption(t("sidebar.log_previous"))
            log.code(split_log(previous, hide)[0], language=None, wrap_lines=True)


def server_controls() -> None:
    """Which server, and (embedded) restart and auto-restart: the sidebar's for one person's app, the teacher's
    view's in a class."""
    _server_choice()
    if server_choice.server_mode() == "embedded":
        _teacher_controls()


def remember_teacher() -> None:
    """Once a session gave the teacher's token (``?teacher=``, taken out of the URL at once): keep its mark in this
    browser's cookie, so a refresh on any page keeps the teacher's view; a wrong token forgets it. The value is
    a hex HMAC (``i18n.teacher_mark``), passed through JSON, never as HTML."""
    todo = st.session_state.get(i18n.TEACHER_REMEMBER)
    if todo not in ("keep", "forget"):
        return
    name = i18n.TEACHER_COOKIE
    if todo == "keep":
        value = i18n.teacher_mark(settings().teacher_token).decode()
        cookie = f"{name}={value}; path=/; max-age={i18n.TEACHER_COOKIE_HOURS * 3600}; SameSite=Lax"
    else:
        cookie = f"{name}=; path=/; max-age=0; SameSite=Lax"
    components.html(f"<script>window.parent.document.cookie = {json.dumps(cookie)};</script>", height=0)
    st.session_state[i18n.TEACHER_REMEMBER] = "done"


def render_sidebar() -> ServerStatus | None:
    """Draw the sidebar; returns the server status of this run (None when the embedded server is down)."""
    teacher = i18n.is_teacher() and not i18n.class_mode()  # in a class the controls are in the teacher's view
    with st.sidebar:
        remember_teacher()
        i18n.language_switch(i18n.LANG_SWITCH)
        st.subheader(t("sidebar.server"))
        if teacher:
            _server_choice()
        status = current_status()
        sig = _signature()
        st.session_state["tk_shown"] = sig  # what this run draws; the poller reports changes
        embedded_watch.start()
        if _polls(sig):
            _watch()
        _status(status)
        if server_choice.server_mode() == "embedded":
            if teacher:
                _teacher_controls()
            embedded = server.supervisor().server
            if embedded is not None:
                _embedded_details(embedded)
        return status
