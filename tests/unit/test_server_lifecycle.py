"""The embedded server's bookkeeping without a server: pruning run folders whose process is gone, the remote
endpoint from the environment.

The tests that need the server, the app or a browser: tests/live/test_server_lifecycle_live.py."""

from __future__ import annotations

import os
import socket

from _shared.server_lifecycle import dead_pid, run_folder

from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.server import (
    prune_run_dirs,
)
from triton_kitchen.tools import metrics


def test_prune_removes_only_folders_whose_process_is_gone(tmp_path):
    host = socket.gethostname()
    gone = run_folder(tmp_path, "run-gone", f"{host} {dead_pid()}")
    mine = run_folder(tmp_path, "run-mine", f"{host} {os.getpid()}")
    other_host = run_folder(tmp_path, "run-other", f"not-{host} {dead_pid()}")
    old_legacy = run_folder(tmp_path, "run-old", None, age_s=2 * 24 * 3600)
    new_legacy = run_folder(tmp_path, "run-new", None, age_s=60)
    cache = run_folder(tmp_path, "perf_analyzer_libs", f"{host} {dead_pid()}")
    assert sorted(prune_run_dirs(tmp_path)) == sorted([gone, old_legacy])
    assert not gone.exists() and not old_legacy.exists()
    assert mine.exists() and other_host.exists() and new_legacy.exists() and cache.exists()


def test_remote_endpoint_from_env(monkeypatch):
    monkeypatch.setenv("TRITON_HTTP_URL", "http://gpu-box:8000/")
    monkeypatch.delenv("TRITON_GRPC_URL", raising=False)
    monkeypatch.delenv("TRITON_METRICS_URL", raising=False)
    ep = Endpoint.from_env()
    assert (ep.http_url, ep.grpc_url, ep.embedded) == ("gpu-box:8000", "gpu-box:8001", False)
    assert metrics.address_of(ep) == "gpu-box:8002"  # Triton's default metrics port on the HTTP host
    monkeypatch.setenv("TRITON_METRICS_URL", "http://gpu-box:9102/")
    assert metrics.address_of(Endpoint.from_env()) == "gpu-box:9102"
    monkeypatch.delenv("TRITON_HTTP_URL")
    assert Endpoint.from_env() is None
