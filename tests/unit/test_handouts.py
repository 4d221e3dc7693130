"""Handouts (triton_kitchen/tools/handouts.py): each chapter's handout holds its lesson and every quiz
question with every choice and no answer; the key holds every right choice and explanation; the documents are
A4, print-ready and self-contained. The browser test prints one chapter in zh and en to PDF and PNG
(artifacts/screenshots/handout_*.png) for a person to look at.

Here the tests that need no server, app or browser; the others: tests/live/test_handouts_live.py."""

from __future__ import annotations

import dataclasses
import re

import pytest
from _shared.handouts import shown, text_of

from triton_kitchen.core import lessons
from triton_kitchen.tools import handouts

CASES = [(ch, lang) for lang in lessons.LANGS for ch in lessons.CHAPTERS]


@pytest.mark.parametrize(("chapter", "lang"), CASES)
def test_the_handout_holds_the_lesson_and_every_question_but_no_answer(chapter, lang):
    doc = handouts.handout(chapter, lang)
    words = text_of(doc)
    lesson = lessons.load_lesson(chapter, lang)
    questions = lessons.load_quiz(chapter, lang)
    assert questions
    assert lesson.title in words
    for heading in re.findall(r"^#{1,3} (.+)$", lesson.body, flags=re.M):  # every section of the lesson
        assert shown(heading) in words, heading
    assert "<!--" not in doc and "section:" not in words  # the section markers are not text
    for q in questions:
        assert shown(q.prompt) in words, q.id
        for choice in q.choices:
            assert shown(choice) in words, (q.id, choice)
        assert shown(q.explanation) not in words, q.id
        for why in q.why:
            assert shown(why) not in words, (q.id, why)
    assert lessons.t("handout.right_choice", lang) not in words
    assert lessons.t("handout.explanation", lang) not in words


@pytest.mark.parametrize("lang", lessons.LANGS)
def test_the_handout_does_not_depend_on_the_answers(lang):
    """Nothing on the sheet tells the right choice apart: the same page whichever choice is right."""
    lesson = lessons.load_lesson(3, lang)
    questions = lessons.load_quiz(3, lang)
    page = handouts.render_handout(lesson, questions, lang)
    moved = [
        dataclasses.replace(
            q, answer=(q.answer + 1) % len(q.choices), explanation="X", why=("Y",) * len(q.choices)
        )
        for q in questions
    ]
    assert handouts.render_handout(lesson, moved, lang) == page
    assert handouts.render_key(lesson, moved, lang) != handouts.render_key(lesson, questions, lang)


@pytest.mark.parametrize(("chapter", "lang"), CASES)
def test_the_key_holds_every_right_choice_and_explanation(chapter, lang):
    key = handouts.answer_key(chapter, lang)
    words = text_of(key)
    sheet = text_of(handouts.handout(chapter, lang))
    questions = lessons.load_quiz(chapter, lang)
    glance = re.search(r'<p class="grid">(.*?)</p>', key, flags=re.S)
    assert glance and re.findall(r"<b>([A-J])</b>", glance.group(1)) == [
        handouts.right_letter(q) for q in questions
    ]
    for q in questions:
        letter = handouts.right_letter(q)
        right = f"{lessons.t('handout.right_choice', lang)} {letter}. {shown(q.choices[q.answer])}"
        assert right in words, (q.id, right)
        assert shown(q.explanation) in words, q.id
        # the letter is the one the choice has on the student's sheet
        assert f"{letter}. {shown(q.choices[q.answer])}" in sheet, q.id


@pytest.mark.parametrize(("chapter", "lang"), [(1, "zh"), (8, "en")])
def test_the_documents_are_a4_self_contained_and_in_the_right_language(chapter, lang):
    for doc in (handouts.handout(chapter, lang), handouts.answer_key(chapter, lang)):
        assert doc.startswith("<!DOCTYPE html>")
        assert f'<html lang="{handouts.HTML_LANG[lang]}">' in doc
        assert "@page { size: A4;" in doc and "@media print" in doc
        for font in ('"Noto Sans CJK SC"', '"WenQuanYi Micro Hei"', "sans-serif"):
            assert font in doc
        assert not re.search(r"https?://|@import|<script|<link|<img|url\(", doc, flags=re.I), (
            "nothing fetched"
        )


def test_the_printed_choice_order_is_fixed_and_covers_every_choice():
    for chapter in lessons.CHAPTERS:
        for q in lessons.load_quiz(chapter, "en"):
            order = handouts.choice_order(q)
            assert sorted(order) == list(range(len(q.choices)))
            assert handouts.choice_order(q) == order  # the same for a key printed later
    assert handouts.file_name(3, "zh", "handout") == "triton-kitchen-ch03-zh-handout.html"
    with pytest.raises(ValueError):
        handouts.file_name(3, "zh", "answers")
