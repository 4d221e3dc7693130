"""Command line: ``python -m triton_kitchen serve|check|dag|bench``."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from triton_kitchen.bench import add_bench_parser
from triton_kitchen.cli_check import add_check_parser, add_dag_parser
from triton_kitchen.server import DEFAULT_PORTS, DEFAULT_REPOSITORY, EmbeddedServer, ServerStartError


def cmd_serve(args: argparse.Namespace) -> int:
    server = EmbeddedServer(
        repo=args.repo,
        http_port=args.http_port,
        grpc_port=args.grpc_port,
        metrics_port=args.metrics_port,
        host=args.host,
    )
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(f"starting tritonserver on {server.repo} ...", flush=True)
    try:
        server.start(timeout=args.timeout)
    except ServerStartError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for note in server.port_notes:
        print(f"note: {note}", flush=True)
    print(
        f"ready in {server.startup_seconds:.1f} s: HTTP {server.http_url}  gRPC {server.grpc_url}  "
        f"metrics {server.metrics_url}\nlog: {server.log_file}\ntrace file: {server.trace_file}\n"
        "Ctrl-C stops the server.",
        flush=True,
    )
    try:
        while not stop.wait(0.5):
            if not server.running:
                print(f"error: tritonserver exited:\n{server.log_tail(20)}", file=sys.stderr)
                return 1
    finally:
        print("stopping tritonserver ...", flush=True)
        server.stop()
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m triton_kitchen", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the embedded Triton server on the model repository")
    serve.add_argument("--repo", default=str(DEFAULT_REPOSITORY), help="model repository (default: %(default)s)")
    serve.add_argument("--http-port", type=int, default=DEFAULT_PORTS["http"])
    serve.add_argument("--grpc-port", type=int, default=DEFAULT_PORTS["grpc"])
    serve.add_argument("--metrics-port", type=int, default=DEFAULT_PORTS["metrics"])
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: %(default)s)")
    serve.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for readiness")
    serve.set_defaults(func=cmd_serve)

    add_check_parser(sub)
    add_dag_parser(sub)
    add_bench_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
