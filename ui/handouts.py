"""The handouts' download buttons at the end of a chapter page (``triton_kitchen.tools.handouts`` builds them).

Everyone gets the handout (the lesson and its quiz, no answers); the answer key only the teacher
(``i18n.is_teacher``: the token's session in a class, the app's own machine otherwise). The documents are made
when a button is clicked (a callable ``data``), and a click does not rerun the page.
"""

from __future__ import annotations

import streamlit as st

from triton_kitchen.tools import handouts
from ui import i18n
from ui.i18n import t

HTML_MIME = "text/html"


def download_buttons(chapter: int) -> None:
    """The chapter's handout, and for the teacher its answer key, as print-ready HTML downloads."""
    lang = i18n.lang()
    cols = st.columns(2)
    cols[0].download_button(
        t("handout.download_handout"),
        data=lambda: handouts.handout(chapter, lang),
        file_name=handouts.file_name(chapter, lang, "handout"),
        mime=HTML_MIME,
        key=f"tk_handout_{chapter}",
        help=t("handout.help"),
        on_click="ignore",
        icon="🖨️",
    )
    if i18n.is_teacher():
        cols[1].download_button(
            t("handout.download_key"),
            data=lambda: handouts.answer_key(chapter, lang),
            file_name=handouts.file_name(chapter, lang, "key"),
            mime=HTML_MIME,
            key=f"tk_handout_key_{chapter}",
            help=t("handout.help"),
            on_click="ignore",
            icon="🔑",
        )
    else:
        cols[1].caption(t("handout.key_teacher_only"))
