"""Chapter 11's live experiments: generation on the real server.

:func:`endpoint_rules` sends the same few requests a learner would to Triton's generate extension on the
decoupled ``streamer`` model and keeps what Triton said, word for word: ``/generate`` with a text that streams
two tokens (Triton wants exactly one response: HTTP 200 with an error body), with one token (served), a
``generate_stream`` body whose extra key is a list (no parameter type: HTTP 400) and ``/infer`` (a decoupled
model: 501). :meth:`EndpointRules.outcome` says which of the page's predictions came true, from the first
call's status and body.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import plotly.graph_objects as go

from triton_kitchen.core import catalog, kserve, lessons
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.server import DEFAULT_REPOSITORY
from triton_kitchen.tools import generation
from triton_kitchen.tools.generation import IDLE_COLOR, JOIN_COLOR, LEAVE_COLOR, TOKEN_COLOR, WAIT_COLOR

# What each call sends to the streamer (it answers one token per word of ``text``; ``delay_ms`` 0: no pause).
CALLS: tuple[tuple[str, str, dict], ...] = (
    ("generate_two", "generate", {"text": "hello kitchen", "delay_ms": 0}),
    ("generate_one", "generate", {"text": "hello", "delay_ms": 0}),
    ("stream_list", "generate_stream", {"text": "hello", "delay_ms": 0, "stop": ["a", "b"]}),
    ("stream_ok", "generate_stream", {"text": "hello kitchen", "delay_ms": 0, "temperature": 0.5, "seed": 7}),
    (
        "infer",
        "infer",
        {"inputs": [{"name": "text", "shape": [1], "datatype": "BYTES", "data": ["hello kitchen"]}]},
    ),
)
OUTCOMES = ("json_ok", "error_200", "refused_501", "refused_400")


@dataclass(frozen=True)
class EndpointCall:
    key: str  # which of CALLS
    path: str
    body: dict
    status: int
    text: str  # the response body as Triton sent it (SSE events included)

    @property
    def error(self) -> str | None:
        """Triton's own words when the body is ``{"error": ...}``; None otherwise."""
        try:
            data = json.loads(self.text)
        except ValueError:
            return None
        return data.get("error") if isinstance(data, dict) else None

    @property
    def readable(self) -> str:
        """The body with a space after each JSON separator (so a table can wrap it); as sent when not JSON."""
        try:
            return json.dumps(json.loads(self.text), ensure_ascii=False, separators=(", ", ": "))
        except ValueError:
            return self.text

    @property
    def events(self) -> int:
        """Server-Sent Events in the body (``data:`` lines)."""
        return sum(line.startswith("data:") for line in self.text.splitlines())


@dataclass(frozen=True)
class EndpointRules:
    model: str
    calls: tuple[EndpointCall, ...]

    def call(self, key: str) -> EndpointCall:
        return next(c for c in self.calls if c.key == key)

    def outcome(self) -> str:
        """What ``/generate`` did with the two-token text: one of OUTCOMES."""
        first = self.call("generate_two")
        if first.status == 501:
            return "refused_501"
        if first.status >= 400:
            return "refused_400"
        return "error_200" if first.error else "json_ok"


def endpoint_rules(ep: Endpoint, model: str = catalog.STREAMER, timeout: float = 10.0) -> EndpointRules:
    """Send CALLS to ``model`` on the server at ``ep`` and keep each status and body."""
    calls = []
    for key, kind, body in CALLS:
        path = f"/v2/models/{model}/{kind}"
        status, raw = kserve.request(ep, "POST", path, body, timeout=timeout)
        calls.append(EndpointCall(key, path, body, status, raw.decode("utf-8", errors="replace")))
    return EndpointRules(model, tuple(calls))


# -- two schedulers on the same load ------------------------------------------------------------------------------
# The course's language model under request-level batching (TINY_LM: the dynamic batcher; one execute runs its batch
# until the longest sequence ends) and under in-flight batching (TINY_LM_IFB: iterative sequences, one execute per
# step). Both models record every step; each response carries the step that produced its token.
SCHEDULERS = (("request_level", catalog.TINY_LM), ("in_flight", catalog.TINY_LM_IFB))
OUTPUT_LENGTHS = (8, 16, 32, 64)
PROMPT_BYTES = (8, 64)  # prompts of 8..64 bytes: the tokenizer is byte-level, so 8..64 tokens
SCHEDULER_OUTCOMES = ("in_flight", "same", "request_level")


def scheduling_lines(model: str) -> str:
    """The lines of ``model``'s config.pbtxt that choose its scheduler: from ``max_batch_size`` up to its inputs
    (the two models differ only there)."""
    text = (DEFAULT_REPOSITORY / model / "config.pbtxt").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    start = next(i for i, line in enumerate(lines) if line.startswith("max_batch_size"))
    end = next(i for i, line in enumerate(lines) if line.startswith("input"))
    return "\n".join(lines[start:end]).strip()


def draw_jobs(n: int, seed: int, lang: str = "en") -> list[generation.Job]:
    """``n`` jobs drawn with ``seed``: a prompt of 8..64 bytes cut from chapter 11's own lesson (at a character
    boundary) and an output length from OUTPUT_LENGTHS, temperature 0, EOS ignored so each gets the length drawn."""
    rng = np.random.default_rng(seed)
    text = " ".join(lessons.load_lesson(11, lang).body.split()).encode("utf-8")
    jobs = []
    for _ in range(n):
        length = int(rng.integers(PROMPT_BYTES[0], PROMPT_BYTES[1] + 1))
        start = int(rng.integers(0, len(text) - PROMPT_BYTES[1] - 4))
        while start and (text[start] & 0xC0) == 0x80:  # not inside a UTF-8 character
            start -= 1
        prompt = text[start : start + length].decode("utf-8", errors="ignore").strip() or "Triton"
        jobs.append(generation.Job(prompt, int(rng.choice(OUTPUT_LENGTHS)), parameters={"ignore_eos": True}))
    return jobs


@dataclass(frozen=True)
class Lane:
    """One sequence on the timeline: who asked, when it was sent, which steps gave it tokens."""

    request_id: str
    sent_ms: (
        float | None
    )  # the client's send, on the timeline's clock (ms after the run's first step started)
    token_steps: tuple[int, ...]  # the steps (their index in SchedulerRun.steps) that gave it a token
    idle_steps: tuple[
        int, ...
    ]  # steps where it held a place without computing (request-level: finished early)


@dataclass
class SchedulerRun:
    """One scheduler on the load: the client's runs and the server's recorded steps (each one execution)."""

    scheduler: str
    model: str
    load: generation.LoadResult
    steps: list[dict] = field(default_factory=list)
    executions: int | None = None  # Triton's execution_count over the run (its statistics); None: not read

    def __post_init__(self) -> None:
        if not self.steps:
            self.steps = generation.server_steps(self.load.runs)

    @property
    def t0_ns(self) -> int:
        return self.steps[0]["start_ns"] if self.steps else 0

    def at_ms(self, ns: int) -> float:
        return round((ns - self.t0_ns) / 1e6, 2)

    def lanes(self) -> list[Lane]:
        """Every sequence of the run, in the order it first held a place."""
        sent = {r.request_id: r.sent_ns for r in self.load.runs if r.request_id}
        tokens: dict[str, list[int]] = {}
        idle: dict[str, list[int]] = {}
        for i, s in enumerate(self.steps):
            for b in s["batch"]:
                (tokens if b["tokens"] else idle).setdefault(b["request_id"], []).append(i)
                tokens.setdefault(b["request_id"], [])
        return [
            Lane(
                rid,
                self.at_ms(sent[rid]) if rid in sent else None,
                tuple(tokens[rid]),
                tuple(idle.get(rid, ())),
            )
            for rid in tokens
        ]

    def kv_bytes(self) -> list[tuple[float, int]]:
        """KV-cache bytes held after each step (every place in the batch, finished ones included), by time."""
        return [(self.at_ms(s["end_ns"]), sum(b["kv_bytes"] for b in s["batch"])) for s in self.steps]

    def errors(self) -> list[str]:
        """The clients' errors, as they got them (a refused or broken stream)."""
        return [r.error for r in self.load.runs if r.error]

    def client(self) -> dict:
        return generation.summarize(self.load)

    def server(self) -> dict:
        """The server's side of the same figures, from its recorded steps: when each token was ready (a step's end)
        after its request was sent, the gaps between one sequence's tokens, tokens/s over the recorded steps."""
        sent = {r.request_id: r.sent_ns for r in self.load.runs if r.request_id}
        ready: dict[str, list[int]] = {}
        for s in self.steps:
            for b in s["batch"]:
                if b["tokens"]:
                    ready.setdefault(b["request_id"], []).append(s["end_ns"])
        ttft = [(ends[0] - sent[rid]) / 1e6 for rid, ends in ready.items() if rid in sent]
        itl = [(b - a) / 1e6 for ends in ready.values() for a, b in zip(ends, ends[1:], strict=False)]
        occupancy = generation.occupancy(self.steps)
        return {
            "ttft_ms": {"p50": generation.percentile(ttft, 50), "p99": generation.percentile(ttft, 99)},
            "itl_ms": {"p50": generation.percentile(itl, 50), "p99": generation.percentile(itl, 99)},
            "tokens_per_s": occupancy.get("predicted_tokens_per_s"),
            "steps": occupancy.get("steps", 0),
            "running_per_step": occupancy.get("running_per_step"),
            "places_per_step": occupancy.get("places_per_step"),
            "time_per_step_ms": occupancy.get("time_per_step_ms"),
            "compute_ms": occupancy.get("compute_ms"),
            "outside_ms": occupancy.get("outside_ms"),
        }


@dataclass
class Comparison:
    """Both schedulers on the same jobs and the same number of clients."""

    clients: int
    jobs: list[generation.Job]
    runs: list[SchedulerRun]

    def run(self, scheduler: str) -> SchedulerRun:
        return next(r for r in self.runs if r.scheduler == scheduler)

    def ratio(self) -> float | None:
        """In-flight tokens/s over request-level tokens/s, as the clients counted them."""
        a, b = (self.run(s).load.tokens_per_s for s in ("in_flight", "request_level"))
        return a / b if a and b else None

    def outcome(self) -> str:
        """Which scheduler gave more tokens/s (one of SCHEDULER_OUTCOMES): 15 % either way is 'same'."""
        ratio = self.ratio()
        if ratio is None or 1 / 1.15 < ratio < 1.15:
            return "same"
        return "in_flight" if ratio >= 1.15 else "request_level"


def execution_count(ep: Endpoint, model: str, settle_s: float = 0.0) -> int | None:
    """Triton's execution_count for ``model`` (its statistics); with ``settle_s``, read until two reads 50 ms
    apart agree (Triton counts an execution when it ends, after its last response may have arrived)."""

    def read() -> int | None:
        try:
            return int(kserve.statistics(ep, model)["model_stats"][0]["execution_count"])
        except (kserve.KServeError, KeyError, IndexError, ValueError):
            return None

    value = read()
    deadline = time.monotonic() + settle_s
    while time.monotonic() < deadline:
        time.sleep(0.05)
        again = read()
        if again == value:
            break
        value = again
    return value


def compare_schedulers(
    ep: Endpoint,
    clients: int,
    jobs_per_client: int = 2,
    seed: int = 2026,
    lang: str = "en",
    protocol: str = generation.HTTP,
) -> Comparison:
    """The same drawn jobs to each scheduler's model in turn, ``clients`` closed-loop clients, each job streamed."""
    jobs = draw_jobs(clients * jobs_per_client, seed, lang)
    warm = [generation.Job(jobs[0].prompt, 4, parameters={"ignore_eos": True})] * 2
    runs = []
    for scheduler, model in SCHEDULERS:
        generation.closed_loop(ep, model, warm, 2, protocol)  # a model's first steps are slower: not measured
        before = execution_count(ep, model)
        load = generation.closed_loop(ep, model, jobs, clients, protocol)
        after = execution_count(ep, model, settle_s=1.0)
        executions = after - before if before is not None and after is not None else None
        runs.append(SchedulerRun(scheduler, model, load, executions=executions))
    return Comparison(clients, jobs, runs)


# -- the figures: drawn only from the recorded steps ------------------------------------------------------------


def _frame_traces(run: SchedulerRun, upto: int, lanes: list[Lane], names: dict[str, str]) -> list[go.Scatter]:
    """The timeline as it stood after step ``upto``: waits, tokens, idle places, joins and leaves so far."""
    now = run.at_ms(run.steps[upto]["end_ns"])
    row = {lane.request_id: i for i, lane in enumerate(lanes)}
    wait_x, wait_y = [], []
    tok_x, tok_y, idle_x, idle_y, join_x, join_y, leave_x, leave_y = ([] for _ in range(8))
    for lane in lanes:
        y = row[lane.request_id]
        first = lane.token_steps[0] if lane.token_steps else None
        if lane.sent_ms is not None and lane.sent_ms <= now:
            until = run.at_ms(run.steps[first]["start_ns"]) if first is not None and first <= upto else now
            wait_x += [lane.sent_ms, until, None]
            wait_y += [y, y, None]
        for i in lane.token_steps:
            if i <= upto:
                tok_x.append(run.at_ms(run.steps[i]["end_ns"]))
                tok_y.append(y)
        for i in lane.idle_steps:
            if i <= upto:
                idle_x.append(run.at_ms(run.steps[i]["end_ns"]))
                idle_y.append(y)
        if first is not None and first <= upto:
            join_x.append(run.at_ms(run.steps[first]["start_ns"]))
            join_y.append(y)
        last = max([*lane.token_steps, *lane.idle_steps], default=None)  # its place is freed after this step
        if last is not None and last <= upto:
            leave_x.append(run.at_ms(run.steps[last]["end_ns"]))
            leave_y.append(y)
    return [
        go.Scatter(
            x=wait_x,
            y=wait_y,
            mode="lines",
            line={"color": WAIT_COLOR, "width": 3, "dash": "dot"},
            name=names["wait"],
        ),
        go.Scatter(
            x=idle_x,
            y=idle_y,
            mode="markers",
            marker={"color": IDLE_COLOR, "symbol": "line-ns-open", "size": 9},
            name=names["idle"],
        ),
        go.Scatter(
            x=tok_x,
            y=tok_y,
            mode="markers",
            marker={"color": TOKEN_COLOR, "symbol": "line-ns-open", "size": 11, "line": {"width": 2}},
            name=names["token"],
        ),
        go.Scatter(
            x=join_x,
            y=join_y,
            mode="markers",
            marker={"color": JOIN_COLOR, "symbol": "triangle-right", "size": 10},
            name=names["join"],
        ),
        go.Scatter(
            x=leave_x,
            y=leave_y,
            mode="markers",
            marker={"color": LEAVE_COLOR, "symbol": "square", "size": 8},
            name=names["leave"],
        ),
    ]


def frame_name(step: dict) -> str:
    """A frame's name: the recorded step it shows (its scheduler and Triton execution step number)."""
    return f"{step['scheduler']}:{step['step']}"


def timeline_figure(run: SchedulerRun, names: dict[str, str], title: str = "") -> go.Figure:
    """A lane per sequence, a tick per token at the end of the step that computed it, grey ticks where a finished
    sequence still held its place, the wait from the client's send to the sequence's first step, a triangle where it
    joined and a square where it left. Animated: one frame per recorded step (``frame_name``), the last one shown
    first; ``names`` holds the legend's words (wait, idle, token, join, leave) and the axes' (time, sequence)."""
    lanes = run.lanes()
    fig = go.Figure()
    if not run.steps:
        return fig
    last = len(run.steps) - 1
    for trace in _frame_traces(run, last, lanes, names):
        fig.add_trace(trace)
    fig.frames = [
        go.Frame(data=_frame_traces(run, i, lanes, names), name=frame_name(s))
        for i, s in enumerate(run.steps)
    ]
    end = max(run.at_ms(run.steps[-1]["end_ns"]), 1.0)
    start = min([0.0, *(lane.sent_ms for lane in lanes if lane.sent_ms is not None)])
    fig.update_layout(
        title=title,
        height=max(320, 26 * len(lanes) + 260),
        margin={"l": 10, "r": 10, "t": 110 if title else 90, "b": 10},
        xaxis={"title": names["time"], "range": [start, end * 1.02]},
        yaxis={
            "title": names["sequence"],
            "tickmode": "array",
            "tickvals": list(range(len(lanes))),
            "ticktext": [lane.request_id for lane in lanes],
            "autorange": "reversed",
        },
        legend={"orientation": "h", "x": 0.08, "y": 1.02, "yanchor": "bottom", "xanchor": "left"},
        updatemenus=[
            {
                "type": "buttons",
                "showactive": False,
                "x": 0,
                "y": 1.02,
                "yanchor": "bottom",
                "xanchor": "left",
                "buttons": [
                    {
                        "label": "▶",
                        "method": "animate",
                        "args": [
                            None,
                            {
                                "frame": {"duration": 60, "redraw": False},
                                "fromcurrent": False,
                                "transition": {"duration": 0},
                            },
                        ],
                    }
                ],
            }
        ],
        sliders=[
            {
                "active": last,
                "currentvalue": {"prefix": names["step"] + " "},
                "pad": {"t": 50},
                "steps": [
                    {
                        "label": str(
                            i + 1
                        ),  # the step's place in this run; the frame's name is Triton's step
                        "method": "animate",
                        "args": [
                            [frame_name(s)],
                            {"frame": {"duration": 0, "redraw": False}, "mode": "immediate"},
                        ],
                    }
                    for i, s in enumerate(run.steps)
                ],
            }
        ],
    )
    return fig


def kv_figure(comparison: Comparison, names: dict[str, str]) -> go.Figure:
    """KV-cache bytes held after each recorded step, both schedulers on one time axis (ms from their first step);
    ``names`` maps each scheduler to its label and holds the axes' words (time, kv)."""
    fig = go.Figure()
    for run in comparison.runs:
        points = run.kv_bytes()
        fig.add_trace(
            go.Scatter(
                x=[t for t, _ in points],
                y=[b / 1024 for _, b in points],
                mode="lines",
                line={"shape": "hv"},
                name=names[run.scheduler],
            )
        )
    fig.update_layout(
        height=280,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        xaxis={"title": names["time"]},
        yaxis={"title": names["kv"], "rangemode": "tozero"},
        legend={"orientation": "h", "y": -0.3},
    )
    return fig


def comparison_to_dict(comparison: Comparison) -> dict:
    """A comparison as plain JSON-able data: the jobs, and per scheduler every client run with its records."""
    return {
        "clients": comparison.clients,
        "jobs": [asdict(j) for j in comparison.jobs],
        "runs": [
            {
                "scheduler": r.scheduler,
                "model": r.model,
                "wall_s": r.load.wall_s,
                "executions": r.executions,
                "clients": r.load.clients,
                "runs": [asdict(g) for g in r.load.runs],
            }
            for r in comparison.runs
        ],
    }


def comparison_from_dict(data: dict) -> Comparison:
    """The inverse of :func:`comparison_to_dict` (a recorded run read back: the steps come from its records)."""
    runs = [
        SchedulerRun(
            r["scheduler"],
            r["model"],
            generation.LoadResult(
                [generation.GenerationRun(**g) for g in r["runs"]], r["wall_s"], r["clients"]
            ),
            executions=r.get("executions"),
        )
        for r in data["runs"]
    ]
    return Comparison(data["clients"], [generation.Job(**j) for j in data["jobs"]], runs)
