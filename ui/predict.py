"""Predict, then see: before a live element runs, one line asks the student what will happen; running it
reveals "your prediction / what happened" side by side.

Any chapter can adopt it, three calls around its run button::

    options = {"more": t("chN.more"), "same": t("chN.same")}
    predict.ask("chN_thing", t("chN.predict"), options)    # the line before the button
    if st.button(...):
        predict.lock("chN_thing")                            # the prediction as it stood at the click
        ...run, keep the result...
    predict.reveal("chN_thing", options, result.outcome())  # after the result

``outcome`` is one of the option keys, decided by the library from the measurement (never by the page). The
locked prediction stays with the result: changing the radio afterwards does not rewrite history.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import streamlit as st

from ui import errors, server
from ui.i18n import t


def _radio_key(key: str) -> str:
    return f"tk_predict_{key}"


def _locked_key(key: str) -> str:
    return f"tk_predicted_{key}"


def choices(prefix: str, keys: tuple[str, ...], **kw) -> dict[str, str]:
    """The answers to offer, key -> text: ``<prefix>_<key>`` of the string table (``ch9.inst`` -> ``ch9.inst_more``)."""
    return {k: t(f"{prefix}_{k}", **kw) for k in keys}


def ask(key: str, prompt: str, options: dict[str, str]) -> str | None:
    """The prediction line: the question and its choices, none chosen at first; returns the chosen key."""
    _ask(key, prompt, options)
    return st.session_state.get(_radio_key(key))


@st.fragment
def _ask(key: str, prompt: str, options: dict[str, str]) -> None:
    """The radio, in a fragment of its own: choosing reruns only this line, not the page or the live element
    around it (the choice is read from the session state by ``lock`` when the run button is clicked)."""
    st.radio(
        f"🔮 {prompt}",
        list(options),
        format_func=lambda k: options.get(k, k),
        index=None,
        horizontal=True,
        key=_radio_key(key),
        persist_state="session",
    )


def lock(key: str) -> str | None:
    """Call when the run starts: keeps the prediction made before it (None: the student did not predict)."""
    value = st.session_state.get(_radio_key(key))
    st.session_state[_locked_key(key)] = value
    return value


def locked(key: str) -> str | None:
    return st.session_state.get(_locked_key(key))


def measure(
    key: str, workers: int, fn: Callable[[threading.Event, Callable], Any], done_key: str, running: str
):
    """The run button's work: lock the prediction, drop the last result, run ``fn(stop, watch)`` holding the
    class's lab budget (``watch()`` ends it when the server dies), keep its result under ``done_key`` or show
    the error. A busy or failed run leaves no result to reveal."""
    lock(key)
    st.session_state.pop(done_key, None)
    stop = threading.Event()
    watch = server.server_watch(stop)
    try:
        with st.spinner(running):
            result = server.lab_run(workers, lambda: fn(stop, watch))
        if result is not server.BUSY:
            st.session_state[done_key] = result
    except Exception as exc:  # noqa: BLE001 - show_error logs it; the page keeps working
        errors.show_error(exc)
    server.say_if_stopped_by_death()


def reveal(key: str, options: dict[str, str], outcome: str, detail: str = "") -> bool | None:
    """The student's prediction beside what happened, and whether they agree (None: no prediction was made)."""
    predicted = locked(key)
    with st.container(border=True):
        left, right = st.columns(2)
        left.markdown(f"**{t('predict.yours')}**  \n{options.get(predicted, t('predict.none'))}")
        right.markdown(f"**{t('predict.happened')}**  \n{options.get(outcome, outcome)}")
        if predicted is None:
            st.caption(t("predict.skipped"))
            agreed = None
        elif predicted == outcome:
            st.success(t("predict.right"), icon="🎯")
            agreed = True
        else:
            st.warning(t("predict.wrong"), icon="🤔")
            agreed = False
        if detail:
            st.caption(detail)
    return agreed
