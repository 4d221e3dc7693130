"""Helpers shared by tests/unit/test_handouts.py and tests/live/test_handouts_live.py."""

from __future__ import annotations

import html
import re

from markdown_it import MarkdownIt

_MD = MarkdownIt("commonmark")


def text_of(document: str) -> str:
    """The words a reader sees: tags dropped, entities decoded, whitespace squeezed."""
    body = re.sub(r"<style>.*?</style>|<title>.*?</title>", " ", document, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body))).strip()


def shown(markdown: str) -> str:
    """How a line of the quiz bank reads once rendered (backticks and stars gone)."""
    return text_of(_MD.renderInline(markdown))
