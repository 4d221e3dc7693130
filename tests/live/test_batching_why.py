"""The batching lab's why layer on the real embedded server: prediction beside measurement, Triton's own split
of the time, Little's law, latency against offered load, and the live metrics panel."""

from __future__ import annotations

from pathlib import Path

import pytest
from _screen_checks import apptest_screen, problems_on_screen
from conftest import switch_page
from streamlit.testing.v1 import AppTest

from triton_kitchen.core import lessons, override
from ui import batching_why

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.mark.app
def test_lab_page_in_chinese_before_a_run(embedded):
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["lang"] = "zh"
    switch_page(at, "views/lab_batching.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert lessons.t("why.load_needs_run", "zh") in [i.value for i in at.info]
    assert lessons.t("why.m_pending", "zh") in [m.label for m in at.metric]
    at.session_state["tk_models_open"] = True  # the sidebar's models table, with the metrics port's counts
    at.run()
    table = at.sidebar.dataframe[0].value
    assert lessons.t("sidebar.col_served", "zh") in table.columns
    names = [cell.split(" ")[1] for cell in table.iloc[:, 0]]  # "✅ name", or "⛔ name · STATE"
    served = dict(zip(names, table[lessons.t("sidebar.col_served", "zh")], strict=True))
    assert served["classifier"] >= 0 and set(served) >= {"classifier", "image_classifier"}


@pytest.mark.app
@pytest.mark.slow
@pytest.mark.timing
def test_lab_shows_why_beside_what(embedded):
    server, lang = embedded, "en"
    original = override.current_config(server.endpoint)
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params["lang"] = lang
    switch_page(at, "views/lab_batching.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert [m.label for m in at.metric][-5:][0] == lessons.t(
        "why.m_success", lang
    )  # the metrics panel is live
    at.slider(key="batch_d").set_value(1)
    at.button(key="batch_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    # everything the run shows, in English (the browser's click test leaves this run to this test and test_present)
    assert problems_on_screen(apptest_screen(at), lang) == []
    captions = [c.value for c in at.caption]
    split = lessons.t("why.split", lang, setting="", queue=0, compute=0, inside=0, mean=0, outside=0)
    assert sum(1 for c in captions if split[4:12] in c) == 2  # Triton's split, for off and for on
    little = [
        c
        for c in captions
        if c.startswith(lessons.t("why.little_ok", lang, c=8, rps=0, predicted=0, measured=0, gap=0)[:6])
        or c.startswith(lessons.t("why.little_off", lang, c=8, rps=0, predicted=0, measured=0, gap=0)[:6])
    ]
    assert len(little) == 2
    table = at.dataframe[-1].value  # predicted beside measured
    assert list(table.columns)[:3] == [
        lessons.t("why.col_setting", lang),
        lessons.t("why.col_rps_measured", lang),
        lessons.t("why.col_rps_simulated", lang),
    ]
    assert (table[lessons.t("why.col_rps_simulated", lang)] > 0).all()
    assert override.current_config(server.endpoint) == original  # the lab restored the classifier

    at.button(key="why_load_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    points = at.dataframe[-1].value
    offered = points[lessons.t("why.col_offered", lang)]
    measured = points[lessons.t("why.col_rps_measured", lang)]
    assert len(points) == 6 and (offered.diff().dropna() > 0).all()
    # below saturation the server keeps up with the offered rate: within 25 %, or within three requests of the
    # page's window, whichever is more (at a low rate on a loaded machine the window holds few requests: one
    # more sent in it by rounding, one answered in it though sent before it, one late send caught up)
    edges_rps = 3 / batching_why.LOAD_WINDOW_S
    assert measured.iloc[0] > 0
    assert abs(measured.iloc[0] - offered.iloc[0]) <= max(0.25 * offered.iloc[0], edges_rps)
    assert override.current_config(server.endpoint) == original
