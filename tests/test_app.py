"""The Streamlit app through AppTest, against the session's real embedded server.

Every page renders in both languages without an exception; the main widgets work: language switch,
sample photo -> classification, ensemble editor -> validation error, a quiz answer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import switch_page
from streamlit.testing.v1 import AppTest

from triton_kitchen import lessons
from triton_kitchen.demo import MISTAKES, SAMPLE_PHOTOS

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
CHAPTER_PAGES = [
    "views/ch1_inference_server.py",
    "views/ch2_ensemble_config.py",
    "views/ch3_multi_model.py",
    "views/ch4_http.py",
    "views/ch5_grpc.py",
    "views/ch6_choosing_protocol.py",
    "views/ch7_python_client.py",
    "views/ch8_mistakes.py",
]
TIMEOUT = 60


@pytest.fixture
def remote(server, monkeypatch):
    """Point the app at the session's server as a remote, through the environment."""
    monkeypatch.setenv("TRITON_HTTP_URL", server.http_url)
    monkeypatch.setenv("TRITON_GRPC_URL", server.grpc_url)
    return server


def open_page(page: str, lang: str = "zh") -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = lang
    switch_page(at, page)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def texts(at: AppTest) -> str:
    parts = [e.value for e in at.markdown] + [e.value for e in at.title] + [e.value for e in at.caption]
    parts += [e.value for e in at.success] + [e.value for e in at.error] + [e.value for e in at.info]
    return "\n".join(str(p) for p in parts)


def plotly_specs(at: AppTest) -> list[dict]:
    specs = []
    for el in at.get("plotly_chart"):
        proto = el.proto
        specs.append(json.loads(proto.spec) if proto.spec else {})
    return specs


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("page", CHAPTER_PAGES)
def test_page_renders(remote, page, lang):
    at = open_page(page, lang)
    chapter = CHAPTER_PAGES.index(page) + 1
    assert at.title[0].value == lessons.load_lesson(chapter, lang).title
    # no untranslated key shows (a missing key would be printed as e.g. "ch4.send")
    shown = texts(at)
    for key in lessons.ui_strings(lang):
        if (
            key.count(".") >= 1
            and len(key) > 8
            and key.split(".")[0] in {"ch1", "ch2", "ch3", "ch4", "ch5", "ch6", "ch7", "ch8", "repo"}
        ):
            assert key not in shown, f"untranslated key {key} on {page}"
    assert not at.error, [e.value for e in at.error]


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_sidebar_status(remote, lang):
    """The sidebar says the server is up, with Triton's version and the models' readiness (default page)."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = lang
    at.run()
    assert not at.exception
    assert any("2.51" in s.value for s in at.sidebar.success), [s.value for s in at.sidebar.success]
    assert not at.sidebar.dataframe  # the models table is lazy: drawn only once its expander is opened
    at.session_state["tk_models_open"] = True
    at.run()
    table = at.sidebar.dataframe[0].value
    assert "image_classifier" in table.iloc[:, 0].tolist()
    assert table.iloc[:, 1].str.contains("READY").all()


def test_language_switch(remote):
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    assert at.title[0].value == lessons.t("app.title", "zh")
    assert lessons.load_lesson(1, "zh").summary in [c.value for c in at.caption]
    at.sidebar.segmented_control(key="tk_lang_switch").set_value("en").run()
    assert not at.exception
    assert at.query_params["lang"] == ["en"] or at.query_params["lang"] == "en"
    assert at.title[0].value == lessons.t("app.title", "en")
    assert lessons.load_lesson(1, "en").summary in [c.value for c in at.caption]


def test_classify_sample_photo(remote):
    at = open_page(CHAPTER_PAGES[0], "en")
    at.selectbox(key="ch1_sample").select_index(SAMPLE_PHOTOS.index("coffee")).run()
    at.button(key="ch1_classify").click().run()
    assert not at.exception
    specs = plotly_specs(at)
    bars = [s for s in specs if s.get("data") and s["data"][0].get("orientation") == "h"]
    assert bars, "no top-5 bar chart"
    labels = bars[0]["data"][0]["y"]
    assert len(labels) == 5 and labels[-1] == "espresso"  # the chart lists the top class last (at the top)
    assert any("ms" in c.value and "GRPC" in c.value for c in at.caption)


def test_cascades_compare(remote):
    at = open_page(CHAPTER_PAGES[2], "en")
    at.selectbox(key="ch3_sample").select_index(SAMPLE_PHOTOS.index("chelsea")).run()
    at.button(key="ch3_compare").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert len([s for s in plotly_specs(at) if s.get("data") and s["data"][0].get("orientation") == "h"]) == 2


def test_editor_invalid_config_shows_error(remote):
    at = open_page(CHAPTER_PAGES[1], "en")
    assert any("Valid" in s.value for s in at.success)
    editor = at.text_area(key="ch2_text")
    editor.set_value(
        editor.value.replace('model_version: -1\n      input_map { key: "input"', 'input_map { key: "input"')
    ).run()
    assert not at.exception
    assert at.error and "would not load" in at.error[0].value
    assert "version 0" in texts(at)
    at.button(key="ch2_reset").click().run()
    assert any("Valid" in s.value for s in at.success)


def test_editor_syntax_error(remote):
    at = open_page(CHAPTER_PAGES[1], "zh")
    at.text_area(key="ch2_text").set_value("name: image_classifier\nplatform: ").run()
    assert not at.exception
    assert at.error


def test_quiz_answer(remote):
    at = open_page(CHAPTER_PAGES[1], "en")
    q = lessons.load_quiz(2, "en")[0]
    radio = at.radio(key=f"tk_quiz_2_{q.id}")
    radio.set_value(q.answer).run()
    assert not at.exception
    assert any(q.explanation in s.value for s in at.success)
    wrong = (q.answer + 1) % len(q.choices)
    at.radio(key=f"tk_quiz_2_{q.id}").set_value(wrong).run()
    assert any(q.explanation in e.value for e in at.error)


def test_python_demo_both_protocols(remote):
    at = open_page(CHAPTER_PAGES[6], "en")
    at.button(key="ch7_run").click().run()
    assert not at.exception and not at.error
    assert len([m for m in at.metric if m.label == "argmax class"]) == 2
    at.selectbox(key="ch7_mistake").select_index(MISTAKES.index("tensor_name")).run()
    at.button(key="ch7_run").click().run()
    assert not at.exception
    assert len(at.error) == 2 and "tensor" in at.error[0].value.lower()


def test_http_request_viewer(remote):
    at = open_page(CHAPTER_PAGES[3], "en")
    codes = "\n".join(c.value for c in at.code)
    assert "Inference-Header-Content-Length: 186" in codes
    assert "binary_data_size" in codes and "curl" in codes
    at.button(key="ch4_send").click().run()
    assert not at.exception
    assert any("HTTP 200" in m.value for m in at.markdown)


def test_selected_model_in_url(remote):
    at = open_page(CHAPTER_PAGES[0], "en")
    at.selectbox(key="ch1_model").set_value("classifier").run()
    assert not at.exception
    model = at.query_params["model"]
    assert model in ("classifier", ["classifier"])
    assert any("max_queue_delay_microseconds" in i.value for i in at.info)


def test_embedded_default_path(server, monkeypatch):
    """No remote configured: the app uses its embedded server (here: the session's, already started)."""
    monkeypatch.delenv("TRITON_HTTP_URL", raising=False)
    monkeypatch.delenv("TRITON_GRPC_URL", raising=False)
    from ui import state

    holder = state._holder()
    saved = holder.server, holder.error
    holder.server, holder.error = server, None
    try:
        at = AppTest.from_file(APP, default_timeout=TIMEOUT)
        at.query_params["lang"] = "en"
        at.run()
        assert not at.exception
        assert any("13/13" in s.value or "models ready" in s.value for s in at.sidebar.success)
        assert any(server.http_url in c.value for c in at.sidebar.caption)
    finally:
        holder.server, holder.error = saved


def test_dead_remote_server_is_a_message(server, monkeypatch):
    from triton_kitchen.server import free_port

    port = free_port()
    monkeypatch.setenv("TRITON_HTTP_URL", f"127.0.0.1:{port}")
    monkeypatch.setenv("TRITON_GRPC_URL", f"127.0.0.1:{port}")
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    assert at.sidebar.error
    at = open_page(CHAPTER_PAGES[6], "en")
    at.button(key="ch7_run").click().run()
    assert not at.exception
    assert at.error
