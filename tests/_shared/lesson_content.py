"""Helpers shared by tests/unit/test_lesson_content.py and tests/live/test_lesson_content_live.py."""

from __future__ import annotations

import re

from triton_kitchen.core import lessons as L

FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def normalized(text: str) -> str:
    return " ".join(text.split())


def lesson_body(chapter: int, lang: str) -> str:
    return L.load_lesson(chapter, lang).body


def lesson_prose(chapter: int, lang: str) -> str:
    """The lesson without its code blocks, whitespace collapsed (figures are read from here)."""
    return normalized(FENCE.sub(" ", lesson_body(chapter, lang)))


def fences(text: str) -> list[tuple[str, str, str, int]]:
    """(language, role, code, end offset) of each fenced block, in order."""
    out = []
    for m in FENCE.finditer(text):
        words = m.group(1).split()
        out.append((words[0] if words else "", " ".join(words[1:]), m.group(2), m.end()))
    return out
