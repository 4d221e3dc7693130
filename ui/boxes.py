"""Expanders that remember whether the reader left them open: across page switches and language switches."""

from __future__ import annotations

import streamlit as st

# {box key: open?}: which boxes the reader has open. Streamlit forgets a widget that is not drawn (a page
# switch), and an expander's identity includes its label (a language switch makes a new, closed one).
OPEN_BOXES = "tk_open"


def remembered_expander(key: str, label: str, default: bool = False):
    """An expander (rerunning when opened or closed, so its content can be drawn only while open) that opens
    as the reader left it; ``default`` until they touch it. Returns the expander; ``.open`` says which."""
    remembered = st.session_state.setdefault(OPEN_BOXES, {})
    box = st.expander(label, expanded=remembered.get(key, default), key=key, on_change="rerun")
    remembered[key] = bool(box.open)
    return box
