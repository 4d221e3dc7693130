"""Dynamic batching, measured: the classifier under the same closed-loop load (concurrency 8 by
default) with dynamic batching off, then on, as a throughput ratio; plus batch-size histograms from
Triton's statistics API and p99 latency. Each setting reloads ``classifier`` with a config override
through the repository API; the original config is restored at the end (also on error or Ctrl-C).

    python benchmarks/batching_report.py                       # starts the embedded server
    python benchmarks/batching_report.py --duration 5 --repeats 3 --delays 0,2000,10000
    python benchmarks/batching_report.py --preferred 4,8         # with preferred batch sizes (default: none)
    python benchmarks/batching_report.py --url localhost:8000 --grpc-url localhost:8001   # repository API open

Writes benchmarks/out/batching.{md,json,html} (gitignored) and prints the Markdown.
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

from triton_kitchen.labs import batching  # noqa: E402
from triton_kitchen.tools import batch_runs

OUT = Path(__file__).resolve().parent / "out"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_server_args(ap)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--duration", type=float, default=5.0, help="seconds per setting (default: %(default)s)")
    ap.add_argument(
        "--repeats", type=int, default=3, help="off/on pairs; the ratio is the median (default: %(default)s)"
    )
    ap.add_argument(
        "--delays", default="2000", help="max_queue_delay_microseconds values to try, comma-separated"
    )
    ap.add_argument(
        "--preferred",
        default="",
        help="preferred_batch_size values, comma-separated (default: none, "
        "as Triton advises unless a backend runs some batch sizes much faster than others)",
    )
    ap.add_argument("--instances", type=int, default=1)
    ap.add_argument("--protocol", default="grpc", choices=("http-binary", "grpc"))
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)

    preferred = [int(x) for x in args.preferred.split(",") if x.strip()]
    runs = []
    with server_for(args) as endpoint:
        for delay in (int(x) for x in args.delays.split(",")):
            settings = batch_runs.BatchingSettings(True, delay, preferred, args.instances)
            for i in range(args.repeats):
                r = batching.compare_batching(
                    endpoint, settings, args.concurrency, args.duration, args.protocol
                )
                runs.append(
                    {
                        "delay_us": delay,
                        "repeat": i,
                        "ratio": r["throughput_ratio"],
                        "p99_ratio": r["p99_ratio"],
                        "off": r["off"].to_dict(),
                        "on": r["on"].to_dict(),
                    }
                )
                print(
                    f"delay {delay} us, pair {i + 1}: off {r['off'].throughput_rps:.1f} req/s, "
                    f"on {r['on'].throughput_rps:.1f} req/s, ratio {r['throughput_ratio']:.2f}",
                    file=sys.stderr,
                )

    lines = [
        f"# Dynamic batching at concurrency {args.concurrency}",
        "",
        f"Measured {time.strftime('%F %T')} on {'the embedded server (CPU)' if endpoint.embedded else args.url}: classifier "
        f"(EfficientNet-Lite0, max_batch_size 8, {args.instances} instance(s), preferred batch sizes "
        f"{args.preferred or 'none'}), {args.protocol}, "
        f"{args.duration:g} s per setting, batching off then on, {args.repeats} pair(s) per setting.",
        "",
        "| max_queue_delay µs | pair | off req/s | on req/s | ratio on/off | off p99 ms | on p99 ms | mean batch (on) | batch histogram (on) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in runs:
        hist = ", ".join(f"{k}:{v}" for k, v in r["on"]["batch_histogram"].items())
        lines.append(
            f"| {r['delay_us']} | {r['repeat'] + 1} | {r['off']['throughput_rps']:.1f} | {r['on']['throughput_rps']:.1f} | "
            f"{r['ratio']:.2f} | {r['off']['latency_ms']['p99']:.1f} | {r['on']['latency_ms']['p99']:.1f} | "
            f"{r['on']['mean_batch_size']:.2f} | {hist} |"
        )
    summary = {}
    for delay in sorted({r["delay_us"] for r in runs}):
        ratios = [r["ratio"] for r in runs if r["delay_us"] == delay and r["ratio"]]
        summary[delay] = statistics.median(ratios) if ratios else None
        lines.append(
            f"\nThroughput gain of dynamic batching (delay {delay} µs): median ratio **{summary[delay]:.2f}x** "
            f"over {len(ratios)} pair(s) (each pair measured back to back)."
        )
    md = "\n".join(lines) + "\n"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "batching.md").write_text(md)
    (args.out / "batching.json").write_text(json.dumps({"runs": runs, "median_ratio": summary}, indent=2))
    try:
        import plotly.graph_objects as go

        fig = go.Figure()
        last = runs[-1]
        for name in ("off", "on"):
            h = last[name]["batch_histogram"]
            fig.add_trace(go.Bar(x=[int(k) for k in h], y=list(h.values()), name=f"batching {name}"))
        fig.update_layout(
            title="Executions per batch size (statistics API batch_stats)",
            barmode="group",
            xaxis_title="batch size",
            yaxis_title="executions",
        )
        (args.out / "batching.html").write_text(fig.to_html(include_plotlyjs=True))
    except ImportError:
        pass
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
