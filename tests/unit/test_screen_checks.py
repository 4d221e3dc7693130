"""The page checks themselves (tests/_screen_checks.py), on text a page could show: no server, no browser."""

from __future__ import annotations

from _rendered_cjk import cjk_rendering_defects
from _screen_checks import UI, meant_error, norm, problems_on_screen


def test_the_checks_catch_what_they_should():
    """The page checks themselves, on text a page could show (no browser): each kind of problem is found,
    and what a page legitimately shows is not."""

    def seen(texts=(), errors=(), exceptions=(), details=()):
        return {
            "texts": list(texts),
            "errors": list(errors),
            "exceptions": list(exceptions),
            "details": list(details),
        }

    # Chinese as rendered: a literal emphasis marker, a stray space; not a space around English words
    assert len(cjk_rendering_defects("中 文。 中**")) == 3
    assert not cjk_rendering_defects("用 Triton 跑 `ensemble`：⟦code⟧ 或 “unused”。Access-Control-* 头")
    zh, en = UI["zh"], UI["en"]
    assert problems_on_screen({**seen(), "broken": ["http://x/media/a.png"]}, "en") == [
        "image did not load: http://x/media/a.png"
    ]
    fine_zh = seen(
        [zh["quiz.title"], "image_classifier", "config.pbtxt", "model_repository/classifier/1/model.py"]
    )
    assert problems_on_screen(fine_zh, "zh") == []
    assert problems_on_screen(seen([en["quiz.title"], "English"]), "en") == []
    # an English UI string on a zh page, whole or as a phrase inside a longer text
    assert problems_on_screen(seen([en["quiz.check"]]), "zh") == [
        f"English on a zh page: {en['quiz.check']!r}"
    ]
    assert problems_on_screen(seen(["结果：" + en["lab_flow.source_recorded"]]), "zh")
    # Chinese on an en page; a raw key in either language
    assert problems_on_screen(seen([zh["quiz.title"]]), "en")
    assert problems_on_screen(seen(["ch4.send"]), "en") == ["raw i18n key: ch4.send"]
    assert problems_on_screen(seen(["lab_flow.no_such_code"]), "zh") == [
        "raw i18n key: lab_flow.no_such_code"
    ]
    # the generic message, with the detail under it
    generic = seen(
        [zh["error.unexpected"]], errors=[zh["error.unexpected"]], details=["StreamlitAPIException: boom"]
    )
    assert problems_on_screen(generic, "zh") == [
        f"error box: {norm(zh['error.unexpected'])}",
        "generic error (zh): StreamlitAPIException: boom",
    ]
    assert problems_on_screen(seen(exceptions=["Traceback"]), "en") == ["Streamlit exception: Traceback"]
    # an error box is allowed only where MEANT_ERRORS says so, and only once its widget was pressed
    verdict = "⛔ " + en["ch2.invalid"].replace("{n}", "2")
    assert meant_error(verdict, "en", "ch2", {"ch2_swap"})
    assert not meant_error(verdict, "en", "ch2", set())
    assert not meant_error(verdict, "en", "ch3", {"ch2_swap"})
    assert not meant_error(en["error.unexpected"], "en", "ch7", {"ch7_mistake"})
