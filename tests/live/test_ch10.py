"""Chapter 10's page: every live element driven through AppTest in both languages on the real server (predict,
measure, "your prediction / what happened"), with what each measurement must show."""

from __future__ import annotations

import pytest
from conftest import open_app_page, predict_and_press, shown_text
from streamlit.testing.v1 import AppTest

from triton_kitchen.core import kserve, lessons
from triton_kitchen.labs import model_control, wire_limits
from triton_kitchen.tools import metrics

PAGE = "views/ch10_operations.py"


def _open(lang: str) -> AppTest:
    return open_app_page(PAGE, lang)


@pytest.mark.app
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_chapter10_every_live_element(embedded, lang):
    ep = embedded.endpoint
    original = kserve.model_config(ep, model_control.MODEL)
    t = lambda key, **kw: lessons.t(key, lang, **kw)  # noqa: E731
    at = _open(lang)
    assert at.title[0].value == lessons.load_lesson(10, lang).title
    shown = shown_text(at)
    for words in ("--model-control-mode", "nv_inference_exec_count", "grpc.max_receive_message_length"):
        assert words in shown

    # model control: zh unloads then loads (a gap of refusals), en reloads with a config (none refused)
    way = "unload_load" if lang == "zh" else "reload"
    at.radio(key="ch10_way").set_value(way)
    predict_and_press(at, "ch10_ctl", "all_answered", "ch10_ctl_run")
    result = at.session_state["ch10_ctl_result"]
    assert result.way == way and result.answered > 0
    if way == "reload":
        assert result.refused == 0 and result.outcome() == "all_answered"
    else:
        assert result.refused > 0 and result.outcome() == "some_refused"
        assert all("unknown model" in e for e in result.errors()), result.errors()
        # every refusal fell inside the change (it ends when the load returned), with a quarter second's slack:
        # a request is stamped before it is sent, and on loaded cores the send can come that much later
        assert all(
            result.change_start_s - 0.25 <= r.start_s <= result.change_end_s + 0.25
            for r in result.requests
            if not r.ok
        )
    shown = shown_text(at)
    assert t(f"ch10.ctl_{result.outcome()}") in shown and t("predict.yours") in shown
    assert (t("predict.right") in shown) == (way == "reload")
    assert kserve.model_config(ep, model_control.MODEL) == original  # put back
    assert kserve.model_ready(ep, model_control.MODEL)
    assert kserve.model_ready(ep, "tta_ensemble")  # unavailable while hflip was gone, back with it

    # metrics: a burst of 8 is 8 inferences in fewer executions (dynamic batching), read from port 8002
    predict_and_press(at, "ch10_met", "both_n", "ch10_met_run")
    burst = at.session_state["ch10_met_result"]
    assert burst.n == burst.answered == 8
    assert burst.delta.inferences >= 8 and burst.delta.executions < burst.delta.inferences
    assert burst.outcome() == "fewer_exec"
    assert any(line.startswith("nv_inference_exec_count{") for line in burst.after)
    shown = shown_text(at)
    assert t("predict.wrong") in shown and 'model="classifier"' in shown

    # the wire: 7 mirrored images (4,214,784 B) are over grpcio's default 4 MiB; tritonclient gets them
    predict_and_press(at, "ch10_wire", "client_refused", "ch10_wire_run")
    wire = at.session_state["ch10_wire_result"]
    assert wire.batch == 7 and wire.answer_bytes == 7 * 602_112 > wire_limits.GRPC_DEFAULT_LIMIT
    assert wire.plain_code == "RESOURCE_EXHAUSTED" and "Received message larger than max" in wire.plain_error
    assert wire.outcome() == "client_refused" and not wire.tritonclient_error
    assert t("predict.right") in shown_text(at)


def test_six_images_fit_under_the_limit(embedded):
    """The other side of the line: 6 mirrored images (3,612,672 B) come back through plain grpcio."""
    wire = wire_limits.compare(embedded.endpoint, 6)
    assert wire.outcome() == "answered" and not wire.plain_error and not wire.tritonclient_error
    assert wire.request_bytes > wire.answer_bytes == 6 * 602_112


def test_model_lines_are_the_servers_own(embedded):
    text = metrics.fetch(metrics.address_of(embedded.endpoint))
    lines = metrics.model_lines(text, "classifier", ("nv_inference_count",))
    assert lines and all(line.startswith('nv_inference_count{model="classifier"') for line in lines)
    assert metrics.model_lines(text, "no_such_model") == []


def test_a_way_outside_the_two_is_refused(embedded):
    with pytest.raises(Exception, match="way must be one of"):
        model_control.change_under_load(embedded.endpoint, "restart")
