"""The doctor's own targets, measured: full ``doctor`` runs on one server, each cell's unexplained share and its
throughput against perf_analyzer, with the load average before and after each run.

    python benchmarks/doctor_targets.py                                # starts the embedded server
    TRITON_KITCHEN_KEY=... python benchmarks/doctor_targets.py --url 127.0.0.1:18700 --grpc-url 127.0.0.1:18701
    python benchmarks/doctor_targets.py --runs 2 --out benchmarks/out/doctor.json

Targets: "unexplained" at most 10 % of the client's end-to-end time in at least 95 % of the cells; throughput within
10 % of perf_analyzer. Without the server's trace API (a ``serve`` whose key is not given) the wire comes from a
loopback echo and the server's front end is counted as unexplained. On a shared 2-core machine the load moves every
figure: read them with the load average printed beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _server import add_server_args, server_for  # noqa: E402

from triton_kitchen.core.endpoint import RESTRICTED_HEADER  # noqa: E402
from triton_kitchen.tools.doctor import run_doctor  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_server_args(ap)
    ap.add_argument("--model", default=None)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None, help="write every run's JSON report here")
    args = ap.parse_args()
    reports = []
    with server_for(args) as endpoint:
        key = endpoint.headers.get(RESTRICTED_HEADER)
        if key and not os.environ.get(
            "TRITON_KITCHEN_KEY"
        ):  # the embedded server: its trace API opens to its key
            os.environ["TRITON_KITCHEN_KEY"] = key
        for i in range(args.runs):
            report = run_doctor(endpoint.http_url, endpoint.grpc_url, model=args.model)
            reports.append(report)
            goal = report["targets"]
            print(
                f"run {i + 1}: {'embedded' if key else endpoint.http_url}, wire from {report.get('wire_source')}, "
                f"load {report['load_average'][0]:.1f} -> {report['load_average_end'][0]:.1f}, "
                f"{report['elapsed_s']:.0f} s; unexplained <= 10 % in {goal['cells_unexplained_within']}/"
                f"{goal['cells_measured']} cells; perf_analyzer within 10 % in {goal['perf_analyzer_within']}/"
                f"{goal['perf_analyzer_checked']}"
            )
            for cell in report["cells"]:
                share, diff = cell["unexplained_share"], cell["perf_analyzer_difference"]
                print(
                    f"  {cell['protocol']:12} x{cell['concurrency']:<2} e2e "
                    f"{cell['e2e_ms'] or 0:8.1f} ms  {cell['throughput_rps'] or 0:6.1f} req/s  unexplained "
                    + (f"{100 * share:5.1f} %" if share is not None else "    —  ")
                    + ("" if diff is None else f"  perf_analyzer {100 * diff:+5.1f} %")
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
