"""Conventions seen on the running pages (AppTest against the session's real embedded server, and one Chromium
check of /home): no metric arrows, chapter 4's JSON tab and chapter 5's tables, gRPC written gRPC, translated
chooser placeholders, the welcome page at /home.

The same conventions read from the code: tests/unit/test_ui_conventions.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import conftest
import pytest
from _shared.pages import frames, page, tz


@pytest.mark.app
def test_rendered_metrics_have_no_arrow(remote):
    at = page("views/ch8_mistakes.py")
    deltas = [m for m in at.metric if m.proto.delta]
    assert deltas
    assert all(m.proto.direction == m.proto.MetricDirection.NONE for m in deltas)


@pytest.mark.app
def test_ch4_json_tab_says_body_not_header(remote):
    at = page("views/ch4_http.py")
    md = [m.value for m in at.markdown]
    assert any(v.startswith("**" + tz("ch4.json_body", n=0).split("：")[0]) for v in md)
    assert sum(v.startswith("**JSON 头部") for v in md) == 1  # the binary tab's header only
    assert any(re.search(r"\d,\d{3} 字节", v) for v in md)  # thousands separators


@pytest.mark.app
def test_ch5_tables_use_thousands_separators(remote):
    at = page("views/ch5_grpc.py")
    for table in frames(at):
        for col in table.value.columns:
            if table.value[col].dtype.kind == "i" and table.value[col].max() >= 1000:
                fmt = json.dumps(table.config.get(f"col:name:{col}") or table.config.get(col) or {})
                assert "%,d" in fmt, (col, fmt)


@pytest.mark.app
def test_grpc_is_written_grpc(remote):
    at = page("views/ch1_inference_server.py")
    radio = at.radio(key="ch1_protocol")
    assert [radio.format_func(o) for o in radio.options] == ["gRPC", "HTTP"]
    at.button(key="ch1_classify").click().run()
    assert any("gRPC" in c.value for c in at.caption)
    assert not any("GRPC" in c.value for c in at.caption)
    at = page("views/ch7_python_client.py")
    at.button(key="ch7_run").click().run()
    assert any(m.value.startswith("#### gRPC") for m in at.markdown)


@pytest.mark.browser
@pytest.mark.browser
@pytest.mark.skipif(not Path(conftest.CHROMIUM).exists(), reason="Debian's chromium is not installed")
def test_home_url_shows_the_welcome_page(app_url, browser):
    """/home was declared (url_path="home") but Streamlit served that page at / only: "Page not found"."""
    url = app_url
    page = browser.new_page()
    for path in ("/home?lang=zh", "/?lang=zh"):
        page.goto(url + path)
        page.wait_for_selector("h1", timeout=60_000)
        page.wait_for_timeout(1500)  # the "Page not found" dialog comes after the first paint
        assert page.get_by_text("Page not found").count() == 0, path
        assert page.locator("h1").first.inner_text().strip() == tz("app.title")
    page.close()


@pytest.mark.app
@pytest.mark.parametrize(
    "path",
    [
        "views/lab_protocols.py",
        "views/lab_flow.py",
        "views/ch7_python_client.py",
        "views/ch1_inference_server.py",
    ],
)
def test_choosers_have_a_translated_placeholder(remote, path):
    at = page(path)
    widgets = list(at.selectbox) + list(at.multiselect)
    assert widgets
    for w in widgets:
        assert w.proto.placeholder and w.proto.placeholder not in ("Choose an option", "Choose options"), (
            w.label
        )
