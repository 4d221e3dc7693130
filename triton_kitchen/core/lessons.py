"""Lesson text, quiz banks and UI strings, in Chinese (default) and English.

Files live in ``lessons/<lang>/`` at the repository root:

- ``NN-slug.md``: one lesson per chapter. A small front matter between ``---`` lines
  (``title``, ``chapter``, ``summary``, ``live``), then Markdown. ``<!-- section: key -->``
  markers split the body so a page can place its live element between sections.
- ``quiz/NN.toml``: ``[[question]]`` tables with ``id``, ``prompt``, ``choices``, ``answer``
  (0-based) and ``explanation``; optionally ``why`` (one line of feedback per choice, in the
  order of ``choices``) and ``kind`` (``"scenario"``: a rule to apply, ``"recall"``, or
  ``"transfer"``: a situation the lesson did not show, whose new parts a ``novel`` list names).
- ``ui.toml``: flat ``key = "text"`` strings (dotted tables allowed), ``str.format``
  placeholders.

This module never imports Streamlit; everything it loads is cached.
"""

from __future__ import annotations

import random
import re
import string
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from triton_kitchen.core import cjk

LANGS = ("zh", "en")
DEFAULT_LANG = "zh"
CJK_LANGS = ("zh",)  # their lessons, quizzes and UI strings go through cjk.normalize when loaded
CHAPTERS = tuple(range(1, 12))
LESSONS_DIR = Path(__file__).resolve().parents[2] / "lessons"

FRONT_MATTER_KEYS = ("title", "chapter", "summary", "live")
INTRO_SECTION = "intro"
# ``<!-- section: key -->``, or ``<!-- section: key deep -->`` for a section that goes deeper than the chapter's
# main path (the page labels it so; the main path stays a one-sitting read, tests/unit/test_lessons.py)
_SECTION_RE = re.compile(r"^<!--\s*section:\s*([A-Za-z0-9_\-]+)(?:\s+(deep))?\s*-->\s*$", re.MULTILINE)


class LessonError(ValueError):
    """A lesson, quiz or UI file is missing or malformed."""


@dataclass(frozen=True)
class Lesson:
    chapter: int
    title: str
    summary: str
    live: str
    body: str
    sections: dict[str, str] = field(default_factory=dict)
    lang: str = DEFAULT_LANG
    deep: frozenset[str] = frozenset()  # the sections marked ``deep``: beyond the chapter's main path
    path: str = ""


@dataclass(frozen=True)
class Question:
    id: str
    prompt: str
    choices: tuple[str, ...]
    answer: int
    explanation: str
    chapter: int = 0
    why: tuple[str, ...] = ()  # feedback per choice, same order as choices; () when the bank has none
    kind: str = ""  # one of QUESTION_KINDS, or "" when the bank does not say


QUESTION_KINDS = ("scenario", "recall", "transfer")


def normalize_lang(lang: str | None) -> str:
    """'zh', 'zh-CN', 'EN_us' -> a member of LANGS; anything else -> DEFAULT_LANG."""
    if not lang:
        return DEFAULT_LANG
    head = str(lang).strip().lower().replace("_", "-").split("-")[0]
    return head if head in LANGS else DEFAULT_LANG


def _check_lang(lang: str) -> str:
    if lang not in LANGS:
        raise LessonError(f"unknown language {lang!r}; expected one of {LANGS}")
    return lang


def _check_chapter(chapter: int) -> int:
    if chapter not in CHAPTERS:
        raise LessonError(f"unknown chapter {chapter!r}; expected 1..{len(CHAPTERS)}")
    return int(chapter)


def lesson_path(chapter: int, lang: str) -> Path:
    _check_chapter(chapter)
    _check_lang(lang)
    matches = sorted((LESSONS_DIR / lang).glob(f"{chapter:02d}-*.md"))
    if len(matches) != 1:
        raise LessonError(f"expected one lesson file lessons/{lang}/{chapter:02d}-*.md, found {len(matches)}")
    return matches[0]


def parse_front_matter(text: str) -> tuple[dict[str, str], str]:
    """Split ``---`` front matter (``key: value`` lines) from the Markdown body."""
    lines = text.lstrip("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise LessonError("lesson must start with a '---' front matter line")
    meta: dict[str, str] = {}
    for i, line in enumerate(lines[1:], start=1):
        stripped = line.strip()
        if stripped == "---":
            return meta, "".join(lines[i + 1 :]).strip("\n") + "\n"
        if not stripped or stripped.startswith("#"):
            continue
        key, sep, value = stripped.partition(":")
        if not sep:
            raise LessonError(f"front matter line {i + 1} is not 'key: value': {stripped!r}")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        meta[key.strip()] = value
    raise LessonError("front matter is not closed by a '---' line")


def split_sections(body: str) -> dict[str, str]:
    """Body -> {section key: Markdown} in file order; text before the first marker is 'intro'."""
    sections: dict[str, str] = {}
    parts = _SECTION_RE.split(body)
    head = parts[0].strip()
    if head:
        sections[INTRO_SECTION] = head + "\n"
    for key, text in zip(parts[1::3], parts[3::3], strict=True):
        if key in sections:
            raise LessonError(f"section {key!r} appears twice")
        sections[key] = text.strip() + "\n"
    return sections


def deep_sections(body: str) -> frozenset[str]:
    """The keys of the sections whose marker says ``deep``."""
    return frozenset(m.group(1) for m in _SECTION_RE.finditer(body) if m.group(2))


_HEADING_RE = re.compile(r"\A#{1,6}[ \t]+(.+?)[ \t#]*\n")


def split_heading(section: str) -> tuple[str, str]:
    """A section's leading Markdown heading apart from the rest: ``("The model repository", "text...")``;
    ``("", section)`` when the section does not start with one (a page shows the heading as the label of the
    section's box and the rest inside it)."""
    match = _HEADING_RE.match(section.lstrip("\n"))
    if match is None:
        return "", section
    return match.group(1).strip(), section.lstrip("\n")[match.end() :].lstrip("\n")


@lru_cache(maxsize=64)
def load_lesson(chapter: int, lang: str = DEFAULT_LANG) -> Lesson:
    path = lesson_path(chapter, lang)
    meta, body = parse_front_matter(path.read_text(encoding="utf-8"))
    missing = [k for k in FRONT_MATTER_KEYS if not meta.get(k)]
    if missing:
        raise LessonError(f"{path}: front matter lacks {', '.join(missing)}")
    try:
        declared = int(meta["chapter"])
    except ValueError as exc:
        raise LessonError(f"{path}: chapter is not a number: {meta['chapter']!r}") from exc
    if declared != chapter:
        raise LessonError(f"{path}: front matter says chapter {declared}, file name says {chapter}")
    if lang in CJK_LANGS:  # no stray spaces, bold that renders (triton_kitchen.core.cjk)
        meta, body = {k: cjk.normalize(v) for k, v in meta.items()}, cjk.normalize(body)
    return Lesson(
        chapter=chapter,
        title=meta["title"],
        summary=meta["summary"],
        live=meta["live"],
        body=body,
        sections=split_sections(body),
        deep=deep_sections(body),
        lang=lang,
        path=str(path),
    )


@lru_cache(maxsize=8)
def list_lessons(lang: str = DEFAULT_LANG) -> tuple[Lesson, ...]:
    return tuple(load_lesson(ch, lang) for ch in CHAPTERS)


def quiz_path(chapter: int, lang: str) -> Path:
    _check_chapter(chapter)
    _check_lang(lang)
    return LESSONS_DIR / lang / "quiz" / f"{chapter:02d}.toml"


def _read_toml(path: Path, what: str) -> dict:
    """A TOML file of the lessons; a missing or broken one is a LessonError naming ``what`` it is."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise LessonError(f"no {what} {path}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise LessonError(f"{path}: {exc}") from exc


@lru_cache(maxsize=64)
def _load_quiz(chapter: int, lang: str) -> tuple[Question, ...]:
    path = quiz_path(chapter, lang)
    data = _read_toml(path, "quiz bank")
    if lang in CJK_LANGS:
        data = cjk.normalize_tree(data)
    questions = []
    seen = set()
    for n, raw in enumerate(data.get("question", []), start=1):
        try:
            q = Question(
                id=str(raw["id"]),
                prompt=str(raw["prompt"]),
                choices=tuple(str(c) for c in raw["choices"]),
                answer=int(raw["answer"]),
                explanation=str(raw["explanation"]),
                chapter=chapter,
                why=tuple(str(w) for w in raw.get("why", ())),
                kind=str(raw.get("kind", "")),
            )
        except KeyError as exc:
            raise LessonError(f"{path}: question {n} lacks {exc.args[0]!r}") from exc
        if q.why and len(q.why) != len(q.choices):
            raise LessonError(
                f"{path}: question {q.id!r}: why has {len(q.why)} entries for {len(q.choices)} choices"
            )
        if q.kind and q.kind not in QUESTION_KINDS:
            raise LessonError(f"{path}: question {q.id!r}: kind {q.kind!r} is not one of {QUESTION_KINDS}")
        if q.id in seen:
            raise LessonError(f"{path}: question id {q.id!r} appears twice")
        if not 0 <= q.answer < len(q.choices):
            raise LessonError(f"{path}: question {q.id!r}: answer {q.answer} is not a valid choice index")
        seen.add(q.id)
        questions.append(q)
    return tuple(questions)


def load_quiz(chapter: int, lang: str = DEFAULT_LANG) -> list[Question]:
    return list(_load_quiz(chapter, lang))


def check_answer(question: Question, choice: int | None) -> bool:
    return choice is not None and int(choice) == question.answer


def shuffled_order(seed: int | str, question_id: str, n: int) -> tuple[int, ...]:
    """The order to show a question's n choices in: a permutation of range(n), the same for the same
    seed and question id (also across processes: a str seed is hashed with SHA-512, not hash()).
    Indices stay those of the bank, so ``answer`` needs no remapping."""
    order = list(range(n))
    random.Random(f"{seed}:{question_id}").shuffle(order)
    return tuple(order)


def _flatten(table: dict[str, Any], prefix: str = "") -> dict[str, str]:
    flat: dict[str, str] = {}
    for key, value in table.items():
        full = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, full + "."))
        else:
            flat[full] = str(value)
    return flat


@lru_cache(maxsize=8)
def _ui_table(lang: str) -> tuple[tuple[str, str], ...]:
    path = LESSONS_DIR / _check_lang(lang) / "ui.toml"
    data = _read_toml(path, "UI string table")
    if lang in CJK_LANGS:
        data = cjk.normalize_tree(data, template=True)
    return tuple(_flatten(data).items())


def ui_strings(lang: str = DEFAULT_LANG) -> dict[str, str]:
    """All UI strings of a language as a flat {dotted.key: template} dict (a fresh copy)."""
    return dict(_ui_table(normalize_lang(lang)))


def placeholders(template: str) -> set[str]:
    """Names of the ``str.format`` fields in a template ('{ms:.1f}' -> 'ms').

    Only identifiers count: a string without such fields is shown as written, so literal
    braces (a config snippet such as ``{ key: "input" }``) need no escaping there. A string
    that has placeholders must write literal braces as ``{{`` and ``}}``.
    """
    names = set()
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError:
        return names
    for _, name, _, _ in parsed:
        if name is None:
            continue
        head = name.split(".")[0].split("[")[0]
        if head.isidentifier():
            names.add(head)
    return names


class _KeepMissing(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


@lru_cache(maxsize=8)
def _ui_lookup(lang: str) -> dict[str, str]:
    return dict(_ui_table(lang))


def t(key: str, lang: str | None = DEFAULT_LANG, **kwargs: Any) -> str:
    """Translate a UI key; a missing key comes back as the key itself, so it shows on screen."""
    template = _ui_lookup(normalize_lang(lang)).get(key)
    if template is None:
        return key
    if not placeholders(template):
        return template
    try:
        return template.format_map(_KeepMissing(kwargs))
    except (ValueError, IndexError, KeyError, TypeError, AttributeError):
        return template


class QuizProgress:
    """First checked answers of one session, per chapter; plain data, so it serialises to JSON.

    Only the first check of a question counts: the score is "first-try correct", and a later check
    with another choice changes nothing until the chapter is reset.
    """

    def __init__(self, data: dict[str, dict[str, dict[str, Any]]] | None = None) -> None:
        self._answers: dict[str, dict[str, dict[str, Any]]] = {}
        for chapter, answers in (data or {}).items():
            self._answers[str(int(chapter))] = {
                str(qid): {"choice": int(a["choice"]), "correct": bool(a["correct"])}
                for qid, a in answers.items()
            }

    def record(self, chapter: int, question_id: str, choice: int, correct: bool) -> None:
        self._answers.setdefault(str(int(chapter)), {})[str(question_id)] = {
            "choice": int(choice),
            "correct": bool(correct),
        }

    def answer(self, question: Question, choice: int) -> bool:
        """Check a choice against the question and say whether it is right; record it only when it is
        the question's first checked answer."""
        ok = check_answer(question, choice)
        if not self.checked(question.chapter, question.id):
            self.record(question.chapter, question.id, choice, ok)
        return ok

    def checked(self, chapter: int, question_id: str) -> bool:
        return str(question_id) in self._answers.get(str(int(chapter)), {})

    def choice(self, chapter: int, question_id: str) -> int | None:
        entry = self._answers.get(str(int(chapter)), {}).get(str(question_id))
        return None if entry is None else entry["choice"]

    def answered(self, chapter: int) -> int:
        return len(self._answers.get(str(int(chapter)), {}))

    def correct(self, chapter: int) -> int:
        return sum(1 for a in self._answers.get(str(int(chapter)), {}).values() if a["correct"])

    def done(self, chapter: int, total: int) -> bool:
        return self.answered(chapter) >= total > 0

    def reset(self, chapter: int | None = None) -> None:
        if chapter is None:
            self._answers.clear()
        else:
            self._answers.pop(str(int(chapter)), None)

    def to_dict(self) -> dict[str, dict[str, dict[str, Any]]]:
        return {ch: {qid: dict(a) for qid, a in answers.items()} for ch, answers in self._answers.items()}

    @classmethod
    def from_dict(cls, data: dict[str, dict[str, dict[str, Any]]] | None) -> QuizProgress:
        return cls(data)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, QuizProgress) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"QuizProgress({self.to_dict()!r})"
