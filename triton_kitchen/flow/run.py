"""Watch one request move through an ensemble: animation frames and a Gantt chart from its real trace.

    run = flow.send(endpoint, "tta_ensemble", image=jpeg)       # live: traced (embedded) or statistics (remote)
    run = flow.recorded()                                       # offline: a real trace shipped with the app
    fig = flow.animation(run, lang="zh")                        # plotly figure with frames and controls
    fig = flow.gantt(run, lang="zh")

The DAG (steps, tensors, stages) is :func:`triton_kitchen.ensemble.build_dag`'s; positions come from
``triton_kitchen.diagram.layout`` when it is there (a stage-by-stage layout otherwise).

Timing: every *key frame* sits exactly on a timestamp of the trace (``Frame.t_ns``; ``Frame.key``);
between key frames, in-between frames interpolate the tensors' positions. All frames are shown for
the same display time, so the number of frames in a gap decides how long it plays:

- ``pacing="real"``: frames per gap proportional to the gap's trace time (a true slow motion);
- ``pacing="events"``: every gap gets at least two frames and at most six, so microsecond hand-offs
  between steps stay visible next to millisecond computations (order kept, durations compressed).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from triton_kitchen import trace
from triton_kitchen.ensemble import Dag, build_dag, format_bytes
from triton_kitchen.lessons import t as _t
from triton_kitchen.server import DEFAULT_REPOSITORY, Endpoint

RECORDED_TRACE = Path(__file__).resolve().parent / "data" / "recorded_trace.json"
PACINGS = ("events", "real")
ROW_GAP = 1.5  # vertical distance of two nodes in one column (stage_layout)
SPEEDS = {"slow": 400, "normal": 150, "fast": 50}  # display ms per frame
STATE_COLORS = {
    "idle": "#d5d9e0",
    "queued": "#f39c12",
    "computing": "#27ae60",
    "handoff": "#a9dfbf",
    "done": "#5b8def",
}
PHASE_COLORS = {  # one colour per legend entry (two legs in one grey could not be told apart)
    "queue": "#f39c12",
    "compute_input": "#76b7e5",
    "infer": "#27ae60",
    "compute_output": "#9b59b6",
    "client_send": "#7f8c8d",
    "http_recv": "#34495e",
    "grpc_send": "#a0522d",
    "http_send": "#a0522d",  # never in one trace with grpc_send
    "client_receive": "#e377c2",
}


class FlowError(RuntimeError):
    """The model is not an ensemble of the repository, or its request could not be made or traced."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


# -- one request ---------------------------------------------------------------------------------
@dataclass
class FlowRun:
    """An ensemble's DAG and one request's timeline through it."""

    dag: Dag
    timeline: trace.RequestTimeline
    shapes: dict[str, list[int]] = field(default_factory=dict)  # tensor -> shape as sent/produced (batch 1)
    outputs: dict[str, Any] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)  # tensor -> bytes as sent/received (ensemble I/O)

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
    from triton_kitchen.clients import http_client
    from triton_kitchen.experiments import traced_call
    from triton_kitchen.protocols import Caller, ProtocolError, sample_inputs

    wire = "grpc" if protocol == "grpc" else "http-binary"
    try:
        dag = dag or build_dag(model, repo, validate=False)
    except Exception as exc:  # ConfigError and friends: not an ensemble we can draw
        raise FlowError("not_ensemble", str(exc)) from exc
    try:
        _, arrays = sample_inputs(endpoint, model, wire, image=image, timeout=timeout_s)
        if endpoint.embedded:
            result, timeline = traced_call(endpoint, model, arrays, wire)
        else:
            models, _ = step_models(dag)
            hc = http_client(endpoint)
            caller = Caller(endpoint, wire, model, arrays, timeout_s=timeout_s)
            try:
                first = trace.model_statistics(hc, models)
                caller.call()  # warm-up, then wait until its statistics have landed
                before = trace.statistics_after(hc, models, first)
                result = caller.call()
                after = trace.statistics_after(hc, models, before)
            finally:
                caller.close()
            _, preds = step_models(dag)
            timeline = trace.statistics_timeline(
                model, models, preds, before, after, client_ms=result.latency_ms
            )
            timeline.request_bytes, timeline.response_bytes = result.request_bytes, result.response_bytes
            timeline.protocol = "grpc" if wire == "grpc" else "http"
    except ProtocolError as exc:
        raise FlowError("server_error", str(exc)) from exc
    except trace.TraceError as exc:
        raise FlowError("no_trace", str(exc)) from exc
    run = attach(dag, timeline)
    for name, array in [*arrays.items(), *result.outputs.items()]:
        run.shapes[name] = list(np.shape(array))
        run.sizes[name] = array_bytes(array)
    run.outputs = result.outputs
    return run


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
    import secrets
    import shutil
    import tempfile

    from google.protobuf.json_format import MessageToJson

    from triton_kitchen.clients import http_client
    from triton_kitchen.config import parse_config

    try:
        cfg = parse_config(config_text)
    except Exception as exc:
        raise FlowError("bad_config", str(exc)) from exc
    if cfg.platform != "ensemble" or cfg.backend:
        # Only an ensemble may be loaded from user text: it runs nothing but models already on the server.
        raise FlowError("not_ensemble", "only an ensemble config (platform: \"ensemble\", no backend) can be animated")
    import re

    # the name becomes a folder: only safe characters (a "../" in it must not write outside the temp dir)
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", cfg.name or "edited")[:40]
    name = f"tk_flow_{safe}_{secrets.token_hex(3)}"
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
        except Exception as exc:
            raise FlowError("not_ensemble", str(exc)) from exc
        dag.name = name
        hc = http_client(endpoint)
        try:
            hc.load_model(
                name,
                config=MessageToJson(cfg, preserving_proto_field_name=True),
                files={"file:1/README": b"ensemble: no files"},
                headers=endpoint.headers,
            )
        except Exception as exc:  # Triton's own load error, shown verbatim by the page
            from triton_kitchen.repository import control_api_refused

            code = "no_control_api" if control_api_refused(str(exc)) else "load_failed"
            raise FlowError(code, str(exc)) from exc
        try:
            return send(endpoint, name, image=image, protocol=protocol, dag=dag)
        finally:
            try:
                hc.unload_model(name, headers=endpoint.headers)
            except Exception:  # already gone; nothing to clean
                pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def array_bytes(array) -> int:
    """Bytes of a tensor's data as Triton carries it (BYTES: 4-byte length prefix per element)."""
    array = np.asarray(array)
    if array.dtype == object:
        return sum(4 + len(v if isinstance(v, bytes) else str(v).encode()) for v in array.reshape(-1))
    return int(array.nbytes)


def recorded(path: Path | str = RECORDED_TRACE, repo: Path | str = DEFAULT_REPOSITORY) -> list[FlowRun]:
    """The real traces shipped with the app (one per ensemble), labelled ``source="recorded"``."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    runs = []
    for item in data["timelines"]:
        tl = trace.RequestTimeline.from_dict(item)
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


# -- geometry ------------------------------------------------------------------------------------
Point = tuple[float, float]


def positions(dag: Dag) -> tuple[dict[str, Point], dict[tuple[str, str, str], list[Point]]]:
    """Node positions and edge polylines from ``diagram.compute_layout`` (the DAG page's picture);
    our own stage columns if that layout lacks a node or an edge."""
    try:
        from triton_kitchen.diagram import compute_layout

        lay = compute_layout(dag)
        nodes = {k: (float(x), float(y)) for k, (x, y) in lay.positions.items()}
        edges = {
            (e.source, e.target, e.tensor): [(float(x), float(y)) for x, y in e.points] for e in lay.edges
        }
        if all(n in nodes for n in dag.nodes()) and all(e in edges for e in dag.edges()):
            return nodes, edges
    except Exception:  # a layout we cannot read: fall back to our own columns
        pass
    return stage_layout(dag)


def stage_layout(dag: Dag) -> tuple[dict[str, Point], dict[tuple[str, str, str], list[Point]]]:
    """Inputs in column 0, stage k steps in column k, outputs last.

    Each node sits at the mean height of its sources (a branch stays on its row), and nodes of one
    column are pushed apart to at least ROW_GAP units."""
    last = max((s.stage or 0 for s in dag.steps), default=0) + 1
    columns: dict[int, list[str]] = {0: [f"in:{t}" for t in dag.inputs]}
    for s in dag.steps:
        columns.setdefault(s.stage or last, []).append(s.id)
    columns.setdefault(last, []).extend(f"out:{t}" for t in dag.outputs)
    sources: dict[str, list[str]] = {}
    for src, dst, _ in dag.edges():
        sources.setdefault(dst, []).append(src)
    nodes: dict[str, Point] = {}
    for x in sorted(columns):
        ids = columns[x]
        want = []
        for row, nid in enumerate(ids):
            ys = [nodes[p][1] for p in sources.get(nid, []) if p in nodes]
            want.append((sum(ys) / len(ys) if ys else (len(ids) - 1) / 2 - row, row, nid))
        want.sort(key=lambda w: (-w[0], w[1]))
        placed: list[float] = []
        for y, _, _ in want:
            placed.append(min(y, placed[-1] - ROW_GAP) if placed else y)
        shift = (max(w[0] for w in want) + min(w[0] for w in want)) / 2 - (placed[0] + placed[-1]) / 2
        if len(placed) > 1 and any(abs(p - w[0]) > 1e-9 for p, w in zip(placed, want, strict=True)):
            placed = [p + shift for p in placed]
        for y, (_, _, nid) in zip(placed, want, strict=True):
            nodes[nid] = (float(x), float(y))
    edges = {e: [nodes[e[0]], nodes[e[1]]] for e in dag.edges() if e[0] in nodes and e[1] in nodes}
    return nodes, edges


def point_along(points: list[Point], frac: float) -> Point:
    """The point ``frac`` (0..1) of the way along a polyline, by length."""
    frac = min(max(frac, 0.0), 1.0)
    seg = [math.dist(a, b) for a, b in zip(points, points[1:], strict=False)]
    total = sum(seg)
    if total == 0:
        return points[-1]
    goal = frac * total
    for (a, b), d in zip(zip(points, points[1:], strict=False), seg, strict=True):
        if goal <= d and d > 0:
            f = goal / d
            return (a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f)
        goal -= d
    return points[-1]


# -- timing --------------------------------------------------------------------------------------
@dataclass
class Hop:
    """A tensor on one edge: leaves at ``depart``, reaches the end at ``arrive``, enters at ``consumed``."""

    src: str
    dst: str
    tensor: str
    depart: int
    arrive: int
    consumed: int | None  # None: stays (ensemble output)

    def where(self, t_ns: int) -> float | None:
        """Fraction along the edge at ``t_ns`` (None: not on the edge)."""
        if t_ns < self.depart or (
            self.consumed is not None and t_ns >= self.consumed and self.consumed > self.depart
        ):
            return None
        if t_ns >= self.arrive or self.arrive == self.depart:
            return 1.0
        return (t_ns - self.depart) / (self.arrive - self.depart)


def _request_in(tl: trace.RequestTimeline) -> int:
    ts = tl.root.timestamps
    return ts.get("HTTP_RECV_END") or ts.get("GRPC_WAITREAD_END") or tl.root.start_ns


def hops(run: FlowRun) -> list[Hop]:
    """When each tensor travels each edge, from the trace (see the module docstring)."""
    tl = run.timeline
    execs = {s.id: run.timeline.by_step().get(i, [None])[0] for i, s in enumerate(run.dag.steps)}
    out = []
    end_ns = tl.root.timestamps.get(trace.INFER_RESPONSE_COMPLETE, tl.root.end_ns)
    for src, dst, tensor in run.dag.edges():
        if src.startswith("in:"):
            depart = _request_in(tl)
        else:
            p = execs.get(src)
            if p is None:
                continue
            depart = p.timestamps.get(trace.COMPUTE_OUTPUT_START, p.end_ns)
        if dst.startswith("out:"):
            arrive, consumed = max(depart, end_ns), None
        else:
            c = execs.get(dst)
            if c is None:
                continue
            consumed = max(c.start_ns, depart)
            p_end = execs[src].end_ns if src in execs and execs[src] is not None else consumed
            arrive = max(depart, min(p_end, consumed))
        out.append(Hop(src, dst, tensor, depart, arrive, consumed))
    return out


@dataclass
class Frame:
    t_ns: int  # trace time (server clock)
    key: bool  # sits on a timestamp of the trace
    states: dict[str, str]  # step id -> idle/queued/computing/handoff/done
    phases: dict[str, str]  # step id -> compute sub-phase (compute_input/infer/compute_output) or ""
    tensors: dict[tuple[str, str, str], float]  # edge -> fraction along it
    caption: str = ""


def key_times(run: FlowRun) -> list[int]:
    """Every distinct instant of the trace (the key frames), in order."""
    times = {t for t, _, _ in run.timeline.events()}
    for h in hops(run):
        times.update({h.depart, h.arrive})
    return sorted(times)


def frame_times(run: FlowRun, pacing: str = "events", target: int = 120) -> list[tuple[int, bool]]:
    """(t_ns, is_key) for every frame: the key instants plus in-between frames per ``pacing``."""
    if pacing not in PACINGS:
        raise ValueError(f"pacing must be one of {PACINGS}")
    keys = key_times(run)
    if len(keys) < 2:
        return [(k, True) for k in keys]
    span = keys[-1] - keys[0]
    tick = max(span / target, 1)
    out: list[tuple[int, bool]] = []
    for a, b in zip(keys, keys[1:], strict=False):
        out.append((a, True))
        gap = b - a
        if pacing == "real":
            n = max(1, round(gap / tick))
        else:
            n = min(6, max(2, math.ceil(gap / tick)))
        for j in range(1, n):
            out.append((a + (gap * j) // n, False))
    out.append((keys[-1], True))
    return out


def step_phase(ex: trace.StepTrace | None, t_ns: int) -> str:
    if ex is None:
        return ""
    for phase in ex.phases():
        if phase.kind != "queue" and phase.start_ns <= t_ns < phase.end_ns:
            return phase.kind
    return ""


def frames(run: FlowRun, lang: str = "zh", pacing: str = "events", target: int = 120) -> list[Frame]:
    execs = {s.id: run.timeline.by_step().get(i, [None])[0] for i, s in enumerate(run.dag.steps)}
    hop_list = hops(run)
    out = []
    for t_ns, key in frame_times(run, pacing, target):
        states = {sid: (ex.state_at(t_ns) if ex is not None else "idle") for sid, ex in execs.items()}
        phases = {sid: step_phase(ex, t_ns) for sid, ex in execs.items()}
        tensors = {}
        for h in hop_list:
            f = h.where(t_ns)
            if f is not None:
                tensors[(h.src, h.dst, h.tensor)] = f
        fr = Frame(t_ns, key, states, phases, tensors)
        fr.caption = caption(run, fr, hop_list, lang)
        out.append(fr)
    return out


def _shape_bytes(run: FlowRun, tensor: str) -> tuple[str, str]:
    shape = run.shapes.get(tensor)
    dt = next((x for x in run.dag.tensors if x.name == tensor), None)
    nbytes = run.sizes.get(tensor)
    if nbytes is None and shape is not None and dt is not None and dt.data_type:
        from triton_kitchen.ensemble import tensor_bytes

        nbytes = tensor_bytes(dt.data_type, shape)
    if nbytes is None and dt is not None:
        nbytes = dt.bytes
    shape_s = "[" + ",".join(str(d) for d in shape) + "]" if shape is not None else "[?]"
    return shape_s, format_bytes(nbytes) if nbytes is not None else "?"


def tensor_label(run: FlowRun, tensor: str) -> str:
    shape, size = _shape_bytes(run, tensor)
    return f"{tensor} {shape} {size}"


def caption(run: FlowRun, fr: Frame, hop_list: list[Hop], lang: str) -> str:
    """One line: the time, then what each busy step and each moving tensor is doing."""
    tl = run.timeline
    ms = (fr.t_ns - tl.origin_ns) / 1e6
    parts = []
    for s in run.dag.steps:
        state = fr.states.get(s.id)
        if state == "queued":
            parts.append(_t("lab_flow.cap_queued", lang, step=s.id))
        elif state == "computing":
            sub = fr.phases.get(s.id) or "infer"
            parts.append(
                _t("lab_flow.cap_computing", lang, step=s.id, phase=_t(f"lab_flow.phase_{sub}", lang))
            )
    for h in hop_list:
        f = fr.tensors.get((h.src, h.dst, h.tensor))
        if f is None:
            continue
        dst = h.dst[4:] if h.dst.startswith("out:") else h.dst
        if h.dst.startswith("out:"):
            if f < 1.0:
                parts.append(_t("lab_flow.cap_moving", lang, tensor=tensor_label(run, h.tensor), dst=dst))
        elif f < 1.0:
            parts.append(_t("lab_flow.cap_moving", lang, tensor=tensor_label(run, h.tensor), dst=dst))
        else:
            parts.append(_t("lab_flow.cap_waiting", lang, tensor=h.tensor, dst=dst))
    if not parts:
        root = tl.root.timestamps
        if fr.t_ns < tl.root.start_ns:
            parts.append(_t("lab_flow.cap_sending", lang, proto=_protocol_name(tl.protocol, lang)))
        elif fr.t_ns >= root.get(trace.INFER_RESPONSE_COMPLETE, tl.root.end_ns):
            parts.append(_t("lab_flow.cap_done", lang, outputs=", ".join(run.dag.outputs)))
        else:
            parts.append(_t("lab_flow.cap_scheduler", lang))
    if len(parts) > 3:
        parts = parts[:3] + ["…"]
    return f"{ms:7.3f} ms · " + " · ".join(parts)


# -- figures -------------------------------------------------------------------------------------
def _source_label(run: FlowRun, lang: str) -> str:
    return _t(f"lab_flow.source_{run.source}", lang)


def _protocol_name(protocol: str | None, lang: str) -> str:
    """ "grpc" -> "gRPC", "http" -> "HTTP" (the UI strings' [protocol] table)."""
    name = _t(f"protocol.{protocol or '?'}", lang)
    return name if not name.startswith("protocol.") else (protocol or "?")


def animation(run: FlowRun, lang: str = "zh", pacing: str = "events", target: int = 120, height: int = 520):
    """The request as a plotly animation on the DAG: steps change colour, tensors travel the edges."""
    import plotly.graph_objects as go

    nodes, paths = positions(run.dag)
    frs = frames(run, lang, pacing, target)
    steps = run.dag.steps
    edge_keys = [e for e in run.dag.edges() if e in paths]
    xs_all = [p[0] for p in nodes.values()]
    ys_all = [p[1] for p in nodes.values()]
    x0, x1 = min(xs_all) - 0.9, max(xs_all) + 0.9  # room for a tensor's label at the first/last node
    y0, y1 = min(ys_all) - 0.9, max(ys_all) + 1.0

    ex, ey = [], []
    for e in edge_keys:
        for x, y in paths[e]:
            ex.append(x)
            ey.append(y)
        ex.append(None)
        ey.append(None)
    edges_trace = go.Scatter(
        x=ex, y=ey, mode="lines", line={"color": "#aab2bd", "width": 2}, hoverinfo="skip", showlegend=False
    )
    io_ids = [n for n in nodes if n.startswith(("in:", "out:"))]
    io_trace = go.Scatter(
        x=[nodes[n][0] for n in io_ids],
        y=[nodes[n][1] for n in io_ids],
        mode="markers+text",
        marker={"symbol": "circle", "size": 18, "color": "#ffffff", "line": {"color": "#34495e", "width": 2}},
        text=[n.split(":", 1)[1] for n in io_ids],
        textposition="bottom center",
        hoverinfo="text",
        showlegend=False,
    )

    px_per_unit = (height - 170) / (y1 - y0)  # plot area: height minus title, buttons and slider
    box = int(max(26, min(58, 0.45 * px_per_unit)))

    def step_trace(fr: Frame):
        colors = [STATE_COLORS[fr.states.get(s.id, "idle")] for s in steps]
        labels = []
        for s in steps:
            st = fr.states.get(s.id, "idle")
            badge = {"queued": "◷ ", "computing": "⚙ "}.get(st, "")
            sub = (
                _t(f"lab_flow.phase_{fr.phases[s.id]}", lang)
                if st == "computing" and fr.phases.get(s.id)
                else _t(f"lab_flow.state_{st}", lang)
            )
            labels.append(f"{badge}<b>{s.id}</b><br>{sub}")
        return go.Scatter(
            x=[nodes[s.id][0] for s in steps],
            y=[nodes[s.id][1] for s in steps],
            mode="markers+text",
            marker={
                "symbol": "square",
                "size": box,
                "color": colors,
                "line": {"color": "#2c3e50", "width": 2},
            },
            text=labels,
            textposition="top center",
            cliponaxis=False,
            hoverinfo="text",
            showlegend=False,
        )

    def tensor_trace(fr: Frame):
        xs, ys, labels = [], [], []
        for e in edge_keys:
            f = fr.tensors.get(e)
            if f is None:  # parked outside the visible range (None points draw a stray marker)
                xs.append(x0 - 10)
                ys.append(y0 - 10)
                labels.append("")
            else:
                x, y = point_along(paths[e], f)
                xs.append(x)
                ys.append(y)
                labels.append(tensor_label(run, e[2]))
        return go.Scatter(
            x=xs,
            y=ys,
            mode="markers+text",
            marker={
                "symbol": "diamond",
                "size": 16,
                "color": "#e74c3c",
                "line": {"color": "#7b241c", "width": 1},
            },
            text=labels,
            textposition="top center",
            textfont={"size": 11, "color": "#7b241c"},
            cliponaxis=False,  # the last frame's label ("top5_scores [1,5] 20 B") sits at the edge
            hoverinfo="text",
            showlegend=False,
        )

    def caption_trace(fr: Frame):
        return go.Scatter(
            x=[(x0 + x1) / 2],
            y=[y1 - 0.15],
            mode="text",
            text=[fr.caption],
            textfont={"size": 14, "color": "#1b2631"},
            cliponaxis=False,
            hoverinfo="skip",
            showlegend=False,
        )

    names = [f"f{i}" for i in range(len(frs))]
    go_frames = [
        go.Frame(name=n, data=[step_trace(fr), tensor_trace(fr), caption_trace(fr)], traces=[2, 3, 4])
        for n, fr in zip(names, frs, strict=True)
    ]
    first = frs[0]
    fig = go.Figure(
        data=[edges_trace, io_trace, step_trace(first), tensor_trace(first), caption_trace(first)],
        frames=go_frames,
    )
    origin = run.timeline.origin_ns
    slider_steps = [
        {
            "method": "animate",
            "label": f"{(fr.t_ns - origin) / 1e6:.3f} ms",
            "args": [
                [n],
                {
                    "mode": "immediate",
                    "frame": {"duration": 0, "redraw": True},
                    "transition": {"duration": 0},
                },
            ],
        }
        for n, fr in zip(names, frs, strict=True)
    ]

    def play(ms: int) -> dict:
        return {
            "frame": {"duration": ms, "redraw": True},
            "fromcurrent": True,
            "transition": {"duration": 0},
            "mode": "immediate",
        }

    buttons = [
        {"label": _t(f"lab_flow.play_{name}", lang), "method": "animate", "args": [None, play(ms)]}
        for name, ms in SPEEDS.items()
    ]
    buttons.append(
        {
            "label": _t("lab_flow.pause", lang),
            "method": "animate",
            "args": [
                [None],
                {
                    "frame": {"duration": 0, "redraw": False},
                    "mode": "immediate",
                    "transition": {"duration": 0},
                },
            ],
        }
    )
    title = _t(
        "lab_flow.anim_title",
        lang,
        model=run.dag.name,
        source=_source_label(run, lang),
        ms=run.timeline.server_ms,
        proto=_protocol_name(run.timeline.protocol, lang),
    )
    fig.update_layout(
        title={"text": title, "x": 0.01, "font": {"size": 15}},
        height=height,
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
        plot_bgcolor="#fbfcfd",
        xaxis={"visible": False, "range": [x0, x1]},
        yaxis={"visible": False, "range": [y0, y1]},
        updatemenus=[
            {
                "type": "buttons",
                "direction": "left",
                "showactive": False,
                "x": 0.0,
                "y": -0.02,
                "xanchor": "left",
                "yanchor": "top",
                "buttons": buttons,
            }
        ],
        sliders=[
            {
                "active": 0,
                "steps": slider_steps,
                "x": 0.0,
                "len": 1.0,
                "y": -0.12,
                "yanchor": "top",
                "currentvalue": {"prefix": "t = ", "font": {"size": 13}},
                "font": {"color": "rgba(0,0,0,0)"},
                "ticklen": 2,
                "pad": {"t": 10},
            }
        ],
    )
    fig.update_layout(margin={"b": 120})
    fig.layout.meta = {
        "frame_t_ns": [fr.t_ns for fr in frs],
        "frame_key": [fr.key for fr in frs],
        "origin_ns": origin,
        "pacing": pacing,
        "source": run.source,
    }
    return fig


GANTT_PHASES = ("queue", "compute_input", "infer", "compute_output")


def gantt_rows(run: FlowRun) -> list[tuple[str, trace.Phase]]:
    """(row label, phase) for the Gantt chart: network legs, then each step execution's phases."""
    rows: list[tuple[str, trace.Phase]] = []
    for p in run.timeline.network_phases():
        rows.append(("network", p))
    for i, s in enumerate(run.dag.steps):
        for ex in run.timeline.by_step().get(i, []):
            for p in ex.phases():
                rows.append((s.id, p))
    return rows


def gantt(run: FlowRun, lang: str = "zh", height: int = 420):
    """The same request as a timeline: per step queue / compute input / infer / compute output, and the network legs."""
    import plotly.graph_objects as go

    origin = run.timeline.origin_ns
    rows = gantt_rows(run)
    order = ["network"] + [s.id for s in run.dag.steps]
    fig = go.Figure()
    seen: set[str] = set()
    for kind in (*GANTT_PHASES, "client_send", "http_recv", "grpc_send", "http_send", "client_receive"):
        sel = [(label, p) for label, p in rows if p.kind == kind]
        if not sel:
            continue
        name = _t(f"lab_flow.phase_{kind}", lang)
        fig.add_trace(
            go.Bar(
                y=[_t("lab_flow.row_network", lang) if lb == "network" else lb for lb, _ in sel],
                x=[max(p.duration_ms, 0.002) for _, p in sel],
                base=[(p.start_ns - origin) / 1e6 for _, p in sel],
                orientation="h",
                name=name,
                marker={"color": PHASE_COLORS.get(kind, "#95a5a6")},
                hovertemplate=name + ": %{base:.3f} → +%{x:.3f} ms<extra>%{y}</extra>",
                showlegend=kind not in seen,
            )
        )
        seen.add(kind)
    labels = [_t("lab_flow.row_network", lang) if r == "network" else r for r in order]
    fig.update_layout(
        barmode="overlay",
        height=height,
        title={
            "text": _t("lab_flow.gantt_title", lang, source=_source_label(run, lang)),
            "x": 0.01,
            "font": {"size": 15},
        },
        xaxis={"title": _t("lab_flow.gantt_x", lang), "zeroline": True},
        yaxis={"categoryorder": "array", "categoryarray": list(reversed(labels))},
        legend={"orientation": "h", "y": -0.25},
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig
