"""``trace``: one request seen from inside an ensemble (triton_kitchen.tools.inside, cli_trace).

The pure parts (the failing step from what ran, pruning from the DAG, fitting a file to an input) run offline;
the rest against the real embedded server, over both protocols, with and without Triton's trace.

Here the tests that need no server, app or browser; the others: tests/live/test_inside_live.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from _shared.inside import run_trace_cli

from triton_kitchen.core.ensemble import build_dag
from triton_kitchen.core.samples import image_tensor
from triton_kitchen.core.server import DEFAULT_REPOSITORY
from triton_kitchen.tools import inside
from triton_kitchen.tools.inside import InsideError, StepReport, decide_failed_step
from triton_kitchen.tools.protocols import ModelInfo, TensorInfo


def _steps(ran: dict[str, bool], needed=None, scheduled=None) -> list[StepReport]:
    return [
        StepReport(sid, sid.split("#")[0], None, r, None, None, needed is None or sid in needed,
                   None if scheduled is None else sid in scheduled)
        for sid, r in ran.items()
    ]  # fmt: skip


CHAIN = {"preprocess": [], "classifier": ["preprocess"], "postprocess": ["classifier"]}


# -- offline --------------------------------------------------------------------------------------------
def test_the_step_that_ran_while_its_consumer_did_not_is_the_failing_one():
    steps = _steps({"preprocess": True, "classifier": True, "postprocess": False})
    failed, evidence, candidates, _ = decide_failed_step(steps, CHAIN, "in ensemble 'e', boom")
    assert (failed, evidence, candidates) == ("classifier", ["statistics"], ["classifier"])


def test_every_needed_step_ran_so_the_last_one_answered_with_the_error():
    steps = _steps({"preprocess": True, "classifier": True, "postprocess": True})
    failed, evidence, _, _ = decide_failed_step(steps, CHAIN, "postprocess: bad logits", traced=True)
    assert failed == "postprocess" and evidence == ["trace", "statistics", "error_text"]


def test_a_step_scheduled_but_never_executed_is_direct_evidence():
    steps = _steps(
        {"preprocess": True, "classifier": False, "postprocess": False},
        scheduled={"preprocess", "classifier"},
    )
    failed, evidence, _, _ = decide_failed_step(steps, CHAIN, "shape mismatch", traced=True)
    assert failed == "classifier" and evidence == ["trace"]


def test_a_failure_count_beats_the_structure():
    steps = _steps({"preprocess": True, "classifier": True, "postprocess": False})
    failed, evidence, _, _ = decide_failed_step(steps, CHAIN, "x", failed_models={"postprocess"})
    assert failed == "postprocess" and evidence == ["statistics"]


def test_parallel_branches_are_narrowed_by_the_error_text_or_left_undecided():
    preds = {"pre": [], "a": ["pre"], "b": ["pre"], "fuse": ["a", "b"]}
    ran = {"pre": True, "a": True, "b": True, "fuse": False}
    failed, evidence, candidates, notes = decide_failed_step(_steps(ran), preds, "in ensemble 'e', oops")
    assert failed is None and candidates == ["a", "b"] and "undecided" in notes[-1]
    failed, evidence, _, _ = decide_failed_step(_steps(ran), preds, "in ensemble 'e', b: oops")
    assert failed == "b" and evidence[-1] == "error_text"


def test_nothing_ran_means_refused_before_the_first_step():
    steps = _steps({"preprocess": False, "classifier": False, "postprocess": False})
    failed, _, candidates, notes = decide_failed_step(steps, CHAIN, "unexpected shape")
    assert failed is None and candidates == [] and "before its first step" in notes[0]


def test_model_names_in_error_text_are_whole_names_after_the_ensemble_prefix():
    text = "in ensemble 'image_classifier', classifier_coarse: failed"
    assert inside.named_in(text, "classifier_coarse")
    assert not inside.named_in(text, "classifier") and not inside.named_in(text, "image_classifier")


def test_needed_steps_follow_the_requested_outputs():
    dag = build_dag("cascade_ensemble", DEFAULT_REPOSITORY, validate=False)
    assert inside.needed_steps(dag, None) == {s.id for s in dag.steps}
    assert inside.needed_steps(dag, ["stage_used"]) == {
        "preprocess",
        "classifier_coarse",
        "classifier",
        "cascade_select",
    }


def _info(datatype: str, shape: list[int], batch: int = 8) -> ModelInfo:
    return ModelInfo("m", [TensorInfo("x", datatype, shape)], [], batch)


def test_files_fit_the_input_or_say_why_not(tmp_path):
    jpeg = tmp_path / "a.jpg"
    jpeg.write_bytes(b"\xff\xd8 some bytes")
    arrays = inside.read_inputs([str(jpeg)], _info("BYTES", [-1, 1]))
    assert arrays["x"].shape == (1, 1) and arrays["x"][0, 0] == b"\xff\xd8 some bytes"
    good = tmp_path / "t.npy"
    np.save(good, np.zeros((3, 224, 224), np.float32))
    assert inside.read_inputs([f"x={good}"], _info("FP32", [-1, 3, 224, 224]))["x"].shape == (1, 3, 224, 224)
    np.save(tmp_path / "s.npy", np.zeros((3, 100, 100), np.float32))
    with pytest.raises(InsideError, match=r"holds shape \[3, 100, 100\], input x takes \[-1, 3, 224, 224\]"):
        inside.read_inputs([str(tmp_path / "s.npy")], _info("FP32", [-1, 3, 224, 224]))
    np.save(tmp_path / "d.npy", np.zeros((3, 224, 224), np.float64))
    with pytest.raises(InsideError, match="holds float64, input x takes FP32"):
        inside.read_inputs([str(tmp_path / "d.npy")], _info("FP32", [-1, 3, 224, 224]))
    with pytest.raises(InsideError, match="give it a .npy file"):
        inside.read_inputs([str(jpeg)], _info("FP32", [-1, 3, 224, 224]))
    with pytest.raises(InsideError, match="cannot read"):
        inside.read_inputs([str(tmp_path / "missing.jpg")], _info("BYTES", [-1, 1]))


# -- live -----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def files(tmp_path_factory, sample_jpegs):
    d = tmp_path_factory.mktemp("inside")
    (d / "cat.jpg").write_bytes(sample_jpegs["chelsea"])
    (d / "not_an_image.txt").write_bytes(b"these bytes are no image")
    np.save(d / "cat.npy", image_tensor(sample_jpegs["chelsea"]))
    np.save(d / "small.npy", np.zeros((3, 100, 100), np.float32))
    return d


def test_a_dead_server_is_one_line(capsys, files):
    from triton_kitchen.core.server import free_port

    rc, doc, err = run_trace_cli(capsys, "--model", "image_classifier", "--input", str(files / "cat.jpg"),
                        "--url", f"127.0.0.1:{free_port()}")  # fmt: skip
    assert rc == 1 and doc["ok"] is False and "no Triton server answers" in err and err.count("\n") == 1
