"""Chapter 9's ensemble with a stateful step on the real server: the ensemble hands each request's correlation ID
and START/END flags to running_sum_step, so two interleaved sequences keep their own totals; B's mistakes come
back as Triton's refusals, through the ensemble, after its first step has run."""

from __future__ import annotations

import time

import pytest
from conftest import open_app_page, predict_and_press, shown_text

from triton_kitchen.core import kserve, lessons
from triton_kitchen.core.catalog import RUNNING_SUM_ENSEMBLE, RUNNING_SUM_SCALE, RUNNING_SUM_STEP
from triton_kitchen.labs import stateful


def test_the_ensemble_passes_the_id_and_flags_to_the_stateful_step(server):
    t0 = time.monotonic()
    run = stateful.through_ensemble(server.endpoint)
    assert all(kserve.model_ready(server.endpoint, m) for m in (RUNNING_SUM_SCALE, RUNNING_SUM_STEP))
    assert run.outcome() == "kept", run
    assert [s.answer.total for s in run.steps if s.learner == "A"] == [2, 6, 12, 20]
    assert [s.answer.total for s in run.steps if s.learner == "B"] == [20, 60, 120, 200]
    assert len(run.pids()) == 1  # one stub of running_sum_step held both sequences
    assert run.scale_runs is None or run.scale_runs >= run.sent
    assert time.monotonic() - t0 < 20


@pytest.mark.parametrize(("mistake", "code"), [("wrong_id", "no_start"), ("zero_id", "no_id")])
def test_a_wrong_id_is_refused_by_the_stateful_step_after_the_first_step_ran(server, mistake, code):
    run = stateful.through_ensemble(server.endpoint, mistake)
    b = {s.n: s for s in run.steps if s.learner == "B"}
    refused = b[stateful.MISTAKE_STEP]
    assert refused.answer is None and refused.code == code, refused
    assert f"in ensemble '{RUNNING_SUM_ENSEMBLE}'" in refused.error and RUNNING_SUM_STEP in refused.error
    assert b[4].answer.total == 140 and not b[4].right  # 2 * (10 + 20 + 40): step 3's 30 never arrived
    assert all(s.right for s in run.steps if s.learner == "A")
    assert run.outcome() == "lost"
    # running_sum_scale took all eight requests, the refused one too (no other test sends to it meanwhile)
    assert run.scale_runs == run.sent == 8


def test_a_sequence_never_ended_stays_open_until_the_page_ends_it(server):
    run = stateful.through_ensemble(server.endpoint, "no_end")
    assert run.outcome() == "kept"
    assert run.closed is not None and run.closed.answer is not None, run.closed
    assert run.closed.answer.total == 200 and run.closed.answer.count == 5  # still open: no START needed
    with pytest.raises(stateful.SequenceError) as caught:  # ended now: Triton no longer knows the ID
        stateful._send(
            stateful._client(server.endpoint), RUNNING_SUM_ENSEMBLE, run.ids["B"], 1.0, False, False
        )
    assert caught.value.code == "no_start"


@pytest.mark.app
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_page_runs_the_ensemble_drill(embedded, lang):
    t = lambda key, **kw: lessons.t(key, lang, **kw)  # noqa: E731
    at = open_app_page("views/ch9_scheduler.py", lang)
    predict_and_press(at, "ch9_seqens", "kept", "ch9_seqens_run")
    run = at.session_state["ch9_seqens_result"]
    assert run.outcome() == "kept" and t("predict.right") in shown_text(at)
    pids, scale = ", ".join(map(str, run.pids())), ", ".join(map(str, run.scale_pids()))
    assert t("ch9.seqens_detail_kept", n=8, wrong=0, pids=pids, scale=scale) in shown_text(at)
    mistake = "zero_id" if lang == "zh" else "no_end"
    at.radio(key="ch9_seqens_mistake").set_value(mistake)
    at.button(key="ch9_seqens_mistake_run").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["ch9_seqens_mistake_result"].mistake == mistake
    if mistake == "zero_id":  # the learner's language, then Triton's own words
        assert [e.value for e in at.error] == [t("ch9.seqens_said_zero_id")]
        assert "must specify a non-zero or non-empty correlation ID" in shown_text(at)
    else:
        assert [e.value for e in at.info] == [
            t("ch9.seqens_closed", total="200", count=5, slots=8, idle="30")
        ]
