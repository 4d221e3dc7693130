"""The Streamlit app through AppTest, against the session's real embedded server.

Every page's text in both languages, on either server: tests/live/test_pages_in_apptest.py. Here the main widgets work: language switch,
sample photo -> classification, ensemble editor -> validation error, the quiz (Check button,
first try counts, shuffled choices, per-choice feedback).

The tests of this topic that need no server, app or browser: tests/unit/test_app.py.
"""

from __future__ import annotations

import json
import os

import conftest
import pytest
from _shared.app import CHAPTER_PAGES, ROOT, TIMEOUT
from conftest import switch_page
from streamlit.testing.v1 import AppTest

from triton_kitchen.core import catalog, lessons
from ui import code_block
from ui import lesson as ui_lesson

APP = str(ROOT / "app.py")


def open_page(page: str, lang: str = "zh") -> AppTest:
    return conftest.open_app_page(page, lang, timeout=TIMEOUT)


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


@pytest.mark.app
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_sidebar_status(remote, monkeypatch, lang):
    """The sidebar says the server is up, with Triton's version and the models' readiness (default page)."""
    monkeypatch.setenv("TRITON_METRICS_URL", conftest.closed_address())  # no metrics port answers
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = lang
    at.run()
    assert not at.exception
    assert any("2.51" in s.value for s in at.sidebar.success), [s.value for s in at.sidebar.success]
    assert not at.sidebar.dataframe  # the models table is lazy: drawn only once its expander is opened
    at.session_state["tk_models_open"] = True
    at.run()
    table = at.sidebar.dataframe[0].value
    assert "✅ image_classifier" in table.iloc[:, 0].tolist()
    for cell in table.iloc[
        :, 0
    ]:  # every model READY, its mark beside its name, or not loaded until first used
        assert cell.startswith("✅ ") or (
            cell.startswith("💤 ") and cell.split()[1] in catalog.LOADED_ON_FIRST_USE
        ), cell
    # no metrics port answers: the table says so, counts left out
    assert list(table.columns) == [lessons.t("sidebar.col_model", lang)]
    assert lessons.t("sidebar.metrics_none", lang) in [c.value for c in at.sidebar.caption]


@pytest.mark.app
def test_sidebar_counts_from_a_remote_servers_metrics_url(remote, monkeypatch):
    """TRITON_METRICS_URL names a remote server's metrics port: the models table adds its counts."""
    monkeypatch.setenv("TRITON_METRICS_URL", remote.metrics_url)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = "en"
    at.session_state["tk_models_open"] = True
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    table = at.sidebar.dataframe[0].value
    assert list(table.columns) == [lessons.t(f"sidebar.col_{c}", "en") for c in ("model", "served")]
    assert lessons.t("sidebar.metrics_none", "en") not in [c.value for c in at.sidebar.caption]


@pytest.mark.app
def test_the_sidebar_takes_a_remote_servers_metrics_address(remote, monkeypatch):
    """A remote server whose metrics port is not its HTTP host's 8002: the one running the app types it in the
    sidebar's remote form, and the models table gains its counts (before: the 'no metrics' caption)."""
    monkeypatch.setenv("TRITON_METRICS_URL", conftest.closed_address())
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = "en"
    at.session_state["tk_models_open"] = True
    at.run()
    none = lessons.t("sidebar.metrics_none", "en")
    assert none in [c.value for c in at.sidebar.caption]  # the fixture's metrics port: closed
    form = {box.label: box for box in at.sidebar.text_input}
    metrics = form[lessons.t("sidebar.metrics_url", "en")]
    assert metrics.value == os.environ["TRITON_METRICS_URL"]  # the environment's, to begin with
    metrics.input(f"http://{remote.metrics_url}/")  # as pasted from a browser: scheme and path dropped
    connect = [b for b in at.sidebar.button if b.label == lessons.t("sidebar.connect", "en")]
    connect[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["tk_remote_metrics"] == (remote.http_url, remote.metrics_url)
    table = at.sidebar.dataframe[0].value
    assert lessons.t("sidebar.col_served", "en") in list(table.columns)
    assert none not in [c.value for c in at.sidebar.caption]
    # another HTTP server, the metrics field left as shown: not the first server's counts, its own host's 8002
    form = {box.label: box for box in at.sidebar.text_input}
    form[lessons.t("sidebar.http_url", "en")].input(remote.http_url.replace("127.0.0.1", "localhost"))
    [b for b in at.sidebar.button if b.label == lessons.t("sidebar.connect", "en")][0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.sidebar.text_input[2].value == ""  # the metrics field: empty, Triton's default
    assert at.session_state["tk_remote_metrics"] == (
        remote.http_url,
        remote.metrics_url,
    )  # kept for its server


@pytest.mark.app
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


@pytest.mark.app
def test_a_language_switch_keeps_what_the_reader_opened_and_chose(remote):
    """What the reader opened (the sidebar's models box, a lesson section) stays open in the other language: an
    expander's label is part of its identity, so a new label would draw a new, closed box (``ui.boxes``). What
    they chose (a sample photo, chapter 7's mistake) stays chosen, shown in the new language."""
    body = lambda lang: lessons.split_heading(lessons.load_lesson(1, lang).sections["repository"].strip())[1]  # noqa: E731
    # the section's prose (its code block is drawn apart: ui.code_block)
    body = lambda lang, whole=body: code_block.split(whole(lang))[0][0]  # noqa: E731
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    switch_page(at, CHAPTER_PAGES[0], open_boxes=False).run()
    assert body("zh") not in [m.value for m in at.main.markdown] and not at.sidebar.dataframe
    at.session_state["tk_models_open"] = True  # what a click on the sidebar's models box does
    at.session_state[ui_lesson.section_key(1, "repository")] = True  # ... and on a closed section's heading
    at.selectbox(key="ch1_sample").set_value("coffee").run()
    assert body("zh") in [m.value for m in at.main.markdown] and at.sidebar.dataframe
    at.sidebar.segmented_control(key="tk_lang_switch").set_value("en").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == lessons.load_lesson(1, "en").title
    assert at.sidebar.dataframe, "the sidebar's models box closed on a language switch"
    assert body("en") in [m.value for m in at.main.markdown], "the opened section closed on a language switch"
    photo = at.selectbox(key="ch1_sample")
    assert photo.value == "coffee" and lessons.t("image.sample_coffee", "en") in photo.options, photo.options
    switch_page(at, CHAPTER_PAGES[6]).run()
    at.selectbox(key="ch7_mistake").set_value("dtype").run()
    at.sidebar.segmented_control(key="tk_lang_switch").set_value("zh").run()
    mistake = at.selectbox(key="ch7_mistake")
    assert mistake.value == "dtype" and lessons.t("ch7.mistake_dtype", "zh") in mistake.options, (
        mistake.options
    )
    # a text box's first text follows the language until the reader edits it
    switch_page(at, CHAPTER_PAGES[4]).run()
    assert at.text_input(key="ch5_stream_text").value == lessons.t("ch5.stream_default", "zh")
    at.sidebar.segmented_control(key="tk_lang_switch").set_value("en").run()
    assert at.text_input(key="ch5_stream_text").value == lessons.t("ch5.stream_default", "en")


@pytest.mark.app
def test_a_page_round_trip_keeps_what_the_reader_set(remote):
    """Settings, typed text and predictions survive a trip to another page and back (``persist_state``): a lab's
    result is never shown under settings that did not make it, a typed config is not lost."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = "en"
    switch_page(at, CHAPTER_PAGES[1]).run()
    edited = at.text_area(key="ch2_text").value + "\n# my own line\n"
    at.text_area(key="ch2_text").set_value(edited).run()
    switch_page(at, CHAPTER_PAGES[0]).run()
    at.radio(key="ch1_protocol").set_value("http")
    at.radio(key="tk_predict_ch1_count").set_value("one").run()
    switch_page(at, "views/lab_batching.py").run()
    at.slider(key="batch_c").set_value(2).run()
    switch_page(at, CHAPTER_PAGES[2]).run()
    assert not at.exception, [e.value for e in at.exception]
    switch_page(at, CHAPTER_PAGES[1]).run()
    assert at.text_area(key="ch2_text").value == edited
    switch_page(at, CHAPTER_PAGES[0]).run()
    assert at.radio(key="ch1_protocol").value == "http"
    assert at.radio(key="tk_predict_ch1_count").value == "one"
    switch_page(at, "views/lab_batching.py").run()
    assert at.slider(key="batch_c").value == 2


@pytest.mark.app
def test_classify_sample_photo(remote):
    at = open_page(CHAPTER_PAGES[0], "en")
    at.selectbox(key="ch1_sample").set_value("coffee").run()
    at.radio(key="tk_predict_ch1_count").set_value("one")
    at.button(key="ch1_classify").click().run()
    assert not at.exception
    meal = at.session_state["ch1_result"][1]
    assert meal.outcome() == "four" and all(n >= 1 for n in meal.counted.values())  # one request, four counts
    assert lessons.t("ch1.count_four", "en") in "\n".join(m.value for m in at.markdown)
    specs = plotly_specs(at)
    bars = [s for s in specs if s.get("data") and s["data"][0].get("orientation") == "h"]
    assert bars, "no top-5 bar chart"
    labels = bars[0]["data"][0]["y"]
    assert len(labels) == 5 and labels[-1] == "espresso"  # the chart lists the top class last (at the top)
    assert any("ms" in c.value and "gRPC" in c.value for c in at.caption)  # gRPC, not "GRPC"


@pytest.mark.app
def test_cascades_compare(remote):
    at = open_page(CHAPTER_PAGES[2], "en")
    at.selectbox(key="ch3_sample").set_value("chelsea").run()
    at.button(key="ch3_compare").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert len([s for s in plotly_specs(at) if s.get("data") and s["data"][0].get("orientation") == "h"]) == 2


@pytest.mark.app
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


@pytest.mark.app
def test_editor_syntax_error(remote):
    at = open_page(CHAPTER_PAGES[1], "zh")
    at.text_area(key="ch2_text").set_value("name: image_classifier\nplatform: ").run()
    assert not at.exception
    assert at.error


@pytest.mark.app
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_lesson_sections_drawn_when_opened(remote, lang):
    """A fresh chapter draws its first section, every other section's heading (a closed box: no text, no
    widgets sent) and the quiz's closed box; an opened section shows its text and live element, and stays
    open after a trip to another page."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = lang
    switch_page(at, CHAPTER_PAGES[1], open_boxes=False).run()
    assert not at.exception, [e.value for e in at.exception]
    lesson = lessons.load_lesson(2, lang)
    (first, *rest) = [lessons.split_heading(text.strip()) for text in lesson.sections.values()]
    quiz = lessons.t("quiz.box", lang, total=len(lessons.load_quiz(2, lang)))
    handouts = lessons.t("handout.title", lang)
    labels = [f"**{h}**" for h, _ in [first, *rest]] + [f"**{quiz}**", f"**{handouts}**"]
    assert [e.label for e in at.main.expander] == labels
    assert not at.get("download_button")  # the handouts' box is closed too
    shown = [m.value for m in at.main.markdown]
    prose = lambda body: [text for text, lang in code_block.split(body) if lang is None]  # noqa: E731
    assert all(p in shown for p in prose(first[1])) and not any(p in shown for _, b in rest for p in prose(b))
    quiz_radios = lambda: [r for r in at.main.radio if (r.key or "").startswith("tk_quiz")]  # noqa: E731
    # the quiz is closed; the editor is in the closed 2nd section
    assert not quiz_radios() and not at.text_area
    at.session_state[ui_lesson.section_key(2, "config")] = True  # what a click on its heading does
    at.run()
    assert prose(rest[0][1])[0] in [m.value for m in at.main.markdown] and at.text_area(key="ch2_text")
    switch_page(at, CHAPTER_PAGES[0], open_boxes=False).run()
    assert prose(rest[0][1])[0] not in [m.value for m in at.main.markdown]
    switch_page(at, CHAPTER_PAGES[1], open_boxes=False).run()
    assert not at.exception and at.text_area(key="ch2_text"), "the opened section closed on the way back"
    assert not quiz_radios()


QUIZ_CH = 2


def quiz_score(at: AppTest) -> str:
    """The quiz's score line (the text of its st.progress)."""
    return at.get("progress")[-1].proto.text


def check_quiz(at: AppTest, q: lessons.Question, choice: int) -> AppTest:
    """Pick a choice (its index in the bank) and press the question's Check button."""
    at.radio(key=f"tk_quiz_{QUIZ_CH}_{q.id}").set_value(choice).run()
    at.button(key=f"tk_quiz_check_{QUIZ_CH}_{q.id}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.app
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_quiz_first_checked_answer_counts(remote, lang):
    at = open_page(CHAPTER_PAGES[QUIZ_CH - 1], lang)
    q = lessons.load_quiz(QUIZ_CH, lang)[0]
    wrong = (q.answer + 1) % len(q.choices)
    assert at.button(key=f"tk_quiz_check_{QUIZ_CH}_{q.id}").disabled  # nothing picked yet
    at.radio(key=f"tk_quiz_{QUIZ_CH}_{q.id}").set_value(wrong).run()
    assert q.explanation not in texts(at), "the explanation shows before Check"
    assert not at.button(key=f"tk_quiz_check_{QUIZ_CH}_{q.id}").disabled
    at.button(key=f"tk_quiz_check_{QUIZ_CH}_{q.id}").click().run()
    assert any(q.explanation in i.value for i in at.info)
    assert any(lessons.t("quiz.wrong", lang) in e.value for e in at.error)
    assert lessons.t("quiz.answer_is", lang, choice=q.choices[q.answer]) in texts(at)
    radio = at.radio(key=f"tk_quiz_{QUIZ_CH}_{q.id}")
    assert radio.disabled and radio.value == wrong
    # a second try, even forced past the locked widgets, changes neither the record nor the score
    check_quiz(at, q, q.answer)
    assert at.radio(key=f"tk_quiz_{QUIZ_CH}_{q.id}").value == wrong
    assert not any(lessons.t("quiz.correct", lang) in s.value for s in at.success)
    assert any(lessons.t("quiz.wrong", lang) in e.value for e in at.error)
    total = len(lessons.load_quiz(QUIZ_CH, lang))
    assert quiz_score(at) == lessons.t("quiz.score", lang, correct=0, answered=1, total=total)
    assert at.session_state["tk_quiz"][str(QUIZ_CH)][q.id] == {"choice": wrong, "correct": False}
    # a right first try on the next question counts
    q2 = lessons.load_quiz(QUIZ_CH, lang)[1]
    check_quiz(at, q2, q2.answer)
    assert quiz_score(at) == lessons.t("quiz.score", lang, correct=1, answered=2, total=total)
    assert any(lessons.t("quiz.correct", lang) in s.value for s in at.success)
    # reset clears the record and unlocks the questions
    at.button(key=f"tk_quiz_reset_{QUIZ_CH}").click().run()
    assert not at.exception
    radio = at.radio(key=f"tk_quiz_{QUIZ_CH}_{q.id}")
    assert radio.value is None and not radio.disabled
    assert quiz_score(at) == lessons.t("quiz.score", lang, correct=0, answered=0, total=total)
    assert q.explanation not in texts(at)
    check_quiz(at, q, q.answer)
    assert quiz_score(at) == lessons.t("quiz.score", lang, correct=1, answered=1, total=total)


def shown_orders(at: AppTest, lang: str = "en") -> list[list[str]]:
    return [at.radio(key=f"tk_quiz_{QUIZ_CH}_{q.id}").options for q in lessons.load_quiz(QUIZ_CH, lang)]


def open_quiz_with_seed(seed: int) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = "en"
    at.session_state["tk_quiz_seed"] = seed
    switch_page(at, CHAPTER_PAGES[QUIZ_CH - 1]).run()
    assert not at.exception
    return at


def expected_orders(seed: int) -> list[list[str]]:
    return [
        [q.choices[i] for i in lessons.shuffled_order(seed, q.id, len(q.choices))]
        for q in lessons.load_quiz(QUIZ_CH, "en")
    ]


@pytest.mark.app
def test_quiz_order_is_shuffled_per_visit_and_stable(remote):
    quiz = lessons.load_quiz(QUIZ_CH, "en")
    at = open_quiz_with_seed(11)
    shown = shown_orders(at)
    assert shown == expected_orders(11)
    assert shown != [list(q.choices) for q in quiz], "seed 11 keeps the bank's order"
    check_quiz(at, quiz[0], quiz[0].answer)  # reruns (a check, a pick) keep the order
    at.radio(key=f"tk_quiz_{QUIZ_CH}_{quiz[1].id}").set_value(0).run()
    at.run()
    assert shown_orders(at) == shown and at.session_state["tk_quiz_seed"] == 11
    # another visit with another seed: another order
    assert shown_orders(open_quiz_with_seed(12)) != shown
    # a fresh visit draws its own seed and keeps it
    fresh = open_page(CHAPTER_PAGES[QUIZ_CH - 1], "en")
    seed = fresh.session_state["tk_quiz_seed"]
    assert shown_orders(fresh) == expected_orders(seed)
    fresh.run()
    assert fresh.session_state["tk_quiz_seed"] == seed and shown_orders(fresh) == expected_orders(seed)


QUIZ_BANK_WITH_WHY = {
    "en": """
[[question]]
id = "why-1"
kind = "scenario"
prompt = "A step has no `model_version` line. Which version does the ensemble use?"
choices = ["Version 0, which no repository has", "The latest loaded version", "Version 1", "Every version"]
answer = 0
why = ["WHY-EN-0 the default of an int64 field is 0.", "WHY-EN-1 tempting: -1 means latest, omitted does not.",
       "WHY-EN-2 tempting: directories start at 1.", "WHY-EN-3 Triton never fans out over versions."]
explanation = "EXPLAIN-EN model_version defaults to 0 and Triton takes it literally."

[[question]]
id = "why-2"
kind = "recall"
prompt = "Triton's default HTTP port?"
choices = ["8000", "8001"]
answer = 0
why = ["WHY-EN-A HTTP.", "WHY-EN-B tempting: 8001 is gRPC."]
explanation = "EXPLAIN-EN 8000 HTTP, 8001 gRPC, 8002 metrics."
""",
}
QUIZ_BANK_WITH_WHY["zh"] = QUIZ_BANK_WITH_WHY["en"].replace("-EN", "-ZH")


@pytest.fixture
def bank_with_why(tmp_path, monkeypatch):
    """Chapter 2's quiz read from a small bank with per-choice feedback (the real banks may lack it)."""
    real = lessons.quiz_path

    def quiz_path(chapter: int, lang: str):
        if chapter != QUIZ_CH:
            return real(chapter, lang)
        path = tmp_path / lang / f"{chapter:02d}.toml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(QUIZ_BANK_WITH_WHY[lang], encoding="utf-8")
        return path

    lessons._load_quiz.cache_clear()
    monkeypatch.setattr(lessons, "quiz_path", quiz_path)
    yield
    monkeypatch.undo()
    lessons._load_quiz.cache_clear()


@pytest.mark.app
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_quiz_feedback_for_the_chosen_choice(remote, bank_with_why, lang):
    tag = lang.upper()
    at = open_page(CHAPTER_PAGES[QUIZ_CH - 1], lang)
    q1, q2 = lessons.load_quiz(QUIZ_CH, lang)
    assert q1.why[2].startswith(f"WHY-{tag}-2") and q1.kind == "scenario"
    assert f"WHY-{tag}" not in texts(at) and "EXPLAIN" not in texts(at)
    check_quiz(at, q1, 2)
    errors = [e.value for e in at.error]
    assert any(q1.why[2] in e for e in errors), errors  # why this wrong choice is tempting
    assert not any(q1.why[1] in e for e in errors)
    assert any(q1.explanation in i.value for i in at.info)
    (box,) = [x for x in at.expander if x.label == lessons.t("quiz.all_choices", lang)]
    listing = "\n".join(m.value for m in box.markdown)  # every choice with its why
    assert all(w in listing for w in q1.why)
    assert f"WHY-{tag}-A" not in texts(at)  # q2 not checked yet
    check_quiz(at, q2, q2.answer)
    assert any(q2.why[0] in s.value for s in at.success)


@pytest.mark.app
def test_python_demo_both_protocols(remote):
    at = open_page(CHAPTER_PAGES[6], "en")
    at.radio(key="tk_predict_ch7_out").set_value("one_hot")  # the tutorial's slip: predicted, then refuted
    at.button(key="ch7_run").click().run()
    assert not at.exception and not at.error
    assert len([m for m in at.metric if m.label == "argmax class"]) == 2
    assert at.session_state["ch7_runs"][0].output_kind() == "probabilities"
    shown = "\n".join(m.value for m in at.markdown)
    assert lessons.t("ch7.out_probabilities", "en") in shown and any(
        lessons.t("predict.wrong", "en") in w.value for w in at.warning
    )
    at.selectbox(key="ch7_mistake").set_value("tensor_name").run()
    at.button(key="ch7_run").click().run()
    assert not at.exception
    assert len(at.error) == 2 and "tensor" in at.error[0].value.lower()


@pytest.mark.app
def test_http_request_viewer(remote):
    at = open_page(CHAPTER_PAGES[3], "en")
    codes = "\n".join(c.value for c in at.code)
    assert "Inference-Header-Content-Length: 186" in codes
    assert "binary_data_size" in codes and "curl" in codes
    at.radio(key="tk_predict_ch4_form").set_value("json")
    at.button(key="ch4_send").click().run()
    assert not at.exception
    assert at.session_state["ch4_response"][1].output_form() == "binary"
    assert lessons.t("ch4.form_binary", "en") in "\n".join(m.value for m in at.markdown)
    assert any("HTTP 200" in m.value for m in at.markdown)
    # the JSON tab opened: the binary request's response is not shown under it
    from ui.boxes import OPEN_TABS

    at.session_state[OPEN_TABS] = {"ch4_form_tabs": "json"}
    at.session_state["tk_tabs_drawn"] = {}
    at.run()
    assert not any("HTTP 200" in m.value for m in at.markdown)


@pytest.mark.app
def test_http_request_viewer_sends_the_open_tabs_request(remote):
    """With the JSON tab open the button sends the JSON request; the prediction (about the binary one) is not revealed."""
    from ui.boxes import OPEN_TABS

    at = open_page(CHAPTER_PAGES[3], "en")
    at.session_state[OPEN_TABS] = {"ch4_form_tabs": "json"}
    at.session_state["tk_tabs_drawn"] = {}  # drawn again, opening on the remembered tab
    at.run()
    at.radio(key="tk_predict_ch4_form").set_value("binary")
    at.button(key="ch4_send").click().run()
    assert not at.exception
    assert at.session_state["ch4_response"][1].output_form() == "json"
    assert not any(lessons.t("predict.wrong", "en") in w.value for w in at.warning)


@pytest.mark.app
def test_selected_model_in_url(remote):
    at = open_page(CHAPTER_PAGES[0], "en")
    at.selectbox(key="ch1_model").set_value("classifier").run()
    assert not at.exception
    model = at.query_params["model"]
    assert model in ("classifier", ["classifier"])
    assert any("max_queue_delay_microseconds" in i.value for i in at.info)


@pytest.mark.app
def test_embedded_default_path(server, monkeypatch):
    """No remote configured: the app uses its embedded server (here: the session's, already started)."""
    monkeypatch.delenv("TRITON_HTTP_URL", raising=False)
    monkeypatch.delenv("TRITON_GRPC_URL", raising=False)
    from ui import server as ui_server

    supervisor = ui_server.supervisor()
    saved = supervisor.adopt(server)
    try:
        at = AppTest.from_file(APP, default_timeout=TIMEOUT)
        at.query_params["lang"] = "en"
        at.run()
        assert not at.exception
        n = len(catalog.model_names())
        assert any(f"{n}/{n}" in s.value or "models ready" in s.value for s in at.sidebar.success)
        assert any(server.http_url in c.value for c in at.sidebar.caption)
    finally:
        supervisor.restore(saved)


@pytest.mark.app
def test_dead_remote_server_is_a_message(server, monkeypatch):
    from triton_kitchen.core.server import free_port

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


@pytest.mark.app
def test_status_is_measured_once_per_run(remote, monkeypatch):
    """The sidebar and the page share one status per script run (no hand-off through session state), and
    the next run measures again."""
    from ui import server as ui_server

    calls = []
    real = ui_server.server_status
    monkeypatch.setattr(ui_server, "server_status", lambda *a, **k: calls.append(1) or real(*a, **k))
    at = open_page("views/ch1_inference_server.py", "en")  # the sidebar and the page both read the status
    assert len(calls) == 1
    at.run()
    assert len(calls) == 2
    assert "tk_status" not in at.session_state
