"""When each thing happens in a :class:`~triton_kitchen.tools.flow.run.FlowRun`: tensor hops, frames, captions.

Every *key frame* sits exactly on a timestamp of the trace (``Frame.t_ns``; ``Frame.key``); between key
frames, in-between frames interpolate the tensors' positions. All frames are shown for the same display
time, so the number of frames in a gap decides how long it plays:

- ``pacing="real"``: frames per gap proportional to the gap's trace time (a true slow motion);
- ``pacing="events"``: every gap gets at least two frames and at most six, so microsecond hand-offs
  between steps stay visible next to millisecond computations (order kept, durations compressed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from triton_kitchen.core.lessons import t as _t
from triton_kitchen.core.tensors import format_bytes, tensor_bytes
from triton_kitchen.tools import trace
from triton_kitchen.tools.flow.run import FlowRun

PACINGS = ("events", "real")


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


def _shape_bytes(run: FlowRun, tensor: str, lang: str = "en") -> tuple[str, str]:
    shape = run.shapes.get(tensor)
    dt = next((x for x in run.dag.tensors if x.name == tensor), None)
    nbytes = run.sizes.get(tensor)
    if nbytes is None and shape is not None and dt is not None and dt.data_type:
        nbytes = tensor_bytes(dt.data_type, shape)
    if nbytes is None and dt is not None:
        nbytes = dt.bytes
    shape_s = "[" + ",".join(str(d) for d in shape) + "]" if shape is not None else "[?]"
    # a size the trace did not give and the type cannot tell (BYTES strings): in words, as the DAGs say it
    return shape_s, format_bytes(nbytes) if nbytes is not None else _t("diagram.size_varies", lang)


def tensor_label(run: FlowRun, tensor: str, lang: str = "en") -> str:
    shape, size = _shape_bytes(run, tensor, lang)
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
                parts.append(
                    _t("lab_flow.cap_moving", lang, tensor=tensor_label(run, h.tensor, lang), dst=dst)
                )
        elif f < 1.0:
            parts.append(_t("lab_flow.cap_moving", lang, tensor=tensor_label(run, h.tensor, lang), dst=dst))
        else:
            parts.append(_t("lab_flow.cap_waiting", lang, tensor=h.tensor, dst=dst))
    if not parts:
        root = tl.root.timestamps
        if fr.t_ns < tl.root.start_ns:
            parts.append(_t("lab_flow.cap_sending", lang, proto=protocol_name(tl.protocol, lang)))
        elif fr.t_ns >= root.get(trace.INFER_RESPONSE_COMPLETE, tl.root.end_ns):
            parts.append(_t("lab_flow.cap_done", lang, outputs=", ".join(run.dag.outputs)))
        else:
            parts.append(_t("lab_flow.cap_scheduler", lang))
    if len(parts) > 3:
        parts = parts[:3] + ["…"]
    return f"{ms:7.3f} ms · " + " · ".join(parts)


def protocol_name(protocol: str | None, lang: str) -> str:
    """ "grpc" -> "gRPC", "http" -> "HTTP" (the UI strings' [protocol] table)."""
    name = _t(f"protocol.{protocol or '?'}", lang)
    return name if not name.startswith("protocol.") else (protocol or "?")
