"""Repository browser helpers: models on disk (the catalogue), the server's view, read-only opening under
a root, ensemble checks.

Here the tests that need no server, app or browser; the others: tests/live/test_repository_live.py."""

from __future__ import annotations

import os
import time

import pytest
from _shared.repository import EXPECTED

from triton_kitchen.core import catalog
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.ensemble import Problem
from triton_kitchen.core.server import free_port
from triton_kitchen.core.settings import REPOSITORY_ROOT_ENV
from triton_kitchen.tools import repository as repo


def test_catalog_reads_every_model_in_course_order():
    entries = catalog.models()
    assert EXPECTED <= set(entries)
    for e in entries.values():
        assert not e.error, (e.name, e.error)
        assert e.versions == [1]
    assert entries["image_classifier"].is_ensemble and entries["image_classifier"].kind == "ensemble"
    assert entries["classifier"].extra_configs == ["gpu.pbtxt"]
    assert list(entries)[:4] == [
        catalog.IMAGE_CLASSIFIER,
        catalog.PREPROCESS,
        catalog.CLASSIFIER,
        catalog.POSTPROCESS,
    ]
    assert set(catalog.COURSE_ORDER) == EXPECTED  # every model of the repository has a name in the catalogue
    assert catalog.ensemble_names() == [
        "image_classifier",
        "ensemble_pipeline",
        "tta_ensemble",
        "cascade_ensemble",
        "second_opinion",
    ]
    names = catalog.model_names(first=(catalog.ENSEMBLE_PIPELINE,), leave_out=(catalog.STREAMER,))
    assert names[:2] == ["ensemble_pipeline", "image_classifier"] and "streamer" not in names


def test_catalog_order_and_folders_without_config(tmp_path):
    for name in ("zeta", "alpha", "classifier", "image_classifier", "no_config"):
        (tmp_path / name / "1").mkdir(parents=True)
        if name != "no_config":
            (tmp_path / name / "config.pbtxt").write_text(f'name: "{name}"\nbackend: "python"\n')
    assert catalog.model_names(tmp_path) == ["image_classifier", "classifier", "alpha", "zeta"]
    assert catalog.ensemble_names(tmp_path) == []


def test_fingerprint_changes_with_a_config(tmp_path):
    (tmp_path / "m").mkdir()
    config = tmp_path / "m" / "config.pbtxt"
    config.write_text('name: "m"\n')
    before = catalog.fingerprint(tmp_path)
    assert before == catalog.fingerprint(tmp_path) and [name for name, _ in before] == ["m"]
    later = time.time() + 5
    os.utime(config, (later, later))
    assert catalog.fingerprint(tmp_path) != before


def test_summaries_tensors_batching():
    entries = catalog.models()
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


def test_server_status_dead_server_is_quick():
    port = free_port()
    status = repo.server_status(Endpoint(f"127.0.0.1:{port}", f"127.0.0.1:{port}"), timeout=1.0)
    assert not status.up and status.error and status.checked_ms < 2000


def test_open_other_repository(tmp_path):
    (tmp_path / "good" / "1").mkdir(parents=True)
    (tmp_path / "good" / "2").mkdir()
    (tmp_path / "good" / "config.pbtxt").write_text('name: "good"\nbackend: "python"\nmax_batch_size: 4\n')
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.pbtxt").write_text('name: "bad"\nmax_batch_size: "x"\n')
    (tmp_path / "huge").mkdir()
    (tmp_path / "huge" / "config.pbtxt").write_text("#" * (repo.MAX_CONFIG_BYTES + 1))
    entries = {e.name: e for e in repo.open_repository(tmp_path, root=tmp_path)}
    assert entries["good"].versions == [1, 2] and not entries["good"].error
    assert entries["bad"].error and entries["bad"].config is None
    assert repo.error_text(entries["bad"]).startswith("2:17: expected an integer")
    assert entries["huge"].error.code == "too_large" and not entries["huge"].text  # refused unread
    rows = {r["model"]: r for r in repo.summary_rows(list(entries.values()))}
    assert rows["good"]["error"] == "" and rows["bad"]["error"] == repo.error_text(entries["bad"])
    assert (tmp_path / "good" / "config.pbtxt").read_text().startswith('name: "good"')  # untouched
    assert [e.name for e in repo.open_repository(".", root=tmp_path)] == ["bad", "good", "huge"]


@pytest.mark.parametrize("path,code", [("", "repo_not_found"), ("missing", "repo_not_found")])
def test_open_bad_path(tmp_path, path, code):
    with pytest.raises(repo.RepositoryError) as info:
        repo.open_repository(path, root=tmp_path)
    assert info.value.code == code


def test_open_empty_folder(tmp_path):
    with pytest.raises(repo.RepositoryError) as info:
        repo.open_repository(tmp_path, root=tmp_path)
    assert info.value.code == "repo_empty"


def test_only_folders_under_the_root_open(tmp_path, monkeypatch):
    """A browser user may not scan the host: only folders under the app's folder or the configured root."""
    root = tmp_path / "root"
    (root / "repo" / "m").mkdir(parents=True)
    (root / "repo" / "m" / "config.pbtxt").write_text('name: "m"\nbackend: "python"\n')
    (tmp_path / "outside" / "m").mkdir(parents=True)
    (tmp_path / "outside" / "m" / "config.pbtxt").write_text('name: "m"\nbackend: "python"\n')
    (root / "link").symlink_to(tmp_path / "outside")
    monkeypatch.setenv(REPOSITORY_ROOT_ENV, str(root))
    assert repo.repository_root() == root.resolve()
    assert [e.name for e in repo.open_repository("repo")] == ["m"]  # relative: under the root
    assert [e.name for e in repo.open_repository(root / "repo")] == ["m"]
    for path in (
        tmp_path / "outside",
        "/etc",
        "../outside",
        "repo/../../outside",
        "link",
        "/nonexistent/kitchen",
    ):
        with pytest.raises(repo.RepositoryError) as info:
            repo.open_repository(path)
        assert info.value.code == "repo_outside_root", path  # refused before looking: no probing outside
    monkeypatch.delenv(REPOSITORY_ROOT_ENV)
    assert repo.repository_root() == repo.REPO_ROOT.resolve()
    assert any(e.name == "classifier" for e in repo.open_repository("model_repository"))
    assert repo.RepositoryError("repo_empty", "x").detail == "x"


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
    assert entries[1].error.code == "unreadable" and entries[2].error.code == "syntax"
    assert entries[3].error.code == "too_large" and entries[3].name == "d"
    assert all(e.standalone for e in entries) and str(entries[1].config_path) == "b.pbtxt"


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
    assert all(isinstance(p, Problem) for p in check.problems)  # the one Problem, ensemble's
    zh = repo.check_ensemble_text(text, lang="zh").problems
    assert [p.code for p in zh] == [p.code for p in check.problems]
    assert [p.triton_message for p in zh] == [p.triton_message for p in check.problems]  # Triton's words stay
    assert zh[0].message != check.problems[0].message and zh[0].text("en") == zh[0].message


def test_check_ensemble_omitted_version():
    text = _image_classifier_text().replace(
        'model_version: -1\n      input_map { key: "input"', 'input_map { key: "input"'
    )
    check = repo.check_ensemble_text(text)
    assert not check.ok
    assert any("version 0" in (p.triton_message or p.message) for p in check.problems)


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
