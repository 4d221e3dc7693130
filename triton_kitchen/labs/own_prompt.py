"""Chapter 11's "your own prompt": the learner's text sent to the course's language model on the real server.

The learner's own prompt (:func:`own_ask`, :func:`own_stream`, :func:`own_result`): checked before it is sent
(an empty prompt is refused; max tokens and temperature are clamped, each change kept as a note), streamed token by
token from the in-flight model over ``generate_stream``, and timed by the client beside the server's record of the
same request. At most :data:`OWN_SEATS` of these generate at once in the whole app (:data:`SEATS`, a :class:`~triton_kitchen.tools.seats.Seats`): the rest wait in
line, first come first served, each with its place.
"""

from __future__ import annotations

import queue
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import plotly.graph_objects as go

from triton_kitchen.core import catalog
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.tools import generation
from triton_kitchen.tools.generation import JOIN_COLOR, LEAVE_COLOR, TOKEN_COLOR
from triton_kitchen.tools.seats import Seats

OWN_MODEL = catalog.TINY_LM_IFB
OWN_MAX_TOKENS = 128  # the page's bound (a full context is 256 tokens: the model clamps again against it)
OWN_DEFAULT_TOKENS = 48
OWN_MAX_TEMPERATURE = 2.0
OWN_SEATS = 4  # generations from this app at once (the whole class); the rest wait in line
OWN_TIMEOUT_S = 30.0


class EmptyPrompt(ValueError):
    """The prompt has no text: nothing is sent."""


@dataclass(frozen=True)
class OwnAsk:
    """What the page sends for the learner's prompt, and what it changed on the way (``notes``: a key of
    ``ui.toml [ch11] own_note_<key>`` and its values)."""

    job: generation.Job
    notes: tuple[tuple[str, dict], ...] = ()


def own_ask(prompt: str, max_tokens, temperature) -> OwnAsk:
    """The learner's input made sendable: :class:`EmptyPrompt` for a prompt with no text; max tokens clamped
    to 1..OWN_MAX_TOKENS and temperature to 0..OWN_MAX_TEMPERATURE (unreadable numbers: the defaults), each
    change noted. A prompt longer than the context is sent whole: the model keeps its newest tokens and its
    record says how many it dropped."""
    if not (prompt or "").strip():
        raise EmptyPrompt("the prompt is empty")
    notes: list[tuple[str, dict]] = []
    try:
        tokens = int(max_tokens)
    except (TypeError, ValueError):
        tokens = OWN_DEFAULT_TOKENS
    if tokens < 1:
        notes.append(("tokens_low", {"asked": tokens, "used": 1}))
        tokens = 1
    elif tokens > OWN_MAX_TOKENS:
        notes.append(("tokens_high", {"asked": tokens, "used": OWN_MAX_TOKENS}))
        tokens = OWN_MAX_TOKENS
    try:
        temp = float(temperature)
    except (TypeError, ValueError):
        temp = 0.0
    if not 0.0 <= temp <= OWN_MAX_TEMPERATURE:  # NaN fails both sides too
        used = OWN_MAX_TEMPERATURE if temp > OWN_MAX_TEMPERATURE else 0.0
        notes.append(("temperature", {"asked": temp, "used": used}))
        temp = used
    return OwnAsk(generation.Job(prompt, tokens, temp), tuple(notes))


SEATS = Seats(OWN_SEATS)


def own_request_id() -> str:
    return f"own-{uuid.uuid4().hex[:8]}"


def own_stream(
    ep: Endpoint, ask: OwnAsk, request_id: str, box: dict, stop: threading.Event | None = None
) -> Iterator[str]:
    """The model's continuation, piece by piece as its responses arrive (for ``st.write_stream``);
    ``box["run"]`` holds the :class:`~triton_kitchen.tools.generation.GenerationRun` so far, and when the
    stream ends. Closing the iterator early (the page's script stopped: the learner pressed Stop) or setting
    ``stop`` closes the connection after the next response: Triton cancels the request."""
    stop = stop or threading.Event()
    pieces: queue.Queue = queue.Queue()
    given = [0]

    def on_response(run: generation.GenerationRun) -> None:
        box["run"] = run
        pieces.put(run.text[given[0] :])
        given[0] = len(run.text)

    def work() -> None:
        box["request_id"] = (
            request_id  # sent from here on: a stop before any token still ends it on the server
        )
        try:
            box["run"] = generation.stream_http(
                ep,
                OWN_MODEL,
                ask.job,
                OWN_TIMEOUT_S,
                request_id=request_id,
                on_response=on_response,
                stop=stop,
            )
        finally:
            pieces.put(None)

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    try:
        ended = False
        while not ended:
            piece = pieces.get()
            ended = piece is None
            more = [piece or ""]
            while not ended and not pieces.empty():  # behind: one page update for all that arrived
                nxt = pieces.get_nowait()
                ended = nxt is None
                more.append(nxt or "")
            if "".join(more):
                yield "".join(more)
    finally:
        stop.set()
        worker.join(OWN_TIMEOUT_S)


def find_end(
    ep: Endpoint, request_id: str, runs: list[generation.GenerationRun], wait_s: float = 5.0
) -> dict | None:
    """The server's record of ``request_id``'s end (its reason, the KV-cache bytes freed, the step): in the
    steps ``runs`` carried, else asked for with one-token probes whose parameter ``ended_of`` names it (the
    model keeps its recent ends), until one answers or ``wait_s`` ran out (a sequence Triton dropped between
    steps is freed a quarter second later)."""
    for r in runs:
        for s in r.steps():
            for e in s.get("ended", []):
                if e.get("request_id") == request_id:
                    return {**e, "step": s["step"], "end_ns": s["end_ns"]}
    deadline = time.monotonic() + wait_s
    while True:
        probe = generation.Job("·", 1, parameters={"ignore_eos": True, "ended_of": request_id})
        answer = generation.stream_http(ep, OWN_MODEL, probe, 10.0, request_id=f"{request_id}-probe")
        hit = answer.records[-1].get("ended_of") if answer.records else None
        if hit or time.monotonic() >= deadline:
            return {**hit, "end_ns": hit.get("at_ns", 0)} if hit else None
        time.sleep(0.1)


@dataclass
class OwnResult:
    """The learner's generation: the client's run, what the page changed, and the record of its end."""

    ask: OwnAsk
    run: generation.GenerationRun
    stopped: bool = False
    ended: dict | None = None
    sent: bool = True  # False: stopped while waiting in line, before the request was sent

    @property
    def first_record(self) -> dict:
        return self.run.records[0] if self.run.records else {}

    @property
    def last_record(self) -> dict:
        return self.run.records[-1] if self.run.records else {}

    def token_steps(self) -> list[dict]:
        """The recorded steps that gave this request a token, in order."""
        return [
            s
            for s in self.run.steps()
            if any(b["request_id"] == self.run.request_id and b["tokens"] for b in s["batch"])
        ]

    def server_ms(self) -> list[float]:
        """When the server had each token (its step's end), ms after the client sent the request."""
        return [(s["end_ns"] - self.run.sent_ns) / 1e6 for s in self.token_steps()]

    def figures(self) -> dict:
        """Time to first token and inter-token gaps (p50), by the client and by the server's record, and the
        wait before the request's first step (Triton's queue, the request's way in, and the step boundary)."""
        steps = self.token_steps()
        server = self.server_ms()
        return {
            "tokens": self.run.tokens,
            "ttft_client": self.run.ttft_ms,
            "ttft_server": server[0] if server else None,
            "itl_client": generation.percentile(self.run.itl_ms, 50),
            "itl_server": generation.percentile(
                [b - a for a, b in zip(server, server[1:], strict=False)], 50
            ),
            "wait_ms": (steps[0]["start_ns"] - self.run.sent_ns) / 1e6 if steps else None,
        }


def own_result(ep: Endpoint | None, ask: OwnAsk, box: dict, stopped: bool = False) -> OwnResult:
    """After :func:`own_stream`: the run it left in ``box`` and, when the sequence ended early (stopped,
    cancelled, broken), the server's record of its end, looked for on ``ep``."""
    run = box.get("run") or generation.GenerationRun(generation.HTTP)
    result = OwnResult(ask, run, stopped=stopped or run.cancelled, sent="request_id" in box)
    request_id = run.request_id or box.get("request_id", "")
    early = result.stopped or (run.error is not None and run.tokens > 0)
    if early and ep is not None and request_id:
        result.ended = find_end(ep, request_id, [run])
    elif run.records:
        result.ended = next(
            (
                {**e, "step": s["step"], "end_ns": s["end_ns"]}
                for s in run.steps()
                for e in s.get("ended", [])
                if e.get("request_id") == run.request_id
            ),
            None,
        )
    return result


def own_figure(result: OwnResult, names: dict[str, str]) -> go.Figure:
    """A small timeline of this request: the client's arrival of each token and the server's step end that
    made it, on one axis (ms after sending), and a square where the server freed its KV cache."""
    fig = go.Figure()
    server = result.server_ms()
    fig.add_trace(
        go.Scatter(
            x=server,
            y=[names["server"]] * len(server),
            mode="markers",
            name=names["server"],
            marker={"color": TOKEN_COLOR, "symbol": "line-ns-open", "size": 12, "line": {"width": 2}},
        )
    )
    client = result.run.arrivals_ms
    fig.add_trace(
        go.Scatter(
            x=client,
            y=[names["client"]] * len(client),
            mode="markers",
            name=names["client"],
            marker={"color": JOIN_COLOR, "symbol": "line-ns-open", "size": 12, "line": {"width": 2}},
        )
    )
    if result.ended and result.run.sent_ns:
        at = (result.ended["end_ns"] - result.run.sent_ns) / 1e6
        fig.add_trace(
            go.Scatter(
                x=[at],
                y=[names["server"]],
                mode="markers",
                name=names["freed"],
                marker={"color": LEAVE_COLOR, "symbol": "square", "size": 10},
            )
        )
    fig.update_layout(
        height=200,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        xaxis={"title": names["time"], "rangemode": "tozero"},
        legend={"orientation": "h", "y": -0.6},
    )
    return fig
