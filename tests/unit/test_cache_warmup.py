"""Chapter 10's cache and warm-up drills without a server: the verdict rules, the server's cache flag, the drill
models' configs."""

from __future__ import annotations

from triton_kitchen.cli.check import run_check
from triton_kitchen.core import server
from triton_kitchen.core.catalog import CACHE_DRILL, WARMUP_DRILL
from triton_kitchen.core.load_refusal import logged_reason, triton_text
from triton_kitchen.labs.cache_warmup import CacheResult, Load, WarmupResult


def test_cache_verdict_needs_a_counted_hit_and_a_quick_repeat():
    assert CacheResult(41.0, 0.5, 41.0, 1, 2, 2, 13.0).outcome() == "from_cache"
    assert CacheResult(41.0, 40.0, 41.0, 0, 3, 3, None).outcome() == "ran_again"  # no server cache
    assert (
        CacheResult(41.0, 30.0, 41.0, 1, 2, 2, 13.0).outcome() == "ran_again"
    )  # a hit, but not this request's


def test_warmup_verdict_compares_the_first_requests():
    moved = WarmupResult([Load(False, 1400, 530, 1), Load(True, 2000, 2, 1)])
    assert moved.outcome() == "moved" and moved.way(True).first_ms == 2
    assert WarmupResult([Load(False, 1400, 530, 1), Load(True, 1400, 520, 1)]).outcome() == "same"


def test_the_server_starts_with_a_response_cache(monkeypatch, tmp_path):
    monkeypatch.setattr(server, "prepare_server_dir", lambda: tmp_path)
    srv = server.EmbeddedServer(http_port=0, grpc_port=0, metrics_port=0)
    srv.ports = {"http": 1, "grpc": 2, "metrics": 3}
    assert f"--cache-config=local,size={server.RESPONSE_CACHE_BYTES}" in srv.command()
    src, _ = server.wheel_paths()
    assert (src / "caches" / "local" / "libtritoncache_local.so").is_file()  # the wheel ships the cache


def test_the_drill_models_pass_check(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in (CACHE_DRILL, WARMUP_DRILL):
        (repo / name).symlink_to(server.DEFAULT_REPOSITORY / name)
    assert run_check([str(repo)]) == 0


def test_triton_words_from_a_refused_load():
    detail = (
        "POST /v2/repository/models/cache_drill/load: HTTP 500: failed to load 'cache_drill', failed to poll"
    )
    assert triton_text(detail) == "failed to load 'cache_drill', failed to poll"
    line = (
        'E1205 12:59:54.452025 14211 model_repository_manager.cc:1460] "Poll failed for model directory '
        "'cache_drill': Response Cache does not currently support model cache_drill with sequence batching "
        'scheduler. Please disable the response cache."'
    )
    assert logged_reason("", line).startswith("Poll failed for model directory 'cache_drill': Response Cache")
    assert logged_reason(line, line) == ""  # only lines new since the first read
