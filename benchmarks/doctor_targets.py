"""The doctor's own targets, measured: full ``doctor`` runs on one server, each cell's unexplained share and its
throughput against perf_analyzer, with the load average before and after each run.

    python benchmarks/doctor_targets.py                                # starts the embedded server
    TRITON_KITCHEN_KEY=... python benchmarks/doctor_targets.py --url 127.0.0.1:18700 --grpc-url 127.0.0.1:18701
    python benchmarks/doctor_targets.py --runs 2 --out benchmarks/out/doctor.json
    python benchmarks/doctor_targets.py --paired --window 2 10 --pairs 6   # the throughput check alone, paired
    python benchmarks/doctor_targets.py --bytes                            # what each tool sends

Targets: "unexplained" at most 10 % of the client's end-to-end time in at least 95 % of the cells; throughput within
10 % of perf_analyzer. Without the server's trace API (a ``serve`` whose key is not given) the wire comes from a
loopback echo and the server's front end is counted as unexplained. On a shared 2-core machine the load moves every
figure: read them with the load average printed beside them.

``--paired``: the throughput comparison alone, as the doctor makes it, in pairs: the doctor's engine
(:func:`run_bench`, closed loop, the request encoded once) for ``--window`` seconds, then perf_analyzer for the same
seconds (three windows of a third), same model, protocol, concurrency and input; the order swaps every pair (ABBA,
so a drift of the machine's load falls on both alike). Per pair the ratio doctor/perf_analyzer and the 1-minute
load average; per (protocol, concurrency, window) the median ratio and its spread (min..max). ``--control also`` adds
perf_analyzer-against-perf_analyzer pairs (``only``: just those): the spread two identical runs show on this machine at this load.

``--bytes``: what each tool sends, through a counting proxy (``protocols.wire.CountingProxy``): bytes per request
each way and connections opened, the requests counted by the server's own statistics, for the doctor's engine and
perf_analyzer at the same protocol and concurrency (a few seconds each).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _server import add_server_args, server_for  # noqa: E402

from triton_kitchen.core import catalog  # noqa: E402
from triton_kitchen.core.endpoint import RESTRICTED_HEADER  # noqa: E402
from triton_kitchen.tools.bench import run_bench  # noqa: E402
from triton_kitchen.tools.doctor import run_doctor  # noqa: E402
from triton_kitchen.tools.load import LoadSpec  # noqa: E402
from triton_kitchen.tools.perf_analyzer import run_perf_analyzer  # noqa: E402
from triton_kitchen.tools.protocols import sample_inputs  # noqa: E402


def _doctor_rps(endpoint, spec: LoadSpec) -> float:
    r = run_bench(endpoint, spec)
    return (r.requests - r.errors) / r.window_s if r.window_s else 0.0


def _pa_rps(endpoint, spec: LoadSpec, max_batch_size: int) -> float:
    p = run_perf_analyzer(endpoint, spec.model, spec.protocol, spec.concurrency, spec.inputs or {},
                          max_batch_size, window_ms=max(500, int(spec.duration_s * 1000 / 3)),
                          timeout_s=max(30.0, 10 * spec.duration_s))  # fmt: skip
    return p.throughput_rps


def paired(endpoint, model: str, protocol: str, concurrency: int, window_s: float, pairs: int,
           control: bool) -> dict:  # fmt: skip
    """``pairs`` alternating (doctor, perf_analyzer) measurements of ``window_s`` each; see the module's doc."""
    info, inputs = sample_inputs(endpoint, model, protocol)
    spec = LoadSpec(model, protocol, concurrency, window_s, inputs=inputs,
                    output_names=[o.name for o in info.outputs], warmup_s=0.3)  # fmt: skip

    def first() -> float:  # the side compared with perf_analyzer: the doctor's engine, or perf_analyzer again
        return _pa_rps(endpoint, spec, info.max_batch_size) if control else _doctor_rps(endpoint, spec)

    rows = []
    for i in range(pairs):
        load = os.getloadavg()[0]
        a_then_b = i % 2 == 0
        if a_then_b:
            a = first()
            b = _pa_rps(endpoint, spec, info.max_batch_size)
        else:
            b = _pa_rps(endpoint, spec, info.max_batch_size)
            a = first()
        rows.append({"a_rps": a, "pa_rps": b, "ratio": a / b if b else None, "load": load,
                     "load_after": os.getloadavg()[0], "order": "a,pa" if a_then_b else "pa,a"})  # fmt: skip
        print(f"    pair {i + 1}: {'pa' if control else 'doctor'} {a:6.1f}  perf_analyzer {b:6.1f} req/s  "
              f"ratio {a / b if b else float('nan'):.3f}  load {load:.1f}", flush=True)  # fmt: skip
    ratios = sorted(r["ratio"] for r in rows if r["ratio"])
    return {"protocol": protocol, "concurrency": concurrency, "window_s": window_s, "control": control,
            "pairs": rows, "median_ratio": statistics.median(ratios) if ratios else None,
            "min_ratio": ratios[0] if ratios else None, "max_ratio": ratios[-1] if ratios else None,
            "within_10": sum(1 for x in ratios if abs(x - 1) <= 0.10)}  # fmt: skip


def main_bytes(args, endpoint) -> list[dict]:
    """Bytes per request and connections of each tool; see the module's doc."""
    from triton_kitchen.core import kserve
    from triton_kitchen.core.endpoint import Endpoint
    from triton_kitchen.tools.protocols.wire import CountingProxy

    model = args.model or catalog.CLASSIFIER

    def count() -> int:
        stats = kserve.statistics(endpoint, model, timeout=10)
        return sum(
            int(m["inference_stats"]["success"]["count"]) for m in stats["model_stats"] if m["name"] == model
        )

    out = []
    for protocol in args.protocols:
        info, inputs = sample_inputs(endpoint, model, protocol)
        spec = LoadSpec(model, protocol, 1, 3.0, inputs=inputs, output_names=[o.name for o in info.outputs],
                        warmup_s=0.3, server_side=False)  # fmt: skip
        for c in args.concurrency:
            for who in ("doctor", "perf_analyzer"):
                proxy = CountingProxy(endpoint.grpc_url if protocol == "grpc" else endpoint.http_url).start()
                through = Endpoint(http_url=endpoint.http_url if protocol == "grpc" else proxy.address,
                                   grpc_url=proxy.address if protocol == "grpc" else endpoint.grpc_url,
                                   embedded=False, headers=dict(endpoint.headers))  # fmt: skip
                before = count()
                try:
                    if who == "doctor":
                        run_bench(through, replace(spec, concurrency=c))
                    else:
                        run_perf_analyzer(
                            through, model, protocol, c, inputs, info.max_batch_size, window_ms=1000
                        )
                    time.sleep(1.0)  # Triton counts a request just after its answer
                    n = max(1, count() - before)
                    sent, received = proxy.snapshot()
                    row = {"protocol": protocol, "concurrency": c, "tool": who, "requests": n,
                           "out_per_request": sent / n, "back_per_request": received / n,
                           "connections": proxy.connections, "load": os.getloadavg()[0]}  # fmt: skip
                finally:
                    proxy.stop()
                out.append(row)
                print(f"{protocol:12} x{c} {who:14} {n:5d} requests; bytes per request out {sent / n:9.0f}, back "
                      f"{received / n:7.0f}; {proxy.connections} connections; load {row['load']:.1f}", flush=True)  # fmt: skip
    return out


def main_paired(args, endpoint) -> list[dict]:
    out = []
    for window in args.window:
        for protocol in args.protocols:
            for c in args.concurrency:
                for control in {"no": [False], "also": [False, True], "only": [True]}[args.control]:
                    what = "perf_analyzer/perf_analyzer" if control else "doctor/perf_analyzer"
                    print(f"{protocol} x{c}, {window:g} s windows, {what}:", flush=True)
                    res = paired(endpoint, args.model or catalog.CLASSIFIER, protocol, c, window, args.pairs,
                                 control)  # fmt: skip
                    out.append(res)
                    print(f"  median ratio {res['median_ratio']:.3f} (min {res['min_ratio']:.3f}, max "
                          f"{res['max_ratio']:.3f}); within 10 %: {res['within_10']}/{len(res['pairs'])}",
                          flush=True)  # fmt: skip
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_server_args(ap)
    ap.add_argument("--model", default=None)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None, help="write every run's JSON report here")
    ap.add_argument("--paired", action="store_true", help="only the throughput comparison, in pairs")
    ap.add_argument("--bytes", action="store_true", help="only what each tool sends: bytes and connections")
    ap.add_argument("--window", type=float, nargs="+", default=[2.0, 10.0], help="--paired: seconds per side")
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--protocols", nargs="+", default=["http-binary", "grpc"])
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--control", choices=["no", "also", "only"], default="no",
                    help="--paired: perf_analyzer against itself too (also), or only that (only)")  # fmt: skip
    args = ap.parse_args()
    reports = []
    with server_for(args) as endpoint:
        key = endpoint.headers.get(RESTRICTED_HEADER)
        if key and not os.environ.get(
            "TRITON_KITCHEN_KEY"
        ):  # the embedded server: its trace API opens to its key
            os.environ["TRITON_KITCHEN_KEY"] = key
        if args.bytes:
            reports = main_bytes(args, endpoint)
        elif args.paired:
            reports = main_paired(args, endpoint)
        for i in range(0 if args.paired or args.bytes else args.runs):
            report = run_doctor(endpoint.http_url, endpoint.grpc_url, model=args.model)
            reports.append(report)
            goal = report["targets"]
            print(
                f"run {i + 1}: {'embedded' if key else endpoint.http_url}, wire from {report.get('wire_source')}, "
                f"load {report['load_average'][0]:.1f} -> {report['load_average_end'][0]:.1f}, "
                f"{report['elapsed_s']:.0f} s; unexplained <= 10 % in {goal['cells_unexplained_within']}/"
                f"{goal['cells_measured']} cells; perf_analyzer within 10 % in {goal['perf_analyzer_within']}/"
                f"{goal['perf_analyzer_checked']} (outside but noisy: {goal.get('perf_analyzer_noisy', 0)})"
            )
            for cell in report["cells"]:
                share, diff = cell["unexplained_share"], cell["perf_analyzer_difference"]
                print(
                    f"  {cell['protocol']:12} x{cell['concurrency']:<2} e2e "
                    f"{cell['e2e_ms'] or 0:8.1f} ms  {cell['throughput_rps'] or 0:6.1f} req/s  unexplained "
                    + (f"{100 * share:5.1f} %" if share is not None else "    —  ")
                    + ("" if diff is None else f"  perf_analyzer {100 * diff:+5.1f} %")
                    + "".join(f" {100 * (e / p - 1):+.0f}" for e, p in cell.get("pa_rounds", []) if p)
                    + ("  (slices spread > 10 %: noisy)" if cell.get("perf_analyzer_noisy") else "")
                    + f"  stats {cell['stats_check']}"
                )
            if report.get("error"):
                print(f"  error: {report['error']}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(reports, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
