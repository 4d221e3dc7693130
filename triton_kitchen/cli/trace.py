"""``python -m triton_kitchen trace``: one request seen from inside an ensemble (:mod:`triton_kitchen.tools.inside`).

Registered in :mod:`triton_kitchen.cli.main`. ``--json`` prints exactly one JSON document on stdout, also when the
request fails or cannot be made (``"ok": false``, exit 1); every message goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import re
import sys

from triton_kitchen.core.endpoint import Endpoint, host_port, remote_headers
from triton_kitchen.tools.inside import (
    PROTOCOLS,
    InsideError,
    InsideReport,
    failure_json,
    look_inside,
    read_inputs,
)
from triton_kitchen.tools.server_stats import grpc_statistics_address


def add_trace_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "trace",
        help="send one request and report it from inside: steps that ran, were pruned or failed, their times",
        description="Send one request to MODEL and report, per ensemble step, whether it ran (or was pruned "
        "because no requested output needs it), its queue and compute time, and which step failed, with "
        "the evidence that decided it (Triton's trace where it is open to us, statistics deltas, the error "
        "text).",
    )
    p.add_argument("--model", required=True)
    p.add_argument(
        "--input",
        action="append",
        required=True,
        metavar="FILE",
        help="the input: a file's bytes for a BYTES input, a .npy file for a tensor; NAME=FILE when the model "
        "has several inputs (repeat --input)",
    )
    p.add_argument("--outputs", default=None, help="request only these outputs, e.g. top5_labels,top5_scores")
    p.add_argument("--protocol", choices=tuple(PROTOCOLS), default="http", help="default: %(default)s")
    p.add_argument(
        "--url",
        default="",
        help="host:port of a running server for --protocol (default: start the embedded server)",
    )
    p.add_argument(
        "--stats-url",
        default=None,
        help="with --protocol grpc and --url: the same server's HTTP host:port, for its configs and "
        "statistics (default: the port below --url's, then 8000; used only when its statistics are those of "
        "the --url server)",
    )
    p.add_argument(
        "--timeout", type=float, default=30.0, help="seconds for the request (default: %(default)s)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=cmd_trace)
    return p


def _endpoint(args: argparse.Namespace) -> Endpoint:
    url = host_port(args.url)
    if args.protocol == "http":
        return Endpoint.remote(http_url=url)
    # the HTTP side is found once the gRPC server has answered
    return Endpoint(http_url="", grpc_url=url, headers=remote_headers())


def _with_statistics(args: argparse.Namespace, endpoint: Endpoint) -> Endpoint:
    """Configs and statistics go over HTTP: with a gRPC --url, the server's own HTTP port, checked to be the
    same server (another server's statistics would say its steps never ran)."""
    if endpoint.http_url:
        return endpoint
    http, note = grpc_statistics_address(endpoint.grpc_url, args.stats_url)
    if note:
        raise InsideError("no_server", note)
    return Endpoint(http_url=http, grpc_url=endpoint.grpc_url, headers=endpoint.headers)


def _report(args: argparse.Namespace) -> InsideReport:
    from triton_kitchen.tools.protocols import ProtocolError, model_info

    server = None
    try:
        if args.url:
            endpoint = _endpoint(args)
        else:
            from triton_kitchen.core.server import EmbeddedServer, ServerStartError

            server = EmbeddedServer(http_port=0, grpc_port=0, metrics_port=0)
            print("starting the embedded tritonserver ...", file=sys.stderr, flush=True)
            try:
                endpoint = server.start(timeout=180)
            except ServerStartError as exc:
                raise InsideError("no_server", f"the embedded server did not start: {exc}") from exc
        wire = PROTOCOLS[args.protocol]
        address = endpoint.grpc_url if args.protocol == "grpc" else endpoint.http_url
        try:
            info = model_info(endpoint, args.model, wire, timeout=args.timeout)
        except ProtocolError as exc:
            if exc.code in ("connection", "timeout"):
                raise InsideError("no_server", f"no Triton server answers at {address} ({exc})") from exc
            triton = re.sub(r"^.*?HTTP \d+: ", "", str(exc))
            raise InsideError(
                "unknown_model", f"no model {args.model!r} at {address} (Triton: {triton})"
            ) from exc
        if info.decoupled:
            raise InsideError(
                "not_supported", f"{args.model} is decoupled (many answers per request): trace sends one request "
                "and reads one answer",
            )  # fmt: skip
        arrays = read_inputs(args.input, info)
        outputs = [o.strip() for o in args.outputs.split(",") if o.strip()] if args.outputs else None
        unknown = [o for o in outputs or [] if o not in {t.name for t in info.outputs}]
        if unknown:
            raise InsideError(
                "bad_input",
                f"{args.model} has no output {', '.join(unknown)}; its outputs: {', '.join(t.name for t in info.outputs)}",
            )
        return look_inside(
            _with_statistics(args, endpoint), args.model, arrays, outputs, args.protocol, args.timeout
        )
    finally:
        if server is not None:
            server.stop()


def _print(report: InsideReport) -> None:
    fmt = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
    verdict = (
        "ok"
        if report.ok
        else f"FAILED at {report.failed_step}"
        if report.failed_step
        else "FAILED (no step named)"
    )
    print(f"{report.model} over {report.protocol}: {verdict}")
    width = max([len(s.model) for s in report.steps] + [4])
    print(f"  {'step':<{width}}  version  ran   queue ms  compute ms")
    for s in report.steps:
        ran = "yes" if s.ran else ("pruned" if s.model in report.pruned and not s.needed else "no")
        version = "-" if s.version is None else str(s.version)
        print(f"  {s.model:<{width}}  {version:<7}  {ran:<6}{fmt(s.queue_ms):>8}  {fmt(s.compute_ms):>10}")
    for name, shape in report.outputs.items():
        print(f"  output {name} {shape}")
    ev = report.evidence
    print(f"  evidence: ran and times from the {ev.get('ran')}", end="")
    print(f"; failing step from {', '.join(ev['failed_step'])}" if ev.get("failed_step") else "")
    for note in ev.get("notes", []):
        print(f"  note: {note}")


def cmd_trace(args: argparse.Namespace) -> int:
    try:
        report = _report(args)
    except Exception as exc:  # noqa: BLE001 - bad input, a dead server, anything else: one line, not a traceback
        message = str(exc) if isinstance(exc, InsideError) else f"{type(exc).__name__}: {exc}"
        print(f"error: {message}", file=sys.stderr)
        if args.json:
            print(json.dumps(failure_json(message, args.model, args.protocol)))
        return 1
    if args.json:
        print(json.dumps(report.to_json()))
    else:
        _print(report)
    if not report.ok:
        print(f"error: {report.error}", file=sys.stderr)
    return 0 if report.ok else 1
