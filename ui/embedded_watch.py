"""The embedded server watched by one thread for the whole app: when it dies, restarts or comes back, every open
tab that shows it is rerun at once (``ui.push``). A tab shows the news within ``WATCH_S`` and a script run (well
under 2 s) without polling for it: only a tab whose server is down (its "restarting N s"
count moves) or remote (no thread watches another machine) polls (``ui.sidebar``). The watcher only looks (a
process check): restarting a dead server stays with the tabs' runs (``ui.server.embedded_state``), which it
reruns at once.
"""

from __future__ import annotations

import logging
import threading

import streamlit as st

from triton_kitchen.core.supervisor import ServerSupervisor
from ui import push, server, server_choice

log = logging.getLogger(__name__)

WATCH_S = 0.25  # a process check, no network: cheap enough four times a second


def signature(sup: ServerSupervisor, current: str | None = None) -> tuple:
    """What the embedded server looks like now, cheaply (a process check): its state (``current`` when the caller
    has it) and, while up, which run of it (restarts) and where it answers (a restarted server may listen on
    other ports)."""
    current = current or sup.state()
    embedded = sup.server
    if current == "up" and embedded is not None:
        return (current, embedded.restarts, embedded.http_url)
    return (current,)


def start() -> None:
    """Start the app's watcher once (nothing in a plain script, where no Streamlit runtime exists; under AppTest,
    which has one, it only looks and finds no connected tab to rerun)."""
    from streamlit.runtime import Runtime

    if Runtime.exists():
        _watcher(server.supervisor())


@st.cache_resource(show_spinner=False)
def _watcher(_sup: ServerSupervisor) -> threading.Thread:  # one per app: the supervisor is one per app too
    thread = threading.Thread(target=watch, args=(_sup,), name="triton-kitchen-watch", daemon=True)
    thread.start()
    return thread


def watch(sup: ServerSupervisor, stop: threading.Event | None = None) -> None:
    """Every WATCH_S until ``stop``: rerun the tabs showing the embedded server when its signature changed, and
    again, once their first run has ended, the tabs that had not finished one when asked."""
    stop = stop or threading.Event()
    last, pending = None, set()
    while not stop.is_set():
        try:
            now = signature(sup)
            if last is not None and now != last:
                log.info("embedded server: %s -> %s; rerunning the open tabs", last, now)
                pending = push.rerun_open_tabs(server_choice.uses_embedded)
            elif pending:
                pending = push.rerun_open_tabs(server_choice.uses_embedded, only=pending)
            last = now
        except Exception:  # noqa: BLE001 - the watcher outlives any one check
            log.exception("watching the embedded server")
        stop.wait(WATCH_S)
