"""What the quiz banks ask and whether a choice's length gives the key away.

    python benchmarks/quiz_stats.py [--chapters 1-5] [--lang zh]

Per chapter and language: the number of questions, of transfer questions (``kind = "transfer"``: a
situation the lesson did not show), and how often the key is the longest, second-longest, third and
shortest choice. Length is counted in characters of the choice as written in the bank; choices of equal
length rank in file order (the earlier one counts as the longer), so every question has exactly one
rank for its key. Then the totals per language over the chapters shown, with each rank's share.

Last, per language, how many per-choice notes (``why``) contain each template phrase (anywhere in the
note, English phrases compared case-insensitively). The phrases are the ``[templates]`` of
lessons/zh/glossary.toml (every string in that table, lists included) where it has one, otherwise a
built-in list.

Reads the TOML files directly (no Streamlit, no server). The fast-tier test tests/unit/test_quiz_bank.py
holds the banks to the limits these figures describe.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LESSONS = ROOT / "lessons"
LANGS = ("zh", "en")
CHAPTERS = tuple(range(1, 12))
RANKS = ("longest", "2nd", "3rd", "shortest")
FALLBACK_TEMPLATES = ("诱人之处在于", "所以很诱人", "所以容易这么想", "Tempting because")


def quiz_file(chapter: int, lang: str) -> Path:
    return LESSONS / lang / "quiz" / f"{chapter:02d}.toml"


def load_bank(chapter: int, lang: str) -> list[dict]:
    """The bank's ``[[question]]`` tables as written."""
    with quiz_file(chapter, lang).open("rb") as f:
        return tomllib.load(f).get("question", [])


def key_rank(choices: list[str], answer: int) -> int:
    """0 when the key is the longest choice, len(choices) - 1 when it is the shortest; ties in file order."""
    order = sorted(range(len(choices)), key=lambda i: (-len(choices[i]), i))
    return order.index(answer)


def rank_name(rank: int, n_choices: int) -> str:
    """The key's rank as one of RANKS; with other than four choices the last rank is still 'shortest'."""
    if rank == n_choices - 1:
        return "shortest"
    return RANKS[min(rank, len(RANKS) - 2)]


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return []


def template_phrases() -> tuple[str, ...]:
    """The glossary's template phrases, or the built-in list while there is no [templates] table."""
    glossary = LESSONS / "zh" / "glossary.toml"
    if glossary.exists():
        with glossary.open("rb") as f:
            phrases = [s.strip() for s in _strings(tomllib.load(f).get("templates", {})) if s.strip()]
        if phrases:
            return tuple(dict.fromkeys(phrases))
    return FALLBACK_TEMPLATES


def note_has(note: str, phrase: str) -> bool:
    return phrase.casefold() in note.casefold()


def chapter_row(chapter: int, lang: str) -> dict:
    bank = load_bank(chapter, lang)
    counts = dict.fromkeys(RANKS, 0)
    for q in bank:
        counts[rank_name(key_rank(q["choices"], q["answer"]), len(q["choices"]))] += 1
    transfer = sum(q.get("kind") == "transfer" for q in bank)
    return {"chapter": chapter, "lang": lang, "questions": len(bank), "transfer": transfer, **counts}


def template_counts(chapters, lang: str, phrases) -> dict[str, int]:
    notes = [w for ch in chapters for q in load_bank(ch, lang) for w in q.get("why", [])]
    return {p: sum(note_has(w, p) for w in notes) for p in phrases}


def parse_chapters(text: str) -> tuple[int, ...]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    bad = [c for c in out if c not in CHAPTERS]
    if bad:
        raise argparse.ArgumentTypeError(f"no chapter {bad}")
    return tuple(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapters", type=parse_chapters, default=CHAPTERS, help="e.g. 1-5 or 1,3,8-10")
    parser.add_argument("--lang", choices=LANGS, action="append", help="one language (default: both)")
    args = parser.parse_args(argv)
    langs = tuple(args.lang or LANGS)
    chapters = args.chapters

    head = f"{'ch':>3} {'lang':4} {'n':>3} {'transfer':>8} " + " ".join(f"{r:>8}" for r in RANKS)
    print("Key's length rank (characters; ties in file order)")
    print(head)
    totals = {}
    for lang in langs:
        total = {"questions": 0, "transfer": 0, **dict.fromkeys(RANKS, 0)}
        for ch in chapters:
            row = chapter_row(ch, lang)
            for k in total:
                total[k] += row[k]
            ranks = " ".join(f"{row[r]:>8}" for r in RANKS)
            print(f"{ch:>3} {lang:4} {row['questions']:>3} {row['transfer']:>8} {ranks}")
        totals[lang] = total
    span = (
        f"{chapters[0]}-{chapters[-1]}" if chapters == tuple(range(chapters[0], chapters[-1] + 1)) else "sel"
    )
    for lang, total in totals.items():
        n = total["questions"] or 1
        ranks = " ".join(f"{total[r]:>3} ({total[r] / n:4.0%})".rjust(8) for r in RANKS)
        print(f"all {lang:4} {total['questions']:>3} {total['transfer']:>8} {ranks}   (chapters {span})")

    phrases = template_phrases()
    print()
    print("Per-choice notes (why) containing a template phrase")
    for lang in langs:
        counts = template_counts(chapters, lang, phrases)
        notes = [w for ch in chapters for q in load_bank(ch, lang) for w in q.get("why", [])]
        anyp = sum(any(note_has(w, p) for p in phrases) for w in notes)
        shown = ", ".join(f"{p!r}: {c}" for p, c in counts.items() if c) or "none"
        print(f"{lang}: {anyp} of {len(notes)} notes; {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
