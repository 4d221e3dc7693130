"""The pages' shared state, re-exported from where it lives now (views keep ``from ui import state``).

- ``ui.i18n``: language, URL state (selected model), the teacher's gate;
- ``ui.server``: the current server (endpoint, status, probe cache, embedded supervisor), lab runs;
- ``ui.errors``: the one way from an error to a translated message.
"""

from __future__ import annotations

from ui.errors import error_code_of, message_for
from ui.errors import show_error as _show_error
from ui.i18n import (
    DEFAULT_MODEL,
    is_teacher,
    lang,
    protocol_label,
    protocol_labeller,
    selected_model,
    set_lang,
    set_selected_model,
    sync_query_params,
    t,
)
from ui.server import (
    BUSY,
    DEAD_PROBE_TTL_S,
    PROBE_TIMEOUT_S,
    RESTART_TIMEOUT_S,
    Busy,
    auto_restart,
    embedded_error,
    embedded_state,
    endpoint,
    lab_run,
    probe,
    raw_endpoint,
    remote_metrics_url,
    remote_urls,
    restart_embedded,
    run_button,
    say_if_stopped_by_death,
    say_no_server,
    server_mode,
    server_watch,
    status,
    supervisor,
    use_embedded,
    use_remote,
)

__all__ = [
    "BUSY",
    "DEAD_PROBE_TTL_S",
    "DEFAULT_MODEL",
    "PROBE_TIMEOUT_S",
    "RESTART_TIMEOUT_S",
    "Busy",
    "auto_restart",
    "embedded_error",
    "embedded_state",
    "endpoint",
    "error_code_of",
    "is_teacher",
    "lab_run",
    "lang",
    "message_for",
    "probe",
    "protocol_label",
    "protocol_labeller",
    "raw_endpoint",
    "remote_metrics_url",
    "remote_urls",
    "restart_embedded",
    "run_button",
    "say_if_stopped_by_death",
    "say_no_server",
    "selected_model",
    "server_mode",
    "server_watch",
    "set_lang",
    "set_selected_model",
    "show_error",
    "status",
    "supervisor",
    "sync_query_params",
    "t",
    "use_embedded",
    "use_remote",
]


def show_error(exc_or_code: Exception | str, detail: str | None = None) -> None:
    """``ui.errors.show_error`` with the views' argument order (an error or a code, then the detail)."""
    _show_error(exc_or_code, detail=detail)
