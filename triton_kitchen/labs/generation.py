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
from dataclasses import dataclass

from triton_kitchen.core import catalog, kserve
from triton_kitchen.core.endpoint import Endpoint

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
