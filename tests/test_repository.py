"""Repository browser helpers: models on disk, the server's view, read-only opening, ensemble checks."""

from __future__ import annotations

import pytest

from triton_kitchen import repository as repo
from triton_kitchen.server import Endpoint, free_port

EXPECTED = {
    "preprocess",
    "classifier",
    "classifier_coarse",
    "postprocess",
    "image_classifier",
    "ensemble_pipeline",
    "tta_ensemble",
    "cascade_ensemble",
    "cascade_bls",
    "cascade_select",
    "hflip",
    "fuse_logits",
    "streamer",
}


def test_scan_repository_reads_every_model():
    entries = {e.name: e for e in repo.scan_repository()}
    assert EXPECTED <= set(entries)
    for e in entries.values():
        assert not e.error, (e.name, e.error)
        assert e.versions == [1]
    assert entries["image_classifier"].is_ensemble and entries["image_classifier"].kind == "ensemble"
    assert entries["classifier"].extra_configs == ["gpu.pbtxt"]


def test_summaries_tensors_batching():
    entries = {e.name: e for e in repo.scan_repository()}
    cls = entries["classifier"].config
    b = repo.batching(cls)
    assert b["max_batch_size"] == 8 and b["dynamic_batching"] and b["preferred_batch_size"] == [4, 8]
    assert b["max_queue_delay_us"] > 0
    rows = repo.tensors(cls)
    assert rows[0]["name"] == "input" and rows[0]["request_shape"] == "[N, 3, 224, 224]"
    assert repo.batching(entries["streamer"].config)["decoupled"]
    assert repo.tensors(entries["streamer"].config)[0]["request_shape"] == "[1]"  # max_batch_size 0: no N
    steps = repo.ensemble_steps(entries["image_classifier"].config)
    assert [s["model_name"] for s in steps] == ["preprocess", "classifier", "postprocess"]
    assert steps[1]["input_map"] == "input ← image_tensor" and all(s["model_version"] == -1 for s in steps)
    rows = repo.summary_rows(list(entries.values()))
    assert {r["model"] for r in rows} >= EXPECTED


def test_server_status_embedded(server):
    status = repo.server_status(server.endpoint)
    assert status.up and status.version.startswith("2.51")
    names = {m.name for m in status.models}
    assert EXPECTED <= names
    assert all(m.ready for m in status.models if m.name in EXPECTED)
    assert status.checked_ms < 2000


def test_server_status_without_repository_key(server):
    """A remote server may refuse the repository index: readiness comes from each model instead."""
    status = repo.server_status(Endpoint(server.http_url, server.grpc_url))
    assert status.up and status.state_of("classifier").ready


def test_server_status_dead_server_is_quick():
    port = free_port()
    status = repo.server_status(Endpoint(f"127.0.0.1:{port}", f"127.0.0.1:{port}"), timeout=1.0)
    assert not status.up and status.error and status.checked_ms < 2000


def test_loaded_config_text(server):
    text = repo.loaded_config_text(server.endpoint, "classifier")
    assert 'name: "classifier"' in text and "max_queue_delay_microseconds" in text


def test_open_other_repository(tmp_path):
    (tmp_path / "good" / "1").mkdir(parents=True)
    (tmp_path / "good" / "2").mkdir()
    (tmp_path / "good" / "config.pbtxt").write_text('name: "good"\nbackend: "python"\nmax_batch_size: 4\n')
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.pbtxt").write_text('name: "bad"\nmax_batch_size: "x"\n')
    entries = {e.name: e for e in repo.scan_repository(tmp_path)}
    assert entries["good"].versions == [1, 2] and not entries["good"].error
    assert entries["bad"].error and entries["bad"].config is None
    assert (tmp_path / "good" / "config.pbtxt").read_text().startswith('name: "good"')  # untouched


@pytest.mark.parametrize("path,code", [("", "repo_not_found"), ("/nonexistent/kitchen", "repo_not_found")])
def test_open_bad_path(path, code):
    with pytest.raises(repo.RepositoryError) as info:
        repo.scan_repository(path)
    assert info.value.code == code


def test_open_empty_folder(tmp_path):
    with pytest.raises(repo.RepositoryError) as info:
        repo.scan_repository(tmp_path)
    assert info.value.code == "repo_empty"


def test_uploaded_configs_are_only_parsed():
    entries = repo.parse_uploaded_configs(
        [
            ("a.pbtxt", b'name: "alpha"\nplatform: "ensemble"\nmax_batch_size: 2\n'),
            ("b.pbtxt", b"\xff\xfe not text"),
            ("c.pbtxt", b"name: "),
            ("d.pbtxt", b"#" * (repo.MAX_CONFIG_BYTES + 1)),
        ]
    )
    assert entries[0].name == "alpha" and entries[0].is_ensemble and not entries[0].error
    assert entries[1].error and entries[2].error and entries[3].error


def _image_classifier_text() -> str:
    return (repo.DEFAULT_REPOSITORY / "image_classifier" / "config.pbtxt").read_text()


def test_check_ensemble_valid():
    check = repo.check_ensemble_text(_image_classifier_text())
    assert check.ok and not check.problems
    assert "digraph" in check.dot
    assert check.dag.stages == [["preprocess"], ["classifier"], ["postprocess"]]


def test_check_ensemble_swapped_map():
    text = _image_classifier_text().replace(
        'key: "input" value: "image_tensor"', 'key: "image_tensor" value: "input"'
    )
    check = repo.check_ensemble_text(text)
    assert not check.ok and any(p.severity == "error" for p in check.problems)
    assert any(p.line for p in check.problems)


def test_check_ensemble_omitted_version():
    text = _image_classifier_text().replace(
        'model_version: -1\n      input_map { key: "input"', 'input_map { key: "input"'
    )
    check = repo.check_ensemble_text(text)
    assert not check.ok
    assert any("version 0" in (p.triton or p.message) for p in check.problems)


def test_check_ensemble_syntax_error():
    check = repo.check_ensemble_text('name: "image_classifier"\nplatform: ')
    assert check.config is None and not check.ok and check.problems[0].line


def test_check_ensemble_huge_text():
    check = repo.check_ensemble_text("#" * (repo.MAX_CONFIG_BYTES + 10))
    assert not check.ok and check.problems[0].code == "config_too_large"


def test_intermediate_memory_matches_the_lesson():
    rows = {r["tensor"]: r for r in repo.intermediate_memory("image_classifier", batch_size=8, in_flight=64)}
    assert rows["image_tensor"]["bytes_per_request"] == 8 * 3 * 224 * 224 * 4 == 4_816_896
    assert rows["image_tensor"]["bytes_in_flight"] == 64 * 4_816_896
    assert "top5_labels" not in rows  # ensemble outputs are not intermediates
    assert "digraph" in repo.ensemble_dot("tta_ensemble", lang="zh")
