"""The course's small language model, measured: how much of what it writes comes from its training text, and
how fast it decodes on one thread.

    python benchmarks/tiny_lm_quality.py [--tokens 64] [--steps 200] [--json]

Prints the weights' size and record (weights.json), the share of English words and of Chinese character
bigrams in its temperature-0 continuations of fixed prompts that occur in the training text (continuation
only), sample continuations, and decode speed at batch 1 and 8 (ms per step, tokens/s; BLAS limited to one
thread here, as each Triton execution of the model gets).
"""

from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"  # before numpy loads BLAS
os.environ["OPENBLAS_NUM_THREADS"] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from triton_kitchen.models.tiny_lm import corpus, quality  # noqa: E402
from triton_kitchen.models.tiny_lm.network import METADATA_PATH, WEIGHTS_PATH, TinyLM  # noqa: E402
from triton_kitchen.models.tiny_lm.tokenizer import encode  # noqa: E402


def decode_speed(model: TinyLM, batch: int, steps: int, seed: int = 0) -> dict:
    """Prefill ``batch`` prompts of 8-64 tokens from the corpus, then time ``steps`` batched decode steps."""
    rng = np.random.default_rng(seed)
    data = corpus.corpus_tokens()
    caches = [model.new_cache() for _ in range(batch)]
    for c in caches:
        n = int(rng.integers(8, 65))
        start = int(rng.integers(0, data.size - n))
        model.prefill(data[start : start + n].tolist(), c)
    steps = min(steps, min(c.room for c in caches))
    tokens = [32] * batch
    for _ in range(3):  # warm-up (not counted): the caches' first blocks
        model.decode(tokens, caches)
    times = []
    for _ in range(steps - 3):
        t0 = time.perf_counter()
        logits = model.decode(tokens, caches)
        times.append(time.perf_counter() - t0)
        tokens = logits.argmax(-1).tolist()
    ms = 1000 * float(np.median(times))
    return {
        "batch": batch,
        "steps": len(times),
        "ms_per_step_p50": round(ms, 3),
        "tokens_per_s": round(batch * len(times) / sum(times), 1),
    }


def prefill_ms(model: TinyLM, n: int, repeats: int = 20) -> float:
    ids = encode("x" * n)
    times = []
    for _ in range(repeats):
        c = model.new_cache()
        t0 = time.perf_counter()
        model.prefill(ids, c)
        times.append(time.perf_counter() - t0)
    return round(1000 * float(np.median(times)), 3)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=64, help="tokens generated per prompt")
    ap.add_argument("--steps", type=int, default=200, help="decode steps timed per batch size")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    model = TinyLM.load()
    meta = json.loads(METADATA_PATH.read_text("utf-8")) if METADATA_PATH.is_file() else {}
    text = corpus.build_corpus()
    zh = quality.measure(model, text, quality.PROMPTS_ZH, args.tokens)
    en = quality.measure(model, text, quality.PROMPTS_EN, args.tokens)
    result = {
        "weights_bytes": WEIGHTS_PATH.stat().st_size,
        "params": model.n_params,
        "architecture": meta.get("architecture"),
        "train": {k: meta.get(k) for k in ("command", "steps", "train_seconds", "final_loss", "eval_loss")},
        "corpus": {k: meta.get(k) for k in ("corpus_bytes", "corpus_sha256")},
        "corpus_sha256_now": corpus.corpus_sha256(),
        "english_words": {"generated": en.words, "in_training_text": en.words_found, "rate": en.word_rate},
        "chinese_bigrams": {"generated": zh.bigrams, "in_training_text": zh.bigrams_found, "rate": zh.bigram_rate},
        "continuations": {**zh.continuations, **en.continuations},
        "decode": [decode_speed(model, b, args.steps) for b in (1, 8)],
        "prefill_ms": {n: prefill_ms(model, n) for n in (8, 64, 200)},
    }  # fmt: skip
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=1))
        return 0
    print(f"weights {result['weights_bytes'] / 1e6:.2f} MB, {result['params']:,} parameters")
    print(f"trained: {result['train']}")
    same = result["corpus_sha256_now"] == result["corpus"]["corpus_sha256"]
    print(
        f"corpus: {result['corpus']['corpus_bytes']} bytes; the lessons {'are' if same else 'are NOT'} as trained"
    )
    print(f"English words in the training text:   {en.words_found}/{en.words} = {en.word_rate:.1%}")
    print(f"Chinese bigrams in the training text: {zh.bigrams_found}/{zh.bigrams} = {zh.bigram_rate:.1%}")
    for prompt, cont in result["continuations"].items():
        print(f"  {prompt!r} -> {cont!r}")
    for d in result["decode"]:
        print(
            f"decode batch {d['batch']}: {d['ms_per_step_p50']} ms/step (p50), {d['tokens_per_s']} tokens/s"
        )
    print("prefill ms (p50) by prompt tokens:", result["prefill_ms"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
