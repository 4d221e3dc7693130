"""ui/code_block.py: code drawn without Streamlit's syntax highlighter (no server, no browser)."""

import html
import re

import pytest

from triton_kitchen.core import lessons
from ui import code_block


def _text_of(block: str) -> str:
    """What the block's HTML shows: tags dropped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", block))


def test_split_keeps_prose_and_blocks_in_order_with_the_fence_s_first_word_as_language():
    body = "Before.\n\n```pbtxt mistake\nname: 1\n\ndims: [ 2 ]\n```\n\nMiddle.\n\n```\nplain\n```\n"
    assert code_block.split(body) == [
        ("Before.", None),
        ("name: 1\n\ndims: [ 2 ]", "pbtxt"),
        ("Middle.", None),
        ("plain", ""),
    ]
    assert code_block.split("No code here.") == [("No code here.", None)]


def test_a_block_shows_every_character_of_its_code_on_one_html_line():
    source = 'import x\n\nprint("a<b & c")  # <b>not bold</b>\nx = {1: [2]}\n'
    block = code_block.to_html(source, "python")
    assert "\n" not in block  # a blank line would end Markdown's HTML block
    assert _text_of(block.replace("&#10;", "\n")) == source
    assert "<b>" not in block and "&lt;b&gt;" in block
    assert 'color: #1c83e1">import<' in block and 'color: #09ab3b">&quot;a&lt;b &amp; c&quot;<' in block
    plain = code_block.to_html("a <tag>\n", "pbtxt")
    assert "<span" not in plain and _text_of(plain.replace("&#10;", "\n")) == "a <tag>\n"
    assert "white-space: pre-wrap" in code_block.to_html("x", wrap_lines=True)


def test_code_that_does_not_tokenize_is_shown_plain():
    block = code_block.to_html('s = """never closed\n', "python")
    assert "<span" not in block and _text_of(block.replace("&#10;", "\n")) == 's = """never closed\n'


@pytest.mark.parametrize("lang", lessons.LANGS)
def test_every_lesson_section_s_blocks_are_found_and_its_prose_kept(lang):
    """Each fence of the lessons is one block; prose and code together hold every non-blank line of the text."""
    for chapter in lessons.CHAPTERS:
        for key, text in lessons.load_lesson(chapter, lang).sections.items():
            body = lessons.split_heading(text)[1]
            parts = code_block.split(body)
            fences = len(re.findall(r"^```", body, re.MULTILINE))
            assert 2 * sum(1 for _, lg in parts if lg is not None) == fences, (chapter, key)
            kept = "\n".join(t for t, _ in parts)
            lines = [ln.strip() for ln in body.splitlines() if ln.strip() and not ln.startswith("```")]
            assert all(ln in kept for ln in lines), (chapter, key)
