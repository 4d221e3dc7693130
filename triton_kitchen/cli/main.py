"""The command line, ``python -m triton_kitchen <subcommand>``: every subcommand's arguments and handler.

Adding a subcommand is one function: ``add_<name>_parser(subparsers)`` (here under ``@subcommand``, or in its own
module of this package and registered below with ``subcommand(...)``). It adds the parser and its arguments and
calls ``set_defaults(func=handler)``, where ``handler(args)`` returns the exit code. Subcommands appear in
``--help`` in the order they are registered.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable

from triton_kitchen.cli.bench import add_bench_parser
from triton_kitchen.cli.check import add_check_parser, add_dag_parser
from triton_kitchen.cli.class_report import add_class_parser
from triton_kitchen.cli.doctor import add_doctor_parser
from triton_kitchen.cli.simulate import add_simulate_parser
from triton_kitchen.cli.trace import add_trace_parser
from triton_kitchen.core.endpoint import DEFAULT_PORTS, RESTRICTED_HEADER
from triton_kitchen.core.server import DEFAULT_REPOSITORY, EmbeddedServer, ServerStartError
from triton_kitchen.core.settings import settings

AddParser = Callable[[argparse._SubParsersAction], argparse.ArgumentParser]
_SUBCOMMANDS: list[AddParser] = []


def subcommand(add_parser: AddParser) -> AddParser:
    """Register ``add_parser(subparsers)`` as one subcommand of :func:`build_parser`."""
    _SUBCOMMANDS.append(add_parser)
    return add_parser


# -- serve ----------------------------------------------------------------------------------------------
def cmd_serve(args: argparse.Namespace) -> int:
    server = EmbeddedServer(
        repo=args.repo,
        http_port=args.http_port,
        grpc_port=args.grpc_port,
        metrics_port=args.metrics_port,
        host=args.host,
    )
    given_key = settings().key
    if given_key:  # the key the app and the CLI already hold; else the server's own random one, printed below
        server.key = given_key
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
        f"repository and trace APIs: restricted to the header {RESTRICTED_HEADER}; "
        + (
            "its key is TRITON_KITCHEN_KEY's\n"
            if given_key
            else f"for the app and the CLI (batching lab, trace):\n  export TRITON_KITCHEN_KEY={server.key}\n"
        )
        + "Ctrl-C stops the server.",
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


@subcommand
def add_serve_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("serve", help="run the embedded Triton server on the model repository")
    p.add_argument("--repo", default=str(DEFAULT_REPOSITORY), help="model repository (default: %(default)s)")
    p.add_argument("--http-port", type=int, default=DEFAULT_PORTS["http"])
    p.add_argument("--grpc-port", type=int, default=DEFAULT_PORTS["grpc"])
    p.add_argument("--metrics-port", type=int, default=DEFAULT_PORTS["metrics"])
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: %(default)s)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for readiness")
    p.set_defaults(func=cmd_serve)
    return p


# -- the other subcommands, each in its own module -------------------------------------------------------
subcommand(add_check_parser)
subcommand(add_dag_parser)
subcommand(add_bench_parser)
subcommand(add_simulate_parser)
subcommand(add_class_parser)
subcommand(add_trace_parser)
subcommand(add_doctor_parser)


# -- entry point ----------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m triton_kitchen")
    sub = parser.add_subparsers(dest="command", required=True)
    for add_parser in _SUBCOMMANDS:
        add_parser(sub)
    parser.description = f"Command line: ``python -m triton_kitchen {'|'.join(sub.choices)}``."
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:  # Ctrl-C: a line, not a traceback (each command has already cleaned up)
        print("stopped (Ctrl-C)", file=sys.stderr)
        return 130
