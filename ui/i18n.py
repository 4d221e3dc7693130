"""Language and URL state: the session's language, the selected model, the teacher's gate.

Language and selected model live in the URL (``st.query_params``) so a teacher can share a link to a view;
they are mirrored in ``st.session_state`` because switching pages clears the query string.
"""

from __future__ import annotations

import contextlib
import hmac
from collections.abc import Callable
from typing import Any

import streamlit as st
from streamlit.errors import StreamlitAPIException

from triton_kitchen.core import lessons
from triton_kitchen.core.catalog import IMAGE_CLASSIFIER
from triton_kitchen.core.settings import settings
from ui import boxes

DEFAULT_MODEL = IMAGE_CLASSIFIER
_TEACHER_KEY = "tk_teacher"


# -- language --------------------------------------------------------------------------------
LANG_LABELS = {"zh": "中文", "en": "English"}  # each language in its own words, on every language switch
LANG_SWITCH = "tk_lang_switch"  # the sidebar's switch (ui.sidebar)
PRESENT_LANG_SWITCH = "tk_present_lang"  # the projector's bar's, while the sidebar is hidden (ui.present)


def lang() -> str:
    """The session's language, "zh" (default) or "en", from the ``lang`` query parameter."""
    raw = st.query_params.get("lang") or st.session_state.get("tk_lang")
    return lessons.normalize_lang(raw)


def set_lang(value: str) -> None:
    """Switch the session's language (the caller reruns). Every choice on the page stays as it is."""
    _keep_choices()
    value = lessons.normalize_lang(value)
    st.session_state["tk_lang"] = value
    st.query_params["lang"] = value
    # Both switches show the new language: each compares its value with the language after it is drawn, so an
    # old value would switch back on the next run. One drawn already in this run is the one that was used.
    for switch in (LANG_SWITCH, PRESENT_LANG_SWITCH):
        with contextlib.suppress(StreamlitAPIException):
            st.session_state[switch] = value


def language_switch(key: str, label_visibility: str = "visible") -> None:
    """The language switch, each language in its own words (the sidebar's, and the projector's bar's while the
    sidebar is hidden). Its value is read back after drawing and a different one switches the session: a value,
    not a change callback (on a busy machine a click through an on_change callback can be lost)."""
    current = lang()
    choice = st.segmented_control(
        t("sidebar.language"),
        options=list(LANG_LABELS),
        format_func=LANG_LABELS.get,
        default=current,
        key=key,
        persist_state="session",
        label_visibility=label_visibility,
    )
    if choice and choice != current:  # a click on the language already shown unselects it: nothing to do
        set_lang(choice)
        st.rerun()


def _choice(value: Any) -> bool:
    """A value a choice widget holds (an option, a number, a list of them): not a button's or a toggle's bool, not
    an upload (those widgets refuse a value set through session state), not None."""
    if isinstance(value, list | tuple):
        return bool(value) and all(_choice(v) for v in value)
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def _keep_choices() -> None:
    """Pin each widget's value before a language switch. The browser sends a radio's or a select box's choice as
    its label, and the next run, in the other language, finds no option with that label and falls back to the
    default: the photo, the mistake, the mode the reader picked would silently change. A value set through
    session state is taken as it is (options are ids, their labels come from ``format_func``)."""
    tabs = st.session_state.get(boxes.OPEN_TABS, {})  # a tab's value is its label: ui.boxes keeps tabs by id
    for key in list(st.session_state):
        value = st.session_state[key]
        if _choice(value) and key not in tabs:
            with contextlib.suppress(StreamlitAPIException):  # drawn already in this run (the switch itself)
                st.session_state[key] = value


def t(key: str, **kw: Any) -> str:
    """A UI string in the session's language (a missing key shows as the key itself)."""
    return lessons.t(key, lang(), **kw)


def default_text(key: str, text_key: str) -> str:
    """A text box's first text, ``t(text_key)``. While the reader has not edited it, it follows a language switch:
    a keyed widget keeps the text it was first drawn with, which would stay in the old language."""
    text = t(text_key)
    shown = st.session_state.get(key)
    if shown != text and shown in {lessons.t(text_key, other) for other in lessons.LANGS}:
        st.session_state[key] = text
    return text


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


# -- the teacher -----------------------------------------------------------------------------
def is_teacher() -> bool:
    """The one gate for the controls of the shared server (restart, remote settings).

    In a class the teacher starts the app with TRITON_KITCHEN_TEACHER_TOKEN set, and only a session whose URL
    carried ``?teacher=<that token>`` once has them: the token is taken out of the URL at once, remembered for the
    session (a page switch drops the query string) and, as a mark in a cookie, by this browser (a refresh on any
    page keeps the teacher). Without the variable the app is one person's (a learner at home, or a teacher's own machine): the
    browser on the machine that runs the app has them, browsers from other machines do not."""
    token = settings().teacher_token
    if token:
        given = st.query_params.get("teacher")
        if given is not None:
            ok = hmac.compare_digest(given.encode(), token.encode())
            st.session_state[_TEACHER_KEY] = ok
            # the browser's cookie is written (or forgotten) by ui.sidebar.remember_teacher
            st.session_state[TEACHER_REMEMBER] = "keep" if ok else "forget"
            del st.query_params["teacher"]  # never left in the address bar, which a projector shows the room
        elif _TEACHER_KEY not in st.session_state:  # a refresh or a new tab: this browser's cookie, if any
            mark = _teacher_cookie().encode()
            st.session_state[_TEACHER_KEY] = hmac.compare_digest(mark, teacher_mark(token))
        return bool(st.session_state.get(_TEACHER_KEY))
    return _on_this_machine()


# The teacher's browser keeps a mark of the token (never the token) in a cookie, written once a session gave the
# right token, so a refresh on any page keeps the teacher's view; a wrong token given later forgets it.
TEACHER_COOKIE = "tk_teacher"
TEACHER_COOKIE_HOURS = 12  # a school day
# "keep" or "forget": what the browser is still to be told; then "done"
TEACHER_REMEMBER = "tk_teacher_remember"


def teacher_mark(token: str) -> bytes:
    """What the teacher's cookie holds: an HMAC of a fixed text under the token (a new token voids it)."""
    return hmac.new(token.encode(), b"triton-kitchen teacher", "sha256").hexdigest().encode()


def _teacher_cookie() -> str:
    try:
        return str(st.context.cookies.get(TEACHER_COOKIE, ""))
    except Exception:  # noqa: BLE001 - no browser (a bare script, some test harnesses)
        return ""


def class_mode() -> bool:
    """The app serves a class: TRITON_KITCHEN_TEACHER_TOKEN is set, so the server's controls live in the
    teacher's view, and nobody else has them."""
    return bool(settings().teacher_token)


def teacher_view_on() -> bool:
    """The teacher's view is open to this session: a class (the token is set) and the token was given."""
    return class_mode() and is_teacher()


def _on_this_machine() -> bool:
    """True for a browser on the machine that runs the app (Streamlit reports localhost as no address)."""
    try:
        ip = st.context.ip_address
    except Exception:  # noqa: BLE001 - outside a session (bare script): the person running it
        return True
    return not isinstance(
        ip, str
    )  # None for localhost; AppTest, which has no client, gives no address either
