"""The quiz's fragments lean on one Streamlit internal: a question's fragment writes the score line into an
``st.empty`` of the quiz, which ``ui.lesson._score_slot`` marks as created by the quiz's fragment (Streamlit 1.60
records that only for blocks). If an upgrade renames it, this says so before a class finds a quiz that fails
on its first Check (tests/live/test_class_load.py would fail too, with the page's exception)."""

from __future__ import annotations

import inspect

from streamlit import delta_generator


def test_the_streamlit_internal_the_quiz_score_uses_is_there():
    assert "self._creating_fragment_id" in inspect.getsource(delta_generator.DeltaGenerator.__init__)
    check = inspect.getsource(delta_generator._get_or_create_outside_wrapper)
    assert "dg._creating_fragment_id not in ctx.fragment_ids_this_run" in check


def test_every_quiz_click_is_inside_a_fragment():
    """The quiz, each question and the predict-first radio are fragments (a click reruns only them)."""
    from ui import classroom, lesson, predict

    for fn in (lesson.render_quiz, lesson._question, predict._ask, classroom._join_box):
        assert "fragment" in inspect.getsource(fn).split("def ", 1)[0], fn.__name__
