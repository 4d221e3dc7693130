"""benchmarks/floor_app.py behind the course's navigation: every chapter and lab (``ui.pages``) in the sidebar with
its icon and title, as ``app.py`` lists them, and every page only the floor's title (benchmarks/_floor.py). What
the navigation costs a fresh tab before any page content (benchmarks/shell_timing.py, benchmarks/page_timing.py).
``?lang=zh`` for the Chinese titles; with ``?teacher=`` (any value) the teacher's desk is listed too, as app.py
lists it for a class's teacher."""

import sys
from pathlib import Path

import streamlit as st
from _floor import floor_title

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from triton_kitchen.core import lessons  # noqa: E402
from ui import pages  # noqa: E402

st.set_page_config(page_title="Triton Kitchen", page_icon="🍳", layout="wide")  # as app.py
text = lessons.ui_strings(st.query_params.get("lang", lessons.DEFAULT_LANG))
welcome = st.Page(floor_title, title=text["page.home"], icon="🍳", url_path="home", default=True)
chapters = [
    st.Page(floor_title, title=text[p.title_key], icon=p.icon, url_path=p.url) for p in pages.CHAPTERS
]
labs = [st.Page(floor_title, title=text[p.title_key], icon=p.icon, url_path=p.url) for p in pages.LABS]
sections = {text["nav.lessons"]: [welcome, *chapters], text["nav.labs"]: labs}
if "teacher" in st.query_params:
    desk = pages.TEACHER
    sections[text["nav.teacher"]] = [
        st.Page(floor_title, title=text[desk.title_key], icon="🧑‍🏫", url_path=desk.url)
    ]
st.navigation(sections, expanded=True).run()
