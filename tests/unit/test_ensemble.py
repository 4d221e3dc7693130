"""The ensemble package: Triton's rules, the DAG, stages and memory (no server needed)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from triton_kitchen.cli.check import run_check, run_dag
from triton_kitchen.core.config import load_repository
from triton_kitchen.core.ensemble import (
    build_dag,
    format_bytes,
    has_errors,
    inflight_memory,
    tensor_bytes,
    validate_config_file,
    validate_model,
    validate_repository,
)

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"


def problems(case: str, load: str = "ens"):
    return validate_model(load, load_repository(CORPUS / case), with_dependencies=True)


def first_error(case: str, load: str = "ens"):
    return next(p for p in problems(case, load) if p.is_error)


# -- rules ------------------------------------------------------------------------------------

EXPECTED = {
    "unknown_step_model": (
        "unknown_model",
        "ensemble ens contains models that are not available or ambiguous: missing",
    ),
    "version_omitted": (
        "version_omitted",
        "ensemble 'ens' depends on 'm' whose required version 0 is not loaded.",
    ),
    "version_pinned_missing": ("version_not_available", None),
    "version_not_served": ("version_not_available", None),
    "unmapped_step_input": (
        "unmapped_input",
        "in ensemble ens, input B in model d is not mapped to any ensemble tensors",
    ),
    "map_to_missing_input": ("map_to_missing_input", None),
    "map_from_missing_output": ("map_from_missing_output", None),
    "map_reversed": ("unused_input", "ensemble input 'IN' for ensemble ens' is not used"),
    "output_not_written": ("output_not_written", "ensemble output 'EXTRA' for ensemble ens' is not used"),
    "tensor_written_twice": (
        "tensor_written_twice",
        "ensemble tensor 'OUT' can appear in an output map only once for ensemble 'ens' step 1",
    ),
    "tensor_written_twice_one_step": ("tensor_written_twice", None),
    "unused_ensemble_input": ("unused_input", None),
    "unused_intermediate_tensor": ("unused_tensor", "ensemble tensor 'waste' is unused in ensemble 'ens'"),
    "dtype_mismatch": (
        "dtype_mismatch",
        "in ensemble ens, ensemble tensor IN: inconsistent data type: TYPE_INT32 is inferred from model ens while "
        "TYPE_FP32 is inferred from model m",
    ),
    "dims_mismatch": ("shape_mismatch", None),
    "rank_mismatch": ("shape_mismatch", None),
    "max_batch_size_too_small": ("max_batch_size_too_small", None),
    "forbidden_dynamic_batching": ("oneof_conflict", None),
    "forbidden_instance_group": (
        "ensemble_forbidden_field",
        "instance group should not be specified for ensemble 'ens'",
    ),
    "forbidden_optimization": ("ensemble_forbidden_field", None),
    "forbidden_model_warmup": ("ensemble_forbidden_field", None),
    "forbidden_backend": ("ensemble_backend", None),
    "cycle_two_steps": ("cycle", "output 'OUT' for ensemble 'ens' is not written"),
    "cycle_self_loop": ("cycle", None),
    "name_directory_mismatch": (
        "name_mismatch",
        "unexpected directory name 'ens' for model 'ensemble_model', directory name must equal model name",
    ),
    "syntax_error": ("syntax", None),
    "unknown_field": ("unknown_field", None),
    "ensemble_without_version_dir": ("no_version", None),
    "missing_output_map": ("step_missing_field", "must specify 'output_map' in step 0 of ensemble 'ens'"),
    "missing_model_name": ("step_missing_field", None),
    "empty_steps": ("no_steps", None),
    "decoupled_fan_in": ("decoupled_fan_in", None),
    "step_name_directory_mismatch": ("step_model_invalid", None),
}


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_first_error(case):
    code, triton = EXPECTED[case]
    err = first_error(case)
    assert err.code == code, [p.message for p in problems(case)]
    if triton:
        assert err.triton_message == triton
    assert err.line and err.line >= 1
    assert err.path.endswith("config.pbtxt")


def test_cycle_names_the_steps():
    err = first_error("cycle_three_steps")
    assert "cycle" in err.message
    assert err.params["steps"] == ["a", "b", "c"]
    assert err.params["tensors"] == ["x", "y", "z"]
    assert "'z', is not connected" in err.triton_message


def test_nested_cycle_and_nested_errors():
    errs = [p for p in problems("nested_cycle", "outer") if p.is_error]
    assert any(p.code == "ensemble_cycle" for p in errs)
    assert "circular dependency between ensembles" in errs[0].triton_message
    err = first_error("nested_inner_broken", "outer")
    assert err.code == "step_model_invalid" and err.params["model"] == "inner"
    inner = [p for p in problems("nested_inner_broken", "outer") if p.model == "inner"]
    assert inner and inner[0].code in ("output_not_written", "unused_tensor")


def test_version_omitted_explains_zero():
    err = first_error("version_omitted")
    assert "version 0" in err.message and "-1" in err.message


def test_map_reversed_hint():
    assert "reversed" in first_error("map_reversed").message


def test_warnings_do_not_change_the_verdict():
    for case, code in [
        ("valid_repeated_map_key", "repeated_map_key"),
        ("warn_implicit_batch_dim", "implicit_batch_dim"),
        ("warn_wildcard_not_transitive", "hidden_shape_mismatch"),
    ]:
        ps = problems(case)
        assert not has_errors(ps)
        assert any(p.code == code and p.severity == "warning" for p in ps)
    w = next(p for p in problems("valid_repeated_map_key") if p.code == "repeated_map_key")
    assert w.params["kept"] == "IN" and w.params["first"] == "NOPE" and w.line == 24


@pytest.mark.parametrize("case", sorted(p.name for p in CORPUS.iterdir() if p.name.startswith("valid_")))
def test_valid_cases_have_no_errors(case):
    load = json.loads((CORPUS / case / "case.json").read_text())["load"]
    assert not has_errors(ps := problems(case, load)), [p.format() for p in ps if p.is_error]


def test_validate_repository_reports_each_model_once():
    ps = validate_repository(CORPUS / "nested_inner_broken")
    keys = [(p.model, p.code, p.message) for p in ps]
    assert len(keys) == len(set(keys))
    assert {p.model for p in ps} == {"inner", "outer"}


def test_standalone_config_file(tmp_path):
    f = tmp_path / "ens.pbtxt"
    f.write_text((CORPUS / "cycle_two_steps" / "ens" / "config.pbtxt").read_text())
    ps = validate_config_file(f)
    assert ps[0].code == "cycle"
    assert any(p.code == "no_repository" for p in ps)
    f.write_text((CORPUS / "valid_chain" / "ens" / "config.pbtxt").read_text())
    assert not has_errors(validate_config_file(f))


def test_app_repository_is_valid():
    repo = ROOT / "model_repository"
    if not repo.is_dir():
        pytest.skip("no model_repository/")
    ps = validate_repository(repo)
    assert not has_errors(ps), [p.format() for p in ps if p.is_error]


# -- DAG --------------------------------------------------------------------------------------


def test_dag_json_contract():
    doc = build_dag("ens", CORPUS / "valid_diamond").to_json()
    assert set(doc) == {"inputs", "outputs", "steps", "tensors"}
    assert doc["inputs"] == ["IN"] and doc["outputs"] == ["OUT"]
    for s in doc["steps"]:
        assert set(s) == {"id", "model", "version", "input_map", "output_map", "stage"}
    for t in doc["tensors"]:
        assert set(t) == {"name", "producer", "consumers", "data_type", "dims"}
    stages = {s["id"]: s["stage"] for s in doc["steps"]}
    assert stages == {"a": 1, "b": 2, "c": 2, "d": 3}
    x = next(t for t in doc["tensors"] if t["name"] == "x")
    assert x["producer"] == "a" and x["consumers"] == ["b", "c"]
    assert x["data_type"] == "TYPE_FP32" and x["dims"] == [4]
    inp = next(t for t in doc["tensors"] if t["name"] == "IN")
    assert inp["producer"] is None and inp["consumers"] == ["a"]


def test_dag_steps_out_of_order_and_duplicates():
    dag = build_dag("ens", CORPUS / "valid_steps_out_of_order")
    assert [(s.model, s.stage) for s in dag.steps] == [("post", 3), ("cls", 2), ("pre", 1)]
    assert dag.stages == [["pre"], ["cls"], ["post"]]
    dag = build_dag("ens", CORPUS / "valid_same_model_twice")
    assert [s.id for s in dag.steps] == ["m#1", "m#2"]
    dag = build_dag("ens", CORPUS / "valid_fan_out_fan_in")
    assert dag.stages == [["b1", "b2", "b3"], ["j#1"], ["j#2"]]


def test_dag_two_outputs_and_cycle():
    dag = build_dag("ens", CORPUS / "valid_two_outputs")
    assert dag.outputs == ["L", "R"]
    assert ("split", "out:L", "L") in dag.edges() and ("split", "out:R", "R") in dag.edges()
    dag = build_dag("ens", CORPUS / "cycle_two_steps")
    assert all(s.stage is None for s in dag.steps)
    assert has_errors(dag.problems)


def test_dag_nested_expand():
    dag = build_dag("outer", CORPUS / "valid_nested")
    assert [s.id for s in dag.steps] == ["inner", "a"] and dag.steps[0].is_ensemble
    flat = build_dag("outer", CORPUS / "valid_nested", expand=True)
    assert [(s.id, s.stage, s.group) for s in flat.steps] == [
        ("inner/a", 1, "inner"),
        ("inner/b", 2, "inner"),
        ("a", 3, None),
    ]
    assert flat.step("inner/a").input_map == {"INPUT": "IN"}
    assert flat.step("inner/b").output_map == {"OUTPUT": "t0"}
    assert flat.tensor("inner/t0").producer == "inner/a"


def _bench():
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_dag", ROOT / "benchmarks" / "bench_dag.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_dag_fifty_step_chain(tmp_path):
    bench = _bench()
    bench.make_chain_repository(tmp_path / "chain", 50)
    dag = build_dag("chain", tmp_path / "chain")
    assert [s.stage for s in dag.steps] == list(range(1, 51))
    assert not has_errors(dag.problems)
    bench.make_chain_repository(tmp_path / "ladder", 50, "ladder")
    dag = build_dag("chain", tmp_path / "ladder")
    assert not has_errors(dag.problems) and len(dag.edges()) > 51


def test_benchmark_runs(capsys):
    # the 100 ms target is measured by the script itself; here only a generous smoke bound
    assert _bench().main(["--repeat", "2", "--target-ms", "2000"]) == 0
    assert "50-step chain ensemble" in capsys.readouterr().out


def test_dag_on_app_pipelines():
    repo = ROOT / "model_repository"
    if not repo.is_dir():
        pytest.skip("no model_repository/")
    for entry in load_repository(repo).values():
        if entry.is_ensemble:
            dag = build_dag(entry.name, repo)
            assert all(s.stage for s in dag.steps)


# -- memory -----------------------------------------------------------------------------------


def test_tensor_bytes_tutorial_example():
    b = tensor_bytes("TYPE_FP32", [3, 224, 224], batch=8)
    assert b == 8 * 3 * 224 * 224 * 4 == 4_816_896
    assert format_bytes(b) == "4.8 MB"
    assert format_bytes(64 * b) == "308 MB"
    assert tensor_bytes("FP16", [10]) == 20
    assert tensor_bytes("TYPE_STRING", [1]) is None
    assert tensor_bytes("TYPE_FP32", [-1, 4]) is None
    assert tensor_bytes("TYPE_FP32", [-1, 4], wildcard=2) == 32


def test_inflight_memory(tmp_path):
    repo = tmp_path
    (repo / "pre" / "1").mkdir(parents=True)
    (repo / "pre" / "1" / "model.py").write_text("")
    (repo / "pre" / "config.pbtxt").write_text(
        'name: "pre"\nbackend: "python"\nmax_batch_size: 8\n'
        'input [ { name: "I" data_type: TYPE_UINT8 dims: [ 224, 224, 3 ] } ]\n'
        'output [ { name: "O" data_type: TYPE_FP32 dims: [ 3, 224, 224 ] } ]\n'
    )
    (repo / "cls" / "1").mkdir(parents=True)
    (repo / "cls" / "1" / "model.py").write_text("")
    (repo / "cls" / "config.pbtxt").write_text(
        'name: "cls"\nbackend: "python"\nmax_batch_size: 8\n'
        'input [ { name: "I" data_type: TYPE_FP32 dims: [ 3, 224, 224 ] } ]\n'
        'output [ { name: "O" data_type: TYPE_FP32 dims: [ 1000 ] } ]\n'
    )
    (repo / "ens" / "1").mkdir(parents=True)
    (repo / "ens" / "config.pbtxt").write_text(
        'name: "ens"\nplatform: "ensemble"\nmax_batch_size: 8\n'
        'input [ { name: "raw" data_type: TYPE_UINT8 dims: [ 224, 224, 3 ] } ]\n'
        'output [ { name: "logits" data_type: TYPE_FP32 dims: [ 1000 ] } ]\n'
        "ensemble_scheduling { step [\n"
        '  { model_name: "pre" model_version: -1 input_map { key: "I" value: "raw" } output_map { key: "O" value: "img" } },\n'
        '  { model_name: "cls" model_version: -1 input_map { key: "I" value: "img" } output_map { key: "O" value: "logits" } }\n'
        "] }\n"
    )
    dag = build_dag("ens", repo)
    assert not has_errors(dag.problems)
    assert dag.tensor("img").bytes == 3 * 224 * 224 * 4
    est = inflight_memory(dag, batch_size=8, n_in_flight=64)
    assert est.per_tensor == {"img": 4_816_896}
    assert est.total == 64 * 4_816_896 and format_bytes(est.total) == "308 MB"
    with_io = inflight_memory(dag, batch_size=1, n_in_flight=1, include_io=True)
    assert with_io.per_request == 224 * 224 * 3 + 3 * 224 * 224 * 4 + 4000


# -- the package ------------------------------------------------------------------------------

# each part imports only parts above it, so the package has no import cycle
LAYERS = [
    "problems",
    "autofill",
    "config_rules",
    "data_flow",
    "model_rules",
    "tensor_nodes",
    "validate",
    "dag",
    "memory",
]


def test_package_parts_import_one_way_and_stay_small():
    pkg = ROOT / "triton_kitchen" / "core" / "ensemble"
    assert sorted(p.stem for p in pkg.glob("*.py")) == sorted(LAYERS + ["__init__"])
    for k, part in enumerate(LAYERS):
        source = (pkg / f"{part}.py").read_text()
        assert source.count("\n") <= 600, part
        imported = {
            node.module.rsplit(".", 1)[-1]
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.ImportFrom)
            and (node.module or "").startswith("triton_kitchen.core.ensemble.")
        } | {  # from triton_kitchen.core.ensemble import autofill, ...
            alias.name
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.ImportFrom) and node.module == "triton_kitchen.core.ensemble"
            for alias in node.names
        }
        assert imported <= set(LAYERS[:k]), (part, imported - set(LAYERS[:k]))


# -- CLI --------------------------------------------------------------------------------------


def test_check_cli_exit_codes_and_lines(capsys):
    assert run_check([str(CORPUS / "valid_chain")]) == 0
    ok = capsys.readouterr()
    assert ok.out == ""  # stdout: problem lines only
    assert ok.err.startswith("OK: ") and "no errors" in ok.err  # a person sees that it ran
    assert run_check([str(CORPUS / "cycle_two_steps")]) == 1
    assert capsys.readouterr().err == ""  # no OK line when there are errors
    assert run_check([str(CORPUS / "cycle_two_steps" / "ens" / "config.pbtxt")]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out and all(":" in line for line in out)
    path, line, rest = out[0].split(":", 2)
    assert (
        path.endswith("cycle_two_steps/ens/config.pbtxt")
        and int(line) > 0
        and rest.startswith(" error: cycle")
    )
    assert run_check([str(CORPUS / "valid_repeated_map_key")]) == 0
    warned = capsys.readouterr()
    assert ": warning: " in warned.out and "1 warning(s)" in warned.err
    assert run_check(["/no/such/path"]) == 1
    assert "/no/such/path:1: error: no such file or directory" in capsys.readouterr().out
    assert run_check([str(CORPUS / "syntax_error"), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and doc["problems"][0]["code"] == "syntax"


def test_dag_cli(capsys):
    assert run_dag([str(CORPUS / "valid_diamond" / "ens"), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [s["stage"] for s in doc["steps"]] == [1, 2, 2, 3]
    assert run_dag([str(CORPUS / "valid_diamond" / "ens" / "config.pbtxt")]) == 0
    assert capsys.readouterr().out.startswith('digraph "ens"')
    assert run_dag([str(CORPUS / "syntax_error" / "ens")]) == 1
    assert "error" in capsys.readouterr().err
