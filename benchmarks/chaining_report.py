"""Ensemble vs client-side chaining (and the other flow experiments), measured live; prints JSON.

    python benchmarks/chaining_report.py                     # starts the embedded server
    python benchmarks/chaining_report.py --url localhost:8000 --grpc-url localhost:8001   # a running server
    python benchmarks/chaining_report.py --all --repeats 10 --out benchmarks/out/flow.json

Every experiment is bounded by --budget seconds (plus one request). Parallel-branch overlap and the
batching queue wait read Triton's trace file, so they need the embedded server.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _server import add_server_args, server_for  # noqa: E402

from triton_kitchen.core.samples import SAMPLE_PHOTOS, sample_jpeg  # noqa: E402
from triton_kitchen.labs import experiments  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_server_args(ap)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--budget", type=float, default=20.0, help="seconds per experiment")
    ap.add_argument("--all", action="store_true", help="also parallel branches, cascade and batching queue")
    ap.add_argument("--photo", default="chelsea", choices=list(SAMPLE_PHOTOS))
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)

    image = sample_jpeg(args.photo)
    report: dict = {
        "server": args.url or "embedded",
        "photo": args.photo,
        "when": time.strftime("%F %T"),
    }
    with server_for(args) as endpoint:
        report["chaining"] = experiments.chaining(
            endpoint, image, repeats=args.repeats, budget_s=args.budget
        ).to_dict()
        if args.all:
            photos = {n: sample_jpeg(n) for n in SAMPLE_PHOTOS}
            report["cascade"] = [
                r.to_dict()
                for r in experiments.cascade(
                    endpoint, photos, repeats=max(1, args.repeats // 3), budget_s=args.budget
                )
            ]
            if endpoint.embedded:
                report["parallel"] = experiments.parallel_branches(
                    endpoint, image, repeats=args.repeats, budget_s=args.budget
                ).to_dict()
                report["batching_queue"] = [
                    r.to_dict() for r in experiments.batching_queue(endpoint, image, repeats=args.repeats)
                ]
    text = json.dumps(report, indent=1)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
