"""One request through an ensemble, live or recorded: :class:`FlowRun`, :func:`send`, :func:`send_config`.

run = flow.send(endpoint, "tta_ensemble", image=jpeg)   # live: traced (embedded) or statistics (remote)
run = flow.recorded()[0]                                # offline: a real trace shipped with the app
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from triton_kitchen.core import kserve
from triton_kitchen.core.config import ConfigError, parse_config
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.ensemble import Dag, build_dag
from triton_kitchen.core.errors import KitchenError
from triton_kitchen.core.server import DEFAULT_REPOSITORY
from triton_kitchen.core.tensors import array_bytes
from triton_kitchen.tools import trace

RECORDED_TRACE = Path(__file__).resolve().parents[2] / "data" / "recorded_trace.json"
EDITED_PREFIX = "tk_flow_"  # models loaded by send_config: a temporary name, unloaded right after


class FlowError(KitchenError):
    """The model is not an ensemble of the repository, or its request could not be made or traced."""

    source = "flow"
    default_code = "server_error"


@dataclass
class FlowRun:
    """An ensemble's DAG and one request's timeline through it."""

    dag: Dag
    timeline: trace.RequestTimeline
    shapes: dict[str, list[int]] = field(default_factory=dict)  # tensor -> shape as sent/produced (batch 1)
    outputs: dict[str, Any] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)  # tensor -> bytes as sent/received (ensemble I/O)
    edited: bool = False  # an edited config (send_config), not a model of the repository

    @property
    def source(self) -> str:
        return self.timeline.source


def step_models(dag: Dag) -> tuple[list[str], list[list[int]]]:
    """Models of the DAG's steps (by index) and each step's predecessor indices."""
    index = {s.id: i for i, s in enumerate(dag.steps)}
    preds: list[list[int]] = [[] for _ in dag.steps]
    for tensor in dag.tensors:
        if tensor.producer is None or tensor.producer not in index:
            continue
        for c in tensor.consumers:
            if c in index and index[tensor.producer] not in preds[index[c]]:
                preds[index[c]].append(index[tensor.producer])
    return [s.model for s in dag.steps], preds


def tensor_shapes(dag: Dag) -> dict[str, list[int]]:
    """Shapes of one batch-1 request's tensors, from the configs (batch dimension 1 in front)."""
    out = {}
    for t in dag.tensors:
        if t.dims is None:
            continue
        out[t.name] = ([1] if t.batched else []) + [d if d > 0 else 1 for d in t.dims]
    return out


def attach(dag: Dag, timeline: trace.RequestTimeline) -> FlowRun:
    models, preds = step_models(dag)
    trace.assign_steps(timeline, models, preds)
    return FlowRun(dag, timeline, tensor_shapes(dag))


def send(
    endpoint: Endpoint,
    model: str,
    image: bytes | None = None,
    protocol: str = "grpc",
    repo: Path | str = DEFAULT_REPOSITORY,
    dag: Dag | None = None,
    timeout_s: float = 30.0,
) -> FlowRun:
    """Send one request through ``model`` and get its timeline.

    The input is ``image`` for image inputs (the sample photo if None), else synthesized from the
    model's metadata. The embedded server's trace file gives the real timestamps; a remote server's
    trace file is out of reach, so its timeline comes from statistics deltas (``source="statistics"``).
    ``dag`` overrides the repository's (an edited config whose models exist on the server).
    """
    from triton_kitchen.tools.protocols import ProtocolError, sample_inputs

    wire = "grpc" if protocol == "grpc" else "http-binary"
    try:
        dag = dag or build_dag(model, repo, validate=False)
    except ConfigError as exc:  # not an ensemble we can draw
        raise FlowError("not_ensemble", str(exc)) from exc
    try:
        _, arrays = sample_inputs(endpoint, model, wire, image=image, timeout=timeout_s)
        if endpoint.embedded:
            result, timeline = trace.traced_call(endpoint, model, arrays, wire)
        else:
            result, timeline = _statistics_call(endpoint, model, dag, arrays, wire, timeout_s)
    except ProtocolError as exc:
        raise FlowError("server_error", str(exc)) from exc
    except trace.TraceError as exc:
        raise FlowError("no_trace", str(exc)) from exc
    except kserve.KServeError as exc:  # statistics or trace settings unreachable
        raise FlowError("server_error", str(exc)) from exc
    run = attach(dag, timeline)
    for name, array in [*arrays.items(), *result.outputs.items()]:
        run.shapes[name] = list(np.shape(array))
        run.sizes[name] = array_bytes(array)
    run.outputs = result.outputs
    return run


def _statistics_call(endpoint: Endpoint, model: str, dag: Dag, arrays, wire: str, timeout_s: float):
    """A remote server's request: its timeline from the statistics before and after it."""
    from triton_kitchen.tools.protocols import Caller

    models, preds = step_models(dag)
    caller = Caller(endpoint, wire, model, arrays, timeout_s=timeout_s)
    try:
        first = trace.model_statistics(endpoint, models)
        caller.call()  # warm-up, then wait until its statistics have landed
        before = trace.statistics_after(endpoint, models, first)
        result = caller.call()
        after = trace.statistics_after(endpoint, models, before)
    finally:
        caller.close()
    timeline = trace.statistics_timeline(model, models, preds, before, after, client_ms=result.latency_ms)
    timeline.request_bytes, timeline.response_bytes = result.request_bytes, result.response_bytes
    timeline.protocol = "grpc" if wire == "grpc" else "http"
    return result, timeline


def send_config(
    endpoint: Endpoint,
    config_text: str,
    image: bytes | None = None,
    protocol: str = "grpc",
    repo: Path | str = DEFAULT_REPOSITORY,
) -> FlowRun:
    """Animate an edited ensemble config: load it under a temporary name, trace one request, unload it.

    Its step models must exist on the server. Loading goes through the repository API with the
    config as an override (the embedded server's restricted API: ``endpoint.headers``).
    """
    from google.protobuf.json_format import MessageToJson

    try:
        cfg = parse_config(config_text)
    except ConfigError as exc:
        raise FlowError("bad_config", str(exc)) from exc
    if cfg.platform != "ensemble" or cfg.backend:
        # Only an ensemble may be loaded from user text: it runs nothing but models already on the server.
        raise FlowError(
            "not_ensemble", 'only an ensemble config (platform: "ensemble", no backend) can be animated'
        )
    # the name becomes a folder: only safe characters (a "../" in it must not write outside the temp dir)
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", cfg.name or "edited")[:40]
    name = f"{EDITED_PREFIX}{safe}_{secrets.token_hex(3)}"
    cfg.name = name
    tmp = Path(tempfile.mkdtemp(prefix="tk-flow-"))
    try:
        for model_dir in Path(repo).iterdir():  # the repository's other models, for tensor types and shapes
            if (model_dir / "config.pbtxt").is_file():
                (tmp / model_dir.name).symlink_to(model_dir.resolve(), target_is_directory=True)
        (tmp / name / "1").mkdir(parents=True)
        (tmp / name / "config.pbtxt").write_text(config_text, encoding="utf-8")
        try:
            dag = build_dag(name, tmp, validate=False)
        except ConfigError as exc:
            raise FlowError("not_ensemble", str(exc)) from exc
        dag.name = name
        try:
            kserve.load_model(
                endpoint,
                name,
                config=MessageToJson(cfg, preserving_proto_field_name=True),
                files={"1/README": b"ensemble: no files"},
            )
        except kserve.KServeError as exc:  # Triton's own load error, shown verbatim by the page
            code = "no_control_api" if exc.code == "no_control_api" else "load_failed"
            raise FlowError(code, exc.detail or str(exc)) from exc
        try:
            run = send(endpoint, name, image=image, protocol=protocol, dag=dag)
        finally:
            try:
                kserve.unload_model(endpoint, name)
            except kserve.KServeError:  # already gone, or the server with it: nothing to clean
                pass
        run.edited = True
        return run
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def recorded(path: Path | str = RECORDED_TRACE, repo: Path | str = DEFAULT_REPOSITORY) -> list[FlowRun]:
    """The real traces shipped with the app (one per ensemble), labelled ``source="recorded"``."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    runs = []
    for item in data["timelines"]:
        tl = trace.timeline_from_dict(item)
        tl.source = "recorded"
        run = attach(build_dag(tl.model, repo, validate=False), tl)
        run.shapes.update({k: list(v) for k, v in item.get("shapes", {}).items()})
        run.sizes.update({k: int(v) for k, v in item.get("sizes", {}).items()})
        runs.append(run)
    return runs


def record(
    endpoint: Endpoint, models: list[str], path: Path | str = RECORDED_TRACE, image: bytes | None = None
) -> Path:
    """Trace one real request per ensemble on the embedded server and save them for offline replay."""
    out = {
        "format": "triton-kitchen-recorded/1",
        "recorded_at": time.strftime("%Y-%m-%d %H:%M:%S"),
        "timelines": [],
    }
    for model in models:
        send(endpoint, model, image=image)  # warm-up (first calls pay for lazy initialisation)
        run = send(endpoint, model, image=image)
        item = run.timeline.to_dict()
        item["shapes"] = run.shapes
        item["sizes"] = run.sizes
        out["timelines"].append(item)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return path
