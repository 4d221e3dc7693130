"""Which queue settings make Triton's dynamic batcher pause for about half a second?

One embedded server (``python -m triton_kitchen serve``) on a temporary repository holding the course's
classifier five times, each with one setting added to its ``dynamic_batching`` block:

    control                  none of the settings below (the classifier as the course ships it)
    priority_levels          priority_levels: 2, default_priority_level: 2
    max_queue_size           default_queue_policy { max_queue_size: 64 }          (never full here)
    default_timeout          default_queue_policy { default_timeout_microseconds: 10000000 }  (never expires)
    allow_timeout_override   default_queue_policy { allow_timeout_override: true }

Each variant gets the same loads, variants in turn, ``--reps`` rounds: a *burst* (32 requests at once, as
chapter 9 sends them, then nothing until the last answer), the same burst with a *trickle* (then one more request
every 50 ms until the 32 are answered: arrivals that keep coming), and a *closed loop* (``--concurrency`` clients,
each sending again as soon as its answer is in, for ``--duration`` seconds). Per variant and load: p50/p90/max
latency, requests slower than 400 ms, throughput, the longest gap between two answers, and Triton's own
statistics over the run (mean queue time, executions against inferences).

Why these five: in core r24.10 ``PriorityQueue`` (scheduler_utils.cc) turns payload prefetching off with
priority levels, or with a default queue policy that has a timeout, ``allow_timeout_override`` or a
``max_queue_size``. Without prefetching the batcher forms the next batch only once an instance waits for work,
and the instance's "done" callback can wake it before the instance waits: then it sleeps its 500 ms default
wait (dynamic_batch_scheduler.cc), unless a new request arrives while the instance waits and wakes it (the
trickle).

    python benchmarks/batcher_pause.py                   # 3 rounds, about 2 minutes
    python benchmarks/batcher_pause.py --reps 5 --out /tmp/pause.json

Needs only the project's CLI and tritonclient; the temporary repository is removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
import tritonclient.grpc as grpcclient

ROOT = Path(__file__).resolve().parent.parent
SOURCE_MODEL = ROOT / "model_repository" / "classifier"
SLOW_MS = 400.0  # a request this slow waited out (most of) a 500 ms batcher sleep
GAP_MS = 300.0  # a gap between two answers this long: the server finished nothing for that long
BURST = 32
TRICKLE_S = 0.05

BASE = """name: "{name}"
backend: "python"
max_batch_size: 8
input [ {{ name: "input" data_type: TYPE_FP32 dims: {dims} }} ]
output [ {{ name: "{output}" data_type: TYPE_FP32 dims: {out_dims} }} ]
dynamic_batching {{
  preferred_batch_size: [ 4, 8 ]
  max_queue_delay_microseconds: 2000
{extra}}}
instance_group [ {{ kind: KIND_CPU count: 1 }} ]
parameters {{ key: "intra_op_threads" value: {{ string_value: "2" }} }}
"""
# the cheap model: a Python-backend model like the classifier (same batcher, same stub), whose every execution
# takes SLEEP_MS whatever the batch size and leaves the cores free, so a batcher pause stands out of the noise
SLEEP_MS = 20
SLEEPER = f"""import time

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        time.sleep({SLEEP_MS / 1000})
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "input").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("output", x)]))
        return out
"""
MODELS = {  # name: (input dims, output name, output dims)
    "sleep": ([4], "output", [4]),
    "classifier": ([3, 224, 224], "logits", [1000]),
}
VARIANTS = {
    "control": "",
    "priority_levels": "  priority_levels: 2\n  default_priority_level: 2\n",
    "max_queue_size": "  default_queue_policy { max_queue_size: 64 }\n",
    "default_timeout": "  default_queue_policy { default_timeout_microseconds: 10000000 }\n",
    "allow_timeout_override": "  default_queue_policy { allow_timeout_override: true }\n",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def config_text(model: str, name: str) -> str:
    dims, output, out_dims = MODELS[model]
    return BASE.format(name=name, extra=VARIANTS[name], dims=dims, output=output, out_dims=out_dims)


def build_repository(root: Path, model: str) -> None:
    """One folder per variant: the model's files and a config with the variant's block."""
    for name in VARIANTS:
        version = root / name / "1"
        version.mkdir(parents=True)
        if model == "sleep":
            (version / "model.py").write_text(SLEEPER)
        else:
            for f in ("model.py", "model.onnx"):
                src = SOURCE_MODEL / "1" / f
                try:
                    os.link(src, version / f)  # same file system: no copy of the 18 MB weights
                except OSError:
                    shutil.copy2(src, version / f)
        (root / name / "config.pbtxt").write_text(config_text(model, name))


class Server:
    """``python -m triton_kitchen serve`` on free ports, stopped (SIGTERM to the process we started) on exit."""

    def __init__(self, repo: Path, log: Path) -> None:
        self.http, self.grpc, self.metrics = free_port(), free_port(), free_port()
        self.log = log
        cmd = [sys.executable, "-m", "triton_kitchen", "serve", "--repo", str(repo)]
        cmd += [
            "--http-port",
            str(self.http),
            "--grpc-port",
            str(self.grpc),
            "--metrics-port",
            str(self.metrics),
        ]
        cmd += ["--timeout", "300"]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log.open("wb"), stderr=subprocess.STDOUT)

    def wait_ready(self, timeout_s: float = 320.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited:\n{self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.http}/v2/health/ready", timeout=2):
                    return
            except OSError:
                time.sleep(1.0)
        raise RuntimeError(f"not ready in {timeout_s:g} s:\n{self.log.read_text()[-3000:]}")

    def stats(self, model: str) -> dict:
        url = f"http://127.0.0.1:{self.http}/v2/models/{model}/stats"
        with urllib.request.urlopen(url, timeout=10) as r:
            s = json.load(r)["model_stats"][0]
        return {
            "inferences": int(s["inference_count"]),
            "executions": int(s["execution_count"]),
            "queue_ns": int(s["inference_stats"]["queue"]["ns"]),
            "queue_count": int(s["inference_stats"]["queue"]["count"]),
        }

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _tensor(model: str) -> grpcclient.InferInput:
    x = np.random.default_rng(0).standard_normal((1, *MODELS[model][0]), dtype=np.float32)
    t = grpcclient.InferInput("input", list(x.shape), "FP32")
    t.set_data_from_numpy(x)
    return t


def burst(
    client: grpcclient.InferenceServerClient, kind: str, model: str, n: int, trickle_s: float = 0.0
) -> list[tuple[float, float]]:
    """``n`` requests at once on one asynchronous client; (sent, done) times in ms after the first left.
    ``trickle_s``: then one more request every that many seconds until the ``n`` are answered (at most 100;
    they are waited for, not returned): arrivals that keep coming, as real traffic does."""
    tensor, done, lock, all_in = _tensor(kind), [], threading.Lock(), threading.Event()
    extra, extra_in = [0, 0], threading.Event()
    t0 = time.perf_counter()

    def callback(sent: float):
        def cb(result, error) -> None:
            with lock:
                done.append((sent, (time.perf_counter() - t0) * 1000, error))
                if len(done) == n:
                    all_in.set()

        return cb

    def trickled(result, error) -> None:
        with lock:
            extra[1] += 1
            if error is not None:
                done.append((0.0, 0.0, error))
            if extra[1] == extra[0]:
                extra_in.set()

    for _ in range(n):
        client.async_infer(model, [tensor], callback((time.perf_counter() - t0) * 1000), client_timeout=60)
    while trickle_s and extra[0] < 100 and not all_in.wait(trickle_s):
        with lock:
            extra[0] += 1
        client.async_infer(model, [tensor], trickled, client_timeout=60)
    all_in.wait(70)
    if extra[0]:
        extra_in.wait(70)
    errors = [e for _, _, e in done if e is not None]
    if errors or len(done) < n:
        raise RuntimeError(f"{model}: {len(done)} of {n} answered, errors: {errors[:2]}")
    return [(s, d) for s, d, _ in done]


def closed_loop(
    url: str, kind: str, model: str, clients: int, duration_s: float
) -> list[tuple[float, float]]:
    """``clients`` threads, each with its own gRPC client, sending again as soon as its answer is in."""
    tensor, out, lock = _tensor(kind), [], threading.Lock()
    t0 = time.perf_counter()
    stop_at = t0 + duration_s

    def worker() -> None:
        with grpcclient.InferenceServerClient(url) as c:
            while time.perf_counter() < stop_at:
                sent = (time.perf_counter() - t0) * 1000
                c.infer(model, [tensor], client_timeout=60)
                with lock:
                    out.append((sent, (time.perf_counter() - t0) * 1000))

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(duration_s + 70)
    return out


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def summarize(times: list[tuple[float, float]], before: dict, after: dict) -> dict:
    lat = [d - s for s, d in times]
    ends = sorted(d for _, d in times)
    span_s = (ends[-1] - min(s for s, _ in times)) / 1000
    gaps = [b - a for a, b in zip(ends, ends[1:], strict=False)]
    inferences = after["inferences"] - before["inferences"]
    executions = after["executions"] - before["executions"]
    queued = after["queue_count"] - before["queue_count"]
    return {
        "requests": len(lat),
        "p50_ms": _pct(lat, 50),
        "p90_ms": _pct(lat, 90),
        "max_ms": max(lat),
        "slow": sum(1 for v in lat if v > SLOW_MS),
        "rps": len(lat) / span_s if span_s > 0 else 0.0,
        "longest_gap_ms": max(gaps, default=0.0),
        "gaps_over": sum(1 for g in gaps if g >= GAP_MS),
        "queue_ms": (after["queue_ns"] - before["queue_ns"]) / queued / 1e6 if queued else None,
        "inferences": inferences,
        "executions": executions,
    }


def _mean(rows: list[dict], key: str) -> float:
    values = [r[key] for r in rows if r[key] is not None]
    return statistics.mean(values) if values else float("nan")


def table(results: dict, load: str) -> str:
    head = (
        f"{'variant':<23} {'p50':>6} {'p90':>6} {'max':>6} {'>400ms':>7} {'req/s':>6} "
        f"{'gap':>6} {'gaps>=300':>9} {'queue':>6} {'exec/infer':>11}  runs paused"
    )
    lines = [head]
    for name, loads in results.items():
        rows = loads[load]
        paused = sum(1 for r in rows if r["longest_gap_ms"] >= GAP_MS)
        slow = sum(r["slow"] for r in rows)
        total = sum(r["requests"] for r in rows)
        ex, inf = sum(r["executions"] for r in rows), sum(r["inferences"] for r in rows)
        lines.append(
            f"{name:<23} {_mean(rows, 'p50_ms'):6.0f} {_mean(rows, 'p90_ms'):6.0f} "
            f"{max(r['max_ms'] for r in rows):6.0f} {f'{slow}/{total}':>7} {_mean(rows, 'rps'):6.1f} "
            f"{max(r['longest_gap_ms'] for r in rows):6.0f} {sum(r['gaps_over'] for r in rows):9d} "
            f"{_mean(rows, 'queue_ms'):6.0f} {f'{ex}/{inf}':>11}  {paused}/{len(rows)}"
        )
    return "\n".join(lines)


def measure(model: str, args: argparse.Namespace) -> dict:
    """Start a server on the five variants of ``model``, run the rounds, stop it; the results per variant."""
    tmp = Path(tempfile.mkdtemp(prefix="batcher-pause-"))
    server = None
    try:
        build_repository(tmp / "repo", model)
        print(f"starting the embedded server on {tmp / 'repo'} (five variants of {model}) ...", flush=True)
        server = Server(tmp / "repo", tmp / "serve.log")
        server.wait_ready()
        url = f"127.0.0.1:{server.grpc}"
        results = {name: {"burst": [], "trickle": [], "closed": []} for name in VARIANTS}
        with grpcclient.InferenceServerClient(url) as client:
            for name in VARIANTS:  # a fresh instance's first calls are slow: kept out
                burst(client, model, name, 8)
            for rep in range(args.reps):
                for name in VARIANTS:
                    before = server.stats(name)
                    times = burst(client, model, name, BURST)
                    results[name]["burst"].append(summarize(times, before, server.stats(name)))
                    time.sleep(0.3)
                    before = server.stats(name)
                    times = burst(client, model, name, BURST, TRICKLE_S)
                    results[name]["trickle"].append(summarize(times, before, server.stats(name)))
                    time.sleep(0.3)
                    before = server.stats(name)
                    times = closed_loop(url, model, name, args.concurrency, args.duration)
                    results[name]["closed"].append(summarize(times, before, server.stats(name)))
                    b, c = results[name]["burst"][-1], results[name]["closed"][-1]
                    tr = results[name]["trickle"][-1]
                    print(
                        f"{model} round {rep + 1}  {name:<23} burst: max {b['max_ms']:5.0f} ms, longest gap "
                        f"{b['longest_gap_ms']:5.0f} ms | with a trickle: {tr['longest_gap_ms']:5.0f} ms "
                        f"| closed loop: p90 {c['p90_ms']:5.0f} ms, "
                        f"{c['slow']} > {SLOW_MS:g} ms, {c['rps']:.1f} req/s",
                        flush=True,
                    )
                    time.sleep(0.3)
        return results
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3, help="rounds (every variant, both loads, per round)")
    ap.add_argument("--concurrency", type=int, default=12, help="closed-loop clients")
    ap.add_argument("--duration", type=float, default=4.0, help="seconds of closed loop per run")
    ap.add_argument(
        "--model",
        choices=("sleep", "classifier", "both"),
        default="both",
        help=f"sleep: a Python model whose executions take {SLEEP_MS} ms; classifier: the course's (default: both)",
    )
    ap.add_argument("--out", type=Path, help="write every run as JSON here")
    args = ap.parse_args(argv)
    if not 1 <= args.reps <= 20 or not 1 <= args.concurrency <= 32 or not 0.5 <= args.duration <= 30:
        ap.error("--reps 1..20, --concurrency 1..32, --duration 0.5..30")

    models = ("sleep", "classifier") if args.model == "both" else (args.model,)
    everything = {m: measure(m, args) for m in models}
    machine = f"{platform.node()}, {os.cpu_count()} CPUs, {platform.machine()}, load average {os.getloadavg()[0]:.1f}"
    print(f"\nmeasured on {machine}; {args.reps} rounds; latencies in ms (p50/p90: mean over rounds;")
    print("max, gap: the largest of any round; queue: Triton's mean queue time; exec/infer: Triton's counts;")
    print(f"runs paused: runs with a gap of >= {GAP_MS:g} ms between two answers)")
    for model, results in everything.items():
        what = f"{SLEEP_MS} ms per execution" if model == "sleep" else "the course's classifier"
        print(f"\n{model} ({what}), burst of {BURST} at once (as chapter 9 sends it):")
        print(table(results, "burst"))
        print(
            f"\n{model}, the same burst, then one request every {TRICKLE_S * 1000:g} ms until its {BURST} are "
            "answered (figures for the 32; exec/infer count the trickle too):"
        )
        print(table(results, "trickle"))
        print(f"\n{model}, closed loop, {args.concurrency} clients, {args.duration:g} s:")
        print(table(results, "closed"))
    if args.out:
        args.out.write_text(
            json.dumps(
                {"machine": machine, "args": vars(args) | {"out": str(args.out)}, "results": everything},
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
