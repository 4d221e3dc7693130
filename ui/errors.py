"""The one way from an error to what a student reads: a translated message, the detail in an expander, a log line.

Every app error is a :class:`~triton_kitchen.core.errors.KitchenError` with a ``code``; its message is
``error.<code>`` in ``lessons/<lang>/ui.toml``. Where one code needs different words depending on where it
came from, ``error.<source>_<code>`` comes first, ``<source>`` being the error's ``source`` attribute
(``FlowError("bad_config")`` reads ``error.flow_bad_config``, then ``error.bad_config``). A code
with no message gets the generic one, and its traceback goes to the log: a page never shows a traceback.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from triton_kitchen.core import lessons
from triton_kitchen.core.server import ServerStartError
from ui.i18n import lang as session_lang
from ui.server_choice import server_mode

log = logging.getLogger(__name__)

GENERIC = "unexpected"
# Codes that are a limit of the server chosen, not a failure: a warning, not an error box.
WARNING_CODES = frozenset({"no_control_api", "metrics_unreachable", "shm_refused"})
# Library codes that share a message with another code (kserve's and the protocols' connection and HTTP codes).
ALIASES = {
    "connection": "server_unreachable",
    "server": "server_error",
    "http": "server_error",
    "not_json": "server_error",
}


def error_code_of(exc_or_code: Exception | str) -> str:
    """The error's code: a KitchenError's ``code``, or one derived from the exception's type (tritonclient, a failed start, a broken connection); "unexpected" otherwise."""
    if isinstance(exc_or_code, str):
        return exc_or_code
    code = getattr(exc_or_code, "code", None)
    if isinstance(code, str) and code and code != "error":
        return ALIASES.get(code, code)
    if isinstance(exc_or_code, ServerStartError):
        return "server_start"
    try:
        from tritonclient.utils import InferenceServerException

        from triton_kitchen.core.classify import error_code

        if isinstance(exc_or_code, InferenceServerException):
            return error_code(exc_or_code)
    except ImportError:  # pragma: no cover - tritonclient is a requirement
        pass
    if isinstance(exc_or_code, ConnectionError | TimeoutError | OSError):
        return "server_unreachable"
    return GENERIC


def _source(exc: Exception | str) -> str:
    """The error's ``source`` (``FlowError`` -> "flow"); "" for a code or an error without one."""
    source = "" if isinstance(exc, str) else getattr(exc, "source", "")
    return source if isinstance(source, str) else ""


@dataclass(frozen=True)
class ErrorMessage:
    code: str
    key: str  # the ui.toml key whose text is shown
    text: str
    warning: bool  # a limit of the server, shown as a warning

    @property
    def generic(self) -> bool:
        return self.key == f"error.{GENERIC}"


def message_for(exc_or_code: Exception | str, lang: str, remote: bool = False) -> ErrorMessage:
    """The translated message for an exception or a code (no Streamlit: testable alone). ``remote``: the
    server is a remote one, so no advice to restart the embedded server."""
    code = error_code_of(exc_or_code)
    source = _source(exc_or_code)
    keys = [f"error.{source}_{code}"] if source else []
    if code == "server_unreachable" and remote:
        keys.append("error.server_unreachable_remote")
    keys += [f"error.{code}", f"error.{GENERIC}"]
    for key in keys:
        text = lessons.t(key, lang)
        if text != key:
            return ErrorMessage(code, key, text, code in WARNING_CODES)
    return ErrorMessage(code, keys[-1], keys[-1], False)  # pragma: no cover - the generic key exists


def _detail(exc_or_code: Exception | str, detail: str | None) -> str:
    if detail is not None or isinstance(exc_or_code, str):
        return detail or ""
    return getattr(exc_or_code, "detail", None) or str(exc_or_code)


def show_error(
    exc_or_code: Exception | str, lang: str | None = None, detail: str | None = None, context: str = ""
) -> ErrorMessage:
    """Show the error: its translated message (st.error, or st.warning for a limit of the server), the
    technical detail in an expander, never a traceback. Logged: a known code as a warning, anything with
    only the generic message with its traceback. ``context`` says where, in the log only."""
    import streamlit as st

    message = message_for(exc_or_code, lang or session_lang(), remote=server_mode() == "remote")
    text = _detail(exc_or_code, detail)
    where = f" ({context})" if context else ""
    if message.generic and isinstance(exc_or_code, BaseException):
        log.error("unexpected error shown to a student%s: %s", where, text, exc_info=exc_or_code)
    else:
        log.warning("error %s shown%s: %s", message.code, where, text)
    (st.warning if message.warning else st.error)(message.text, icon="⚠️")
    show_details([text] if text else [], lang)
    return message


def show_details(lines: list[str], lang: str | None = None) -> None:
    """The library's own words about a result (how it was made, Triton's message) under "Technical details",
    as code: like an error's detail, they stay as written (English), out of the lesson's text."""
    import streamlit as st

    from ui.i18n import lang as session_lang

    if lines:
        with st.expander(lessons.t("error.details", lang or session_lang())):
            st.code("\n".join(lines), language=None, wrap_lines=True)
