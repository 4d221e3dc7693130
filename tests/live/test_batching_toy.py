"""Chapter 1's batching toy: the Conceptual Guide's five orders and a steady stream, in both languages."""

from __future__ import annotations

from pathlib import Path

import conftest
import pytest
from conftest import switch_page
from streamlit.testing.v1 import AppTest

from triton_kitchen.core import lessons

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.mark.app
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_toy_replays_the_guide_and_a_stream(server, monkeypatch, lang):
    conftest.use_remote(monkeypatch, server)
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["lang"] = lang
    switch_page(at, "views/ch1_inference_server.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]

    def makespan() -> str:
        label = lessons.t("toy.makespan", lang)
        return next(m.value for m in at.metric if m.label == label)

    assert makespan() == "5X"  # no batching: one order after another
    for case, expected in (("on", "3X"), ("delay", "7/3 X"), ("two", "3X"), ("two_on", "2X")):
        at.radio(key="toy_case").set_value(case).run()
        assert makespan() == expected, case

    at.radio(key="toy_mode").set_value("stream").run()
    assert not at.exception, [e.value for e in at.exception]
    labels = {m.label: m.value for m in at.metric}
    # 8 clients, no delay: while one group cooks the other prepares, so two woks of about 4 take turns
    assert 3.5 <= float(labels[lessons.t("toy.mean_batch", lang)]) <= 4.5
    assert any(
        lessons.t("toy.queueing", lang, queue=0, compute=0, outside=0, rps=0, c=8, cycle=0)[:8] in i.value
        for i in at.info
    )
    at.toggle(key="toy_on").set_value(False).run()
    assert {m.label: m.value for m in at.metric}[lessons.t("toy.mean_batch", lang)] == "1.00"

    at.radio(key="toy_arrivals").set_value("open").run()
    at.slider(key="toy_rate").set_value(600).run()  # more than the simulated kitchen can cook
    assert [w.value for w in at.warning] == [lessons.t("toy.saturated", lang)]
    at.slider(key="toy_rate").set_value(20).run()
    assert not at.warning
