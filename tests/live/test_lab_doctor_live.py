"""The Triton doctor's page in the app (AppTest) against the session's real server, as the app's embedded server
and as a remote one: the address left empty examines the app's own server, the run ends with the chart and the
card in the page's language; a dead address typed in between gets its message and the page examines again after.

Bad input without Triton: tests/unit/test_lab_doctor.py."""

from __future__ import annotations

import json

import pytest
from conftest import open_app_page

from triton_kitchen.core.lessons import t
from triton_kitchen.core.server import free_port

TIMEOUT = 120  # one quick examination: 25 s budget, more on a loaded machine


def _run(at):
    at.button(key="doctor_run").click()
    at.run(timeout=TIMEOUT)
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.app
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_page_examines_the_apps_server(app_server, request, lang):
    at = open_app_page("views/lab_doctor.py", lang, timeout=TIMEOUT, boxes="none")
    assert at.radio(key="doctor_mode").value == "quick"
    _run(at)
    assert not at.error, [e.value for e in at.error]
    report = at.session_state["doctor_report"]
    assert report["ok"] and report["model"] and report["server"]["version"] == "2.51"
    if request.node.callspec.params["app_server"] == "embedded":  # the app's key opens its trace API
        assert report["wire_source"] == "trace", report["not_measured"]
    card_text = at.code[-1].value
    assert card_text.startswith(t("doctor.title", lang, url=report["url"]))
    assert "http-binary ×1" in card_text and "doctor." not in card_text
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert chart["layout"]["title"]["text"] == t("lab_doctor.chart_title", lang)

    # a dead address typed in: its message; the page examines the app's server again after it
    at.text_input(key="doctor_url").set_value(f"127.0.0.1:{free_port()}")
    _run(at)
    assert [e.value for e in at.error] == [t("error.doctor_not_reachable", lang)]
    at.text_input(key="doctor_url").set_value("")
    _run(at)
    assert not at.error and at.session_state["doctor_report"]["ok"]
