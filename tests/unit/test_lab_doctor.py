"""The Triton doctor's page (views/lab_doctor.py) without Triton: bad input (an address that is not Triton, nothing
listening, a slow server, a typo) each said clearly with the page still working after it; a finished report shown
as its chart and card in zh and en; a run that never reached its end said to be stopped. Also the page's pure
parts: which server it examines (``target_of``) and the chart (``time_figure``).

The page against the embedded server: tests/live/test_lab_doctor_live.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests._shared.plain_http import plain_http
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.lessons import t
from triton_kitchen.core.server import free_port
from triton_kitchen.tools import doctor
from triton_kitchen.tools.doctor_card import card
from triton_kitchen.tools.doctor_figures import measured_cells, time_figure

REPORT = json.loads((Path(__file__).resolve().parents[1] / "_shared" / "doctor_report.json").read_text())
APP = Endpoint("127.0.0.1:18000", "127.0.0.1:18001", embedded=True, headers={"triton-kitchen-key": "k"})


@pytest.fixture
def no_app_server(monkeypatch):
    """The page with no server of the app's (the embedded one is not started by a unit test)."""
    import ui.server

    monkeypatch.setattr(ui.server, "endpoint", lambda: None)


def _page(lang: str) -> AppTest:
    at = AppTest.from_file("views/lab_doctor.py", default_timeout=30)
    at.query_params["lang"] = lang
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _examine(at: AppTest, url: str) -> AppTest:
    at.text_input(key="doctor_url").set_value(url)
    at.button(key="doctor_run").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.app
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_bad_input_is_said_clearly_and_the_page_keeps_working(no_app_server, lang):
    at = _page(lang)
    assert at.button(
        key="doctor_run"
    ).disabled  # no server of the app's and nothing typed: nothing to examine
    assert at.info[0].value == t("lab_doctor.no_server", lang)
    with plain_http() as url:
        _examine(at, url)
    assert [e.value for e in at.error] == [t("error.doctor_not_triton", lang)]
    assert "404" in at.code[-1].value  # the card: Triton's absence, with what the address answered
    assert not at.get("plotly_chart")
    _examine(at, f"127.0.0.1:{free_port()}")  # nothing listening there
    assert [e.value for e in at.error] == [t("error.doctor_not_reachable", lang)]
    _examine(at, "not a host:80")
    assert [e.value for e in at.error] == [t("error.doctor_bad_url", lang)]
    assert not at.warning  # none of these is a stopped run


@pytest.mark.app
def test_a_slow_server_is_said_so_within_the_pages_timeout(no_app_server):
    with plain_http(delay_s=doctor_page_timeout() + 2) as url:
        at = _examine(_page("en"), url)
    assert [e.value for e in at.error] == [t("error.doctor_slow_server", "en")]


def doctor_page_timeout() -> float:
    import ast

    tree = ast.parse(Path("views/lab_doctor.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "REQUEST_TIMEOUT_S":
            return float(ast.literal_eval(node.value))
    raise AssertionError("views/lab_doctor.py has no REQUEST_TIMEOUT_S")


@pytest.mark.app
def test_a_report_is_shown_as_chart_and_card_in_the_pages_language(monkeypatch):
    import ui.server

    seen = {}

    def fake_run_doctor(http_url, grpc_url=None, model=None, quick=False, progress=None, headers=None, **kw):
        seen.update(http=http_url, grpc=grpc_url, model=model, quick=quick, headers=headers)
        for step in ("step_server", "step_knee", "step_cell"):
            progress(step, {"protocol": "grpc", "concurrency": 2})
        return REPORT

    monkeypatch.setattr(ui.server, "endpoint", lambda: APP)
    monkeypatch.setattr(doctor, "run_doctor", fake_run_doctor)
    at = _page("zh")
    assert at.text_input(key="doctor_url").placeholder == t(
        "lab_doctor.url_placeholder", "zh", url=APP.http_url
    )
    at.button(key="doctor_run").click()
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    # empty address: the app's own server, its gRPC port and key; quick by default
    assert seen == {"http": APP.http_url, "grpc": APP.grpc_url, "model": None, "quick": True,
                    "headers": APP.headers}  # fmt: skip
    assert at.code[-1].value == card(REPORT, "zh")
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert chart["layout"]["title"]["text"] == t("lab_doctor.chart_title", "zh")
    assert t("doctor.part_compute", "zh") in [trace["name"] for trace in chart["data"]]
    at.query_params["lang"] = "en"  # the same report, read in English
    at.run()
    assert at.code[-1].value == card(REPORT, "en")
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert chart["layout"]["title"]["text"] == t("lab_doctor.chart_title", "en")


@pytest.mark.app
def test_a_run_that_never_ended_is_said_to_be_stopped(monkeypatch):
    import ui.server

    monkeypatch.setattr(ui.server, "endpoint", lambda: APP)
    at = _page("en")
    at.session_state["doctor_running"] = True  # what a run ended by Stop (a rerun mid-run) leaves behind
    at.run()
    assert [w.value for w in at.warning] == [t("lab_doctor.stopped", "en")]
    at.run()
    assert not at.warning  # said once


# -- the pure parts -------------------------------------------------------------------------------------------------
def test_the_page_examines_the_typed_server_or_the_apps_own():
    assert doctor.target_of("", "", APP) == (APP.http_url, APP.grpc_url, APP.headers)
    assert doctor.target_of(f"http://{APP.http_url}/", "", APP) == (APP.http_url, APP.grpc_url, APP.headers)
    assert doctor.target_of("10.0.0.7:8000", "", APP) == (
        "10.0.0.7:8000",
        None,
        None,
    )  # not given the app's key
    assert doctor.target_of("10.0.0.7:8000", "10.0.0.7:9001", None) == (
        "10.0.0.7:8000",
        "10.0.0.7:9001",
        None,
    )


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_chart_has_a_bar_per_cell_and_a_trace_per_part(lang):
    fig = time_figure(REPORT, lang)
    cells = measured_cells(REPORT)
    assert len(cells) == 10
    names = [tr.name for tr in fig.data]
    assert names[0] == t("doctor.part_serialize", lang) and names[-1] == t("doctor.part_unexplained", lang)
    for trace in fig.data:
        assert list(trace.y) == [f"{c['protocol']} ×{c['concurrency']}" for c in cells]
    # each bar adds up to the cell's end-to-end time (unexplained being what the parts leave)
    for i, cell in enumerate(cells):
        assert sum(tr.x[i] for tr in fig.data) == pytest.approx(cell["e2e_ms"])
    assert fig.layout.title.text == t("lab_doctor.chart_title", lang)
