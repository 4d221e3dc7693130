"""The dynamic-batching simulator on cases computed by hand (no server)."""

from __future__ import annotations

import time

import pytest

from triton_kitchen.tools.simulator import (
    GUIDE_ARRIVALS,
    GUIDE_SERVICE,
    GUIDE_X_MS,
    BatcherConfig,
    ServiceModel,
    simulate,
    simulate_arrivals,
)

X = GUIDE_X_MS


def _makespan(config: BatcherConfig) -> float:
    result = simulate_arrivals(config, GUIDE_SERVICE, GUIDE_ARRIVALS)
    return max(r.end_ms for r in result.requests)


def _groups(config: BatcherConfig) -> list[str]:
    result = simulate_arrivals(config, GUIDE_SERVICE, GUIDE_ARRIVALS)
    names = {r.id: r.name for r in result.requests}
    return ["".join(sorted(names[i] for i in b.requests)) for b in result.batches]


def test_conceptual_guide_example_exactly():
    # Triton's Conceptual Guide, Part 2: 5X without batching, 3X with it
    assert _makespan(BatcherConfig(dynamic_batching=False)) == pytest.approx(5 * X)
    assert _groups(BatcherConfig(dynamic_batching=False)) == ["A", "C", "B", "D", "E"]
    assert _makespan(BatcherConfig()) == pytest.approx(3 * X)
    assert _groups(BatcherConfig()) == ["AC", "BD", "E"]
    # with a delay, A, B, C and then D, E fill two batches of 8
    delayed = BatcherConfig(max_queue_delay_us=int(X / 2 * 1000))
    assert _groups(delayed) == ["ABC", "DE"]
    assert _makespan(delayed) == pytest.approx(7 * X / 3)


def test_conceptual_guide_two_instances():
    assert _makespan(BatcherConfig(dynamic_batching=False, instances=2)) == pytest.approx(3 * X)
    two = BatcherConfig(instances=2)
    assert _groups(two) == ["AC", "B", "DE"] and _makespan(two) == pytest.approx(2 * X)
    two_delayed = BatcherConfig(instances=2, max_queue_delay_us=int(X / 2 * 1000))
    result = simulate_arrivals(two_delayed, GUIDE_SERVICE, GUIDE_ARRIVALS)
    assert {b.instance for b in result.batches} == {0, 1}
    assert _makespan(two_delayed) == pytest.approx(5 * X / 3)


def test_closed_loop_without_batching_is_one_request_at_a_time():
    service = ServiceModel({1: 10.0}, outside_ms=2.0)
    one = simulate(BatcherConfig(dynamic_batching=False), service, concurrency=1, requests=500).summary
    assert one["throughput_rps"] == pytest.approx(1000 / 12, rel=1e-6)
    assert one["latency_ms"]["p50"] == pytest.approx(12.0)
    assert one["queue_ms"] == pytest.approx(0.0, abs=1e-6)
    four = simulate(
        BatcherConfig(dynamic_batching=False), ServiceModel({1: 10.0}), concurrency=4, requests=400
    ).summary
    assert four["throughput_rps"] == pytest.approx(100, rel=1e-3)
    assert four["latency_ms"]["p50"] == pytest.approx(40.0, rel=1e-3)
    assert four["batch_histogram"] == {1: four["requests"]}


def test_closed_loop_with_batching_by_hand():
    # 4 clients, every execution 10 ms whatever its size, no delay: client 0 starts alone (the others send a
    # moment later), then all four answers come back together and all four requests ride one batch
    res = simulate(BatcherConfig(), ServiceModel({1: 10.0, 8: 10.0}), concurrency=4, requests=400).summary
    assert res["throughput_rps"] == pytest.approx(400, rel=1e-2)  # the last batch is ragged
    assert max(res["batch_histogram"], key=res["batch_histogram"].get) == 4
    assert res["latency_ms"]["p50"] == pytest.approx(10.0)
    # with 1 ms outside the server and a 2 ms delay the same four still meet, but 4 < max_batch_size 8, so
    # the batcher waits out the delay every time: a cycle of 1 + 2 + 10 ms
    res = simulate(
        BatcherConfig(max_queue_delay_us=2000),
        ServiceModel({1: 10.0, 8: 10.0}, outside_ms=1.0),
        concurrency=4,
        requests=400,
    ).summary
    assert res["mean_batch"] == pytest.approx(4.0, rel=1e-2)
    assert res["throughput_rps"] == pytest.approx(4 / 13 * 1000, rel=1e-2)
    assert res["queue_ms"] == pytest.approx(2.0, rel=1e-2)


def test_preferred_sizes_cut_the_batch():
    # 7 requests queued at once, preferred 4: the batcher sends 4 first, then the rest
    arrivals = [(0.0, 1, str(i)) for i in range(7)]
    res = simulate_arrivals(BatcherConfig(preferred_batch_sizes=(2, 4)), GUIDE_SERVICE, arrivals)
    assert [b.size for b in res.batches] == [4, 2, 1]
    plain = simulate_arrivals(BatcherConfig(), GUIDE_SERVICE, arrivals)
    assert [b.size for b in plain.batches] == [7]


def test_largest_preferred_size_goes_at_once_while_the_delay_lasts():
    # Triton 2.51 (core r24.10 GetDynamicBatch): 5 arrive together at an idle instance, preferred 4 and 8, a 2 ms
    # delay: 4 go at once, without waiting for 8; the fifth waits for the next free instance
    config = BatcherConfig(preferred_batch_sizes=(4, 8), max_queue_delay_us=2000)
    res = simulate_arrivals(config, GUIDE_SERVICE, [(0.0, 1, str(i)) for i in range(5)])
    assert [(b.size, b.start_ms) for b in res.batches][0] == (4, 0.0)


def test_past_the_delay_everything_queued_goes():
    # the instance is busy for 20 ms while 5 queue up: once the oldest has waited past the 2 ms delay, the
    # preferred size no longer cuts the batch, and all 5 go together
    config = BatcherConfig(preferred_batch_sizes=(4, 8), max_queue_delay_us=2000)
    service = ServiceModel({1: 20.0, 8: 20.0})
    arrivals = [(0.0, 8, "busy")] + [(1.0, 1, str(i)) for i in range(5)]
    res = simulate_arrivals(config, service, arrivals)
    assert [b.size for b in res.batches] == [8, 5]


def test_open_loop_below_saturation_throughput_is_the_offered_rate():
    service = ServiceModel({1: 5.0, 8: 12.0}, outside_ms=1.0)
    res = simulate(BatcherConfig(), service, rate_rps=50, requests=2000).summary
    assert res["throughput_rps"] == pytest.approx(50, rel=1e-3)
    assert res["latency_ms"]["p50"] == pytest.approx(6.0)  # alone every time: 5 ms + 1 ms outside
    poisson = simulate(BatcherConfig(), service, rate_rps=50, distribution="poisson", requests=4000, seed=3)
    assert poisson.summary["throughput_rps"] == pytest.approx(50, rel=0.08)
    again = simulate(BatcherConfig(), service, rate_rps=50, distribution="poisson", requests=4000, seed=3)
    assert again.summary == poisson.summary  # seeded: deterministic


def test_a_delay_trades_latency_for_batch_size():
    service = ServiceModel({1: 4.0, 8: 8.0})
    fast = simulate(BatcherConfig(), service, rate_rps=400, requests=3000, distribution="poisson").summary
    slow = simulate(
        BatcherConfig(max_queue_delay_us=10_000), service, rate_rps=400, requests=3000, distribution="poisson"
    ).summary
    assert slow["mean_batch"] > fast["mean_batch"]
    assert slow["latency_ms"]["p50"] > fast["latency_ms"]["p50"]


def test_parallelism_limits_what_more_instances_give():
    service = ServiceModel({1: 10.0}, parallelism=1)
    one = simulate(BatcherConfig(dynamic_batching=False), service, concurrency=8, requests=800).summary
    two = simulate(
        BatcherConfig(dynamic_batching=False, instances=2), service, concurrency=8, requests=800
    ).summary
    assert two["throughput_rps"] == pytest.approx(one["throughput_rps"], rel=0.05)
    free = ServiceModel({1: 10.0})
    two_free = simulate(
        BatcherConfig(dynamic_batching=False, instances=2), free, concurrency=8, requests=800
    ).summary
    assert two_free["throughput_rps"] == pytest.approx(2 * one["throughput_rps"], rel=0.02)


def test_service_time_interpolates_linearly():
    s = ServiceModel({1: 10.0, 4: 16.0})
    assert s.service_ms(2) == pytest.approx(12.0)
    assert s.service_ms(8) == pytest.approx(24.0)  # extrapolated from the last two
    assert ServiceModel({2: 10.0}).service_ms(4) == pytest.approx(20.0)


def test_bad_settings_are_refused():
    with pytest.raises(ValueError):
        BatcherConfig(max_batch_size=0)
    with pytest.raises(ValueError):
        BatcherConfig(preferred_batch_sizes=(16,))
    with pytest.raises(ValueError):
        simulate(BatcherConfig(), ServiceModel({1: 1.0}), requests=10)


def test_ten_thousand_requests_in_under_a_second():
    t0 = time.perf_counter()
    res = simulate(
        BatcherConfig(preferred_batch_sizes=(4, 8), max_queue_delay_us=2000, instances=2),
        ServiceModel({1: 8.0, 8: 30.0}, outside_ms=1.5),
        concurrency=16,
        requests=10_000,
    )
    took = time.perf_counter() - t0
    print(f"10,000 simulated requests in {took:.3f} s")
    assert res.summary["requests"] == 9000 and took < 1.0


def test_a_client_that_prepares_one_request_at_a_time_staggers_arrivals():
    # 4 clients, 2 ms of client work each, a 1 ms delay: with a client slot each the four answers leave again
    # together and share one batch; on one slot (a Python client's GIL) they leave 2 ms apart, beyond the delay
    shared = ServiceModel({1: 10.0, 8: 10.0}, outside_ms=2.0)
    serial = ServiceModel({1: 10.0, 8: 10.0}, outside_ms=2.0, client_parallelism=1)
    together = simulate(BatcherConfig(max_queue_delay_us=1000), shared, concurrency=4, requests=400).summary
    staggered = simulate(BatcherConfig(max_queue_delay_us=1000), serial, concurrency=4, requests=400).summary
    assert together["mean_batch"] == pytest.approx(4.0, rel=1e-2)
    assert staggered["mean_batch"] < 3.0 and staggered["client_wait_ms"] > 0
    # a delay long enough to cover the stagger gathers them again
    gathered = simulate(BatcherConfig(max_queue_delay_us=8000), serial, concurrency=4, requests=400).summary
    assert gathered["mean_batch"] > staggered["mean_batch"]


def test_an_open_loop_past_saturation_sends_late_instead_of_queueing_forever():
    service = ServiceModel({1: 10.0})  # 100 req/s at most without batching
    res = simulate(
        BatcherConfig(dynamic_batching=False), service, rate_rps=200, requests=2000, max_in_flight=4
    ).summary
    assert res["late"] > 500 and res["throughput_rps"] == pytest.approx(100, rel=0.02)
    assert res["latency_ms"]["p99"] <= 4 * 10.0 + 1e-6  # never more than the senders in flight ahead of it
