"""The quiz banks test transfer and give no length cue (fast tier: reads the TOML files, no server).

- every chapter has at least MIN_TRANSFER questions of ``kind = "transfer"``: a situation the lesson did
  not show, whose new parts (config lines, numbers, error text) a ``novel`` list names;
- no ``novel`` string is in the chapter's lesson text, in either language (whitespace normalised,
  case ignored): a transfer question must not re-ask the lesson's own example;
- no length rank of the choices (longest, 2nd, 3rd, shortest; ties in file order) is the key in more
  than MAX_RANK_SHARE of a language's questions;
- the zh and en banks agree question for question (ids, keys, kinds, number of choices, number of
  ``novel`` entries).

Counts come from benchmarks/quiz_stats.py, which prints them.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("quiz_stats", ROOT / "benchmarks" / "quiz_stats.py")
qs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(qs)

MIN_TRANSFER = 3
MAX_RANK_SHARE = 0.35


def chapter_params():
    return list(qs.CHAPTERS)


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def lesson_text(chapter: int, lang: str) -> str:
    (path,) = sorted((qs.LESSONS / lang).glob(f"{chapter:02d}-*.md"))
    return normalise(path.read_text(encoding="utf-8"))


def transfer_questions(chapter: int, lang: str) -> list[dict]:
    return [q for q in qs.load_bank(chapter, lang) if q.get("kind") == "transfer"]


@pytest.mark.parametrize("lang", qs.LANGS)
@pytest.mark.parametrize("chapter", chapter_params())
def test_chapter_has_transfer_questions(chapter, lang):
    ids = [q["id"] for q in transfer_questions(chapter, lang)]
    assert len(ids) >= MIN_TRANSFER, f"ch{chapter} {lang}: {len(ids)} transfer questions {ids}"


@pytest.mark.parametrize("lang", qs.LANGS)
@pytest.mark.parametrize("chapter", qs.CHAPTERS)
def test_transfer_questions_name_what_is_new(chapter, lang):
    bad = {
        q["id"]: q.get("novel")
        for q in transfer_questions(chapter, lang)
        if not (
            isinstance(q.get("novel"), list)
            and q["novel"]
            and all(isinstance(s, str) and s.strip() for s in q["novel"])
        )
    }
    assert not bad, f"ch{chapter} {lang}: `novel` must be a non-empty list of strings: {bad}"


@pytest.mark.parametrize("chapter", qs.CHAPTERS)
def test_novel_is_not_in_the_lesson(chapter):
    texts = {lang: lesson_text(chapter, lang) for lang in qs.LANGS}
    found = [
        (q["id"], s, lang_text)
        for lang in qs.LANGS
        for q in transfer_questions(chapter, lang)
        for s in q.get("novel", [])
        for lang_text, text in texts.items()
        if isinstance(s, str) and normalise(s) and normalise(s) in text
    ]
    assert not found, f"ch{chapter}: novel strings the lesson already shows (id, string, lesson): {found}"


def rank_shares(lang: str, chapters) -> dict[str, tuple[int, int]]:
    rows = [qs.chapter_row(ch, lang) for ch in chapters]
    n = sum(r["questions"] for r in rows)
    return {rank: (sum(r[rank] for r in rows), n) for rank in qs.RANKS}


@pytest.mark.parametrize("lang", qs.LANGS)
def test_no_length_rank_gives_the_key_away(lang):
    shares = rank_shares(lang, qs.CHAPTERS)
    over = {rank: f"{k}/{n}" for rank, (k, n) in shares.items() if k > MAX_RANK_SHARE * n}
    assert not over, f"{lang}: a length rank is the key in more than {MAX_RANK_SHARE:.0%}: {over}"


@pytest.mark.parametrize("chapter", qs.CHAPTERS)
def test_languages_agree_question_for_question(chapter):
    def shape(lang):
        return [
            (q["id"], q["answer"], q.get("kind"), len(q["choices"]), len(q.get("novel", [])))
            for q in qs.load_bank(chapter, lang)
        ]

    assert shape("zh") == shape("en")


def test_key_rank_breaks_ties_in_file_order():
    assert qs.key_rank(["aa", "bbbb", "cc", "d"], 1) == 0
    assert qs.key_rank(["aa", "bbbb", "cc", "d"], 0) == 1  # tied with "cc", earlier in the file
    assert qs.key_rank(["aa", "bbbb", "cc", "d"], 2) == 2
    assert qs.rank_name(qs.key_rank(["aa", "bbbb", "cc", "d"], 3), 4) == "shortest"


def test_the_loader_accepts_transfer_questions(tmp_path, monkeypatch):
    from triton_kitchen.core import lessons as L

    bank = tmp_path / "en" / "quiz"
    bank.mkdir(parents=True)
    (bank / "01.toml").write_text(
        '[[question]]\nid = "q"\nkind = "transfer"\nnovel = ["max_batch_size: 3"]\n'
        'prompt = "p"\nchoices = ["a", "b"]\nanswer = 0\nexplanation = "e"\n',
        encoding="utf-8",
    )
    monkeypatch.setattr(L, "LESSONS_DIR", tmp_path)
    L._load_quiz.cache_clear()
    try:
        (q,) = L.load_quiz(1, "en")
    finally:
        L._load_quiz.cache_clear()
    assert q.kind == "transfer" and q.answer == 0
