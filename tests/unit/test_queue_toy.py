"""Chapter 9's drawn timelines (triton_kitchen.labs.queue_toy) and the queue rules the batching toy's simulator
gained for them: priority levels, a bounded queue per level, a queue timeout with REJECT or DELAY, and a request's
own timeout. Each rule is Triton's (core r24.10 scheduler_utils.cc PriorityQueue / PolicyQueue, infer_request.cc
SetPriority); the scenarios are what chapter 9 draws. Fast tier: nothing here starts a server."""

from __future__ import annotations

import pytest

from triton_kitchen.core import lessons
from triton_kitchen.labs import queue_toy
from triton_kitchen.tools import sim_figures, simulator
from triton_kitchen.tools.simulator import FULL, TIMED_OUT, BatcherConfig, ServiceModel

X = queue_toy.X_MS
SERVICE = ServiceModel({1: X, 8: X})
LEVELS = dict(priority_levels=2, default_priority_level=2)


def _run(cfg: BatcherConfig, arrivals: list[tuple]) -> simulator.SimResult:
    return simulator.simulate_arrivals(cfg, SERVICE, arrivals)


# -- the rules ---------------------------------------------------------------------------------------------------
def test_a_request_may_shorten_a_default_timeout_never_lengthen_it():
    assert simulator.effective_timeout_us(50_000, True, 10_000) == 10_000  # shorter: used
    assert simulator.effective_timeout_us(50_000, True, 90_000) == 50_000  # longer: the default stays
    assert simulator.effective_timeout_us(50_000, True, 0) == 50_000  # none asked: the default
    assert simulator.effective_timeout_us(50_000, False, 10_000) == 50_000  # overrides not allowed
    assert simulator.effective_timeout_us(0, True, 10_000) == 0  # no default: the request's own is ignored


def test_a_requests_own_timeout_counts_only_where_overrides_are_allowed():
    arrivals = [(0.0, 1, "a")] * 16 + [(0.0, 1, "own", 0, 20_000)]  # waits 2X (60 ms) behind two batches
    for allow, refused in ((True, 1), (False, 0)):
        cfg = BatcherConfig(timeout_us=90_000, allow_timeout_override=allow)
        result = _run(cfg, arrivals)
        assert result.summary["refused"][TIMED_OUT] == refused, allow
    no_default = _run(BatcherConfig(allow_timeout_override=True), arrivals)
    assert no_default.summary["refused"][TIMED_OUT] == 0


def test_config_checks_follow_triton():
    with pytest.raises(ValueError, match=r"default priority level must be in range \[1, 2\]"):
        BatcherConfig(priority_levels=2)  # default_priority_level 0 with levels: Triton refuses the config
    with pytest.raises(ValueError):
        BatcherConfig(priority_levels=2, default_priority_level=3)
    with pytest.raises(ValueError):
        BatcherConfig(dynamic_batching=False, max_queue_size=4)  # queue policies belong to dynamic_batching
    with pytest.raises(ValueError):
        BatcherConfig(timeout_action="DROP")


def test_no_level_or_one_above_the_levels_gets_the_default():
    arrivals = [(0.0, 1, "run")] * 8 + [(1.0, 1, "none", 0), (1.0, 1, "above", 7), (1.0, 1, "top", 1)]
    result = _run(BatcherConfig(max_batch_size=1, **LEVELS), arrivals)
    levels = {r.name: r.level for r in result.requests if r.name != "run"}
    assert levels == {"none": 2, "above": 2, "top": 1}
    order = [result.requests[b.requests[0]].name for b in result.batches]
    assert (
        order.index("top") < order.index("none") < order.index("above")
    )  # level 1 first, then arrival order


def test_each_level_has_its_own_bounded_queue_and_delayed_requests_count():
    arrivals = [(0.0, 8, "run")] + [(1.0, 1, "u", 1)] * 5 + [(1.0, 1, "o")] * 5  # "run": one request of 8
    result = _run(BatcherConfig(max_queue_size=3, **LEVELS), arrivals)
    refused = [r for r in result.requests if r.refused]
    assert [r.refused for r in refused] == [FULL] * 4 and all(r.refused_ms == 1.0 for r in refused)
    assert sorted(r.name for r in refused) == ["o", "o", "u", "u"]  # 3 per level waited
    # a DELAYed request still holds its place in the count (PolicyQueue::Size: queue and delayed queue)
    cfg = BatcherConfig(
        max_batch_size=1, max_queue_size=2, timeout_us=int(X / 2 * 1000), timeout_action="DELAY"
    )
    arrivals = [(0.0, 1, "run"), (1.0, 1, "a"), (1.0, 1, "b"), (X + 1, 1, "c"), (X + 2, 1, "d")]
    late = {r.name: r for r in _run(cfg, arrivals).requests}
    assert late["b"].delayed_ms == X and late["c"].refused == "" and late["d"].refused == FULL


def test_delay_moves_a_request_behind_its_level_but_ahead_of_lower_levels():
    """The proto: DELAY waits until "all other requests at the same (or higher) priority levels that have not
    reached their timeouts are processed" — lower levels still come after it."""
    cfg = BatcherConfig(max_batch_size=1, timeout_us=int(1.5 * X * 1000), timeout_action="DELAY", **LEVELS)
    arrivals = [(0.0, 1, "run", 1), (0.0, 1, "blocker", 1), (1.0, 1, "old", 1), (1.0, 1, "low", 2)]
    result = _run(cfg, [*arrivals, (2 * X - 1, 1, "fresh", 1)])
    order = [result.requests[b.requests[0]].name for b in result.batches]
    assert order == ["run", "blocker", "fresh", "old", "low"]
    by_name = {r.name: r for r in result.requests}
    assert by_name["old"].delayed_ms == by_name["low"].delayed_ms == 2 * X  # both timed out, at their levels


def test_a_closed_loop_with_a_full_queue_keeps_sending():
    cfg = BatcherConfig(max_queue_size=2)
    service = ServiceModel({1: X, 8: X}, outside_ms=2.0)
    result = simulator.simulate(cfg, service, concurrency=12, requests=200)
    assert result.summary["refused"][FULL] > 0 and result.summary["requests"] > 0  # no client waits forever


# -- the three scenarios chapter 9 draws ---------------------------------------------------------------------------
def test_priority_scenario_next_batch_not_the_running_one():
    s = queue_toy.priority()
    assert s.ends("levels", queue_toy.URGENT) == [2.0, 2.0]  # the next batch, not the running one
    assert s.ends("fifo", queue_toy.URGENT) == [4.0, 4.0]  # behind the 22 waiting before them
    first = s.cases["levels"].batches[0]
    assert all(s.cases["levels"].requests[i].name == queue_toy.ORDINARY for i in first.requests)
    assert s.outcome() == "next"


def test_bounded_scenario_limits_each_level():
    s = queue_toy.bounded()
    assert s.accepted("one") == 8 and len(s.refused("one")) == 12
    assert s.accepted("levels") == 16 and len(s.refused("levels")) == 4
    assert len(s.refused("levels", queue_toy.URGENT)) == 2  # urgent requests are refused too
    assert s.outcome() == "sixteen"


@pytest.mark.parametrize("stream", [1, 5, 10])
def test_timeout_scenario_reject_refuses_delay_waits_out_the_stream(stream):
    s = queue_toy.timeout(stream)
    rejected = s.refused("reject", queue_toy.EARLY)
    assert len(rejected) == 8 and {r.refused for r in rejected} == {TIMED_OUT}
    assert {s.in_x(r.refused_ms) for r in rejected} == {2.0}  # when the batcher formed the next batch
    assert not s.refused("delay")
    assert s.ends("delay", queue_toy.EARLY)[-1] == 2 + stream + 1  # after every new batch: starved
    assert s.outcome() == "after"


def test_every_scenario_answer_and_case_has_words():
    for name, make in queue_toy.SCENARIOS.items():
        s = make()
        assert s.outcome() in queue_toy.OPTIONS[name]
        for lang in lessons.LANGS:
            for key in queue_toy.OPTIONS[name]:
                assert lessons.t(f"ch9.toy_{name}_{key}", lang) != f"ch9.toy_{name}_{key}"
            for case in s.cases:
                assert lessons.t(f"ch9.toy_case_{name}_{case}", lang) != f"ch9.toy_case_{name}_{case}"


@pytest.mark.parametrize("lang", lessons.LANGS)
def test_the_lanes_picture(lang):
    s = queue_toy.bounded()
    cases = [(c, r) for c, r in s.cases.items()]
    fig = sim_figures.lanes(cases, lang, queue_toy.MARKS, s.marked, unit_ms=X)
    rows = fig.layout.yaxis.categoryarray
    assert lessons.t("toy.lane_refused_row", lang, case="levels") in rows
    texts = [tr.text[0] for tr in fig.data if tr.text is not None]
    assert "8★" in texts and "2★ 2" in texts  # a batch of 8 urgent; 2 urgent and 2 ordinary refused
    assert any(tr.type == "scatter" and tr.marker.symbol == "x" for tr in fig.data)
    # REJECT: the timed-out requests' wait ends where Triton refused them, at 2X
    s = queue_toy.timeout()
    fig = sim_figures.lanes([("reject", s.cases["reject"])], lang, queue_toy.MARKS, s.marked, unit_ms=X)
    ends = {max(tr.x) for tr in fig.data if tr.type == "scatter" and tr.mode == "lines+markers"}
    assert ends == {1.0, 2.0}


# -- on the page (AppTest, no server: the drawn timelines come before any measurement) -------------------------------
def _timeline_app(name: str) -> None:
    from ui import batching_toy

    batching_toy.queue_timeline(name)


@pytest.mark.app
@pytest.mark.parametrize("lang", lessons.LANGS)
@pytest.mark.parametrize("name", list(queue_toy.SCENARIOS))
def test_predict_then_draw(name, lang):
    from conftest import predict_and_press, shown_text
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_timeline_app, args=(name,), default_timeout=30)
    at.query_params["lang"] = lang
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.get("plotly_chart"), "the picture waits for the prediction"
    expected = queue_toy.SCENARIOS[name]().outcome()
    predict_and_press(at, f"ch9_toy_{name}", expected, f"ch9_toy_{name}_draw")
    assert len(at.get("plotly_chart")) == 1
    shown = shown_text(at)
    assert lessons.t("predict.right", lang) in shown
    assert lessons.t(f"ch9.toy_{name}_{expected}", lang) in shown
    if name == "timeout":  # a longer stream: the delayed requests wait longer, the picture follows
        at.slider(key="ch9_toy_timeout_stream").set_value(9).run()
        assert lessons.t("ch9.toy_timeout_detail", lang, rejected=8, delay_end="12") in shown_text(at)
