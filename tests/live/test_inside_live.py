"""``trace``: one request seen from inside an ensemble (triton_kitchen.tools.inside, cli_trace).

The pure parts (the failing step from what ran, pruning from the DAG, fitting a file to an input) run offline;
the rest against the real embedded server, over both protocols, with and without Triton's trace.

The tests of this topic that need no server, app or browser: tests/unit/test_inside.py.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from _shared.inside import run_trace_cli
from conftest import settled

from triton_kitchen.core import kserve
from triton_kitchen.core.samples import image_tensor
from triton_kitchen.tools import inside

KEYS = {"ok", "error", "failed_step", "steps", "pruned", "outputs"}
STEP_KEYS = {"model", "version", "ran", "queue_ms", "compute_ms"}


# -- live -----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def files(tmp_path_factory, sample_jpegs):
    d = tmp_path_factory.mktemp("inside")
    (d / "cat.jpg").write_bytes(sample_jpegs["chelsea"])
    (d / "not_an_image.txt").write_bytes(b"these bytes are no image")
    np.save(d / "cat.npy", image_tensor(sample_jpegs["chelsea"]))
    np.save(d / "small.npy", np.zeros((3, 100, 100), np.float32))
    return d


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_a_good_request_on_the_embedded_server_is_read_from_its_trace(server, sample_jpegs, protocol):
    arrays = {"image_bytes": np.array([[sample_jpegs["coffee"]]], dtype=object)}
    report = inside.look_inside(server.endpoint, "tta_ensemble", arrays, protocol=protocol)
    doc = report.to_json()
    assert doc["ok"] and doc["failed_step"] is None and doc["pruned"] == [] and KEYS <= set(doc)
    assert [s["model"] for s in doc["steps"]] == [
        "preprocess",
        "classifier",
        "hflip",
        "classifier",
        "fuse_logits",
        "postprocess",
    ]
    assert all(set(s) == STEP_KEYS and s["ran"] and s["version"] == 1 for s in doc["steps"])
    assert all(s["compute_ms"] > 0 and s["queue_ms"] >= 0 for s in doc["steps"])
    assert doc["outputs"] == {"top5_labels": [1, 5], "top5_scores": [1, 5]}
    assert doc["evidence"]["ran"] == "trace"


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_a_failing_first_step_is_named_from_trace_statistics_and_text(server, protocol):
    arrays = {"image_bytes": np.array([[b"no image here"]], dtype=object)}
    report = inside.look_inside(server.endpoint, "image_classifier", arrays, protocol=protocol)
    assert not report.ok and "not_an_image" in report.error
    assert report.failed_step == "preprocess"
    assert report.evidence["failed_step"] == ["trace", "statistics", "error_text"]
    assert [s.ran for s in report.steps] == [True, False, False]
    # Triton 2.51 counts the Python step's error response as a success of preprocess: the proof that
    # "ran" cannot mean "succeeded" (the ensemble alone counts the failure)
    stats = kserve.statistics(server.endpoint, "preprocess")["model_stats"][0]["inference_stats"]
    assert stats["success"]["count"] >= 1


# -- pruning you can see: second_opinion's classifier_coarse feeds only coarse_logits ----------
def _executions(server, models) -> dict[str, int]:
    return {
        m: int(kserve.statistics(server.endpoint, m)["model_stats"][0]["execution_count"]) for m in models
    }


SECOND_OPINION_STEPS = ["preprocess", "classifier", "postprocess", "classifier_coarse"]


@pytest.mark.parametrize(
    "outputs, pruned",
    [
        (None, []),  # no outputs named: every output, every step
        (["top5_labels", "top5_scores"], ["classifier_coarse"]),
        (["top5_labels"], ["classifier_coarse"]),
        (["coarse_logits"], ["classifier", "postprocess"]),
    ],
)
@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_triton_prunes_the_steps_no_requested_output_needs(server, sample_jpegs, protocol, outputs, pruned):
    """What Triton 2.51 does, as it is: a step whose outputs nobody asked for does not execute (its execution
    count stays), whether the request names one output or several; the trace agrees with the counts."""
    arrays = {"image_bytes": np.array([[sample_jpegs["chelsea"]]], dtype=object)}
    start = _executions(server, SECOND_OPINION_STEPS)
    inside.look_inside(server.endpoint, "second_opinion", arrays, protocol=protocol)  # warm every step
    # the statistics of the steps land a moment after the answer: wait for the warm-up's, then for the run's
    read = lambda: _executions(server, SECOND_OPINION_STEPS)  # noqa: E731
    before = settled(read, lambda now: all(now[m] > start[m] for m in now))
    report = inside.look_inside(server.endpoint, "second_opinion", arrays, outputs, protocol)
    ran = set(SECOND_OPINION_STEPS) - set(pruned)
    settled(read, lambda now: all(now[m] > before[m] for m in ran))
    time.sleep(0.3)  # and a moment more, for a pruned step's count that would rise if it ran
    after = read()
    rose = {m for m, n in after.items() if n > before[m]}
    assert rose == set(SECOND_OPINION_STEPS) - set(pruned)  # Triton's own counts, read apart from `inside`
    assert report.ok and report.pruned == pruned and report.evidence["ran"] == "trace"
    assert {s.model for s in report.steps if s.ran} == rose
    assert set(report.outputs) == set(outputs or ["top5_labels", "top5_scores", "coarse_logits"])


PASS_PY = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor("y", pb_utils.get_input_tensor_by_name(r, "x").as_numpy())])
                for r in requests]
"""
REJECT_PY = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse(error=pb_utils.TritonError("values refused")) for _ in requests]
"""
TINY = {
    "tk_pass": """name: "tk_pass" backend: "python" max_batch_size: 8
input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]""",
    "tk_reject": """name: "tk_reject" backend: "python" max_batch_size: 8
input [ { name: "y" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "out" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]""",
    "tk_reject_late": """name: "tk_reject_late" platform: "ensemble" max_batch_size: 8
input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "out" data_type: TYPE_FP32 dims: [ 4 ] } ]
ensemble_scheduling { step [
  { model_name: "tk_pass" model_version: -1 input_map { key: "x" value: "x" } output_map { key: "y" value: "y" } },
  { model_name: "tk_reject" model_version: -1 input_map { key: "y" value: "y" } output_map { key: "out" value: "out" } }
] }""",
}


@pytest.fixture(scope="module")
def rejecting(server, tmp_path_factory):
    """A second, tiny real server whose ensemble's last step answers every request with an error. (Triton will
    not load an ensemble through the repository API whose step model came through it too: "failed to poll".)"""
    from triton_kitchen.core.server import EmbeddedServer

    repo = tmp_path_factory.mktemp("reject_repo")
    for name, config in TINY.items():
        (repo / name / "1").mkdir(parents=True)
        (repo / name / "config.pbtxt").write_text(config)
    (repo / "tk_pass" / "1" / "model.py").write_text(PASS_PY)
    (repo / "tk_reject" / "1" / "model.py").write_text(REJECT_PY)
    srv = EmbeddedServer(repo, http_port=0, grpc_port=0, metrics_port=0, build_models=False)
    srv.start(timeout=120)
    yield srv
    srv.stop()


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_a_failing_later_step_that_names_nobody_is_found_by_what_ran(rejecting, tmp_path, protocol, capsys):
    """The error text names no step ("values refused"): the counts alone decide, on a server whose trace
    API is closed to this client (an address without the embedded server's key), over both protocols."""
    np.save(tmp_path / "x.npy", np.arange(4, dtype=np.float32))
    url = rejecting.grpc_url if protocol == "grpc" else rejecting.http_url
    rc, doc, err = run_trace_cli(capsys, "--model", "tk_reject_late", "--input", str(tmp_path / "x.npy"),
                        "--protocol", protocol, "--url", url, "--stats-url", rejecting.http_url)  # fmt: skip
    assert rc == 1 and not doc["ok"] and "values refused" in doc["error"] and "values refused" in err
    assert doc["failed_step"] == "tk_reject"
    assert [(s["model"], s["ran"]) for s in doc["steps"]] == [("tk_pass", True), ("tk_reject", True)]
    assert doc["evidence"]["failed_step"] == ["statistics"] and doc["evidence"]["ran"] == "statistics"
    assert any("no trace" in n and "restricted" in n for n in doc["evidence"]["notes"])


def test_the_embedded_trace_sees_the_late_failure_too(rejecting):
    report = inside.look_inside(rejecting.endpoint, "tk_reject_late", {"x": np.ones((1, 4), np.float32)})
    assert report.failed_step == "tk_reject" and report.evidence["failed_step"] == ["trace", "statistics"]
    assert all(s.ran and s.scheduled for s in report.steps)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_cli_against_a_running_server(server, files, protocol, capsys):
    url = server.grpc_url if protocol == "grpc" else server.http_url
    rc, doc, _ = run_trace_cli(capsys, "--model", "ensemble_pipeline", "--input", str(files / "cat.npy"),
                      "--protocol", protocol, "--url", url, "--stats-url", server.http_url)  # fmt: skip
    assert rc == 0 and doc["ok"] and doc["outputs"] == {"output_label": [1, 1000]}
    assert [(s["model"], s["ran"]) for s in doc["steps"]] == [("classifier", True), ("postprocess", True)]
    assert all(s["compute_ms"] is not None for s in doc["steps"])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--model", "no_such_model", "--input", "{cat_npy}"], "no model 'no_such_model'"),
        (["--model", "ensemble_pipeline", "--input", "{small_npy}"], "holds shape [3, 100, 100]"),
        (
            ["--model", "image_classifier", "--input", "{cat_jpg}", "--outputs", "logits"],
            "has no output logits",
        ),
        (
            ["--model", "classifier", "--input", "{cat_npy}", "--outputs", "top5"],
            "no output top5; its outputs: logits",
        ),
        (["--model", "streamer", "--input", "{cat_jpg}"], "decoupled"),
    ],
)
def test_bad_input_is_one_line_and_one_json_document(server, files, capsys, argv, message):
    paths = {"cat_npy": files / "cat.npy", "small_npy": files / "small.npy", "cat_jpg": files / "cat.jpg"}
    argv = [a.format(**paths) for a in argv]
    rc, doc, err = run_trace_cli(capsys, *argv, "--url", server.http_url)
    assert rc == 1 and doc["ok"] is False and message in doc["error"] and KEYS <= set(doc)
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err


def test_the_default_is_the_embedded_server_read_through_its_trace(server, files):
    """No --url: the command starts its own embedded server, whose trace is open to it (``server`` only marks
    this test live; the command's server is its own)."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "triton_kitchen", "trace", "--model", "image_classifier", "--input",
         str(files / "cat.jpg"), "--outputs", "top5_labels", "--json"],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and doc["ok"] and doc["evidence"]["ran"] == "trace", proc.stderr
    assert doc["outputs"] == {"top5_labels": [1, 5]}
    assert proc.stderr.strip() == "starting the embedded tritonserver ..."


def test_a_model_that_is_no_ensemble_is_its_own_one_step(server, files, capsys):
    rc, doc, _ = run_trace_cli(
        capsys, "--model", "classifier", "--input", str(files / "cat.npy"), "--url", server.http_url
    )
    assert rc == 0 and doc["outputs"] == {"logits": [1, 1000]} and doc["pruned"] == []
    assert [(s["model"], s["ran"], s["version"]) for s in doc["steps"]] == [("classifier", True, 1)]
    assert not any("other requests" in n for n in doc["evidence"]["notes"])
