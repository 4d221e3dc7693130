"""Train the tiny language model from scratch on the course's own text, in numpy, and write its weights.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python -m triton_kitchen.models.tiny_lm.train \
        [--steps N] [--out PATH] [--seed S] [--batch B] [--lr LR] [--d-model D] [--layers L] [--heads H] \
        [--context C]

Each step draws ``batch`` random windows of ``context`` + 1 tokens from :func:`corpus.corpus_tokens` and
takes one Adam step on the mean next-token cross-entropy (gradients by hand-written backpropagation below,
checked against numerical gradients in tests/unit/test_tiny_lm.py; global-norm clipping at 1; linear warm-up,
then cosine decay to a tenth). The same seed, corpus and thread count give the same weights. It writes
``PATH`` (``weights.npz``, float16) and ``PATH`` with ``.json`` (architecture, steps, corpus bytes and
sha256, losses, duration, the command).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from triton_kitchen.models.tiny_lm import corpus
from triton_kitchen.models.tiny_lm.network import (
    GELU_C,
    LN_EPS,
    WEIGHTS_PATH,
    Config,
    TinyLM,
    init_params,
    param_shapes,
    save,
)


# -- forward with everything backward needs -------------------------------------------------------------------
def _ln_fwd(x, g, b):
    mu = x.mean(-1, keepdims=True)
    xc = x - mu
    rstd = 1.0 / np.sqrt((xc * xc).mean(-1, keepdims=True) + LN_EPS)
    xhat = xc * rstd
    return xhat * g + b, (xhat, rstd)


def _ln_bwd(dy, g, cache):
    xhat, rstd = cache
    flat = dy.reshape(-1, dy.shape[-1])
    dg = (flat * xhat.reshape(flat.shape)).sum(0)
    db = flat.sum(0)
    dxhat = dy * g
    dx = rstd * (dxhat - dxhat.mean(-1, keepdims=True) - xhat * (dxhat * xhat).mean(-1, keepdims=True))
    return dx, dg, db


def _gelu_fwd(u):
    t = np.tanh(GELU_C * (u + 0.044715 * u * u * u))
    return 0.5 * u * (1.0 + t), t


def _gelu_bwd(dg, u, t):
    return dg * (0.5 * (1.0 + t) + 0.5 * u * (1.0 - t * t) * GELU_C * (1.0 + 3 * 0.044715 * u * u))


def loss_and_grads(params, cfg: Config, x_ids: np.ndarray, y_ids: np.ndarray, need_grads: bool = True):
    """Mean next-token cross-entropy of ``x_ids`` [B, T] predicting ``y_ids`` [B, T]; with the gradient of
    every weight (same dtype as the weights)."""
    B, T = x_ids.shape
    d, H, hd = cfg.d_model, cfg.n_heads, cfg.head_dim
    dt = params["tok_emb"].dtype
    scale = dt.type(1.0 / math.sqrt(hd))
    causal = np.triu(np.full((T, T), -np.inf, dt), 1)  # added to the scores: a query sees no later key
    x = params["tok_emb"][x_ids] + params["pos_emb"][:T]
    saved = []
    for layer in range(cfg.n_layers):
        p = f"l{layer}."
        h1, ln1 = _ln_fwd(x, params[p + "ln1_g"], params[p + "ln1_b"])
        qkv = h1 @ params[p + "w_qkv"] + params[p + "b_qkv"]
        q, k, v = (qkv[..., i * d : (i + 1) * d].reshape(B, T, H, hd).transpose(0, 2, 1, 3) for i in range(3))
        s = (q @ k.transpose(0, 1, 3, 2)) * scale
        s += causal
        s -= s.max(-1, keepdims=True)
        a = np.exp(s)
        a /= a.sum(-1, keepdims=True)
        y = (a @ v).transpose(0, 2, 1, 3).reshape(B, T, d)
        x = x + y @ params[p + "w_o"] + params[p + "b_o"]
        h2, ln2 = _ln_fwd(x, params[p + "ln2_g"], params[p + "ln2_b"])
        u = h2 @ params[p + "w_fc"] + params[p + "b_fc"]
        gu, t = _gelu_fwd(u)
        x = x + gu @ params[p + "w_proj"] + params[p + "b_proj"]
        saved.append((h1, ln1, q, k, v, a, y, h2, ln2, u, t, gu))
    hf, lnf = _ln_fwd(x, params["lnf_g"], params["lnf_b"])
    logits = hf @ params["w_head"]  # [B, T, V]
    logits -= logits.max(-1, keepdims=True)
    probs = np.exp(logits)
    probs /= probs.sum(-1, keepdims=True)
    N = B * T
    flat = probs.reshape(N, -1)
    picked = flat[np.arange(N), y_ids.reshape(-1)]
    loss = float(-np.log(np.maximum(picked.astype(np.float64), 1e-30)).mean())
    if not need_grads:
        return loss, None

    g = {}
    dlogits = flat  # reuse the buffer: softmax - onehot, over N
    dlogits[np.arange(N), y_ids.reshape(-1)] -= 1
    dlogits /= N
    hf2 = hf.reshape(N, d)
    g["w_head"] = hf2.T @ dlogits
    dhf = (dlogits @ params["w_head"].T).reshape(B, T, d)
    dx, g["lnf_g"], g["lnf_b"] = _ln_bwd(dhf, params["lnf_g"], lnf)
    for layer in reversed(range(cfg.n_layers)):
        p = f"l{layer}."
        h1, ln1, q, k, v, a, y, h2, ln2, u, t, gu = saved[layer]
        dx2 = dx.reshape(N, d)
        g[p + "w_proj"] = gu.reshape(N, -1).T @ dx2
        g[p + "b_proj"] = dx2.sum(0)
        dgu = dx @ params[p + "w_proj"].T
        du = _gelu_bwd(dgu, u, t)
        du2 = du.reshape(N, -1)
        g[p + "w_fc"] = h2.reshape(N, d).T @ du2
        g[p + "b_fc"] = du2.sum(0)
        dh2 = du @ params[p + "w_fc"].T
        dxl, g[p + "ln2_g"], g[p + "ln2_b"] = _ln_bwd(dh2, params[p + "ln2_g"], ln2)
        dx = dx + dxl
        dx2 = dx.reshape(N, d)
        g[p + "w_o"] = y.reshape(N, d).T @ dx2
        g[p + "b_o"] = dx2.sum(0)
        dy = (dx @ params[p + "w_o"].T).reshape(B, T, H, hd).transpose(0, 2, 1, 3)
        da = dy @ v.transpose(0, 1, 3, 2)
        dv = a.transpose(0, 1, 3, 2) @ dy
        ds = a * (da - (da * a).sum(-1, keepdims=True)) * scale
        dq = ds @ k
        dk = ds.transpose(0, 1, 3, 2) @ q
        dqkv = np.concatenate([z.transpose(0, 2, 1, 3).reshape(B, T, d) for z in (dq, dk, dv)], axis=-1)
        dqkv2 = dqkv.reshape(N, 3 * d)
        g[p + "w_qkv"] = h1.reshape(N, d).T @ dqkv2
        g[p + "b_qkv"] = dqkv2.sum(0)
        dh1 = dqkv @ params[p + "w_qkv"].T
        dxl, g[p + "ln1_g"], g[p + "ln1_b"] = _ln_bwd(dh1, params[p + "ln1_g"], ln1)
        dx = dx + dxl
    dtok = np.zeros_like(params["tok_emb"])
    np.add.at(dtok, x_ids.reshape(-1), dx.reshape(N, d))
    g["tok_emb"] = dtok
    dpos = np.zeros_like(params["pos_emb"])
    dpos[:T] = dx.sum(0)
    g["pos_emb"] = dpos
    return loss, g


# -- the optimiser ---------------------------------------------------------------------------------------------
class Adam:
    def __init__(self, params, lr: float, betas=(0.9, 0.95), eps: float = 1e-8) -> None:
        self.lr, (self.b1, self.b2), self.eps, self.t = lr, betas, eps, 0
        self.m = {k: np.zeros_like(w) for k, w in params.items()}
        self.v = {k: np.zeros_like(w) for k, w in params.items()}

    def step(self, params, grads, lr: float) -> None:
        self.t += 1
        c1, c2 = 1 - self.b1**self.t, 1 - self.b2**self.t
        for k, gk in grads.items():
            m, v = self.m[k], self.v[k]
            m *= self.b1
            m += (1 - self.b1) * gk
            v *= self.b2
            v += (1 - self.b2) * gk * gk
            params[k] -= (lr / c1) * m / (np.sqrt(v / c2) + self.eps)


def clip_grads(grads, max_norm: float) -> float:
    norm = math.sqrt(sum(float((gk.astype(np.float64) ** 2).sum()) for gk in grads.values()))
    if norm > max_norm:
        for gk in grads.values():
            gk *= max_norm / norm
    return norm


def lr_at(step: int, steps: int, peak: float, warmup: int) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    frac = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))


def windows(data: np.ndarray, starts: np.ndarray, T: int) -> tuple[np.ndarray, np.ndarray]:
    idx = starts[:, None] + np.arange(T + 1)[None, :]
    chunk = data[idx].astype(np.int64)
    return chunk[:, :-1], chunk[:, 1:]


def train(
    cfg: Config,
    steps: int,
    seed: int = 0,
    batch: int = 16,
    lr: float = 2e-3,
    data: np.ndarray | None = None,
    log_every: int = 25,
    log=print,
) -> tuple[dict[str, np.ndarray], dict]:
    """Train from scratch; the weights (float32) and a record of the run."""
    data = corpus.corpus_tokens() if data is None else data
    if data.size < cfg.context_length + 2:
        raise ValueError("the corpus is shorter than one training window")
    rng = np.random.default_rng(seed)
    params = init_params(cfg, seed)
    opt = Adam(params, lr)
    warmup = max(1, min(100, steps // 10))
    losses: list[float] = []
    t0 = time.perf_counter()
    for step in range(steps):
        starts = rng.integers(0, data.size - cfg.context_length - 1, size=batch)
        x_ids, y_ids = windows(data, starts, cfg.context_length)
        loss, grads = loss_and_grads(params, cfg, x_ids, y_ids)
        norm = clip_grads(grads, 1.0)
        opt.step(params, grads, lr_at(step, steps, lr, warmup))
        losses.append(loss)
        if log and (step % log_every == 0 or step == steps - 1):
            log(f"step {step:5d}  loss {loss:.4f}  grad-norm {norm:.3f}  {time.perf_counter() - t0:7.1f} s")
    seconds = time.perf_counter() - t0
    # a fixed evaluation over evenly spaced windows (the same for every run on this corpus)
    n_eval = min(32, max(1, (data.size - cfg.context_length - 1) // cfg.context_length))
    starts = np.linspace(0, data.size - cfg.context_length - 2, n_eval).astype(np.int64)
    eval_loss = float(
        np.mean([loss_and_grads(params, cfg, *windows(data, starts[i : i + 4], cfg.context_length), False)[0]
                 for i in range(0, n_eval, 4)])
    )  # fmt: skip
    tail = losses[-min(50, len(losses)) :]
    record = {
        "architecture": {"kind": "decoder-only transformer, pre-LayerNorm, GELU MLP, learned positions",
                         **asdict(cfg)},
        "tokenizer": "UTF-8 bytes 0-255, BOS=256, EOS=257",
        "params": int(sum(w.size for w in params.values())),
        "steps": steps,
        "batch": batch,
        "tokens_seen": steps * batch * cfg.context_length,
        "lr": lr,
        "seed": seed,
        "first_loss": losses[0] if losses else None,
        "final_loss": float(np.mean(tail)) if tail else None,
        "final_loss_note": "mean training loss (nats per byte) of the last 50 steps",
        "eval_loss": eval_loss,
        "eval_loss_note": f"loss on {n_eval} evenly spaced corpus windows (training text: no held-out split)",
        "loss_every_25_steps": [round(x, 4) for x in losses[::25]],
        "train_seconds": round(seconds, 1),
    }  # fmt: skip
    return params, record


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m triton_kitchen.models.tiny_lm.train", description=__doc__)
    ap.add_argument("--steps", type=int, default=1300)
    ap.add_argument("--out", type=Path, default=WEIGHTS_PATH)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--d-model", type=int, default=Config.d_model)
    ap.add_argument("--layers", type=int, default=Config.n_layers)
    ap.add_argument("--heads", type=int, default=Config.n_heads)
    ap.add_argument("--context", type=int, default=Config.context_length)
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    cfg = Config(
        context_length=args.context,
        d_model=args.d_model,
        n_layers=args.layers,
        n_heads=args.heads,
        d_ff=4 * args.d_model,
    )
    docs = corpus.documents()
    data = corpus.corpus_tokens(docs=docs)
    t0 = time.time()
    params, record = train(
        cfg, args.steps, args.seed, args.batch, args.lr, data, log=None if args.quiet else print
    )
    record.update({
        "corpus": "lessons/{zh,en}/*.md and lessons/{zh,en}/quiz/*.toml (triton_kitchen.models.tiny_lm.corpus)",
        "corpus_bytes": int(data.size - 2 * len(docs)),
        "corpus_tokens": int(data.size),
        "corpus_sha256": corpus.tokens_sha256(data),
        "command": "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python -m triton_kitchen.models.tiny_lm.train "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "wall_seconds": round(time.time() - t0, 1),
        "numpy": np.__version__,
        "python": platform.python_version(),
        "weights_dtype": "float16",
        "license": "the weights are trained only on this repository's lesson text; same license as the code",
    })  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    save(args.out, cfg, params)
    record["weights_bytes"] = args.out.stat().st_size
    meta = args.out.with_suffix(".json")
    tmp = meta.with_name(meta.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", "utf-8")
    os.replace(tmp, meta)
    model = TinyLM.load(args.out)
    assert set(model.p) == set(param_shapes(cfg))
    if not args.quiet:
        print(json.dumps({k: record[k] for k in ("params", "final_loss", "eval_loss", "train_seconds",
                                                 "weights_bytes")}))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
