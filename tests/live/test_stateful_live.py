"""Chapter 9's stateful drill on the real server: the sequence batcher keeps each sequence on one stub, dynamic
batching with two instances splits it, and Triton's refusals reach the learner as codes."""

from __future__ import annotations

import copy
import time

import pytest
from conftest import open_app_page, predict_and_press, shown_text

from triton_kitchen.core import kserve, lessons
from triton_kitchen.core.catalog import RUNNING_SUM, RUNNING_SUM_PLAIN
from triton_kitchen.labs import stateful


def test_the_sequence_batcher_keeps_each_sequence_on_one_stub(server):
    run = stateful.two_learners(server.endpoint, RUNNING_SUM)
    assert run.outcome() == "kept", run
    assert len(run.pids()) == 1 and [s.answer.total for s in run.steps if s.learner == "A"] == [1, 3, 6, 10]


def test_two_instances_without_it_split_the_state(server):
    """Which stub takes which request is Triton's choice: up to three runs, and the verdict must follow what was
    measured (two stubs answered, and the totals disagree with the running sums) in the run that split."""
    start = time.monotonic()
    for _ in range(3):
        run = stateful.two_learners(server.endpoint, RUNNING_SUM_PLAIN)
        assert all(s.answer is not None for s in run.steps), run
        if run.outcome() == "lost":
            break
    assert run.outcome() == "lost" and len(run.pids()) == 2 and run.wrong() >= 1, run
    assert time.monotonic() - start < 20


def test_bad_input_gets_trition_refusal_codes(server):
    ep = server.endpoint
    with pytest.raises(stateful.SequenceError) as caught:
        stateful.step(ep, stateful.new_id(), 1.0)  # an ID nobody started
    assert caught.value.code == "no_start" and "must specify the START flag" in caught.value.detail
    with pytest.raises(stateful.SequenceError) as caught:
        stateful.step(ep, 0, 1.0, start=True)
    assert caught.value.code == "no_id"
    sid = "learner-" + str(stateful.new_id())
    assert stateful.step(ep, sid, 2.0, start=True).total == 2.0
    assert stateful.step(ep, sid, 3.0, end=True).total == 5.0
    with pytest.raises(stateful.SequenceError) as caught:
        stateful.step(ep, sid, 1.0)  # the sequence ended: Triton no longer knows the ID
    assert caught.value.code == "no_start"


def test_a_sequence_never_ended_loses_its_slot(server):
    """running_sum reloaded with a 0.5 s idle timeout (the class's is 30 s), then put back: a sequence left open
    is refused at its next request, and the model was never told."""
    ep = server.endpoint
    original = kserve.model_config(ep, RUNNING_SUM)
    quick = copy.deepcopy(original)
    quick["sequence_batching"]["max_sequence_idle_microseconds"] = 500_000
    kserve.load_model(ep, RUNNING_SUM, config=quick)
    try:
        sid = stateful.new_id()
        stateful.step(ep, sid, 1.0, start=True)
        time.sleep(1.5)
        with pytest.raises(stateful.SequenceError) as caught:
            stateful.step(ep, sid, 1.0)
        assert caught.value.code == "no_start"
    finally:
        kserve.load_model(ep, RUNNING_SUM, config=original)
    assert stateful.batcher(ep) == stateful.Batcher("direct", 8, 30.0)


def test_the_ninth_sequence_waits_for_a_slot(server):
    ep = server.endpoint
    ids = [stateful.new_id() for _ in range(stateful.batcher(ep).slots)]
    try:
        for sid in ids:
            stateful.step(ep, sid, 1.0, start=True)
        late = stateful.new_id()
        t0 = time.monotonic()
        with pytest.raises(stateful.SequenceError) as caught:
            stateful.step(ep, late, 1.0, start=True)
        assert caught.value.code == "no_slot" and time.monotonic() - t0 >= stateful.STEP_TIMEOUT_S * 0.9
    finally:
        for sid in ids:
            stateful.step(ep, sid, 0.0, end=True)
    # the client's deadline cancelled the waiting START, and Triton dropped it from the backlog: never run
    with pytest.raises(stateful.SequenceError) as caught:
        stateful.step(ep, late, 1.0, end=True)
    assert caught.value.code == "no_start"


@pytest.mark.app
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_page_runs_the_stateful_drill(embedded, lang):
    t = lambda key, **kw: lessons.t(key, lang, **kw)  # noqa: E731
    at = open_app_page("views/ch9_scheduler.py", lang)
    assert "CONTROL_SEQUENCE_START" in shown_text(at)
    model = RUNNING_SUM if lang == "zh" else RUNNING_SUM_PLAIN
    at.radio(key="ch9_seq_model").set_value(model)
    predict_and_press(at, "ch9_seq", "kept", "ch9_seq_run")
    result = at.session_state["ch9_seq_result"]
    assert result.model == model
    assert t(f"ch9.seq_{result.outcome()}") in shown_text(at)
    if lang == "zh":
        assert result.outcome() == "kept" and t("predict.right") in shown_text(at)
    at.text_input(key="ch9_seq_own_id").set_value("not-started-" + lang)
    at.button(key="ch9_seq_own_add").click()
    at.run()
    assert t("error.sequence_no_start") in [e.value for e in at.error]
    at.button(key="ch9_seq_own_start").click()
    at.run()
    assert not at.error and t("ch9.seq_own_start") in shown_text(at)
    at.button(key="ch9_seq_own_end").click()
    at.run()
    assert "2" in at.success[-1].value  # the total after two numbers of 1
