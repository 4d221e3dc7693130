"""The batching lab's latency-against-offered-load chart, drawn from given points (no server): where the
simulated latency levels off at the senders' ceiling, the chart says so."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from triton_kitchen.core import lessons


def _app() -> None:
    import streamlit as st

    from triton_kitchen.labs.batching import LoadPoint
    from ui import batching_why

    top = st.session_state.get("top", (1000.0, 16.0))

    def sim(ms: float, rps: float) -> dict:
        return {"latency_ms": {"p50": ms, "p99": ms}, "throughput_rps": rps}

    st.session_state[batching_why.LOAD_KEY] = [
        LoadPoint(5, 5, {"p50": 47, "p99": 75}, 1, 0, sim(90, 5)),
        LoadPoint(28, 11.5, {"p50": 801, "p99": 1285}, 18, 0, sim(*top)),
    ]
    batching_why.offered_load_section(None, None, 20.0)


def _annotations(at: AppTest) -> list[str]:
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    return [a["text"] for a in spec["layout"].get("annotations", [])]


@pytest.mark.app
def test_the_senders_ceiling_is_named_where_the_simulated_latency_reaches_it():
    at = AppTest.from_function(_app, default_timeout=30)
    at.run(timeout=30)
    assert not at.exception, [e.value for e in at.exception]
    # 16 senders all waiting at 16 answers/s: 1000 ms, from the moment each request leaves
    assert _annotations(at) == [lessons.t("why.load_ceiling", "zh", n=16, ms=1000.0)]
    assert lessons.t("why.load_ceiling_note", "zh", n=16) in [c.value for c in at.caption]
    at.session_state["top"] = (300.0, 16.0)  # below the ceiling: no line, no note
    at.run(timeout=30)
    assert _annotations(at) == []
    assert lessons.t("why.load_ceiling_note", "zh", n=16) not in [c.value for c in at.caption]
