"""The tiny language model on the real server under both schedulers: streams over SSE and gRPC, Triton's refusal
on /generate, one execution per step under in-flight batching, bad input, cancelled and disconnected clients,
and the CLI's streaming bench.

The tests of this topic that need no server: tests/unit/test_generation.py."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest
from conftest import settled

from triton_kitchen.core import kserve
from triton_kitchen.core.catalog import TINY_LM, TINY_LM_IFB
from triton_kitchen.tools import generation as G

MODELS = (TINY_LM, TINY_LM_IFB)
REFUSAL = (
    "generate expects model to produce exactly 1 response, use generate stream for model that generates "
    "various number of responses"
)


def job(prompt="Triton 推理服务", max_tokens=6, **params):
    return G.Job(prompt, max_tokens, parameters={"ignore_eos": True, **params})


@pytest.mark.parametrize("model", MODELS)
def test_both_models_stream_token_by_token_over_sse_and_grpc(server, model):
    sse = G.stream_http(server.endpoint, model, job())
    rpc = G.stream_grpc(server.endpoint, model, job())
    for run in (sse, rpc):
        assert run.error is None and run.tokens == 6 and run.finish_reason == "length"
        assert run.ttft_ms is not None and len(run.itl_ms) == 5
        steps = run.steps()
        assert [s["batch"][0]["phase"] for s in steps][:2] == ["prefill", "decode"]
        assert all(s["start_ns"] <= s["end_ns"] and s["mono_start_ns"] <= s["mono_end_ns"] for s in steps)
        assert run.records[-1]["completion_tokens"] == 6 and run.records[-1]["steps"][0]["ended"]
    assert sse.text == rpc.text  # temperature 0: the same tokens whichever way they travel


@pytest.mark.parametrize("model", MODELS)
def test_generate_refuses_a_stream_in_tritons_words_and_serves_one_response(server, model):
    status, body = G.generate_once(server.endpoint, model, job())
    assert body == {"error": REFUSAL}, (status, body)
    status, body = G.generate_once(server.endpoint, model, job(), stream=False)
    streamed = G.stream_http(server.endpoint, model, job())
    assert status == 200 and body["text_output"] == streamed.text
    assert json.loads(body["iteration"])["completion_tokens"] == 6


def _stats(server, model):
    s = kserve.statistics(server.endpoint, model)["model_stats"][0]
    return int(s["execution_count"]), int(s["inference_count"])


def test_in_flight_batching_is_one_triton_execution_per_step(server):
    before = _stats(server, TINY_LM_IFB)
    run = G.stream_grpc(server.endpoint, TINY_LM_IFB, job(max_tokens=9))
    assert run.tokens == 9
    steps = {s["step"] for s in run.steps()}
    assert len(steps) == 9  # the prefill step makes the first token, each later step one more
    after = settled(lambda: _stats(server, TINY_LM_IFB), lambda v: v[0] - before[0] >= 9)
    assert (after[0] - before[0], after[1] - before[1]) == (9, 9)


@pytest.mark.parametrize("model", MODELS)
def test_bad_input_gets_a_message_or_a_clamp_the_record_states(server, model):
    empty = G.stream_http(server.endpoint, model, G.Job("", 4))
    assert empty.error and "prompt is empty" in empty.error
    zero = G.stream_grpc(server.endpoint, model, G.Job("hi", 0))
    assert zero.error is None and zero.tokens == 0 and zero.records[-1]["finish_reason"] == "length"
    huge = G.stream_http(server.endpoint, model, job(max_tokens=1_000_000, prompt="x"))
    record = huge.records[-1]
    limit = record["context_length"] - 1
    assert record["max_tokens"] == limit and f"clamped to {limit}" in record["notes"][0]
    n = record["context_length"]  # "长" is 3 byte tokens: the prompt is 3 contexts long
    long = G.stream_http(server.endpoint, model, job(prompt="长" * n, max_tokens=4))
    first = long.records[0]
    assert first["dropped_prompt_tokens"] == 3 * n - first["prompt_tokens"] > 0 and long.tokens == 4


@pytest.mark.parametrize("model, cancel", [(TINY_LM, G.stream_http), (TINY_LM_IFB, G.stream_grpc)])
def test_a_cancelled_stream_ends_and_frees_its_kv_cache(server, model, cancel):
    """A client that disconnects (HTTP) or cancels (gRPC) after 3 tokens: the record of the step that ended it
    (its KV cache freed) reaches the generation running beside it, or the next one when it ran alone."""
    other: dict = {}

    def run_other():
        other["run"] = G.stream_grpc(server.endpoint, model, job("ok", 200))

    t = threading.Thread(target=run_other)
    t.start()
    gone = cancel(server.endpoint, model, job("bye", 200), cancel_after_tokens=3, request_id="leaver")
    t.join(60)
    assert gone.cancelled and gone.tokens == 3

    def leaver(runs):
        return [e for r in runs for s in r.steps() for e in s["ended"] if e["request_id"] == "leaver"]

    ended = leaver([other["run"]]) or leaver(
        [settled(lambda: G.stream_grpc(server.endpoint, model, job("next", 8)), lambda r: leaver([r]), 10)]
    )
    assert len(ended) == 1 and ended[0]["reason"] in ("cancelled", "gone") and ended[0]["kv_bytes_freed"] > 0
    assert other["run"].tokens == 200


@pytest.mark.parametrize("protocol", [None, "grpc"])
def test_cli_bench_streaming_json(server, protocol):
    url = server.grpc_url if protocol else server.http_url
    cmd = [
        sys.executable,
        "-m",
        "triton_kitchen",
        "bench",
        "--model",
        TINY_LM_IFB,
        "--streaming",
        "--url",
        url,
    ]
    cmd += ["--json", "--requests", "4", "--concurrency", "2", "--max-tokens", "5"]
    cmd += ["--protocol", protocol] if protocol else []
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["api"] == ("ModelStreamInfer" if protocol else "generate_stream")
    assert set(data["itl_ms"]) == {"p50", "p99"} and data["ttft_ms"]["p50"] > 0 and data["tokens_per_s"] > 0
