"""Chapter 9's page: every live element driven through AppTest (predict, run on the real server, "your prediction /
what happened"), in Chinese and then, switched, in English; and the predict-then-see helper on its own. Every other
control of the page, pressed: tests/live/test_pages_in_apptest.py (but for the four measurements, run here).

The page's runs are the scheduling library's measurements on the real server (instances, priorities, a full
queue, Little's law): what they must show is asserted here, once, not again in tests/unit/test_scheduling.py.

The tests of this topic that need no server, app or browser: tests/unit/test_ch9.py."""

from __future__ import annotations

import pytest
from _screen_checks import apptest_screen, problems_on_screen
from conftest import open_app_page, predict_and_press, shown_text
from streamlit.testing.v1 import AppTest

from triton_kitchen.core import kserve, lessons, override

pytestmark = pytest.mark.timing  # wall-clock figures: run alone (README: tests)
PAGE = "views/ch9_scheduler.py"


def _open(lang: str) -> AppTest:
    return open_app_page(PAGE, lang)


@pytest.mark.app
@pytest.mark.slow
@pytest.mark.parametrize("lang", ["zh"])  # then English, the same results switched (no second run)
def test_chapter9_every_live_element(embedded, lang):
    original = kserve.model_config(embedded.endpoint, override.MODEL)
    t = lambda key, **kw: lessons.t(key, lang, **kw)  # noqa: E731
    at = _open(lang)
    assert at.title[0].value == lessons.load_lesson(9, lang).title
    shown = shown_text(at)
    for heading in ("instance_group", "max_queue_size", "L = λ · W"):
        assert heading in shown
    # instance_group: 1 vs 2 instances, the prediction kept beside the outcome
    predict_and_press(at, "ch9_inst", "same", "ch9_inst_run")
    result = at.session_state["ch9_inst_result"]
    assert [r.settings.instance_count for r in result.results] == [1, 2]
    assert all(r.throughput_rps > 0 and r.errors == 0 for r in result.results)
    assert result.ratio() is not None
    shown = shown_text(at)
    assert t("predict.yours") in shown and t("predict.happened") in shown
    assert t(f"ch9.inst_{result.outcome()}") in shown
    assert (t("predict.right") in shown) == (result.outcome() == "same")
    # KIND_GPU on this server: Triton's refusal, verbatim
    at.button(key="ch9_gpu_run").click()
    at.run()
    assert "no GPUs are available" in shown_text(at)
    # priorities: first the drawn timeline, then the pause said before the run, then the urgent requests overtake
    predict_and_press(at, "ch9_toy_priority", "last", "ch9_toy_priority_draw")
    assert t("ch9.toy_priority_next") in shown_text(at) and t("predict.wrong") in shown_text(at)
    assert t("ch9.pause_before") in shown_text(at)  # before any run: what the half-second pause is
    predict_and_press(at, "ch9_prio", "overtake", "ch9_prio_run")
    prio = at.session_state["ch9_prio_result"]
    assert prio.fifo.refused == prio.priority.refused == 0
    assert prio.outcome() == "overtake", (prio.fifo.finish_ranks(1), prio.priority.finish_ranks(1))
    assert t("predict.right") in shown_text(at)
    assert "priority_levels: 2" in shown_text(at)
    # preserve_ordering beside priorities, and beside DELAY: Triton's refusals, verbatim
    for case, words in (
        ("priority", "Only one priority level is allowed when 'preserve_ordering' is true"),
        ("delay", "Queue policy can not have DELAY as timeout action when 'preserve_ordering' is true"),
    ):
        at.button(key=f"ch9_order_{case}_run").click()
        at.run()
        assert words in shown_text(at), case
    # queue policy: the drawn bounded queue and timeout, then a small queue refuses some of the 32, in Triton's words
    predict_and_press(at, "ch9_toy_bounded", "sixteen", "ch9_toy_bounded_draw")
    predict_and_press(at, "ch9_toy_timeout", "after", "ch9_toy_timeout_draw")
    assert shown_text(at).count(t("predict.right")) >= 3
    at.slider(key="ch9_q_size").set_value(4)
    predict_and_press(at, "ch9_q", "all", "ch9_q_run")
    q = at.session_state["ch9_q_result"]
    assert q.outcome() == "some", q.burst.rows()
    assert q.burst.answered >= 4 and "max_queue_size: 4" in q.burst.config_text
    shown = shown_text(at)
    assert t("predict.wrong") in shown
    assert any(
        "Exceeds maximum queue size" in str(v) for df in at.dataframe for v in df.value.to_numpy().ravel()
    )
    # Little's law with the student's own C
    predict_and_press(at, "ch9_little", "latency", "ch9_little_run")
    law = at.session_state["ch9_little_result"]
    assert [r.concurrency for r in law.runs] == [2, 4]
    for row in law.rows():  # closed loop: C / λ is the mean latency, within what the clock can tell
        assert row["mean_latency_ms"] == pytest.approx(row["predicted_latency_ms"], rel=0.35)
        assert row["queue_ms"] is not None and row["compute_ms"] is not None
    assert t("ch9.little_yours", c=2, rps="", predicted="", measured="").split("=")[0] in shown_text(at)
    assert kserve.model_config(embedded.endpoint, override.MODEL) == original
    # is an ensemble faster than the client chaining its steps? measured over gRPC, the same top-1 either way
    predict_and_press(at, "ch9_ens", "ensemble_faster", "ch9_ens_run")
    ens = at.session_state["ch9_ens_result"]
    assert ens.same_answer and [r.mode for r in ens.rows] == ["ensemble", "chain"]
    assert ens.row("grpc", "chain").wire_bytes > 1_000_000 > ens.row("grpc", "ensemble").wire_bytes
    assert ens.outcome() in ("ensemble_faster", "similar", "chain_faster")
    shown = shown_text(at)
    assert t(f"ch9.ens_{ens.outcome()}") in shown
    assert t("ch9.ens_detail", ratio=f"{ens.ratio():.2f}") in shown
    # the same results in English (a language switch keeps them): the browser's click test does not run them again
    at.sidebar.segmented_control(key="tk_lang_switch").set_value("en").run()
    assert not at.exception, [e.value for e in at.exception]
    en = shown_text(at)
    assert lessons.t(f"ch9.inst_{result.outcome()}", "en") in en and lessons.t("predict.happened", "en") in en
    assert lessons.t("ch9.little_yours", "en", c=2, rps="", predicted="", measured="").split("=")[0] in en
    assert problems_on_screen(apptest_screen(at), "en") == []
