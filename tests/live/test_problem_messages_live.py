"""The checker's explanations: both languages from the string tables, steps counted from 1, the
"is the map reversed?" hint only where swapping helps, and the ch2 caption naming the diagram's
real colours.

Library tests need no server; the AppTest ones use the session's real Triton.

The tests of this topic that need no server, app or browser: tests/unit/test_problem_messages.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import switch_page
from streamlit.testing.v1 import AppTest

from triton_kitchen.core import lessons
from triton_kitchen.tools import diagram

ROOT = Path(__file__).resolve().parents[2]
CJK = re.compile(r"[\u4e00-\u9fff]")
# English explanation words that must not be left in a Chinese explanation (names and config
# words such as input_map, model_version or TYPE_FP32 may stay)
ENGLISH_PROSE = re.compile(
    r"\b(step \d|is not|which|reads|writes|cannot|does not|did you mean|neither|the key|each of|is never)\b"
)


WRONG_KEY = ('key: "input" value: "image_tensor"', 'key: "pixels" value: "image_tensor"')


# -- the page: ch2 in Chinese with a wrong key --------------------------------------------------


def _open_ch2(lang: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["lang"] = lang
    switch_page(at, "views/ch2_ensemble_config.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.app
def test_ch2_page_explains_in_chinese(remote):
    at = _open_ch2("zh")
    editor = at.text_area(key="ch2_text")
    editor.set_value(editor.value.replace(*WRONG_KEY)).run()
    assert not at.exception and at.error
    problems = [m.value for m in at.markdown if m.value.startswith("⛔")]
    assert problems and all(CJK.search(p) and not ENGLISH_PROSE.search(p) for p in problems), problems
    assert any("第 2 步（classifier）" in p for p in problems)
    captions = [c.value for c in at.caption]
    assert any(c.startswith("Triton 原话") or "mapping to non-existing input pixels" in c for c in captions)
    assert lessons.t("ch2.dag_caption", "zh", **diagram.colour_words("zh")) in captions
    assert any("绿色 = ensemble 输入" in c for c in captions)


@pytest.mark.app
def test_ch2_page_explains_in_english(remote):
    at = _open_ch2("en")
    editor = at.text_area(key="ch2_text")
    editor.set_value(editor.value.replace(*WRONG_KEY)).run()
    problems = [m.value for m in at.markdown if m.value.startswith("⛔")]
    assert any("step 2 (classifier): input_map key 'pixels'" in p for p in problems), problems
    assert not any(CJK.search(p) for p in problems)
    assert any(
        "green = ensemble inputs, blue = steps, orange = ensemble outputs" in c.value for c in at.caption
    )
