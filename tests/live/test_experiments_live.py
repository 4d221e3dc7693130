"""Experiments: short, bounded, live against the embedded server.

The tests of this topic that need no server, app or browser: tests/unit/test_experiments.py."""

from __future__ import annotations

import time

from triton_kitchen.labs import experiments


def test_chaining_reports_ensemble_and_chain_over_both_protocols_in_one_run(server, sample_jpegs):
    t0 = time.monotonic()
    res = experiments.chaining(server.endpoint, sample_jpegs["chelsea"], repeats=2, budget_s=10)
    assert time.monotonic() - t0 < 30
    assert res.same_answer
    for protocol in ("http-binary", "grpc"):
        ens, chain = res.row(protocol, "ensemble"), res.row(protocol, "chain")
        assert ens.round_trips == 1 and chain.round_trips == 3
        assert ens.median_ms > 0 and chain.median_ms > 0
        # the [1,3,224,224] FP32 tensor (602 kB) goes out and back in the chain, never in the ensemble
        assert chain.wire_bytes > 1_200_000 > 100_000 > ens.wire_bytes
        assert chain.payload_bytes > 2 * 602_112
    assert "median_ms" in res.to_dict()["rows"][0]


def test_parallel_branches_overlap_in_the_trace(server, sample_jpegs):
    res = experiments.parallel_branches(server.endpoint, sample_jpegs["coffee"], repeats=1, budget_s=10)
    (overlap,) = res.overlap_ms
    (ens,) = res.ensemble_ms
    assert overlap > 0  # both branches were inside Triton at the same time
    assert res.sum_of_steps_ms[0] > ens  # the executions add up to more than the request took
    assert res.sequential_ms[0] > 0


def test_cascade_bls_skips_stage_two_when_sure(server, sample_jpegs):
    rows = experiments.cascade(server.endpoint, sample_jpegs, repeats=1, budget_s=15)
    ens, bls = rows
    assert ens.model == "cascade_ensemble" and bls.model == "cascade_bls"
    assert ens.requests == bls.requests == len(sample_jpegs)
    assert ens.fine_runs >= ens.requests  # the ensemble always runs stage two
    assert bls.fine_runs == bls.stage_used.get("2", 0) < ens.fine_runs + 1
    assert ens.stage_used == bls.stage_used and ens.top1 == bls.top1


def test_dynamic_batching_queue_wait_is_in_the_trace(server, sample_jpegs):
    dyn, plain = experiments.batching_queue(server.endpoint, sample_jpegs["chelsea"], repeats=5, burst=3)
    assert dyn.model == "classifier" and dyn.max_queue_delay_us == 2000
    assert plain.max_queue_delay_us is None
    # alone, the classifier waits for company up to max_queue_delay; the coarse one does not wait
    assert min(dyn.alone_queue_ms) >= 1.9
    assert (
        min(plain.alone_queue_ms) < 1.9 <= min(dyn.alone_queue_ms)
    )  # the least of five: not a loaded moment
    assert len(dyn.burst_queue_ms) == 3 and dyn.burst_batches <= 3
