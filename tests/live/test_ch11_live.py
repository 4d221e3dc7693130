"""Chapter 11 on the real server: both schedulers on the same load, every animation frame one of the steps the
server recorded; the generate extension's rules on the decoupled streamer, in Triton's words."""

from __future__ import annotations

from _shared.generation import check_frames

from triton_kitchen.labs import generation as lab


def test_both_schedulers_on_one_load_every_frame_a_recorded_step(server):
    comparison = lab.compare_schedulers(server.endpoint, clients=3, jobs_per_client=2, lang="zh")
    assert [r.scheduler for r in comparison.runs] == ["request_level", "in_flight"]
    for run in comparison.runs:
        assert not run.errors(), run.errors()[:2]
        assert run.load.tokens == sum(j.max_tokens for j in comparison.jobs)
        assert check_frames(run) == len(run.steps)
        assert run.server()["steps"] == len(run.steps)
    assert comparison.outcome() in lab.SCHEDULER_OUTCOMES
    # in-flight: one step is one execution, and no finished sequence keeps its place
    in_flight = comparison.run("in_flight")
    assert not any(lane.idle_steps for lane in in_flight.lanes())
    assert len({s["execution"] for s in in_flight.steps}) == len(in_flight.steps)
    # ... counted by Triton itself: one execution per recorded step; request-level: one per batch, many steps each
    # Triton may count more: the step records travel in the responses, so an execute that sent none records no
    # step (one run here counted 73 executions for 72 recorded steps; which execute it was is not known yet)
    assert len(in_flight.steps) <= in_flight.executions <= len(in_flight.steps) + 2
    request_level = comparison.run("request_level")
    assert 0 < request_level.executions < len(request_level.steps)


def test_generate_extension_rules_in_tritons_words(server):
    rules = lab.endpoint_rules(server.endpoint)
    assert rules.outcome() == "error_200"
    two, one = rules.call("generate_two"), rules.call("generate_one")
    assert two.status == 200 and two.error.startswith("generate expects model to produce exactly 1 response")
    assert one.status == 200 and one.error is None and '"token":"hello"' in one.text
    listed = rules.call("stream_list")
    assert listed.status == 400 and "parameter 'stop' has invalid type" in listed.error
    assert rules.call("stream_ok").status == 200 and rules.call("stream_ok").events == 2
    infer = rules.call("infer")
    assert infer.status == 501 and "decoupled transaction policy" in infer.error
