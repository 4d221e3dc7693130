"""Pure helpers of the tiny LM's serving code and of the generation client (no server)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from triton_kitchen.models.tiny_lm.network import Config, TinyLM, generate_detailed
from triton_kitchen.models.tiny_lm.serving import (
    BadInput,
    Sequence,
    find_stop,
    held_back,
    read_ask,
    response_json,
    response_record,
    step_record,
)
from triton_kitchen.tools import generation

CTX = 64


def getter(**inputs):
    return lambda name: None if inputs.get(name) is None else np.asarray(inputs[name])


def test_read_ask_defaults_and_clamps():
    ask = read_ask(getter(text_input=[[b"hello"]]), CTX)
    assert (ask.prompt, ask.max_tokens, ask.temperature, ask.stream, ask.notes) == (
        "hello",
        32,
        0.0,
        True,
        [],
    )
    huge = read_ask(getter(text_input=[[b"x"]], max_tokens=[[10**6]], temperature=[[-1.0]]), CTX)
    assert huge.max_tokens == CTX - 1 and huge.temperature == 0.0
    assert any("clamped to 63" in n for n in huge.notes) and any("temperature" in n for n in huge.notes)
    neg = read_ask(getter(text_input=[[b"x"]], max_tokens=[[-3]]), CTX)
    assert neg.max_tokens == 0 and "below 0" in neg.notes[0]
    zh = read_ask(
        getter(text_input=[["你好".encode()]], stop_words=[[b"\xe3\x80\x82", b""]], stream=[[False]]), CTX
    )
    assert zh.prompt == "你好" and zh.stop_words == ["。"] and zh.stream is False


def test_read_ask_refuses_an_empty_prompt_and_reads_parameters():
    with pytest.raises(BadInput, match="empty"):
        read_ask(getter(text_input=[[b""]]), CTX)
    with pytest.raises(BadInput):
        read_ask(getter(), CTX)
    ask = read_ask(getter(text_input=[[b"a"]]), CTX, {"seed": 7, "ignore_eos": True})
    assert ask.seed == 7 and ask.ignore_eos
    bad = read_ask(getter(text_input=[[b"a"]]), CTX, {"seed": "x", "ignore_eos": 1}, default_seed=3)
    assert bad.seed == 3 and not bad.ignore_eos and len(bad.notes) == 2


def test_stop_words_are_held_back_until_decided():
    assert held_back("the EN", ["END", "e"]) == 2
    assert held_back("abc", ["xyz"]) == 0
    assert held_back("ab 。", ["。。"]) == 1
    assert find_stop("one. two.", [".", "two"]) == 3
    assert find_stop("abc", ["d"]) == -1


def _run_sequence(model, prompt_ids, max_tokens, stop=()):
    """Drive a serving Sequence with prefill/decode as the server does; its tokens and finish reason."""
    from triton_kitchen.models.tiny_lm import tokenizer
    from triton_kitchen.models.tiny_lm.serving import Ask

    ask = Ask(tokenizer.decode(prompt_ids), max_tokens, 0.0, list(stop), True, 0)
    seq = Sequence(1, "r", ask, model, 1)
    seq.take(model.prefill(seq.prompt, seq.cache), model.context_length)
    while not seq.finish:
        seq.take(model.decode([seq.tokens[-1]], [seq.cache])[0], model.context_length)
    return seq


def test_serving_generates_what_generate_detailed_generates():
    model = TinyLM.fresh(Config(context_length=CTX, d_model=32, n_layers=1, n_heads=2, d_ff=64), seed=1)
    prompt = list("Triton 推理".encode())
    for max_tokens in (1, 5, 40, CTX - 1):
        want = generate_detailed(model, prompt, max_tokens)
        seq = _run_sequence(model, prompt, max_tokens)
        assert seq.tokens == want.ids and seq.finish == want.finish_reason
        assert len(seq.prompt) + len(seq.tokens) <= CTX
    long_prompt = list(b"abcdefgh" * 25)
    seq = _run_sequence(model, long_prompt, 10)
    assert seq.dropped == len(long_prompt) - len(seq.prompt) > 0


def test_records_name_every_sequence_and_the_request():
    model = TinyLM.fresh(Config(context_length=CTX, d_model=32, n_layers=1, n_heads=2, d_ff=64), seed=1)
    from triton_kitchen.models.tiny_lm.serving import Ask

    a = Sequence(1, "a", Ask("hi", 4, 0.0, [], True, 0), model, 1)
    b = Sequence(2, "b", Ask("yo", 4, 0.0, [], True, 0), model, 1)
    a.take(model.prefill(a.prompt, a.cache), CTX)
    rec = step_record("in_flight", 3, 3, (10, 1), (20, 2), [a], [b], {1: a.tokens}, {1: "prefill"}, [])
    assert [x["request_id"] for x in rec["batch"]] == ["a", "b"]
    assert rec["batch"][0]["kv_bytes"] == a.cache.nbytes > 0 and rec["batch"][1]["phase"] == "idle"
    out = response_record(a, rec, final=True, max_sequences=8)
    assert out["finish_reason"] == "length" and out["steps"] == [rec] and out["completion_tokens"] == 1
    assert json.loads(response_json(a, json.dumps(rec), True, 8)) == out


def test_generate_body_inputs_and_parameters():
    job = generation.Job("hi", 4, 0.5, ["。"], {"seed": 3})
    body = generation.generate_body(job, stream=False)
    assert body == {
        "text_input": "hi",
        "max_tokens": 4,
        "temperature": 0.5,
        "stop_words": ["。"],
        "stream": False,
        "seed": 3,
    }
    with pytest.raises(ValueError):
        generation.generate_body(generation.Job("hi", 4, parameters={"max_tokens": 1}))


def _step(n, start_ms, end_ms, running, idle=0):
    batch = [{"phase": "decode", "tokens": [1]} for _ in range(running)] + [
        {"phase": "idle", "tokens": []} for _ in range(idle)
    ]
    return {
        "scheduler": "x",
        "step": n,
        "mono_start_ns": int(start_ms * 1e6),
        "mono_end_ns": int(end_ms * 1e6),
        "batch": batch,
    }


def test_occupancy_predicts_tokens_per_second_from_the_steps():
    steps = [_step(1, 0, 1, 4, 4), _step(2, 2, 3, 2, 6), _step(3, 4, 6, 2, 6)]
    occ = generation.occupancy(steps)
    assert occ["steps"] == 3 and occ["running_per_step"] == pytest.approx(8 / 3)
    assert occ["places_per_step"] == 8 and occ["time_per_step_ms"] == pytest.approx(2.0)
    assert occ["predicted_tokens_per_s"] == pytest.approx(8 / 0.006)
    assert occ["compute_ms"] == pytest.approx(4 / 3) and occ["outside_ms"] == pytest.approx(2 / 3)


def test_a_run_counts_only_responses_that_carried_a_token():
    run = generation.GenerationRun("http")
    for index, text in ((1, "a"), (2, ""), (2, "b")):
        generation._take(run, text, {"index": index, "request_id": "r", "steps": []}, 0.0)
    assert run.tokens == 2 and run.text == "ab" and run.request_id == "r" and len(run.itl_ms) == 1
    result = generation.LoadResult([run], 2.0, 1)
    s = generation.summarize(result)
    assert s["tokens_per_s"] == 1.0 and s["ttft_ms"]["p50"] is not None and s["itl_ms"]["p99"] is not None


def test_bench_streaming_flags_are_checked_before_any_server_starts(capsys):
    from triton_kitchen.__main__ import main

    assert main(["bench", "--model", "m"]) == 2
    assert "--protocol is required" in capsys.readouterr().err
    assert main(["bench", "--model", "m", "--streaming", "--protocol", "http-shm"]) == 2
    assert main(["bench", "--model", "m", "--streaming", "--requests", "0"]) == 2
    assert main(["bench", "--model", "m", "--streaming", "--concurrency", "0"]) == 2
