"""Chapter 11 without a server: the timeline's frames are the recorded steps of a real run (tests/_shared/
generation_run.json, recorded on the embedded server by tests/_shared/generation.py), the KV chart is the records'
bytes, the outcomes follow the measurement, and the lesson's KV-cache figure is the course model's own."""

from __future__ import annotations

import json
import re

import pytest
from _shared.generation import NAMES, RECORDED, check_frames

from triton_kitchen.core import lessons
from triton_kitchen.labs import generation as lab
from triton_kitchen.models.tiny_lm.network import TinyLM


@pytest.fixture(scope="module")
def recorded() -> lab.Comparison:
    return lab.comparison_from_dict(json.loads(RECORDED.read_text(encoding="utf-8")))


def test_every_frame_is_a_recorded_step(recorded):
    assert [r.scheduler for r in recorded.runs] == ["request_level", "in_flight"]
    for run in recorded.runs:
        assert not run.errors()
        assert check_frames(run) == len(run.steps) > 1


def test_the_timeline_shows_joins_leaves_and_idle_places(recorded):
    by = {r.scheduler: r for r in recorded.runs}
    for run in recorded.runs:
        lanes = run.lanes()
        assert len(lanes) == len(recorded.jobs)  # one lane per sequence
        assert sum(len(lane.token_steps) for lane in lanes) == run.load.tokens  # a tick per token received
        last = {t.name: t for t in lab.timeline_figure(run, NAMES).data}
        assert len(last["join"].x) == len(last["leave"].x) == len(lanes)
    # request-level batching keeps finished sequences' places until the batch ends; in-flight frees them at once
    assert any(lane.idle_steps for lane in by["request_level"].lanes())
    assert not any(lane.idle_steps for lane in by["in_flight"].lanes())


def test_triton_counted_one_execution_per_in_flight_step(recorded):
    by = {r.scheduler: r for r in recorded.runs}
    assert by["in_flight"].executions == len(by["in_flight"].steps)
    assert 0 < by["request_level"].executions < len(by["request_level"].steps)  # a batch runs many steps


def test_kv_chart_is_the_recorded_bytes(recorded):
    fig = lab.kv_figure(recorded, NAMES)
    for trace, run in zip(fig.data, recorded.runs, strict=True):
        assert len(trace.y) == len(run.steps)
        assert [round(y * 1024) for y in trace.y] == [
            sum(b["kv_bytes"] for b in s["batch"]) for s in run.steps
        ]


def test_server_and_client_figures_come_from_the_run(recorded):
    for run in recorded.runs:
        client, server = run.client(), run.server()
        assert client["tokens"] == sum(j.max_tokens for j in recorded.jobs)  # EOS ignored: every length drawn
        assert server["steps"] == len(run.steps)
        assert server["ttft_ms"]["p50"] <= client["ttft_ms"]["p50"]  # ready on the server before it arrives
    ratio = recorded.ratio()
    expected = "same" if 1 / 1.15 < ratio < 1.15 else ("in_flight" if ratio >= 1.15 else "request_level")
    assert recorded.outcome() == expected


def test_jobs_are_drawn_once_and_the_same_for_both():
    a, b = lab.draw_jobs(8, 2026, "zh"), lab.draw_jobs(8, 2026, "zh")
    assert a == b and a != lab.draw_jobs(8, 2027, "zh")
    for job in a:
        assert 1 <= len(job.prompt.encode()) <= lab.PROMPT_BYTES[1]
        assert job.max_tokens in lab.OUTPUT_LENGTHS and job.parameters == {"ignore_eos": True}


# What the embedded 2.51 server sent back (measured with labs.generation.endpoint_rules on the streamer).
TWO_TOKENS = (
    '{"error":"generate expects model to produce exactly 1 response, use generate stream for model that '
    'generates various number of responses"}'
)


@pytest.mark.parametrize(
    ("status", "text", "outcome"),
    [
        (200, TWO_TOKENS, "error_200"),
        (200, '{"index":0,"model_name":"streamer","model_version":"1","token":"hello"}', "json_ok"),
        (
            501,
            '{"error":"HTTP end point doesn\'t support models with decoupled transaction policy"}',
            "refused_501",
        ),
        (
            400,
            "{\"error\":\"parameter 'stop' has invalid type. It should be either 'int', 'bool', or 'string'.\"}",
            "refused_400",
        ),
    ],
)
def test_endpoint_outcome(status, text, outcome):
    call = lab.EndpointCall("generate_two", "/v2/models/streamer/generate", {}, status, text)
    rules = lab.EndpointRules("streamer", (call,))
    assert rules.outcome() == outcome
    assert (call.error is not None) == text.startswith('{"error"')
    assert json.loads(call.readable) == json.loads(text) and '","' not in call.readable  # wraps in a table


def test_lesson_states_the_course_models_kv_bytes_per_token():
    """The lesson's 2 x 2 x 4 x 32 x 4 = 2048 is the course model's own (its weights' config), in both languages."""
    model = TinyLM.load()
    cfg = model.cfg
    per_token = model.new_cache().bytes_per_token
    assert per_token == 2 * cfg.n_layers * cfg.n_heads * cfg.head_dim * 4
    for lang in lessons.LANGS:
        body = lessons.load_lesson(11, lang).body
        line = f"2 × {cfg.n_layers} × {cfg.n_heads} × {cfg.head_dim} × 4 = {per_token}"
        assert line in body, (lang, line)
        assert f"{cfg.context_length * per_token // 1024} KiB" in body
        assert re.search(rf"\b{cfg.context_length}\b", body)


def test_the_two_models_differ_only_in_their_scheduling():
    """What the page shows of each config (scheduling_lines) is all that differs, apart from the name."""
    from triton_kitchen.core.server import DEFAULT_REPOSITORY

    def rest(model):
        text = (DEFAULT_REPOSITORY / model / "config.pbtxt").read_text(encoding="utf-8")
        kept = [line for line in text.splitlines() if not line.lstrip().startswith("#") and line.strip()]
        shown = set(lab.scheduling_lines(model).splitlines())
        return [line for line in kept if line not in shown and not line.startswith("name:")]

    (_, a), (_, b) = lab.SCHEDULERS
    assert rest(a) == rest(b)
    assert "dynamic_batching" in lab.scheduling_lines(
        a
    ) and "iterative_sequence: true" in lab.scheduling_lines(b)
