"""Triton Kitchen: `streamlit run app.py`.

Navigation (lessons and labs), the shared sidebar, and the URL state (page, language, model).
"""

from __future__ import annotations

from pathlib import Path

import pandas  # noqa: F401 - whole before any page: plotly takes a half-imported pandas from sys.modules
import streamlit as st

from ui import state
from ui.sidebar import render_sidebar

ROOT = Path(__file__).resolve().parent

CHAPTERS = [
    ("views/ch1_inference_server.py", "ch1", "page.ch1", "🧑‍🍳"),
    ("views/ch2_ensemble_config.py", "ch2", "page.ch2", "📝"),
    ("views/ch3_multi_model.py", "ch3", "page.ch3", "🏭"),
    ("views/ch4_http.py", "ch4", "page.ch4", "🌐"),
    ("views/ch5_grpc.py", "ch5", "page.ch5", "⚡"),
    ("views/ch6_choosing_protocol.py", "ch6", "page.ch6", "🧭"),
    ("views/ch7_python_client.py", "ch7", "page.ch7", "🐍"),
    ("views/ch8_mistakes.py", "ch8", "page.ch8", "🎯"),
]
LABS = [
    ("views/lab_protocols.py", "lab-protocols", "page.lab_protocols", "📊"),
    ("views/lab_batching.py", "lab-batching", "page.lab_batching", "🍱"),
    ("views/lab_flow.py", "lab-flow", "page.lab_flow", "🔀"),
]


def _pages(entries, t, only_existing: bool) -> list:
    pages = []
    for path, url, key, icon in entries:
        if only_existing and not (ROOT / path).is_file():
            continue
        pages.append(st.Page(path, title=t(key), url_path=url, icon=icon))
    return pages


def home() -> None:
    """The welcome page: what the app is, and the chapters with their one-line summaries."""
    from triton_kitchen import lessons

    t = state.t
    st.title(t("app.title"))
    st.markdown(t("app.tagline"))
    st.info(t("home.start"), icon="👈")
    for (path, _, key, icon), lesson in zip(CHAPTERS, lessons.list_lessons(state.lang()), strict=True):
        st.page_link(path, label=f"**{t(key)}**", icon=icon)
        st.caption(lesson.summary)  # below the link: a link's label does not wrap, a long summary was cut off
    labs = [(path, key, icon) for path, _, key, icon in LABS if (ROOT / path).is_file()]
    if labs:
        st.subheader(t("nav.labs"))
        for path, key, icon in labs:
            st.page_link(path, label=t(key), icon=icon)


st.set_page_config(page_title="Triton Kitchen", page_icon="🍳", layout="wide")
state.sync_query_params()
t = state.t
welcome = st.Page(home, title=t("page.home"), icon="🍳", url_path="", default=True)  # served at /
# /home shows the same page (a link or a habit may use it; Streamlit would answer "Page not found")
home_alias = st.Page(home, title=t("page.home"), icon="🍳", url_path="home", visibility="hidden")
sections = {t("nav.lessons"): [welcome, *_pages(CHAPTERS, t, only_existing=False)]}
labs = _pages(LABS, t, only_existing=True)
if labs:
    sections[t("nav.labs")] = labs
sections[t("nav.lessons")].append(home_alias)
page = st.navigation(sections)
render_sidebar()
page.run()
