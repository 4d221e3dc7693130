"""How much of what the language model writes comes from its training text: the figures the tests check and
``benchmarks/tiny_lm_quality.py`` prints.

For a continuation (the generated text only, never the prompt): its English words (runs of ASCII letters,
lower-cased; a last word cut off by the token limit is left out) found among the training text's words, and
its Chinese character bigrams (two adjacent CJK characters) found as substrings of the training text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from triton_kitchen.models.tiny_lm.network import TinyLM, generate
from triton_kitchen.models.tiny_lm.tokenizer import decode, encode

# Fixed prompts, zh first; each ends where a new word may start.
PROMPTS_ZH = ("Triton 的动态批处理", "模型仓库里的每个模型", "客户端发送请求时，", "gRPC 和 HTTP 的区别在于")
PROMPTS_EN = (
    "The dynamic batcher ",
    "A model repository ",
    "When the client sends a request, ",
    "Triton loads ",
)

_WORD = re.compile(r"[A-Za-z]+")
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+")


def english_words(text: str) -> list[str]:
    words = _WORD.findall(text)
    if words and text and text[-1].isascii() and text[-1].isalpha():
        words = words[:-1]  # cut off by the token limit: not a whole word
    return [w.lower() for w in words]


def cjk_bigrams(text: str) -> list[str]:
    return [run[i : i + 2] for run in _CJK_RUN.findall(text) for i in range(len(run) - 1)]


@dataclass
class HitRates:
    words: int = 0
    words_found: int = 0
    bigrams: int = 0
    bigrams_found: int = 0
    continuations: dict[str, str] = field(default_factory=dict)

    @property
    def word_rate(self) -> float:
        return self.words_found / self.words if self.words else float("nan")

    @property
    def bigram_rate(self) -> float:
        return self.bigrams_found / self.bigrams if self.bigrams else float("nan")


def measure(model: TinyLM, corpus_text: str, prompts, max_tokens: int = 64) -> HitRates:
    """Generate at temperature 0 from each prompt and count the continuation's words and bigrams that occur
    in ``corpus_text``."""
    vocabulary = {w.lower() for w in _WORD.findall(corpus_text)}
    out = HitRates()
    for prompt in prompts:
        text = decode(generate(model, encode(prompt), max_tokens, temperature=0.0))
        out.continuations[prompt] = text
        words = english_words(text)
        out.words += len(words)
        out.words_found += sum(w in vocabulary for w in words)
        bigrams = cjk_bigrams(text)
        out.bigrams += len(bigrams)
        out.bigrams_found += sum(b in corpus_text for b in bigrams)
    return out
