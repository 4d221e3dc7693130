"""Printable handouts: for each chapter and language, the lesson and its quiz without answers,
and a separate answer key for the teacher, each one self-contained, print-ready HTML document.

A4 pages through ``@page`` and ``@media print``; no network fonts, no scripts, no images: Chinese text is set in
the fonts a school's machines have (the ``FONT_STACK``: Noto Sans CJK, WenQuanYi, the systems' own, then
``sans-serif``), so a browser's Print (or "Save as PDF") gives the pages. Markdown is rendered with
markdown-it-py (CommonMark and tables, raw HTML off: the lessons carry none but their section markers, which
are left out).

The quiz's choices are printed in one fixed shuffled order per question (``choice_order``), the same on the
handout and in the key, so the key's letters match the sheet. Words come from the ``[handout]`` table of
``lessons/<lang>/ui.toml``. Pure functions, cached; no Streamlit.
"""

from __future__ import annotations

import html
from functools import lru_cache

from markdown_it import MarkdownIt

from triton_kitchen.core import lessons

LETTERS = "ABCDEFGHIJ"
ORDER_SEED = "handout"  # the printed choice order: stable across runs, so a key printed later still matches
FONT_STACK = (
    '"Noto Sans", "Noto Sans CJK SC", "Source Han Sans SC", "WenQuanYi Micro Hei", "PingFang SC", '
    '"Microsoft YaHei", "Helvetica Neue", Arial, sans-serif'
)
MONO_STACK = '"Noto Sans Mono", "DejaVu Sans Mono", "Noto Sans Mono CJK SC", "WenQuanYi Micro Hei Mono", Consolas, monospace'
HTML_LANG = {"zh": "zh-CN", "en": "en"}
KINDS = ("handout", "key")

_CSS = """
@page { size: A4; margin: 16mm 15mm 18mm 15mm; }
* { box-sizing: border-box; }
html { font-family: $FONT; font-size: 11pt; line-height: 1.6; color: #111; background: #fff; }
body { margin: 0 auto; max-width: 180mm; padding: 10mm 0; }
h1 { font-size: 20pt; line-height: 1.25; margin: 0 0 2mm; }
h2 { font-size: 14.5pt; margin: 7mm 0 2mm; }
h3 { font-size: 12.5pt; margin: 5mm 0 2mm; }
h1, h2, h3, h4 { break-after: avoid; page-break-after: avoid; }
p, li { orphans: 3; widows: 3; }
.summary { color: #444; margin: 0 0 3mm; }
.meta { display: flex; justify-content: space-between; gap: 6mm; border-bottom: 0.6pt solid #999;
        padding-bottom: 2mm; margin-bottom: 5mm; font-size: 9.5pt; color: #444; }
.fill { display: inline-block; min-width: 32mm; border-bottom: 0.6pt solid #555; }
.note { font-size: 9.5pt; color: #555; border-left: 2pt solid #bbb; padding-left: 3mm; margin: 3mm 0 5mm; }
code, pre { font-family: $MONO; font-size: 9pt; }
code { background: #f2f2f2; padding: 0 0.6mm; border-radius: 1mm; }
pre { background: #f6f6f6; border: 0.5pt solid #ccc; border-radius: 1.5mm; padding: 2.5mm 3mm;
      white-space: pre-wrap; overflow-wrap: anywhere; break-inside: avoid; page-break-inside: avoid; }
pre code { background: none; padding: 0; }
table { border-collapse: collapse; margin: 3mm 0; font-size: 9.5pt; width: 100%; break-inside: avoid; }
th, td { border: 0.5pt solid #999; padding: 1mm 2mm; text-align: left; vertical-align: top; }
th { background: #eee; }
blockquote { margin: 3mm 0; padding-left: 3mm; border-left: 2pt solid #ccc; color: #333; }
.quiz { break-before: page; page-break-before: always; }
.question { break-inside: avoid; page-break-inside: avoid; margin: 0 0 5mm; }
.question .prompt { margin: 0 0 1.5mm; }
.question ol { list-style: none; margin: 0; padding: 0 0 0 6mm; }
.question li { margin: 0.8mm 0; padding-left: 9mm; text-indent: -9mm; }
.box { display: inline-block; width: 3.2mm; height: 3.2mm; border: 0.7pt solid #333; margin-right: 1.5mm;
       vertical-align: -0.4mm; }
.letter { font-weight: 600; margin-right: 1mm; }
.grid { font-size: 10.5pt; margin: 0 0 5mm; }
.grid span { display: inline-block; min-width: 14mm; }
.right { margin: 0 0 1mm; }
.explanation { color: #222; margin: 0; }
@media screen { body { padding: 12mm 14mm; box-shadow: 0 0 4mm #bbb; margin: 6mm auto; } html { background: #e8e8e8; } }
@media print { body { max-width: none; padding: 0; } a { color: inherit; text-decoration: none; } }
"""


def _md() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


_MD = _md()


def css() -> str:
    """The documents' one stylesheet, with the font stacks filled in."""
    return _CSS.replace("$MONO", MONO_STACK).replace("$FONT", FONT_STACK)


def choice_order(question: lessons.Question) -> tuple[int, ...]:
    """The order a question's choices are printed in (bank indices), the same on the handout and the key."""
    return lessons.shuffled_order(ORDER_SEED, question.id, len(question.choices))


def right_letter(question: lessons.Question) -> str:
    """The letter of the right choice as printed."""
    return LETTERS[choice_order(question).index(question.answer)]


def file_name(chapter: int, lang: str, kind: str) -> str:
    """``triton-kitchen-ch03-zh-handout.html`` or ``...-key.html``."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    return f"triton-kitchen-ch{chapter:02d}-{lang}-{kind}.html"


def _inline(text: str) -> str:
    return _MD.renderInline(text)


def _document(lang: str, title: str, body: list[str]) -> str:
    return "\n".join(
        [
            "<!DOCTYPE html>",
            f'<html lang="{HTML_LANG.get(lang, lang)}">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{html.escape(title)}</title>",
            f"<style>{css()}</style>",
            "</head>",
            "<body>",
            *body,
            "</body>",
            "</html>",
            "",
        ]
    )


def _header(lesson: lessons.Lesson, lang: str, kind: str) -> list[str]:
    t = lessons.t
    heading = t(f"handout.{kind}_heading", lang, chapter=lesson.chapter, title=lesson.title)
    meta = [f"<span>{html.escape(t('handout.course', lang))}</span>"]
    if kind == "handout":  # the student writes on it
        meta += [
            f'<span>{html.escape(t(f"handout.{field}", lang))} <span class="fill"></span></span>'
            for field in ("name", "date")
        ]
    return ['<div class="meta">', *meta, "</div>", f"<h1>{html.escape(heading)}</h1>"]


def render_handout(lesson: lessons.Lesson, questions: list[lessons.Question], lang: str) -> str:
    """The student's sheet: the lesson's sections, then the quiz with empty boxes, and no answer anywhere
    (the page depends on neither ``answer``, ``explanation`` nor ``why``)."""
    t = lessons.t
    body = _header(lesson, lang, "handout")
    body.append(f'<p class="summary">{_inline(lesson.summary)}</p>')
    body.append(f'<p class="note">{html.escape(t("handout.live_note", lang))}</p>')
    body.extend(_MD.render(text) for text in lesson.sections.values())
    body.append('<section class="quiz">')
    body.append(f"<h2>{html.escape(t('handout.quiz', lang, chapter=lesson.chapter))}</h2>")
    body.append(f'<p class="note">{html.escape(t("handout.quiz_note", lang))}</p>')
    for n, q in enumerate(questions, start=1):
        body.append('<div class="question">')
        body.append(f'<p class="prompt"><b>{n}.</b> {_inline(q.prompt)}</p>')
        body.append("<ol>")
        for letter, i in zip(LETTERS, choice_order(q), strict=False):
            body.append(
                f'<li><span class="box"></span><span class="letter">{letter}.</span>{_inline(q.choices[i])}</li>'
            )
        body.append("</ol>")
        body.append("</div>")
    body.append("</section>")
    title = t("handout.handout_heading", lang, chapter=lesson.chapter, title=lesson.title)
    return _document(lang, title, body)


def render_key(lesson: lessons.Lesson, questions: list[lessons.Question], lang: str) -> str:
    """The teacher's key: a line of letters to mark by, then each question, its right choice and explanation."""
    t = lessons.t
    body = _header(lesson, lang, "key")
    body.append(f"<h2>{html.escape(t('handout.at_a_glance', lang))}</h2>")
    body.append('<p class="grid">')
    body.extend(f"<span>{n}. <b>{right_letter(q)}</b></span>" for n, q in enumerate(questions, start=1))
    body.append("</p>")
    body.append(f"<h2>{html.escape(t('handout.quiz', lang, chapter=lesson.chapter))}</h2>")
    for n, q in enumerate(questions, start=1):
        body.append('<div class="question">')
        body.append(f'<p class="prompt"><b>{n}.</b> {_inline(q.prompt)}</p>')
        right = f"{right_letter(q)}. {_inline(q.choices[q.answer])}"
        body.append(f'<p class="right"><b>{html.escape(t("handout.right_choice", lang))}</b> {right}</p>')
        body.append(
            f'<p class="explanation"><b>{html.escape(t("handout.explanation", lang))}</b> {_inline(q.explanation)}</p>'
        )
        body.append("</div>")
    title = t("handout.key_heading", lang, chapter=lesson.chapter, title=lesson.title)
    return _document(lang, title, body)


@lru_cache(maxsize=32)
def handout(chapter: int, lang: str) -> str:
    """The student's handout of a chapter in a language (``lessons.LANGS``), as one HTML document."""
    return render_handout(lessons.load_lesson(chapter, lang), lessons.load_quiz(chapter, lang), lang)


@lru_cache(maxsize=32)
def answer_key(chapter: int, lang: str) -> str:
    """The answer key of a chapter's quiz in a language, as one HTML document."""
    return render_key(lessons.load_lesson(chapter, lang), lessons.load_quiz(chapter, lang), lang)
