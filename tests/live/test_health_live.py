"""Chapter 10's health drills on servers of their own (labs/health.py): what the measurements show, and the page's
two live elements through AppTest in both languages. The class's server is never touched."""

from __future__ import annotations

import pytest
from conftest import open_app_page, predict_and_press, shown_text

from triton_kitchen.core import lessons
from triton_kitchen.labs import health

PAGE = "views/ch10_operations.py"


def test_a_dead_stub_leaves_every_health_answer_at_200():
    drill = health.kill_a_stub()
    assert [s.instance for s in drill.stubs] == ["slow_drill_0_0", "slow_drill_0_1"]
    assert drill.before.all_ok() and drill.after.all_ok() and drill.after_calls.all_ok()
    assert drill.outcome() == "all_200"
    assert health.probe_decisions(drill.after_calls) == ("keep", "serve")
    before, after = drill.summary("before"), drill.summary("after")
    assert before["failed"] == 0 and len(before["by_pid"]) == 2  # both stubs answered
    assert after["failed"] >= 1, after  # the dead instance still gets requests
    assert set(after["errors"]) == {f"Stub process '{drill.killed.instance}' is not healthy."}
    assert drill.killed.pid not in after["by_pid"] and after["by_pid"]  # the other stub answers the rest
    assert 800 <= after["slowest_failure_ms"] <= 5000  # Triton waits about a second on the dead stub
    same = drill.summary("after_same_load")
    assert set(same["errors"]) <= set(after["errors"]) and drill.killed.pid not in same["by_pid"]
    reload = drill.summary("after_reload")
    assert reload["failed"] == 0 and len(reload["by_pid"]) == 2
    assert not set(reload["by_pid"]) & {s.pid for s in drill.stubs}  # two new stubs


@pytest.mark.parametrize(
    "setting, outcome, ready",
    [
        ("defaults", "no_server", None),
        ("keep_going", "up_not_ready", 400),
        ("keep_going_lenient", "up_ready", 200),
    ],
)
def test_a_model_that_fails_at_start_up(setting, outcome, ready):
    result = health.start_with_a_broken_model(setting)
    assert result.outcome() == outcome
    if not result.started:
        assert any("load failed for model 'broken_drill'" in line for line in result.failure), result.failure
        return
    assert result.health.live == 200 and result.health.ready == ready
    assert result.health.model == 400 and result.broken_body == '{"error":"Model version not ready"}'
    assert result.drill_ready == 200
    states = {r["name"]: r.get("state") for r in result.index}
    assert states == {"broken_drill": "UNAVAILABLE", "slow_drill": "READY"}
    assert "fails to load on purpose" in next(
        r["reason"] for r in result.index if r["name"] == "broken_drill"
    )


def test_an_exiting_server_closes_http_and_says_so_over_grpc():
    read = health.while_exiting()
    assert "ConnectionRefusedError" in read.http_ready, read
    assert read.grpc_live == "StatusCode.UNAVAILABLE: Server exiting", read
    assert read.in_flight_slept_ms is not None and read.in_flight_slept_ms >= 2000  # it was let finish


@pytest.mark.app
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_chapter10_health_elements(embedded, lang):
    """zh presses the start-up element (Triton's defaults: the server exits), en the stub drill (about 12 s)."""
    t = lambda key, **kw: lessons.t(key, lang, **kw)  # noqa: E731
    at = open_app_page(PAGE, lang)
    assert "--strict-readiness" in shown_text(at)
    if lang == "zh":
        at.radio(key="ch10_hl_setting").set_value("defaults")
        predict_and_press(at, "ch10_hl_start", "up_ready", "ch10_hl_start_run")
        result = at.session_state["ch10_hl_start_result"]
        assert result.outcome() == "no_server"
        shown = shown_text(at)
        assert t("ch10.hl_start_no_server") in shown and t("predict.wrong") in shown
        assert "load failed for model 'broken_drill'" in shown
        return
    predict_and_press(at, "ch10_hl_stub", "all_200", "ch10_hl_stub_run")
    drill = at.session_state["ch10_hl_stub_result"]
    assert drill.outcome() == "all_200"
    shown = shown_text(at)
    assert t("predict.right") in shown and t("ch10.hl_stub_all_200") in shown
    errors = " ".join(str(df.value) for df in at.dataframe)
    assert f"Stub process '{drill.killed.instance}' is not healthy." in errors
