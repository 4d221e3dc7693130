"""Chinese Markdown that renders right in a browser.

Two things go wrong when Markdown written in Chinese reaches Chromium through Streamlit:

- **Soft line breaks.** A line break inside a paragraph is whitespace to Markdown; Chromium shows it
  as a visible space, also between two Chinese characters (Firefox drops it there). The lessons
  wrap long lines mid-sentence, so :func:`join_soft_breaks` joins such a break when both sides are
  Chinese, or when either side is full-width punctuation (which never takes a space). A break
  between a Chinese character and a Latin word, a number or code stays: the lessons always put a
  space there, and that is how the break renders.
- **Bold next to Chinese punctuation.** CommonMark's flanking rules decide whether ``**`` opens or
  closes emphasis from the characters around it; Chinese ideographs count as letters, Chinese
  punctuation as punctuation, so ``**……分支。**只要`` stays literal. :func:`fix_emphasis` moves
  the punctuation next to such a delimiter to the other side of it (``**……分支**。只要``), or,
  where that character is code (a backtick), puts a space outside the delimiter. It also drops the
  space an English habit puts beside a delimiter in Chinese text (``**规则：** 无论``), which
  shows as a gap after a full-width mark.

:func:`normalize` does both, outside fenced code and inline code. Pure functions, no Streamlit.
"""

from __future__ import annotations

import re
import unicodedata

# regex character classes
IDEOGRAPHS = (
    "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff"  # kana, CJK ideographs
)
FULL_WIDTH = "\u3001-\u303f\uff01-\uffef"  # CJK punctuation (。、「」) and full-width forms (，：（）！？)
SHARED_PUNCT = "\u2014\u2026\u201c\u201d\u2018\u2019"  # — … “ ” ‘ ’: Chinese text uses them, so does English
_IDEOGRAPH_RE = re.compile(f"[{IDEOGRAPHS}]")
_WIDE_PUNCT_RE = re.compile(f"[{FULL_WIDTH}{SHARED_PUNCT}]")


def is_ideograph(ch: str) -> bool:
    """A Chinese (or Japanese) character: a letter to Markdown, no space next to another one."""
    return bool(_IDEOGRAPH_RE.fullmatch(ch))


def is_wide_punct(ch: str) -> bool:
    """Punctuation as Chinese text has it (full-width marks, dashes, ellipsis, curly quotes): a line break
    next to it is no space."""
    return bool(_WIDE_PUNCT_RE.fullmatch(ch))


def is_cjk(ch: str) -> bool:
    return is_ideograph(ch) or is_wide_punct(ch)


# -- soft line breaks ------------------------------------------------------------------------------

_FENCE_RE = re.compile(r"^\s*(`{3,}|~{3,})")
_HEADING_RE = re.compile(r"^\s*#{1,6}(\s|$)")
_LIST_ITEM_RE = re.compile(r"^\s*([-+*]|\d{1,9}[.)])(\s|$)")
_RULE_RE = re.compile(r"^\s*([-*_=])(\s*\1){2,}\s*$")  # thematic break or setext underline


def _opaque(line: str) -> bool:
    """A line never joined to a neighbour: blank, heading, table row, HTML, quote, rule, fence."""
    s = line.strip()
    return (
        not s
        or bool(_HEADING_RE.match(line))
        or "|" in s  # a table row (with or without its outer pipes)
        or s.startswith(("<", ">"))
        or bool(_RULE_RE.match(line))
        or bool(_FENCE_RE.match(line))
    )


def _hard_break(line: str) -> bool:
    return line.endswith("  ") or line.rstrip(" ").endswith("\\")


def _edge(text: str, last: bool) -> str:
    """The first (or last) visible character of a line, looking past emphasis markers."""
    s = text.strip().rstrip("*~") if last else text.strip().lstrip("*~")
    return (s[-1] if last else s[0]) if s else ""


def joins(left: str, right: str) -> bool:
    """Whether a soft break between two characters should vanish instead of rendering as a space."""
    return is_wide_punct(left) or is_wide_punct(right) or (is_ideograph(left) and is_ideograph(right))


def join_soft_breaks(markdown: str) -> str:
    """Join the lines of a paragraph where the break between them would show as a stray space in
    Chinese text. Fenced code, headings, tables, HTML, list item starts, blank lines and hard breaks
    are left as they are."""
    lines = markdown.split("\n")
    out: list[str] = []
    fence: str | None = None
    joinable = False  # whether the last line of `out` may take the next line
    for line in lines:
        if fence is not None:
            out.append(line)
            s = line.strip()
            if s.startswith(fence) and not s.lstrip(fence[0]):
                fence = None
            joinable = False
            continue
        m = _FENCE_RE.match(line)
        if m:
            fence = m.group(1)
            out.append(line)
            joinable = False
            continue
        joined = None
        if (
            joinable
            and not _opaque(line)
            and not _LIST_ITEM_RE.match(line)
            and joins(_edge(out[-1], last=True), _edge(line, last=False))
        ):
            joined = _join(out[-1].rstrip(), line.lstrip())
        if joined is None:
            out.append(line)
        else:
            out[-1] = joined
        joinable = not _opaque(out[-1]) and not _hard_break(out[-1])
    return "\n".join(out)


def _join(left: str, right: str) -> str | None:
    """Two lines as one; None where that would merge two emphasis delimiters into one run
    (``…。**`` + ``*教程说：*``) and no punctuation can go between them."""
    if not (left.endswith("*") and right.startswith("*")):
        return left + right
    m = re.search(r"([^*])(\*+)$", left)
    if m and is_wide_punct(m.group(1)):  # 哪边。** + *教程 -> 哪边**。*教程
        return left[: m.start()] + m.group(2) + m.group(1) + right
    m = re.match(r"(\*+)([^*])", right)
    if m and is_wide_punct(m.group(2)):  # 的** + *「引 -> 的**「*引
        return left + m.group(2) + m.group(1) + right[m.end() :]
    return None


# -- emphasis next to Chinese punctuation ----------------------------------------------------------

_PLACEHOLDER_RE = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_]\w*|\[\w+\])*(![rsa])?(:[^{}]*)?\}")
_WS, _PUNCT, _OTHER = "whitespace", "punctuation", "other"


def _kind(ch: str) -> str:
    """CommonMark's classes (as micromark, Streamlit's parser, has them: punctuation is P* or S*)."""
    if not ch or ch.isspace():
        return _WS
    return _PUNCT if unicodedata.category(ch)[0] in "PS" else _OTHER


def _code_spans(text: str) -> list[tuple[int, int]]:
    """[start, end) of each inline code span: a backtick run up to the next run of the same length."""
    spans = []
    i = 0
    while i < len(text):
        if text[i] != "`" or (i and text[i - 1] == "\\"):
            i += 1
            continue
        j = i
        while j < len(text) and text[j] == "`":
            j += 1
        n = j - i
        k = j
        end = None
        while k < len(text):
            if text[k] == "`":
                run = k
                while k < len(text) and text[k] == "`":
                    k += 1
                if k - run == n:
                    end = k
                    break
            else:
                k += 1
        if end is None:
            i = j  # an unmatched run is literal
        else:
            spans.append((i, end))
            i = end
    return spans


# A space beside an emphasis delimiter between two Chinese characters (`**二进制** 或`), or after a full-width
# mark (`**规则：** 无论`, `*事实：* Triton`): an English habit that shows as a gap in Chinese (the lessons
# never put a space next to a full-width mark). Curly quotes and dashes keep theirs (`或 “unused”`).
_CJK = IDEOGRAPHS + FULL_WIDTH
_SPACE_AT_DELIMITER_RE = re.compile(
    f"(?<=[{FULL_WIDTH}])(\\*{{1,3}}) +(?=\\S)"
    f"|(?<=[{_CJK}])(\\*{{1,3}}) +(?=[{_CJK}])"
    f"|(?<=[{_CJK}]) +(\\*{{1,3}})(?=[{_CJK}])"
)


def _drop_spaces_at_delimiters(text: str) -> str:
    code = _code_spans(text)

    def keep_delimiter(m: re.Match) -> str:
        if any(a <= m.start() < b for a, b in code):
            return m.group(0)
        return next(g for g in m.groups() if g)

    return _SPACE_AT_DELIMITER_RE.sub(keep_delimiter, text)


_NEVER_MOVED = frozenset("`*\\{}")  # code, other delimiters, escapes, template fields


def _fix_chunk(text: str, template: bool) -> str:
    """Fix the ``*``/``**`` pairs of one block (a paragraph, a list item start, a table row)."""
    text = _drop_spaces_at_delimiters(text)
    code = _code_spans(text)
    holes = [m.span() for m in _PLACEHOLDER_RE.finditer(text)] if template else []

    def inside(i: int, spans: list[tuple[int, int]]) -> bool:
        return any(a <= i < b for a, b in spans)

    def kind_at(s: str, i: int) -> str:
        if i < 0 or i >= len(s):
            return _WS
        return _OTHER if inside(i, holes) else _kind(s[i])

    runs: dict[int, list[int]] = {1: [], 2: []}
    i = 0
    while i < len(text):
        if text[i] != "*" or inside(i, code) or inside(i, holes) or (i and text[i - 1] == "\\"):
            i += 1
            continue
        j = i
        while j < len(text) and text[j] == "*":
            j += 1
        if j - i in runs and not (kind_at(text, i - 1) == _WS and kind_at(text, j) == _WS):
            runs[j - i].append(i)  # a literal '*' between spaces (or a list marker) is no delimiter
        i = j

    fixes: list[tuple[int, str, int]] = []  # (position, "open"|"close", run length)
    for n, starts in runs.items():
        if len(starts) % 2:
            continue  # unbalanced: do not guess which one is meant
        for o, c in zip(starts[::2], starts[1::2], strict=True):
            fixes.append((c, "close", n))
            fixes.append((o, "open", n))
    s = text
    for pos, role, n in sorted(fixes, reverse=True):
        before, after = kind_at(s, pos - 1), kind_at(s, pos + n)
        if role == "open":
            # left-flanking: not followed by whitespace; if followed by punctuation, preceded by whitespace/punct
            if after != _PUNCT or before != _OTHER:
                continue
            ch = s[pos + n]
            if ch not in _NEVER_MOVED and not inside(pos + n, holes) and kind_at(s, pos + n + 1) != _WS:
                s = s[:pos] + ch + s[pos : pos + n] + s[pos + n + 1 :]
            else:
                s = s[:pos] + " " + s[pos:]
        else:
            # right-flanking: not preceded by whitespace; if preceded by punctuation, followed by whitespace/punct
            if before != _PUNCT or after != _OTHER:
                continue
            ch = s[pos - 1]
            if ch not in _NEVER_MOVED and not inside(pos - 1, holes) and kind_at(s, pos - 2) != _WS:
                s = s[: pos - 1] + s[pos : pos + n] + ch + s[pos + n :]
            else:
                s = s[: pos + n] + " " + s[pos + n :]
    return s


def fix_emphasis(markdown: str, template: bool = False) -> str:
    """Make every ``*…*`` and ``**…**`` pair of each block render, outside code. ``template``: the
    text is a ``str.format`` template, whose ``{name}`` fields count as words and stay whole."""
    out: list[str] = []
    chunk: list[str] = []
    fence: str | None = None

    def flush() -> None:
        if chunk:
            out.extend(_fix_chunk("\n".join(chunk), template).split("\n"))
            chunk.clear()

    for line in markdown.split("\n"):
        if fence is not None:
            out.append(line)
            s = line.strip()
            if s.startswith(fence) and not s.lstrip(fence[0]):
                fence = None
            continue
        m = _FENCE_RE.match(line)
        if m:
            flush()
            fence = m.group(1)
            out.append(line)
            continue
        if _opaque(line) or _LIST_ITEM_RE.match(line):
            flush()
        if not line.strip():
            out.append(line)
            continue
        chunk.append(line)
        if _opaque(line):
            flush()
    flush()
    return "\n".join(out)


def normalize(markdown: str, template: bool = False) -> str:
    """Chinese Markdown as a browser should get it: soft breaks inside Chinese text joined, emphasis
    next to Chinese punctuation made to render. Text without such spots comes back unchanged."""
    return fix_emphasis(join_soft_breaks(markdown), template=template)


def normalize_tree(value, template: bool = False):
    """:func:`normalize` every string in nested dicts and lists (a parsed TOML file)."""
    if isinstance(value, str):
        return normalize(value, template=template)
    if isinstance(value, dict):
        return {k: normalize_tree(v, template) for k, v in value.items()}
    if isinstance(value, list):
        return [normalize_tree(v, template) for v in value]
    return value
