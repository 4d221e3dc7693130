"""Chapter 9's ensemble with a stateful step, without a server: its models' configs, and the verdict of a run.

On the real server: tests/live/test_stateful_ensemble_live.py."""

from __future__ import annotations

import filecmp

import pytest

from triton_kitchen.core import catalog, server
from triton_kitchen.core.catalog import RUNNING_SUM, RUNNING_SUM_ENSEMBLE, RUNNING_SUM_SCALE, RUNNING_SUM_STEP
from triton_kitchen.labs import stateful
from triton_kitchen.labs.stateful import Answer, EnsembleRun, Step


def test_the_ensemble_schedules_a_stateless_step_then_a_stateful_one():
    models = catalog.models()
    ens = models[RUNNING_SUM_ENSEMBLE].config
    assert ens.platform == "ensemble" and not ens.HasField(
        "sequence_batching"
    )  # one scheduler: the ensemble's
    assert [s.model_name for s in ens.ensemble_scheduling.step] == [RUNNING_SUM_SCALE, RUNNING_SUM_STEP]
    assert models[RUNNING_SUM_SCALE].config.HasField("dynamic_batching")
    step = models[RUNNING_SUM_STEP].config
    assert (
        step.HasField("sequence_batching")
        and step.sequence_batching.max_sequence_idle_microseconds == 30_000_000
    )
    repo = server.DEFAULT_REPOSITORY
    assert filecmp.cmp(
        repo / RUNNING_SUM / "1" / "model.py", repo / RUNNING_SUM_STEP / "1" / "model.py", False
    )


def test_drill_models_load_on_first_use_and_stay_out_of_the_flow_lab():
    for name in (RUNNING_SUM_ENSEMBLE, RUNNING_SUM_SCALE, RUNNING_SUM_STEP):
        assert name in catalog.LOADED_ON_FIRST_USE
    assert RUNNING_SUM_ENSEMBLE not in catalog.ensemble_names()  # the flow lab sends images to that list


def _step(learner, n, x, expected, total=None, code=""):
    answer = None if total is None else Answer(total, n, 7, 1.0, scale_pid=9)
    return Step(learner, n, x, expected, answer, error="refused" if code else "", code=code)


def test_the_verdict_follows_the_totals_and_the_refusals():
    right = [_step("A", 1, 1.0, 2.0, 2.0), _step("B", 1, 10.0, 20.0, 20.0)]
    run = EnsembleRun(RUNNING_SUM_ENSEMBLE, {"A": 1, "B": 2}, right)
    assert run.outcome() == "kept" and run.scale_pids() == [9] and run.refused() == 0
    refused = [_step("A", 1, 1.0, 2.0, code="no_start"), _step("B", 1, 10.0, 20.0, code="no_id")]
    assert EnsembleRun(RUNNING_SUM_ENSEMBLE, {}, refused).outcome() == "refused"
    mixed = [*right, _step("B", 2, 20.0, 60.0, 42.0), _step("A", 2, 2.0, 6.0, code="failed")]
    run = EnsembleRun(RUNNING_SUM_ENSEMBLE, {}, mixed)
    assert run.outcome() == "lost" and run.wrong() == 2 and run.refused() == 1


def test_an_unknown_mistake_is_refused_before_any_request():
    with pytest.raises(stateful.SequenceError) as caught:
        stateful.through_ensemble(None, "typo")
    assert caught.value.code == "failed" and "no_end" in caught.value.detail
