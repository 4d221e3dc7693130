"""benchmarks/page_timing.py's pairing of each page sample with a floor sample (no browser, no server).

Here the tests that need no server, app or browser; the others: tests/live/test_page_timing_live.py."""

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
