"""Handouts (triton_kitchen/tools/handouts.py): each chapter's handout holds its lesson and every quiz
question with every choice and no answer; the key holds every right choice and explanation; the documents are
A4, print-ready and self-contained. The browser test prints one chapter in zh and en to PDF and PNG
(artifacts/screenshots/handout_*.png) for a person to look at.

The tests of this topic that need no server, app or browser: tests/unit/test_handouts.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _shared.handouts import shown, text_of

from triton_kitchen.core import lessons
from triton_kitchen.tools import handouts

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "artifacts" / "screenshots"


# -- printed, in the browser ----------------------------------------------------------------------------
@pytest.mark.browser
@pytest.mark.parametrize("lang", lessons.LANGS)
def test_a_handout_prints_on_a4_pages(browser, lang):
    """Chapter 2 to PDF (A4) and to PNG at the A4 page's text width, in print media, for a person to look at."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for kind, doc in (("handout", handouts.handout(2, lang)), ("key", handouts.answer_key(2, lang))):
        page = browser.new_page(viewport={"width": 680, "height": 960})  # 180 mm of text at 96 dpi
        page.set_content(doc)
        page.emulate_media(media="print")
        pdf = page.pdf(format="A4", print_background=True)
        pages = len(re.findall(rb"/Type\s*/Page[^s]", pdf))
        assert pages >= (4 if kind == "handout" else 1), (kind, pages)
        assert (
            page.evaluate("() => document.documentElement.scrollWidth") <= 680
        )  # nothing wider than the page
        family = page.evaluate("() => getComputedStyle(document.body).fontFamily")
        assert "WenQuanYi Micro Hei" in family
        page.screenshot(path=str(SHOTS / f"handout_ch2_{lang}_{kind}.png"), full_page=True)
        (SHOTS / f"handout_ch2_{lang}_{kind}.pdf").write_bytes(pdf)
        page.close()


# -- on the chapter page (AppTest) ----------------------------------------------------------------------
def _chapter_page(monkeypatch, token: str | None):
    from conftest import switch_page
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("TRITON_HTTP_URL", "127.0.0.1:9")  # nobody there: the page draws without Triton
    monkeypatch.setenv("TRITON_GRPC_URL", "127.0.0.1:9")
    if token is None:
        monkeypatch.delenv("TRITON_KITCHEN_TEACHER_TOKEN", raising=False)
    else:
        monkeypatch.setenv("TRITON_KITCHEN_TEACHER_TOKEN", token)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["lang"] = "en"
    switch_page(at, "views/ch6_choosing_protocol.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _downloads(at) -> list[str]:
    return [e.proto.label for e in at.get("download_button")]


@pytest.mark.app
def test_the_chapter_page_offers_the_handout_and_the_key_only_to_the_teacher(monkeypatch):
    t = lambda key: lessons.t(key, "en")  # noqa: E731
    # one person's app (no token): the browser on the app's machine is the teacher
    assert _downloads(_chapter_page(monkeypatch, None)) == [
        t("handout.download_handout"),
        t("handout.download_key"),
    ]
    # a class: a student's session gets the handout, and a line saying the key is the teacher's
    student = _chapter_page(monkeypatch, "s3cret")
    assert _downloads(student) == [t("handout.download_handout")]
    assert t("handout.key_teacher_only") in [c.value for c in student.caption]


@pytest.mark.browser
def test_the_page_downloads_both_documents(browser, app_url):
    """The buttons in a real browser: Streamlit serves what handouts builds, under its file name (the suite's
    shared app: no teacher token, so the key is offered too)."""
    first = lessons.load_quiz(6, "zh")[0]
    url = app_url
    page = browser.new_page(viewport={"width": 1024, "height": 768}, accept_downloads=True)
    page.goto(f"{url}/ch6?lang=zh", wait_until="domcontentloaded")
    page.locator(".st-key-tk_handouts_6 summary").first.click(timeout=60000)  # the buttons' box
    got = {}
    for key, kind in (("tk_handout_6", "handout"), ("tk_handout_key_6", "key")):
        button = page.locator(f".st-key-{key} button").first
        button.wait_for(timeout=60000)
        with page.expect_download(timeout=30000) as info:
            button.click()
        assert info.value.suggested_filename == handouts.file_name(6, "zh", kind)
        got[kind] = Path(info.value.path()).read_text(encoding="utf-8")
    page.close()
    assert got == {"handout": handouts.handout(6, "zh"), "key": handouts.answer_key(6, "zh")}
    assert shown(first.explanation) not in text_of(got["handout"]) and shown(first.explanation) in text_of(
        got["key"]
    )
