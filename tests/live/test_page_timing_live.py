"""benchmarks/page_timing.py's pairing of each page sample with a floor sample (no browser, no server).

The tests of this topic that need no server, app or browser: tests/unit/test_page_timing.py."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))


@pytest.mark.app
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
