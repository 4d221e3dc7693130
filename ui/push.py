"""Rerun open tabs of this app from any thread: how a change of the one shared embedded server (died, restarting,
back up) reaches every tab at once, instead of every tab polling for it.

A poll is a fragment rerun every 1.5 s, and each one redraws the whole page in the browser: a steady CPU cost for
every open tab, which a push does not have.
Streamlit has no public call to rerun a session from outside it; this is what its own "run on save" does when a
source file changes (``AppSession.request_rerun`` with the session's last client state: its page and query
string, no widget state, so no button is pressed again and every widget keeps its value). Two private attributes
are used, ``Runtime._session_mgr`` and ``AppSession._client_state``: Streamlit is pinned in requirements.txt and
tests/browser/test_push.py fails when an upgrade moves either.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


def rerun_open_tabs(
    wanted: Callable[[Any], bool] = lambda _state: True, only: set[str] | None = None
) -> set[str]:
    """Ask every connected session (or those of ``only``, by id) whose session state ``wanted`` accepts for a full
    rerun of the page it shows. Returns the ids of sessions that had no finished run to repeat yet (their first
    run may have drawn the old state): the caller asks them again later. Nothing without a running app."""
    from streamlit.runtime import Runtime

    if not Runtime.exists():
        return set()
    not_yet: set[str] = set()
    for info in Runtime.instance()._session_mgr.list_active_sessions():
        session = info.session
        if only is not None and session.id not in only:
            continue
        last = session._client_state
        if not last.page_script_hash:  # set when a run ends; an empty one would rerun the home page
            not_yet.add(session.id)
            continue
        try:
            if wanted(session.session_state):
                session.request_rerun(last)
        except Exception:  # noqa: BLE001 - one session's trouble must not keep the news from the others
            log.exception("could not rerun session %s", session.id)
    return not_yet
