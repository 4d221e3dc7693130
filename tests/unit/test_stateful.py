"""Chapter 9's stateful drill without a server: Triton's refusals to codes, IDs as typed, the verdict, the slots."""

from __future__ import annotations

import filecmp

import pytest

from triton_kitchen.core import server
from triton_kitchen.core.catalog import RUNNING_SUM, RUNNING_SUM_PLAIN
from triton_kitchen.labs import stateful
from triton_kitchen.labs.stateful import Answer, Step, TwoLearners


def test_triton_refusals_become_codes():
    assert (
        stateful.classify(
            "inference request for sequence 778 to model 'running_sum' must specify the START flag on the first "
            "request of the sequence"
        )
        == "no_start"
    )
    assert (
        stateful.classify(
            "inference request to model 'running_sum' must specify a non-zero or non-empty correlation ID"
        )
        == "no_id"
    )
    assert stateful.classify("Deadline Exceeded") == "no_slot"
    assert stateful.classify("must specify batch-size 1 due to requirements of sequence batcher") == "batch"
    assert stateful.classify("something else") == "failed"


def test_ids_as_typed():
    assert stateful.parse_id(" 42 ") == 42
    assert stateful.parse_id("learner-a") == "learner-a"
    assert stateful.parse_id("") == "" and stateful.parse_id("0") == 0  # Triton says what is wrong with them
    with pytest.raises(stateful.SequenceError):
        stateful.parse_id(str(2**64))
    assert 0 < stateful.new_id() < 2**48


def test_the_verdict_compares_every_total():
    ok = [Step("A", 1, 1.0, 1.0, Answer(1.0, 1, 7, 1.0)), Step("B", 1, 10.0, 10.0, Answer(10.0, 1, 7, 1.0))]
    assert TwoLearners(RUNNING_SUM, {"A": 1, "B": 2}, ok).outcome() == "kept"
    split = ok + [Step("A", 2, 2.0, 3.0, Answer(2.0, 1, 8, 1.0))]
    run = TwoLearners(RUNNING_SUM_PLAIN, {"A": 1, "B": 2}, split)
    assert run.outcome() == "lost" and run.wrong() == 1 and run.pids() == [7, 8]
    assert TwoLearners(RUNNING_SUM, {}, [Step("A", 1, 1.0, 1.0, error="x")]).outcome() == "lost"


def test_both_models_run_the_same_code():
    repo = server.DEFAULT_REPOSITORY
    assert filecmp.cmp(
        repo / RUNNING_SUM / "1" / "model.py", repo / RUNNING_SUM_PLAIN / "1" / "model.py", False
    )


def test_slots_from_the_config(monkeypatch):
    def config(cfg):
        monkeypatch.setattr(stateful.kserve, "model_ready", lambda ep, model: True)
        monkeypatch.setattr(stateful.kserve, "model_config", lambda ep, model: cfg)
        return stateful.batcher(None)

    direct = {"max_batch_size": 8, "instance_group": [{"count": 1}], "sequence_batching": {"direct": {}}}
    assert config(direct) == stateful.Batcher("direct", 8, 1.0)  # no idle timeout: Triton's 1 s
    oldest = {
        "max_batch_size": 4,
        "instance_group": [{"count": 2}],
        "sequence_batching": {
            "oldest": {"max_candidate_sequences": 16},
            "max_sequence_idle_microseconds": 30e6,
        },
    }
    assert config(oldest) == stateful.Batcher("oldest", 32, 30.0)
    assert config({"max_batch_size": 0, "sequence_batching": {}}).slots == 1


def test_slots_before_the_first_use_come_from_the_repository(monkeypatch):
    """running_sum waits for its first use: the page shows its slots from config.pbtxt without loading it."""
    monkeypatch.setattr(stateful.kserve, "model_ready", lambda ep, model: False)
    assert stateful.batcher(None) == stateful.Batcher("direct", 8, 30.0)


def test_right_totals_from_two_stubs_are_luck_not_state():
    steps = [
        Step("A", 1, 1.0, 1.0, Answer(1.0, 1, 7, 1.0)),
        Step("B", 1, 10.0, 10.0, Answer(10.0, 1, 8, 1.0)),
    ]
    run = TwoLearners(RUNNING_SUM_PLAIN, {"A": 1, "B": 2}, steps)
    assert run.outcome() == "kept" and run.detail() == "kept_by_chance" and run.pids_of("A") == [7]
    assert TwoLearners(RUNNING_SUM, {}, steps[:1]).detail() == "kept"
