"""The map of a request's life at the top of a chapter, this chapter's stages highlighted
(``triton_kitchen.core.request_map``). One line of Markdown: it costs a fresh tab nothing to draw."""

from __future__ import annotations

import streamlit as st

from triton_kitchen.core import request_map
from ui.i18n import t


def line(chapter: int) -> str:
    """The map as Markdown: the chapter's stages as badges, the others in grey."""
    parts = [
        f":orange-badge[{t(f'map.{stage}')}]" if on else f":gray[{t(f'map.{stage}')}]"
        for stage, on in request_map.stages(chapter)
    ]
    return t("map.title") + " → ".join(parts)  # the title ends with its own separator (none after ：)


def render(chapter: int) -> None:
    st.markdown(line(chapter))
