"""Expanders and tabs that open as the reader left them, across page switches and language switches."""

from __future__ import annotations

import streamlit as st

# {box key: open?}: which boxes the reader has open. Streamlit forgets a widget that is not drawn (a page
# switch), and an expander's identity includes its label (a language switch makes a new, closed one).
OPEN_BOXES = "tk_open"
# in OPEN_BOXES: every box the reader has not closed starts open, every lazy tab is drawn (the tests)
ALL_OPEN = "*"


def every_box_open() -> bool:
    """Whether this session draws every lazy box and tab (set by the tests that read whole pages)."""
    return bool(st.session_state.get(OPEN_BOXES, {}).get(ALL_OPEN))


def remembered_expander(key: str, label: str, default: bool = False):
    """An expander (rerunning when opened or closed, so its content can be drawn only while open) that opens
    as the reader left it; ``default`` until they touch it. Returns the expander; ``.open`` says which."""
    remembered = st.session_state.setdefault(OPEN_BOXES, {})
    box = st.expander(label, expanded=remembered.get(key, default), key=key, on_change="rerun")
    remembered[key] = bool(box.open)
    return box


# {tabs key: the id of the tab the reader has open}. A tab is known by its label: a language switch (new labels)
# or a page switch would open the first tab again.
OPEN_TABS = "tk_tabs"
_DRAWN_TABS = "tk_tabs_drawn"  # {tabs key: (labels, default)} as last drawn


def remembered_tabs(key: str, labels: dict[str, str]):
    """``st.tabs`` for ``labels`` ({tab id: label}) that opens on the tab the reader left open. Reruns on a tab
    change (so it knows which tab is open: each tab's ``.open``). A click stops a run in progress, unless the tabs
    are in a fragment (``views/lab_protocols.py``: its rerun waits for the run). Returns the tabs in the order of
    ``labels``."""
    remembered = st.session_state.setdefault(OPEN_TABS, {})
    drawn = st.session_state.setdefault(_DRAWN_TABS, {})
    now = tuple(labels.values())
    # ``default`` is part of the tabs' identity: while they stay on screen it must not change, or each rerun
    # would draw new tabs and lose the click; new tabs (a page or language switch) open on the remembered one
    if key not in st.session_state or drawn.get(key, (None,))[0] != now:
        shown = remembered.get(key)
        drawn[key] = (now, labels[shown] if shown in labels else None)
    tabs = st.tabs(list(now), default=drawn[key][1], key=key, on_change="rerun")
    for tab_id, tab in zip(labels, tabs, strict=True):
        if tab.open:
            remembered[key] = tab_id
    return tabs
