"""Chapter 9's scheduler experiments (triton_kitchen.labs.scheduling): configs and outcomes offline; on the real embedded
server, what chapter 9's page does not run (a queue timeout, KIND_GPU, a closed repository API), each leaving the
classifier's config exactly as it was. The page's own runs are asserted in tests/live/test_ch9_live.py.

Here the tests that need no server, app or browser; the others: tests/live/test_scheduling_live.py."""

from __future__ import annotations

import pytest
from google.protobuf import json_format, text_format
from tritonclient.grpc import model_config_pb2

from triton_kitchen.core import load_refusal, override
from triton_kitchen.labs import scheduling
from triton_kitchen.labs.scheduling import QueuePolicy
from triton_kitchen.tools import burst
from triton_kitchen.tools.bench import BenchResult
from triton_kitchen.tools.burst import Burst, Sent

pytestmark = pytest.mark.timing  # wall-clock figures: run alone (README: tests)

BASE = {
    "name": "classifier",
    "max_batch_size": 8,
    "dynamic_batching": {"preferred_batch_size": [4, 8], "max_queue_delay_microseconds": 2000},
    "instance_group": [{"kind": "KIND_CPU", "count": 1}],
}


# -- offline ------------------------------------------------------------------------------------------------
def test_queue_config_changes_only_the_queue_policy():
    cfg = scheduling.queue_config(BASE, QueuePolicy(8, 20_000, "DELAY"))
    db = cfg["dynamic_batching"]
    assert db["default_queue_policy"] == {
        "timeout_action": "DELAY",
        "default_timeout_microseconds": 20_000,
        "allow_timeout_override": False,
        "max_queue_size": 8,
    }
    assert db["preferred_batch_size"] == [4, 8] and db["priority_levels"] == 0
    assert BASE["dynamic_batching"] == {"preferred_batch_size": [4, 8], "max_queue_delay_microseconds": 2000}
    override.check_override(BASE, cfg)  # the lab's guard lets it through: only dynamic_batching changed
    json_format.ParseDict(cfg, model_config_pb2.ModelConfig())  # Triton's own message accepts it


def test_priority_config_puts_unmarked_requests_at_the_lowest_level():
    db = scheduling.priority_config(BASE, 2)["dynamic_batching"]
    assert (db["priority_levels"], db["default_priority_level"]) == (2, 2)
    assert scheduling.priority_config(BASE, 0)["dynamic_batching"]["priority_levels"] == 0
    with pytest.raises(scheduling.SchedulingError):
        scheduling.priority_config(BASE, 9)


@pytest.mark.parametrize(
    "policy", [QueuePolicy(action="DROP"), QueuePolicy(max_queue_size=-1), QueuePolicy(timeout_us=10**9)]
)
def test_bad_policies_are_refused(policy):
    with pytest.raises(scheduling.SchedulingError) as info:
        scheduling.queue_config(BASE, policy)
    assert info.value.code == "bad_settings"


def test_a_model_without_dynamic_batching_has_no_queue_to_set():
    with pytest.raises(scheduling.SchedulingError):
        scheduling.queue_config({k: v for k, v in BASE.items() if k != "dynamic_batching"}, QueuePolicy())


def test_pbtxt_is_a_config_fragment_triton_parses():
    for cfg in (
        scheduling.queue_config(BASE, QueuePolicy(4, 1000, "REJECT")),
        scheduling.priority_config(BASE, 2),
    ):
        text = scheduling.pbtxt(cfg)
        parsed = text_format.Parse(text, model_config_pb2.ModelConfig())
        assert parsed.dynamic_batching.max_queue_delay_microseconds == 2000
    assert "max_queue_size: 4" in scheduling.pbtxt(scheduling.queue_config(BASE, QueuePolicy(4, 1000)))
    assert "priority_levels: 2" in scheduling.pbtxt(scheduling.priority_config(BASE, 2))


def _burst(done: list[tuple[int, float, str]]) -> Burst:
    return Burst("b", "", [Sent(i, p, 0.0, at, "") for i, (p, at, _) in enumerate(done)])


def test_finish_ranks_and_priority_outcome():
    fifo = _burst([(0, 10, ""), (0, 20, ""), (0, 30, ""), (1, 40, ""), (1, 50, "")])
    prio = _burst([(0, 30, ""), (0, 40, ""), (0, 50, ""), (1, 10, ""), (1, 20, "")])
    assert fifo.finish_ranks(1) == [4, 5] and prio.finish_ranks(1) == [1, 2]
    assert scheduling.PriorityResult(fifo, prio, 3, 2).outcome() == "overtake"
    assert scheduling.PriorityResult(fifo, fifo, 3, 2).outcome() == "no_change"


def _sent(rows: list[tuple[int, float, float]]) -> Burst:
    return Burst("b", "", [Sent(i, p, sent, done) for i, (p, sent, done) in enumerate(rows)])


def test_the_longest_pause_between_answers():
    b = _sent([(0, 0.0, 10), (0, 0.0, 12), (0, 0.0, 530), (1, 5.0, 560), (0, 0.0, None)])
    assert b.longest_pause_ms() == 518  # from 12 to 530; the unanswered request is left out
    assert _sent([(0, 0.0, 10)]).longest_pause_ms() is None


def test_the_trickle_is_not_counted_among_the_early_requests():
    """The ordinary requests sent one by one after the urgent ones (the trickle) are neither early nor waiting:
    done and waiting add up to the burst (they added up to more on the page before)."""
    early = [(0, 0.0, d) for d in (10, 12, 14, 16, 45, 57, 69, 81)] + [(1, 20.0, 30), (1, 20.0, 31)]
    prio = _sent(early)
    prio.sent += [Sent(10 + i, 0, 25.0 + 5 * i, 28.0 + 5 * i, trickle=True) for i in range(3)]
    result = scheduling.PriorityResult(prio, prio, 8, 2)
    assert result.early_done() + result.early_waiting() == 8
    assert result.early_done() == 4


def test_overtaking_counts_among_the_requests_still_waiting():
    """A slow client: the server answered four of the eight ordinary requests before the urgent two even left
    (at 20 ms). Those cannot be overtaken; the urgent ones finished ahead of the other four."""
    early_done = [10, 12, 14, 16, 45, 57, 69, 81]
    prio = _sent([(0, 0.0, d) for d in early_done] + [(1, 20.0, 30), (1, 20.0, 31)])
    fifo = _sent([(0, 0.0, d) for d in early_done] + [(1, 20.0, 95), (1, 20.0, 96)])
    assert prio.finish_ranks(1) == [5, 6]  # over all ten: not ahead of most
    waiting = prio.still_waiting(1)
    assert [n for n, s in enumerate(waiting, start=1) if s.priority == 1] == [1, 2] and len(waiting) == 6
    assert prio.ahead_of_waiting(1) == (4, 4)
    result = scheduling.PriorityResult(fifo, prio, 8, 2)
    assert result.outcome() == "overtake" and (result.early_done(), result.early_waiting()) == (4, 4)
    assert scheduling.PriorityResult(fifo, fifo, 8, 2).outcome() == "no_change"
    # urgent requests that did not skip the queue: behind the waiting ones under priorities too
    late_anyway = _sent([(0, 0.0, d) for d in early_done] + [(1, 20.0, 82), (1, 20.0, 83)])
    assert scheduling.PriorityResult(fifo, late_anyway, 8, 2).outcome() == "no_change"


def test_the_batch_being_computed_and_the_same_batch_are_not_overtaken():
    """Requests in the batch the server was computing when the urgent ones left cannot be overtaken, and
    finishing in the same batch as an ordinary request (a fraction of a ms apart) is not finishing ahead of it."""
    # 8 answered before the urgent 4 left (20 ms), 8 in the running batch (at 50 ms), then the urgent batch
    # (4 urgent, 4 ordinary, at 90 ms), then 12 more ordinary ones in batches of 8 and 4
    early = [10 + i * 0.1 for i in range(8)] + [50 + i * 0.1 for i in range(8)]
    early += (
        [90 + i * 0.2 for i in range(4)]
        + [130 + i * 0.1 for i in range(8)]
        + [170 + i * 0.1 for i in range(4)]
    )
    prio = _sent([(0, 0.0, d) for d in early] + [(1, 20.0, 90.1 + i * 0.2) for i in range(4)])
    fifo_early = sorted(early)[:28] + [170.0, 170.1, 170.2, 170.3]
    fifo = _sent([(0, 0.0, d) for d in fifo_early] + [(1, 20.0, 170.5 + i * 0.1) for i in range(4)])
    result = scheduling.PriorityResult(fifo, prio, 32, 4)
    assert (result.early_done(), result.early_waiting()) == (16, 16)  # 8 answered, 8 being computed
    assert prio.ahead_of_waiting(1) == (12, 16) and result.outcome() == "overtake"
    # a tie: 28 answered, the last 4 ordinary and the 4 urgent in one batch, urgent a hair first
    tie = _sent([(0, 0.0, 10 + i) for i in range(28)] + [(0, 0.0, 100.5 + i * 0.1) for i in range(4)])
    tie.sent += [burst.Sent(32 + i, 1, 50.0, 100.0 + i * 0.1) for i in range(4)]
    assert (
        tie.ahead_of_waiting(1) == (0, 4)
        and scheduling.PriorityResult(fifo, tie, 32, 4).outcome() == "no_change"
    )


def test_the_trickle_is_not_counted_among_the_overtaken():
    """Ordinary requests sent after the urgent ones (the trickle) finish behind them under any order: counting
    them would make first come, first served look like overtaking."""
    early = _sent([(0, 0.0, d) for d in (10, 40, 70, 100)] + [(1, 20.0, 130), (1, 20.0, 131)])
    early.sent += [Sent(6 + i, 0, 70.0 + 50 * i, 160.0 + 30 * i, trickle=True) for i in range(3)]
    waiting = early.still_waiting(1)
    assert not any(s.trickle for s in waiting)
    assert scheduling.PriorityResult(early, early, 4, 2).outcome() == "no_change"
    assert scheduling.PriorityResult(early, early, 4, 2).trickled() == 3
    assert [scheduling.kind_of(s) for s in early.sent][-4:] == ["late", "trickle", "trickle", "trickle"]


def test_what_each_queue_request_got():
    kinds = [
        Sent(0, 0, 0.0, 5.0),
        Sent(1, 0, 0.0, 1.0, "[StatusCode.UNAVAILABLE] Exceeds maximum queue size"),
        Sent(2, 0, 0.0, 60.0, "[StatusCode.UNAVAILABLE] Request timeout expired"),
        Sent(3, 0, 0.0, 60.0, "no answer within 60 s"),
    ]
    assert [scheduling.refusal_kind(s) for s in kinds] == ["answered", "full", "timeout", "other"]


def test_the_measured_pause_the_page_shows():
    """Every setting alone paused most bursts, none without; a request every 50 ms kept every gap short."""
    rows = {r[0].split(":")[0]: r for r in scheduling.BATCHER_PAUSE["rows"]}
    assert rows["none"][1] == 0 and rows["none"][3] < scheduling.PAUSE_NOTE_MS
    for setting in (
        "priority_levels",
        "max_queue_size",
        "default_timeout_microseconds",
        "allow_timeout_override",
    ):
        _, paused, of, gap, trickled = rows[setting]
        assert paused > of / 2 and gap >= 450 and trickled < scheduling.PAUSE_NOTE_MS, setting
    counts = scheduling.pause_counts()
    assert counts["of"] == rows["none"][2] and "benchmarks/batcher_pause.py" in counts["command"]


@pytest.mark.parametrize("case", scheduling.ORDERING_CASES)
def test_ordering_configs_hold_what_triton_refuses(case):
    db = scheduling.ordering_config(BASE, case)["dynamic_batching"]
    assert db["preserve_ordering"] is True
    if case == "priority":
        assert db["priority_levels"] == 2
    else:
        assert db["default_queue_policy"]["timeout_action"] == "DELAY"
        assert db["default_queue_policy"]["default_timeout_microseconds"] > 0
    json_format.ParseDict(scheduling.ordering_config(BASE, case), model_config_pb2.ModelConfig())
    with pytest.raises(scheduling.SchedulingError):
        scheduling.ordering_config(BASE, "both")


def test_the_logged_reason_is_the_new_poll_failure():
    old = "E1205 10:00:00.1 1 model_repository_manager.cc:1460] \"Poll failed for model directory 'm': old\""
    new = "E1205 10:00:01.2 1 model_repository_manager.cc:1460] \"Poll failed for model directory 'm': why\""
    assert (
        load_refusal.logged_reason(old, f"{old}\nI1205 other\n{new}")
        == "Poll failed for model directory 'm': why"
    )
    assert load_refusal.logged_reason(old, old) == ""


def test_refused_requests_are_neither_answered_nor_waiting():
    rows = [(0, 0.0, 10), (0, 0.0, 12), (0, 0.0, 60), (0, 0.0, 72), (1, 20.0, 40), (1, 20.0, 41)]
    prio = _sent(rows)
    prio.sent.append(burst.Sent(6, 0, 0.0, 15.0, "[StatusCode.UNAVAILABLE] Request timeout expired"))
    result = scheduling.PriorityResult(prio, prio, 5, 2)
    assert (result.early_done(), result.early_waiting()) == (2, 2)  # the refused one is in neither count


def test_queue_outcome_and_errors():
    b = Burst("q", "", [Sent(0, 0, 0, 5.0), Sent(1, 0, 0, 1.0, "X"), Sent(2, 0, 0, 1.0, "X")])
    assert (b.answered, b.refused, b.errors()) == (1, 2, {"X": 2})
    assert scheduling.QueueResult(b, QueuePolicy()).outcome() == "some"
    b.sent = b.sent[:1]
    assert scheduling.QueueResult(b, QueuePolicy()).outcome() == "all"
    assert Sent(0, 0, 1.0).ok is False  # no answer yet is not an answer


def _bench(c: int, rps: float, mean_ms: float) -> BenchResult:
    r = BenchResult("grpc", "classifier", c, 10, 0, rps, {"p50": mean_ms}, 0, 0, None, None)
    r.latencies_ms = [mean_ms]
    return r


def test_little_outcome_and_rows():
    saturated = scheduling.LittleResult([_bench(2, 40, 50), _bench(4, 41, 98)])
    assert saturated.outcome() == "latency"
    row = saturated.rows()[0]
    assert row["predicted_latency_ms"] == pytest.approx(50.0)
    assert row["little_in_flight"] == pytest.approx(2.0)
    assert scheduling.LittleResult([_bench(1, 20, 50), _bench(2, 39, 51)]).outcome() == "throughput"
    assert scheduling.LittleResult([_bench(2, 20, 100), _bench(4, 28, 140)]).outcome() == "both"


def test_little_outcome_says_unclear_when_the_runs_contradict_every_verdict():
    # two walkthrough runs: throughput almost tripled while latency fell (zh), throughput fell (en)
    tripled = scheduling.LittleResult([_bench(2, 53, 37.7), _bench(4, 155, 25.6)])
    fell = scheduling.LittleResult([_bench(2, 123, 16.2), _bench(4, 99, 40.4)])
    assert tripled.outcome() == "unclear" and fell.outcome() == "unclear"
    # Little's law broken between the runs (λ·W did not double) is no verdict either
    assert scheduling.LittleResult([_bench(2, 40, 50), _bench(4, 50, 52)]).outcome() == "unclear"
    assert scheduling.LittleResult([_bench(2, 40, 50)]).outcome() == "unclear"
    assert scheduling.LittleResult([_bench(2, 40, 50), _bench(4, 41, 98)]).ratios() == pytest.approx(
        (41 / 40, 98 / 50)
    )


def test_triton_text_keeps_tritons_words():
    detail = (
        "load classifier: POST /v2/repository/models/classifier/load: HTTP 400: load failed for model 'x'"
    )
    assert load_refusal.triton_text(detail) == "load failed for model 'x'"
    assert load_refusal.triton_text("something else") == "something else"
    assert load_refusal.triton_text("load classifier: POST /x: HTTP 500: failed to poll") == "failed to poll"
