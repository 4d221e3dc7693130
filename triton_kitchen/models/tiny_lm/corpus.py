"""The language model's training text: the course's own lessons and quiz banks, in Chinese and English.

``build_corpus()`` reads ``lessons/{zh,en}/*.md`` (Markdown turned into plain text: front matter reduced to
the title and summary, HTML comments and fenced code blocks left out, headings, emphasis, links, tables and
list markers unwrapped) and ``lessons/{zh,en}/quiz/*.toml`` (each question's prompt, choices, explanation and
the why of every choice), one document per file. ``corpus_tokens()`` joins the documents as bytes, each
between ``BOS`` and ``EOS``. Nothing is downloaded: the text ships with the repository.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from triton_kitchen.models.tiny_lm.tokenizer import BOS, EOS

ROOT = Path(__file__).resolve().parents[3]
LESSONS = ROOT / "lessons"
LANGS = ("zh", "en")

_COMMENT = re.compile(r"<!--.*?-->", re.S)
_FENCE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$", re.S | re.M)
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_BOLD = re.compile(r"(\*\*|__)(.+?)\1")
_ITALIC = re.compile(r"(?<![\w*])\*(?![\s*])(.+?)(?<![\s*])\*(?![\w*])")
_CODE = re.compile(r"`+([^`]*)`+")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_LIST = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+")


@dataclass(frozen=True)
class Document:
    source: str  # path relative to the repository root
    text: str


def markdown_to_text(md: str) -> str:
    """Plain text of one lesson (see the module's docstring for what is kept)."""
    head = ""
    if md.startswith("---\n"):
        end = md.find("\n---", 4)
        if end > 0:
            meta = md[4:end]
            md = md[end + 4 :]
            fields = dict(re.findall(r"^(title|summary):\s*(.*)$", meta, re.M))
            head = "\n\n".join(v.strip().strip("\"'") for k, v in fields.items() if v.strip()) + "\n\n"
    md = _COMMENT.sub("", md)
    md = _FENCE.sub("", md)
    lines = []
    for line in md.splitlines():
        if _TABLE_RULE.match(line):
            continue
        line = line.rstrip()
        line = re.sub(r"^#{1,6}\s+", "", line)
        line = re.sub(r"^\s*>\s?", "", line)
        if line.lstrip().startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            line = " · ".join(c for c in cells if c)
        line = _LIST.sub(r"\1", line)
        line = _IMAGE.sub(r"\1", line)
        line = _LINK.sub(r"\1", line)
        line = _CODE.sub(r"\1", line)
        line = _BOLD.sub(r"\2", line)
        line = _ITALIC.sub(r"\1", line)
        lines.append(line.strip())
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return head + text + "\n"


def quiz_to_text(toml_text: str) -> str:
    """Plain text of one quiz bank: per question its prompt, choices, explanation and why lines."""
    bank = tomllib.loads(toml_text)
    parts = []
    for q in bank.get("question", []):
        block = [q.get("prompt", "")]
        block += list(q.get("choices", []))
        block.append(q.get("explanation", ""))
        block += list(q.get("why", []))
        parts.append("\n".join(_CODE.sub(r"\1", s).strip() for s in block if s and s.strip()))
    return "\n\n".join(parts) + "\n"


def documents(root: Path = LESSONS, quizzes: bool = True) -> list[Document]:
    docs = []
    for lang in LANGS:
        for path in sorted((root / lang).glob("*.md")):
            docs.append(
                Document(path.relative_to(root.parent).as_posix(), markdown_to_text(path.read_text("utf-8")))
            )
    if quizzes:
        for lang in LANGS:
            for path in sorted((root / lang / "quiz").glob("*.toml")):
                docs.append(
                    Document(path.relative_to(root.parent).as_posix(), quiz_to_text(path.read_text("utf-8")))
                )
    return docs


def build_corpus(root: Path = LESSONS, quizzes: bool = True) -> str:
    """All documents' text, joined by blank lines (the text the words of a generation are looked up in)."""
    return "\n\n".join(d.text for d in documents(root, quizzes))


def corpus_tokens(
    root: Path = LESSONS, quizzes: bool = True, docs: list[Document] | None = None
) -> np.ndarray:
    """The training stream: ``BOS`` + the UTF-8 bytes + ``EOS`` for each document, as uint16 ids."""
    out: list[int] = []
    for d in documents(root, quizzes) if docs is None else docs:
        out.append(BOS)
        out.extend(d.text.encode("utf-8"))
        out.append(EOS)
    return np.asarray(out, dtype=np.uint16)


def tokens_sha256(tokens: np.ndarray) -> str:
    return hashlib.sha256(np.asarray(tokens, dtype=np.uint16).tobytes()).hexdigest()


def corpus_sha256(root: Path = LESSONS, quizzes: bool = True) -> str:
    return tokens_sha256(corpus_tokens(root, quizzes))
