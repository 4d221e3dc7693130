"""Chapter 9's page: every live element driven through AppTest (predict, run on the real server, "your prediction /
what happened"), in Chinese and then, switched, in English; and the predict-then-see helper on its own. Every other
control of the page, pressed: tests/live/test_pages_in_apptest.py (but for the four measurements, run here).

The page's runs are the scheduling library's measurements on the real server (instances, priorities, a full
queue, Little's law): what they must show is asserted here, once, not again in tests/unit/test_scheduling.py.

Here the tests that need no server, app or browser; the others: tests/live/test_ch9_live.py."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

pytestmark = pytest.mark.timing  # wall-clock figures: run alone (README: tests)


def _predict_app() -> None:
    import streamlit as st

    from ui import predict

    options = {"up": "goes up", "down": "goes down"}
    predict.ask("demo", "Will it go up?", options)
    if st.button("run", key="run"):
        predict.lock("demo")
        st.session_state["outcome"] = "up"
    if "outcome" in st.session_state:
        predict.reveal("demo", options, st.session_state["outcome"], "detail line")


@pytest.mark.app
def test_predict_helper_keeps_the_prediction_made_before_the_run():
    at = AppTest.from_function(_predict_app, default_timeout=30)
    at.run()
    at.button(key="run").click().run()  # no prediction
    assert any("goes up" in m.value for m in at.markdown)
    assert not at.success and not at.warning
    at.radio(key="tk_predict_demo").set_value("down").run()  # chosen after the run: history stays
    assert not at.warning
    at.button(key="run").click().run()
    assert at.warning and not at.success
    at.radio(key="tk_predict_demo").set_value("up").run()
    assert at.warning and not at.success, "changing the answer afterwards must not rewrite the reveal"
    at.button(key="run").click().run()
    assert at.success and not at.warning
    assert any("detail line" in c.value for c in at.caption)


def _little_app() -> None:
    import streamlit as st

    from triton_kitchen.labs import scheduling
    from triton_kitchen.tools.bench import BenchResult
    from views import ch9_scheduler

    def bench(c: int, rps: float, mean_ms: float) -> BenchResult:
        r = BenchResult("grpc", "classifier", c, 10, 0, rps, {"p50": mean_ms}, 0, 0, None, None)
        r.latencies_ms = [mean_ms]
        return r

    runs = st.session_state.get("runs", [(2, 53, 37.7), (4, 155, 25.6)])
    st.session_state["ch9_little_result"] = scheduling.LittleResult([bench(*r) for r in runs])
    ch9_scheduler.little()


@pytest.fixture
def page_parts(monkeypatch):
    """The page's functions without the page: its module renders its lesson (and starts the server) on import."""
    import sys

    import ui.lesson
    import ui.server

    monkeypatch.setattr(ui.lesson, "render_lesson", lambda *a, **kw: None)
    monkeypatch.setattr(ui.server, "endpoint", lambda: object())  # results are given: nothing is measured
    monkeypatch.delitem(sys.modules, "views.ch9_scheduler", raising=False)
    monkeypatch.setitem(sys.modules, "views.ch9_scheduler", None)
    monkeypatch.delitem(sys.modules, "views.ch9_scheduler")


@pytest.mark.app
def test_little_shows_no_verdict_the_numbers_contradict(page_parts):
    from triton_kitchen.core import lessons

    at = AppTest.from_function(_little_app, default_timeout=30)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    shown = " ".join(w.value for w in at.warning)
    assert "53.0 → 155.0" in shown and "37.7 → 25.6" in shown
    texts = " ".join(m.value for m in at.markdown)
    for key in ("latency", "throughput", "both"):  # no "what happened" verdict under the numbers
        assert lessons.t(f"ch9.little_{key}", "zh") not in texts.split("🔮")[-1].split("\n", 1)[-1]
    at.session_state["runs"] = [(2, 40, 50), (4, 41, 98)]
    at.run()
    assert not at.warning and lessons.t("ch9.little_latency", "zh") in " ".join(m.value for m in at.markdown)


def _queue_chart_app() -> None:
    from triton_kitchen.tools.burst import Burst, Sent
    from views import ch9_scheduler

    # ten answered in two batches of five (the same answer time each), two refused at once
    sent = [Sent(i, 0, 0.0, 40.0 if i < 5 else 80.0) for i in range(10)]
    sent += [Sent(10 + i, 0, 0.0, 1.0, "Exceeds maximum queue size") for i in range(2)]
    ch9_scheduler._queue_chart(Burst("q", "", sent))


@pytest.mark.app
def test_queue_chart_shows_every_request_of_a_batch(page_parts):
    import json

    at = AppTest.from_function(_queue_chart_app, default_timeout=30)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    traces = json.loads(at.get("plotly_chart")[0].proto.spec)["data"]
    points = [(x, y) for tr in traces for x, y in zip(tr["x"], tr["y"], strict=True)]
    assert len(points) == 12 and len(set(points)) == 12  # no two requests drawn on one spot
    assert all(abs(y - round(y)) <= 0.42 for _, y in points)  # each within its own row
