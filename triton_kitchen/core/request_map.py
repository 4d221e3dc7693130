"""The map of a request's life shown at the top of every chapter: the stages a request passes through in
Triton, in order, and which of them each chapter teaches (data; ``ui/request_map.py`` draws it).

An ensemble's request goes through its scheduler first, then every step through the step model's own queue,
batcher and instance; the map draws that once, in line.
"""

from __future__ import annotations

from triton_kitchen.core import lessons

STAGES = ("client", "frontend", "ensemble", "queue", "batcher", "instance", "backend", "response")

CHAPTER_STAGES: dict[int, frozenset[str]] = {
    1: frozenset(
        {"queue", "batcher", "instance", "backend"}
    ),  # the head chef's jobs; the repository loads them
    2: frozenset({"ensemble"}),
    3: frozenset({"ensemble", "backend"}),  # pipelines and branches; BLS decides inside a Python backend
    4: frozenset({"client", "frontend", "response"}),  # HTTP/REST on the wire
    5: frozenset({"client", "frontend", "response"}),  # gRPC, streaming responses
    6: frozenset({"client", "frontend", "response"}),  # choosing between them
    7: frozenset({"client", "response"}),  # the Python client's code
    8: frozenset(STAGES),  # common mistakes: every stage of the life
    9: frozenset({"queue", "batcher", "instance"}),  # the scheduler
    10: frozenset({"frontend", "instance", "response"}),  # metrics and limits at the door, loading instances
    11: frozenset(
        {"frontend", "queue", "batcher", "backend", "response"}
    ),  # generate endpoints, iterative scheduling, a token per response
}


def stages(chapter: int) -> list[tuple[str, bool]]:
    """Every stage in a request's order, with whether ``chapter`` teaches it."""
    if chapter not in lessons.CHAPTERS:
        raise KeyError(f"no chapter {chapter}")
    on = CHAPTER_STAGES[chapter]
    return [(stage, stage in on) for stage in STAGES]
