"""flow.py: frames sit on the trace's timestamps; every ensemble animates live; recorded replay; Gantt."""

from __future__ import annotations

import math
import shutil
import time
from pathlib import Path

import conftest
import pytest

from triton_kitchen.core import kserve
from triton_kitchen.core.config import load_repository
from triton_kitchen.core.ensemble import build_dag
from triton_kitchen.core.errors import KitchenError
from triton_kitchen.tools import flow
from triton_kitchen.tools.flow import step_models

ROOT = Path(__file__).resolve().parents[2]
ENSEMBLES = sorted(
    name
    for name, e in load_repository(ROOT / "model_repository").items()
    if e.config is not None and e.config.platform == "ensemble"
)


@pytest.fixture(scope="module")
def recorded_runs() -> dict[str, flow.FlowRun]:
    return {r.dag.name: r for r in flow.recorded()}


def expected_state(ts: dict[str, int], t: int) -> str:
    """A step's state from its raw Triton timestamps, written independently of StepTrace.state_at."""
    if t < ts["REQUEST_START"]:
        return "idle"
    if t >= ts["REQUEST_END"]:
        return "done"
    if ts["QUEUE_START"] <= t < ts["COMPUTE_START"]:
        return "queued"
    if ts["COMPUTE_START"] <= t < ts["COMPUTE_END"]:
        return "computing"
    return "handoff"


def test_positions_are_the_dag_pages_layout(recorded_runs):
    """One layout for the DAG page and the animation: every node and edge from diagram.compute_layout."""
    from triton_kitchen.tools.diagram import compute_layout

    for run in recorded_runs.values():
        nodes, paths = flow.positions(run.dag)
        lay = compute_layout(run.dag)
        assert nodes == lay.positions
        assert set(paths) == set(run.dag.edges())
    for gone in ("stage_layout", "ROW_GAP", "point_along"):  # the private fallback layout
        assert not hasattr(flow, gone)


def test_errors_carry_code_and_detail():
    err = flow.FlowError("bad_config", "line 3: expected '}'")
    assert isinstance(err, KitchenError) and (err.code, err.detail) == ("bad_config", "line 3: expected '}'")
    assert flow.array_bytes is not None  # still importable from flow (its home is tensors)


def test_a_programming_error_is_not_a_flow_error(monkeypatch):
    """Only a config that cannot be read is "not an ensemble"; a bug surfaces as itself."""
    import triton_kitchen.tools.flow.run as run_module

    def broken(*args, **kwargs):
        raise TypeError("a bug")

    monkeypatch.setattr(run_module, "build_dag", broken)
    with pytest.raises(TypeError):
        flow.send(None, "image_classifier")
    monkeypatch.undo()
    with pytest.raises(flow.FlowError) as err:  # a model the repository lacks still is one
        flow.send(None, "no_such_model")
    assert err.value.code == "not_ensemble"


def test_recorded_trace_covers_every_ensemble(recorded_runs):
    assert sorted(recorded_runs) == ENSEMBLES
    for run in recorded_runs.values():
        assert run.source == "recorded"
        assert sorted(run.timeline.by_step()) == list(range(len(run.dag.steps)))


@pytest.mark.parametrize("pacing", flow.PACINGS)
def test_frame_timing_equals_the_trace_timestamps(recorded_runs, pacing):
    for run in recorded_runs.values():
        frs = flow.frames(run, "en", pacing)
        times = [f.t_ns for f in frs]
        assert times == sorted(times)
        # every instant Triton recorded is a key frame, at exactly that nanosecond; nothing else is
        stamps = {ns for ns, _, _ in run.timeline.events()}
        keys = {f.t_ns for f in frs if f.key}
        assert stamps <= keys
        assert keys == set(flow.key_times(run))
        assert times[0] == min(stamps) and times[-1] == max(stamps)
        # what each frame shows is what the raw timestamps say at that instant
        raw = {c.step: c.timestamps for c in run.timeline.root.children}
        for f in frs:
            for i, s in enumerate(run.dag.steps):
                assert f.states[s.id] == expected_state(raw[i], f.t_ns), (run.dag.name, s.id, f.t_ns)
        # the figure carries the same instants, and the slider shows them in ms since the origin
        fig = flow.animation(run, "en", pacing)
        assert list(fig.layout.meta["frame_t_ns"]) == times
        origin = run.timeline.origin_ns
        labels = [s.label for s in fig.layout.sliders[0].steps]
        assert labels == [f"{(t - origin) / 1e6:.3f} ms" for t in times]


def test_real_pacing_plays_in_proportion_to_trace_time(recorded_runs):
    """All frames show for the same time, so a frame's index is its display time."""
    run = recorded_runs["tta_ensemble"]
    target = 200
    frs = flow.frames(run, "en", "real", target)
    keys = flow.key_times(run)
    tick = (keys[-1] - keys[0]) / target
    for idx, f in enumerate(frs):
        if f.key:  # rounding: at most half a frame per gap, a minimum of one frame per gap
            assert abs(idx - (f.t_ns - keys[0]) / tick) <= keys.index(f.t_ns) + 1
    # long gaps get many frames, short gaps one: the real pacing differs from the events pacing
    assert len(frs) != len(flow.frames(run, "en", "events", target))


def test_tensors_travel_each_edge_and_branches_move_together(recorded_runs):
    run = recorded_runs["tta_ensemble"]
    frs = flow.frames(run, "en")
    seen = set()
    for f in frs:
        seen.update(e for e, frac in f.tensors.items() if 0 < frac < 1)
    assert seen == {e for e in run.dag.edges()}
    busy = [
        sum(1 for s in ("classifier#1", "hflip", "classifier#2") if f.states[s] in ("queued", "computing"))
        for f in frs
    ]
    assert max(busy) >= 2  # the two branches are in flight at the same time
    hops = {(h.src, h.dst): h for h in flow.hops(run)}
    for h in hops.values():
        assert h.depart <= h.arrive
    label = flow.tensor_label(run, "image_tensor")
    assert label == "image_tensor [1,3,224,224] 602 kB"


def test_captions_in_both_languages(recorded_runs):
    run = recorded_runs["cascade_ensemble"]
    en = [f.caption for f in flow.frames(run, "en")]
    zh = [f.caption for f in flow.frames(run, "zh")]
    assert len(en) == len(zh) and en != zh
    for c in en + zh:
        assert "\n" not in c and "lab_flow." not in c and " ms · " in c
    assert any("queue" in c for c in en) and any("队列" in c for c in zh)


def test_gantt_bars_are_the_trace_phases(recorded_runs):
    run = recorded_runs["image_classifier"]
    fig = flow.gantt(run, "en")
    origin = run.timeline.origin_ns
    rows = flow.gantt_rows(run)
    bars = sum(len(t.x) for t in fig.data)
    assert bars == len(rows)
    infer = next(t for t in fig.data if t.name == "infer")
    want = sorted((p.start_ns - origin) / 1e6 for _, p in rows if p.kind == "infer")
    assert sorted(infer.base) == pytest.approx(want)
    kinds = {p.kind for _, p in rows}
    assert {"queue", "compute_input", "infer", "compute_output", "client_send", "client_receive"} <= kinds


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


def test_a_size_the_trace_did_not_give_is_said_in_words(recorded_runs):
    """A BYTES tensor's size is its strings': where the trace gave none, the label says so in the reader's language
    (as the DAGs do), not "?"."""
    import copy

    run = copy.deepcopy(recorded_runs["image_classifier"])
    run.sizes.pop("image_bytes", None)
    assert flow.tensor_label(run, "image_bytes", "en").endswith(" size varies")
    assert flow.tensor_label(run, "image_bytes", "zh").endswith(" 大小不定")
    assert flow.tensor_label(run, "image_tensor", "zh") == "image_tensor [1,3,224,224] 602 kB"
