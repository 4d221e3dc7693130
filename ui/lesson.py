"""A chapter page's frame: lesson text in sections, live elements between them, and the quiz."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from triton_kitchen import lessons
from ui import state
from ui.state import t

LiveElements = dict[str, Callable[[], None]]


def _run_live(name: str, fn: Callable[[], None]) -> None:
    """Run one live element; any failure becomes a translated message, never a traceback."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the page must keep working (st.rerun/st.stop are BaseException)
        state.show_error(exc)


def render_lesson(
    chapter: int, live: LiveElements | None = None, intro: Callable[[], None] | None = None
) -> None:
    """Title and summary, each lesson section followed by its live element (keyed by section), quiz last."""
    live = dict(live or {})
    try:
        lesson = lessons.load_lesson(chapter, state.lang())
    except lessons.LessonError as exc:
        state.show_error("lesson_missing", str(exc))
        return
    st.title(lesson.title)
    st.caption(lesson.summary)
    if intro is not None:
        _run_live("intro", intro)
    for key, text in lesson.sections.items():
        st.markdown(text)
        if key in live:
            _run_live(key, live.pop(key))
    for key, fn in live.items():  # sections this language's text does not have: still show the element
        _run_live(key, fn)
    st.divider()
    render_quiz(chapter)


def _progress() -> lessons.QuizProgress:
    data = st.session_state.get("tk_quiz")
    progress = lessons.QuizProgress.from_dict(data)
    return progress


def render_quiz(chapter: int) -> None:
    st.header(t("quiz.title"))
    try:
        questions = lessons.load_quiz(chapter, state.lang())
    except lessons.LessonError:
        questions = []
    if not questions:
        st.info(t("quiz.none"))
        return
    progress = _progress()
    for n, q in enumerate(questions, start=1):
        key = f"tk_quiz_{chapter}_{q.id}"
        previous = progress.choice(chapter, q.id)
        choice = st.radio(
            f"**{n}.** {q.prompt}",
            options=list(range(len(q.choices))),
            format_func=lambda i, q=q: q.choices[i],
            index=previous,
            key=key,
        )
        if choice is not None:
            ok = progress.answer(q, choice)
            if ok:
                st.success(t("quiz.correct") + " " + q.explanation, icon="✅")
            else:
                st.error(t("quiz.wrong") + " " + q.explanation, icon="❌")
    st.session_state["tk_quiz"] = progress.to_dict()
    st.progress(
        progress.answered(chapter) / len(questions),
        text=t(
            "quiz.score",
            correct=progress.correct(chapter),
            answered=progress.answered(chapter),
            total=len(questions),
        ),
    )
    if progress.answered(chapter) and st.button(t("quiz.reset"), key=f"tk_quiz_reset_{chapter}"):
        progress.reset(chapter)
        st.session_state["tk_quiz"] = progress.to_dict()
        for q in questions:
            st.session_state.pop(f"tk_quiz_{chapter}_{q.id}", None)
        st.rerun()


def page_link(path: str, key: str) -> None:
    """A link to another page when that page exists (labs are optional)."""
    from pathlib import Path

    if (Path(__file__).resolve().parent.parent / path).is_file():
        st.page_link(path, label=t(key), icon="➡️")
