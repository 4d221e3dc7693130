"""``trace`` against a server whose trace API is restricted to a key (the project's own ``serve``; here the
session's server, addressed as a remote one): with that key in TRITON_KITCHEN_KEY it reads Triton's own trace;
without it, it falls back to statistics and says which variable would open the trace."""

from __future__ import annotations

import numpy as np
import pytest
from _shared.inside import run_trace_cli

from triton_kitchen.core.samples import image_tensor


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_trace_uses_tritons_trace_with_the_servers_key(
    server, sample_jpegs, tmp_path, protocol, capsys, monkeypatch
):
    np.save(tmp_path / "cat.npy", image_tensor(sample_jpegs["chelsea"]))
    url = server.grpc_url if protocol == "grpc" else server.http_url
    argv = ("--model", "ensemble_pipeline", "--input", str(tmp_path / "cat.npy"), "--protocol", protocol,
            "--url", url, "--stats-url", server.http_url)  # fmt: skip
    monkeypatch.setenv("TRITON_KITCHEN_KEY", server.key)
    rc, doc, _ = run_trace_cli(capsys, *argv)
    assert rc == 0 and doc["ok"] and doc["evidence"]["ran"] == "trace", doc["evidence"]
    monkeypatch.delenv("TRITON_KITCHEN_KEY")
    rc, doc, _ = run_trace_cli(capsys, *argv)
    assert rc == 0 and doc["evidence"]["ran"] == "statistics"
    assert any("no trace" in n and "TRITON_KITCHEN_KEY" in n for n in doc["evidence"]["notes"]), doc[
        "evidence"
    ]
