"""Request-level batching against in-flight batching: the same tiny language model, the same load, measured.

One embedded server loads the two models that serve the course's tiny LM with the same code
(``triton_kitchen/models/tiny_lm/serving.py``): request-level batching (dynamic batcher; one execute runs its
batch until the longest sequence ends) and in-flight batching (Triton's iterative sequences; one execute per
step, unfinished requests rescheduled). Both compute tokens only for unfinished sequences, at most 8 at once.

The load: ``--clients`` closed-loop clients (default 8) streaming over HTTP ``generate_stream``; the jobs are drawn
once with ``--seed``: prompts of 8..64 bytes (= tokens: the tokenizer is byte-level) cut from the course's lesson
text, output lengths from {8, 16, 32, 128}, temperature 0, EOS ignored only in the sense that a sequence stops at
EOS like any client's would (the finish reasons are counted). Each model gets the same jobs, in the same order.

Printed per model: tokens/s (client: tokens received / wall time of the run), TTFT and ITL p50/p99, and from the
server's own iteration records: steps, sequences computing per step (occupancy), places held per step (idle
finished sequences too, under request-level batching), time per step, and the tokens/s those predict
(occupancy / time per step), and a least-squares split of the step time into a fixed and a per-sequence part.
Then the measured ratio in-flight / request-level, the predicted ratio, and the ceiling request-level's own step
cost allows: since a finished sequence is not computed, only the fixed part of a step is shared by more
sequences when the places are full.

    OMP_NUM_THREADS=1 python benchmarks/generation_schedulers.py                 # 64 jobs per model
    OMP_NUM_THREADS=1 python benchmarks/generation_schedulers.py --jobs 96 --json /tmp/gen.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from triton_kitchen.core.catalog import TINY_LM, TINY_LM_IFB  # noqa: E402
from triton_kitchen.core.server import EmbeddedServer  # noqa: E402
from triton_kitchen.tools import generation  # noqa: E402

OUTPUT_LENGTHS = (8, 16, 32, 128)
LESSONS = Path(__file__).resolve().parents[1] / "lessons"


def lesson_text() -> bytes:
    parts = [p.read_text(encoding="utf-8") for p in sorted(LESSONS.glob("*/*.md"))]
    return " ".join(" ".join(parts).split()).encode("utf-8")


def draw_jobs(n: int, seed: int) -> list[generation.Job]:
    """``n`` jobs: a prompt of 8..64 tokens (bytes, cut at a character boundary) and an output length."""
    rng = np.random.default_rng(seed)
    text = lesson_text()
    jobs = []
    for _ in range(n):
        length = int(rng.integers(8, 65))
        start = int(rng.integers(0, len(text) - 200))
        while start and (text[start] & 0xC0) == 0x80:  # not inside a UTF-8 character
            start -= 1
        chunk = text[start : start + length]
        prompt = chunk.decode("utf-8", errors="ignore")
        jobs.append(generation.Job(prompt, int(rng.choice(OUTPUT_LENGTHS)), parameters={"ignore_eos": True}))
    return jobs


def run_model(endpoint, model: str, jobs, clients: int, protocol: str) -> dict:
    generation.closed_loop(endpoint, model, jobs[: clients * 2], clients, protocol)  # warm-up, not counted
    result = generation.closed_loop(endpoint, model, jobs, clients, protocol)
    summary = generation.summarize(result)
    steps = generation.server_steps(result.runs)
    summary["server"] = generation.occupancy(steps)
    summary["server"]["fit"] = step_cost_fit(steps)
    summary["finish_reasons"] = {}
    for r in result.runs:
        key = r.finish_reason or ("error" if r.error else "none")
        summary["finish_reasons"][key] = summary["finish_reasons"].get(key, 0) + 1
    summary["first_errors"] = [r.error for r in result.runs if r.error][:3]
    # execution counts per batch size from Triton's statistics are read by the caller (before/after)
    return summary


def step_cost_fit(steps: list[dict]) -> dict | None:
    """Least squares of each step's time (its start to the next step's start, within one run of steps without
    a pause over 20 ms) against the sequences it computed: the fixed and the per-sequence cost of a step."""
    xs, ys = [], []
    for a, b in zip(steps, steps[1:], strict=False):
        dt = (b["mono_start_ns"] - a["mono_start_ns"]) / 1e6
        if dt < 20:
            xs.append(sum(1 for x in a["batch"] if x["phase"] != "idle"))
            ys.append(dt)
    if len(set(xs)) < 2:
        return None
    slope, intercept = np.polyfit(xs, ys, 1)
    return {"fixed_ms": float(intercept), "per_sequence_ms": float(slope), "points": len(xs)}


def batch_stats(endpoint, model: str) -> dict:
    from triton_kitchen.core import kserve

    s = kserve.statistics(endpoint, model)["model_stats"][0]
    return {
        "executions": int(s["execution_count"]),
        "inferences": int(s["inference_count"]),
        "batch_sizes": {
            int(b["batch_size"]): int(b["compute_infer"]["count"]) for b in s.get("batch_stats", [])
        },
    }


def diff_stats(a: dict, b: dict) -> dict:
    sizes = {k: v - a["batch_sizes"].get(k, 0) for k, v in b["batch_sizes"].items()}
    return {
        "executions": b["executions"] - a["executions"],
        "inferences": b["inferences"] - a["inferences"],
        "batch_sizes": {k: v for k, v in sorted(sizes.items()) if v},
    }


def fmt(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--jobs", type=int, default=64, help="generations per model (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--protocol", choices=(generation.HTTP, generation.GRPC), default=generation.HTTP)
    ap.add_argument(
        "--rounds", type=int, default=3, help="runs per model, alternating (default: %(default)s)"
    )
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)
    jobs = draw_jobs(args.jobs, args.seed)
    print(
        f"{len(jobs)} jobs, seed {args.seed}: output lengths {dict(zip(*np.unique([j.max_tokens for j in jobs], return_counts=True), strict=False))}, "
        f"prompt bytes {min(len(j.prompt.encode()) for j in jobs)}..{max(len(j.prompt.encode()) for j in jobs)}; "
        f"{args.clients} closed-loop clients over {args.protocol}; OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}"
    )
    srv = EmbeddedServer(
        http_port=0, grpc_port=0, metrics_port=0, load_models=[TINY_LM, TINY_LM_IFB], build_models=False
    )
    srv.start(timeout=180)
    rounds: dict = {TINY_LM: [], TINY_LM_IFB: []}
    load = [os.getloadavg()[0]]
    try:
        for _ in range(args.rounds):
            for model in (TINY_LM, TINY_LM_IFB):
                before = batch_stats(srv.endpoint, model)
                r = run_model(srv.endpoint, model, jobs, args.clients, args.protocol)
                r["triton_statistics"] = diff_stats(before, batch_stats(srv.endpoint, model))
                rounds[model].append(r)
                load.append(os.getloadavg()[0])
    finally:
        srv.stop()
    results = {}
    for model, runs in rounds.items():
        best = sorted(runs, key=lambda r: r["tokens_per_s"])[len(runs) // 2]  # the median round
        results[model] = {**best, "rounds_tokens_per_s": [r["tokens_per_s"] for r in runs]}
        r, s = best, best["server"]
        print(
            f"\n{model}: median of {len(runs)} rounds: {r['tokens']} tokens in {r['wall_s']:.2f} s = "
            f"{fmt(r['tokens_per_s'])} tokens/s (rounds: {', '.join(fmt(x) for x in results[model]['rounds_tokens_per_s'])}; "
            f"{r['requests']} requests, {r['errors']} errors, finish {r['finish_reasons']})"
        )
        print(
            f"  TTFT p50 {fmt(r['ttft_ms']['p50'])} p99 {fmt(r['ttft_ms']['p99'])} ms; "
            f"ITL p50 {fmt(r['itl_ms']['p50'], 2)} p99 {fmt(r['itl_ms']['p99'], 2)} ms"
        )
        print(
            f"  server record: {s['steps']} steps, {s['running_per_step']:.2f} sequences computing per step, "
            f"{s['places_per_step']:.2f} places held, {s['time_per_step_ms']:.3f} ms per step "
            f"({s['compute_ms']:.3f} computing, {s['outside_ms']:.3f} outside) -> "
            f"predicted {fmt(s['predicted_tokens_per_s'])} tokens/s"
        )
        fit = s.get("fit")
        if fit:
            print(
                f"  time per step ~ {fit['fixed_ms']:.3f} ms + {fit['per_sequence_ms']:.3f} ms x sequences "
                f"(least squares over the steps)"
            )
        print(f"  Triton statistics over the round (warm-up included): {r['triton_statistics']}")
    print(f"\n1-minute load average over the run: {', '.join(f'{x:.1f}' for x in load)} (2 cores)")
    rl, ifb = results[TINY_LM], results[TINY_LM_IFB]
    measured = ifb["tokens_per_s"] / rl["tokens_per_s"]
    predicted = ifb["server"]["predicted_tokens_per_s"] / rl["server"]["predicted_tokens_per_s"]
    occ = ifb["server"]["running_per_step"] / rl["server"]["running_per_step"]
    step = rl["server"]["time_per_step_ms"] / ifb["server"]["time_per_step_ms"]
    print(
        f"\nin-flight / request-level tokens/s: measured {measured:.2f}x, predicted from the records "
        f"{predicted:.2f}x (occupancy {occ:.2f}x times step-time {step:.2f}x); "
        f"measured/predicted {measured / predicted:.3f}"
    )
    fit = rl["server"].get("fit")
    if fit and fit["per_sequence_ms"] > 0:
        a, b, n = max(fit["fixed_ms"], 0.0), fit["per_sequence_ms"], rl["server"]["running_per_step"]
        ceiling = (a / n + b) / (a / args.clients + b)
        print(
            f"ceiling: request-level's own step cost ({a:.3f} ms + {b:.3f} ms x sequences) with {args.clients} "
            f"sequences in every step instead of {n:.2f} would give {ceiling:.2f}x: idle places cost nothing "
            "here (finished sequences are not computed), so in-flight batching gains only the fixed part"
        )
    print(
        f"target: measured >= 2x: {'met' if measured >= 2 else 'NOT met'}; within 15% of predicted: "
        f"{'met' if abs(measured / predicted - 1) <= 0.15 else 'NOT met'}"
    )
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "args": vars(args),
                    "results": results,
                    "measured_ratio": measured,
                    "predicted_ratio": predicted,
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
