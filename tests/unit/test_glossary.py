"""The Chinese vocabulary (lessons/zh/glossary.toml) holds everywhere Chinese is shown: lessons, quizzes, UI
strings and the printed handouts use one word per concept; quiz notes do not lean on one template phrase; and
no web address in Chinese text runs straight into Chinese characters (a Markdown autolink would swallow them)."""

from __future__ import annotations

import html
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from triton_kitchen.core import lessons
from triton_kitchen.tools import handouts

ZH = lessons.LESSONS_DIR / "zh"
GLOSSARY = tomllib.loads((ZH / "glossary.toml").read_text(encoding="utf-8"))
TERMS = GLOSSARY["term"]
TEMPLATES = GLOSSARY["templates"]
ROOT = lessons.LESSONS_DIR.parent


def violations(text: str) -> list[tuple[str, str]]:
    """(phrase, the glossary's word) for each forbidden phrase in ``text``, its allowed uses masked first."""
    found = []
    for term in TERMS:
        masked = text
        for allowed in sorted(term["allowed"], key=len, reverse=True):
            masked = masked.replace(allowed, "\0")
        found += [(phrase, term["zh"]) for phrase in term["forbidden"] if phrase in masked]
    return found


def strings(tree: object, path: str = "") -> Iterator[tuple[str, str]]:
    """(key path, text) for every string in a parsed TOML tree."""
    if isinstance(tree, str):
        yield path, tree
    elif isinstance(tree, dict):
        for key, value in tree.items():
            yield from strings(value, f"{path}.{key}" if path else key)
    elif isinstance(tree, list):
        for i, value in enumerate(tree):
            yield from strings(value, f"{path}[{i}]")


def lesson_lines() -> Iterator[tuple[str, str]]:
    for path in sorted(ZH.glob("*.md")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            yield f"{path.relative_to(ROOT)}:{n}", line


def toml_strings(path: Path) -> Iterator[tuple[str, str]]:
    for key, text in strings(tomllib.loads(path.read_text(encoding="utf-8"))):
        yield f"{path.relative_to(ROOT)} {key}", text


def handout_text(chapter: int) -> str:
    """What the zh handout and answer key print besides the quiz (checked from its bank): the lesson and the
    handout's own words from ui.toml."""
    lesson = lessons.load_lesson(chapter, "zh")
    docs = (handouts.render_handout(lesson, [], "zh"), handouts.render_key(lesson, [], "zh"))
    body = " ".join(re.sub(r"<style>.*?</style>", " ", doc, flags=re.S) for doc in docs)
    return html.unescape(re.sub(r"<[^>]+>", " ", body))


def report(hits: list[tuple[str, str, str]]) -> str:
    return "\n".join(f"{where}: {phrase!r} (write {word})" for where, phrase, word in hits)


def check(items: Iterator[tuple[str, str]]) -> list[tuple[str, str, str]]:
    return [(where, phrase, word) for where, text in items for phrase, word in violations(text)]


# --- the glossary itself ----------------------------------------------------------------------------


def test_glossary_entries_are_complete():
    assert len(TERMS) >= 12
    for term in TERMS:
        assert term["zh"].strip() and term["en"].strip() and term["note"].strip(), term
        assert isinstance(term["forbidden"], list) and isinstance(term["allowed"], list), term["zh"]
        for allowed in term["allowed"]:  # an allowed use that holds no forbidden phrase would mask nothing
            assert any(phrase in allowed for phrase in term["forbidden"]), (term["zh"], allowed)
    words = {t["zh"] for t in TERMS}
    for needed in ("响应", "请求", "批 / 批次", "实例", "剪枝", "传输上限 / 消息大小上限"):
        assert needed in words
    assert TEMPLATES["max_notes"] == 5 and TEMPLATES["zh"] and TEMPLATES["en"]


def test_the_check_catches_a_response_called_an_answer_and_spares_a_learners_answer():
    assert ("回答", "响应") in violations("服务器对每个请求返回一个回答。")
    assert ("应答", "响应") in violations("服务器没有应答。")
    assert violations("回答正确。请再回答问题。") == []
    assert ("线上", "实际传输的字节 / 网络上传输的数据") in violations("统计线上字节")
    assert violations("上了线上环境之后") == []
    assert violations("服务器返回一个响应，统计实际传输的字节数。") == []


# --- where Chinese is shown -------------------------------------------------------------------------


def test_lessons_use_the_glossary():
    hits = check(lesson_lines())
    assert not hits, report(hits)


def test_ui_strings_use_the_glossary():
    hits = check(toml_strings(ZH / "ui.toml"))
    assert not hits, report(hits)


@pytest.mark.parametrize("chapter", lessons.CHAPTERS)
def test_handouts_use_the_glossary(chapter):
    hits = [(f"zh handout ch{chapter}", phrase, word) for phrase, word in violations(handout_text(chapter))]
    assert not hits, report(hits)


@pytest.mark.parametrize("chapter", lessons.CHAPTERS)
def test_quizzes_use_the_glossary(chapter):
    hits = check(toml_strings(lessons.quiz_path(chapter, "zh")))
    assert not hits, report(hits)


# --- template phrases in the quiz notes -------------------------------------------------------------


def template_counts(lang: str) -> dict[str, int]:
    """How many per-choice notes (``why``) of a language hold each template phrase, anywhere in the note."""
    notes = [note for ch in lessons.CHAPTERS for q in lessons.load_quiz(ch, lang) for note in q.why]
    fold = str.lower if lang == "en" else str
    return {phrase: sum(fold(phrase) in fold(note) for note in notes) for phrase in TEMPLATES[lang]}


@pytest.mark.parametrize("lang", lessons.LANGS)
def test_no_template_phrase_in_more_than_five_notes(lang):
    over = {p: n for p, n in template_counts(lang).items() if n > TEMPLATES["max_notes"]}
    assert not over, f"{lang}: template phrases in more than {TEMPLATES['max_notes']} notes: {over}"


# --- web addresses ---------------------------------------------------------------------------------

CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
BARE_URL = re.compile(r"https?://\S+")
HOST_URL = re.compile(r"https?://[\w.-]+")


def swallowing_urls(text: str) -> list[str]:
    """Bare addresses (outside code) that run into a non-ASCII character: GFM's autolink takes everything up to
    the next whitespace, so the Chinese after such an address becomes part of a link to nowhere."""
    return [url for url in BARE_URL.findall(CODE.sub(" ", text)) if not url.isascii()]


def bare_addresses(text: str) -> list[str]:
    """Addresses with a host written outside a code span: Markdown makes each a live link (in a quiz choice,
    clicking the choice's text then leaves the page for a host that does not exist)."""
    return HOST_URL.findall(CODE.sub(" ", text))


def test_the_url_checks_catch_an_address_outside_code():
    assert swallowing_urls('写 "http://gpu-box:8001/v2"，和 REST 一样') == ['http://gpu-box:8001/v2"，和']
    assert swallowing_urls("写 `http://gpu-box:8001/v2`，和 REST 一样") == []
    assert swallowing_urls("见 http://gpu-box:8001/v2 ，和 REST 一样") == []
    assert bare_addresses("fetch from http://app.example") == ["http://app.example"]
    assert bare_addresses("fetch from `http://app.example`; no http:// prefix") == []


def zh_and_en_texts() -> Iterator[tuple[str, str]]:
    for lang in lessons.LANGS:
        for path in sorted((lessons.LESSONS_DIR / lang).glob("*.md")):
            yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")
        yield from toml_strings(lessons.LESSONS_DIR / lang / "ui.toml")


def test_no_address_swallows_chinese_in_lessons_and_ui():
    whole = [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in sorted(ZH.glob("*.md"))]
    hits = [(w, u) for w, text in [*whole, *toml_strings(ZH / "ui.toml")] for u in swallowing_urls(text)]
    assert not hits, hits


def test_no_bare_address_in_lessons_and_ui():
    hits = [(w, u) for w, text in zh_and_en_texts() for u in bare_addresses(text)]
    assert not hits, hits


@pytest.mark.parametrize("chapter", lessons.CHAPTERS)
def test_no_address_swallows_chinese_in_quizzes(chapter):
    hits = [
        (w, u) for w, text in toml_strings(lessons.quiz_path(chapter, "zh")) for u in swallowing_urls(text)
    ]
    assert not hits, hits


@pytest.mark.parametrize("lang", lessons.LANGS)
def test_no_bare_address_in_quizzes(lang):
    texts = [item for ch in lessons.CHAPTERS for item in toml_strings(lessons.quiz_path(ch, lang))]
    hits = [(w, u) for w, text in texts for u in bare_addresses(text)]
    assert not hits, hits
