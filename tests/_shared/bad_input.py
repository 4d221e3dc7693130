"""Helpers shared by tests/unit/test_bad_input.py and tests/live/test_bad_input_live.py."""

from __future__ import annotations

from triton_kitchen.core.lessons import LANGS, t


def message_in_every_language(code: str) -> None:
    texts = {lang: t(f"error.{code}", lang) for lang in LANGS}
    for lang, text in texts.items():
        assert text and text != f"error.{code}", f"no {lang} message for {code}"
        assert "Traceback" not in text
    assert texts["zh"] != texts["en"]
