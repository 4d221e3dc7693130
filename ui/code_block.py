"""Code blocks drawn without Streamlit's syntax highlighter, for what a page shows on its first paint.

A fenced block in ``st.markdown`` or an ``st.code`` makes a fresh tab load and run Streamlit's highlighter
(StreamlitSyntaxHighlighter, 1.5 MB of JavaScript with every language's grammar), even from the browser's cache:
on this 2-core machine it was the largest single cost of the pages that show code at once (benchmarks/page_timing.py;
chapters 1, 2, 7 and 9). Here a block is a ``<div>`` styled as Streamlit's code block (its font, size, background,
padding and corners) and Python is coloured on the server with Streamlit's light-theme colours; other languages
(pbtxt, text) are plain, as Streamlit's highlighter draws them. Without the copy button a highlighted block has.
"""

from __future__ import annotations

import builtins
import html
import io
import keyword
import re
import tokenize

import streamlit as st

# a fenced block on its own lines: ```lang [more words] ... ``` (the lessons' "```pbtxt mistake")
_FENCE = re.compile(r"^```([\w+-]*)[^\n`]*\n(.*?)\n?^```[ \t]*$", re.MULTILINE | re.DOTALL)
# Streamlit's code block (light theme): background #f8f9fb over white, Source Code Pro at 0.875rem, 1rem padding
_STYLE = (
    "font-family: 'Source Code Pro', monospace; font-size: 0.875rem; line-height: 1.6;"
    " background: rgba(151, 166, 195, 0.08); border-radius: 0.5rem; padding: 1rem;"
    " overflow-x: auto; margin: 0 0 {below} 0; white-space: {space};"
)
# the colours Streamlit's highlighter gives Python (sampled from its rendering)
_BLUE, _GREEN, _ORANGE, _GREY = "#1c83e1", "#09ab3b", "#ed6f13", "#808495"
_BUILTINS = frozenset(dir(builtins))
_PUNCTUATION = frozenset("()[]{},.:;")


def split(markdown: str) -> list[tuple[str, str | None]]:
    """``markdown`` as its prose and fenced code blocks in order: (text, None) for prose (stripped, empty parts
    left out), (code, language) for a block ("" when the fence names none)."""
    parts: list[tuple[str, str | None]] = []
    at = 0
    for m in _FENCE.finditer(markdown):
        if prose := markdown[at : m.start()].strip():
            parts.append((prose, None))
        parts.append((m.group(2), m.group(1)))
        at = m.end()
    if prose := markdown[at:].strip():
        parts.append((prose, None))
    return parts


# what :func:`code` draws as Streamlit does: Python (coloured here), and what its highlighter leaves plain
LIGHT = frozenset({"python", "py", "pbtxt", "text", ""})


def markdown(body: str) -> None:
    """``st.markdown(body)``, its fenced blocks in the :data:`LIGHT` languages drawn by :func:`code` (no
    highlighter to load); a block in another language (json, bash, ...) keeps Streamlit's colours."""
    parts = split(body)
    if all(lang is None or lang.lower() not in LIGHT for _, lang in parts):
        st.markdown(body)
        return
    for text, lang in parts:
        if lang is None:
            st.markdown(text)
        elif lang.lower() in LIGHT:
            # a block inside Markdown keeps 1rem below it, before the next paragraph (measured: 22 px)
            st.markdown(to_html(text, lang, below="1rem"), unsafe_allow_html=True)
        else:
            st.markdown(f"```{lang}\n{text}\n```")


def code(text: str, language: str | None = None, wrap_lines: bool = False) -> None:
    """``st.code(text, language, wrap_lines=...)`` as it looks, without the highlighter (and its copy button)."""
    st.markdown(to_html(text, language, wrap_lines), unsafe_allow_html=True)


def to_html(text: str, language: str | None = None, wrap_lines: bool = False, below: str = "0") -> str:
    """The block's HTML on one line: every character of ``text`` escaped, its line breaks as ``&#10;`` (in
    Markdown a blank line would end the HTML block and turn the rest into text); Python's tokens coloured."""
    inner = _python(text) if (language or "").lower() in ("python", "py") else html.escape(text)
    style = _STYLE.format(space="pre-wrap" if wrap_lines else "pre", below=below)
    inner = inner.replace("\r\n", "\n").replace("\n", "&#10;")
    return f'<div class="tk-code" style="{style}">{inner}</div>'


def _span(text: str, colour: str, italic: bool = False) -> str:
    slant = "; font-style: italic" if italic else ""
    return f'<span style="color: {colour}{slant}">{html.escape(text)}</span>'


def _python(text: str) -> str:
    """Python source as HTML: keywords and builtins blue, strings green, operators orange, comments grey."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return html.escape(text)
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    out: list[str] = []
    at = 0
    for tok in tokens:
        if tok.type in (tokenize.ENDMARKER, tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT):
            continue
        (srow, scol), (erow, ecol) = tok.start, tok.end
        start, end = offsets[srow - 1] + scol, offsets[erow - 1] + ecol
        out.append(html.escape(text[at:start]))
        piece = text[start:end]
        if tok.type == tokenize.NAME and (keyword.iskeyword(piece) or piece in _BUILTINS):
            out.append(_span(piece, _BLUE))
        elif tok.type == tokenize.STRING:
            out.append(_span(piece, _GREEN))
        elif tok.type == tokenize.COMMENT:
            out.append(_span(piece, _GREY, italic=True))
        elif tok.type == tokenize.OP and piece not in _PUNCTUATION:
            out.append(_span(piece, _ORANGE))
        else:
            out.append(html.escape(piece))
        at = end
    out.append(html.escape(text[at:]))
    return "".join(out)
