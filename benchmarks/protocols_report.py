"""HTTP-JSON vs HTTP-binary vs gRPC, measured: throughput and latency at concurrency 1, 4 and 16
for ensemble_pipeline (FP32 tensor in) and image_classifier (JPEG in), payload and wire bytes per
call, and a perf_analyzer cross-check. Writes under benchmarks/out/ (gitignored):

    protocols.md      the table (Markdown)
    protocols.csv     one row per (model, protocol, concurrency)
    protocols.json    everything, cross-check included
    protocols.html    plotly: throughput vs p99 curves, latency box plots, bytes per call

    python benchmarks/protocols_report.py                       # starts the embedded server
    python benchmarks/protocols_report.py --url localhost:8000 --grpc-url localhost:8001
    python benchmarks/protocols_report.py --duration 5 --cross-check all

Engine: triton_kitchen.tools.bench (Python client, one connection per worker). perf_analyzer (C++) is the
check, alternating with the engine on the same model, protocol, concurrency and input.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _server import add_server_args, server_for  # noqa: E402

from triton_kitchen.tools import bench, bench_figures, load, perf_analyzer, protocols  # noqa: E402

MODELS = ("ensemble_pipeline", "image_classifier")
CONCURRENCIES = (1, 4, 16)
OUT = Path(__file__).resolve().parent / "out"


def fmt(v, digits=1) -> str:
    return "—" if v is None else f"{v:.{digits}f}"


def markdown(rows: list[dict], bytes_rows: list[dict], checks: list[dict], meta: dict) -> str:
    lines = [
        "# HTTP-JSON vs HTTP-binary vs gRPC",
        "",
        f"Measured {meta['when']} on {meta['server']}, {meta['duration_s']:g} s per cell after "
        f"{meta['warmup_s']:g} s warm-up. Engine: {bench.ENGINE}; closed loop, one connection per client.",
        "",
        "| model | protocol | concurrency | requests | errors | throughput (req/s) | p50 ms | p90 ms | p99 ms |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['protocol']} | {r['concurrency']} | {r['requests']} | {r['errors']} | "
            f"{fmt(r['throughput_rps'])} | {fmt(r['latency_p50_ms'])} | {fmt(r['latency_p90_ms'])} | "
            f"{fmt(r['latency_p99_ms'])} |"
        )
    lines += [
        "",
        "## Bytes per call (one request, connection already open)",
        "",
        "| model | protocol | request payload | response payload | wire sent | wire received | wire / payload |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for b in bytes_rows:
        lines.append(
            f"| {b['model']} | {b['protocol']} | {b['request_bytes']:,} | {b['response_bytes']:,} | "
            f"{b['wire_sent_per_call']:,.0f} | {b['wire_received_per_call']:,.0f} | {b['wire_overhead']:.4f} |"
        )
    for model, info in meta["inflation"].items():
        lines.append(
            f"\nJSON inflation, {model}: request x{fmt(info['request'], 2)}, response x{fmt(info['response'], 2)}"
            f"{' (the JPEG goes binary: JSON cannot carry it)' if info['binary_inputs'] else ''}."
        )
    tj = meta["tensor_vs_jpeg"]
    lines.append(
        f"\nThe FP32 tensor is {tj['tensor_bytes']:,} bytes; the JPEG it comes from {tj['jpeg_bytes']:,} "
        f"bytes (x{tj['ratio']:.1f}): preprocessing on the server saves that bandwidth."
    )
    if checks:
        lines += [
            "",
            "## perf_analyzer cross-check (engine vs check, same settings, alternating slices)",
            "",
            "| model | protocol | concurrency | engine req/s | perf_analyzer req/s | difference | within 10% |",
            "| --- | --- | ---: | ---: | ---: | ---: | --- |",
        ]
        for c in checks:
            if "error" in c:
                lines.append(
                    f"| {c['model']} | {c['protocol']} | {c['concurrency']} | — | — | {c['error']} | — |"
                )
                continue
            lines.append(
                f"| {c['model']} | {c['protocol']} | {c['concurrency']} | {c['engine_rps']:.1f} | "
                f"{c['perf_analyzer_rps']:.1f} | {c['difference'] * 100:+.1f}% | {'yes' if c['agree'] else 'NO'} |"
            )
        lines += [
            "",
            "## The server's own split of a request (ms), as each tool read it",
            "",
            "The engine reads Triton's statistics API over its windows; perf_analyzer prints the same split from its",
            "own. Same server, same settings, alternating slices.",
            "",
            "| model | protocol | concurrency | tool | queue | compute input | compute infer | compute output |",
            "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: |",
        ]
        for c in checks:
            for tool, split in (c.get("server") or {}).items():
                cells = " | ".join(
                    "—" if split.get(k) is None else f"{split[k]:.2f}"
                    for k in ("queue_ms", "compute_input_ms", "compute_infer_ms", "compute_output_ms")
                )
                lines.append(f"| {c['model']} | {c['protocol']} | {c['concurrency']} | {tool} | {cells} |")
    return "\n".join(lines) + "\n"


def figures(results: list[bench.BenchResult], bytes_rows: list[dict]):
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    figs = []
    curves = make_subplots(rows=1, cols=len(MODELS), subplot_titles=MODELS)
    box = make_subplots(rows=1, cols=len(MODELS), subplot_titles=MODELS)
    colors = bench_figures.PROTOCOL_COLORS
    for col, model in enumerate(MODELS, start=1):
        for p in protocols.PROTOCOLS:
            rs = [r for r in results if r.model == model and r.protocol == p]
            curves.add_trace(
                bench_figures.sweep_trace(rs, p, p, legendgroup=p, showlegend=col == 1), row=1, col=col
            )
            for r in rs:
                box.add_trace(
                    go.Box(
                        y=r.latencies_ms,
                        name=f"{p} c={r.concurrency}",
                        marker_color=colors[p],
                        showlegend=False,
                        boxpoints=False,
                    ),
                    row=1,
                    col=col,
                )
    curves.update_xaxes(title_text="throughput (req/s)")
    curves.update_yaxes(title_text="p99 latency (ms)", type="log")
    curves.update_layout(title="Throughput vs p99, per protocol (concurrency 1, 4, 16)", height=480)
    box.update_yaxes(title_text="latency (ms)", type="log")
    box.update_layout(title="Latency distribution", height=480)
    figs += [curves, box]
    bars = make_subplots(rows=1, cols=len(MODELS), subplot_titles=MODELS)
    for col, model in enumerate(MODELS, start=1):
        bs = [b for b in bytes_rows if b["model"] == model]
        for name, key in (
            ("request payload", "request_bytes"),
            ("wire sent", "wire_sent_per_call"),
            ("response payload", "response_bytes"),
            ("wire received", "wire_received_per_call"),
        ):
            bars.add_trace(
                go.Bar(
                    x=[b["protocol"] for b in bs],
                    y=[b[key] for b in bs],
                    name=name,
                    legendgroup=name,
                    showlegend=col == 1,
                ),
                row=1,
                col=col,
            )
    bars.update_yaxes(title_text="bytes per call", type="log")
    bars.update_layout(title="Payload vs wire bytes per call", barmode="group", height=480)
    figs.append(bars)
    return figs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_server_args(ap)
    ap.add_argument("--duration", type=float, default=3.0, help="seconds per cell (default: %(default)s)")
    ap.add_argument("--warmup", type=float, default=0.5)
    ap.add_argument(
        "--cross-check",
        choices=("none", "one", "all"),
        default="one",
        help="perf_analyzer: none, one (grpc and http-binary at concurrency 4, each model), "
        "or all (every non-JSON cell)",
    )
    ap.add_argument(
        "--check-duration", type=float, default=16.0, help="seconds of each engine per cross-check"
    )
    ap.add_argument(
        "--check-rounds",
        type=int,
        default=8,
        help="alternating slices per cross-check (a shared machine is noisy; default: %(default)s)",
    )
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)

    meta = {
        "when": time.strftime("%F %T"),
        "server": args.url or "embedded server (CPU)",
        "duration_s": args.duration,
        "warmup_s": args.warmup,
        "inflation": {},
    }
    results: list[bench.BenchResult] = []
    bytes_rows: list[dict] = []
    checks: list[dict] = []
    with server_for(args) as endpoint:
        jpeg = protocols.sample_jpeg()
        meta["tensor_vs_jpeg"] = protocols.tensor_vs_jpeg(jpeg)
        for model in MODELS:
            info, arrays = protocols.sample_inputs(endpoint, model)
            outputs = [o.name for o in info.outputs]
            comparison = protocols.compare_protocols(endpoint, model, arrays, calls=3)
            if not comparison.same_result:
                print(f"warning: {model}: results differ for {comparison.disagreements}", file=sys.stderr)
            bytes_rows += [r.to_dict() for r in comparison.rows]
            meta["inflation"][model] = {
                "request": comparison.json_inflation,
                "response": comparison.json_response_inflation,
                "binary_inputs": comparison.row("http-json").binary_inputs,
                "same_result": comparison.same_result,
            }
            for p in protocols.PROTOCOLS:
                for c in CONCURRENCIES:
                    spec = load.LoadSpec(
                        model,
                        p,
                        c,
                        args.duration,
                        inputs=arrays,
                        output_names=outputs,
                        warmup_s=args.warmup,
                        max_requests=None,
                    )
                    r = bench.run_bench(endpoint, spec)
                    results.append(r)
                    print(
                        f"{model:18s} {p:11s} c={c:<2d} {r.throughput_rps:7.1f} req/s  "
                        f"p99 {fmt(r.latency_ms['p99'])} ms  errors {r.errors}",
                        file=sys.stderr,
                        flush=True,
                    )
            cells = (
                [(p, c) for p in ("http-binary", "grpc") for c in CONCURRENCIES]
                if args.cross_check == "all"
                else [(p, 4) for p in ("http-binary", "grpc")]
                if args.cross_check == "one"
                else []
            )
            for p, c in cells:
                try:
                    check = perf_analyzer.cross_check(
                        endpoint, load.LoadSpec(model, p, c, args.check_duration), rounds=args.check_rounds
                    )
                except perf_analyzer.PerfAnalyzerError as exc:
                    check = {
                        "model": model,
                        "protocol": p,
                        "concurrency": c,
                        "error": str(exc).splitlines()[0],
                    }
                checks.append(check)
                if "error" not in check:
                    print(
                        f"cross-check {model} {p} c={c}: engine {check['engine_rps']:.1f}, perf_analyzer "
                        f"{check['perf_analyzer_rps']:.1f} ({check['difference'] * 100:+.1f}%)",
                        file=sys.stderr,
                    )

    args.out.mkdir(parents=True, exist_ok=True)
    rows = [r.to_row() for r in results]
    (args.out / "protocols.csv").write_text(bench.rows_to_csv(rows))
    (args.out / "protocols.json").write_text(
        json.dumps(
            {"meta": meta, "results": rows, "bytes": bytes_rows, "cross_check": checks}, indent=2, default=str
        )
    )
    md = markdown(rows, bytes_rows, checks, meta)
    (args.out / "protocols.md").write_text(md)
    figs = figures(results, bytes_rows)
    html = "".join(f.to_html(full_html=False, include_plotlyjs=(i == 0)) for i, f in enumerate(figs))
    (args.out / "protocols.html").write_text(
        f"<html><head><meta charset='utf-8'><title>Protocols</title></head><body>{html}</body></html>"
    )
    print(md)
    print(f"wrote {args.out}/protocols.{{md,csv,json,html}}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
