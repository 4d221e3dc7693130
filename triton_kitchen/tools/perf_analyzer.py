"""NVIDIA's C++ ``perf_analyzer`` as a second opinion on :mod:`triton_kitchen.tools.bench`'s numbers.

Discovery (the binary ships in ``tritonclient==2.51.0``'s wheel), the environment it needs (two shared
libraries that wheel keeps under hashed names), its ``--input-data`` JSON, one bounded run, and
:func:`cross_check`: our engine and perf_analyzer alternating on the same model, protocol, concurrency and input.
"""

from __future__ import annotations

import base64
import csv
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.errors import KitchenError
from triton_kitchen.tools.bench import ENGINE, BenchProgress, BenchResult, run_bench
from triton_kitchen.tools.load import LoadSpec
from triton_kitchen.tools.protocols import check_protocol, sample_inputs, serialized_bytes_tensor

# the cross-check in records; pages show CHECK_NAME with its description in the reader's language
CHECK_NAME = "perf_analyzer"
CHECK = f"{CHECK_NAME} (C++, tritonclient 2.51.0 wheel)"


class PerfAnalyzerError(KitchenError):
    """perf_analyzer is missing, failed or timed out, or the cross-check could not compare; ``str()`` says which."""

    default_code = "perf_analyzer"

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(code, message)


def perf_analyzer_binary() -> Path | None:
    """The ``perf_analyzer`` from tritonclient's wheel (next to this Python), or one on PATH."""
    here = Path(sys.executable).parent / "perf_analyzer"
    if here.exists():
        return here
    found = shutil.which("perf_analyzer")
    return Path(found) if found else None


def perf_analyzer_env() -> dict[str, str]:
    """Environment with ``libb64.so.0d`` and ``libcudart.so.12`` linked from ``nvidia_pytriton.libs``
    (where they live under hashed names) into a cache folder on ``LD_LIBRARY_PATH``."""
    from triton_kitchen.core.server import cache_root

    env = dict(os.environ)
    try:
        import pytriton

        libs = Path(pytriton.__file__).resolve().parent.parent / "nvidia_pytriton.libs"
    except ImportError:
        return env
    folder = cache_root() / "perf_analyzer_libs"
    folder.mkdir(parents=True, exist_ok=True)
    for name, pattern in (("libb64.so.0d", "libb64-*.so.0d"), ("libcudart.so.12", "libcudart-*.so.12*")):
        matches = sorted(glob.glob(str(libs / pattern)))
        link = folder / name
        if matches and not link.exists():
            tmp = folder / f".{name}.{os.getpid()}"
            tmp.unlink(missing_ok=True)
            tmp.symlink_to(matches[0])
            os.replace(tmp, link)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(folder), env.get("LD_LIBRARY_PATH", "")) if p)
    return env


def perf_analyzer_input_data(inputs: dict[str, np.ndarray], max_batch_size: int) -> dict:
    """``--input-data`` JSON for one request: raw tensor bytes as base64 (BYTES length-prefixed, as
    perf_analyzer expects), without the batch dimension when the model batches."""
    entry = {}
    for name, array in inputs.items():
        one = array[0] if max_batch_size > 0 else array
        raw = serialized_bytes_tensor(one) if one.dtype == object else np.ascontiguousarray(one).tobytes()
        entry[name] = {"b64": base64.b64encode(raw).decode()}
    return {"data": [entry]}


def _shape_flags(inputs: dict[str, np.ndarray], max_batch_size: int) -> list[str]:
    """``--shape name:d1,d2`` for every input (needed when the model has variable dimensions)."""
    flags = []
    for name, array in inputs.items():
        dims = array.shape[1:] if max_batch_size > 0 else array.shape
        if dims:
            flags += ["--shape", f"{name}:{','.join(str(d) for d in dims)}"]
    return flags


@dataclass
class PerfAnalyzerResult:
    protocol: str
    model: str
    concurrency: int
    requests: int
    throughput_rps: float
    latency_ms: dict[str, float | None]
    command: list[str]
    window_s: float = 0.0  # the measured windows together
    engine: str = "perf_analyzer (C++)"
    server: dict[str, float] = field(default_factory=dict)  # its own server-side split, ms per request


# perf_analyzer's CSV columns (microseconds per request) -> the keys of bench's server breakdown
PA_SERVER_COLUMNS = {
    "Server Queue": "queue_ms",
    "Server Compute Input": "compute_input_ms",
    "Server Compute Infer": "compute_infer_ms",
    "Server Compute Output": "compute_output_ms",
}


def run_perf_analyzer(
    endpoint: Endpoint,
    model: str,
    protocol: str,
    concurrency: int,
    inputs: dict[str, np.ndarray],
    max_batch_size: int = 1,
    window_ms: int = 1000,
    timeout_s: float = 60.0,
    retry_larger_window: bool = True,
    input_data: dict | None = None,
) -> PerfAnalyzerResult:
    """One bounded perf_analyzer run: three measurement windows of ``window_ms`` (the stability
    threshold is set wide open so three windows normally end it; perf_analyzer reports over them),
    killed after ``timeout_s``. ``http-json`` has no perf_analyzer equivalent (it sends binary tensors).

    (``--request-count`` mode is not used: it rounds its measuring time to whole seconds, so short
    runs under-report throughput by up to half.) ``input_data``: the whole ``--input-data`` JSON (several
    ``data`` entries: perf_analyzer cycles through them), instead of one request made from ``inputs``."""
    if check_protocol(protocol) == "http-json":
        raise PerfAnalyzerError("perf_analyzer has no JSON-tensor mode; cross-check http-binary instead")
    binary = perf_analyzer_binary()
    if binary is None:
        raise PerfAnalyzerError("perf_analyzer not found (it ships in tritonclient==2.51.0's wheel)")
    with tempfile.TemporaryDirectory(prefix="pa-") as tmp:
        data = Path(tmp) / "input.json"
        data.write_text(json.dumps(input_data or perf_analyzer_input_data(inputs, max_batch_size)))
        report = Path(tmp) / "report.csv"
        cmd = [
            str(binary),
            "-m",
            model,
            "-u",
            endpoint.grpc_url if protocol == "grpc" else endpoint.http_url,
            "-i",
            "grpc" if protocol == "grpc" else "http",
            "--concurrency-range",
            f"{concurrency}:{concurrency}",
            "--measurement-interval",
            str(int(window_ms)),
            "--stability-percentage",
            "1000",
            "--max-trials",
            "6",
            "--input-data",
            str(data),
            "-f",
            str(report),
            *_shape_flags(inputs, max_batch_size),
        ]
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=perf_analyzer_env(),
            cwd=tmp,
            start_new_session=True,
        )
        try:
            out, _ = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise PerfAnalyzerError(f"perf_analyzer did not finish in {timeout_s:g} s") from None
        text = out.decode(errors="replace")
        if proc.returncode != 0 and retry_larger_window and ("time window" in text or "stable" in text):
            # the server is slower than the window (latency > window), or so busy that windows hold a
            # request or two: once more with 3x the window
            return run_perf_analyzer(
                endpoint,
                model,
                protocol,
                concurrency,
                inputs,
                max_batch_size,
                window_ms * 3,
                timeout_s,
                retry_larger_window=False,
                input_data=input_data,
            )
        if proc.returncode != 0 or not report.exists():
            tail = "\n".join(text.strip().splitlines()[-6:])
            raise PerfAnalyzerError(f"perf_analyzer failed (exit {proc.returncode}):\n{tail}")
        row = next(csv.DictReader(report.read_text().splitlines()))
    lat = {q: float(row[f"{q} latency"]) / 1000 for q in ("p50", "p90", "p99") if row.get(f"{q} latency")}
    rps = float(row["Inferences/Second"])
    server = {key: float(row[col]) / 1000 for col, key in PA_SERVER_COLUMNS.items() if row.get(col)}
    return PerfAnalyzerResult(
        protocol,
        model,
        concurrency,
        round(rps * 3 * window_ms / 1000),
        rps,
        lat,
        cmd,
        window_s=3 * window_ms / 1000,
        server=server,
    )


def _server_means(splits: list[dict[str, float | None]]) -> dict[str, float | None]:
    """Per-key mean of several runs' server splits (ms per request); None where no run had the key."""
    out: dict[str, float | None] = {}
    for key in PA_SERVER_COLUMNS.values():
        values = [s[key] for s in splits if s.get(key) is not None]
        out[key] = float(np.mean(values)) if values else None
    return out


def cross_check(
    endpoint: Endpoint,
    spec: LoadSpec,
    rounds: int = 3,
    tolerance: float = 0.10,
    *,
    stop: threading.Event | None = None,
    progress: Callable[[BenchProgress], None] | None = None,
) -> dict:
    """Our engine and perf_analyzer on the same model, protocol, concurrency and input: the spec's. Both run
    closed loop as perf_analyzer's ``--concurrency-range``; the spec's other settings (rate, compression,
    cap, timeouts) are not perf_analyzer's, and are not used.

    The two alternate in ``rounds`` slices (the spec's ``duration_s`` of each engine in all: perf_analyzer
    measures three windows of a third of a slice), so both see the same machine (other work on a
    shared machine moves throughput a lot from one second to the next). Throughputs are averages
    over all slices, weighted by measuring time."""
    model, protocol, concurrency = spec.model, spec.protocol, spec.concurrency
    info, inputs = sample_inputs(endpoint, model, protocol)
    outputs = [o.name for o in info.outputs]
    ours: list[BenchResult] = []
    theirs: list[PerfAnalyzerResult] = []
    slice_s = spec.duration_s / max(1, rounds)
    each = LoadSpec(model, protocol, concurrency, slice_s, inputs=inputs, output_names=outputs, warmup_s=0.3)
    for _ in range(max(1, rounds)):
        if stop is not None and stop.is_set():
            break
        r = run_bench(endpoint, each, stop=stop, progress=progress)
        if r.errors or not r.throughput_rps:
            raise PerfAnalyzerError(f"the bench run failed: {r.error_messages}")
        ours.append(r)
        theirs.append(
            run_perf_analyzer(
                endpoint,
                model,
                protocol,
                concurrency,
                inputs,
                info.max_batch_size,
                window_ms=max(500, int(slice_s * 1000 / 3)),
                timeout_s=max(30.0, 10 * slice_s),
            )
        )
    if not ours:
        raise PerfAnalyzerError("stopped before the first round")
    ours_rps = sum(r.requests - r.errors for r in ours) / sum(r.window_s for r in ours)
    pa_rps = sum(p.throughput_rps * p.window_s for p in theirs) / sum(p.window_s for p in theirs)
    diff = (ours_rps - pa_rps) / pa_rps if pa_rps else float("inf")
    return {
        "model": model,
        "protocol": protocol,
        "concurrency": concurrency,
        "engine": ENGINE,
        "check": CHECK,
        "engine_rps": ours_rps,
        "perf_analyzer_rps": pa_rps,
        "difference": diff,
        "agree": abs(diff) <= tolerance,
        "tolerance": tolerance,
        "engine_p99_ms": float(np.percentile([x for r in ours for x in r.latencies_ms], 99)),
        "perf_analyzer_p99_ms": float(np.median([p.latency_ms.get("p99", np.nan) for p in theirs])),
        "rounds": [
            {"engine_rps": a.throughput_rps, "perf_analyzer_rps": b.throughput_rps}
            for a, b in zip(ours, theirs, strict=False)
        ],
        # the command as run (the binary's full path), and as pages show it (the binary by its name)
        "perf_analyzer_command": " ".join(theirs[-1].command) if theirs else "",
        "perf_analyzer_shown": " ".join([CHECK_NAME, *theirs[-1].command[1:]]) if theirs else "",
        # the server's own split of a request's time, as each tool read it (statistics API deltas over our
        # windows; perf_analyzer's CSV columns over its own): the same server, the same settings
        "server": {
            "engine": _server_means([r.server.to_json() for r in ours if r.server is not None]),
            "perf_analyzer": _server_means([p.server for p in theirs]),
        },
    }
