"""drill_repository/ (the models only drills' own servers load) passes `check`, and the giving-up drill refuses a
deadline it cannot use before anything is sent."""

from __future__ import annotations

import subprocess
import sys

import pytest

from triton_kitchen.core.catalog import BROKEN_DRILL, DRILL_REPOSITORY, SLOW_DRILL
from triton_kitchen.labs import giving_up, health


def test_every_drill_model_passes_check():
    assert sorted(p.name for p in DRILL_REPOSITORY.iterdir() if p.is_dir()) == sorted(
        [BROKEN_DRILL, SLOW_DRILL]
    )
    done = subprocess.run(
        [sys.executable, "-m", "triton_kitchen", "check", str(DRILL_REPOSITORY)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_slow_drill_keeps_waiting_requests_in_the_scheduler_queue():
    """A queue policy turns Triton's prefetching off, so a cancelled waiting request is dropped, not run."""
    text = (DRILL_REPOSITORY / SLOW_DRILL / "config.pbtxt").read_text()
    assert "default_queue_policy { max_queue_size: 8 }" in text
    assert "count: 1" in text


@pytest.mark.parametrize("bad", [0, -1, 0.01, 60, "soon", None])
def test_a_deadline_it_cannot_use_is_refused(bad):
    with pytest.raises(giving_up.GivingUpError) as err:
        giving_up.check_deadline(bad)
    assert err.value.code == "bad_deadline"


def test_unknown_scenario_and_setting_are_refused_before_a_server_starts():
    with pytest.raises(giving_up.GivingUpError) as err:
        giving_up.give_up("nope")
    assert err.value.code == "bad_settings"
    with pytest.raises(health.HealthDrillError) as err2:
        health.start_with_a_broken_model("nope")
    assert err2.value.code == "bad_settings"


def test_verdicts_come_from_the_counts():
    r = giving_up.GiveUpResult("grpc_cancel_queued", 0.2, executions=1, compute_ms=801, busy_slept_ms=800)
    assert r.outcome() == "never_ran"
    r = giving_up.GiveUpResult(
        "request_timeout_queued", 0.2, executions=2, compute_ms=1601, busy_slept_ms=800
    )
    assert r.outcome() == "ran_to_end"
    r = giving_up.GiveUpResult("grpc_cancel_executing_poll", 0.2, executions=1, compute_ms=210)
    assert r.outcome() == "stopped_early"
    r = giving_up.GiveUpResult("grpc_cancel_executing", 0.2, executions=1, compute_ms=800)
    assert r.outcome() == "ran_to_end"
    assert giving_up.GiveUpResult("grpc_cancel_queued", 0.2, executions=4).outcome() is None  # someone else's
    drill = health.StubDrill(
        before=health.Health(200, 200, 200),
        after=health.Health(200, 200, 200),
        after_calls=health.Health(200, 200, 200),
    )
    assert drill.outcome() == "all_200"
    drill.after_calls = health.Health(200, 400, 400)
    assert drill.outcome() == "ready_400"


def test_a_busy_answer_this_late_means_the_victim_went_first():
    """On a loaded machine the busy request A can reach the server after the victim B (B then runs at once and
    never waits in the queue: a 'ran to end' the scenario did not make). A's late answer shows it, and give_up
    measures the scenario once more on the same server (tests/live: the drill against the real server)."""
    assert not giving_up._victim_went_first(
        giving_up.GiveUpResult("grpc_cancel_queued", 0.2, busy_end_s=0.85)
    )
    assert giving_up._victim_went_first(giving_up.GiveUpResult("grpc_cancel_queued", 0.2, busy_end_s=1.65))
    assert not giving_up._victim_went_first(giving_up.GiveUpResult("grpc_cancel_queued", 0.2))  # no answer
