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
    at = AppTest.from_function(_predict_app)
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
