"""The sidebar's models table fits the sidebar: readiness as a mark beside the name, the served count beside it,
and a line for a queue only while one exists (offline: a status and metrics made here, no server)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from triton_kitchen.core import lessons


def _box(lang: str, with_metrics: bool, pending: float) -> None:
    import streamlit as st

    from triton_kitchen.tools.metrics import ModelMetrics, ServerMetrics
    from triton_kitchen.tools.repository import ModelState, ServerStatus
    from ui import sidebar

    st.query_params["lang"] = lang
    status = ServerStatus(
        up=True,
        url="gpu-box:8000",
        models=[ModelState("classifier", "1", "READY"), ModelState("preprocess", "1", "UNAVAILABLE")],
    )
    counts = ServerMetrics(models={"classifier": ModelMetrics(success=12, pending=pending)})
    sidebar.models_box(status, counts if with_metrics else None)


def _open(lang: str, with_metrics: bool = True, pending: float = 0) -> AppTest:
    at = AppTest.from_function(_box, args=(lang, with_metrics, pending), default_timeout=30)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.app
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_two_columns_readiness_beside_the_name(lang):
    t = lambda key, **kw: lessons.t(key, lang, **kw)  # noqa: E731
    table = _open(lang).dataframe[0].value
    assert list(table.columns) == [t("sidebar.col_model"), t("sidebar.col_served")]
    assert table.iloc[:, 0].tolist() == ["✅ classifier", "⛔ preprocess · UNAVAILABLE"]
    assert table.iloc[:, 1].tolist() == [12, 0]


@pytest.mark.app
def test_a_queue_gets_a_line_an_idle_server_none():
    waiting = lessons.t("sidebar.waiting_now", "en", models="")
    idle = _open("en")
    assert not [c.value for c in idle.caption if c.value.startswith(waiting)]
    busy = _open("en", pending=3)
    assert lessons.t("sidebar.waiting_now", "en", models="classifier 3") in [c.value for c in busy.caption]


@pytest.mark.app
def test_no_metrics_port_no_counts_and_says_so():
    at = _open("en", with_metrics=False)
    assert list(at.dataframe[0].value.columns) == [lessons.t("sidebar.col_model", "en")]
    assert lessons.t("sidebar.metrics_none", "en") in [c.value for c in at.caption]
