"""flow.py: frames sit on the trace's timestamps; every ensemble animates live; recorded replay; Gantt.

Here the tests that need no server, app or browser; the others: tests/live/test_flow_live.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from triton_kitchen.core import catalog
from triton_kitchen.core.config import load_repository
from triton_kitchen.core.errors import KitchenError
from triton_kitchen.tools import flow

ROOT = Path(__file__).resolve().parents[2]
ENSEMBLES = sorted(  # the flow lab's ensembles: a drill's ensemble, loaded on first use, is not one of them
    name
    for name, e in load_repository(ROOT / "model_repository").items()
    if e.config is not None and e.config.platform == "ensemble" and name not in catalog.LOADED_ON_FIRST_USE
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


def test_a_size_the_trace_did_not_give_is_said_in_words(recorded_runs):
    """A BYTES tensor's size is its strings': where the trace gave none, the label says so in the reader's language
    (as the DAGs do), not "?"."""
    import copy

    run = copy.deepcopy(recorded_runs["image_classifier"])
    run.sizes.pop("image_bytes", None)
    assert flow.tensor_label(run, "image_bytes", "en").endswith(" size varies")
    assert flow.tensor_label(run, "image_bytes", "zh").endswith(" 大小不定")
    assert flow.tensor_label(run, "image_tensor", "zh") == "image_tensor [1,3,224,224] 602 kB"


def test_flow_gantt_legend_colours_are_distinct_and_titles_short():
    for run in flow.recorded():
        for lang in ("zh", "en"):
            fig = flow.gantt(run, lang)
            colours = {}
            for tr in fig.data:
                if tr.showlegend is not False:
                    colours.setdefault(tr.marker.color, []).append(tr.name)
            assert all(len(names) == 1 for names in colours.values()), colours
            for title in (fig.layout.title.text, flow.animation_title(run, lang)):
                assert "（" not in title and "(" not in title, title  # no nested brackets to cut off
                assert len(title) <= 60, title
    run = flow.recorded()[
        0
    ]  # the figure carries that title (one figure: each costs a second of plotly's checks)
    assert flow.animation(run, "zh").layout.title.text == flow.animation_title(run, "zh")


def test_flow_animation_labels_are_not_clipped():
    run = {r.dag.name: r for r in flow.recorded()}["image_classifier"]
    fig = flow.animation(run, "zh")
    nodes, _ = flow.positions(run.dag)
    xs = [p[0] for p in nodes.values()]
    assert fig.layout.xaxis.range[1] - max(xs) >= 0.9  # half a tensor label beside the last node
    for fr in fig.frames:
        assert all(tr.cliponaxis is False for tr in fr.data if tr.mode and "text" in tr.mode and tr.text)
