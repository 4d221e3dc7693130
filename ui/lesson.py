"""A chapter page's frame: lesson text in sections, live elements between them, and the quiz."""

from __future__ import annotations

import random
from collections.abc import Callable

import streamlit as st

from triton_kitchen.core import lessons
from ui import boxes, classroom, code_block, errors, handouts, i18n, request_map
from ui.i18n import t

LiveElements = dict[str, Callable[[], None]]


def _run_live(chapter: int, name: str, fn: Callable[[], None]) -> None:
    """Run one live element; any failure becomes a translated message, never a traceback (that goes to the
    log, by ``errors.show_error``, for an error the app did not expect)."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the page must keep working (st.rerun/st.stop are BaseException)
        errors.show_error(exc, context=f"chapter {chapter}, live element {name!r}")


def render_lesson(
    chapter: int, live: LiveElements | None = None, intro: Callable[[], None] | None = None
) -> None:
    """Title and summary, each lesson section in its box (``lazy_box``: the first open, the others drawn when
    the reader opens them) with its live element (keyed by section) after its text; the quiz's box last."""
    live = dict(live or {})
    try:
        lesson = lessons.load_lesson(chapter, i18n.lang())
    except lessons.LessonError as exc:
        errors.show_error("lesson_missing", detail=str(exc), context=f"chapter {chapter}")
        return
    st.title(lesson.title)
    st.caption(lesson.summary)
    request_map.render(chapter)
    if intro is not None:
        _run_live(chapter, "intro", intro)
    for n, (key, text) in enumerate(lesson.sections.items()):
        heading, body = lessons.split_heading(text)
        label = f"**{heading or lesson.title}**"
        if key in lesson.deep:
            label = f"{t('lesson.deep')} · {label}"
        box = lazy_box(section_key(chapter, key), label, first=n == 0)
        if box is None:
            live.pop(key, None)
            continue
        with box:
            code_block.markdown(body)  # its code blocks without the highlighter's 1.5 MB
            if key in live:
                _run_live(chapter, key, live.pop(key))
    for key, fn in live.items():  # sections this language's text does not have: still show the element
        _run_live(chapter, key, fn)
    render_quiz(chapter)
    printing = lazy_box(f"tk_handouts_{chapter}", f"**{t('handout.title')}**")  # their buttons: when opened
    if printing is not None:
        with printing:
            handouts.download_buttons(chapter)  # to print: the lesson and quiz; the key for the teacher


def section_key(chapter: int, section: str) -> str:
    return f"tk_section_{chapter}_{section}"


def quiz_key(chapter: int) -> str:
    return f"tk_quiz_open_{chapter}"


def lazy_box(key: str, label: str, first: bool = False):
    """An expander whose content is drawn only while it is open: a fresh page sends the first section and the
    others' headings, not every section's text and widgets (Chromium's drawing, not the script, is what makes
    a fresh tab slow). Open or closed as the reader left it, also after a page or language switch
    (``ui.boxes``); the first section starts open. Returns the open box, or None."""
    default = boxes.every_box_open() or first
    box = boxes.remembered_expander(key, label, default)
    return box if box.open else None


QUIZ_STATE = "tk_quiz"  # QuizProgress.to_dict(): the first checked answer of each question
QUIZ_SEED = "tk_quiz_seed"  # this visit's seed for the choice order


def _progress() -> lessons.QuizProgress:
    if QUIZ_STATE not in st.session_state:  # a new session: a student's saved answers come back
        st.session_state[QUIZ_STATE] = classroom.saved_quiz()
    return lessons.QuizProgress.from_dict(st.session_state.get(QUIZ_STATE))


def _seed() -> int:
    """A seed per visit (session): each student sees the choices in an order of their own, stable across reruns."""
    if QUIZ_SEED not in st.session_state:
        st.session_state[QUIZ_SEED] = random.SystemRandom().randrange(2**32)
    return st.session_state[QUIZ_SEED]


def _radio_key(chapter: int, q: lessons.Question) -> str:
    return f"tk_quiz_{chapter}_{q.id}"


def _check(chapter: int, q: lessons.Question) -> None:
    """The Check button's callback (runs before the page, so the radio is drawn locked at once)."""
    choice = st.session_state.get(_radio_key(chapter, q))
    if choice is None:
        return
    progress = _progress()
    first = not progress.checked(chapter, q.id)
    ok = progress.answer(q, int(choice))  # records the first check only
    st.session_state[QUIZ_STATE] = progress.to_dict()
    if first:
        classroom.record_answer(chapter, q.id, int(choice), ok)


def _reset(chapter: int, questions: list[lessons.Question]) -> None:
    """The reset button's callback: forget the chapter's checked answers and clear its radios."""
    progress = _progress()
    progress.reset(chapter)
    st.session_state[QUIZ_STATE] = progress.to_dict()
    for q in questions:
        st.session_state.pop(_radio_key(chapter, q), None)


def _feedback(q: lessons.Question, first: int, order: tuple[int, ...]) -> None:
    """After checking: right or wrong, why the chosen choice is right or tempting, the key, the explanation."""
    ok = lessons.check_answer(q, first)
    why = q.why[first] if q.why else ""
    if ok:
        st.success(t("quiz.verdict", verdict=t("quiz.correct"), why=why).strip(), icon="✅")
    else:
        st.error(t("quiz.verdict", verdict=t("quiz.wrong"), why=why).strip(), icon="❌")
        st.markdown(t("quiz.answer_is", choice=q.choices[q.answer]))
    st.info(t("quiz.explained", text=q.explanation), icon="💡")
    box = lazy_box(f"tk_quiz_why_{q.chapter}_{q.id}", t("quiz.all_choices")) if q.why else None
    if box is not None:
        with box:
            st.markdown(
                "\n".join(
                    f"- {'✅' if i == q.answer else '❌'} {q.choices[i]}  \n  {q.why[i]}" for i in order
                )
            )


@st.fragment
def render_quiz(chapter: int) -> None:
    """One radio per question in a shuffled order, a Check button; the first checked answer counts and
    locks the question; feedback and explanation appear only after checking. All in a box of its own, drawn
    only while open (a fresh page draws the box's label).

    Fragments, so that a click costs what it changes (a class clicking at once queues on one interpreter):
    opening the box and starting again rerun the quiz, not the lesson, its live elements and the sidebar;
    choosing and checking rerun only that question (``_question``), which also rewrites the score line."""
    try:
        questions = lessons.load_quiz(chapter, i18n.lang())
    except lessons.LessonError:
        questions = []
    box = lazy_box(quiz_key(chapter), f"**{t('quiz.box', total=len(questions))}**")
    if box is None:
        return
    with box:
        if not questions:
            st.info(t("quiz.none"))
            return
        area = st.container()
        score = _score_slot()
        with area:
            for n, q in enumerate(questions, start=1):
                _question(chapter, q, n, len(questions), score)
        # always drawn: a question's fragment cannot add it below the score (it reruns the whole quiz)
        st.button(t("quiz.reset"), key=f"tk_quiz_reset_{chapter}", on_click=_reset, args=(chapter, questions))


def _score_slot():
    """The quiz's score line: an ``st.empty`` that each question's fragment writes (the last writer shows).

    A fragment may write to a container of the fragment around it, but Streamlit 1.60 records which fragment
    created a container only for blocks, not for ``st.empty`` (an element): taken for the main script's, a
    question could not write the score during a rerun of the quiz alone. The empty is made in a block of
    the quiz and marked as the quiz's, as a block would be."""
    holder = st.container()
    slot = holder.empty()
    slot._creating_fragment_id = holder._creating_fragment_id
    return slot


@st.fragment
def _question(chapter: int, q: lessons.Question, n: int, total: int, score) -> None:
    """One question: its prompt, radio, Check button and, once checked, the feedback; then the quiz's score line
    in ``score`` (an ``st.empty`` of the quiz, written by every question so each can rewrite it alone)."""
    progress = _progress()
    key = _radio_key(chapter, q)
    order = lessons.shuffled_order(_seed(), q.id, len(q.choices))
    first = progress.choice(chapter, q.id)
    if first is not None:
        st.session_state[key] = first  # locked: shows the first checked answer, even after a page switch
    st.markdown(f"**{n}.** {q.prompt}")  # outside the radio: a locked radio greys its label
    choice = st.radio(
        f"{n}. {q.prompt}",
        options=list(order),
        format_func=lambda i, q=q: q.choices[i],
        index=None,
        key=key,
        persist_state="session",
        disabled=first is not None,
        label_visibility="collapsed",
    )
    st.button(
        t("quiz.check"),
        key=f"tk_quiz_check_{chapter}_{q.id}",
        on_click=_check,
        args=(chapter, q),
        disabled=first is not None or choice is None,
        help=t("quiz.locked") if first is not None else None,
    )
    if first is not None:
        _feedback(q, first, order)
    score.progress(
        progress.answered(chapter) / total,
        text=t(
            "quiz.score",
            correct=progress.correct(chapter),
            answered=progress.answered(chapter),
            total=total,
        ),
    )


def page_link(path: str, key: str) -> None:
    """A link to another page of the page table (``ui/pages.py``), labelled with the ui.toml text ``key``."""
    st.page_link(path, label=t(key), icon="➡️")
