"""Projector mode: ``?present=1`` in the URL (or ``set_presenting(True)``, for the teacher's view) shows every
page for a class on a projector: large type, no sidebar, diagrams as wide as the screen.

The state lives in the URL (``st.query_params["present"]``), so a link carries it, and is mirrored in
``st.session_state`` because a page switch drops the query string (as ``ui.i18n`` does for the language);
``?present=0`` turns it off, and so does the projector's own bar (top right, with the language: the sidebar
is hidden). The look is one stylesheet, ``ui/present.css``, injected by ``apply()`` on every
script run (``app.py``). Navigation moves from the hidden sidebar to the top bar (``nav_position()``).
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from ui import i18n

PARAM = "present"
_KEY = "tk_present"
TEACHER_TOGGLE = "tk_teacher_present"  # the teacher's view's switch (views/teacher.py)
BAR = "tk_present_bar"  # the projector's own controls, top right: the language, and leaving
LANG = i18n.PRESENT_LANG_SWITCH
LEAVE = "tk_present_leave"
CSS_PATH = Path(__file__).with_name("present.css")
_ON = ("1", "true", "yes", "on")


def is_presenting() -> bool:
    """True when this session shows the projector look: ``?present=1`` now, or earlier in the session."""
    raw = st.query_params.get(PARAM)
    if raw is not None:
        st.session_state[_KEY] = raw.strip().lower() in _ON
    return bool(st.session_state.get(_KEY, False))


def set_presenting(on: bool) -> None:
    """Turn projector mode on or off for this session (the URL follows); it shows from the next script run."""
    st.session_state[_KEY] = bool(on)
    if on:
        st.query_params[PARAM] = "1"
    elif PARAM in st.query_params:
        del st.query_params[PARAM]


def nav_position() -> str:
    """Where ``st.navigation`` draws the page list: the top bar when presenting (the sidebar is hidden)."""
    return "top" if is_presenting() else "sidebar"


def apply() -> None:
    """Once per script run, before the page: keep ``present=1`` in the URL and inject the projector stylesheet."""
    if not is_presenting():
        return
    if st.query_params.get(PARAM) != "1":
        st.query_params[PARAM] = "1"  # back after a page switch, so the address bar can be shared as it is
    st.html(CSS_PATH)  # style only: Streamlit puts it in the event container, it takes no space on the page
    _bar()


def _bar() -> None:
    """What the hidden sidebar would offer the teacher in front of the class: the language, and the way out."""
    with st.container(horizontal=True, horizontal_alignment="right", vertical_alignment="center", key=BAR):
        i18n.language_switch(LANG, label_visibility="collapsed")
        st.button(i18n.t("present.leave"), key=LEAVE, icon="↩️", on_click=set_presenting, args=(False,))


def graphviz_chart(dot: str) -> None:
    """``st.graphviz_chart`` at the page's width; when presenting, drawn top to bottom (``rankdir=TB``), so a
    wide pipeline is scaled up to the screen's width instead of down to a strip of 7 px text."""
    if is_presenting():
        dot = for_projector(dot)
    st.graphviz_chart(dot, width="stretch")


def for_projector(dot: str) -> str:
    """A DOT drawing (``triton_kitchen.tools.diagram.to_dot``) as the projector shows it: top to bottom, larger
    labels, and each edge's label (tensor, type and shape, bytes) on one line, so the drawing stays short."""
    dot = (
        dot.replace("rankdir=LR;", "rankdir=TB;", 1)
        .replace("ranksep=0.6", "ranksep=0.25", 1)
        .replace("fontsize=11]", "fontsize=18]", 1)
        .replace("fontsize=9,", "fontsize=16,", 1)
    )
    return "\n".join(_one_line_label(line) if " -> " in line else line for line in dot.split("\n"))


def _one_line_label(edge: str) -> str:
    head, sep, label = edge.partition("[label=")
    return head + sep + label.replace("\\n", " · ") if sep else edge
