"""``python -m triton_kitchen simulate``: the batching simulator, calibrated from a live server.

Registered in :mod:`triton_kitchen.cli.main`. Settings not given come from the model's loaded config; the result is
simulated (never measured) and says so; the calibration it rests on was measured in this run.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from triton_kitchen.core.endpoint import Endpoint, host_port
from triton_kitchen.tools.calibration import CalibrationError, calibrate
from triton_kitchen.tools.simulator import MAX_REQUESTS, simulate


def _sizes(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in text.split(",") if p.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected sizes like 4,8, got {text!r}") from exc


def add_simulate_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "simulate",
        help="predict dynamic batching (throughput, p50/p99, batch sizes) with a simulator calibrated on the server",
        description="Simulate Triton's dynamic batcher for MODEL. Compute time per batch size is calibrated from "
        "the server's statistics (a short calibration load when there are too few); the time outside the "
        "server is measured at concurrency 1. Settings not given are the loaded config's.",
    )
    p.add_argument("--model", required=True)
    p.add_argument("--url", default="", help="the server's HTTP address (default: start the embedded server)")
    p.add_argument(
        "--protocol",
        default="http-binary",
        choices=("http-binary", "http-json", "grpc"),
        help="protocol of the calibration load (default http-binary: --url is the HTTP address; "
        "grpc needs the server's gRPC port on the --url host at 8001)",
    )
    p.add_argument("--max-queue-delay-us", type=int, default=None)
    p.add_argument("--preferred-batch-sizes", type=_sizes, default=None, help="e.g. 4,8; '' for none")
    p.add_argument("--instances", type=int, default=None)
    p.add_argument("--max-batch-size", type=int, default=None)
    p.add_argument("--no-dynamic-batching", action="store_true", help="simulate without the dynamic batcher")
    load = p.add_mutually_exclusive_group(required=True)
    load.add_argument("--concurrency", type=int, help="closed loop: clients that each wait for their answer")
    load.add_argument("--request-rate", type=float, help="open loop: requests per second")
    p.add_argument("--distribution", choices=("constant", "poisson"), default="constant")
    p.add_argument("--duration", type=float, default=30.0, help="simulated seconds (default 30)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=cmd_simulate)
    return p


def _settings(args: argparse.Namespace, loaded):
    changes = {}
    if args.max_batch_size is not None:
        changes["max_batch_size"] = args.max_batch_size
    if args.max_queue_delay_us is not None:
        changes["max_queue_delay_us"] = args.max_queue_delay_us
    if args.preferred_batch_sizes is not None:
        changes["preferred_batch_sizes"] = args.preferred_batch_sizes
    if args.instances is not None:
        changes["instances"] = args.instances
    if args.no_dynamic_batching:
        changes["dynamic_batching"] = False
    return dataclasses.replace(loaded, **changes)


def _run(endpoint: Endpoint, args: argparse.Namespace) -> dict:
    cal = calibrate(endpoint, args.model, args.protocol)
    config = _settings(args, cal.config)
    sim = simulate(
        config,
        cal.service(),
        concurrency=args.concurrency,
        rate_rps=args.request_rate,
        distribution=args.distribution,
        requests=MAX_REQUESTS,
        duration_s=args.duration,
        seed=args.seed,
    )
    out = dict(sim.summary)
    out["model"] = args.model
    out["settings"] = dataclasses.asdict(config)
    out["calibration_detail"] = cal.to_json()
    return out


def cmd_simulate(args: argparse.Namespace) -> int:
    if (
        args.duration <= 0
        or (args.concurrency is not None and args.concurrency < 1)
        or (args.request_rate is not None and args.request_rate <= 0)
    ):
        print("error: --duration, --concurrency and --request-rate must be positive", file=sys.stderr)
        return 2
    server = None
    try:
        if args.url:
            url = host_port(args.url)
            endpoint = Endpoint.remote(url)
        else:
            from triton_kitchen.core.server import EmbeddedServer

            server = EmbeddedServer(http_port=0, grpc_port=0, metrics_port=0)
            print("starting the embedded tritonserver ...", file=sys.stderr, flush=True)
            endpoint = server.start(timeout=180)
        result = _run(endpoint, args)
    except (CalibrationError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - a dead server, a refused load: one line, not a traceback
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        if server is not None:
            server.stop()
    if args.json:
        print(json.dumps(result))
        return 0
    lat = result["latency_ms"]
    print(f"simulated {result['model']} ({result['arrivals']}), settings {result['settings']}")
    print(
        f"  throughput {result['throughput_rps']:.1f} req/s   p50 {lat['p50']:.1f} ms   p99 {lat['p99']:.1f} ms"
    )
    print(
        f"  mean batch {result['mean_batch']:.2f}   queue {result['queue_ms']:.2f} ms   "
        f"batches {result['batch_histogram']}"
    )
    cal = ", ".join(f"{k}: {v:.2f} ms" for k, v in result["calibration"].items())
    print(
        f"  calibration (measured now): compute per batch size {cal}; outside the server "
        f"{result['outside_ms']:.2f} ms per request"
    )
    return 0
