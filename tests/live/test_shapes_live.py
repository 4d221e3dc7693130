"""The shapes drill on the real server: rows of different lengths do not batch, and each fix does, by Triton's own
counts (chapter 9); ``execute`` receives lists of requests, served by one stub process per instance (chapter 3)."""

from __future__ import annotations

import time

import pytest

from triton_kitchen.labs import shapes

pytestmark = pytest.mark.timing  # wall-clock figures: run alone (README: tests)


def test_unequal_shapes_batch_alone_and_each_fix_batches(server):
    t0 = time.monotonic()
    result = shapes.compare_shapes(server.endpoint, clients_n=8)
    assert time.monotonic() - t0 < 20
    runs = {r.way: r for r in result.runs}
    assert all(not r.errors for r in runs.values()), {w: r.errors[:1] for w, r in runs.items()}
    unequal = runs["unequal"]
    assert result.outcome() == "one", unequal  # Triton's counts: about one request per execution
    assert unequal.executions >= 0.9 * unequal.inferences
    assert sum(unequal.histogram.values()) == unequal.executions
    for way in ("padded", "ragged", "buckets"):
        assert runs[way].mean_batch > 1.5 * unequal.mean_batch, (way, runs[way], unequal)
        assert runs[way].throughput_rps > 1.3 * unequal.throughput_rps, (way, runs[way], unequal)


def test_execute_gets_lists_from_one_stub_per_instance(server):
    stubs = shapes.stubs(server_pid=server.pid)
    assert len(stubs) == 2 and all(s.region.startswith("triton_python_backend_shm_region_") for s in stubs)
    result = shapes.inside_burst(server.endpoint, shapes.INSIDE_BURST)
    assert not result.errors and len(result.answers) == shapes.INSIDE_BURST
    assert result.outcome() == "list"
    calls = result.calls()
    assert len(calls) < shapes.INSIDE_BURST
    assert all(
        k == len(indices) for _, _, k, indices in calls
    )  # the model's len(requests) is the call's size
    assert set(result.pids()) <= {s.pid for s in stubs}
