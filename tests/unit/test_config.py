"""config.py: protobuf parsing, plain errors with positions, locations, repositories."""

from __future__ import annotations

from pathlib import Path

import pytest

from triton_kitchen.core import config, tensors
from triton_kitchen.core.config import (
    ConfigError,
    load_config,
    load_repository,
    locate,
    parse_config,
    read_config_file,
    read_model_dir,
    served_versions,
)
from triton_kitchen.core.errors import KitchenError

CORPUS = Path(__file__).resolve().parents[1] / "corpus"

GOOD = """
name: "pre"
backend: "python"
max_batch_size: 8
input [ { name: "INPUT" data_type: TYPE_FP32 dims: [ 3, -1 ] } ]
output [ { name: "OUTPUT" data_type: TYPE_INT64 dims: [ 1 ] } ]
dynamic_batching { preferred_batch_size: [ 4, 8 ] }
"""


def test_parse_valid_config():
    cfg = parse_config(GOOD)
    assert cfg.name == "pre" and cfg.max_batch_size == 8
    assert list(cfg.input[0].dims) == [3, -1]
    assert list(cfg.dynamic_batching.preferred_batch_size) == [4, 8]


def test_parse_accepts_bytes_and_comments():
    cfg = parse_config(b'# a comment\nname: "x"  # trailing\nplatform: "ensemble"\n')
    assert cfg.platform == "ensemble"


@pytest.mark.parametrize(
    "text, code, line, column, token, words",
    [
        ('name: "x"\nmax_batch: 8\n', "unknown_field", 2, 1, "max_batch", ['"max_batch_size"']),
        ('name: "x"\nmax_batch_size: "eight"\n', "bad_value", 2, 17, '"eight"', ["integer"]),
        (
            'input [ { name: "a" data_type: TYPE_FLOAT dims: [1] } ]',
            "unknown_enum",
            1,
            32,
            "TYPE_FLOAT",
            ["TYPE_FP32"],
        ),
        ('input [ { name: "a" data_type: FP32 dims: [1] } ]', "unknown_enum", 1, 32, "FP32", ["TYPE_FP32"]),
        ('name: "x"\nname: "y"\n', "duplicate_field", 2, 7, "name", ["twice"]),
        ('name: "x"\ninput {\n  name: "a"\n', "syntax", 3, 9, '"a"', ['expected "}"', "end of the file"]),
        (
            'platform: "ensemble"\nensemble_scheduling { step [ ] }\ndynamic_batching { }\n',
            "oneof_conflict",
            3,
            1,
            "dynamic_batching",
            ["ensemble", "one scheduler"],
        ),
        ("max_batch_size: 99999999999\n", "bad_value", 1, 17, "99999999999", ["out of range"]),
    ],
)
def test_parse_errors_are_plain_and_located(text, code, line, column, token, words):
    with pytest.raises(ConfigError) as info:
        parse_config(text, path="m/config.pbtxt")
    err = info.value
    assert err.code == code
    assert (err.line, err.column) == (line, column)
    assert err.token == token
    for w in words:
        assert w in err.message
    assert str(err).startswith(f"m/config.pbtxt:{line}:{column}: error: ")
    assert err.triton_message == "failed to read text proto from m/config.pbtxt"
    assert err.detail  # protobuf's own wording is kept


def test_config_error_is_a_kitchen_error():
    with pytest.raises(KitchenError) as info:
        parse_config('name: "x"\nmax_batch: 8\n', path="m/config.pbtxt")
    err = info.value
    assert isinstance(err, ConfigError) and err.code == "unknown_field" and err.params["field"] == "max_batch"
    assert err.args == (err.message,) and "has no field named" in err.detail
    assert ConfigError("x", code="no_config").detail is None  # no protobuf wording: none, as before


def test_dtype_helpers_are_tensors():
    assert config.DTYPE_SIZES is tensors.DTYPE_SIZES and config.dtype_name is tensors.dtype_name
    assert config.dtype_name(1) == "TYPE_BOOL"


def test_non_utf8_is_a_config_error():
    with pytest.raises(ConfigError) as info:
        parse_config(b'name: "x"\n\xff\xfe', path="bad.pbtxt")
    assert info.value.code == "unreadable" and info.value.line == 2


def test_load_config_dir_and_missing(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.pbtxt").write_text('name: "m"\nbackend: "python"\n')
    assert load_config(tmp_path / "m").name == "m"
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "nope")
    assert info.value.code == "unreadable"


def test_locate_steps_and_repeated_map_keys():
    text = (CORPUS / "valid_repeated_map_key" / "ens" / "config.pbtxt").read_text()
    loc = locate(text)
    step = ("ensemble_scheduling", 0, "step", 0)
    assert loc.line(*step) == text.splitlines().index("    {") + 1
    assert loc.count(*step, "input_map") == 2  # both entries, although protobuf keeps one
    assert [loc.value(*step, "input_map", j, "key", 0) for j in range(2)] == ["INPUT", "INPUT"]
    assert [loc.value(*step, "input_map", j, "value", 0) for j in range(2)] == ["NOPE", "IN"]
    assert parse_config(text).ensemble_scheduling.step[0].input_map["INPUT"] == "IN"


def test_locate_lists_and_nested_messages():
    loc = locate(
        'input [\n { name: "a" },\n { name: "b" }\n]\nversion_policy: { latest { num_versions: 2 } }\n'
    )
    assert loc.line("input", 0) == 2 and loc.line("input", 1) == 3
    assert loc.value("input", 1, "name", 0) == "b"
    assert loc.line("version_policy", 0, "latest", 0, "num_versions", 0) == 5
    assert loc.line("no", "such", default=7) == 7


def test_locate_never_raises_on_garbage():
    locate('}}}{{{ : : [[[ "unterminated')


def test_repository_versions_and_policies(tmp_path):
    m = tmp_path / "m"
    for v in ("1", "2", "10", "notaversion"):
        (m / v).mkdir(parents=True)
    (m / "config.pbtxt").write_text('name: "m"\nbackend: "python"\n')
    entry = read_model_dir(m)
    assert entry.versions == [1, 2, 10]
    assert entry.served_versions == [10]  # latest 1 by default
    cfg = parse_config("version_policy: { all { } }")
    assert served_versions(cfg, [1, 2, 10]) == [1, 2, 10]
    cfg = parse_config("version_policy: { specific { versions: [ 2, 3 ] } }")
    assert served_versions(cfg, [1, 2, 10]) == [2]
    cfg = parse_config("version_policy: { latest { num_versions: 2 } }")
    assert served_versions(cfg, [1, 2, 10]) == [2, 10]


def test_repository_keeps_parse_errors_and_config_name(tmp_path):
    (tmp_path / "good" / "1").mkdir(parents=True)
    (tmp_path / "good" / "config.pbtxt").write_text('name: "good"\nbackend: "python"\n')
    (tmp_path / "good" / "configs").mkdir()
    (tmp_path / "good" / "configs" / "gpu.pbtxt").write_text('name: "good"\nbackend: "onnxruntime"\n')
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.pbtxt").write_text("name: \n")
    (tmp_path / ".hidden").mkdir()
    repo = load_repository(tmp_path)
    assert sorted(repo) == ["bad", "good"]
    assert repo["bad"].error is not None and repo["bad"].config is None
    assert repo["good"].config.backend == "python"
    assert load_repository(tmp_path, config_name="gpu")["good"].config.backend == "onnxruntime"


def test_model_dir_kind_extra_configs_and_size_limit(tmp_path):
    m = tmp_path / "m"
    (m / "1").mkdir(parents=True)
    (m / "configs").mkdir()
    for name in ("gpu.pbtxt", "cpu.pbtxt", "notes.txt"):
        (m / "configs" / name).write_text('backend: "python"\n')
    (m / "config.pbtxt").write_text('name: "m"\nbackend: "python"\n')
    entry = read_model_dir(m)
    assert entry.kind == "python" and entry.extra_configs == ["cpu.pbtxt", "gpu.pbtxt"]
    assert entry.text.startswith('name: "m"') and not entry.standalone
    small = read_model_dir(m, max_bytes=10)
    assert small.config is None and small.error.code == "too_large" and small.error.params == {"limit": 10}
    assert small.versions == [1] and small.kind == "?"
    assert load_repository(tmp_path, max_bytes=10)["m"].error.code == "too_large"
    assert read_model_dir(tmp_path / "nothing").error.code == "no_config"


def test_read_config_file_alone():
    entry = read_config_file(b'name: "alpha"\nplatform: "ensemble"\n', "up/a.pbtxt")
    assert entry.name == "alpha" and entry.is_ensemble and entry.standalone and entry.error is None
    assert str(entry.config_path) == "up/a.pbtxt" and entry.kind == "ensemble"
    unnamed = read_config_file(b'backend: "python"\n', "b.pbtxt")
    assert unnamed.name == "b" and unnamed.config_name == "b"
    bad = read_config_file(b"name: ", "c.pbtxt")
    assert bad.config is None and bad.error.code == "syntax" and bad.text == "name: "
    assert read_config_file(b"#" * 11, "d.pbtxt", max_bytes=10).error.code == "too_large"


def test_config_name_falls_back_to_directory(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "config.pbtxt").write_text('backend: "python"\n')
    assert read_model_dir(tmp_path / "x").config_name == "x"
