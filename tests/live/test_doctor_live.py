"""``doctor --quick --json`` against the embedded server: the server's facts, every protocol it offers measured at
concurrency 1 and 2 within the quick budget, each cell's statistics delta its own requests."""

from __future__ import annotations

import json
import time

from triton_kitchen.cli.main import main
from triton_kitchen.core import catalog
from triton_kitchen.tools.doctor_card import STATS_OURS, card


def test_doctor_quick_json_on_the_embedded_server(server, monkeypatch, capsys):
    monkeypatch.setenv("TRITON_KITCHEN_KEY", server.key)  # opens its trace API to the doctor, as to the app
    t0 = time.perf_counter()
    code = main(["doctor", "--url", server.http_url, "--grpc-url", server.grpc_url, "--quick", "--json"])
    elapsed = time.perf_counter() - t0
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["ok"] and "error" not in report
    assert elapsed <= 30, f"doctor --quick took {elapsed:.1f} s"
    facts = report["server"]
    assert facts["version"] == "2.51" and facts["release"] == "24.10"
    assert "statistics" in facts["extensions"] and catalog.CLASSIFIER in facts["models"]
    assert facts["grpc_url"] == server.grpc_url and facts["client_shm"] == "allowed"
    assert report["model"] == catalog.CLASSIFIER and report["wire_source"] == "trace"
    assert report["protocols"] == ["http-json", "http-binary", "grpc", "http-shm", "grpc-shm"]
    cells = {(c["protocol"], c["concurrency"]): c for c in report["cells"]}
    for protocol in ("http-binary", "grpc"):  # measured first: they fit in the budget
        cell = cells[(protocol, 1)]
        assert cell["e2e_ms"] > 0 and cell["requests"] >= 3 and cell["errors"] == 0
        assert cell["stats_check"] == STATS_OURS, cell
        parts = cell["parts_ms"]
        assert parts["compute"] > 0 and parts["wire"] > 0 and parts["serialize"] > 0
        assert set(parts) >= {
            "serialize",
            "wire",
            "frontend",
            "queue",
            "compute",
            "deserialize",
            "unexplained",
        }
    skipped = {n["key"] for n in report["not_measured"]}
    assert skipped <= {"budget", "quick_no_perf_analyzer"}, report["not_measured"]
    for lang in ("zh", "en"):
        text = card(report, lang)
        assert "doctor." not in text and "http-binary ×1" in text
