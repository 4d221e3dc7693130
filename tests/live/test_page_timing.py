"""benchmarks/page_timing.py's pairing of each page sample with a floor sample (no browser, no server)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from page_timing import paired_fresh  # noqa: E402


def test_a_pair_is_page_then_floor_whichever_was_measured_first():
    order: list[str] = []

    def page():
        order.append("page")
        return (1.0, 2.0)

    def floor():
        order.append("floor")
        return (0.5, 1.0)

    assert paired_fresh(page, floor, floor_first=True) == ((1.0, 2.0), (0.5, 1.0))
    assert paired_fresh(page, floor, floor_first=False) == ((1.0, 2.0), (0.5, 1.0))
    assert order == ["floor", "page", "page", "floor"]


def test_a_round_opens_every_tab_through_its_opener_and_pairs_each_page_with_the_floor(monkeypatch):
    """fresh_round: page and floor tabs both through the opener it is given (one browser context: the learner's
    cached scripts; the browser: a new profile per tab), each page's ratio the median of its pairs'."""
    import page_timing

    opened: list = []
    seconds = {"/floor/": 1.0, "/base/ch1?lang=en": 1.2, "/base/ch2?lang=en": 1.5}

    def fake_fresh(opener, url, text, main_thread=None):
        opened.append((opener, url))
        return (seconds[url] / 2, seconds[url])

    monkeypatch.setattr(page_timing, "fresh", fake_fresh)
    targets = {"ch1": ("/base/ch1?lang=en", "One"), "ch2": ("/base/ch2?lang=en", "Two")}
    out = page_timing.fresh_round("ctx", targets, "/floor/", 2, None)
    assert {o for o, _ in opened} == {"ctx"} and len(opened) == 8
    assert out["fresh_ratio_to_floor"] == {"ch1": 1.2, "ch2": 1.5}
    assert out["floor"]["interactive"] == 1.0


def test_the_floor_apps_show_the_title_the_benchmarks_wait_for_with_chinese_text_for_a_chinese_page():
    """A Chinese page loads a Chinese font; so does its floor (?lang=zh), and the wait still finds FLOOR_TITLE."""
    from _floor import FLOOR_TITLE, FLOOR_TITLE_ZH
    from streamlit.testing.v1 import AppTest

    bench = Path(__file__).resolve().parents[2] / "benchmarks"
    for script in ("floor_app.py", "floor_sidebar_app.py", "floor_nav_app.py"):
        for lang, chinese in (("en", False), ("zh", True)):
            at = AppTest.from_file(str(bench / script))
            at.query_params["lang"] = lang
            at.run(timeout=30)
            assert not at.exception, (script, lang)
            title = at.title[0].value
            assert FLOOR_TITLE in title and (FLOOR_TITLE_ZH in title) == chinese, (script, lang, title)
