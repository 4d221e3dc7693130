"""The floor apps' title (benchmarks/floor_app.py and its variants). The benchmarks wait for FLOOR_TITLE in it.
With ``?lang=zh`` it also holds a Chinese word, so a Chinese page and its floor both load a Chinese font: that
cost belongs to Chinese text, not to a page."""

import streamlit as st

FLOOR_TITLE = "Triton Kitchen floor"
FLOOR_TITLE_ZH = "空白页"


def floor_title() -> None:
    zh = st.query_params.get("lang") == "zh"
    st.title(f"{FLOOR_TITLE} · {FLOOR_TITLE_ZH}" if zh else FLOOR_TITLE)
