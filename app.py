"""Triton Kitchen: `streamlit run app.py`.

Navigation (lessons and labs, from the page table ``ui/pages.py``), the shared sidebar, the URL state
(page, language, model), and where the app's log goes.
"""

from __future__ import annotations

import logging

import streamlit as st

import ui.warmup  # noqa: F401 - first, before any page: see its docstring
from triton_kitchen.core.settings import settings
from ui import classroom, i18n, pages, present
from ui.sidebar import render_sidebar


def configure_logging() -> None:
    """The app's own loggers (triton_kitchen, ui) to stderr, where `streamlit run` writes; once per process."""
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")  # no-op once configured
    level = settings().log_level
    for name in ("triton_kitchen", "ui"):
        logging.getLogger(name).setLevel(level)


def home() -> None:
    """The welcome page: what the app is, and the chapters with their one-line summaries."""
    from triton_kitchen.core import lessons

    t = i18n.t
    st.title(t("app.title"))
    st.markdown(t("app.tagline"))
    if present.is_presenting():  # the sidebar is hidden: the pages are in the top bar, the language top right
        st.info(t("home.start_present"), icon="👆")
    else:
        st.info(t("home.start"), icon="👈")
    for page, lesson in zip(pages.CHAPTERS, lessons.list_lessons(i18n.lang()), strict=True):
        st.page_link(page.path, label=f"**{t(page.title_key)}**", icon=page.icon)
        st.caption(lesson.summary)  # below the link: a link's label does not wrap, a long summary was cut off
    st.subheader(t("nav.labs"))
    for page in pages.LABS:
        st.page_link(page.path, label=t(page.title_key), icon=page.icon)


def _st_pages(specs: list[pages.PageSpec]) -> list[st.Page]:
    return [st.Page(p.path, title=i18n.t(p.title_key), url_path=p.url, icon=p.icon) for p in specs]


def run() -> None:
    """One script run: page config, URL state, navigation, the sidebar, then the page."""
    configure_logging()
    st.set_page_config(page_title="Triton Kitchen", page_icon="🍳", layout="wide")
    i18n.sync_query_params()
    t = i18n.t
    welcome = st.Page(home, title=t("page.home"), icon="🍳", url_path=pages.HOME_URL, default=True)  # at /
    # /home shows the same page (a link or a habit may use it; Streamlit would answer "Page not found")
    home_alias = st.Page(
        home, title=t("page.home"), icon="🍳", url_path=pages.HOME_ALIAS_URL, visibility="hidden"
    )
    sections = {
        t("nav.lessons"): [welcome, *_st_pages(pages.CHAPTERS), home_alias],
        t("nav.labs"): _st_pages(pages.LABS),
    }
    if i18n.teacher_view_on():  # a class, and this session gave the teacher's token
        sections[t("nav.teacher")] = [
            st.Page(
                pages.TEACHER.path, title=t(pages.TEACHER.title_key), url_path=pages.TEACHER.url, icon="🧑‍🏫"
            )
        ]
    page = st.navigation(
        sections,
        position=present.nav_position(),  # projector mode (?present=1): the top bar, the sidebar is hidden
        expanded=True,  # every chapter and lab listed (by default Streamlit hides all but 10 behind "View more")
    )
    present.apply()
    render_sidebar()
    classroom.render_join()  # the student's nickname and class: answers and lab results that last
    classroom.note_page(page.url_path)
    page.run()


if __name__ == "__main__":  # a script run (every page view)
    run()
else:  # `streamlit run app.py` imports this module and serves `app` (see ui/backend_base.py)
    from starlette.middleware import Middleware
    from streamlit.starlette import App

    from ui.backend_base import BackendBaseHint

    _URLS = [p.url for p in (*pages.PAGES, pages.TEACHER)] + [pages.HOME_ALIAS_URL]
    # the command line's and config.toml's: `streamlit run` loads them before it imports this module
    _BASE = st.get_option("server.baseUrlPath")
    app = App(__file__, middleware=[Middleware(BackendBaseHint, page_urls=_URLS, base_path=_BASE)])
