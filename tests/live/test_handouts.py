"""Handouts (triton_kitchen/tools/handouts.py): each chapter's handout holds its lesson and every quiz
question with every choice and no answer; the key holds every right choice and explanation; the documents are
A4, print-ready and self-contained. The browser test prints one chapter in zh and en to PDF and PNG
(artifacts/screenshots/handout_*.png) for a person to look at."""

from __future__ import annotations

import dataclasses
import html
import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from triton_kitchen.core import lessons
from triton_kitchen.tools import handouts

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "artifacts" / "screenshots"
CASES = [(ch, lang) for lang in lessons.LANGS for ch in lessons.CHAPTERS]
_MD = MarkdownIt("commonmark")


def text_of(document: str) -> str:
    """The words a reader sees: tags dropped, entities decoded, whitespace squeezed."""
    body = re.sub(r"<style>.*?</style>|<title>.*?</title>", " ", document, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body))).strip()


def shown(markdown: str) -> str:
    """How a line of the quiz bank reads once rendered (backticks and stars gone)."""
    return text_of(_MD.renderInline(markdown))


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


# -- printed, in the browser ----------------------------------------------------------------------------
@pytest.mark.parametrize("lang", lessons.LANGS)
def test_a_handout_prints_on_a4_pages(browser, lang):
    """Chapter 2 to PDF (A4) and to PNG at the A4 page's text width, in print media, for a person to look at."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for kind, doc in (("handout", handouts.handout(2, lang)), ("key", handouts.answer_key(2, lang))):
        page = browser.new_page(viewport={"width": 680, "height": 960})  # 180 mm of text at 96 dpi
        page.set_content(doc)
        page.emulate_media(media="print")
        pdf = page.pdf(format="A4", print_background=True)
        pages = len(re.findall(rb"/Type\s*/Page[^s]", pdf))
        assert pages >= (4 if kind == "handout" else 1), (kind, pages)
        assert (
            page.evaluate("() => document.documentElement.scrollWidth") <= 680
        )  # nothing wider than the page
        family = page.evaluate("() => getComputedStyle(document.body).fontFamily")
        assert "WenQuanYi Micro Hei" in family
        page.screenshot(path=str(SHOTS / f"handout_ch2_{lang}_{kind}.png"), full_page=True)
        (SHOTS / f"handout_ch2_{lang}_{kind}.pdf").write_bytes(pdf)
        page.close()


# -- on the chapter page (AppTest) ----------------------------------------------------------------------
def _chapter_page(monkeypatch, token: str | None):
    from conftest import switch_page
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("TRITON_HTTP_URL", "127.0.0.1:9")  # nobody there: the page draws without Triton
    monkeypatch.setenv("TRITON_GRPC_URL", "127.0.0.1:9")
    if token is None:
        monkeypatch.delenv("TRITON_KITCHEN_TEACHER_TOKEN", raising=False)
    else:
        monkeypatch.setenv("TRITON_KITCHEN_TEACHER_TOKEN", token)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["lang"] = "en"
    switch_page(at, "views/ch6_choosing_protocol.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _downloads(at) -> list[str]:
    return [e.proto.label for e in at.get("download_button")]


def test_the_chapter_page_offers_the_handout_and_the_key_only_to_the_teacher(monkeypatch):
    t = lambda key: lessons.t(key, "en")  # noqa: E731
    # one person's app (no token): the browser on the app's machine is the teacher
    assert _downloads(_chapter_page(monkeypatch, None)) == [
        t("handout.download_handout"),
        t("handout.download_key"),
    ]
    # a class: a student's session gets the handout, and a line saying the key is the teacher's
    student = _chapter_page(monkeypatch, "s3cret")
    assert _downloads(student) == [t("handout.download_handout")]
    assert t("handout.key_teacher_only") in [c.value for c in student.caption]


def test_the_page_downloads_both_documents(browser, app_url):
    """The buttons in a real browser: Streamlit serves what handouts builds, under its file name (the suite's
    shared app: no teacher token, so the key is offered too)."""
    first = lessons.load_quiz(6, "zh")[0]
    url = app_url
    page = browser.new_page(viewport={"width": 1024, "height": 768}, accept_downloads=True)
    page.goto(f"{url}/ch6?lang=zh", wait_until="domcontentloaded")
    page.locator(".st-key-tk_handouts_6 summary").first.click(timeout=60000)  # the buttons' box
    got = {}
    for key, kind in (("tk_handout_6", "handout"), ("tk_handout_key_6", "key")):
        button = page.locator(f".st-key-{key} button").first
        button.wait_for(timeout=60000)
        with page.expect_download(timeout=30000) as info:
            button.click()
        assert info.value.suggested_filename == handouts.file_name(6, "zh", kind)
        got[kind] = Path(info.value.path()).read_text(encoding="utf-8")
    page.close()
    assert got == {"handout": handouts.handout(6, "zh"), "key": handouts.answer_key(6, "zh")}
    assert shown(first.explanation) not in text_of(got["handout"]) and shown(first.explanation) in text_of(
        got["key"]
    )
