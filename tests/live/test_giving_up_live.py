"""Chapter 7's clients that give up, on servers of their own (labs/giving_up.py): whether the request given up on
ran, from Triton's execution count; what each client raises; the page's element through AppTest in both
languages, bad input included. The class's server is never touched."""

from __future__ import annotations

import pytest
from conftest import open_app_page, predict_and_press, shown_text

from triton_kitchen.core import lessons
from triton_kitchen.labs import giving_up

PAGE = "views/ch7_python_client.py"


@pytest.mark.parametrize(
    "scenario, outcome, executions, saw",
    [
        ("grpc_cancel_queued", "never_ran", 1, "StatusCode.CANCELLED"),
        ("request_timeout_queued", "ran_to_end", 2, "answered"),
        ("grpc_cancel_executing_poll", "stopped_early", 1, "StatusCode.CANCELLED"),
    ],
)
def test_what_the_server_did_with_a_request_given_up_on(scenario, outcome, executions, saw):
    r = giving_up.give_up(scenario)
    assert (r.outcome(), r.executions) == (outcome, executions), r
    assert saw in r.client_saw
    if scenario.endswith("_queued"):
        assert r.busy_slept_ms is not None and r.busy_slept_ms >= giving_up.BUSY_MS
    if outcome == "stopped_early":
        assert r.victim_ms() < 0.6 * giving_up.BUSY_MS
    if scenario == "request_timeout_queued":  # timeout= ignored: it waited for the busy one, then ran fully
        assert r.client_ms >= 1.5 * giving_up.QUEUED_MS


def test_a_closed_http_connection_may_or_may_not_spare_a_queued_request():
    """Triton cancels on a closed connection when it notices the close (server r24.10 http_server.cc
    RequestFiniHook); on 2.51 a queued request was sometimes dropped and sometimes still ran: either way the
    verdict matches the counts."""
    r = giving_up.give_up("http_close_queued")
    assert (r.outcome(), r.executions) in {("never_ran", 1), ("ran_to_end", 2)}, r
    assert r.client_saw == "connection closed by the client"


def test_what_each_client_raises():
    table = giving_up.what_each_client_raises()
    assert "StatusCode.DEADLINE_EXCEEDED" in table.of("deadline", "grpc")
    assert table.of("deadline", "http").startswith("TimeoutError")
    assert "StatusCode.UNAVAILABLE" in table.of("queue_full", "grpc")
    assert "Exceeds maximum queue size" in table.of("queue_full", "grpc")
    assert table.of("queue_full", "http").startswith("InferenceServerException 503")
    assert "StatusCode.UNAVAILABLE" in table.of("server_stopped", "grpc")
    assert table.of("server_stopped", "http").startswith("ConnectionRefusedError")
    assert table.retry_answered == table.retry_sent == 4 and table.retry_tries > 4  # some were refused first


@pytest.mark.app
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_chapter7_giving_up_element(embedded, lang):
    """zh: cancel in execute, the model not polling (it runs to the end); en: a deadline of 0 is refused in
    English before anything starts, then timeout= with allow_timeout_override (refused in the queue)."""
    t = lambda key, **kw: lessons.t(key, lang, **kw)  # noqa: E731
    at = open_app_page(PAGE, lang)
    assert "is_cancelled()" in shown_text(at)
    if lang == "zh":
        at.radio(key="ch7_gu_scenario").set_value("grpc_cancel_executing")
        predict_and_press(at, "ch7_gu", "never_ran", "ch7_gu_run")
        result = at.session_state["ch7_gu_result"]
        assert result.outcome() == "ran_to_end" and result.victim_ms() >= 0.8 * giving_up.BUSY_MS
        shown = shown_text(at)
        assert t("ch7.gu_ran_to_end") in shown and t("predict.wrong") in shown
        return
    at.radio(key="ch7_gu_scenario").set_value("request_timeout_override")
    at.number_input(key="ch7_gu_deadline").set_value(0.0)
    at.radio(key="tk_predict_ch7_gu").set_value("never_ran")
    at.button(key="ch7_gu_run").click()
    at.run()
    assert not at.exception
    assert t("error.giving_up_bad_deadline") in [e.value for e in at.error]
    assert "ch7_gu_result" not in at.session_state
    at.number_input(key="ch7_gu_deadline").set_value(0.2)
    predict_and_press(at, "ch7_gu", "never_ran", "ch7_gu_run")
    result = at.session_state["ch7_gu_result"]
    assert result.outcome() == "never_ran" and "Request timeout expired" in result.client_saw
    assert t("predict.right") in shown_text(at)
