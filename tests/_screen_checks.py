"""What is wrong on a page, from the text it shows: the checks the browser tests and the AppTest page
reader share (tests/browser/test_browser.py, tests/live/test_pages_in_apptest.py).

A page's screen is read into a dict ``{"texts", "errors", "exceptions", "details", "broken"}`` (the browser's
BROWSER_READ, or :func:`apptest_screen` for an AppTest run); :func:`problems_on_screen` finds on it
- a Streamlit exception, an error box the page did not mean (MEANT_ERRORS), an image that did not load;
- the app's generic "something went wrong" message (``error.unexpected``, in either language);
- an untranslated string: on a zh page, an English ui.toml string that zh translates differently; on an
  en page, Chinese text; on any page, a raw i18n key such as ``ch4.send``.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from google.protobuf.message import Message

ROOT = Path(__file__).resolve().parent.parent
LANGS = ("zh", "en")


# -- the UI strings ----------------------------------------------------------------------------------------
def _flatten(table: dict, prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            out.update(_flatten(value, f"{prefix}{key}."))
        elif isinstance(value, str):
            out[f"{prefix}{key}"] = value
    return out


UI = {
    lang: _flatten(tomllib.loads((ROOT / "lessons" / lang / "ui.toml").read_text("utf-8"))) for lang in LANGS
}
SECTIONS = sorted({key.split(".")[0] for key in UI["en"]})
_ZH_CORPUS = "\n".join(
    [*UI["zh"].values()]
    + [
        p.read_text("utf-8")
        for p in sorted((ROOT / "lessons" / "zh").rglob("*"))
        if p.suffix in (".md", ".toml")
    ]
)
_MARKUP = re.compile(r"\{[^{}]*\}|\*\*|`|\n|\[|\]\([^)]*\)")  # placeholders and markdown split a template
_LETTERS = re.compile(r"[A-Za-z]{2,}")


def norm(text: str) -> str:
    return " ".join(text.replace("*", "").replace("`", "").split())


def _template_re(template: str) -> re.Pattern:
    """A rendered ui.toml string: its literal parts in order, anything where a placeholder was."""
    parts = [re.escape(norm(p)) for p in re.split(r"\{[^{}]*\}", template)]
    return re.compile(r".*?".join(parts), re.S)


def _english_only() -> tuple[set[str], set[str]]:
    """English strings that must not appear on a zh page: whole labels (exact text of an element), and
    phrases of three or more words (anywhere in the text). Only where zh says something else."""
    labels, phrases = set(), set()
    zh_values = {norm(v) for v in UI["zh"].values()}
    for key, en in UI["en"].items():
        if norm(en) == norm(UI["zh"].get(key, "")):
            continue
        # a whole label: words with a space, or one capitalised word ("Stop"); a lowercase word alone
        # ("ensemble", "requests") is as often a technical term inside Chinese text
        label = norm(en)
        if (
            "{" not in en
            and (" " in label or label[:1].isupper())
            and sum(c.isalpha() for c in label) >= 3
            and label not in zh_values
        ):
            labels.add(label)
        for part in _MARKUP.split(en):
            part = norm(part.strip(" .,:;·—–-()"))
            if len(_LETTERS.findall(part)) >= 3 and part not in _ZH_CORPUS:
                phrases.add(part)
    return labels, phrases


EN_LABELS, EN_PHRASES = _english_only()
RAW_KEY = re.compile(
    r"(?<![\w./-])(?:" + "|".join(map(re.escape, SECTIONS)) + r")\.[a-z][a-z0-9_-]*(?:\.[a-z0-9_-]+)*"
)
FILE_SUFFIXES = {"py", "pbtxt", "json", "log", "txt", "png", "jpg", "jpeg", "onnx", "md", "toml", "yml", "yaml",
                 "csv", "bin", "proto", "sh", "html", "previous"}  # fmt: skip
CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
GENERIC = {lang: norm(UI[lang]["error.unexpected"]) for lang in LANGS}

INSIDE_BOXES = ("flow_inside", "ch2_inside", "ch3_par", "ch3_casc")  # ui/inside_dag.inside_view's keys

# Error boxes a page means to show, once the widget that asks for them was used on that page:
# (page slug or "*", widget key prefix) -> ui.toml keys of the messages allowed in an error box.
MEANT_ERRORS: dict[tuple[str, str], tuple[str, ...]] = {
    ("ch2", "ch2_swap"): ("ch2.invalid",),  # the editor's verdict on the swapped input_map
    # chapter 7's "break it" options: each mistake's own translated error
    ("ch7", "ch7_mistake"): (
        "error.wrong_tensor_name",
        "error.wrong_dtype",
        "error.wrong_shape",
        "error.nothing_listening",  # the "dead server" mistake: a closed port, on purpose
    ),  # fmt: skip
    ("*", "tk_quiz_"): ("quiz.wrong",),  # a wrong quiz answer
    # chapter 9's ensemble with a stateful step: learner B's wrong correlation ID, refused on purpose
    ("ch9", "ch9_seqens_mistake"): ("ch9.seqens_said_wrong_id", "ch9.seqens_said_zero_id"),
    # the break-it lab: each mistake's real error, shown on purpose beside its fix
    ("lab-break", "break_"): ("lab_break.raised",),
    # one request inside an ensemble, sent a text file as the photo: the failing step, on purpose
    **{
        ("*", f"{box}_send"): ("inside.failed", "inside.failed_undecided", "inside.failed_nothing_ran")
        for box in INSIDE_BOXES
    },
}


# -- a page in Chromium ------------------------------------------------------------------------------------
# What the checks read, in one round trip: exception boxes, error boxes, the text outside code blocks
# (sidebar included, the language switch excluded), and the technical details under error messages.
BROWSER_READ = """() => {
  const roots = [...document.querySelectorAll('[data-testid=stMain], [data-testid=stSidebar]')];
  // code, the language switch (both languages by design), and Streamlit's own widget internals, whose
  // words ("Upload", "Browse files") the app cannot set
  const skip = 'pre, code, .tk-code, textarea, script, style, [data-testid=stIconMaterial], .st-key-tk_lang_switch, '
    + '[data-testid=stFileUploaderDropzone], [data-testid=stCameraInput] button, [data-testid=stCameraInputWebcamComponent]';
  const texts = [];
  for (const root of roots) {
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      const el = n.parentElement;
      if (!el || el.closest(skip)) continue;
      const s = n.nodeValue.trim();
      if (s) texts.push(s);
    }
  }
  const all = q => [...document.querySelectorAll(q)];
  return {
    exceptions: all('[data-testid=stException]').map(e => e.innerText),
    errors: all('[data-testid=stAlertContentError]').map(e => e.innerText),
    texts,
    details: all('[data-testid=stExpander] pre').map(e => e.textContent).slice(-3),
    broken: [...document.images].filter(i => i.complete && i.naturalWidth === 0).map(i => i.src),
  };
}"""


def problems_on_screen(seen: dict, lang: str, meant=lambda text: False) -> list[str]:
    """What is wrong on a page, from what BROWSER_READ (or :func:`apptest_screen`) saw there; ``meant(text)``: an error box the page means."""
    found = [f"image did not load: {src}" for src in seen.get("broken", [])]
    for text in seen["exceptions"]:
        found.append(f"Streamlit exception: {norm(text)[:500]}")
    for text in seen["errors"]:
        if not meant(text):
            found.append(f"error box: {norm(text)[:300]}")
    joined = norm(" ".join(seen["texts"]))
    for generic_lang in LANGS:
        if GENERIC[generic_lang] in joined:
            detail = norm(seen["details"][-1])[:400] if seen["details"] else ""
            found.append(f"generic error ({generic_lang}): {detail}")
    for match in RAW_KEY.finditer(" ".join(seen["texts"])):
        key = match.group(0).rstrip(".")
        if key in UI["en"] or key.rsplit(".", 1)[-1] not in FILE_SUFFIXES:
            found.append(f"raw i18n key: {key}")
    if lang == "zh":
        for text in seen["texts"]:
            if norm(text) in EN_LABELS:
                found.append(f"English on a zh page: {norm(text)!r}")
        found += [f"English on a zh page: {p!r}" for p in sorted(EN_PHRASES) if p in joined]
    else:
        for text in seen["texts"]:
            if CJK.search(text):
                found.append(f"Chinese on an en page: {norm(text)[:120]!r}")
    return list(dict.fromkeys(found))


def meant_error(text: str, lang: str, slug: str, used: set[str]) -> bool:
    """Is ``text`` (an error box) one of MEANT_ERRORS for this page, once the widgets in ``used`` were pressed?"""
    keys = [
        key
        for (page, prefix), allowed in MEANT_ERRORS.items()
        if page in ("*", slug) and any(k.startswith(prefix) for k in used)
        for key in allowed
    ]
    text = norm(text)
    return any(_template_re(UI[lang][k]).search(text) for k in keys if k in UI[lang])


# -- an AppTest run's screen --------------------------------------------------------------------------------------
# The proto fields a reader sees as text (a widget's label, options and tooltip, a box's label, a chart's spec,
# a table's column settings); not ids, icons, keys, or what a reader typed (a text box's value)
_SHOWN_FIELDS = frozenset(
    {
        "body",
        "label",
        "options",
        "content",
        "help",
        "text",
        "caption",
        "placeholder",
        "delta",
        "spec",
        "columns",
    }
)
_JSON_FIELDS = frozenset({"spec", "columns"})  # plotly's and vega's specs, a table's column settings: JSON
_NOT_READ = frozenset({"code", "json"})  # code, as in the browser (pre, code): skipped
_BOTH_LANGUAGES = ("tk_lang_switch", "tk_present_lang")  # the language switches: 中文 | English, by design
# code inside Markdown, which the browser skips too: fenced and inline code, and ui/code_block.py's blocks
_CODE_SPANS = re.compile(r"```.*?```|`[^`\n]*`|<div class=\"tk-code\"[^>]*>.*?</div>", re.S)
# a line break, or DOT's written one ("\\n" in a label): each line a text of its own, as the browser reads it
_LINES = re.compile(r"\n|\\n")


def _json_strings(value) -> list[str]:
    """Every string in a JSON document (json.dumps writes Chinese as \\u escapes: read it decoded)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _json_strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _json_strings(v)]
    return []


def _shown_strings(message) -> list[str]:
    found = []
    for field_desc, value in message.ListFields():
        values = value if field_desc.label == field_desc.LABEL_REPEATED else [value]
        for v in values:
            if isinstance(v, Message):
                found += _shown_strings(v)
            elif isinstance(v, str) and field_desc.name in _SHOWN_FIELDS:
                if field_desc.name in _JSON_FIELDS:
                    try:
                        found += _json_strings(json.loads(v))
                        continue
                    except ValueError:  # a graphviz chart's spec is DOT, not JSON
                        pass
                found += _LINES.split(_CODE_SPANS.sub(" ", v))
    return found


def apptest_screen(at) -> dict:
    """What an AppTest run shows, read as the browser's BROWSER_READ reads a page (main area and sidebar): texts (each
    line apart), error boxes, exceptions, a table's column names, and the code under expanders (an unexpected
    error's details)."""
    screen: dict = {"texts": [], "errors": [], "exceptions": [], "details": [], "broken": []}

    def walk(node, in_expander: bool) -> None:
        kind, proto = node.type, getattr(node, "proto", None)
        if kind == "exception":
            screen["exceptions"].append(f"{proto.message}\n" + "\n".join(proto.stack_trace))
        elif kind == "code" and in_expander:
            screen["details"].append(node.value)
        elif (
            proto is not None
            and kind not in _NOT_READ
            and not getattr(proto, "id", "").endswith(_BOTH_LANGUAGES)
        ):
            texts = [s for s in _shown_strings(proto) if s.strip()]
            if kind in ("arrow_data_frame", "arrow_table", "dataframe", "table"):
                texts += [str(c) for c in getattr(node.value, "columns", [])]
            screen["texts"] += texts
            if kind == "error":
                screen["errors"].append("\n".join(texts))
        for child in getattr(node, "children", {}).values():
            walk(child, in_expander or kind == "expander")

    for root in (at.main, at.sidebar):
        walk(root, False)
    screen["details"] = screen["details"][-3:]
    return screen
