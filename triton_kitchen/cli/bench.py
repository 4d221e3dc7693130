"""``bench``: load on one model over one protocol, measured (or a generation stream with ``--streaming``)."""

from __future__ import annotations

import argparse
import json
import socket
import sys
from dataclasses import replace

from triton_kitchen.core import kserve
from triton_kitchen.core.endpoint import Endpoint, host_port
from triton_kitchen.core.server import EmbeddedServer, ServerStartError
from triton_kitchen.tools import generation, server_stats
from triton_kitchen.tools.bench import WireCount
from triton_kitchen.tools.load import (
    DISTRIBUTIONS,
    MAX_CONCURRENCY,
    MAX_DURATION_S,
    MAX_REQUEST_RATE,
    LoadSpec,
    LoadSpecError,
)
from triton_kitchen.tools.perf_analyzer import PerfAnalyzerError, cross_check
from triton_kitchen.tools.protocols import BENCH_PROTOCOLS, DEFAULT_TIMEOUT_S, base_protocol
from triton_kitchen.tools.protocols import shm as shm_protocol
from triton_kitchen.tools.stability import MAX_WINDOWS, run_stable


# -- bench ----------------------------------------------------------------------------------------------
def _url_hint(url: str, protocol: str) -> str | None:
    """Why ``url`` cannot serve ``protocol`` when something answers there in the other protocol
    (the commonest slip: 8000 vs 8001). A dead address is left to the run, which counts its errors."""
    answers_http = kserve.live(url, timeout=2.0)
    if protocol == "grpc" and answers_http:
        return (
            f"{url} answers Triton's HTTP API; --protocol grpc needs the gRPC port (Triton's default is 8001)"
        )
    if protocol != "grpc" and not answers_http:
        host, _, port = url.rpartition(":")
        try:
            socket.create_connection((host or "127.0.0.1", int(port)), timeout=2.0).close()
        except (OSError, ValueError):
            return None
        return (
            f"{url} listens but is not Triton's HTTP API (the gRPC port? Triton's default HTTP port is 8000)"
        )
    return None


def _print_bytes_per_request(wire: WireCount | None) -> None:
    if wire is None:
        print("  wire bytes     not counted (no answer to count)")
        return
    print(
        f"  bytes per request, counted in a separate untimed pass ({wire.calls + 1} calls on one connection "
        "through a byte-counting proxy; the timed requests went straight to the server):"
    )
    print(f"    payload  sent {wire.request_bytes}  received {wire.response_bytes}")
    print(
        f"    wire     sent {wire.sent:.0f}  received {wire.received:.0f}  (the call that opened the "
        f"connection: sent {wire.first_sent}  received {wire.first_received})"
    )


# what the CLI says when LoadSpec refuses a setting, in the words of its flag (other settings: LoadSpec's own)
_FLAG_ERRORS = {
    "concurrency": f"--concurrency must be 1..{MAX_CONCURRENCY}",
    "duration_s": f"--duration must be in (0, {MAX_DURATION_S:g}]",
    "request_rate": f"--request-rate must be in (0, {MAX_REQUEST_RATE:g}]",
    "compression": "--compression does not apply to shared memory: the tensors never cross the socket",
}


def _bench_streaming(args: argparse.Namespace) -> int:
    """``bench --streaming``: closed-loop clients streaming generations over HTTP ``generate_stream`` (or gRPC
    ``ModelStreamInfer`` with ``--protocol grpc``); time to first token, inter-token latency, tokens/s."""
    if args.protocol not in (None, "grpc", "http-json", "http-binary"):
        print("error: --streaming goes over HTTP generate_stream or --protocol grpc", file=sys.stderr)
        return 2
    if not 1 <= args.concurrency <= MAX_CONCURRENCY or args.requests < 1 or args.max_tokens < 0:
        print(
            f"error: --concurrency 1..{MAX_CONCURRENCY}, --requests >= 1, --max-tokens >= 0", file=sys.stderr
        )
        return 2
    protocol = generation.GRPC if args.protocol == "grpc" else generation.HTTP
    server = None
    if args.url:
        url = host_port(args.url)
        endpoint = Endpoint(http_url=url, grpc_url=url)
    else:
        server = EmbeddedServer(http_port=0, grpc_port=0, metrics_port=0)
        try:
            endpoint = server.start(timeout=180)
        except ServerStartError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    jobs = [generation.Job(args.prompt, args.max_tokens) for _ in range(args.requests)]
    try:
        result = generation.closed_loop(endpoint, args.model, jobs, args.concurrency, protocol, args.timeout)
    finally:
        if server is not None:
            server.stop()
    summary = generation.summarize(result)
    api = "ModelStreamInfer" if protocol == generation.GRPC else "generate_stream"
    errors = [r.error for r in result.runs if r.error]
    if args.json:
        print(json.dumps({"model": args.model, "api": api, "clients": args.concurrency, **summary}))
    else:
        ms = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
        print(f"{args.model} over {api}: {summary['requests']} generations, {args.concurrency} client(s)")
        print(
            f"  time to first token  p50 {ms(summary['ttft_ms']['p50'])} ms  p99 {ms(summary['ttft_ms']['p99'])} ms"
        )
        print(
            f"  inter-token latency  p50 {ms(summary['itl_ms']['p50'])} ms  p99 {ms(summary['itl_ms']['p99'])} ms"
        )
        rate = summary["tokens_per_s"]
        print(f"  {summary['tokens']} tokens in {summary['wall_s']:.2f} s = {ms(rate)} tokens/s")
    if errors:
        print(f"{len(errors)} generation(s) failed; the first: {errors[0]}", file=sys.stderr)
    return 1 if len(errors) == len(result.runs) else 0


def cmd_bench(args: argparse.Namespace) -> int:
    if args.streaming:
        return _bench_streaming(args)
    if args.protocol is None:
        print("error: --protocol is required (or --streaming for a model that generates)", file=sys.stderr)
        return 2
    try:  # the load is checked here, once, before a server is started or reached
        spec = LoadSpec(
            args.model,
            args.protocol,
            args.concurrency,
            args.duration,
            max_requests=args.max_requests,
            request_rate=args.request_rate,
            distribution=args.distribution,
            compression=args.compression,
            timeout_s=args.timeout,
            count_wire=True,
        )
    except LoadSpecError as exc:
        print(f"error: {_FLAG_ERRORS.get(exc.field, exc)}", file=sys.stderr)
        return 2
    if args.max_windows < 1:
        print("error: --max-windows must be at least 1", file=sys.stderr)
        return 2
    server = None
    stats_note = ""
    if args.url:
        url = host_port(args.url)
        hint = _url_hint(url, base_protocol(args.protocol))
        if hint:
            print(f"error: {hint}", file=sys.stderr)
            return 1
        http = url
        if not args.protocol.startswith("http"):
            # statistics go over HTTP: the gRPC server's own HTTP port, checked to be the same server
            http, stats_note = server_stats.grpc_statistics_address(url, args.stats_url)
            if stats_note:
                spec = replace(spec, server_side=False)
            elif not args.json:
                print(
                    f"statistics: {http} (the same server as {url}: their statistics agree)", file=sys.stderr
                )
        endpoint = Endpoint(http_url=http, grpc_url=url)
        if args.protocol in shm_protocol.SHM_PROTOCOLS:
            # asked once, before the run: a server that refuses every region would fail each request alike
            refused = shm_protocol.refusal(endpoint, args.protocol)
            if refused:
                print(f"error: {refused}\nhint: {shm_protocol.REFUSED_HINT}", file=sys.stderr)
                return 1
    else:
        server = EmbeddedServer(http_port=0, grpc_port=0, metrics_port=0)
        if not args.json:
            print("starting the embedded tritonserver ...", file=sys.stderr, flush=True)
        try:
            endpoint = server.start(timeout=180)
        except ServerStartError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    try:
        result, stability = run_stable(endpoint, spec, max_windows=args.max_windows)
        check = None
        if args.perf_analyzer and result.throughput_rps and not args.protocol.endswith("-shm"):
            try:
                check = cross_check(endpoint, spec)
            except PerfAnalyzerError as exc:
                print(f"perf_analyzer: {exc}", file=sys.stderr)
    finally:
        if server is not None:
            server.stop()
    if stats_note and not result.server_note:
        result.server_note = stats_note
    if args.json:
        print(json.dumps({**result.to_dict(), **result.analysis(), **stability.to_json()}))
    else:
        lat = result.latency_ms
        fmt = lambda v: "-" if v is None else f"{v:.1f}"  # noqa: E731
        load = (
            f"open loop at {args.request_rate:g} req/s ({args.distribution})"
            if args.request_rate
            else f"concurrency {result.concurrency}"
        )
        print(
            f"{result.model} over {result.protocol}, {load}, {result.window_s:.1f} s ({result.stop_reason})"
        )
        print(
            f"  requests {result.requests}  errors {result.errors}  throughput {result.throughput_rps:.1f}/s"
        )
        print(
            f"  latency ms  p50 {fmt(lat['p50'])}  p90 {fmt(lat['p90'])}  p99 {fmt(lat['p99'])}  "
            f"mean {fmt(result.mean_latency_ms)}"
        )
        _print_analysis(result, stability)
        print(f"  payload bytes  sent {result.request_bytes}  received {result.response_bytes}")
        if result.protocol.endswith("-shm"):
            print(
                f"  shared memory  {result.shm_bytes} tensor bytes (inputs and outputs, never on the socket)"
            )
        _print_bytes_per_request(result.wire)
    for message in result.error_messages:
        print(f"error: {message}", file=sys.stderr)
    if any(m.startswith("shm_refused") for m in result.error_messages):
        print(f"hint: {shm_protocol.REFUSED_HINT}", file=sys.stderr)
    if check is not None:
        print(
            f"cross-check: engine {check['engine_rps']:.1f}/s, perf_analyzer {check['perf_analyzer_rps']:.1f}/s, "
            f"difference {check['difference'] * 100:+.1f}% ({'agree' if check['agree'] else 'DISAGREE'} "
            f"within {check['tolerance'] * 100:.0f}%)",
            file=sys.stderr if args.json else sys.stdout,
        )
    return 0 if result.requests and not result.errors else 1


def _print_analysis(result, stability) -> None:
    """The why-layer lines: stability, the server's own split of the time, Little's law."""
    spread = stability.spread
    pct = lambda v: "-" if v is None else f"{v:.1f}%"  # noqa: E731
    word = "stable" if stability.stable else "UNSTABLE"
    print(
        f"  {word}: {len(stability.windows)} window(s); the last {min(3, len(stability.windows))} spread "
        f"{pct(spread['throughput'])} in throughput, {pct(spread['latency'])} in mean latency"
    )
    s = result.server
    if s is not None and s.total.requests:
        t = s.total
        inside = t.server_ms or 0.0
        outside = (result.mean_latency_ms or 0.0) - inside
        print(
            f"  server (measured by Triton, per request): queue {t.queue_ms:.2f} ms, compute input "
            f"{t.compute_input_ms:.2f}, infer {t.compute_infer_ms:.2f}, output {t.compute_output_ms:.2f}; "
            f"{inside:.2f} ms inside the server, {outside:.2f} ms outside it (client, network, serialization)"
        )
        batch = f"{t.mean_batch:.2f}" if t.mean_batch else "-"
        print(f"  executions {t.executions}, inferences {t.inferences}: average batch {batch}")
        for name, m in s.per_model.items():
            mb = f"{m.mean_batch:.2f}" if m.mean_batch else "-"
            print(
                f"    {name}: queue {m.queue_ms:.2f} ms, compute {m.compute_infer_ms:.2f} ms, "
                f"{m.executions} executions for {m.inferences} inferences (batch {mb})"
            )
    elif result.server_note:
        print(f"  server breakdown: none ({result.server_note})")
    law = result.littles_law()
    if law and "in_flight" in law:
        print(
            f"  Little's law: {law['in_flight']} in flight / {result.throughput_rps:.1f} req/s predicts a mean "
            f"latency of {law['predicted_latency_ms']:.1f} ms; measured {law['measured_mean_latency_ms']:.1f} ms "
            f"({law['gap'] * 100:+.1f}%)"
        )
    elif law:
        print(
            f"  Little's law: {law['arrival_rate_rps']:.1f} req/s x {law['measured_mean_latency_ms']:.1f} ms "
            f"= {law['mean_in_flight']:.2f} requests in flight on average"
        )
    if result.late:
        print(f"  {result.late} request(s) left late: every worker was busy (the server is near saturation)")


def add_bench_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "bench",
        help="bounded load on one model over one protocol",
        description="Closed-loop load with N concurrent clients for a bounded time; "
        "latency percentiles, throughput, payload bytes, and wire bytes per "
        "request counted in a separate untimed pass (never while timing).",
    )
    p.add_argument("--model", required=True)
    p.add_argument(
        "--protocol",
        choices=BENCH_PROTOCOLS,
        help="required without --streaming; with it, grpc streams over ModelStreamInfer and the default is "
        "HTTP generate_stream",
    )
    p.add_argument(
        "--streaming",
        action="store_true",
        help="a model that streams tokens: time to first token, inter-token latency (p50, p99), tokens/s",
    )
    p.add_argument("--prompt", default="Triton Inference Server", help="with --streaming: the prompt")
    p.add_argument("--max-tokens", type=int, default=32, help="with --streaming (default: %(default)s)")
    p.add_argument(
        "--requests", type=int, default=16, help="with --streaming: generations (default: %(default)s)"
    )
    p.add_argument("--concurrency", type=int, default=1, help=f"1..{MAX_CONCURRENCY} (default: %(default)s)")
    p.add_argument(
        "--duration",
        type=float,
        default=5.0,
        help="seconds of each measuring window; windows repeat until the last three agree within "
        "10%% on throughput and latency (default: %(default)s)",
    )
    p.add_argument(
        "--max-windows",
        type=int,
        default=MAX_WINDOWS,
        help="give up on stability after this many windows (default: %(default)s)",
    )
    p.add_argument(
        "--request-rate",
        type=float,
        default=None,
        help="open loop: send this many requests per second (up to --concurrency in flight), as "
        "perf_analyzer's --request-rate-range",
    )
    p.add_argument(
        "--distribution",
        choices=DISTRIBUTIONS,
        default="constant",
        help="open-loop arrival times (perf_analyzer's --request-distribution; default: %(default)s)",
    )
    p.add_argument(
        "--stats-url",
        default=None,
        help="with a gRPC --url: the same server's HTTP host:port, for its statistics API (default: the port "
        "below --url's, then 8000; used only when its statistics are those of the --url server)",
    )
    p.add_argument(
        "--url",
        help="host:port of a running server for this protocol (default: start the "
        "embedded server on free ports)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (its wire bytes: the untimed pass's bytes per request times the "
        "answered requests)",
    )
    p.add_argument("--max-requests", type=int, default=10_000, help="request cap (default: %(default)s)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="per-request timeout in seconds")
    p.add_argument("--compression", choices=("gzip",), default=None)
    p.add_argument(
        "--perf-analyzer",
        action="store_true",
        help="also run perf_analyzer on the same settings and print both throughputs (to stderr with --json)",
    )
    p.set_defaults(func=cmd_bench)
    return p
