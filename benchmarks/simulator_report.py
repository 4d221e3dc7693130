"""The batching simulator checked against the real server: simulated vs measured throughput and p50.

The simulator is calibrated once on the live server (compute time per batch size, time outside the server at
concurrency 1); then, for each setting (max_queue_delay_microseconds x instances), the classifier is reloaded
with it and measured at each concurrency, and one open-loop rate is measured too. The report gives each
setting's measured and simulated figures and the median absolute error over all of them (targets: at most 15%
for throughput, 25% for p50). The original config is restored at the end (also on error or Ctrl-C).

    python benchmarks/simulator_report.py                      # starts the embedded server
    python benchmarks/simulator_report.py --duration 3 --concurrencies 1,4,8,16 --delays 0,2000,10000

Writes benchmarks/out/simulator.{md,json} (gitignored) and prints the Markdown.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _server import add_server_args, server_for  # noqa: E402

from triton_kitchen.core import override
from triton_kitchen.tools import (
    batch_runs,  # noqa: E402
    calibration,  # noqa: E402
)
from triton_kitchen.tools.bench import run_bench  # noqa: E402
from triton_kitchen.tools.load import LoadSpec  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"


def _ints(text: str) -> list[int]:
    return [int(p) for p in text.split(",") if p.strip()]


def _err(sim: float | None, real: float | None) -> float | None:
    return None if not sim or not real else abs(sim - real) / real


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_server_args(ap)
    ap.add_argument(
        "--duration", type=float, default=3.0, help="measured seconds per point (default: %(default)s)"
    )
    ap.add_argument("--concurrencies", default="1,4,8,16")
    ap.add_argument("--delays", default="0,2000,10000", help="max_queue_delay_microseconds values")
    ap.add_argument("--instances", default="1,2")
    ap.add_argument(
        "--rate",
        type=float,
        default=0.0,
        help="open-loop rate, req/s (default: 60%% of the measured throughput at delay 0, 1 instance, "
        "concurrency 8)",
    )
    args = ap.parse_args(argv)
    rows: list[dict] = []
    t0 = time.perf_counter()
    with server_for(args) as ep, override.overridden(ep) as original:
        inputs = batch_runs.classifier_inputs()
        cals = {}

        def calibrated(n: int):
            """The calibration with n instances loaded (instances sharing the machine slow each other)."""
            if n not in cals:
                override.load_model(
                    ep,
                    override.MODEL,
                    batch_runs.config_override(original, batch_runs.BatchingSettings(True, 0, [], n)),
                )
                time.sleep(batch_runs.SETTLE_S)
                cals[n] = calibration.calibrate(ep, override.MODEL, use_existing=False)
                print(f"calibration with {n} instance(s): {cals[n].to_json()}", file=sys.stderr)
            return cals[n]

        def measure(settings, concurrency=None, rate=None) -> None:
            cal = calibrated(settings.instance_count)
            spec = LoadSpec(
                override.MODEL,
                "grpc",
                concurrency or 8,
                args.duration,
                inputs=inputs,
                output_names=["logits"],
                warmup_s=1.0,
                request_rate=rate,
                server_side=True,
            )
            r = run_bench(ep, spec)
            sim = calibration.predict(cal, settings, concurrency=concurrency, rate_rps=rate)
            real_batch = r.server.total.mean_batch if r.server else None
            rows.append(
                {
                    "delay_us": settings.max_queue_delay_us,
                    "instances": settings.instance_count,
                    "load": f"c={concurrency}" if concurrency else f"{rate:.0f} req/s",
                    "measured_rps": r.throughput_rps,
                    "simulated_rps": sim["throughput_rps"],
                    "measured_p50_ms": r.latency_ms["p50"],
                    "simulated_p50_ms": sim["latency_ms"]["p50"],
                    "measured_batch": real_batch,
                    "simulated_batch": sim["mean_batch"],
                    "rps_error": _err(sim["throughput_rps"], r.throughput_rps),
                    "p50_error": _err(sim["latency_ms"]["p50"], r.latency_ms["p50"]),
                }
            )
            last = rows[-1]
            print(
                f"  {last['load']:>10} delay {last['delay_us']:>5} x{last['instances']}: "
                f"rps {last['measured_rps']:.1f} vs {last['simulated_rps']:.1f}, "
                f"p50 {last['measured_p50_ms']:.1f} vs {last['simulated_p50_ms']:.1f}",
                file=sys.stderr,
            )

        for n in _ints(args.instances):
            calibrated(n)
            for delay in _ints(args.delays):
                settings = batch_runs.BatchingSettings(True, delay, [], n)
                override.load_model(ep, override.MODEL, batch_runs.config_override(original, settings))
                time.sleep(batch_runs.SETTLE_S)
                for c in _ints(args.concurrencies):
                    measure(settings, concurrency=c)
        rate = args.rate or 0.6 * next(
            r["measured_rps"]
            for r in rows
            if r["delay_us"] == 0 and r["instances"] == 1 and r["load"] == "c=8"
        )
        settings = batch_runs.BatchingSettings(True, 0, [], 1)
        override.load_model(ep, override.MODEL, batch_runs.config_override(original, settings))
        time.sleep(batch_runs.SETTLE_S)
        measure(settings, rate=rate)
        embedded = ep.embedded
    rps_errors = [r["rps_error"] for r in rows if r["rps_error"] is not None]
    p50_errors = [r["p50_error"] for r in rows if r["p50_error"] is not None]
    summary = {
        "points": len(rows),
        "median_abs_error_throughput": statistics.median(rps_errors) if rps_errors else None,
        "median_abs_error_p50": statistics.median(p50_errors) if p50_errors else None,
        "calibration": {n: c.to_json() for n, c in cals.items()},
        "server": "embedded" if embedded else "remote",
        "seconds": time.perf_counter() - t0,
    }
    lines = [
        "# Batching simulator vs the real server",
        "",
        f"{summary['points']} points on the {summary['server']} server, {args.duration:g} s each. Calibration, "
        "measured in this run with each instance count loaded:",
        "",
        *[
            f"- {n} instance(s): compute per batch size "
            + ", ".join(f"{k}: {v:.1f} ms" for k, v in c.batch_ms.items())
            + f"; {c.outside_ms:.1f} ms outside the server (spread {c.outside_jitter:.0%}); parallelism assumed "
            f"{c.parallelism}, client slots assumed {c.client_parallelism}"
            for n, c in cals.items()
        ],
        "",
        "| load | delay µs | instances | measured req/s | simulated | error | measured p50 ms | simulated | "
        "error | measured batch | simulated |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    pct = lambda v: "-" if v is None else f"{v * 100:.0f}%"  # noqa: E731
    num = lambda v, f=".1f": "-" if v is None else format(v, f)  # noqa: E731
    for r in rows:
        lines.append(
            f"| {r['load']} | {r['delay_us']} | {r['instances']} | {num(r['measured_rps'])} | "
            f"{num(r['simulated_rps'])} | {pct(r['rps_error'])} | {num(r['measured_p50_ms'])} | "
            f"{num(r['simulated_p50_ms'])} | {pct(r['p50_error'])} | {num(r['measured_batch'], '.2f')} | "
            f"{num(r['simulated_batch'], '.2f')} |"
        )
    lines += [
        "",
        f"Median absolute error: throughput {pct(summary['median_abs_error_throughput'])} "
        f"(target ≤ 15%), p50 {pct(summary['median_abs_error_p50'])} (target ≤ 25%).",
    ]
    OUT.mkdir(exist_ok=True)
    (OUT / "simulator.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (OUT / "simulator.json").write_text(
        json.dumps({"summary": summary, "rows": rows}, indent=2), encoding="utf-8"
    )
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
