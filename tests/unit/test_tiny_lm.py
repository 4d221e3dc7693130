"""The course's small language model (triton_kitchen.models.tiny_lm): what it writes comes from its training
text, the KV cache changes nothing, training works (gradients checked numerically), the tokenizer round-trips
any UTF-8 and streams whole characters only, the weights file is small and loads."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from triton_kitchen.models.tiny_lm import corpus, quality, train
from triton_kitchen.models.tiny_lm.network import (
    METADATA_PATH,
    WEIGHTS_PATH,
    Config,
    KVCache,
    TinyLM,
    fit_prompt,
    generate,
    generate_detailed,
    init_params,
    sample,
)
from triton_kitchen.models.tiny_lm.tokenizer import BOS, EOS, VOCAB_SIZE, StreamDecoder, decode, encode


@pytest.fixture(scope="module")
def model() -> TinyLM:
    return TinyLM.load()


@pytest.fixture(scope="module")
def corpus_text() -> str:
    return corpus.build_corpus()


# -- 1. what it writes comes from its training text ----------------------------------------------------------
def test_most_generated_words_and_bigrams_occur_in_the_training_text(model, corpus_text):
    zh = quality.measure(model, corpus_text, quality.PROMPTS_ZH, max_tokens=60)
    en = quality.measure(model, corpus_text, quality.PROMPTS_EN, max_tokens=60)
    assert zh.bigrams >= 20 and en.words >= 20, (zh.continuations, en.continuations)
    assert zh.bigram_rate >= 0.7, zh.continuations
    assert en.word_rate >= 0.7, en.continuations


# -- 2. different prompts, different continuations -------------------------------------------------------------
def test_two_prompts_give_two_continuations(model):
    a = generate(model, encode("模型仓库里的每个模型"), 24)
    b = generate(model, encode("The dynamic batcher "), 24)
    c = generate(model, encode("客户端发送请求时，"), 24)
    assert a != b and a != c and b != c


# -- 3. the KV cache changes nothing ---------------------------------------------------------------------------
@pytest.mark.parametrize("prompt", ["Triton loads ", "动态批处理把"])
@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_generation_with_the_cache_equals_generation_without(model, prompt, temperature):
    ids = encode(prompt)
    with_cache = generate(model, ids, 32, temperature=temperature, seed=3, use_cache=True)
    without = generate(model, ids, 32, temperature=temperature, seed=3, use_cache=False)
    assert len(with_cache) == 32 and with_cache == without


def test_batched_decode_equals_each_sequence_alone(model):
    prompts = [encode("Triton "), encode("模型仓库"), encode("A request that is longer than the others, ")]
    caches = [model.new_cache() for _ in prompts]
    for p, c in zip(prompts, caches, strict=True):
        model.prefill(p, c)
    nxt = [65, 230, 32]
    batched = model.decode(nxt, caches)
    assert batched.shape == (3, VOCAB_SIZE)
    for i, p in enumerate(prompts):
        np.testing.assert_allclose(batched[i], model.logits_without_cache(p + [nxt[i]]), atol=2e-4)
        assert caches[i].length == len(p) + 1
        assert caches[i].nbytes == caches[i].length * 2 * model.cfg.n_layers * model.cfg.d_model * 4


def test_the_cache_grows_refuses_past_the_context_and_frees():
    m = TinyLM.fresh(Config(context_length=40, d_model=16, n_heads=2, d_ff=64))
    c = m.new_cache()
    assert c.nbytes == 0 and c.length == 0
    m.prefill(list(range(39)), c)
    assert c.length == 39 and c.nbytes == 39 * c.bytes_per_token <= c.allocated_nbytes
    m.decode([1], [c])
    with pytest.raises(ValueError, match="context length"):
        m.decode([1], [c])
    c.free()
    assert c.nbytes == 0 and c.allocated_nbytes == 0


def test_a_long_prompt_keeps_its_newest_tokens_and_says_how_many_were_dropped():
    assert fit_prompt(list(range(10)), 256, 16) == (list(range(10)), 0)
    kept, dropped = fit_prompt(list(range(300)), 256, 16)
    assert kept == list(range(60, 300)) and dropped == 60  # room for 16 output tokens
    kept, dropped = fit_prompt(list(range(300)), 256, 10_000)
    assert len(kept) == 128 and dropped == 172 and kept[-1] == 299  # never less than half the context
    assert fit_prompt(list(range(300)), 256, 0)[0] == list(range(45, 300))  # one output token's room


def test_generation_stops_at_the_context_length_and_on_stop_sequences():
    m = TinyLM.fresh(Config(context_length=32, d_model=16, n_heads=2, d_ff=64), seed=1)
    g = generate_detailed(m, list(range(20)), 100, stop_at_eos=False)
    assert g.finish_reason == "length" and g.prompt_tokens + len(g.ids) == 32
    g = generate_detailed(m, list(range(100)), 100, stop_at_eos=False)
    assert g.dropped == 84 and g.prompt_tokens == 16
    assert generate_detailed(m, [1, 2], 0).ids == [] and generate_detailed(m, [], 3).prompt_tokens == 1
    first = generate_detailed(m, [1, 2], 6, stop_at_eos=False).ids
    cut = generate_detailed(m, [1, 2], 6, stop=[first[2:4]], stop_at_eos=False)
    assert cut.finish_reason == "stop" and cut.ids == first[:2]


def test_sample_is_argmax_at_temperature_zero_and_seeded_otherwise():
    logits = np.array([0.1, 3.0, 2.9, -1.0], np.float32)
    assert sample(logits, 0.0, None) == 1
    draws = [sample(logits, 1.0, np.random.default_rng(s)) for s in range(50)]
    assert draws == [sample(logits, 1.0, np.random.default_rng(s)) for s in range(50)] and len(set(draws)) > 1


# -- 4. training: the gradients are right and the loss goes down ------------------------------------------------
def test_backprop_matches_numerical_gradients():
    cfg = Config(context_length=8, d_model=8, n_layers=2, n_heads=2, d_ff=16)
    rng = np.random.default_rng(1)
    params = {k: w + rng.normal(0, 0.3, w.shape) for k, w in init_params(cfg, 0, np.float64).items()}
    x, y = rng.integers(0, VOCAB_SIZE, (3, 7)), rng.integers(0, VOCAB_SIZE, (3, 7))
    loss, grads = train.loss_and_grads(params, cfg, x, y)
    # the training forward is the network's forward
    logits = np.stack([TinyLM(cfg, params).all_logits(row) for row in x]).astype(np.float64)
    logp = logits - logits.max(-1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(-1, keepdims=True))
    assert loss == pytest.approx(-np.take_along_axis(logp, y[..., None], -1).mean(), rel=1e-5)
    eps, worst = 1e-5, 0.0
    for name, w in params.items():
        flat = w.reshape(-1)
        for i in rng.choice(flat.size, min(4, flat.size), replace=False):
            old = flat[i]
            flat[i] = old + eps
            up = train.loss_and_grads(params, cfg, x, y, need_grads=False)[0]
            flat[i] = old - eps
            down = train.loss_and_grads(params, cfg, x, y, need_grads=False)[0]
            flat[i] = old
            num, ana = (up - down) / (2 * eps), grads[name].reshape(-1)[i]
            worst = max(worst, abs(num - ana) / max(1e-7, abs(num) + abs(ana)))
    assert worst < 1e-5


def test_the_training_script_runs_a_few_steps_and_the_loss_goes_down(tmp_path):
    args = [
        "--steps",
        "40",
        "--d-model",
        "16",
        "--heads",
        "2",
        "--context",
        "32",
        "--batch",
        "8",
        "--lr",
        "1e-2",
    ]
    out = tmp_path / "w.npz"
    assert train.main([*args, "--out", str(out), "--quiet"]) == 0
    record = json.loads(out.with_suffix(".json").read_text("utf-8"))
    assert record["eval_loss"] < record["first_loss"] - 0.8
    assert record["corpus_sha256"] == corpus.corpus_sha256() and record["steps"] == 40
    assert TinyLM.load(out).n_params == record["params"]


def test_training_is_deterministic_for_a_seed():
    cfg = Config(context_length=16, d_model=8, n_layers=1, n_heads=2, d_ff=32)
    data = np.asarray(encode("动态批处理把请求拼成一批。The batcher waits. " * 20), dtype=np.uint16)
    a, _ = train.train(cfg, 5, seed=7, batch=4, data=data, log=None)
    b, _ = train.train(cfg, 5, seed=7, batch=4, data=data, log=None)
    c, _ = train.train(cfg, 5, seed=8, batch=4, data=data, log=None)
    assert all(np.array_equal(a[k], b[k]) for k in a) and not np.array_equal(a["tok_emb"], c["tok_emb"])


# -- 5. the tokenizer ------------------------------------------------------------------------------------------
@given(st.text())
@settings(max_examples=200, deadline=None)
def test_the_tokenizer_round_trips_any_text(text):
    ids = encode(text, bos=True, eos=True)
    assert ids[0] == BOS and ids[-1] == EOS and all(0 <= i < 256 for i in ids[1:-1])
    assert decode(ids) == text


@given(st.text())
@settings(max_examples=200, deadline=None)
def test_the_stream_decoder_never_shows_half_a_character(text):
    dec = StreamDecoder()
    pieces = [dec.push(t) for t in encode(text)]
    pieces.append(dec.flush())
    assert "".join(pieces) == text
    if "\ufffd" not in text:
        assert not any("\ufffd" in p for p in pieces)  # no piece ends in a broken character


@given(st.binary())
@settings(max_examples=200, deadline=None)
def test_invalid_bytes_are_replaced_never_raised(data):
    dec = StreamDecoder()
    streamed = "".join(dec.push(b) for b in data) + dec.flush()
    assert streamed == decode(list(data)) == data.decode("utf-8", errors="replace")


def test_a_chinese_character_arrives_whole():
    dec = StreamDecoder()
    assert [dec.push(b) for b in "模型".encode()] == ["", "", "模", "", "", "型"]
    assert dec.push(EOS) == "" and dec.push(0xE6) == "" and dec.flush() == "\ufffd"


# -- 6. the weights file -----------------------------------------------------------------------------------------
def test_the_weights_file_is_small_loads_and_says_where_it_came_from(model):
    assert WEIGHTS_PATH.stat().st_size <= 10 * 1024 * 1024
    meta = json.loads(METADATA_PATH.read_text("utf-8"))
    assert meta["architecture"]["d_model"] == model.cfg.d_model and meta["params"] == model.n_params
    assert meta["steps"] > 0 and meta["final_loss"] < 2.0 and len(meta["corpus_sha256"]) == 64
    assert model.context_length == meta["architecture"]["context_length"]
    assert isinstance(model.new_cache(), KVCache)
