"""Triton Kitchen: `streamlit run app.py`.

Navigation (lessons and labs), the shared sidebar, and the URL state (page, language, model).
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from ui import state
from ui.sidebar import render_sidebar

ROOT = Path(__file__).resolve().parent

CHAPTERS = [
    ("pages/ch1_inference_server.py", "ch1", "page.ch1", "🧑‍🍳"),
    ("pages/ch2_ensemble_config.py", "ch2", "page.ch2", "📝"),
    ("pages/ch3_multi_model.py", "ch3", "page.ch3", "🏭"),
    ("pages/ch4_http.py", "ch4", "page.ch4", "🌐"),
    ("pages/ch5_grpc.py", "ch5", "page.ch5", "⚡"),
    ("pages/ch6_choosing_protocol.py", "ch6", "page.ch6", "🧭"),
    ("pages/ch7_python_client.py", "ch7", "page.ch7", "🐍"),
    ("pages/ch8_mistakes.py", "ch8", "page.ch8", "🎯"),
]
LABS = [
    ("pages/lab_protocols.py", "lab-protocols", "page.lab_protocols", "📊"),
    ("pages/lab_batching.py", "lab-batching", "page.lab_batching", "🍱"),
    ("pages/lab_flow.py", "lab-flow", "page.lab_flow", "🔀"),
]


def _pages(entries, t, only_existing: bool) -> list:
    pages = []
    for i, (path, url, key, icon) in enumerate(entries):
        if only_existing and not (ROOT / path).is_file():
            continue
        pages.append(
            st.Page(path, title=t(key), url_path=url, icon=icon, default=(i == 0 and not only_existing))
        )
    return pages


st.set_page_config(page_title="Triton Kitchen", page_icon="🍳", layout="wide")
state.sync_query_params()
t = state.t
sections = {t("nav.lessons"): _pages(CHAPTERS, t, only_existing=False)}
labs = _pages(LABS, t, only_existing=True)
if labs:
    sections[t("nav.labs")] = labs
page = st.navigation(sections)
render_sidebar()
page.run()
