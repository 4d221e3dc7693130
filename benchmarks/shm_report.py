"""Shared memory vs gRPC vs HTTP binary on one model, in one run: the ``bench`` CLI against one server, each
protocol at each concurrency. Prints a Markdown table; ``--out`` keeps every run's JSON.

    python benchmarks/shm_report.py                              # starts the embedded server
    python benchmarks/shm_report.py --concurrency 1,4 --duration 3 --out benchmarks/out/shm.json

Latency is the client's; "outside" is the mean latency minus Triton's own time per request (the client, the
socket, serialization). Bytes are per request, from bench's untimed counting pass: payload as encoded, wire
with headers and framing, and for the shared-memory protocols the tensor bytes that went through memory instead.
The machine's load average is printed with each run: on a shared 2-core machine it moves the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _server import ROOT, add_server_args, server_for  # noqa: E402

PROTOCOLS = ("http-binary", "grpc", "http-shm", "grpc-shm")


def bench(endpoint, model: str, protocol: str, concurrency: int, duration: float) -> dict:
    url = endpoint.grpc_url if protocol.startswith("grpc") else endpoint.http_url
    cmd = [sys.executable, "-m", "triton_kitchen", "bench", "--model", model, "--protocol", protocol,
           "--concurrency", str(concurrency), "--url", url, "--stats-url", endpoint.http_url,
           "--duration", str(duration), "--json"]  # fmt: skip
    load = os.getloadavg()[0]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    doc = json.loads(proc.stdout) if proc.stdout.strip() else {"protocol": protocol, "error": proc.stderr}
    doc["load_average"] = [round(load, 2), round(os.getloadavg()[0], 2)]
    return doc


def row(d: dict) -> str:
    wire = d.get("wire_per_request") or {}
    server = (d.get("server") or {}).get("request_ms")
    mean = d.get("mean_latency_ms")
    answered = d["request_bytes"] / wire["request_bytes"] if wire.get("request_bytes") else 0
    shm = round(d["shm_bytes"] / answered) if answered and "shm_bytes" in d else "-"
    lat = d.get("latency_ms") or {}
    f = lambda v: "-" if v is None else f"{v:.1f}"  # noqa: E731
    return (
        f"| {d['protocol']} | {d['concurrency']} | {f(d['throughput_rps'])} | {f(lat.get('p50'))} | "
        f"{f(lat.get('p90'))} | {f(mean)} | {f(server)} | {f(mean - server if mean and server else None)} | "
        f"{wire.get('request_bytes', '-')} / {wire.get('response_bytes', '-')} | "
        f"{round(wire['sent']) if wire else '-'} / {round(wire['received']) if wire else '-'} | {shm} | "
        f"{'yes' if d.get('stable') else 'no'} | {d['load_average'][0]}–{d['load_average'][1]} |"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_server_args(ap)
    ap.add_argument("--model", default="ensemble_pipeline")
    ap.add_argument("--concurrency", default="1,4", help="comma-separated (default: %(default)s)")
    ap.add_argument("--duration", type=float, default=3.0, help="seconds per window (default: %(default)s)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    runs = []
    with server_for(args) as endpoint:
        for c in [int(x) for x in args.concurrency.split(",")]:
            for p in PROTOCOLS:
                runs.append(bench(endpoint, args.model, p, c, args.duration))
    print(f"{args.model}, one server, {time.strftime('%F %T')}\n")
    print("| protocol | c | req/s | p50 ms | p90 ms | mean ms | in server ms | outside ms | payload sent / received "
          "B | wire sent / received B | shm B | stable | load |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for d in runs:
        print(row(d) if "error" not in d else f"| {d['protocol']} | error: {d['error'].strip()[:80]} |")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(runs, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
