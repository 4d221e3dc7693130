"""flow.py: frames sit on the trace's timestamps; every ensemble animates live; recorded replay; Gantt.

The tests of this topic that need no server, app or browser: tests/unit/test_flow.py."""

from __future__ import annotations

import json
import math
import shutil
import time
from pathlib import Path

import conftest
import pytest
from _shared.pages import page, tz

from triton_kitchen.core import catalog, kserve, lessons
from triton_kitchen.core.config import load_repository
from triton_kitchen.core.ensemble import build_dag
from triton_kitchen.tools import flow
from triton_kitchen.tools.flow import step_models

ROOT = Path(__file__).resolve().parents[2]
ENSEMBLES = sorted(  # the flow lab's ensembles: a drill's ensemble, loaded on first use, is not one of them
    name
    for name, e in load_repository(ROOT / "model_repository").items()
    if e.config is not None and e.config.platform == "ensemble" and name not in catalog.LOADED_ON_FIRST_USE
)


@pytest.fixture(scope="module")
def recorded_runs() -> dict[str, flow.FlowRun]:
    return {r.dag.name: r for r in flow.recorded()}


@pytest.mark.parametrize("model", ENSEMBLES)
def test_every_ensemble_animates_live(server, sample_jpegs, model):
    run = flow.send(server.endpoint, model, image=sample_jpegs["chelsea"], protocol="grpc")
    assert run.source == "trace"
    assert sorted(run.timeline.by_step()) == list(range(len(run.dag.steps)))
    fig = flow.animation(run, "zh")
    assert len(fig.frames) >= 2 * len(run.dag.steps)
    assert math.isclose(run.timeline.server_ms, (run.timeline.root.end_ns - run.timeline.root.start_ns) / 1e6)


def test_edited_config_animates(server, sample_jpegs):
    text = (ROOT / "model_repository/image_classifier/config.pbtxt").read_text()
    text = text.replace('name: "image_classifier"', 'name: "my_pipeline"')
    run = flow.send_config(server.endpoint, text, image=sample_jpegs["coffee"], protocol="http")
    assert run.source == "trace" and run.timeline.protocol == "http"
    assert [s.model for s in run.dag.steps] == ["preprocess", "classifier", "postprocess"]
    assert flow.frames(run, "en")
    assert run.edited and run.dag.name != "my_pipeline"  # loaded under a temporary name
    assert not kserve.model_ready(server.endpoint, run.dag.name)  # unloaded again


def test_a_broken_edit_is_a_flow_error(server):
    with pytest.raises(flow.FlowError) as err:
        flow.send_config(
            server.endpoint, 'name: "x" platform: "ensemble" ensemble_scheduling { step [ { model_name: '
        )
    assert err.value.code == "bad_config"


def test_only_ensembles_may_be_loaded_from_user_text(server):
    """A python-backend config from the editor must never reach the server (no code from the page)."""
    text = 'name: "evil" backend: "python" max_batch_size: 0 input [ { name: "x" data_type: TYPE_FP32 dims: [1] } ]'
    with pytest.raises(flow.FlowError) as err:
        flow.send_config(server.endpoint, text)
    assert err.value.code == "not_ensemble"


@pytest.mark.browser
@pytest.mark.browser
def test_animation_plays_in_a_browser_and_screenshots(recorded_runs):
    """Start, middle and end of tta_ensemble's animation in Chromium (artifacts/flow_*.png)."""
    if not shutil.which("chromium") and not Path("/usr/bin/chromium").exists():
        pytest.skip("Debian's chromium is not installed")
    sync_api = pytest.importorskip("playwright.sync_api")
    art = ROOT / "artifacts"
    art.mkdir(exist_ok=True)
    run = recorded_runs["tta_ensemble"]
    fig = flow.animation(run, "en")
    html = art / "flow_tta.html"
    fig.write_html(html, include_plotlyjs=True)
    frs = flow.frames(run, "en")
    n = len(frs)
    moving = [i for i, f in enumerate(frs) if any(0 < x < 1 for x in f.tensors.values())]
    middle = min(moving, key=lambda i: abs(i - n // 2))
    from conftest import CHROMIUM, CHROMIUM_ARGS

    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1300, "height": 640})
        page.goto(html.as_uri())
        page.wait_for_selector(".main-svg")
        page.screenshot(path=str(art / "flow_start.png"))
        for label, i in (("middle", middle), ("end", n - 1)):
            page.evaluate(
                "i => Plotly.animate(document.querySelector('.plotly-graph-div'), ['f' + i],"
                " {mode: 'immediate', frame: {duration: 0, redraw: true}, transition: {duration: 0}})",
                i,
            )
            page.wait_for_timeout(300)
            page.screenshot(path=str(art / f"flow_{label}.png"))
        page.evaluate(
            "() => Plotly.animate(document.querySelector('.plotly-graph-div'), ['f0'],"
            " {mode: 'immediate', frame: {duration: 0}, transition: {duration: 0}})"
        )
        page.get_by_text("▶ fast").click()
        frame = "() => document.querySelector('.plotly-graph-div')._fullLayout._currentFrame"
        try:  # Plotly draws its frames on the browser's own clock: fewer per second on loaded cores
            page.wait_for_function(f"() => +(({frame})() || 'f0').slice(1) > 3", timeout=30_000)
        except Exception:  # noqa: BLE001 - asserted below, with the frame reached
            pass
        current = page.evaluate(frame)
        page.get_by_text("■ pause").click()
        browser.close()
    assert current and int(current[1:]) > 3  # playing advanced the frames client-side
    for label in ("start", "middle", "end"):
        assert (art / f"flow_{label}.png").stat().st_size > 10_000


@pytest.mark.app
def test_page_replays_the_recorded_trace_when_no_server_answers(monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("TRITON_HTTP_URL", "127.0.0.1:9")  # discard port: nobody answers
    monkeypatch.setenv("TRITON_GRPC_URL", "127.0.0.1:9")
    at = AppTest.from_file(str(ROOT / "views" / "lab_flow.py"), default_timeout=60)
    at.session_state["tk_lang"] = "en"
    at.run()
    assert not at.exception
    assert any("recorded" in i.value for i in at.info)
    charts = at.get("plotly_chart")
    assert len(charts) == 2
    assert "recorded" in charts[0].proto.spec
    assert at.button(key="flow_send").disabled


@pytest.mark.app
def test_the_config_editor_is_drawn_only_while_open_and_keeps_its_text(monkeypatch):
    """A fresh tab of the lab skips the editor (a text area of the whole config.pbtxt and its button); opened, it
    shows the config; an edit survives closing and opening the box again."""
    from streamlit.testing.v1 import AppTest

    from ui.boxes import OPEN_BOXES

    monkeypatch.setenv("TRITON_HTTP_URL", "127.0.0.1:9")  # nobody answers: no server is started for this
    monkeypatch.setenv("TRITON_GRPC_URL", "127.0.0.1:9")
    at = AppTest.from_file(str(ROOT / "views" / "lab_flow.py"), default_timeout=60)
    at.session_state["tk_lang"] = "en"
    at.run()
    assert not at.exception and not at.text_area and not [b for b in at.button if b.key == "flow_edit_send"]

    def box(open_: bool) -> None:  # what a click on the box's label does
        at.session_state["flow_edit_box"] = open_
        at.session_state[OPEN_BOXES] = {**at.session_state[OPEN_BOXES], "flow_edit_box": open_}
        at.run()
        assert not at.exception, [e.value for e in at.exception]

    box(True)
    editor = at.text_area(key="flow_edit_image_classifier")
    assert 'name: "image_classifier"' in editor.value
    editor.set_value(editor.value + "\n# my edit\n").run()
    box(False)
    assert not at.text_area
    box(True)
    assert at.text_area(key="flow_edit_image_classifier").value.endswith("# my edit\n")


UNRELATED = "streamer"  # in no ensemble: what the flow lab shows does not depend on it


@pytest.mark.app
def test_page_sends_live_while_an_unrelated_model_is_unloaded(server, monkeypatch):
    """The server runs with strict readiness, so one unloaded model (a batching-lab reload, say)
    makes it "not ready" while it answers every other model; the flow lab must still send live."""
    from streamlit.testing.v1 import AppTest

    repo = ROOT / "model_repository"
    assert all(UNRELATED not in step_models(build_dag(n, repo, validate=False))[0] for n in ENSEMBLES)
    conftest.use_remote(monkeypatch, server)  # remote mode on the session server
    ep = server.endpoint
    kserve.unload_model(ep, UNRELATED)
    try:
        deadline = time.monotonic() + 30
        while kserve.model_ready(ep, UNRELATED) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert kserve.live(ep) and not kserve.ready(ep)  # the trap: live, yet "not ready"
        at = AppTest.from_file(str(ROOT / "views" / "lab_flow.py"), default_timeout=60)
        at.session_state["tk_lang"] = "en"
        at.session_state["flow_model"] = "image_classifier"
        at.run()
        assert not at.exception
        assert not any("recorded" in i.value for i in at.info)
        assert not at.button(key="flow_send").disabled
        at.button(key="flow_send").click().run()
        assert not at.exception and not at.error
        run = at.session_state["flow_run"]
        assert run.dag.name == "image_classifier" and run.source == "statistics"  # a live remote send
    finally:
        kserve.load_model(ep, UNRELATED)
    assert kserve.ready(ep)


@pytest.mark.app
def test_flow_lab_page_names_and_words(remote):
    at = page("views/lab_flow.py")
    assert at.title[0].value.startswith(tz("page.lab_flow"))
    text = " ".join([at.title[0].value, *(c.value for c in at.caption), *(s.label for s in at.selectbox)])
    assert "集成模型" not in text
    assert not any("集成模型" in v for v in lessons.ui_strings("zh").values() if v)
    # a server answers: nothing drawn until the reader sends (no recording that could pass for their request)
    invitation = tz("lab_flow.send_first", send=tz("lab_flow.send"))
    assert not at.get("plotly_chart") and invitation in [i.value for i in at.info]
    at.button(key="flow_send").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    charts = at.get("plotly_chart")
    assert len(charts) == 2 and invitation not in [i.value for i in at.info]
    for chart in charts:
        assert json.loads(chart.proto.config).get("displayModeBar") is False  # no toolbar over the title


@pytest.mark.app
def test_diagrams_are_full_width(remote):
    at = page("views/ch3_multi_model.py")
    charts = at.get("graphviz_chart")
    assert charts
    at = page("views/ch2_ensemble_config.py")
    # the editor's DAG is not inside the editor's two columns any more
    cols = at.columns
    inside = [g for c in cols for g in c.get("graphviz_chart")]
    assert at.get("graphviz_chart") and not inside
