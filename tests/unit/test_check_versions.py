"""``check --triton-version X.Y``: versions and releases, each version's schema (the compiled r26.07 one less
the fields that came later), the rules that came or changed after 2.51, and the command line."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

from triton_kitchen.cli.check import check_paths, run_check
from triton_kitchen.core import model_config_r2607
from triton_kitchen.core.config import ModelEntry, parse_config
from triton_kitchen.core.ensemble import CheckOptions, autofill
from triton_kitchen.core.model_config_schema import FIELDS_SINCE, derived_class, model_config_class
from triton_kitchen.core.versions import EMBEDDED, NEWEST, TritonVersion, VersionError, checked_version

ROOT = Path(__file__).resolve().parents[2]
QA_PROTO = Path(os.environ.get("TRITON_QA_DIR", ROOT.parent / "shared" / "triton-qa")) / "model_config_proto"
V = TritonVersion.parse


# -- versions and NGC releases (the server repository's TRITON_VERSION at each rYY.MM branch) ----------------
@pytest.mark.parametrize(
    "version, release",
    [("2.42", "24.01"), ("2.51", "24.10"), ("2.52", "24.11"), ("2.59", "25.06"), ("2.60", "25.08"),
     ("2.63", "25.11"), ("2.65", "26.01"), ("2.68", "26.04"), ("2.72", "26.08")],
)  # fmt: skip
def test_a_version_names_its_ngc_release_and_back(version, release):
    assert V(version).release == release
    assert V(release) == V(version)
    assert V(f"r{release}") == V(f"v{version}.0") == V(version)


def test_25_07_shipped_2_59_1_and_versions_order():
    assert V("25.07") == V("2.59.1") == TritonVersion(2, 59)
    assert V("2.9") < V("2.51") < V("2.100")
    assert str(V("26.08")) == "2.72"


@pytest.mark.parametrize("text", ["banana", "2", "2.51.x", "24.13", "23.12"])
def test_what_is_not_a_version_is_refused(text):
    with pytest.raises(VersionError):
        checked_version(V(text) and text)


@pytest.mark.parametrize("text", ["2.50", "2.73", "26.09"])
def test_check_knows_the_rules_of_2_51_to_2_72_only(text):
    with pytest.raises(VersionError, match="2.51 to 2.72"):
        checked_version(text)
    assert checked_version(None) == EMBEDDED and checked_version("26.08") == NEWEST


# -- the schemas --------------------------------------------------------------------------------------------
def _shape(desc) -> dict:
    """A message or enum descriptor as plain data: field names, numbers, types, labels; nested, recursively."""
    out = {}
    for f in getattr(desc, "fields", []):
        out[f.name] = (f.number, f.type, f.label, f.message_type.full_name if f.message_type else None)
    for n in getattr(desc, "nested_types", []):
        out[n.full_name] = _shape(n)
    for e in getattr(desc, "enum_types", []):
        out[e.full_name] = [(v.name, v.number) for v in e.values]
    return out


def _file_shape(file_desc, skip=()) -> dict:
    shape = {m.full_name: _shape(m) for m in file_desc.message_types_by_name.values() if m.name not in skip}
    shape |= {
        e.full_name: [(v.name, v.number) for v in e.values] for e in file_desc.enum_types_by_name.values()
    }
    return shape


def test_the_2_51_schema_derived_from_r26_07_is_tritonclients_field_for_field():
    derived = derived_class(EMBEDDED).DESCRIPTOR.file
    # ModelMetrics stays in the derived file as a message nothing refers to; no 2.51 field names it
    assert _file_shape(derived, skip=("ModelMetrics",)) == _file_shape(model_config_pb2.DESCRIPTOR)
    assert model_config_class(EMBEDDED) is model_config_pb2.ModelConfig


def test_the_newest_schema_adds_exactly_the_dated_fields():
    newest = model_config_class(NEWEST).DESCRIPTOR.file
    old = model_config_pb2.DESCRIPTOR
    added = set()
    for message in newest.message_types_by_name.values():
        stack = [message]
        while stack:
            m = stack.pop()
            stack.extend(m.nested_types)
            try:
                before = old.pool.FindMessageTypeByName(m.full_name)
            except KeyError:
                continue  # a new message: reached only through a new field
            added |= {(m.full_name, f.name) for f in m.fields if f.name not in before.fields_by_name}
    assert added == set(FIELDS_SINCE)


@pytest.mark.skipif(
    not (QA_PROTO / "model_config-r26.07.proto").is_file(), reason="the reference protos are not here"
)
def test_the_compiled_schema_is_the_r26_07_proto():
    data = (QA_PROTO / "model_config-r26.07.proto").read_bytes()
    assert model_config_r2607.PROTO_SHA256 == hashlib.sha256(data).hexdigest()
    assert "NVIDIA CORPORATION" in Path(model_config_r2607.__file__).read_text().split('"""')[0]


@pytest.mark.parametrize(
    "text, field, since",
    [
        ("model_metrics { metric_control { } }", "model_metrics", V("2.52")),
        ("ensemble_scheduling { max_inflight_requests: 4 }", "max_inflight_requests", V("2.63")),
    ],
)
def test_a_field_parses_from_its_version_and_is_refused_before(text, field, since):
    before = TritonVersion(since.major, since.minor - 1)
    for v in (since, NEWEST):
        text_format.Parse(text, model_config_class(v)())
    with pytest.raises(Exception) as err:
        parse_config(text, "m/config.pbtxt", before)
    e = err.value
    assert (
        e.code == "newer_field" and e.params["since"] == str(since) and e.params["release"] == since.release
    )
    # Triton's own wording: protobuf's text_format error ends the poll with this line (measured on 2.51)
    assert e.triton_message == "failed to read text proto from m/config.pbtxt"
    assert f"Triton parses it from {since} (NGC {since.release})" in e.message


# -- rules that came or changed after 2.51 ------------------------------------------------------------------
def _model(tmp_path: Path, name: str, config: str, files=("1/model.py",)) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.pbtxt").write_text(config)
    for rel in files:
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text("")
    return folder


PYTHON = 'backend: "python"\nmax_batch_size: 0\ninput [{ name: "I" data_type: TYPE_FP32 dims: [1] }]\n'
PYTHON += 'output [{ name: "O" data_type: TYPE_FP32 dims: [1] }]\n'


def test_model_metrics_is_checked_as_2_52_checks_it(tmp_path):
    empty = _model(
        tmp_path, "m", PYTHON + 'model_metrics { metric_control { metric_identifier { family: "x" } } }'
    )
    errors = [p for p in check_paths([str(empty)], options=CheckOptions(version=V("2.72"))) if p.is_error]
    assert errors[0].code == "metrics_no_histogram"
    assert errors[0].triton_message == "metric control must specify 'histogram_options'"
    assert "histogram_options" in errors[0].text("zh")
    ok = _model(
        tmp_path,
        "n",
        PYTHON
        + 'model_metrics { metric_control { metric_identifier { family: "nv_inference_request_success" } '
        "histogram_options { buckets: [1, 2] } } }",
    )
    problems = check_paths([str(ok)], options=CheckOptions(version=V("2.52")))
    assert not [p for p in problems if p.is_error]
    assert [p.code for p in problems if p.severity == "warning"] == ["metrics_family_not_customizable"]


def test_a_pytorch_model_found_by_its_file_gets_no_default_filename_from_2_68(tmp_path):
    """core #484 (r26.04): the platform is filled in, default_model_filename is not (the 2.72 suite's
    no_name_platform expects the config without it; 2.51's with model.pt)."""
    folder = tmp_path / "p"
    (folder / "1").mkdir(parents=True)
    (folder / "1" / "model.pt").write_text("")
    entry = ModelEntry(
        name="p", path=folder, config_path=folder / "config.pbtxt", config=model_config_pb2.ModelConfig()
    )
    old, new = autofill.complete(entry, V("2.51")), autofill.complete(entry, V("2.68"))
    assert (old.backend, old.platform, old.default_model_filename) == (
        "pytorch",
        "pytorch_libtorch",
        "model.pt",
    )
    assert (new.backend, new.platform, new.default_model_filename) == ("pytorch", "pytorch_libtorch", "")
    (folder / "1" / "model.pt").unlink()
    (folder / "1" / "model.pt2").write_text("")
    assert autofill.complete(entry, V("2.51")).invalid_name  # 2.51 knows no AOTInductor file
    assert autofill.complete(entry, V("2.67")).backend == "pytorch"
    assert autofill.complete(entry, V("2.68")).platform == "torch_aoti"


# -- the command line ---------------------------------------------------------------------------------------
def test_check_triton_version_on_the_command_line(tmp_path, capsys):
    folder = _model(tmp_path, "m", PYTHON + "model_metrics { }")
    assert run_check([str(folder)]) == 1
    out = capsys.readouterr().out
    assert (
        "'model_metrics' is not in Triton 2.51's ModelConfig: Triton parses it from 2.52 (NGC 24.11)" in out
    )
    assert run_check([str(folder), "--triton-version", "2.52"]) == 0
    assert "no errors for Triton 2.52" in capsys.readouterr().err
    assert run_check([str(folder), "--triton-version", "26.08"]) == 0
    capsys.readouterr()
    assert run_check([str(folder), "--triton-version", "2.50"]) == 2
    assert "2.51 to 2.72" in capsys.readouterr().err


def test_the_tensorflow_backend_is_not_in_the_containers_from_2_56(tmp_path):
    """server r25.03 build.py (server #8113): TensorFlow is no longer built into the containers."""
    folder = tmp_path / "tf"
    (folder / "1" / "model.savedmodel").mkdir(parents=True)
    (folder / "config.pbtxt").write_text(
        'platform: "tensorflow_savedmodel"\nmax_batch_size: 0\n'
        'input [{ name: "I" data_type: TYPE_FP32 dims: [1] }]\noutput [{ name: "O" data_type: TYPE_FP32 dims: [1] }]\n'
    )
    for version, refused in (("2.51", False), ("2.55", False), ("2.56", True), ("2.72", True)):
        errors = [
            p for p in check_paths([str(folder)], options=CheckOptions(version=V(version))) if p.is_error
        ]
        assert bool(errors) == refused, (version, errors)
        if refused:
            assert errors[0].code == "unknown_backend" and f"Triton {version} ships" in errors[0].message
            assert errors[0].triton_message.startswith(
                "unable to find backend library for backend 'tensorflow'"
            )
