"""A small decoder-only transformer, forward pass only, in numpy: the course's own language model.

Byte-level (:mod:`triton_kitchen.models.tiny_lm.tokenizer`), GPT-2-like: learned token and position
embeddings, ``n_layers`` pre-LayerNorm blocks (causal multi-head self-attention, then a GELU MLP, each with a
residual), a final LayerNorm and an untied output head. Weights are stored float16 in ``weights.npz`` beside
this file (written by ``python -m triton_kitchen.models.tiny_lm.train``); all arithmetic is float32.

Generation keeps each sequence's keys and values in a :class:`KVCache`: ``prefill`` runs the prompt once and
fills the cache; ``decode`` then feeds one new token per sequence for a batch of sequences, with one matrix
product over the batch for every projection and the MLP (attention reads each sequence's own cache).

Context rule: a sequence never holds more than ``context_length`` tokens (prompt plus output). A prompt that is
too long keeps its newest tokens (:func:`fit_prompt` says how many were dropped); a sequence whose cache is full
stops with finish reason ``"length"`` (:func:`generate_detailed`); ``decode`` refuses a full cache.

Imported inside Triton's Python stub (Python 3.10): numpy and the standard library only.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from triton_kitchen.models.tiny_lm.tokenizer import BOS, EOS, VOCAB_SIZE, encode

HERE = Path(__file__).resolve().parent
WEIGHTS_PATH = HERE / "weights.npz"
METADATA_PATH = HERE / "weights.json"

LN_EPS = 1e-5
GELU_C = math.sqrt(2.0 / math.pi)


@dataclass(frozen=True)
class Config:
    vocab_size: int = VOCAB_SIZE
    context_length: int = 256
    d_model: int = 128
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 512

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


def param_shapes(cfg: Config) -> dict[str, tuple[int, ...]]:
    """Every weight's name and shape, in a fixed order (training and the weights file use it)."""
    d, f, v = cfg.d_model, cfg.d_ff, cfg.vocab_size
    shapes: dict[str, tuple[int, ...]] = {"tok_emb": (v, d), "pos_emb": (cfg.context_length, d)}
    for i in range(cfg.n_layers):
        p = f"l{i}."
        shapes.update({
            p + "ln1_g": (d,), p + "ln1_b": (d,),
            p + "w_qkv": (d, 3 * d), p + "b_qkv": (3 * d,),
            p + "w_o": (d, d), p + "b_o": (d,),
            p + "ln2_g": (d,), p + "ln2_b": (d,),
            p + "w_fc": (d, f), p + "b_fc": (f,),
            p + "w_proj": (f, d), p + "b_proj": (d,),
        })  # fmt: skip
    shapes.update({"lnf_g": (d,), "lnf_b": (d,), "w_head": (d, v)})
    return shapes


def init_params(cfg: Config, seed: int = 0, dtype=np.float32) -> dict[str, np.ndarray]:
    """Fresh weights (GPT-2's scheme: normal(0, 0.02), residual projections scaled by 1/sqrt(2 n_layers),
    LayerNorm gains 1, biases 0), the same for the same seed."""
    rng = np.random.default_rng(seed)
    params = {}
    for name, shape in param_shapes(cfg).items():
        leaf = name.rpartition(".")[2]
        if leaf.endswith("_g"):
            w = np.ones(shape)
        elif leaf.startswith("b_") or leaf.endswith("_b"):
            w = np.zeros(shape)
        else:
            std = 0.02 / math.sqrt(2 * cfg.n_layers) if leaf in ("w_o", "w_proj") else 0.02
            w = rng.normal(0.0, std, size=shape)
        params[name] = w.astype(dtype)
    return params


def layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    xc = x - mu
    var = (xc * xc).mean(-1, keepdims=True)
    return xc / np.sqrt(var + LN_EPS) * g + b


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU, tanh approximation (as GPT-2)."""
    return 0.5 * x * (1.0 + np.tanh(GELU_C * (x + 0.044715 * x * x * x)))


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


class KVCache:
    """One sequence's keys and values, per layer: ``k``/``v`` float32 [n_layers, n_heads, capacity, head_dim].
    Storage grows in blocks of :attr:`BLOCK` positions up to the context length; ``length`` is the number of
    tokens stored, ``nbytes`` the bytes those tokens' keys and values take (``allocated_nbytes``: the blocks)."""

    BLOCK = 32

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.length = 0
        self.k = np.zeros((cfg.n_layers, cfg.n_heads, 0, cfg.head_dim), np.float32)
        self.v = np.zeros_like(self.k)

    @property
    def bytes_per_token(self) -> int:
        return 2 * self.cfg.n_layers * self.cfg.d_model * 4

    @property
    def nbytes(self) -> int:
        return self.length * self.bytes_per_token

    @property
    def allocated_nbytes(self) -> int:
        return int(self.k.nbytes + self.v.nbytes)

    @property
    def room(self) -> int:
        """How many more tokens fit in the context."""
        return self.cfg.context_length - self.length

    def reserve(self, n: int) -> None:
        """Make room for ``n`` more tokens (raises ``ValueError`` past the context length)."""
        need = self.length + n
        if need > self.cfg.context_length:
            raise ValueError(
                f"the KV cache holds {self.length} tokens; {n} more would pass the context length "
                f"{self.cfg.context_length}"
            )
        cap = self.k.shape[2]
        if need <= cap:
            return
        new_cap = min(self.cfg.context_length, -(-need // self.BLOCK) * self.BLOCK)
        pad = ((0, 0), (0, 0), (0, new_cap - cap), (0, 0))
        self.k = np.pad(self.k, pad)
        self.v = np.pad(self.v, pad)

    def free(self) -> None:
        """Drop what the cache holds (a finished or cancelled sequence)."""
        self.length = 0
        self.k = self.k[:, :, :0].copy()
        self.v = self.v[:, :, :0].copy()


class TinyLM:
    """The network with its weights, float32. ``prefill``/``decode`` use a :class:`KVCache` per sequence;
    ``logits_without_cache`` recomputes everything (the reference the cache is checked against)."""

    def __init__(self, cfg: Config, params: dict[str, np.ndarray], metadata: dict | None = None) -> None:
        self.cfg = cfg
        self.context_length = cfg.context_length
        self.vocab_size = cfg.vocab_size
        self.metadata = metadata or {}
        shapes = param_shapes(cfg)
        missing = set(shapes) - set(params)
        if missing:
            raise ValueError(f"weights lack {sorted(missing)}")
        self.p = {k: np.ascontiguousarray(params[k], dtype=np.float32) for k in shapes}
        for k, shape in shapes.items():
            if self.p[k].shape != shape:
                raise ValueError(f"weight {k} has shape {self.p[k].shape}, expected {shape}")
        self._scale = np.float32(1.0 / math.sqrt(cfg.head_dim))

    # -- loading and saving ---------------------------------------------------------------------------------
    @classmethod
    def load(cls, path=WEIGHTS_PATH) -> TinyLM:
        path = Path(path)
        with np.load(path, allow_pickle=False) as data:
            cfg = Config(**json.loads(str(data["__config__"])))
            params = {k: data[k] for k in data.files if k != "__config__"}
        meta_path = path.with_suffix(".json")
        metadata = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
        return cls(cfg, params, metadata)

    @classmethod
    def fresh(cls, cfg: Config | None = None, seed: int = 0) -> TinyLM:
        cfg = cfg or Config()
        return cls(cfg, init_params(cfg, seed))

    def new_cache(self) -> KVCache:
        return KVCache(self.cfg)

    @property
    def n_params(self) -> int:
        return int(sum(w.size for w in self.p.values()))

    # -- forward --------------------------------------------------------------------------------------------
    def _check_tokens(self, tokens) -> np.ndarray:
        ids = np.asarray(tokens, dtype=np.int64).reshape(-1)
        if ids.size and (ids.min() < 0 or ids.max() >= self.vocab_size):
            raise ValueError(f"token ids must lie in [0, {self.vocab_size})")
        return ids

    def _head(self, x: np.ndarray) -> np.ndarray:
        return layer_norm(x, self.p["lnf_g"], self.p["lnf_b"]) @ self.p["w_head"]

    def _mlp(self, x: np.ndarray, p: str) -> np.ndarray:
        h = layer_norm(x, self.p[p + "ln2_g"], self.p[p + "ln2_b"])
        h = gelu(h @ self.p[p + "w_fc"] + self.p[p + "b_fc"])
        return x + h @ self.p[p + "w_proj"] + self.p[p + "b_proj"]

    def _extend(self, ids: np.ndarray, cache: KVCache) -> np.ndarray:
        """Run ``ids`` (T tokens) after what ``cache`` holds, append their keys/values; hidden states [T, d]."""
        cfg, T, H, hd = self.cfg, ids.size, self.cfg.n_heads, self.cfg.head_dim
        start = cache.length
        cache.reserve(T)
        x = self.p["tok_emb"][ids] + self.p["pos_emb"][start : start + T]
        n = start + T
        # causal mask: query i (position start+i) sees keys 0..start+i
        mask = np.arange(n)[None, :] > (start + np.arange(T))[:, None]
        for layer in range(cfg.n_layers):
            p = f"l{layer}."
            h = layer_norm(x, self.p[p + "ln1_g"], self.p[p + "ln1_b"])
            qkv = h @ self.p[p + "w_qkv"] + self.p[p + "b_qkv"]  # [T, 3d]
            q, k, v = (qkv[:, i * cfg.d_model : (i + 1) * cfg.d_model].reshape(T, H, hd) for i in range(3))
            cache.k[layer, :, start:n] = k.transpose(1, 0, 2)
            cache.v[layer, :, start:n] = v.transpose(1, 0, 2)
            keys, values = cache.k[layer, :, :n], cache.v[layer, :, :n]  # [H, n, hd]
            att = (q.transpose(1, 0, 2) @ keys.transpose(0, 2, 1)) * self._scale  # [H, T, n]
            att[:, mask] = -np.inf
            y = (softmax(att) @ values).transpose(1, 0, 2).reshape(T, cfg.d_model)
            x = x + y @ self.p[p + "w_o"] + self.p[p + "b_o"]
            x = self._mlp(x, p)
        cache.length = n
        return x

    def prefill(self, tokens, cache: KVCache) -> np.ndarray:
        """Run the prompt ``tokens`` (after whatever ``cache`` holds, usually nothing), fill the cache; the
        logits [vocab] at the last position."""
        ids = self._check_tokens(tokens)
        if ids.size == 0:
            raise ValueError("prefill needs at least one token")
        x = self._extend(ids, cache)
        return self._head(x[-1])

    def decode(self, tokens, caches: list[KVCache]) -> np.ndarray:
        """One new token per sequence (``tokens[i]`` follows ``caches[i]``), batched: logits [B, vocab]."""
        ids = self._check_tokens(tokens)
        B = ids.size
        if B != len(caches):
            raise ValueError(f"{B} tokens for {len(caches)} caches")
        if B == 0:
            return np.zeros((0, self.vocab_size), np.float32)
        for c in caches:
            if c.length == 0:
                raise ValueError("decode follows a prefill: this cache is empty")
            c.reserve(1)
        cfg, H, hd, d = self.cfg, self.cfg.n_heads, self.cfg.head_dim, self.cfg.d_model
        pos = np.array([c.length for c in caches])
        x = self.p["tok_emb"][ids] + self.p["pos_emb"][pos]  # [B, d]
        for layer in range(cfg.n_layers):
            p = f"l{layer}."
            h = layer_norm(x, self.p[p + "ln1_g"], self.p[p + "ln1_b"])
            qkv = h @ self.p[p + "w_qkv"] + self.p[p + "b_qkv"]  # one product for the batch: [B, 3d]
            y = np.empty((B, d), np.float32)
            for b, c in enumerate(caches):
                n = c.length + 1
                c.k[layer, :, n - 1] = qkv[b, d : 2 * d].reshape(H, hd)
                c.v[layer, :, n - 1] = qkv[b, 2 * d :].reshape(H, hd)
                q = qkv[b, :d].reshape(H, 1, hd)
                att = (q @ c.k[layer, :, :n].transpose(0, 2, 1)) * self._scale  # [H, 1, n]
                y[b] = (softmax(att) @ c.v[layer, :, :n]).reshape(d)
            x = x + y @ self.p[p + "w_o"] + self.p[p + "b_o"]
            x = self._mlp(x, p)
        for c in caches:
            c.length += 1
        return self._head(x)

    def logits_without_cache(self, tokens) -> np.ndarray:
        """Logits [vocab] of the last position, computed from scratch over ``tokens``."""
        ids = self._check_tokens(tokens)
        if ids.size == 0:
            raise ValueError("at least one token is needed")
        return self._head(self._extend(ids, self.new_cache())[-1])

    def all_logits(self, tokens) -> np.ndarray:
        """Logits [T, vocab] at every position (training checks and perplexity)."""
        ids = self._check_tokens(tokens)
        return self._head(self._extend(ids, self.new_cache()))


def save(path, cfg: Config, params: dict[str, np.ndarray], dtype=np.float16) -> None:
    """Write the weights file (atomically): every weight as ``dtype`` plus the config as JSON under ``__config__``."""
    arrays = {k: np.asarray(params[k]).astype(dtype) for k in param_shapes(cfg)}
    arrays["__config__"] = np.array(json.dumps(asdict(cfg)))
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        np.savez_compressed(f, **arrays)
    os.replace(tmp, path)  # a reader sees the old file or the new one, never half a file


# -- sampling and generation --------------------------------------------------------------------------------
def sample(logits: np.ndarray, temperature: float, rng: np.random.Generator) -> int:
    """One token from ``logits`` [vocab]: the argmax at temperature 0 (lowest id on a tie), else a draw from
    softmax(logits / temperature) with ``rng``."""
    logits = np.asarray(logits, dtype=np.float64)
    if temperature <= 0:
        return int(np.argmax(logits))
    z = logits / temperature
    probs = np.exp(z - z.max())
    probs /= probs.sum()
    return int(rng.choice(probs.size, p=probs))


def fit_prompt(ids, context_length: int, max_tokens: int) -> tuple[list[int], int]:
    """The prompt tokens that are kept and how many of the oldest were dropped. The prompt keeps room for
    ``max_tokens`` of output but never shrinks below half the context for it (a long answer then ends early
    with finish reason "length"), and always leaves room for one output token."""
    ids = [int(i) for i in ids]
    room = max(context_length - max(int(max_tokens), 0), context_length // 2)
    room = max(1, min(room, context_length - 1))
    if len(ids) <= room:
        return ids, 0
    return ids[len(ids) - room :], len(ids) - room


@dataclass
class Generation:
    ids: list[int]  # the generated tokens (without the prompt, without a stop sequence)
    finish_reason: str  # "stop" (EOS or a stop sequence), "length" (max_tokens or the context is full)
    prompt_tokens: int  # the prompt tokens the model saw
    dropped: int  # the oldest prompt tokens left out to fit the context


def _stop_sequences(stop) -> list[list[int]]:
    if stop is None:
        return []
    if isinstance(stop, str | int):
        stop = [stop]
    out = []
    for s in stop:
        seq = encode(s) if isinstance(s, str) else [s] if isinstance(s, int) else [int(i) for i in s]
        if seq:
            out.append(seq)
    return out


def generate_detailed(
    model: TinyLM,
    prompt_ids,
    max_tokens: int,
    temperature: float = 0.0,
    seed: int = 0,
    use_cache: bool = True,
    stop=None,
    stop_at_eos: bool = True,
) -> Generation:
    """Generate up to ``max_tokens`` tokens after ``prompt_ids`` (an empty prompt means ``[BOS]``).

    ``stop``: strings, token ids or id sequences; generation ends when the output ends with one (it is not
    returned). With ``stop_at_eos`` the EOS token ends it too. The sequence (prompt plus output) never passes
    the context length: it ends with finish reason "length" when full. ``use_cache=False`` recomputes every
    step with :meth:`TinyLM.logits_without_cache` (same tokens, slower)."""
    rng = np.random.default_rng(seed)
    max_tokens = max(int(max_tokens), 0)
    prompt, dropped = fit_prompt(list(prompt_ids) or [BOS], model.context_length, max_tokens)
    stops = _stop_sequences(stop)
    out: list[int] = []
    if max_tokens == 0:
        return Generation(out, "length", len(prompt), dropped)
    cache = model.new_cache() if use_cache else None
    logits = model.prefill(prompt, cache) if cache is not None else model.logits_without_cache(prompt)
    while True:
        token = sample(logits, temperature, rng)
        if stop_at_eos and token == EOS:
            return Generation(out, "stop", len(prompt), dropped)
        out.append(token)
        for s in stops:
            if len(out) >= len(s) and out[-len(s) :] == s:
                return Generation(out[: -len(s)], "stop", len(prompt), dropped)
        if len(out) >= max_tokens or len(prompt) + len(out) >= model.context_length:
            return Generation(out, "length", len(prompt), dropped)
        if cache is not None:
            logits = model.decode([token], [cache])[0]
        else:
            logits = model.logits_without_cache(prompt + out)


def generate(model, prompt_ids, max_tokens, temperature=0.0, seed=0, use_cache=True, stop=None) -> list[int]:
    """The generated token ids (see :func:`generate_detailed` for the rules and the finish reason)."""
    return generate_detailed(model, prompt_ids, max_tokens, temperature, seed, use_cache, stop).ids
