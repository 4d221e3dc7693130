"""The loader rules ``check`` shares with Triton 2.51 outside ensembles, one small repository each, so that
they are tested without Triton's QA suite (``test_triton_qa.py`` runs that suite where it is present).

Each expected ``triton`` text is Triton 2.51's own wording from ``model_config_utils.cc``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from triton_kitchen.cli.check import check_paths
from triton_kitchen.core.config import read_model_dir
from triton_kitchen.core.ensemble import CheckOptions
from triton_kitchen.tools import repository

ROOT = Path(__file__).resolve().parents[2]

IO = """
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
"""


def model(tmp_path: Path, name: str, config: str | None, files: dict[str, str] | None = None) -> Path:
    folder = tmp_path / name
    (folder / "1").mkdir(parents=True)
    if config is not None:
        (folder / "config.pbtxt").write_text(config)
    for rel, text in (files or {}).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


def first_error(folder: Path, **options):
    errors = [p for p in check_paths([str(folder)], options=CheckOptions(**options)) if p.is_error]
    return errors[0] if errors else None


@pytest.mark.parametrize(
    "body, triton",
    [
        (
            'max_batch_size: 4\ninput [ { name: "input" data_type: TYPE_FP32 dims: [ 2, -1 ] reshape { shape: [ 2, 2 ] } } ]',
            "model input 'input' has different size for dims and reshape for m",
        ),
        (
            'max_batch_size: 4\ninput [ { name: "input" data_type: TYPE_FP32 dims: [ 2, -1 ] reshape { shape: [ -1, 2, -1 ] } } ]',
            "model input 'input' has different number of variable-size dimensions for dims and reshape for m",
        ),
        (
            'max_batch_size: 0\noutput [ { name: "out" data_type: TYPE_FP32 dims: [ 1 ] reshape { shape: [ ] } } ]',
            "model output 'out' cannot have empty reshape for non-batching model as scalar tensors are not supported for m",
        ),
        (
            'input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] reshape { shape: [ 0 ] } } ]',
            "model input 'x' reshape dimensions must be integer >= 1, or -1 to indicate a variable-size dimension for m",
        ),
        (
            'input [ { name: "img" data_type: TYPE_FP32 format: FORMAT_NCHW dims: [ 224, 224 ] } ]',
            "model input NHWC/NCHW require 3 dims for m",
        ),
        (
            "max_batch_size: 8\n"
            + IO
            + 'batch_input [ { kind: BATCH_ELEMENT_COUNT target_name: "N" data_type: TYPE_INT32 } ]',
            "batch input kind 'BATCH_ELEMENT_COUNT' expects 1 source input, got 0 for m",
        ),
        (
            "max_batch_size: 8\n"
            + IO
            + 'batch_output [ { kind: BATCH_SCATTER_WITH_INPUT_SHAPE target_name: [ "OUTPUT0", "OUTPUT0" ] source_input: "INPUT0" } ]',
            "target output name 'OUTPUT0' can only be specified once for m",
        ),
        (
            "max_batch_size: 8\n" + IO + "dynamic_batching { priority_levels: 3 default_priority_level: 4 }",
            "default priority level must be in range [1, 3] for m",
        ),
        (
            "max_batch_size: 8\n"
            + IO
            + "dynamic_batching { priority_levels: 2 default_priority_level: 1 preserve_ordering: true }",
            "Only one priority level is allowed when 'preserve_ordering' is true for m",
        ),
        (
            "max_batch_size: 8\n"
            + IO
            + "dynamic_batching { preserve_ordering: true default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 100 } }",
            "Queue policy can not have DELAY as timeout action when 'preserve_ordering' is true for m",
        ),
        (
            "max_batch_size: 8\n"
            + IO
            + 'sequence_batching { control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START } ] } ] }',
            "sequence batching must specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for "
            "CONTROL_SEQUENCE_START for m",
        ),
        (
            "max_batch_size: 8\n" + IO + "sequence_batching { }\nresponse_cache { enable: true }",
            "Response Cache does not currently support model m with sequence batching scheduler. Please disable "
            "the response cache.",
        ),
    ],
)
def test_a_config_rule_gets_tritons_wording(tmp_path, body, triton):
    folder = model(tmp_path, "m", 'name: "m"\nbackend: "python"\n' + body, {"1/model.py": ""})
    err = first_error(folder)
    assert err is not None and err.triton_message == triton
    assert err.line and err.line > 1  # pointed at the field, not the top of the file


def test_the_config_is_validated_before_its_name_is_compared_with_the_folder(tmp_path):
    folder = model(
        tmp_path, "folder", 'name: "other"\nbackend: "python"\nmax_batch_size: -1', {"1/model.py": ""}
    )
    assert first_error(folder).code == "negative_max_batch_size"  # Triton's order: ValidateModelConfig first
    (folder / "config.pbtxt").write_text('name: "other"\nbackend: "python"')
    assert first_error(folder).code == "name_mismatch"


def test_platform_and_backend_must_pair(tmp_path):
    folder = model(tmp_path, "m", 'platform: "tensorrt_plan"\nbackend: "onnxruntime"\n' + IO)
    assert (
        first_error(folder).triton_message
        == "unexpected 'platform' and 'backend' pair, got:tensorrt_plan, onnxruntime"
    )
    (folder / "config.pbtxt").write_text('platform: "onnxruntime_onnx"\nbackend: "onnxruntime"\n' + IO)
    (folder / "1" / "model.onnx").write_text("")
    assert first_error(folder) is None


def test_a_folder_named_name_dot_backend_picks_a_custom_backend(tmp_path):
    assert first_error(model(tmp_path, "echo.identity", "max_batch_size: 1\n" + IO)) is None
    no_dot = first_error(model(tmp_path, "echo", "max_batch_size: 1\n" + IO))
    assert no_dot.triton_message.startswith(
        "Invalid model name: Could not determine backend for model 'echo'"
    )
    unknown = first_error(model(tmp_path, "echo.nosuch", "max_batch_size: 1\n" + IO))
    assert unknown.code == "unknown_backend" and "'nosuch'" in unknown.triton_message


def test_runtime_is_looked_up_where_triton_looks(tmp_path):
    cfg = 'backend: "identity"\n' + IO + 'runtime: "RUNTIME"'
    escape = first_error(model(tmp_path, "a", cfg.replace("RUNTIME", "../x/libtriton_identity.so")))
    assert (
        escape.triton_message == "backend library name '../x/libtriton_identity.so' escapes backend directory"
    )
    missing = first_error(model(tmp_path, "b", cfg.replace("RUNTIME", "libtriton_custom.so")))
    assert missing.triton_message == "unable to find backend library 'libtriton_custom.so' for model 'b'"
    found = model(tmp_path, "c", cfg.replace("RUNTIME", "libtriton_custom.so"), {"1/libtriton_custom.so": ""})
    assert first_error(found) is None


def test_instance_groups_against_the_servers_gpus(tmp_path):
    cfg = 'backend: "python"\n' + IO + "instance_group [ { GROUP } ]"
    cpu_gpus = model(tmp_path, "a", cfg.replace("GROUP", "kind: KIND_CPU gpus: [ 0 ]"), {"1/model.py": ""})
    assert (
        first_error(cpu_gpus).triton_message
        == "instance group a_0 of model a has kind KIND_CPU but specifies one or more GPUs"
    )
    negative = model(tmp_path, "b", cfg.replace("GROUP", "kind: KIND_GPU gpus: [ -1 ]"), {"1/model.py": ""})
    assert "specifies invalid or unsupported gpu id -1" in first_error(negative).triton_message
    far = model(tmp_path, "c", cfg.replace("GROUP", "kind: KIND_GPU gpus: [ 3 ]"), {"1/model.py": ""})
    assert first_error(far) is None  # unknown GPUs: id 3 may exist
    assert first_error(far, gpus=2).triton_message.startswith(
        "instance group c_0 of model c specifies invalid or unsupported gpu id 3. GPUs with at least"
    )
    assert first_error(far, gpus=0).code == "instance_no_gpus"


def test_autofill_turns_a_missing_config_or_dims_into_a_warning(tmp_path):
    no_config = model(tmp_path, "m", None, {"1/model.onnx": ""})
    problems = check_paths([str(no_config)])
    assert [p.code for p in problems] == ["no_config_autofill"]
    assert problems[0].format() == f"{no_config}:0: warning: {problems[0].message}"
    assert first_error(no_config, autofill=False).code == "no_config"
    # TensorFlow fills in a SavedModel's config, never a GraphDef's (Triton's noautofill_noconfig case)
    graphdef = model(tmp_path, "g", None, {"1/model.graphdef": ""})
    assert first_error(graphdef).triton_message == "model configuration is not provided for model 'g'"
    # missing dims: filled from the model file when the backend can, refused when it cannot
    half = 'max_batch_size: 4\ninput [ { name: "x" data_type: TYPE_FP32 } ]\noutput [ { name: "y" data_type: TYPE_FP32 dims: [ 1 ] } ]'
    onnx = model(tmp_path, "o", 'platform: "onnxruntime_onnx"\n' + half, {"1/model.onnx": ""})
    assert first_error(onnx) is None and any(
        p.code == "io_no_dims_autofill" for p in check_paths([str(onnx)])
    )
    assert first_error(onnx, autofill=False).triton_message == "model input 'x' must specify 'dims' for o"
    plain_python = model(
        tmp_path, "p", 'backend: "python"\n' + half, {"1/model.py": "class TritonPythonModel: pass"}
    )
    assert first_error(plain_python).code == "io_no_dims"
    filling = (
        "class TritonPythonModel:\n    @staticmethod\n    def auto_complete_config(c):\n        return c\n"
    )
    (plain_python / "1" / "model.py").write_text(filling)
    assert first_error(plain_python) is None


def test_newer_fields_and_template_placeholders_are_named(tmp_path):
    newer = first_error(model(tmp_path, "a", 'backend: "python"\nmodel_metrics { }'))
    assert newer.code == "newer_field" and "not in Triton 2.51's ModelConfig" in newer.message
    assert "did you mean" not in newer.message
    template = first_error(
        model(tmp_path, "b", 'backend: "python"\nmax_batch_size: ${triton_max_batch_size}')
    )
    assert template.code == "template_placeholder" and "'${triton_max_batch_size}'" in template.message
    assert "模板占位符" in template.text("zh")


def test_check_cli_takes_the_servers_flags(tmp_path):
    folder = model(tmp_path, "m", None, {"1/model.onnx": ""})
    run = [sys.executable, "-m", "triton_kitchen", "check", str(folder)]
    ok = subprocess.run(run, capture_output=True, text=True, cwd=ROOT)
    assert ok.returncode == 0 and f"{folder}:0: warning:" in ok.stdout
    strict = subprocess.run(
        run + ["--disable-auto-complete-config"], capture_output=True, text=True, cwd=ROOT
    )
    assert strict.returncode == 1 and f"{folder}:0: error:" in strict.stdout


def test_the_repository_browser_opens_models_left_to_auto_complete(tmp_path):
    model(tmp_path, "densenet_onnx", None, {"1/model.onnx": ""})
    model(tmp_path, "needs_config", None, {"1/model.graphdef": ""})
    entries = repository.open_repository(tmp_path, root=tmp_path)
    assert [e.name for e in entries] == ["densenet_onnx", "needs_config"]
    rows = {r["model"]: r for r in repository.summary_rows(entries)}
    assert rows["densenet_onnx"]["kind"] == "onnxruntime" and rows["densenet_onnx"]["error"] == ""
    assert rows["needs_config"]["error"]  # a GraphDef without a config is still broken
    assert repository.autofilled_backend(read_model_dir(tmp_path / "densenet_onnx")) == "onnxruntime"
