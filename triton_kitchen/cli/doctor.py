"""``python -m triton_kitchen doctor --url HOST[:PORT]``: the server, then where a request's time goes on it
(:mod:`triton_kitchen.tools.doctor`), as a report card in zh or en, or one JSON document with ``--json``.

Registered in :mod:`triton_kitchen.cli.main`. Exit 0 when at least one cell was measured, 1 when the server could
not be examined (not Triton, nothing answers, too slow, no model to measure): the card, or the JSON's ``error``,
says which. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys

from triton_kitchen.core.lessons import LANGS, t
from triton_kitchen.tools.doctor import FULL_BUDGET_S, QUICK_BUDGET_S, run_doctor
from triton_kitchen.tools.doctor_card import card


def cmd_doctor(args: argparse.Namespace) -> int:
    said: list[str] = []

    def progress(key: str, params: dict) -> None:  # each step once (it is heard again while a load runs)
        text = t(f"doctor.{key}", args.lang, **params)
        if not args.json and text not in said[-1:]:
            said.append(text)
            print(f"… {text}", file=sys.stderr, flush=True)

    report = run_doctor(
        args.url,
        grpc_url=args.grpc_url,
        model=args.model,
        quick=args.quick,
        budget_s=args.budget,
        timeout_s=args.timeout,
        progress=progress,
    )
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=1))
    else:
        print(card(report, args.lang))
    return 0 if report.get("ok") else 1


def add_doctor_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "doctor",
        help="examine a Triton server: version, extensions, models, and where a request's time goes",
        description="Read the server's version, extensions and models (and, on this host, whether it takes a "
        "client's shared memory), then time one model over each protocol the server offers at concurrency 1 "
        "and near the knee, each part on its own (client (de)serialisation, wire, the server's front end, "
        "queue and compute), cross-checked against perf_analyzer; ends with a report card.",
    )
    p.add_argument("--url", required=True, help="the server's HTTP host[:port] (Triton's default port: 8000)")
    p.add_argument(
        "--grpc-url",
        default=None,
        help="its gRPC host:port (default: the port above --url's, then 8001; used only when it is the same server)",
    )
    p.add_argument("--model", default=None, help="the model to measure (default: the course's classifier)")
    p.add_argument(
        "--lang", choices=LANGS, default="zh", help="the report card's language (default: %(default)s)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON document instead of the card")
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"a few seconds: short cells, concurrency 1 and 2, no perf_analyzer (budget {QUICK_BUDGET_S:g} s)",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=None,
        help=f"seconds for the whole run (default: {FULL_BUDGET_S:g}, or {QUICK_BUDGET_S:g} with --quick)",
    )
    p.add_argument(
        "--timeout", type=float, default=10.0, help="seconds for each request (default: %(default)s)"
    )
    p.set_defaults(func=cmd_doctor)
    return p
