"""Chapter 2: the ensemble config editor — DAG and validation update as you edit."""

from __future__ import annotations

import streamlit as st

from triton_kitchen.core.catalog import IMAGE_CLASSIFIER
from triton_kitchen.labs import mistakes
from triton_kitchen.tools import diagram
from triton_kitchen.tools import repository as repo
from ui import boxes, i18n, predict, present
from ui.i18n import t
from ui.inside_dag import inside_view
from ui.lesson import lazy_box, render_lesson

MODEL = IMAGE_CLASSIFIER
KEY = "ch2_text"


def _original() -> str:
    return (repo.DEFAULT_REPOSITORY / MODEL / "config.pbtxt").read_text(encoding="utf-8")


def _set_text(text: str) -> None:
    st.session_state[KEY] = text


def _swap() -> None:
    predict.lock("ch2_swap")  # the prediction as it stood at the click
    _set_text(mistakes.swap_input_map(_original()))


SWAP_OUTCOMES = ("loads", "refused", "wrong")


def editor() -> None:
    st.subheader(t("ch2.editor_title"))
    st.caption(t("ch2.editor_help", comments=t("repo.file_comments")))
    if KEY not in st.session_state:
        st.session_state[KEY] = _original()
    swap_options = {k: t(f"ch2.swap_{k}") for k in SWAP_OUTCOMES}
    predict.ask("ch2_swap", t("ch2.swap_predict"), swap_options)
    left, right = st.columns([1, 1])
    with left:
        text = st.text_area(t("ch2.editor"), key=KEY, persist_state="session", height=560)
        b1, b2 = st.columns(2)
        # on_click callbacks run before the next script run, i.e. before the text area exists again:
        # setting a widget's state after the widget is drawn raises StreamlitAPIException.
        b1.button(t("ch2.reset"), key="ch2_reset", icon="↩️", on_click=_set_text, args=(_original(),))
        b2.button(t("ch2.try_swap"), key="ch2_swap", icon="🔀", help=t("ch2.try_swap_help"), on_click=_swap)
    with right:
        check = repo.check_ensemble_text(text, MODEL, lang=i18n.lang())
        errors = [p for p in check.problems if p.severity == "error"]
        warnings = [p for p in check.problems if p.severity != "error"]
        if check.ok:
            st.success(t("ch2.valid", steps=len(check.config.ensemble_scheduling.step)), icon="✅")
        else:
            st.error(t("ch2.invalid", n=len(errors)), icon="⛔")
        for p in errors + warnings:
            where = t("ch2.line", line=p.line) + " · " if p.line else ""
            icon = "⛔" if p.severity == "error" else "⚠️"
            st.markdown(f"{icon} {where}{p.message}")
            if p.triton_message:
                st.caption(t("live.triton_said", message=p.triton_message))
        if text == mistakes.swap_input_map(_original()):  # the swapped config, as the button left it
            predict.reveal("ch2_swap", swap_options, mistakes.swap_outcome(check), t("ch2.swap_detail"))
    if check.config is not None and check.config.ensemble_scheduling.step:
        # the page's whole width and a static table that wraps its cells: in the editor's half column a grid
        # pushed input_map and output_map off the side behind a scroll bar
        steps = lazy_box("ch2_steps_box", t("ch2.steps_table"))
        if steps is not None:
            with steps:
                rows = [
                    {t(f"repo.col.{k}"): v for k, v in row.items()}
                    for row in repo.ensemble_steps(check.config)
                ]
                st.table(rows, hide_index=True)
    if check.dot:  # the page's whole width: readable on a projector (a half column drew ~5 px text)
        present.graphviz_chart(check.dot)
        st.caption(t("ch2.dag_caption", **diagram.colour_words(i18n.lang())))
    with st.container(border=True):  # the loaded model, live: the text above is not sent
        inside_view(MODEL, "ch2_inside", None)
    with boxes.remembered_expander("ch2_glossary_box", t("ch2.glossary_title")):
        st.markdown(t("ch2.glossary"))


render_lesson(2, live={"config": editor})
